/**
 * A worker's Prometheus metrics (`GET /metrics`): leases, reclaims, batches made and served,
 * bytes, request latency, and what it holds, read from the worker when scraped.
 */
import type { Counter, Histogram, Registry } from 'prom-client';

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
  const reading = (name: string, help: string, read: () => number): void => {
    new prom.Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  };
  reading('sluice_cluster_held_batches', 'Made batches waiting to be delivered', g.held);
  reading('sluice_cluster_leases_total', 'Splits leased, reclaims included', g.leases);
  reading('sluice_cluster_reclaims_total', 'Splits taken over from a dead or departed worker', g.reclaims);
  const counter = (name: string, help: string): Counter => new prom.Counter({ name, help, registers: [registry] });
  return {
    registry,
    made: counter('sluice_batches_made_total', 'Batches made, replays included'),
    served: new prom.Counter({ name: 'sluice_batches_served_total', help: 'Batch responses sent', labelNames: ['format'], registers: [registry] }),
    bytes: counter('sluice_bytes_served_total', 'Batch body bytes sent'),
    redirects: counter('sluice_cluster_redirects_total', 'Requests redirected to the worker holding the batch'),
    replays: counter('sluice_cluster_replays_total', 'Batches made again because a trainer asked again after delivery (a resume)'),
    latency: new prom.Histogram({
      name: 'sluice_request_duration_seconds',
      help: 'Time from request to response body handed to the socket',
      labelNames: ['route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
  };
}
