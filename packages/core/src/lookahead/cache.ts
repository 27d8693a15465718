/**
 * BAGPIPE lookahead cache hints (Agarwal et al., "BAGPIPE: Accelerating Deep Recommendation Model
 * Training", SOSP'23; /work/shared/papers/bagpipe-sosp23.txt), §3.2 and Algorithm 1, over plain
 * arrays of embedding ids per batch and per table. No RxJS here: `operator.ts` wraps this
 * class as a pipeline operator and `sluice lookahead` drives it directly.
 *
 * Definitions (batch numbers are 0-based steps in push order; L is the window):
 * - The window of step x is batches [x, x + L] — §3.2: "if the current batch is x, we consider
 *   embedding accesses in batches from x to x + L". Algorithm 1's `LookAheadValue` counts the
 *   current batch as well (its queue holds L' batches including the popped one, and Figure 6's
 *   "L = 2" example keeps an id for the next batch only), so Algorithm 1 with LookAheadValue = L + 1
 *   computes exactly these hints.
 * - TTL of an id of batch x: the last batch in [x, x + L] that uses it (Algorithm 1 lines 9, 15).
 * - prefetch(x): ids of batch x not in the cache (lines 17–19).
 * - evict(x): ids of batch x whose TTL is x — no later batch in the window uses them (lines 20–22).
 *   keep(x): the others, each with its TTL.
 * - Consistency (§3.2): an id that batch x uses is either cached or was not used by any batch in
 *   [x − L, x). That is exactly "prefetch(x) = ids of x not used in the previous L batches", which
 *   the tests check against a brute-force ideal cache.
 *
 * Why not `Map`/`Set`: RM1 at BAGPIPE's 3.27M samples/s (§5.3) is ~85M id updates per second on one
 * core. Each table is an open-addressing hash table over one Int32Array (ids as two int32 halves,
 * never a BigInt), batches are ring-buffered as lists of entry indices, and nothing is allocated
 * per id.
 *
 * @example
 * const la = new LookaheadCache({ tables: 1, window: 2 });
 * for (const ids of [[3, 9], [3, 4], [3, 6], [6, 1]]) la.push([Int32Array.from(ids)]); // BAGPIPE Fig. 6
 * const hints = la.end();
 */

import { defineRelease } from '@sluice/ops';

/** The ids of one table in one batch: int32 ids, or int64 ids (read through int32 halves). */
export type IdArray = Int32Array | BigInt64Array;

/** A cache-size budget for choosing L automatically: distinct ids, or bytes at `bytesPerId` per id (one number, or one per table). */
export type CacheBudget = { readonly ids: number } | { readonly bytes: number; readonly bytesPerId: number | readonly number[] };

export interface LookaheadOptions {
  /** Number of embedding tables (one per sparse feature); every pushed batch has one id array per table. */
  readonly tables: number;
  /**
   * L: how many batches beyond the current one are looked at (§3.2). Required without
   * `cacheBudget`; with one, the largest L that may be chosen (default: no limit).
   */
  readonly window?: number;
  /**
   * Choose L from a cache size (§3.5 "Automatically Calculating Lookahead": "BAGPIPE keeps
   * prefetching until it detects the cache is full" and takes "the number of batches prefetched so
   * far as the L"). L is the largest k for which the distinct ids of the first k batches fit the
   * budget; the cache during step x never holds more than the distinct ids of batches [x, x + L), so
   * the budget holds at the start and for as long as the data stays as diverse as its first
   * batches. Later steps over budget are counted (`LookaheadSummary.overBudgetSteps`), not fixed.
   */
  readonly cacheBudget?: CacheBudget;
}

/** Hints for one table at one step. The id arrays have the type of that batch's input. */
export interface TableHints {
  /** Ids of this batch not in the cache: fetch them before the batch trains. First-occurrence order. */
  readonly prefetch: IdArray;
  /** Ids of this batch that a later batch in the window uses: keep them cached. */
  readonly keep: IdArray;
  /** TTL of each `keep` id: the last step in the window that uses it (always > this step). */
  readonly ttl: Int32Array;
  /** Ids of this batch no later batch in the window uses: evict them after this batch (their TTL is this step). */
  readonly evict: IdArray;
  /** Distinct ids the batch uses (= prefetch + hits = keep + evict). */
  readonly unique: number;
  /** Distinct ids the batch finds in the cache. */
  readonly hits: number;
  /** Ids of this table cached while the batch trains (cached before it, plus its prefetches). */
  readonly resident: number;
}

/** The hints of one batch. */
export interface StepHints {
  /** 0-based position of the batch in push order; TTLs count in the same steps. */
  readonly step: number;
  /** L in effect. */
  readonly window: number;
  readonly tables: readonly TableHints[];
  /** Distinct ids looked up, all tables. */
  readonly unique: number;
  readonly hits: number;
  /** hits / unique (1 for a batch with no ids). */
  readonly hitRatio: number;
  /** Ids cached while this batch trains, all tables: the cache size this step needs. */
  readonly cacheSize: number;
  /** Ids still cached after this step's evictions. */
  readonly retained: number;
  /**
   * Says the consumer is done with this step's arrays (prefetch, keep, ttl, evict of every table):
   * their memory goes to later steps' hints, so none of them may be read afterwards. Optional:
   * hints that are never released are left to the GC. A second call does nothing. Not enumerable.
   */
  readonly release?: () => void;
}

/** Steps `drain` pops at a time, table by table. */
const DRAIN_CHUNK = 16;

/** Initial hash-index slots per table; grows by doubling. */
const INITIAL_SLOTS = 1 << 12;

/** Entry states (low 2 bits of an entry's meta word). */
/** In the window, not prefetched yet. */
const WAITING = 1;
const CACHED = 2;
/** Deleted; keeps its id and its index slot so that the id coming back reuses the entry. */
const TOMBSTONE = 3;
/** Meta bit 2: the id's high half is −1 (else 0), for tables whose ids all have a high half of 0 or −1. */
const HI_NEG = 4;
/** Steps live in meta bits 3–30. */
export const MAX_STEPS = 1 << 28;

/**
 * Slot of a key in a table of 2^(32 − shift) slots: multiplicative (Fibonacci) hashing of both
 * halves, top bits. Two multiplies per id: this runs ~85M times a second (class comment), and
 * sequential ids (vocab indices) and Criteo's already-hashed ids both spread well under it.
 */
function home(lo: number, hi: number, shift: number): number {
  return Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> shift;
}

/**
 * Math.imul(hi, 0x85ebca6b) for hi = −1; hi & HI_MUL equals it for hi = 0 too, so the compact
 * loops hash with one multiply. For any other hi it gives some other slot, which is harmless
 * there: such an id is never in a compact table, so its probe ends at an empty slot and the table
 * switches to full high halves before inserting it (with the full hash from then on).
 */
const HI_MUL = Math.imul(-1, 0x85ebca6b);

/**
 * One table's ids in the window or in the cache: BAGPIPE's LatestTracker and InCache (Algorithm 1
 * lines 2–3). Each id has an *entry* e in `ent`, two words [2e, 2e + 2): the id's low half, and a
 * meta word = last step that uses the id (its TTL) << 3 | HI_NEG | state. Entries are numbered in
 * first-insertion order, so they are dense: the ring buffer holds each batch's distinct ids as
 * entry numbers, and popping a batch reads ~8 bytes per id from a compact array (RM1's largest
 * table: ~100K entries, under 1 MB) instead of one cache line per id scattered over a sparse hash
 * table several times larger. The hash index `idx` (open addressing, linear probing, load between
 * 1/2 after a rehash and 5/8) maps an id to its entry: slot s = e + 1, 0 = empty, 4 bytes, so
 * RM1's largest index is 1 MB where 8-byte slots at load ≤ 1/4 took 4 MB; the key compare reads
 * the entry, which a hit needs anyway. The ingest loop's time is mostly these two random loads
 * (index slot, then entry), so the tables are kept small enough to stay in cache; 8-byte
 * [low half, meta] slots (one load, no entries) were slower overall, their pops reading scattered
 * slots (docs/lookahead.md, "How it is fast").
 *
 * While every id's high half is 0 or −1 (int32 ids, hex2int of Criteo's 8-digit hex) HI_NEG holds
 * it. The first other id switches the table to `his`, a parallel array of high halves per entry
 * (entry numbers do not change).
 *
 * Deletion leaves the entry as a tombstone (and its index slot in place), so entry numbers are
 * stable until the next rehash; a rehash that drops tombstones returns the old → new entry map so
 * the buffered batches can be renumbered.
 */
class TableState {
  /** Hash index: slot s holds e + 1 for the entry e of an id homed near s, 0 when empty. */
  idx: Int32Array = new Int32Array(INITIAL_SLOTS);
  mask = INITIAL_SLOTS - 1;
  shift = 32 - Math.log2(INITIAL_SLOTS);
  /** Entries [low half, meta]. */
  ent: Int32Array = new Int32Array(INITIAL_SLOTS);
  /** High halves per entry once an id needs them; null while HI_NEG is enough. */
  his: Int32Array | null = null;
  /** Entries used (live + tombstones). */
  entries = 0;
  /** Ids present (in the window or cached). */
  live = 0;
  tombstones = 0;
  /** Ids cached. */
  inCache = 0;
  /** Old → new entry numbers of the last rehash that dropped tombstones (grow-only scratch). */
  private remapScratch = new Int32Array(0);
  /** Set by `ingestCompact`: the index of the first id it could not take (n when it took all). */
  private stop = 0;

  /**
   * Makes room for `n` more ids with at most 5/8 of the index slots used (live + tombstones), so
   * the hot loop never grows the table. Returns the old → new entry map when it dropped
   * tombstones, else null.
   */
  prepare(n: number): Int32Array | null {
    const slots = this.mask + 1;
    if (8 * (this.entries + n) > 5 * slots) {
      // Rehash to a load of at most 1/2 for the live ids and the batch, so that the next rehash
      // is at least (live + n) / 4 insertions and deletions away (amortized O(1)).
      let bits = Math.log2(INITIAL_SLOTS);
      while (1 << bits < 2 * (this.live + n)) bits++;
      return this.rehash(bits, n);
    }
    if (2 * (this.entries + n) > this.ent.length) this.growEntries(this.entries + n);
    return null;
  }

  /** Room for `cap` entries (entry numbers stay). */
  private growEntries(cap: number): void {
    let words = this.ent.length;
    while (words < 2 * cap) words *= 2;
    const ent = new Int32Array(words);
    ent.set(this.ent.subarray(0, 2 * this.entries));
    this.ent = ent;
    if (this.his !== null) {
      const his = new Int32Array(words >>> 1);
      his.set(this.his.subarray(0, this.entries));
      this.his = his;
    }
  }

  private rehash(bits: number, n: number): Int32Array | null {
    const slots = 1 << bits;
    const shift = 32 - bits;
    const mask = slots - 1;
    const old = this.ent;
    const oldHis = this.his;
    const count = this.entries;
    // Entries keep their order (dense and in first-use order); tombstones are dropped. In the
    // steady state (as many ids leave the window as come in) the sizes stay the same, and then
    // the index, the entries and the map are reused rather than allocated: entry k moves only
    // down (k <= e), so compacting in place is safe, and RM1's big tables rehash every few
    // batches (fresh arrays each time were most of the hint thread's allocations, and its GCs;
    // docs/lookahead.md, "Performance").
    let remap: Int32Array | null = null;
    if (this.tombstones > 0) {
      if (this.remapScratch.length < count) this.remapScratch = new Int32Array(Math.max(count, 2 * this.remapScratch.length));
      remap = this.remapScratch;
    }
    let words = INITIAL_SLOTS;
    while (words < 2 * (this.live + n)) words *= 2;
    const ent = words > old.length ? new Int32Array(words) : old;
    const his = oldHis === null ? null : ent === old ? oldHis : new Int32Array(words >>> 1);
    const idx = this.idx.length === slots ? this.idx.fill(0) : new Int32Array(slots);
    let k = 0;
    for (let e = 0; e < count; e++) {
      const lo = old[2 * e]!;
      const meta = old[2 * e + 1]!;
      if ((meta & 3) === TOMBSTONE) {
        remap![e] = -1;
        continue;
      }
      const hi = oldHis !== null ? oldHis[e]! : -((meta & HI_NEG) >>> 2);
      ent[2 * k] = lo;
      ent[2 * k + 1] = meta;
      if (his !== null) his[k] = hi;
      if (remap !== null) remap[e] = k;
      let s = home(lo, hi, shift);
      while (idx[s] !== 0) s = (s + 1) & mask;
      idx[s] = ++k;
    }
    this.idx = idx;
    this.ent = ent;
    this.his = his;
    this.mask = mask;
    this.shift = shift;
    this.entries = k;
    this.tombstones = 0;
    return remap;
  }

  /** Switches to full high halves (entry numbers stay). */
  private widen(): void {
    const ent = this.ent;
    const his = new Int32Array(ent.length >>> 1);
    for (let e = 0; e < this.entries; e++) {
      const meta = ent[2 * e + 1]!;
      his[e] = -((meta & HI_NEG) >>> 2);
      // With `his`, HI_NEG is not used (and must be clear: the step compares take meta & ~3).
      ent[2 * e + 1] = meta & ~HI_NEG;
    }
    this.his = his;
  }

  /**
   * Records that batch `step` uses ids (lo, hi) = (words[2i], words[2i + 1]), i < n (Algorithm 1
   * lines 8–9), and writes the entries of its distinct ids to `list` in first-occurrence order.
   * Returns how many. The caller has called `prepare(n)`.
   */
  ingestWords(words: Int32Array, n: number, step: number, list: Int32Array): number {
    if (this.his !== null) return this.ingestWide(words, 0, n, step, list, 0);
    const u = this.ingestCompact(words, n, step, list);
    if (this.stop === n) return u;
    // An id whose high half is neither 0 nor −1: go on with full high halves.
    this.widen();
    return this.ingestWide(words, this.stop, n, step, list, u);
  }

  /**
   * `ingestWords` while HI_NEG holds the high halves. Stops before the first new id that it
   * cannot hold (setting `stop`); an id already present was compared with its full high half.
   */
  private ingestCompact(words: Int32Array, n: number, step: number, list: Int32Array): number {
    const idx = this.idx;
    const ent = this.ent;
    const mask = this.mask;
    const shift = this.shift;
    const stamp = step << 3;
    let e = this.entries;
    let revived = 0;
    let u = 0;
    let i = 0;
    outer: for (; i < n; i++) {
      const lo = words[2 * i]!;
      const hi = words[2 * i + 1]!;
      let s = Math.imul(lo ^ (hi & HI_MUL), 0x9e3779b1) >>> shift;
      for (;;) {
        const tag = idx[s]!;
        if (tag === 0) {
          if ((hi ^ (hi >> 31)) !== 0) break outer;
          idx[s] = e + 1;
          ent[2 * e] = lo;
          ent[2 * e + 1] = stamp | (hi & HI_NEG) | WAITING;
          list[u++] = e++;
          break;
        }
        // Both words of the entry at once (one cache line); meta << 29 >> 31 is the high half HI_NEG holds.
        const q = 2 * tag - 1;
        const meta = ent[q]!;
        if (ent[q - 1] === lo && (meta << 29) >> 31 === hi) {
          // Popped steps (hence tombstones' TTLs) are all before `step`.
          if ((meta & ~7) !== stamp) {
            // A tombstone of this id is its only entry: revive it.
            if ((meta & 3) === TOMBSTONE) {
              ent[q] = stamp | (meta & HI_NEG) | WAITING;
              revived++;
            } else ent[q] = stamp | (meta & 7);
            list[u++] = tag - 1;
          }
          break;
        }
        s = (s + 1) & mask;
      }
    }
    this.stop = i;
    this.live += e - this.entries + revived;
    this.tombstones -= revived;
    this.entries = e;
    return u;
  }

  /** `ingestWords` for int32 ids (sign-extended, so an int32 id equals the same int64 id). */
  ingestInt32(ids: Int32Array, n: number, step: number, list: Int32Array): number {
    if (this.his !== null) {
      const words = new Int32Array(2 * n);
      for (let i = 0; i < n; i++) {
        words[2 * i] = ids[i]!;
        words[2 * i + 1] = ids[i]! >> 31;
      }
      return this.ingestWide(words, 0, n, step, list, 0);
    }
    const idx = this.idx;
    const ent = this.ent;
    const mask = this.mask;
    const shift = this.shift;
    const stamp = step << 3;
    let e = this.entries;
    let revived = 0;
    let u = 0;
    for (let i = 0; i < n; i++) {
      const lo = ids[i]!;
      const hi = lo >> 31;
      let s = Math.imul(lo ^ (hi & HI_MUL), 0x9e3779b1) >>> shift;
      for (;;) {
        const tag = idx[s]!;
        if (tag === 0) {
          idx[s] = e + 1;
          ent[2 * e] = lo;
          ent[2 * e + 1] = stamp | (hi & HI_NEG) | WAITING;
          list[u++] = e++;
          break;
        }
        const q = 2 * tag - 1;
        const meta = ent[q]!;
        if (ent[q - 1] === lo && (meta << 29) >> 31 === hi) {
          if ((meta & ~7) !== stamp) {
            if ((meta & 3) === TOMBSTONE) {
              ent[q] = stamp | (meta & HI_NEG) | WAITING;
              revived++;
            } else ent[q] = stamp | (meta & 7);
            list[u++] = tag - 1;
          }
          break;
        }
        s = (s + 1) & mask;
      }
    }
    this.live += e - this.entries + revived;
    this.tombstones -= revived;
    this.entries = e;
    return u;
  }

  /** `ingestWords` from id `from` on, once the table keeps full high halves in `his`; `u` distinct ids are in `list` already. */
  private ingestWide(words: Int32Array, from: number, n: number, step: number, list: Int32Array, u: number): number {
    const idx = this.idx;
    const ent = this.ent;
    const his = this.his!;
    const mask = this.mask;
    const shift = this.shift;
    const stamp = step << 3;
    let e = this.entries;
    let revived = 0;
    for (let i = from; i < n; i++) {
      const lo = words[2 * i]!;
      const hi = words[2 * i + 1]!;
      let s = Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> shift;
      for (;;) {
        const tag = idx[s]!;
        if (tag === 0) {
          idx[s] = e + 1;
          ent[2 * e] = lo;
          ent[2 * e + 1] = stamp | WAITING;
          his[e] = hi;
          list[u++] = e++;
          break;
        }
        const q = 2 * tag - 1;
        const meta = ent[q]!;
        if (ent[q - 1] === lo && his[tag - 1] === hi) {
          if ((meta & ~3) !== stamp) {
            if ((meta & 3) === TOMBSTONE) {
              ent[q] = stamp | WAITING;
              revived++;
            } else ent[q] = stamp | (meta & 3);
            list[u++] = tag - 1;
          }
          break;
        }
        s = (s + 1) & mask;
      }
    }
    this.live += e - this.entries + revived;
    this.tombstones -= revived;
    this.entries = e;
    return u;
  }

  /**
   * Pops batch `step` whose distinct ids are entries list[0, u) (Algorithm 1 lines 13–22) and
   * returns its hints in one buffer from `pool` (transferable): ids as int64 when `wide` (the
   * batch's input was a BigInt64Array), else as int32; `cachedBefore` = inCache before the step.
   * One pass over the entries sorts the ids into the `scratch` lists and updates the entries;
   * the lists are then copied into place. (A counting pass, which would let the lists be written
   * in place, reads every entry twice; those reads are scattered and the copies are not.)
   */
  pop(list: Int32Array, u: number, step: number, wide: boolean, scratch: PopScratch, pool: HintPool): TableHints {
    const ent = this.ent;
    const his = this.his;
    const cachedBefore = this.inCache;
    const per = wide ? 2 : 1;
    scratch.reserve(per * u);
    const pre = scratch.prefetch;
    const kept = scratch.keep;
    const gone = scratch.evict;
    const ttls = scratch.ttl;
    let p = 0;
    let k = 0;
    let x = 0;
    if (wide) {
      for (let j = 0; j < u; j++) {
        const e = list[j]!;
        const lo = ent[2 * e]!;
        const meta = ent[2 * e + 1]!;
        const hi = his !== null ? his[e]! : -((meta & HI_NEG) >>> 2);
        if ((meta & 3) === WAITING) {
          pre[p++] = lo;
          pre[p++] = hi;
        }
        if (meta >>> 3 === step) {
          gone[x++] = lo;
          gone[x++] = hi;
          ent[2 * e + 1] = (meta & ~3) | TOMBSTONE;
        } else {
          ttls[k >> 1] = meta >>> 3;
          kept[k++] = lo;
          kept[k++] = hi;
          ent[2 * e + 1] = (meta & ~3) | CACHED;
        }
      }
    } else {
      for (let j = 0; j < u; j++) {
        const e = list[j]!;
        const lo = ent[2 * e]!;
        const meta = ent[2 * e + 1]!;
        if ((meta & 3) === WAITING) pre[p++] = lo;
        if (meta >>> 3 === step) {
          gone[x++] = lo;
          ent[2 * e + 1] = (meta & ~3) | TOMBSTONE;
        } else {
          ttls[k] = meta >>> 3;
          kept[k++] = lo;
          ent[2 * e + 1] = (meta & ~3) | CACHED;
        }
      }
    }
    const np = p / per;
    const nk = k / per;
    const ne = x / per;
    // prefetch ⊆ the distinct ids = keep + evict.
    const words = p + k + x;
    const buf = pool.take(4 * words + 4 * nk);
    const w = new Int32Array(buf, 0, words);
    w.set(pre.subarray(0, p));
    w.set(kept.subarray(0, k), p);
    w.set(gone.subarray(0, x), p + k);
    const ttl = new Int32Array(buf, 4 * words, nk);
    ttl.set(ttls.subarray(0, nk));
    let prefetch: IdArray;
    let keep: IdArray;
    let evict: IdArray;
    if (wide) {
      prefetch = new BigInt64Array(buf, 0, np);
      keep = new BigInt64Array(buf, 4 * p, nk);
      evict = new BigInt64Array(buf, 4 * (p + k), ne);
    } else {
      prefetch = w.subarray(0, p);
      keep = w.subarray(p, p + k);
      evict = w.subarray(p + k, words);
    }
    this.inCache += np - ne;
    this.live -= ne;
    this.tombstones += ne;
    return { prefetch, keep, ttl, evict, unique: u, hits: u - np, resident: cachedBefore + np };
  }

  /** Words (lo, hi) of the cached ids, in entry order. */
  cachedWords(): Int32Array {
    const out = new Int32Array(2 * this.inCache);
    let o = 0;
    const ent = this.ent;
    for (let e = 0; e < this.entries; e++) {
      const meta = ent[2 * e + 1]!;
      if ((meta & 3) === CACHED) {
        out[o++] = ent[2 * e]!;
        out[o++] = this.his !== null ? this.his[e]! : -((meta & HI_NEG) >>> 2);
      }
    }
    return out;
  }
}

function checkCount(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new RangeError(`${what} must be a non-negative integer, got ${String(v)}`);
  return v;
}

function checkPositive(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new RangeError(`${what} must be a positive number, got ${String(v)}`);
  return v;
}

/** Per-table weights and the budget in the same unit (ids, or bytes). */
function budgetWeights(b: CacheBudget, tables: number): { budget: number; weights: Float64Array } {
  const weights = new Float64Array(tables);
  if ('ids' in b) {
    weights.fill(1);
    return { budget: checkPositive(b.ids, 'cacheBudget.ids'), weights };
  }
  const per = b.bytesPerId;
  if (typeof per === 'number') weights.fill(checkPositive(per, 'cacheBudget.bytesPerId'));
  else {
    if (per.length !== tables) throw new RangeError(`cacheBudget.bytesPerId has ${per.length} entries for ${tables} tables`);
    per.forEach((w, t) => {
      weights[t] = checkPositive(w, `cacheBudget.bytesPerId[${t}]`);
    });
  }
  return { budget: checkPositive(b.bytes, 'cacheBudget.bytes'), weights };
}

/** Lists a pop sorts ids into before copying them to the hints' buffer; one per LookaheadCache. */
class PopScratch {
  prefetch = new Int32Array(0);
  keep = new Int32Array(0);
  evict = new Int32Array(0);
  ttl = new Int32Array(0);

  /** Room for `words` id words in each list (and as many TTLs). */
  reserve(words: number): void {
    if (this.prefetch.length >= words) return;
    const n = Math.max(words, 2 * this.prefetch.length);
    this.prefetch = new Int32Array(n);
    this.keep = new Int32Array(n);
    this.evict = new Int32Array(n);
    this.ttl = new Int32Array(n);
  }
}

/** Free buffers `HintPool` keeps at most, in bytes (beyond it, released buffers are left to the GC). */
const HINT_POOL_BYTES = 64 << 20;

/**
 * Memory for the hints' arrays (one ArrayBuffer per table and step), reused once the consumer
 * releases steps (`StepHints.release`).
 *
 * Why: RM1 at 10M rows pops ~1 GB of hint arrays (26 tables x 610 steps), and every 64 MB or so
 * of new ArrayBuffers starts a major GC, whose marking and sweeping on V8's helper threads takes
 * CPU time from the hint thread (docs/lookahead.md, "Performance"). Until the
 * first release every buffer is exact-size and fresh, as before, so a consumer that keeps its
 * hints pays nothing; from then on sizes are rounded up to a power of two so that a released
 * buffer fits later steps of about the same size.
 */
class HintPool {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private freeBytes = 0;
  private active = false;
  /** Buffers handed out again (a released step's memory reused). */
  reused = 0;

  /** A buffer of at least `bytes` bytes (its contents are not zeroed once reused). */
  take(bytes: number): ArrayBuffer {
    if (!this.active) return new ArrayBuffer(bytes);
    const size = sizeClass(bytes);
    const buf = this.free.get(size)?.pop();
    if (buf === undefined) return new ArrayBuffer(size);
    this.freeBytes -= size;
    this.reused++;
    return buf;
  }

  /** Takes back a buffer `take` gave (no array may view it any more). */
  give(buf: ArrayBuffer): void {
    this.active = true;
    const size = buf.byteLength;
    // Exact-size buffers from before the first release are pooled only when they are a class size.
    if (size !== sizeClass(size) || this.freeBytes + size > HINT_POOL_BYTES) return;
    let list = this.free.get(size);
    if (list === undefined) this.free.set(size, (list = []));
    list.push(buf);
    this.freeBytes += size;
  }
}

/** Power-of-two size of a pooled buffer, at least 256 bytes. */
function sizeClass(bytes: number): number {
  let size = 256;
  while (size < bytes) size *= 2;
  return size;
}

const isWide = (a: IdArray): a is BigInt64Array => a instanceof BigInt64Array;

/**
 * BAGPIPE's Oracle Cacher (§3.2, Algorithm 1) for several embedding tables: push each batch's ids
 * per table; once L later batches are in, `push` returns the hints of the batch L steps back, and
 * `end` returns the rest when the stream ends (the window shrinks to the batches that exist).
 *
 * @example
 * const la = new LookaheadCache({ tables: 26, window: 200 });
 * for (const ids of batches) { const h = la.push(ids); if (h) send(h); }
 * for (const h of la.end()) send(h);
 */
export class LookaheadCache {
  readonly tables: number;
  private L: number | null;
  private readonly maxWindow: number;
  private readonly budget: { budget: number; weights: Float64Array } | null;
  private readonly state: TableState[];
  /** Ring of buffered batches: slot [b * tables + t] holds table t's distinct entries of a batch. */
  private ring: Int32Array[] = [];
  private ringLen = new Int32Array(0);
  private ringWide = new Uint8Array(0);
  private ringMask = -1;
  /** Next step to pop, and to push. */
  private head = 0;
  private tail = 0;
  private ended = false;
  private ingestList = new Int32Array(1024);
  private readonly popScratch = new PopScratch();
  private readonly pool = new HintPool();
  /** Steps `drain` popped ahead (table by table) and has not yielded yet: ahead[aheadAt …]. */
  private ahead: StepHints[] = [];
  private aheadAt = 0;

  /** Throws a RangeError naming the first bad option. */
  static checkOptions(opts: LookaheadOptions): void {
    if (checkCount(opts.tables, 'tables') === 0) throw new RangeError('tables must be at least 1');
    if (opts.window === undefined && opts.cacheBudget === undefined) throw new RangeError('give a window (L), a cacheBudget, or both');
    if (opts.window !== undefined) checkCount(opts.window, 'window');
    if (opts.cacheBudget !== undefined) budgetWeights(opts.cacheBudget, opts.tables);
  }

  constructor(opts: LookaheadOptions) {
    LookaheadCache.checkOptions(opts);
    this.tables = opts.tables;
    const window = opts.window;
    this.budget = opts.cacheBudget === undefined ? null : budgetWeights(opts.cacheBudget, this.tables);
    this.maxWindow = window ?? Number.MAX_SAFE_INTEGER;
    this.L = this.budget === null ? window! : null;
    this.state = Array.from({ length: this.tables }, () => new TableState());
    this.growRing(this.L === null ? 4 : this.L + 1);
  }

  /** L in effect, or null while it is still being chosen from the cache budget. */
  get window(): number | null {
    return this.L;
  }

  /** Batches pushed and not yet returned with hints. */
  get pending(): number {
    return this.tail - this.head + this.ahead.length - this.aheadAt;
  }

  /**
   * Adds the next batch: `ids[t]` are table t's ids in it (repeats allowed). Returns the hints of
   * the batch that has now seen its whole window, or null while the window is filling.
   */
  push(ids: readonly IdArray[]): StepHints | null {
    return this.pushAll([ids])[0] ?? null;
  }

  /**
   * Adds several batches at once; returns the hints of every batch that has now seen its whole
   * window, in order. Same hints as pushing them one by one, but computed table by table: tables
   * are independent, and going through one table's hash table for several batches in a row keeps
   * its hot ids in the CPU caches, which 26 tables taking turns per batch do not
   * (docs/lookahead.md, "Performance").
   */
  pushAll(batches: readonly (readonly IdArray[])[]): StepHints[] {
    if (this.ended) throw new Error('push after end()');
    for (const ids of batches) if (ids.length !== this.tables) throw new RangeError(`expected ids for ${this.tables} tables, got ${ids.length}`);
    const out: StepHints[] = [];
    let i = 0;
    // While L is being chosen, the budget is checked after every batch, over all tables.
    for (; i < batches.length && this.L === null; i++) {
      this.ingestGroup(batches, i, i + 1);
      let used = 0;
      for (let t = 0; t < this.tables; t++) used += this.state[t]!.live * this.budget!.weights[t]!;
      // §3.5: keep reading ahead until the distinct ids of the batches read so far overflow the
      // budget; the ones before the overflowing batch fit, so L = their number.
      if (used > this.budget!.budget || this.tail - 1 >= this.maxWindow) {
        this.L = this.tail - 1;
        out.push(...this.popSteps(1));
      }
    }
    if (i < batches.length) out.push(...this.ingestGroup(batches, i, batches.length));
    return out;
  }

  /**
   * Ingests batches [from, to) table by table, popping (once L is known) each step whose window is
   * complete right after the batch that completes it, as batch-by-batch processing would.
   */
  private ingestGroup(batches: readonly (readonly IdArray[])[], from: number, to: number): StepHints[] {
    const m = to - from;
    const first = this.tail;
    if (first + m > MAX_STEPS) throw new RangeError(`lookahead: more than ${MAX_STEPS} batches in one stream`);
    // Each table holds at most L + 1 batches at a time, or all of them while L is unknown.
    const hold = this.L === null ? this.tail - this.head + m : this.L + 1;
    if (hold > this.ringMask + 1) this.growRing(hold);
    const L = this.L;
    const head = this.head;
    // Steps popped in this group: those with step + L < first + m.
    const pops = L === null ? 0 : Math.max(0, Math.min(first + m - L, this.tail + m) - head);
    const popped: TableHints[][] = Array.from({ length: pops }, () => new Array<TableHints>(this.tables));
    const retained = new Float64Array(pops);
    for (let t = 0; t < this.tables; t++) {
      const st = this.state[t]!;
      for (let j = 0; j < m; j++) {
        const step = first + j;
        const a = batches[from + j]![t]!;
        const n = a.length;
        const words = isWide(a) ? new Int32Array(a.buffer, a.byteOffset, 2 * n) : null;
        const remap = st.prepare(n);
        // Renumber this table's buffered batches: [head, step) less those already popped in this group.
        if (remap !== null) this.renumber(t, remap, L === null ? head : Math.max(head, step - L), step);
        const r = (step & this.ringMask) * this.tables + t;
        // Ingest into a shared scratch list, then keep only the distinct ids: buffering L batches
        // of full-size lists would cost L × batch ids of memory and pollute the CPU caches.
        if (this.ingestList.length < n) this.ingestList = new Int32Array(n);
        const u = words !== null ? st.ingestWords(words, n, step, this.ingestList) : st.ingestInt32(a as Int32Array, n, step, this.ingestList);
        let list = this.ring[r]!;
        if (list.length < u) list = this.ring[r] = new Int32Array(u + (u >>> 2));
        list.set(this.ingestList.subarray(0, u));
        this.ringLen[r] = u;
        this.ringWide[r] = words !== null ? 1 : 0;
        if (L !== null && step - L >= head) {
          const k = step - L - head;
          popped[k]![t] = this.popTable(t, step - L);
          retained[k] += st.inCache;
        }
      }
    }
    this.tail += m;
    this.head += pops;
    return popped.map((tables, k) => this.stepHints(head + k, tables, retained[k]!));
  }

  /** Ends the stream: the hints of every batch still buffered, in order. */
  end(): StepHints[] {
    return [...this.drain()];
  }

  /**
   * Ends the stream and yields the buffered batches' hints one at a time (the cache state between
   * two yields is the state after the step just yielded).
   *
   * It pops DRAIN_CHUNK steps at a time table by table, as `pushAll` does (one table's entries
   * stay in the CPU caches across the chunk; step by step, 26 tables take turns), and hands them
   * out one by one; `cachedIds`, `cacheSize` and `pending` undo the steps popped ahead, so what
   * they report between two yields is unchanged.
   */
  *drain(): Generator<StepHints, void, undefined> {
    this.ended = true;
    // Everything read fitted the budget: any L covering the stream gives the same hints.
    if (this.L === null) this.L = Math.max(0, this.tail - 1);
    for (;;) {
      if (this.aheadAt < this.ahead.length) {
        yield this.ahead[this.aheadAt++]!;
        continue;
      }
      this.ahead = [];
      this.aheadAt = 0;
      if (this.head >= this.tail) return;
      this.ahead = this.popSteps(DRAIN_CHUNK);
    }
  }

  /** The ids of table t cached now (between steps), in no particular order. */
  cachedIds(t: number): BigInt64Array {
    const w = this.state[t]!.cachedWords();
    const ids = new BigInt64Array(w.buffer, 0, w.length / 2);
    if (this.aheadAt >= this.ahead.length) return ids;
    // Undo the steps popped ahead, last first: after = (before ∪ prefetch) − evict, and prefetch
    // is disjoint from before, so before = (after ∪ evict) − prefetch.
    const set = new Set<bigint>(ids);
    for (let k = this.ahead.length - 1; k >= this.aheadAt; k--) {
      const th = this.ahead[k]!.tables[t]!;
      for (const id of th.evict) set.add(BigInt(id));
      for (const id of th.prefetch) set.delete(BigInt(id));
    }
    return BigInt64Array.from(set);
  }

  /** Ids cached now, all tables. */
  get cacheSize(): number {
    let n = 0;
    for (const st of this.state) n += st.inCache;
    for (let k = this.aheadAt; k < this.ahead.length; k++) for (const th of this.ahead[k]!.tables) n -= th.prefetch.length - th.evict.length;
    return n;
  }

  /** Hints for every batch of a finished stream (batches[b][t] = table t's ids in batch b). */
  static run(batches: Iterable<readonly IdArray[]>, opts: LookaheadOptions): StepHints[] {
    const la = new LookaheadCache(opts);
    const out: StepHints[] = [];
    for (const b of batches) {
      const h = la.push(b);
      if (h !== null) out.push(h);
    }
    out.push(...la.end());
    return out;
  }

  /** Rewrites table t's slots in the buffered batches after a rehash. */
  private renumber(t: number, remap: Int32Array, from: number, to: number): void {
    for (let s = from; s < to; s++) {
      const r = (s & this.ringMask) * this.tables + t;
      const list = this.ring[r]!;
      for (let j = 0, u = this.ringLen[r]!; j < u; j++) list[j] = remap[list[j]!]!;
    }
  }

  private growRing(slots: number): void {
    let cap = 1;
    while (cap < slots) cap *= 2;
    const T = this.tables;
    const ring: Int32Array[] = Array.from({ length: cap * T }, () => new Int32Array(0));
    const len = new Int32Array(cap * T);
    const wide = new Uint8Array(cap * T);
    for (let s = this.head; s < this.tail; s++) {
      const from = (s & this.ringMask) * T;
      const to = (s & (cap - 1)) * T;
      for (let t = 0; t < T; t++) {
        ring[to + t] = this.ring[from + t]!;
        len[to + t] = this.ringLen[from + t]!;
        wide[to + t] = this.ringWide[from + t]!;
      }
    }
    this.ring = ring;
    this.ringLen = len;
    this.ringWide = wide;
    this.ringMask = cap - 1;
  }

  /** Pops the next `k` steps (their windows are complete), table by table. */
  private popSteps(k: number): StepHints[] {
    const head = this.head;
    const m = Math.min(k, this.tail - head);
    const tables: TableHints[][] = Array.from({ length: m }, () => new Array<TableHints>(this.tables));
    const retained = new Float64Array(m);
    for (let t = 0; t < this.tables; t++) {
      const st = this.state[t]!;
      for (let i = 0; i < m; i++) {
        tables[i]![t] = this.popTable(t, head + i);
        retained[i] += st.inCache;
      }
    }
    this.head += m;
    return tables.map((th, i) => this.stepHints(head + i, th, retained[i]!));
  }

  /** Table t's hints for `step` (Algorithm 1 lines 13–22 for one table). */
  private popTable(t: number, step: number): TableHints {
    const r = (step & this.ringMask) * this.tables + t;
    const u = this.ringLen[r]!;
    return this.state[t]!.pop(this.ring[r]!, u, step, this.ringWide[r] === 1, this.popScratch, this.pool);
  }

  private stepHints(step: number, tables: TableHints[], retained: number): StepHints {
    let unique = 0;
    let hits = 0;
    let cacheSize = 0;
    for (const th of tables) {
      unique += th.unique;
      hits += th.hits;
      cacheSize += th.resident;
    }
    const h: StepHints = { step, window: this.L!, tables, unique, hits, hitRatio: unique === 0 ? 1 : hits / unique, cacheSize, retained };
    const pool = this.pool;
    // Each table's four arrays view one buffer (TableState.pop).
    return defineRelease(h, () => {
      for (const th of tables) pool.give(th.ttl.buffer as ArrayBuffer);
    });
  }

  /** Buffers of released steps handed out again for later steps' hints. */
  get reusedBuffers(): number {
    return this.pool.reused;
  }
}

/** Running statistics over a stream of step hints: cache size over time, hit ratio, budget overruns. */
export class LookaheadSummary {
  steps = 0;
  unique = 0;
  hits = 0;
  prefetched = 0;
  evicted = 0;
  /** Largest cache size of a step, in ids. */
  peakCacheSize = 0;
  /** Largest cache size of a step in the budget's unit (ids, or bytes), when a budget is given. */
  peakBudgetUse = 0;
  /** Steps whose cache exceeded the budget (when given). */
  overBudgetSteps = 0;
  private sumCacheSize = 0;
  private readonly sizes: number[] = [];
  private readonly ratios: number[] = [];
  private readonly budget: { budget: number; weights: Float64Array } | null;

  constructor(tables: number, budget?: CacheBudget) {
    this.budget = budget === undefined ? null : budgetWeights(budget, tables);
  }

  add(h: StepHints): void {
    this.steps++;
    this.unique += h.unique;
    this.hits += h.hits;
    let use = 0;
    h.tables.forEach((t, i) => {
      this.prefetched += t.prefetch.length;
      this.evicted += t.evict.length;
      if (this.budget !== null) use += t.resident * this.budget.weights[i]!;
    });
    if (h.cacheSize > this.peakCacheSize) this.peakCacheSize = h.cacheSize;
    if (use > this.peakBudgetUse) this.peakBudgetUse = use;
    if (this.budget !== null && use > this.budget.budget) this.overBudgetSteps++;
    this.sumCacheSize += h.cacheSize;
    this.sizes.push(h.cacheSize);
    this.ratios.push(h.hitRatio);
  }

  /** Distinct-id hit ratio over all steps. */
  get hitRatio(): number {
    return this.unique === 0 ? 1 : this.hits / this.unique;
  }

  /** Mean cache size of a step, in ids. */
  get meanCacheSize(): number {
    return this.steps === 0 ? 0 : this.sumCacheSize / this.steps;
  }

  /** About `points` evenly spaced steps (always the first and the last) with their cache size (ids) and hit ratio. */
  series(points: number): Array<{ step: number; cacheSize: number; hitRatio: number }> {
    const n = this.sizes.length;
    if (n === 0) return [];
    const k = Math.max(1, Math.min(points, n));
    const steps = new Set<number>();
    for (let i = 0; i < k; i++) steps.add(k === 1 ? n - 1 : Math.round((i * (n - 1)) / (k - 1)));
    return [...steps].map((step) => ({ step, cacheSize: this.sizes[step]!, hitRatio: this.ratios[step]! }));
  }
}
