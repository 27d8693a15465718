/**
 * BAGPIPE lookahead hints against a brute-force ideal cache.
 *
 * The oracle does not use TTLs or Algorithm 1 at all: it keeps one Set per table, fetches what a
 * batch needs and does not hold, and after the batch keeps exactly the ids that some batch of the
 * next L uses (an ideal cache with lookahead L). The hints must reproduce it exactly: prefetch
 * lists (in first-occurrence order), evictions, keeps and their TTLs, cache contents and sizes, and
 * hits, at every step.
 */
import { describe, expect, it } from 'vitest';
import { LookaheadCache, LookaheadSummary, type IdArray, type StepHints } from '../../src/lookahead/cache.js';

/** xorshift-style seeded generator. */
function rng(seed: number): () => number {
  let s = (seed * 0x9e3779b1 + 0x7f4a7c15) >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

type Stream = bigint[][][]; // [step][table] → ids (repeats allowed)

interface StreamSpec {
  seed: number;
  steps: number;
  tables: number;
  /** Ids per batch per table, drawn in [0, maxLen]. */
  maxLen: number;
  /** Distinct ids per table to draw from. */
  vocab: number;
  /** How ids map to int64 values: small non-negative, or spread over the whole int64 range (negative too). */
  wide: boolean;
}

/** A seeded random stream with skew (a few ids recur often) and empty batches now and then. */
function randomStream(spec: StreamSpec): Stream {
  const r = rng(spec.seed);
  const value = (k: number, t: number): bigint => {
    if (!spec.wide) return BigInt(k);
    // Ids that differ only in the high half, negative ids, and the int64 extremes.
    const specials = [-(1n << 63n), (1n << 63n) - 1n, -1n, 1n << 32n, (1n << 32n) + 1n, 0xffffffffn];
    if (k < specials.length) return specials[k]!;
    return BigInt.asIntN(64, (BigInt(k) * 0x9e3779b97f4a7c15n + BigInt(t)) ^ (BigInt(k & 3) << 62n));
  };
  const out: Stream = [];
  for (let x = 0; x < spec.steps; x++) {
    const batch: bigint[][] = [];
    for (let t = 0; t < spec.tables; t++) {
      const n = r() < 0.1 ? 0 : Math.floor(r() * (spec.maxLen + 1));
      const ids: bigint[] = [];
      for (let i = 0; i < n; i++) {
        // 60% of draws from a hot tenth of the vocabulary.
        const k = r() < 0.6 ? Math.floor(r() * Math.max(1, spec.vocab / 10)) : Math.floor(r() * spec.vocab);
        ids.push(value(k, t));
      }
      batch.push(ids);
    }
    out.push(batch);
  }
  return out;
}

const wideArray = (ids: readonly bigint[]): BigInt64Array => BigInt64Array.from(ids);
const narrowArray = (ids: readonly bigint[]): Int32Array => Int32Array.from(ids, (v) => Number(v));
const toBig = (a: IdArray): bigint[] => Array.from(a as ArrayLike<number | bigint>, (v) => BigInt(v));
const sorted = (xs: Iterable<bigint>): bigint[] => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const distinct = (ids: readonly bigint[]): bigint[] => [...new Set(ids)];

interface OracleTable {
  prefetch: bigint[];
  evict: bigint[];
  keep: Map<bigint, number>;
  hits: number;
  unique: number;
  resident: number;
  contents: bigint[];
}

/** The ideal cache with lookahead L, simulated directly with sets. */
function oracle(stream: Stream, L: number, tables: number): OracleTable[][] {
  const cache = Array.from({ length: tables }, () => new Set<bigint>());
  const out: OracleTable[][] = [];
  for (let x = 0; x < stream.length; x++) {
    const row: OracleTable[] = [];
    for (let t = 0; t < tables; t++) {
      const c = cache[t]!;
      const U = distinct(stream[x]![t]!);
      const prefetch = U.filter((id) => !c.has(id));
      for (const id of prefetch) c.add(id);
      const resident = c.size;
      const future = new Set<bigint>();
      for (let y = x + 1; y <= Math.min(x + L, stream.length - 1); y++) for (const id of stream[y]![t]!) future.add(id);
      // Evict over the whole cache, not just this batch's ids: that the hints only ever evict ids
      // of the current batch is something this comparison proves, not assumes.
      const evict = [...c].filter((id) => !future.has(id));
      for (const id of evict) c.delete(id);
      const keep = new Map<bigint, number>();
      for (const id of U) {
        if (!c.has(id)) continue;
        let last = x;
        for (let y = x + 1; y <= Math.min(x + L, stream.length - 1); y++) if (stream[y]![t]!.includes(id)) last = y;
        keep.set(id, last);
      }
      row.push({ prefetch, evict, keep, hits: U.length - prefetch.length, unique: U.length, resident, contents: sorted(c) });
    }
    out.push(row);
  }
  return out;
}

/** Runs the hints over a stream, recording the cache contents right after each step. */
function runHints(
  stream: Stream,
  tables: number,
  opts: { window?: number; cacheBudget?: { ids: number } | { bytes: number; bytesPerId: number | number[] } },
  asArray: (t: number) => (ids: bigint[]) => IdArray,
): { hints: StepHints[]; contents: bigint[][][]; la: LookaheadCache } {
  const la = new LookaheadCache({ tables, ...opts });
  const hints: StepHints[] = [];
  const contents: bigint[][][] = [];
  const snap = (h: StepHints): void => {
    hints.push(h);
    contents.push(Array.from({ length: tables }, (_, t) => sorted(la.cachedIds(t))));
  };
  for (const batch of stream) {
    const h = la.push(batch.map((ids, t) => asArray(t)(ids)));
    if (h !== null) snap(h);
  }
  for (const h of la.drain()) snap(h);
  return { hints, contents, la };
}

function expectMatchesOracle(stream: Stream, tables: number, L: number, hints: StepHints[], contents: bigint[][][]): void {
  const want = oracle(stream, L, tables);
  expect(hints.map((h) => h.step)).toEqual(stream.map((_, x) => x));
  for (let x = 0; x < stream.length; x++) {
    const h = hints[x]!;
    expect(h.window).toBe(L);
    let unique = 0;
    let hits = 0;
    let resident = 0;
    let retained = 0;
    for (let t = 0; t < tables; t++) {
      const o = want[x]![t]!;
      const got = h.tables[t]!;
      const where = `step ${x} table ${t}`;
      expect(toBig(got.prefetch), `${where} prefetch`).toEqual(o.prefetch);
      expect(sorted(toBig(got.evict)), `${where} evict`).toEqual(sorted(o.evict));
      const keep = new Map(toBig(got.keep).map((id, i) => [id, got.ttl[i]!]));
      expect(keep.size, `${where} keep has no repeats`).toBe(got.keep.length);
      expect(keep, `${where} keep + TTL`).toEqual(o.keep);
      expect(got.hits, `${where} hits`).toBe(o.hits);
      expect(got.unique, `${where} unique`).toBe(o.unique);
      expect(got.resident, `${where} resident`).toBe(o.resident);
      expect(contents[x]![t], `${where} cache contents`).toEqual(o.contents);
      unique += o.unique;
      hits += o.hits;
      resident += o.resident;
      retained += o.contents.length;
    }
    expect(h.unique).toBe(unique);
    expect(h.hits).toBe(hits);
    expect(h.hitRatio).toBe(unique === 0 ? 1 : hits / unique);
    expect(h.cacheSize).toBe(resident);
    expect(h.retained).toBe(retained);
  }
}

const wide = (): ((ids: bigint[]) => IdArray) => wideArray;
const narrow = (): ((ids: bigint[]) => IdArray) => narrowArray;

describe('LookaheadCache against a brute-force ideal cache', () => {
  it('reproduces BAGPIPE Figure 6 (LookAheadValue 2 = one batch beyond the current)', () => {
    const stream: Stream = [[[3n, 9n]], [[3n, 4n]], [[3n, 6n]], [[6n, 1n]]];
    const { hints, contents } = runHints(stream, 1, { window: 1 }, narrow);
    const view = hints.map((h) => ({
      prefetch: Array.from(h.tables[0]!.prefetch as Int32Array),
      keep: Array.from(h.tables[0]!.keep as Int32Array),
      ttl: Array.from(h.tables[0]!.ttl),
      evict: Array.from(h.tables[0]!.evict as Int32Array),
    }));
    // Paper (1-based batches): batch 1 caches 3 with TTL 2; batch 2 sends a TTL update for 3 to
    // batch 3 and prefetches 4; batch 3 prefetches 6 (TTL 4) and evicts 3; batch 4 prefetches 1.
    expect(view).toEqual([
      { prefetch: [3, 9], keep: [3], ttl: [1], evict: [9] },
      { prefetch: [4], keep: [3], ttl: [2], evict: [4] },
      { prefetch: [6], keep: [6], ttl: [3], evict: [3] },
      { prefetch: [1], keep: [], ttl: [], evict: [6, 1] },
    ]);
    expectMatchesOracle(stream, 1, 1, hints, contents);
  });

  const cases: Array<{ name: string; spec: StreamSpec; windows: number[] }> = [
    { name: 'one table, small ids', spec: { seed: 1, steps: 40, tables: 1, maxLen: 12, vocab: 30, wide: false }, windows: [0, 1, 2, 3, 7, 39, 100] },
    {
      name: 'three tables, int64 ids over the whole range',
      spec: { seed: 2, steps: 50, tables: 3, maxLen: 20, vocab: 60, wide: true },
      windows: [0, 1, 4, 10, 49],
    },
    {
      name: 'many distinct ids (rehashes, tombstones)',
      spec: { seed: 3, steps: 120, tables: 2, maxLen: 300, vocab: 20_000, wide: true },
      windows: [0, 2, 5, 30],
    },
    { name: 'tiny vocabulary, long batches', spec: { seed: 4, steps: 60, tables: 2, maxLen: 200, vocab: 5, wide: false }, windows: [0, 1, 3, 8] },
  ];
  for (const { name, spec, windows } of cases) {
    for (const L of windows) {
      it(`matches the oracle exactly: ${name}, L = ${L}`, () => {
        const stream = randomStream(spec);
        const { hints, contents } = runHints(stream, spec.tables, { window: L }, spec.wide ? wide : narrow);
        expectMatchesOracle(stream, spec.tables, L, hints, contents);
      });
    }
  }

  it('matches the oracle over 30 seeded random streams and windows', () => {
    for (let seed = 100; seed < 130; seed++) {
      const r = rng(seed);
      const spec: StreamSpec = {
        seed,
        steps: 5 + Math.floor(r() * 40),
        tables: 1 + Math.floor(r() * 3),
        maxLen: Math.floor(r() * 30),
        vocab: 2 + Math.floor(r() * 80),
        wide: r() < 0.5,
      };
      const L = Math.floor(r() * 12);
      const stream = randomStream(spec);
      const { hints, contents } = runHints(stream, spec.tables, { window: L }, spec.wide ? wide : narrow);
      expectMatchesOracle(stream, spec.tables, L, hints, contents);
    }
  });

  it('treats an int32 id and the same int64 id as one id (tables may mix array types)', () => {
    const spec: StreamSpec = { seed: 7, steps: 30, tables: 1, maxLen: 15, vocab: 40, wide: false };
    const stream = randomStream(spec).map((b) => b.map((ids) => ids.map((v) => v - 20n))); // negative ids too
    let k = 0;
    const alternate = (ids: bigint[]): IdArray => (k++ % 2 === 0 ? narrowArray(ids) : wideArray(ids));
    const { hints, contents } = runHints(stream, 1, { window: 3 }, () => alternate);
    expectMatchesOracle(stream, 1, 3, hints, contents);
    // Output arrays keep the type of the batch they describe.
    hints.forEach((h, x) => expect(h.tables[0]!.prefetch).toBeInstanceOf(x % 2 === 0 ? Int32Array : BigInt64Array));
  });

  it('stays exact when a table of int32-range ids meets its first wider id mid-stream (slot layout switch with batches buffered)', () => {
    const spec: StreamSpec = { seed: 11, steps: 40, tables: 2, maxLen: 30, vocab: 50, wide: false };
    // Table 0: ids in [-25, 25) (high half 0 or -1) until step 15, then every third one also 5 << 32 higher.
    const stream = randomStream(spec).map((b, x) =>
      b.map((ids, t) => (t === 0 ? ids.map((v, i) => (x >= 15 && i % 3 === 0 ? v + (5n << 32n) : v - 25n)) : ids)),
    );
    for (const L of [0, 2, 6, 39]) {
      let k = 0;
      // Table 1 keeps int32 arrays throughout; table 0 switches to BigInt64Array at step 15.
      const { hints, contents } = runHints(stream, 2, { window: L }, (t) => (ids) => (t === 0 && k++ >= 15 ? wideArray(ids) : narrowArray(ids)));
      expectMatchesOracle(stream, 2, L, hints, contents);
    }
  });

  it('gives identical hints when batches are pushed in groups (table by table) as one at a time', () => {
    for (const [seed, opts] of [
      [12, { window: 4 }],
      [13, { window: 0 }],
      [14, { window: 50 }],
      [15, { cacheBudget: { ids: 90 } }],
      [16, { window: 3, cacheBudget: { ids: 40 } }],
    ] as const) {
      const spec: StreamSpec = { seed, steps: 45, tables: 3, maxLen: 40, vocab: 300, wide: seed % 2 === 0 };
      const stream = randomStream(spec).map((b) => b.map((ids): IdArray => (spec.wide ? wideArray(ids) : narrowArray(ids))));
      const one = LookaheadCache.run(stream, { tables: 3, ...opts });
      const r = rng(seed);
      const la = new LookaheadCache({ tables: 3, ...opts });
      const grouped: StepHints[] = [];
      for (let i = 0; i < stream.length;) {
        const g = 1 + Math.floor(r() * 9);
        grouped.push(...la.pushAll(stream.slice(i, i + g)));
        i += g;
      }
      grouped.push(...la.end());
      expect(grouped).toEqual(one);
      expect(grouped).toHaveLength(stream.length);
    }
  });

  it('handles an empty stream and empty batches', () => {
    expect(LookaheadCache.run([], { tables: 2, window: 3 })).toEqual([]);
    const hints = LookaheadCache.run([[new Int32Array(0)], [new Int32Array(0)]], { tables: 1, window: 1 });
    expect(hints.map((h) => [h.step, h.unique, h.hitRatio, h.cacheSize])).toEqual([
      [0, 0, 1, 0],
      [1, 0, 1, 0],
    ]);
  });

  it('reports the cache as of the last yielded step while draining, also across a drain left early and resumed', () => {
    // drain() pops several steps at a time table by table; what is observable between yields must not show it.
    const spec: StreamSpec = { seed: 31, steps: 60, tables: 3, maxLen: 30, vocab: 80, wide: false };
    const stream = randomStream(spec);
    const L = 40;
    const want = oracle(stream, L, 3);
    const la = new LookaheadCache({ tables: 3, window: L });
    const got: StepHints[] = [];
    let pushed = 0;
    const check = (h: StepHints): void => {
      got.push(h);
      const x = h.step;
      expect(la.pending).toBe(pushed - x - 1);
      const contents = [0, 1, 2].map((t) => sorted(la.cachedIds(t)));
      expect(contents).toEqual(want[x]!.map((r) => r.contents));
      expect(la.cacheSize).toBe(contents.reduce((a, c) => a + c.length, 0));
      expect(la.cacheSize).toBe(h.retained);
    };
    for (const b of stream) {
      pushed++;
      const h = la.push(b.map(narrowArray));
      if (h !== null) check(h);
    }
    for (const h of la.drain()) {
      check(h);
      if (h.step === 25) break;
    }
    expect(la.pending).toBe(stream.length - 26);
    for (const h of la.drain()) check(h);
    expect(got.map((h) => h.step)).toEqual(stream.map((_, x) => x));
    expect(got).toEqual(
      LookaheadCache.run(
        stream.map((b) => b.map(narrowArray)),
        { tables: 3, window: L },
      ),
    );
  });

  it('gives the same hints when each step is released (its buffers reused by later steps) as when none is', () => {
    // Snapshot = plain copies of a step's arrays, taken before release (after it they may change).
    const snap = (h: StepHints): unknown => ({
      ...h,
      tables: h.tables.map((t) => ({
        ...t,
        prefetch: Array.from(t.prefetch, String),
        keep: Array.from(t.keep, String),
        ttl: Array.from(t.ttl),
        evict: Array.from(t.evict, String),
      })),
    });
    for (const wideIds of [false, true]) {
      const spec: StreamSpec = { seed: 41, steps: 150, tables: 3, maxLen: 120, vocab: 2_000, wide: wideIds };
      const stream = randomStream(spec).map((b) => b.map((ids): IdArray => (wideIds ? wideArray(ids) : narrowArray(ids))));
      const want = LookaheadCache.run(stream, { tables: 3, window: 6 }).map(snap);
      const la = new LookaheadCache({ tables: 3, window: 6 });
      const got: unknown[] = [];
      const take = (hs: Iterable<StepHints>): void => {
        for (const h of hs) {
          got.push(snap(h));
          h.release!();
          h.release!();
        }
      };
      for (let i = 0; i < stream.length; i += 4) take(la.pushAll(stream.slice(i, i + 4)));
      take(la.drain());
      expect(got).toEqual(want);
      // Later steps really were laid out in released memory (else this test checks nothing).
      expect(la.reusedBuffers).toBeGreaterThan(stream.length);
    }
  });

  it('does not enumerate release, and a released step leaves unreleased ones intact', () => {
    const stream = randomStream({ seed: 42, steps: 30, tables: 1, maxLen: 50, vocab: 200, wide: false }).map((b) => b.map(narrowArray));
    const la = new LookaheadCache({ tables: 1, window: 2 });
    const hs = [...la.pushAll(stream.slice(0, 20))];
    expect(Object.keys(hs[0]!)).not.toContain('release');
    const kept = Array.from(hs[1]!.tables[0]!.prefetch as Int32Array);
    for (const h of hs) if (h.step !== 1) h.release!();
    for (const h of la.pushAll(stream.slice(20))) h.release!();
    for (const h of la.drain()) h.release!();
    expect(Array.from(hs[1]!.tables[0]!.prefetch as Int32Array)).toEqual(kept);
  });

  it('stays exact over many rehashes at a steady table size (index and entries reused in place)', () => {
    // A small window over a large vocabulary: ids keep leaving (tombstones) and arriving, the live
    // set stays about the same, so the table rehashes again and again at the same size.
    const spec: StreamSpec = { seed: 43, steps: 400, tables: 1, maxLen: 600, vocab: 1_000_000, wide: false };
    const stream = randomStream(spec);
    for (const L of [1, 3]) {
      const { hints, contents } = runHints(stream, 1, { window: L }, narrow);
      expectMatchesOracle(stream, 1, L, hints, contents);
    }
  });

  it('gives the same hints however the batches are cut into pushes and drained', () => {
    const spec: StreamSpec = { seed: 9, steps: 25, tables: 2, maxLen: 40, vocab: 100, wide: true };
    const stream = randomStream(spec);
    const a = LookaheadCache.run(
      stream.map((b) => b.map(wideArray)),
      { tables: 2, window: 4 },
    );
    const { hints } = runHints(stream, 2, { window: 4 }, wide);
    expect(a).toEqual(hints);
  });
});

describe('LookaheadCache consistency and invariants (BAGPIPE §3.2)', () => {
  const specs: StreamSpec[] = [
    { seed: 21, steps: 80, tables: 2, maxLen: 25, vocab: 70, wide: true },
    { seed: 22, steps: 80, tables: 1, maxLen: 60, vocab: 400, wide: false },
  ];
  for (const spec of specs) {
    for (const L of [0, 1, 3, 9]) {
      it(`an id missing from the cache was not used in the previous L batches, and every id a batch uses is cached at it (seed ${spec.seed}, L = ${L})`, () => {
        const stream = randomStream(spec);
        const { hints, contents } = runHints(stream, spec.tables, { window: L }, spec.wide ? wide : narrow);
        for (let x = 0; x < stream.length; x++) {
          for (let t = 0; t < spec.tables; t++) {
            const th = hints[x]!.tables[t]!;
            const U = new Set(stream[x]![t]!);
            const recent = new Set<bigint>();
            for (let y = Math.max(0, x - L); y < x; y++) for (const id of stream[y]![t]!) recent.add(id);
            const before = new Set(x === 0 ? [] : contents[x - 1]![t]!);
            const prefetch = new Set(toBig(th.prefetch));
            for (const id of U) {
              // §3.2: "if an embedding is not in the cache it means no batch in range of [x − L, x) has updated it".
              expect(before.has(id), `step ${x}: id ${id} cached iff used in [x-L, x)`).toBe(recent.has(id));
              // Every id of the batch is available while it trains: cached before, or prefetched.
              expect(before.has(id) || prefetch.has(id)).toBe(true);
            }
            // Keep and evict partition the batch's distinct ids; prefetches are some of them.
            expect(sorted([...toBig(th.keep), ...toBig(th.evict)])).toEqual(sorted(U));
            for (const id of prefetch) expect(U.has(id)).toBe(true);
            // TTLs lie in (x, x + L].
            for (const ttl of th.ttl) {
              expect(ttl).toBeGreaterThan(x);
              expect(ttl).toBeLessThanOrEqual(x + L);
            }
          }
          // Cache size bounds: what batch x needs is at most the distinct ids of batches
          // [x, x + L) (and at least its own), and what is retained after it at most those of (x, x + L].
          const h = hints[x]!;
          let upper = 0;
          let own = 0;
          let upperAfter = 0;
          for (let t = 0; t < spec.tables; t++) {
            const u = new Set<bigint>();
            for (let y = x; y < Math.min(stream.length, x + Math.max(L, 1)); y++) for (const id of stream[y]![t]!) u.add(id);
            upper += u.size;
            own += new Set(stream[x]![t]!).size;
            const after = new Set<bigint>();
            for (let y = x + 1; y <= Math.min(stream.length - 1, x + L); y++) for (const id of stream[y]![t]!) after.add(id);
            upperAfter += after.size;
          }
          expect(h.cacheSize).toBeLessThanOrEqual(upper);
          expect(h.cacheSize).toBeGreaterThanOrEqual(own);
          expect(h.retained).toBeLessThanOrEqual(upperAfter);
          expect(h.retained).toBe(h.cacheSize - h.tables.reduce((a, t) => a + t.evict.length, 0));
        }
      });
    }
  }

  it('caches nothing past a batch with L = 0, and everything with L beyond the stream', () => {
    const spec: StreamSpec = { seed: 31, steps: 20, tables: 1, maxLen: 20, vocab: 15, wide: false };
    const stream = randomStream(spec);
    const none = LookaheadCache.run(
      stream.map((b) => b.map(narrowArray)),
      { tables: 1, window: 0 },
    );
    for (const h of none) {
      expect(h.hits).toBe(0);
      expect(h.retained).toBe(0);
    }
    const all = LookaheadCache.run(
      stream.map((b) => b.map(narrowArray)),
      { tables: 1, window: 1000 },
    );
    // With the whole stream in the window, every id is fetched exactly once.
    const fetched = all.flatMap((h) => toBig(h.tables[0]!.prefetch));
    expect(sorted(fetched)).toEqual(sorted(new Set(stream.flatMap((b) => b[0]!))));
  });
});

describe('LookaheadCache: L from a cache budget (BAGPIPE §3.5)', () => {
  /** Brute force: the largest k for which the distinct ids of the first k batches fit (capped at max). */
  function bruteL(stream: Stream, weights: number[], budget: number, max = Infinity): number {
    const seen = weights.map(() => new Set<bigint>());
    for (let k = 0; k < stream.length; k++) {
      stream[k]!.forEach((ids, t) => ids.forEach((id) => seen[t]!.add(id)));
      const used = seen.reduce((a, s, t) => a + s.size * weights[t]!, 0);
      if (used > budget || k >= max) return k;
    }
    return Math.max(0, stream.length - 1);
  }

  for (const budget of [1, 30, 80, 200, 100_000]) {
    it(`picks the largest L whose first L batches fit ${budget} ids, then matches the oracle with it`, () => {
      const spec: StreamSpec = { seed: 40 + budget, steps: 40, tables: 2, maxLen: 12, vocab: 60, wide: true };
      const stream = randomStream(spec);
      const L = bruteL(stream, [1, 1], budget);
      const { hints, contents, la } = runHints(stream, 2, { cacheBudget: { ids: budget } }, wide);
      expect(la.window).toBe(L);
      expectMatchesOracle(stream, 2, L, hints, contents);
      // The cache of the first step fits whenever L > 0 (the first batch alone may not).
      if (L > 0) expect(hints[0]!.cacheSize).toBeLessThanOrEqual(budget);
    });
  }

  it('weighs tables by bytes per id, and caps L at the given window', () => {
    const spec: StreamSpec = { seed: 50, steps: 40, tables: 3, maxLen: 10, vocab: 50, wide: false };
    const stream = randomStream(spec);
    const bytesPerId = [16, 64, 256];
    const budget = 40_000;
    const L = bruteL(stream, bytesPerId, budget);
    expect(L).toBeGreaterThan(1);
    const { hints, contents, la } = runHints(stream, 3, { cacheBudget: { bytes: budget, bytesPerId } }, narrow);
    expect(la.window).toBe(L);
    expectMatchesOracle(stream, 3, L, hints, contents);
    const capped = runHints(stream, 3, { window: L - 1, cacheBudget: { bytes: budget, bytesPerId } }, narrow);
    expect(capped.la.window).toBe(L - 1);
    expectMatchesOracle(stream, 3, L - 1, capped.hints, capped.contents);
  });

  it('reports L = null until it is chosen and holds batches back meanwhile', () => {
    const la = new LookaheadCache({ tables: 1, cacheBudget: { ids: 3 } });
    expect(la.window).toBeNull();
    expect(la.push([Int32Array.of(1, 2)])).toBeNull();
    expect(la.pending).toBe(1);
    const h = la.push([Int32Array.of(3, 4)]); // 4 distinct ids > 3: L = 1
    expect(la.window).toBe(1);
    expect(h?.step).toBe(0);
  });
});

describe('LookaheadCache input checks', () => {
  it('rejects bad options and inputs with a clear message', () => {
    expect(() => new LookaheadCache({ tables: 0, window: 1 })).toThrow(/tables must be at least 1/);
    expect(() => new LookaheadCache({ tables: 1 })).toThrow(/window \(L\), a cacheBudget/);
    expect(() => new LookaheadCache({ tables: 1, window: -1 })).toThrow(/window must be a non-negative integer/);
    expect(() => new LookaheadCache({ tables: 1, window: 1.5 })).toThrow(/window must be a non-negative integer/);
    expect(() => new LookaheadCache({ tables: 1, cacheBudget: { ids: 0 } })).toThrow(/cacheBudget.ids must be a positive number/);
    expect(() => new LookaheadCache({ tables: 2, cacheBudget: { bytes: 10, bytesPerId: [1] } })).toThrow(/2 tables/);
    const la = new LookaheadCache({ tables: 2, window: 1 });
    expect(() => la.push([Int32Array.of(1)])).toThrow(/expected ids for 2 tables, got 1/);
    la.end();
    expect(() => la.push([Int32Array.of(1), Int32Array.of(2)])).toThrow(/after end/);
  });
});

describe('LookaheadSummary', () => {
  it('sums hits, sizes and budget overruns of the steps it is given', () => {
    const spec: StreamSpec = { seed: 60, steps: 30, tables: 2, maxLen: 30, vocab: 80, wide: true };
    const stream = randomStream(spec);
    const hints = LookaheadCache.run(
      stream.map((b) => b.map(wideArray)),
      { tables: 2, window: 5 },
    );
    const budget = [...hints.map((h) => h.cacheSize)].sort((a, b) => a - b)[15]!;
    const s = new LookaheadSummary(2, { ids: budget });
    hints.forEach((h) => s.add(h));
    expect(s.steps).toBe(30);
    expect(s.unique).toBe(hints.reduce((a, h) => a + h.unique, 0));
    expect(s.hitRatio).toBeCloseTo(hints.reduce((a, h) => a + h.hits, 0) / s.unique, 12);
    expect(s.peakCacheSize).toBe(Math.max(...hints.map((h) => h.cacheSize)));
    expect(s.overBudgetSteps).toBe(hints.filter((h) => h.cacheSize > budget).length);
    expect(s.overBudgetSteps).toBeGreaterThan(0);
    const series = s.series(4);
    expect(series.map((p) => p.step)).toEqual([0, 10, 19, 29]);
    expect(series.map((p) => p.cacheSize)).toEqual([0, 10, 19, 29].map((x) => hints[x]!.cacheSize));
  });
});
