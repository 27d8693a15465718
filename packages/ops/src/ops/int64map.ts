/**
 * Open-addressing hash index from int64 keys (u32 word pairs) to dense ids 0, 1, 2, … in insertion
 * order. It replaces a Map<bigint, number>, which would allocate a BigInt per lookup.
 */
export class Int64Index {
  /** Key words in id order: id k is (keys[2k], keys[2k + 1]). Grows by doubling. */
  private keyWords: Uint32Array;
  /** id + 1 per slot, 0 = empty; linear probing, load factor <= 1/2. */
  private slots: Int32Array;
  private mask: number;
  size = 0;

  constructor(expected = 8) {
    let cap = 16;
    while (cap < expected * 2) cap *= 2;
    this.slots = new Int32Array(cap);
    this.mask = cap - 1;
    this.keyWords = new Uint32Array(Math.max(16, 2 * expected));
  }

  /** An index of `words` (int64 words, in id order); a repeated key keeps its first id. */
  static from(words: Uint32Array): Int64Index {
    const ix = new Int64Index(words.length >>> 1);
    for (let j = 0; j < words.length; j += 2) ix.add(words[j]!, words[j + 1]!);
    return ix;
  }

  /** The key words, id k at [2k, 2k + 1] (a view; valid until the next add). */
  keys(): Uint32Array {
    return this.keyWords.subarray(0, 2 * this.size);
  }

  /** The id of key (lo, hi), or -1. */
  get(lo: number, hi: number): number {
    const keys = this.keyWords;
    for (let s = slotOf(lo, hi) & this.mask; ; s = (s + 1) & this.mask) {
      const e = this.slots[s]! - 1;
      if (e < 0) return -1;
      if (keys[2 * e] === lo && keys[2 * e + 1] === hi) return e;
    }
  }

  /** The id of key (lo, hi), given the next id first if it is new. */
  add(lo: number, hi: number): number {
    const keys = this.keyWords;
    let s = slotOf(lo, hi) & this.mask;
    for (; ; s = (s + 1) & this.mask) {
      const e = this.slots[s]! - 1;
      if (e < 0) break;
      if (keys[2 * e] === lo && keys[2 * e + 1] === hi) return e;
    }
    const id = this.size++;
    if (2 * id + 2 > keys.length) {
      this.keyWords = new Uint32Array(keys.length * 2);
      this.keyWords.set(keys);
    }
    this.keyWords[2 * id] = lo;
    this.keyWords[2 * id + 1] = hi;
    this.slots[s] = id + 1;
    if (2 * this.size > this.slots.length) this.rehash();
    return id;
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    const keys = this.keyWords;
    for (let e = 0; e < this.size; e++) {
      let s = slotOf(keys[2 * e]!, keys[2 * e + 1]!) & mask;
      while (slots[s] !== 0) s = (s + 1) & mask;
      slots[s] = e + 1;
    }
    this.slots = slots;
    this.mask = mask;
  }
}

/** A murmur3-style finalizer of both words: sequential ids must not cluster under linear probing. */
function slotOf(lo: number, hi: number): number {
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
