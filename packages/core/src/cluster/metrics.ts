/**
 * A worker's Prometheus metrics (`GET /metrics`): leases, reclaims, batches made and served,
 * bytes, request latency, and what it holds, read from the worker when scraped.
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import { gaugeReader, requestMetrics } from '../serve/metrics.js';

/** What the metrics read from the worker at each scrape. */
export interface WorkerGauges {
  /** Made batches waiting to be delivered. */
  held(): number;
  /** Splits leased and made, reclaims included. */
  leases(): number;
  /** Splits taken from dead (or departed) workers. */
  reclaims(): number;
}

/**
 * The counters the worker moves, and the registry that renders them.
 *
 * @example
 * const m = await workerMetrics({ held: () => 0, leases: () => 0, reclaims: () => 0 });
 * m.made.inc();
 */
export interface WorkerMetrics {
  readonly registry: Registry;
  readonly made: Counter;
  readonly served: Counter<'format'>;
  readonly bytes: Counter;
  readonly redirects: Counter;
  readonly replays: Counter;
  readonly latency: Histogram<'route' | 'status'>;
}

/** The worker's metrics over `g`. */
export async function workerMetrics(g: WorkerGauges): Promise<WorkerMetrics> {
  // Loaded only by a process that serves, as serve/metrics.ts does.
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  const reading = gaugeReader(prom, registry);
  reading('sluice_cluster_held_batches', 'Made batches waiting to be delivered', g.held);
  reading('sluice_cluster_leases_total', 'Splits leased, reclaims included', g.leases);
  reading('sluice_cluster_reclaims_total', 'Splits taken over from a dead or departed worker', g.reclaims);
  const counter = (name: string, help: string): Counter => new prom.Counter({ name, help, registers: [registry] });
  return {
    registry,
    made: counter('sluice_batches_made_total', 'Batches made, replays included'),
    ...requestMetrics(prom, registry, 30),
    redirects: counter('sluice_cluster_redirects_total', 'Requests redirected to the worker holding the batch'),
    replays: counter('sluice_cluster_replays_total', 'Batches made again because a trainer asked again after delivery (a resume)'),
  };
}
