/** A run's counters (`Pipeline.metrics()`) and the helpers that collect them as chunks go by. */
import type { CostReport } from '../backend/types.js';
import type { PlacementReport } from '../placement/resolve.js';
import type { Chunk } from '../stream/source.js';

/**
 * Counters of a run, for `sluice bench` and metrics endpoints.
 *
 * @example
 * const p = pipeline(plan, { input });
 * for await (const b of p) train(b);
 * const m = p.metrics();
 * console.log(m.rows, m.batches, m.preprocessMs, m.sourceWaitMs);
 */
export interface PipelineMetrics {
  rows: number;
  batches: number;
  /** Time the preprocess stage spent in the backend, ms. */
  preprocessMs: number;
  /** Time from the start of the run (files open) to its backend being ready, ms: auto's choice, optimizer, backend start. */
  setupMs: number;
  /** Time waiting for decoded chunks, ms. */
  sourceWaitMs: number;
  /** Time assembling batches, ms. */
  batchMs: number;
  bytesIn: number;
  bytesOut: number;
  /**
   * Time the source spent paused while batches it made waited for the consumer to take them (the
   * prefetch buffer was full), ms: the run was faster than its consumer.
   */
  consumerWaitMs: number;
  /** Most batches waiting at once in the prefetch buffer. */
  maxBuffered: number;
  /** Batches waiting in the prefetch buffer now. */
  buffered: number;
  /** Last backend report (simulators put their modelled costs here). */
  lastReport: CostReport | null;
  /**
   * Sums over the run of every numeric field of the backends' cost reports beyond wallMs, bytesIn
   * and bytesOut (e.g. a simulator's `modelledMs`, a GPU backend's `kernels`), by field name.
   */
  reportTotals: Record<string, number>;
  /** The backend's own summary of the run (`Backend.summary()`), when it has one. */
  backendSummary: Record<string, number | string> | null;
  /**
   * Op chains computed per dictionary entry in the reader (plan/pushdown.ts), or null when the
   * run does not push down: how many derived columns, and per chunk and column, how often the
   * reader computed one and how often the pipeline had to (non-dictionary pages, bad values).
   */
  pushdown: { derived: number; computedInReader: number; computedInPipeline: number } | null;
  /** Chunks that arrived laid out as batch arrays by a decode worker (`PipelineOptions.pack`). */
  packedChunks: number;
  /**
   * Chunks of row groups read by several decoders at once, each decoding a share of the columns
   * (a file with fewer row groups than decoders); the main thread lays these out.
   */
  sharedChunks: number;
  /**
   * Chunks of row groups read in parts by rows, by several decoders at once: the row groups left
   * over when an epoch's do not deal out evenly among the decoders (`PipelineOptions.decoders` > 1,
   * files with an offset index).
   */
  splitChunks: number;
  /**
   * How many times memory the consumer gave back with `Batch.release()` was handed to a decode
   * worker again (the batch layout's pack arena): about one per batch laid out without
   * allocating. 0 when nothing was released.
   */
  recycledPacks: number;
  /**
   * The optimizer's rewrite (plan/optimize.ts), or null when the run does not optimize: op steps
   * as written and after removing redundant ones (Parquet statistics, ranges, repeated casts).
   */
  optimizer: { opsBefore: number; opsAfter: number; removed: number } | null;
  /**
   * With `backend: "auto"` or a list: where the cost model placed the features (feature count per
   * backend), the predicted ms per chunk of each backend's share, and what decided; null otherwise.
   */
  placement: PlacementReport | null;
}

/** Counters of a run that has not started. */
export const emptyMetrics = (): PipelineMetrics => ({
  rows: 0,
  batches: 0,
  preprocessMs: 0,
  setupMs: 0,
  sourceWaitMs: 0,
  batchMs: 0,
  bytesIn: 0,
  bytesOut: 0,
  consumerWaitMs: 0,
  maxBuffered: 0,
  buffered: 0,
  lastReport: null,
  reportTotals: {},
  backendSummary: null,
  pushdown: null,
  packedChunks: 0,
  sharedChunks: 0,
  splitChunks: 0,
  recycledPacks: 0,
  optimizer: null,
  placement: null,
});

/** A copy of `m` that the run's further counting does not change. */
export function copyMetrics(m: PipelineMetrics): PipelineMetrics {
  return {
    ...m,
    reportTotals: { ...m.reportTotals },
    pushdown: m.pushdown && { ...m.pushdown },
    optimizer: m.optimizer && { ...m.optimizer },
    placement: m.placement && { ...m.placement, features: { ...m.placement.features }, measured: { ...m.placement.measured } },
  };
}

/** Adds a backend's report for one chunk: bytes, the last report, and the totals of its extra numeric fields. */
export function addReport(m: PipelineMetrics, report: CostReport): void {
  m.bytesIn += report.bytesIn;
  m.bytesOut += report.bytesOut;
  m.lastReport = report;
  for (const [k, v] of Object.entries(report)) {
    if (typeof v === 'number' && k !== 'wallMs' && k !== 'bytesIn' && k !== 'bytesOut') m.reportTotals[k] = (m.reportTotals[k] ?? 0) + v;
  }
}

/** The source's chunks, counting the time spent waiting on the reader as `sourceWaitMs`: the source's share of the run. */
export function timedSource(it: AsyncGenerator<Chunk>, m: PipelineMetrics): AsyncIterator<Chunk> {
  return {
    async next() {
      const t0 = performance.now();
      const r = await it.next();
      m.sourceWaitMs += performance.now() - t0;
      return r;
    },
    return: async () => it.return(undefined),
  };
}

/**
 * The counters of several runs as one (the server's pipeline runs): sums of the counts and times,
 * the largest `maxBuffered`, the sum of what is `buffered` now, and the latest report and summary.
 * Per-run descriptions (pushdown, optimizer, placement) are those of the last run that has them.
 */
export function sumMetrics(runs: readonly PipelineMetrics[]): PipelineMetrics {
  const sum = emptyMetrics();
  for (const m of runs) {
    for (const k of SUMMED) sum[k] += m[k];
    sum.maxBuffered = Math.max(sum.maxBuffered, m.maxBuffered);
    for (const [k, v] of Object.entries(m.reportTotals)) sum.reportTotals[k] = (sum.reportTotals[k] ?? 0) + v;
    sum.lastReport = m.lastReport ?? sum.lastReport;
    sum.backendSummary = m.backendSummary ?? sum.backendSummary;
    sum.pushdown = m.pushdown ?? sum.pushdown;
    sum.optimizer = m.optimizer ?? sum.optimizer;
    sum.placement = m.placement ?? sum.placement;
  }
  return copyMetrics(sum);
}

/** The fields `sumMetrics` adds up. */
const SUMMED = [
  'rows',
  'batches',
  'preprocessMs',
  'setupMs',
  'sourceWaitMs',
  'batchMs',
  'bytesIn',
  'bytesOut',
  'consumerWaitMs',
  'buffered',
  'packedChunks',
  'sharedChunks',
  'splitChunks',
  'recycledPacks',
] as const satisfies readonly (keyof PipelineMetrics)[];
