/**
 * The server's Prometheus metrics (`GET /metrics`): requests, bytes, latency, and gauges read from
 * the batch store and the connection guard when scraped.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

type Prom = typeof import('prom-client');
import type { BatchStore } from './store.js';
import type { ConnectionGuard } from './guard.js';

/**
 * The counters the request handler moves, and the registry that renders them all.
 *
 * @example
 * const m = await serveMetrics(store, guard);
 * m.served.inc({ format: 'msgpack' });
 * res.end(await m.registry.metrics());
 */
export interface ServeMetrics {
  readonly registry: Registry;
  readonly served: Counter<'format'>;
  readonly bytes: Counter;
  readonly latency: Histogram<'route' | 'status'>;
  readonly waiting: Gauge;
}

/** The server's metrics over `store` and `guard`. */
export async function serveMetrics(store: BatchStore, guard: ConnectionGuard): Promise<ServeMetrics> {
  // prom-client is loaded only by a process that serves, so no other process pays for its heap.
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  const reading = gaugeReader(prom, registry);
  reading('sluice_cached_batches', 'Batch bodies held (on disk with the spill, else in memory), both formats', () => store.cached);
  reading('sluice_cached_bytes', 'Bytes of batch bodies held', () => store.cachedBytes);
  reading('sluice_cache_evictions_total', 'Batch bodies dropped to stay within the cache or spill size', () => store.evicted);
  reading('sluice_spill', '1 while batch bodies go to the disk spill, 0 when they are kept in memory', () => (store.spilling ? 1 : 0));
  reading('sluice_pipeline_runs', 'Pipeline runs alive', () => store.activeRuns);
  reading('sluice_pipeline_runs_started_total', 'Pipeline runs started, restarts from resume points included', () => store.runsStarted);
  reading('sluice_batches_made_total', 'Batches the pipeline runs made, re-made ones included', () => store.made);
  reading('sluice_batches_distinct', 'Distinct batches made (made_total / distinct: how often a batch was made again)', () => store.distinct);
  reading('sluice_connections', 'Client connections open', () => guard.connections);
  reading('sluice_connections_evicted_total', 'Idle connections closed to make room for new ones at the connection limit', () => guard.evicted);
  reading('sluice_connections_refused_total', 'New connections closed at the limit because none was idle', () => guard.refused);
  reading('sluice_send_timeouts_total', 'Responses cut off because the client did not read them within the send timeout', () => guard.sendTimeouts);
  return {
    registry,
    ...requestMetrics(prom, registry, 5),
    waiting: new prom.Gauge({ name: 'sluice_queue_depth', help: 'Batch requests waiting for their batch to be made', registers: [registry] }),
  };
}

/** Registers a gauge on `registry` whose value is `read()` at each scrape. */
export function gaugeReader(prom: Prom, registry: Registry): (name: string, help: string, read: () => number) => void {
  return (name, help, read) => {
    new prom.Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  };
}

/**
 * The request metrics the batch server and a cluster worker both keep, under the same names, so
 * one dashboard reads either; latency buckets run up to `maxSeconds`.
 */
export function requestMetrics(
  prom: Prom,
  registry: Registry,
  maxSeconds: number,
): { served: Counter<'format'>; bytes: Counter; latency: Histogram<'route' | 'status'> } {
  return {
    served: new prom.Counter({ name: 'sluice_batches_served_total', help: 'Batch responses sent', labelNames: ['format'], registers: [registry] }),
    bytes: new prom.Counter({ name: 'sluice_bytes_served_total', help: 'Batch body bytes sent', registers: [registry] }),
    latency: new prom.Histogram({
      name: 'sluice_request_duration_seconds',
      help: 'Time from request to response body handed to the socket',
      labelNames: ['route', 'status'],
      buckets: LATENCY_BUCKETS.filter((b) => b <= maxSeconds),
      registers: [registry],
    }),
  };
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
