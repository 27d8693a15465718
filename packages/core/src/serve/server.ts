/**
 * `sluice serve`: the HTTP server over a `BatchStore` (batches by seq, as Arrow or msgpack), with
 * bearer-token auth, `/v1/info`, `/healthz` and Prometheus metrics, behind the connection guard.
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline as pipeStreams } from 'node:stream/promises';
import { PlanError, loadPlan, type Plan, type PlanSpec } from '@sluice/ops';
import { pipeline, type PipelineInfo, type PipelineOptions } from '../pipeline/pipeline.js';
import { ARROW_STREAM, MSGPACK } from './encode.js';
import { tokenCheck } from './auth.js';
import { createDashboard } from './dashboard.js';
import { registerPipelineMetrics } from '../pipeline/prometheus.js';
import { ConnectionGuard, guardServerOptions, type GuardOptions } from './guard.js';
import { serveMetrics } from './metrics.js';
import type { Body } from './shelf.js';
import { BatchStore, type BatchStoreOptions } from './store.js';
import { acceptGet, bodyFormat, deny, json, listenError, routeOf } from './reply.js';

/**
 * Options of `createBatchServer`: the token, who may read `/metrics`, the store's bounds and the
 * connection limits.
 *
 * @example
 * createBatchServer(plan, { input }, { token: process.env.SLUICE_TOKEN, metricsAuth: 'open' });
 */
export interface ServeOptions extends BatchStoreOptions, GuardOptions {
  /** Every /v1 request must carry `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * Who may read `/metrics` when there is a token: `'token'` (the default) asks for it as /v1 does;
   * `'open'` lets anyone who reaches the port read it (a Prometheus scraper without credentials).
   */
  metricsAuth?: 'token' | 'open';
  /** Longest request target accepted (default 256 bytes). */
  maxUrlBytes?: number;
}

/**
 * A running batch server.
 *
 * @example
 * const s = await createBatchServer(plan, { input });
 * const url = await s.listen(0); // ... later: await s.close();
 */
export interface BatchServer {
  readonly server: Server;
  readonly store: BatchStore;
  readonly guard: ConnectionGuard;
  /** Starts listening (host 127.0.0.1 unless given; port 0 picks one); resolves to the base URL. */
  listen(port: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * An HTTP server for a plan's batches: `GET /v1/batches/{seq}` (Arrow stream or msgpack by
 * Accept), `/v1/info`, `/healthz`, Prometheus `/metrics` and the live `/dashboard`. Batch `seq` is the same whatever the
 * order clients ask in, so clients resume from any cursor and split the stream by seq.
 *
 * @example
 * const s = await createBatchServer('plan.json', { input: 'train.parquet' }, { token: 'secret' });
 * console.log(await s.listen(8080)); // http://127.0.0.1:8080
 */
export async function createBatchServer(
  planSpec: PlanSpec | Plan | string,
  pipelineOptions: PipelineOptions = {},
  options: ServeOptions = {},
): Promise<BatchServer> {
  const plan = loadPlan(planSpec);
  if (options.token !== undefined && options.token === '') throw new PlanError('the token must not be empty');
  const metricsAuth = options.metricsAuth ?? 'token';
  if (metricsAuth !== 'token' && metricsAuth !== 'open') throw new PlanError(`metricsAuth must be "token" or "open", got ${JSON.stringify(metricsAuth)}`);
  const serverOptions = guardServerOptions(options);
  const info = await pipeline(plan, pipelineOptions).info();
  const store = await BatchStore.open(plan, pipelineOptions, info, options);
  try {
    return await serveStore(plan, info, store, options, serverOptions);
  } catch (e) {
    await store.close();
    throw e;
  }
}

/** The server over an open store. */
async function serveStore(plan: Plan, info: PipelineInfo, store: BatchStore, options: ServeOptions, serverOptions: ServerOptions): Promise<BatchServer> {
  const metricsAuth = options.metricsAuth ?? 'token';
  const maxUrl = options.maxUrlBytes ?? 256;

  const server = createServer(serverOptions, (req, res) => {
    const t0 = performance.now();
    handle(req, res).then(
      (route) => metrics.latency.observe({ route, status: String(res.statusCode) }, (performance.now() - t0) / 1000),
      (e: unknown) => {
        if (!res.headersSent) json(res, 500, { error: (e as Error).message });
        else res.destroy();
        metrics.latency.observe({ route: 'error', status: '500' }, (performance.now() - t0) / 1000);
      },
    );
  });
  server.maxHeadersCount = 64;
  const guard = new ConnectionGuard(server, options);
  const metrics = await serveMetrics(store, guard);
  const pipelineRuns = { metrics: () => store.pipelineMetrics() };
  await registerPipelineMetrics(pipelineRuns, metrics.registry);
  let servedBatches = 0;
  let servedBytes = 0;
  const dashboard = createDashboard({
    ...(options.token === undefined ? {} : { token: options.token }),
    title: 'sluice serve',
    backend: info.backend,
    batchSize: plan.batchSize,
    metrics: pipelineRuns.metrics,
    counters: () => ({
      'batches served': servedBatches,
      'bytes served': servedBytes,
      'batches in the run': store.batches,
      'batches made (re-made included)': store.made,
      'distinct batches made': store.distinct,
      'bodies held': store.cached,
      'bytes held': store.cachedBytes,
      'pipeline runs alive': store.activeRuns,
      'connections open': guard.connections,
    }),
  });

  const auth = tokenCheck(options.token);
  const authorized = (req: IncomingMessage): boolean => auth.header(req.headers.authorization);
  const infoBody = {
    batchSize: plan.batchSize,
    rowsPerEpoch: info.rowsPerEpoch,
    epochs: plan.epochs,
    dropLast: plan.dropLast,
    shuffle: plan.shuffle,
    backend: info.backend,
    label: plan.label,
    features: info.plan.features.map((f) => ({ name: f.name, kind: f.kind, ops: f.ops.map((o) => o.op), width: f.width })),
    dense: { names: info.layout.denseNames, dim: info.layout.dim },
    sparse: { keys: info.layout.sparseKeys },
    formats: [ARROW_STREAM, MSGPACK],
  };

  /** Answers one request; resolves to its route for the latency metric. */
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<string> {
    const url = req.url ?? '/';
    if (url.length > maxUrl) {
      json(res, 414, { error: `request target longer than ${maxUrl} bytes` });
      return 'other';
    }
    if (await dashboard.handle(req, res)) return 'dashboard';
    if (!acceptGet(req, res)) return 'other';
    const route = routeOf(url, res);
    if (route === null) return 'other';
    switch (route.kind) {
      case 'healthz':
        json(res, 200, { ok: true });
        return 'healthz';
      case 'metrics': {
        if (metricsAuth === 'token' && !authorized(req)) {
          deny(res);
          return 'metrics';
        }
        const text = await metrics.registry.metrics();
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
        return 'metrics';
      }
      case 'unknown':
        json(res, 404, { error: `no such path ${route.path}` });
        return 'other';
      default:
    }
    if (!authorized(req)) {
      deny(res);
      return 'other';
    }
    if (route.kind === 'info') {
      json(res, 200, { ...infoBody, batches: store.batches });
      return 'info';
    }
    if (route.kind === 'unknown-v1') {
      json(res, 404, { error: `no such path ${route.path}` });
      return 'other';
    }
    const format = bodyFormat(req, res);
    if (format === null) return 'batch';
    metrics.waiting.inc();
    let body: Body | null;
    try {
      body = await store.get(route.seq, format);
    } finally {
      metrics.waiting.dec();
    }
    if (body === null) {
      json(res, 404, { end: true, batches: store.batches });
      return 'batch';
    }
    try {
      res.writeHead(200, { 'content-type': format, 'content-length': body.size, 'x-sluice-seq': String(route.seq), 'cache-control': 'no-store' });
      guard.sending(res);
      if (body.memory !== null) res.end(body.memory);
      // From disk as the socket drains: a slow reader holds a chunk, not the body.
      else await pipeStreams(body.stream(), res).catch(() => undefined);
    } finally {
      body.release();
    }
    if (res.writableFinished) {
      metrics.served.inc({ format: format === MSGPACK ? 'msgpack' : 'arrow' });
      metrics.bytes.inc(body.size);
      servedBatches++;
      servedBytes += body.size;
    }
    return 'batch';
  }

  return {
    server,
    store,
    guard,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        server.once('error', (e: NodeJS.ErrnoException) => reject(listenError(host, port, e)));
        server.listen(port, host, () => {
          server.removeAllListeners('error');
          const a = server.address() as AddressInfo;
          resolve(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
        });
      }),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await store.close();
    },
  };
}
