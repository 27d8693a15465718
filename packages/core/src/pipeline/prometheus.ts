/**
 * `registerPipelineMetrics`: a run's counters (`Pipeline.metrics()`) as Prometheus metrics in a
 * registry of the caller's, read afresh at each scrape, so a training script can expose its loader
 * next to its own metrics. The names are listed in docs/dashboard.md.
 */
import type { Registry } from 'prom-client';
import type { PipelineMetrics } from './metrics.js';

/**
 * Anything with the pipeline's counters: a `Pipeline`, or the server's runs summed.
 *
 * @example
 * const source: MetricsSource = pipeline(plan, { input });
 */
export interface MetricsSource {
  metrics(): PipelineMetrics;
}

/**
 * Options of `registerPipelineMetrics`.
 *
 * @example
 * await registerPipelineMetrics(p, registry, { prefix: 'eval_loader_' });
 */
export interface PipelineMetricsOptions {
  /** Start of every metric name (default `sluice_pipeline_`): two loaders in one registry need two prefixes. */
  prefix?: string;
}

/** The stages whose time is counted, by label, and the field holding it. */
const STAGES = [
  ['setup', 'setupMs'],
  ['decode', 'sourceWaitMs'],
  ['preprocess', 'preprocessMs'],
  ['batch', 'batchMs'],
  ['consumer_wait', 'consumerWaitMs'],
] as const;

/** Chunk kinds counted, by label, and the field holding the count. */
const CHUNKS = [
  ['packed', 'packedChunks'],
  ['shared', 'sharedChunks'],
  ['split', 'splitChunks'],
] as const;

/**
 * Registers `source`'s counters in `registry`: rows, batches, time per stage, backend bytes,
 * prefetch depth, chunk kinds and the backend's cost-report totals. Each scrape reads
 * `source.metrics()` once. Resolves to a function that takes the metrics out of the registry again.
 * A name already in the registry is an error naming it (use `prefix` for a second loader).
 *
 * @example
 * import { Registry } from 'prom-client';
 * import { pipeline, registerPipelineMetrics } from '@sluice/core';
 * const registry = new Registry();
 * const p = pipeline('plan.json', { input: 'train.parquet' });
 * await registerPipelineMetrics(p, registry);
 * // serve `await registry.metrics()` at /metrics; sluice_pipeline_rows_total counts the rows made
 */
export async function registerPipelineMetrics(source: MetricsSource, registry: Registry, options: PipelineMetricsOptions = {}): Promise<() => void> {
  // Loaded only by a process that asks for metrics, so no other process pays for prom-client's heap.
  const prom = await import('prom-client');
  const prefix = options.prefix ?? 'sluice_pipeline_';
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix))
    throw new RangeError(`metric prefix must be letters, digits, "_" or ":" (not starting with a digit), got ${JSON.stringify(prefix)}`);
  const names: string[] = [];
  // One reading per scrape, shared by every metric's collect: a scrape collects them all within
  // one turn of the event loop, so the reading is dropped at the next turn.
  let cached: PipelineMetrics | null = null;
  const read = (): PipelineMetrics => {
    if (cached === null) {
      cached = source.metrics();
      setImmediate(() => (cached = null));
    }
    return cached;
  };
  const add = (name: string): string => {
    const full = prefix + name;
    if (registry.getSingleMetric(full) !== undefined)
      throw new RangeError(`metric ${full} is already registered in this registry (give registerPipelineMetrics a prefix)`);
    names.push(full);
    return full;
  };
  /** A counter whose value is read from the run at each scrape (prom-client counters only go up, so it is reset first). */
  const counter = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    values: (m: PipelineMetrics) => [Partial<Record<L, string>>, number][],
  ): void => {
    new prom.Counter<L>({
      name: add(name),
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const [labels, v] of values(read())) if (v > 0) this.inc(labels, v);
      },
    });
  };
  const gauge = (name: string, help: string, value: (m: PipelineMetrics) => number): void => {
    new prom.Gauge({
      name: add(name),
      help,
      registers: [registry],
      collect() {
        this.set(value(read()));
      },
    });
  };
  counter('rows_total', 'Rows the pipeline made into batches', [], (m) => [[{}, m.rows]]);
  counter('batches_total', 'Batches the pipeline made', [], (m) => [[{}, m.batches]]);
  counter(
    'stage_seconds_total',
    'Time per stage: setup, decode (waiting for decoded chunks), preprocess (the backend), batch (assembly), consumer_wait (prefetch buffer full)',
    ['stage'],
    (m) => STAGES.map(([stage, field]) => [{ stage }, m[field] / 1000]),
  );
  counter('backend_bytes_total', 'Bytes the backend took in and gave out', ['direction'], (m) => [
    [{ direction: 'in' }, m.bytesIn],
    [{ direction: 'out' }, m.bytesOut],
  ]);
  counter('chunks_total', 'Chunks laid out by a decode worker (packed) or read by several decoders (shared: by columns, split: by rows)', ['kind'], (m) =>
    CHUNKS.map(([kind, field]) => [{ kind }, m[field]]),
  );
  counter('recycled_packs_total', 'Released batch memory handed to a decode worker again', [], (m) => [[{}, m.recycledPacks]]);
  counter('backend_report_total', "Sums of the backend's cost-report fields (a simulator's modelledMs, a GPU backend's kernels), by field", ['field'], (m) =>
    Object.entries(m.reportTotals).map(([field, v]) => [{ field }, v]),
  );
  gauge('prefetch_buffered', 'Batches waiting in the prefetch buffer now', (m) => m.buffered);
  gauge('prefetch_max_buffered', 'Most batches waiting in the prefetch buffer at once', (m) => m.maxBuffered);
  return () => {
    for (const n of names) registry.removeSingleMetric(n);
  };
}
