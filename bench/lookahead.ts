/**
 * BAGPIPE lookahead cache hints (SOSP'23 §3.2, Algorithm 1) on RM1: 26 sparse columns, batch
 * 16,384, window 200 by default. The figure is samples per second of the hint computation over ids
 * already in memory on one thread (BAGPIPE §5.3 reports 3.27M samples/s for its Oracle Cacher);
 * reading Parquet + hex2int + batching is timed on its own and reported beside it. The peer
 * measured in the same run is a direct Map-based transcription of Algorithm 1, which also
 * cross-checks the counts.
 *
 *   npm run bench:lookahead [-- --rows 1000000 --window 200 --batch-size 16384 --passes 1 --reps 5 --json]
 *
 * --passes k replays the rows k times (k × rows/batch steps), so that with few batches the window
 * really slides (at 1M rows there are 62 batches, fewer than a window of 200).
 */
import { parseArgs } from 'node:util';
import { LookaheadCache, batchIds, type IdArray } from '@sluice/core/lookahead';
import { pipeline, type PlanSpec } from '@sluice/core';
import { cachedDataset, collectGarbage, emitJson, fmtInt, fmtRate, log, machine, median, printTable } from './lib.js';

/** BAGPIPE §5.3: "Oracle Cacher can almost dispatch 3.27 Million examples per second". */
const BAGPIPE_SAMPLES_PER_SECOND = 3.27e6;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    window: { type: 'string', default: '200' },
    'batch-size': { type: 'string', default: '16384' },
    passes: { type: 'string', default: '1' },
    reps: { type: 'string', default: '5' },
    'naive-reps': { type: 'string', default: '2' },
    group: { type: 'string', default: '64' },
    seed: { type: 'string', default: '42' },
    json: { type: 'boolean' },
    help: { type: 'boolean' },
  },
});
if (values.help) {
  log('npx tsx bench/lookahead.ts [--rows N] [--window L] [--batch-size B] [--passes K] [--reps R] [--naive-reps R] [--seed S] [--json]');
  process.exit(0);
}
const num = (name: keyof typeof values, min: number): number => {
  const n = Number(String(values[name]).replace(/_/g, ''));
  if (!Number.isInteger(n) || n < min) {
    log(`--${name} must be an integer >= ${min}`);
    process.exit(2);
  }
  return n;
};
const ROWS = num('rows', 1);
const WINDOW = num('window', 0);
const BATCH = num('batch-size', 1);
const PASSES = num('passes', 1);
const REPS = num('reps', 1);
const NAIVE_REPS = num('naive-reps', 0);
const GROUP = num('group', 1);
const COLUMNS = Array.from({ length: 26 }, (_, i) => `C${i + 1}`);

// ---- input: Parquet → hex2int → batches, timed on its own ---------------------------------------

const ds = await cachedDataset({ preset: 'rm1', rows: ROWS, seed: num('seed', 0) });
const plan: PlanSpec = { batchSize: BATCH, backend: 'cpu', features: COLUMNS.map((c) => ({ name: c, input: c, kind: 'sparse', ops: [{ op: 'hex2int' }] })) };
const batches: IdArray[][] = [];
let rows = 0;
let ids = 0;
const r0 = performance.now();
for await (const b of pipeline(plan, { input: ds.path })) {
  batches.push(COLUMNS.map((_, k) => batchIds(b, k)));
  rows += b.rows;
  ids += b.sparse.values.length;
}
const readSeconds = (performance.now() - r0) / 1000;
log(`read ${fmtInt(rows)} RM1 rows (${fmtInt(ids)} ids in ${COLUMNS.length} columns) into ${batches.length} batches in ${readSeconds.toFixed(2)} s`);

const steps = batches.length * PASSES;
function* stream(): Generator<IdArray[]> {
  for (let p = 0; p < PASSES; p++) yield* batches;
}

interface Totals {
  steps: number;
  unique: number;
  hits: number;
  prefetched: number;
  evicted: number;
  peakCache: number;
}

/** The optimized hints (core's LookaheadCache), `group` batches per pushAll (table by table). */
function typed(group: number): Totals {
  const t: Totals = { steps: 0, unique: 0, hits: 0, prefetched: 0, evicted: 0, peakCache: 0 };
  const add = (h: ReturnType<LookaheadCache['push']> & object): void => {
    t.steps++;
    t.unique += h.unique;
    t.hits += h.hits;
    for (const x of h.tables) {
      t.prefetched += x.prefetch.length;
      t.evicted += x.evict.length;
    }
    if (h.cacheSize > t.peakCache) t.peakCache = h.cacheSize;
    // Counted: the step's arrays can go to later steps (as a trainer would once it has prefetched).
    h.release?.();
  };
  const la = new LookaheadCache({ tables: COLUMNS.length, window: WINDOW });
  let pending: IdArray[][] = [];
  for (const b of stream()) {
    pending.push(b);
    if (pending.length === group) {
      for (const h of la.pushAll(pending)) add(h);
      pending = [];
    }
  }
  for (const h of la.pushAll(pending)) add(h);
  for (const h of la.drain()) add(h);
  return t;
}

/**
 * The peer: Algorithm 1 transcribed with Map and Set (the obvious JavaScript), window [x, x + L].
 * BigInt64Array reads allocate a BigInt per id, as such code would.
 */
function naive(): Totals {
  const t: Totals = { steps: 0, unique: 0, hits: 0, prefetched: 0, evicted: 0, peakCache: 0 };
  const T = COLUMNS.length;
  const latest = Array.from({ length: T }, () => new Map<bigint | number, number>());
  const inCache = Array.from({ length: T }, () => new Set<bigint | number>());
  const queue: Array<Array<Array<bigint | number>>> = [];
  let next = 0;
  let popped = 0;
  const pop = (): void => {
    const x = popped++;
    const cur = queue.shift()!;
    let size = 0;
    for (let k = 0; k < T; k++) {
      const tracker = latest[k]!;
      const cache = inCache[k]!;
      let evicted = 0;
      for (const id of cur[k]!) {
        const ttl = tracker.get(id)!;
        t.unique++;
        if (!cache.has(id)) {
          t.prefetched++;
          cache.add(id);
        } else t.hits++;
        if (ttl === x) {
          cache.delete(id);
          tracker.delete(id);
          evicted++;
        }
      }
      size += cache.size + evicted;
      t.evicted += evicted;
    }
    t.steps++;
    if (size > t.peakCache) t.peakCache = size;
  };
  for (const b of stream()) {
    const step = next++;
    const uniq = b.map((a, k) => {
      const u = [...new Set<bigint | number>(a as unknown as Iterable<bigint | number>)];
      for (const id of u) latest[k]!.set(id, step);
      return u;
    });
    queue.push(uniq);
    if (queue.length > WINDOW) pop();
  }
  while (queue.length > 0) pop();
  return t;
}

interface Rep {
  wallSeconds: number;
  cpuSeconds: number;
  systemSeconds: number;
}
function measure(fn: () => Totals): { rep: Rep; totals: Totals } {
  collectGarbage();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const totals = fn();
  const wallSeconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { rep: { wallSeconds, cpuSeconds: (c.user + c.system) / 1e6, systemSeconds: c.system / 1e6 }, totals };
}

const samples = rows * PASSES;
log(`hints: ${steps} steps of ${BATCH} rows, window ${WINDOW}, ${REPS} reps (+1 warm-up), naive peer ${NAIVE_REPS} reps`);
const fast: Rep[] = [];
const single: Rep[] = [];
const slow: Rep[] = [];
let fastTotals: Totals | null = null;
let singleTotals: Totals | null = null;
let slowTotals: Totals | null = null;
measure(() => typed(GROUP)); // warm-up: JIT tiers and first-touch of the tables
measure(() => typed(1));
for (let i = 0; i < Math.max(REPS, NAIVE_REPS); i++) {
  // Interleaved, so that load from other processes falls on every peer alike.
  if (i < REPS) {
    const m = measure(() => typed(GROUP));
    fast.push(m.rep);
    fastTotals = m.totals;
  }
  if (i < REPS && GROUP !== 1) {
    const m = measure(() => typed(1));
    single.push(m.rep);
    singleTotals = m.totals;
  }
  if (i < NAIVE_REPS) {
    const m = measure(naive);
    slow.push(m.rep);
    slowTotals = m.totals;
  }
}
for (const [name, t] of [
  ['batch by batch', singleTotals],
  ['naive', slowTotals],
] as const) {
  if (t !== null && JSON.stringify(t) !== JSON.stringify(fastTotals)) {
    log(`MISMATCH between peers: grouped ${JSON.stringify(fastTotals)} vs ${name} ${JSON.stringify(t)}`);
    process.exit(1);
  }
}

const rates = (reps: Rep[], key: keyof Rep): number[] => reps.map((r) => samples / r[key]);
const stats = (xs: number[]): { min: number; median: number; max: number } => ({ min: Math.min(...xs), median: median(xs), max: Math.max(...xs) });
const fastWall = stats(rates(fast, 'wallSeconds'));
const fastCpu = stats(rates(fast, 'cpuSeconds'));
const slowWall = slow.length ? stats(rates(slow, 'wallSeconds')) : null;
const singleWall = single.length ? stats(rates(single, 'wallSeconds')) : null;
const singleCpu = single.length ? stats(rates(single, 'cpuSeconds')) : null;
const result = {
  bench: 'lookahead',
  machine: machine(),
  config: { preset: 'rm1', rows, columns: COLUMNS.length, batchSize: BATCH, window: WINDOW, passes: PASSES, steps, reps: REPS, group: GROUP },
  // The headline: median samples/s of the hint computation over ids in memory (wall clock).
  samplesPerSecond: fastWall.median,
  hints: { wall: fastWall, cpu: fastCpu, seconds: fast.map((r) => +r.wallSeconds.toFixed(4)), systemSeconds: fast.map((r) => +r.systemSeconds.toFixed(4)) },
  batchByBatch: singleWall === null ? null : { wall: singleWall, cpu: singleCpu, seconds: single.map((r) => +r.wallSeconds.toFixed(4)) },
  naiveMapPeer: slowWall === null ? null : { wall: slowWall, seconds: slow.map((r) => +r.wallSeconds.toFixed(4)) },
  speedupOverNaive: slowWall === null ? null : fastWall.median / slowWall.median,
  bagpipeRatio: fastWall.median / BAGPIPE_SAMPLES_PER_SECOND,
  meetsBagpipe: fastWall.median >= BAGPIPE_SAMPLES_PER_SECOND,
  readHex2int: { seconds: readSeconds, samplesPerSecond: rows / readSeconds },
  totals: fastTotals,
  hitRatio: fastTotals!.unique === 0 ? 1 : fastTotals!.hits / fastTotals!.unique,
};
if (values.json) emitJson(result);
else {
  const row = (name: string, s: { min: number; median: number; max: number }): string[] => [
    name,
    fmtRate(s.median),
    fmtRate(s.min),
    fmtRate(s.max),
    `${(s.median / BAGPIPE_SAMPLES_PER_SECOND).toFixed(2)}×`,
  ];
  printTable(
    `BAGPIPE lookahead hints: RM1 ${COLUMNS.length} columns, batch ${fmtInt(BATCH)}, window ${WINDOW}, ${fmtInt(samples)} samples (${steps} steps), load ${String(machine().loadavg1)}`,
    ['samples/s', 'median', 'min', 'max', 'vs BAGPIPE 3.27M'],
    [
      row(`hints, groups of ${GROUP} (wall, one thread)`, fastWall),
      row(`hints, groups of ${GROUP} (per CPU-second)`, fastCpu),
      ...(singleWall && singleCpu ? [row('hints, batch by batch (wall)', singleWall), row('hints, batch by batch (per CPU-second)', singleCpu)] : []),
      ...(slowWall ? [row('naive Map/Set Algorithm 1 (wall)', slowWall)] : []),
      ['read + hex2int + batch (wall)', fmtRate(rows / readSeconds), '', '', `${(rows / readSeconds / BAGPIPE_SAMPLES_PER_SECOND).toFixed(2)}×`],
    ],
  );
  process.stdout.write(
    `\nhints ${result.meetsBagpipe ? 'meet' : 'do not meet'} BAGPIPE's 3.27M samples/s (median of ${REPS})${result.speedupOverNaive ? `; ${result.speedupOverNaive.toFixed(1)}× the naive peer` : ''}; hit ratio ${result.hitRatio.toFixed(4)}, peak cache ${fmtInt(fastTotals!.peakCache)} ids\n`,
  );
}
