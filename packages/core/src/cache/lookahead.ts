/**
 * BAGPIPE lookahead cache hints (Agarwal et al., "BAGPIPE: Accelerating Deep Recommendation Model
 * Training", SOSP'23; /work/shared/papers/bagpipe-sosp23.txt), §3.2 and Algorithm 1, over plain
 * arrays of embedding ids per batch and per table. No RxJS here: `stream/lookahead.ts` wraps this
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
}

/** Initial slots per table; grows by doubling. */
const INITIAL_SLOTS = 1 << 12;

/**
 * Slot of a key: a murmur3-style finalizer over both halves, so that sequential ids (hex2int of
 * Criteo's hashed categoricals, vocab indices) do not cluster under linear probing.
 */
function home(lo: number, hi: number): number {
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * One table's ids in the window or in the cache: BAGPIPE's LatestTracker and InCache (Algorithm 1
 * lines 2–3) in one open-addressing table. Slot s is words [4s, 4s + 4): id low half, id high half,
 * entry + 1 (0 = empty slot), and the last step that uses the id (the TTL). An entry index is stable
 * while its id is present (slots move on deletion; `slotOf` follows them), so the ring buffer can
 * hold entry indices and popping a batch needs no second hash lookup.
 */
class TableState {
  tab: Int32Array = new Int32Array(4 * INITIAL_SLOTS);
  mask = INITIAL_SLOTS - 1;
  /** Entry → its slot. */
  slotOf: Int32Array = new Int32Array(INITIAL_SLOTS);
  /** Entry → 1 once prefetched (InCache). */
  cached: Uint8Array = new Uint8Array(INITIAL_SLOTS);
  /** Freed entries, reused first. */
  free: Int32Array = new Int32Array(INITIAL_SLOTS);
  nFree = 0;
  /** Entries ever handed out (the next new one when `free` is empty). */
  highWater = 0;
  /** Ids present: used in the window or cached. */
  live = 0;
  /** Ids cached. */
  inCache = 0;

  /** Makes room for `n` more ids without growing inside the hot loop (load factor stays <= 1/2). */
  reserve(n: number): void {
    let slots = this.mask + 1;
    if (2 * (this.live + n) > slots) {
      while (2 * (this.live + n) > slots) slots *= 2;
      this.rehash(slots);
    }
    const need = this.highWater + n;
    if (need > this.slotOf.length) {
      let cap = this.slotOf.length;
      while (cap < need) cap *= 2;
      const slotOf = new Int32Array(cap);
      slotOf.set(this.slotOf);
      const cached = new Uint8Array(cap);
      cached.set(this.cached);
      const free = new Int32Array(cap);
      free.set(this.free.subarray(0, this.nFree));
      this.slotOf = slotOf;
      this.cached = cached;
      this.free = free;
    }
  }

  private rehash(slots: number): void {
    const old = this.tab;
    const tab = new Int32Array(4 * slots);
    const mask = slots - 1;
    const slotOf = this.slotOf;
    for (let p = 0; p < old.length; p += 4) {
      const e1 = old[p + 2]!;
      if (e1 === 0) continue;
      const lo = old[p]!;
      const hi = old[p + 1]!;
      let s = home(lo, hi) & mask;
      while (tab[(s << 2) + 2] !== 0) s = (s + 1) & mask;
      const q = s << 2;
      tab[q] = lo;
      tab[q + 1] = hi;
      tab[q + 2] = e1;
      tab[q + 3] = old[p + 3]!;
      slotOf[e1 - 1] = s;
    }
    this.tab = tab;
    this.mask = mask;
  }

  /**
   * Records that batch `step` uses ids (lo, hi) = (words[2i], words[2i + 1]), i < n (Algorithm 1
   * lines 8–9), and writes the entries of its distinct ids to `list` in first-occurrence order.
   * Returns how many. The caller has called `reserve(n)`.
   */
  ingestWide(words: Int32Array, n: number, step: number, list: Int32Array): number {
    const tab = this.tab;
    const mask = this.mask;
    const slotOf = this.slotOf;
    const cached = this.cached;
    const free = this.free;
    let nFree = this.nFree;
    let highWater = this.highWater;
    let added = 0;
    let u = 0;
    for (let i = 0, end = 2 * n; i < end; i += 2) {
      const lo = words[i]!;
      const hi = words[i + 1]!;
      let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      let s = (h ^ (h >>> 16)) & mask;
      for (;;) {
        const p = s << 2;
        const e1 = tab[p + 2]!;
        if (e1 === 0) {
          const e = nFree > 0 ? free[--nFree]! : highWater++;
          tab[p] = lo;
          tab[p + 1] = hi;
          tab[p + 2] = e + 1;
          tab[p + 3] = step;
          slotOf[e] = s;
          cached[e] = 0;
          list[u++] = e;
          added++;
          break;
        }
        if (tab[p] === lo && tab[p + 1] === hi) {
          if (tab[p + 3] !== step) {
            tab[p + 3] = step;
            list[u++] = e1 - 1;
          }
          break;
        }
        s = (s + 1) & mask;
      }
    }
    this.nFree = nFree;
    this.highWater = highWater;
    this.live += added;
    return u;
  }

  /** `ingestWide` for int32 ids (sign-extended, so an int32 id equals the same int64 id). */
  ingestNarrow(ids: Int32Array, n: number, step: number, list: Int32Array): number {
    const tab = this.tab;
    const mask = this.mask;
    const slotOf = this.slotOf;
    const cached = this.cached;
    const free = this.free;
    let nFree = this.nFree;
    let highWater = this.highWater;
    let added = 0;
    let u = 0;
    for (let i = 0; i < n; i++) {
      const lo = ids[i]!;
      const hi = lo >> 31;
      let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      let s = (h ^ (h >>> 16)) & mask;
      for (;;) {
        const p = s << 2;
        const e1 = tab[p + 2]!;
        if (e1 === 0) {
          const e = nFree > 0 ? free[--nFree]! : highWater++;
          tab[p] = lo;
          tab[p + 1] = hi;
          tab[p + 2] = e + 1;
          tab[p + 3] = step;
          slotOf[e] = s;
          cached[e] = 0;
          list[u++] = e;
          added++;
          break;
        }
        if (tab[p] === lo && tab[p + 1] === hi) {
          if (tab[p + 3] !== step) {
            tab[p + 3] = step;
            list[u++] = e1 - 1;
          }
          break;
        }
        s = (s + 1) & mask;
      }
    }
    this.nFree = nFree;
    this.highWater = highWater;
    this.live += added;
    return u;
  }

  /**
   * Pops batch `step` whose distinct entries are list[0, u) (Algorithm 1 lines 13–22). Writes the
   * id words of prefetches to out[0, 2u), of keeps to out[2u, 4u), of evictions to out[4u, 6u)
   * and the keeps' TTLs to out[6u, 7u); returns the counts in `counts` [prefetch, keep, evict].
   */
  pop(list: Int32Array, u: number, step: number, out: Int32Array, counts: Int32Array): void {
    const tab = this.tab;
    const slotOf = this.slotOf;
    const cached = this.cached;
    let np = 0;
    let nk = 0;
    let ne = 0;
    const K = 2 * u;
    const E = 4 * u;
    const T = 6 * u;
    for (let j = 0; j < u; j++) {
      const e = list[j]!;
      const s = slotOf[e]!;
      const p = s << 2;
      const lo = tab[p]!;
      const hi = tab[p + 1]!;
      if (cached[e] === 0) {
        out[2 * np] = lo;
        out[2 * np + 1] = hi;
        np++;
        cached[e] = 1;
      }
      const ttl = tab[p + 3]!;
      if (ttl === step) {
        out[E + 2 * ne] = lo;
        out[E + 2 * ne + 1] = hi;
        ne++;
        cached[e] = 0;
        this.remove(s);
        this.free[this.nFree++] = e;
      } else {
        out[K + 2 * nk] = lo;
        out[K + 2 * nk + 1] = hi;
        out[T + nk] = ttl;
        nk++;
      }
    }
    this.inCache += np - ne;
    counts[0] = np;
    counts[1] = nk;
    counts[2] = ne;
  }

  /** Deletes slot i by backward shift (no tombstones, so probe chains never degrade). */
  private remove(i: number): void {
    const tab = this.tab;
    const mask = this.mask;
    const slotOf = this.slotOf;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const q = j << 2;
      const e1 = tab[q + 2]!;
      if (e1 === 0) break;
      const k = home(tab[q]!, tab[q + 1]!) & mask;
      // The id at j may fill the hole at i only if its home slot is not cyclically in (i, j].
      if (i <= j ? i < k && k <= j : i < k || k <= j) continue;
      const p = i << 2;
      tab[p] = tab[q]!;
      tab[p + 1] = tab[q + 1]!;
      tab[p + 2] = e1;
      tab[p + 3] = tab[q + 3]!;
      slotOf[e1 - 1] = i;
      i = j;
    }
    tab[(i << 2) + 2] = 0;
    this.live--;
  }

  /** Words (lo, hi) of the cached ids, in slot order. */
  cachedWords(): Int32Array {
    const out = new Int32Array(2 * this.inCache);
    let o = 0;
    const tab = this.tab;
    for (let p = 0; p < tab.length; p += 4) {
      const e1 = tab[p + 2]!;
      if (e1 !== 0 && this.cached[e1 - 1] === 1) {
        out[o++] = tab[p]!;
        out[o++] = tab[p + 1]!;
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
    per.forEach((w, t) => { weights[t] = checkPositive(w, `cacheBudget.bytesPerId[${t}]`); });
  }
  return { budget: checkPositive(b.bytes, 'cacheBudget.bytes'), weights };
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
  private scratch = new Int32Array(1024);
  private readonly counts = new Int32Array(3);

  constructor(opts: LookaheadOptions) {
    this.tables = checkCount(opts.tables, 'tables');
    if (this.tables === 0) throw new RangeError('tables must be at least 1');
    if (opts.window === undefined && opts.cacheBudget === undefined) throw new RangeError('give a window (L), a cacheBudget, or both');
    const window = opts.window === undefined ? undefined : checkCount(opts.window, 'window');
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
    return this.tail - this.head;
  }

  /**
   * Adds the next batch: `ids[t]` are table t's ids in it (repeats allowed). Returns the hints of
   * the batch that has now seen its whole window, or null while the window is filling.
   */
  push(ids: readonly IdArray[]): StepHints | null {
    if (this.ended) throw new Error('push after end()');
    if (ids.length !== this.tables) throw new RangeError(`expected ids for ${this.tables} tables, got ${ids.length}`);
    const step = this.tail;
    if (step - this.head >= this.ringMask + 1) this.growRing(2 * (this.ringMask + 1));
    const slot = step & this.ringMask;
    for (let t = 0; t < this.tables; t++) {
      const a = ids[t]!;
      const st = this.state[t]!;
      const n = a.length;
      st.reserve(n);
      const r = slot * this.tables + t;
      let list = this.ring[r]!;
      if (list.length < n) list = this.ring[r] = new Int32Array(Math.max(n, 2 * list.length));
      if (isWide(a)) {
        this.ringWide[r] = 1;
        this.ringLen[r] = st.ingestWide(new Int32Array(a.buffer, a.byteOffset, 2 * n), n, step, list);
      } else {
        this.ringWide[r] = 0;
        this.ringLen[r] = st.ingestNarrow(a, n, step, list);
      }
    }
    this.tail++;
    if (this.L === null) {
      // §3.5: keep reading ahead until the distinct ids of the batches read so far overflow the
      // budget; the ones before the overflowing batch fit, so L = their number.
      let used = 0;
      for (let t = 0; t < this.tables; t++) used += this.state[t]!.live * this.budget!.weights[t]!;
      if (used > this.budget!.budget || this.tail - 1 >= this.maxWindow) this.L = this.tail - 1;
      else return null;
    }
    return this.tail - this.head > this.L ? this.popHead() : null;
  }

  /** Ends the stream: the hints of every batch still buffered, in order. */
  end(): StepHints[] {
    this.ended = true;
    // Everything read fitted the budget: any L covering the stream gives the same hints.
    if (this.L === null) this.L = Math.max(0, this.tail - 1);
    const out: StepHints[] = [];
    while (this.head < this.tail) out.push(this.popHead());
    return out;
  }

  /** The ids of table t cached now (between steps), in no particular order. */
  cachedIds(t: number): BigInt64Array {
    const w = this.state[t]!.cachedWords();
    return new BigInt64Array(w.buffer, 0, w.length / 2);
  }

  /** Ids cached now, all tables. */
  get cacheSize(): number {
    let n = 0;
    for (const st of this.state) n += st.inCache;
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

  private popHead(): StepHints {
    const step = this.head++;
    const slot = step & this.ringMask;
    const tables: TableHints[] = [];
    let unique = 0;
    let hits = 0;
    let cacheSize = 0;
    let retained = 0;
    const counts = this.counts;
    for (let t = 0; t < this.tables; t++) {
      const r = slot * this.tables + t;
      const u = this.ringLen[r]!;
      const st = this.state[t]!;
      if (this.scratch.length < 7 * u) this.scratch = new Int32Array(Math.max(7 * u, 2 * this.scratch.length));
      const before = st.inCache;
      st.pop(this.ring[r]!, u, step, this.scratch, counts);
      const th = tableHints(this.scratch, u, counts[0]!, counts[1]!, counts[2]!, this.ringWide[r] === 1, before);
      tables.push(th);
      unique += u;
      hits += th.hits;
      cacheSize += th.resident;
      retained += st.inCache;
    }
    return { step, window: this.L!, tables, unique, hits, hitRatio: unique === 0 ? 1 : hits / unique, cacheSize, retained };
  }
}

/** Copies one table's hints out of the scratch words into one exact-size buffer (transferable). */
function tableHints(w: Int32Array, u: number, np: number, nk: number, ne: number, wide: boolean, cachedBefore: number): TableHints {
  const ids = np + nk + ne;
  const width = wide ? 8 : 4;
  const buf = new ArrayBuffer(ids * width + nk * 4);
  const ttl = new Int32Array(buf, ids * width, nk);
  ttl.set(w.subarray(6 * u, 6 * u + nk));
  let prefetch: IdArray;
  let keep: IdArray;
  let evict: IdArray;
  if (wide) {
    const words = new Int32Array(buf, 0, 2 * ids);
    words.set(w.subarray(0, 2 * np), 0);
    words.set(w.subarray(2 * u, 2 * u + 2 * nk), 2 * np);
    words.set(w.subarray(4 * u, 4 * u + 2 * ne), 2 * (np + nk));
    prefetch = new BigInt64Array(buf, 0, np);
    keep = new BigInt64Array(buf, 8 * np, nk);
    evict = new BigInt64Array(buf, 8 * (np + nk), ne);
  } else {
    prefetch = lowWords(w, 0, np, new Int32Array(buf, 0, np));
    keep = lowWords(w, 2 * u, nk, new Int32Array(buf, 4 * np, nk));
    evict = lowWords(w, 4 * u, ne, new Int32Array(buf, 4 * (np + nk), ne));
  }
  return { prefetch, keep, ttl, evict, unique: nk + ne, hits: nk + ne - np, resident: cachedBefore + np };
}

function lowWords(w: Int32Array, at: number, n: number, out: Int32Array): Int32Array {
  for (let i = 0; i < n; i++) out[i] = w[at + 2 * i]!;
  return out;
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
