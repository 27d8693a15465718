/**
 * `sluice lookahead`: BAGPIPE lookahead cache hints (SOSP'23 §3.2, Algorithm 1) over the ids of
 * some Parquet columns, with the hint computation timed apart from reading and hex2int.
 */
import { InputError, typeName, type ColumnType, type FeatureSpec, type OpSpec, type PlanSpec } from '@sluice/ops';
import { LookaheadCache, LookaheadSummary, type CacheBudget, type IdArray } from '../../lookahead/cache.js';
import { batchIds } from '../../lookahead/operator.js';
import { pipeline } from '../../pipeline/pipeline.js';
import { checkColumns, openDataset } from '../../reader/dataset.js';
import { DecoderPool } from '../../reader/decoder-pool.js';
import { givenInputs, parseSize, UsageError, type Values } from '../args.js';
import { Progress, formatTable } from '../progress.js';

/**
 * Batches handed to LookaheadCache.pushAll at once: it works table by table over the group, which
 * misses the CPU caches less than batch by batch. The group's ids stay in memory until hinted (64
 * batches of RM1's 26 id columns at batch 16,384: ~330 MB). Chosen with `bench/lookahead.ts
 * --group`: see docs/lookahead.md.
 */
const GROUP = 64;

/** Points of the cache-size-over-time series printed. */
const SERIES_POINTS = 8;

/** BAGPIPE §5.3: "Oracle Cacher can almost dispatch 3.27 Million examples per second". */
export const BAGPIPE_SAMPLES_PER_SECOND = 3.27e6;

/**
 * A cache budget: a whole number of ids ("500000"), or a size in bytes with a unit ("64MiB",
 * "1.5GB", "4096B"), which needs `bytesPerId`. Returns an error message instead of throwing.
 */
export function parseCacheBudget(text: string, bytesPerId: number | undefined): CacheBudget | string {
  const ids = /^\d+$/.exec(text);
  if (ids) {
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < 1) return `--cache-budget must be at least 1 id, got "${text}"`;
    return { ids: n };
  }
  const bytes = parseSize(text);
  if (bytes === undefined) return `--cache-budget takes a number of ids or a size such as 512MiB or 2GB, got "${text}"`;
  if (!(bytes >= 1)) return `--cache-budget must be at least 1 byte, got "${text}"`;
  if (bytesPerId === undefined) return `--cache-budget ${text} is in bytes: give --bytes-per-id (e.g. 4 × embedding dim for float32)`;
  return { bytes, bytesPerId };
}

/** Integer option ≥ min, or the message saying what is wrong. */
function intOption(values: Values, name: string, min: number): number | undefined | string {
  const v = values[name];
  if (v === undefined) return undefined;
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min) return `--${name} must be an integer >= ${min}, got "${String(v)}"`;
  return n;
}

/** The ops that turn a column into int64 ids, or why it cannot be. */
function idOps(column: string, t: ColumnType): OpSpec[] | string {
  const el = t.kind === 'list' ? t.child : t.kind;
  if (el === 'utf8') return [{ op: 'hex2int' }];
  if (el === 'int32' || el === 'int64') return [];
  return `column "${column}" is ${typeName(t)}: lookahead needs integer ids or hex strings (scalars or lists)`;
}

export interface LookaheadResult {
  input: string[];
  columns: string[];
  batchSize: number;
  /** L used; `windowFrom` says whether --window set it or the cache budget chose it. */
  window: number;
  windowFrom: 'window' | 'cache-budget';
  rows: number;
  batches: number;
  /** Samples per second of the hint computation alone, over ids already in memory (the BAGPIPE figure). */
  samplesPerSecond: number;
  hintSeconds: number;
  /** Reading Parquet, hex2int and batching (the pipeline), without the hints. */
  inputSeconds: number;
  inputSamplesPerSecond: number;
  endToEndSamplesPerSecond: number;
  /** Distinct-id lookups that found the id cached. */
  hitRatio: number;
  uniqueLookups: number;
  prefetched: number;
  evicted: number;
  cacheSize: { mean: number; peak: number; series: Array<{ step: number; cacheSize: number; hitRatio: number }> };
  budget: null | { limit: CacheBudget; peakUse: number; overBudgetSteps: number };
}

/**
 * Runs the command. A bad command line is a UsageError (exit code 2); data problems (missing
 * file, column, wrong type, invalid hex) are SluiceErrors (exit code 1).
 */
export async function cmdLookahead(values: Values): Promise<number> {
  const input = givenInputs(values);
  if (input === undefined) throw new UsageError('--input is required');
  const colText = values.columns;
  if (typeof colText !== 'string' || colText.trim() === '') throw new UsageError('--columns is required (comma-separated column names)');
  const columns = colText.split(',').map((c) => c.trim());
  if (columns.some((c) => c === '')) throw new UsageError(`--columns has an empty name: "${colText}"`);
  const dup = columns.find((c, i) => columns.indexOf(c) !== i);
  if (dup !== undefined) throw new UsageError(`--columns names "${dup}" twice`);
  const batchSize = intOption(values, 'batch-size', 1);
  if (typeof batchSize === 'string') throw new UsageError(batchSize);
  if (batchSize === undefined) throw new UsageError('--batch-size is required');
  const window = intOption(values, 'window', 0);
  if (typeof window === 'string') throw new UsageError(window);
  const bytesPerId = intOption(values, 'bytes-per-id', 1);
  if (typeof bytesPerId === 'string') throw new UsageError(bytesPerId);
  let budget: CacheBudget | undefined;
  if (typeof values['cache-budget'] === 'string') {
    const b = parseCacheBudget(values['cache-budget'], bytesPerId);
    if (typeof b === 'string') throw new UsageError(b);
    budget = b;
  } else if (bytesPerId !== undefined) throw new UsageError('--bytes-per-id goes with a --cache-budget in bytes');
  if (window === undefined && budget === undefined) throw new UsageError('--window is required (or give --cache-budget to choose it)');

  // Check the columns against the files first, so that each problem gets its own message.
  const pool = new DecoderPool(1);
  const features: FeatureSpec[] = [];
  try {
    const ds = await openDataset(input, pool);
    checkColumns(ds, columns);
    for (const c of columns) {
      const ops = idOps(c, ds.schema.get(c)!);
      if (typeof ops === 'string') throw new InputError(ops, { file: ds.files[0]!.source });
      features.push({ name: c, input: c, kind: 'sparse', ops });
    }
  } finally {
    await pool.close();
  }

  const plan: PlanSpec = { batchSize, backend: 'cpu', features };
  const la = new LookaheadCache({ tables: columns.length, ...(window !== undefined ? { window } : {}), ...(budget ? { cacheBudget: budget } : {}) });
  const summary = new LookaheadSummary(columns.length, budget);
  const quiet = !!values.quiet || !!values.json;
  const p = pipeline(plan, { input });
  const info = await p.info();
  const progress = new Progress('lookahead', info.rowsPerEpoch, 'rows', quiet);
  let pending: IdArray[][] = [];
  let rows = 0;
  let hintMs = 0;
  const hint = (): void => {
    const h0 = performance.now();
    const out = la.pushAll(pending);
    hintMs += performance.now() - h0;
    // Counted: each step's hint arrays can hold later steps' hints.
    for (const h of out) {
      summary.add(h);
      h.release?.();
    }
    pending = [];
  };
  const t0 = performance.now();
  for await (const b of p) {
    pending.push(columns.map((_, k) => batchIds(b, k)));
    if (pending.length === GROUP) hint();
    rows += b.rows;
    progress.update(rows);
  }
  hint();
  const h0 = performance.now();
  for (const h of la.drain()) {
    summary.add(h);
    h.release?.();
  }
  hintMs += performance.now() - h0;
  const totalMs = performance.now() - t0;
  progress.done();

  const inputMs = totalMs - hintMs;
  const result: LookaheadResult = {
    input,
    columns,
    batchSize,
    window: la.window!,
    windowFrom: budget === undefined ? 'window' : 'cache-budget',
    rows,
    batches: summary.steps,
    samplesPerSecond: rows / (hintMs / 1000),
    hintSeconds: hintMs / 1000,
    inputSeconds: inputMs / 1000,
    inputSamplesPerSecond: rows / (inputMs / 1000),
    endToEndSamplesPerSecond: rows / (totalMs / 1000),
    hitRatio: summary.hitRatio,
    uniqueLookups: summary.unique,
    prefetched: summary.prefetched,
    evicted: summary.evicted,
    cacheSize: { mean: summary.meanCacheSize, peak: summary.peakCacheSize, series: summary.series(SERIES_POINTS) },
    budget: budget === undefined ? null : { limit: budget, peakUse: summary.peakBudgetUse, overBudgetSteps: summary.overBudgetSteps },
  };
  if (values.json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return 0;
  }
  const n = (v: number): string => Math.round(v).toLocaleString('en-US');
  const budgetText = (b: CacheBudget): string => ('ids' in b ? `${n(b.ids)} ids` : `${n(b.bytes)} bytes at ${String(b.bytesPerId)} bytes/id`);
  process.stdout.write(
    [
      formatTable(
        ['metric', 'value'],
        [
          ['input', input.join(', ')],
          [
            'columns (tables)',
            `${columns.length}: ${columns.length > 6 ? `${columns.slice(0, 3).join(',')},…,${columns[columns.length - 1]}` : columns.join(',')}`,
          ],
          ['rows / batches', `${n(rows)} / ${n(result.batches)} of ${n(batchSize)}`],
          ['window L', `${result.window}${budget === undefined ? '' : ` (chosen from the cache budget${window === undefined ? '' : `, at most ${window}`})`}`],
          [
            'hints: samples/s',
            `${n(result.samplesPerSecond)} (${(result.samplesPerSecond / BAGPIPE_SAMPLES_PER_SECOND).toFixed(2)}x BAGPIPE's 3.27M; ids in memory, one core)`,
          ],
          ['read + hex2int: samples/s', n(result.inputSamplesPerSecond)],
          ['end to end: samples/s', n(result.endToEndSamplesPerSecond)],
          ['hit ratio (distinct ids)', result.hitRatio.toFixed(4)],
          ['prefetched / evicted ids', `${n(result.prefetched)} / ${n(result.evicted)}`],
          ['cache size (ids): mean / peak', `${n(result.cacheSize.mean)} / ${n(result.cacheSize.peak)}`],
          ...(result.budget === null
            ? []
            : [['cache budget: peak use / steps over', `${budgetText(result.budget.limit)}: ${n(result.budget.peakUse)} / ${result.budget.overBudgetSteps}`]]),
        ],
      ),
      '',
      formatTable(
        ['step', 'cache size (ids)', 'hit ratio'],
        result.cacheSize.series.map((s) => [String(s.step), n(s.cacheSize), s.hitRatio.toFixed(4)]),
      ),
      '',
    ].join('\n'),
  );
  return 0;
}
