/**
 * `sluice serve`: the HTTP server over a `BatchStore` (batches by seq, as Arrow or msgpack), with
 * bearer-token auth, `/v1/info`, `/healthz` and Prometheus metrics.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PlanError, SluiceError, loadPlan, type Plan, type PlanSpec } from '@sluice/ops';
import { pipeline, type PipelineOptions } from '../pipeline/pipeline.js';
import { ARROW_STREAM, MSGPACK, batchToArrowStream, batchToMsgpack, negotiate, type BodyFormat } from './encode.js';
import { BatchStore, type BatchStoreOptions } from './store.js';

export interface ServeOptions extends BatchStoreOptions {
  /** Every /v1 request must carry `Authorization: Bearer <token>`. */
  token?: string;
  /** Open connections at most (default 64); more are refused by the server. */
  maxConnections?: number;
  /** Longest request target accepted (default 256 bytes). */
  maxUrlBytes?: number;
}

export interface BatchServer {
  readonly server: Server;
  readonly store: BatchStore;
  /** Starts listening (host 127.0.0.1 unless given; port 0 picks one); resolves to the base URL. */
  listen(port: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

const SEQ = /^\/v1\/batches\/([^/]*)$/;

/**
 * An HTTP server for a plan's batches: `GET /v1/batches/{seq}` (Arrow stream or msgpack by
 * Accept), `/v1/info`, `/healthz` and Prometheus `/metrics`. Batch `seq` is the same whatever the
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
  const info = await pipeline(plan, pipelineOptions).info();
  const store = new BatchStore(plan, pipelineOptions, info, options);
  const maxUrl = options.maxUrlBytes ?? 256;
  const token = options.token === undefined ? null : Buffer.from(`Bearer ${options.token}`);

  // prom-client is loaded only by a process that serves, so no other process pays for its heap.
  const { Counter, Gauge, Histogram, Registry } = await import('prom-client');
  const registry = new Registry();
  const served = new Counter({ name: 'sluice_batches_served_total', help: 'Batch responses sent', labelNames: ['format'], registers: [registry] });
  const bytes = new Counter({ name: 'sluice_bytes_served_total', help: 'Batch body bytes sent', registers: [registry] });
  const latency = new Histogram({
    name: 'sluice_request_duration_seconds',
    help: 'Time from request to response body handed to the socket',
    labelNames: ['route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const waiting = new Gauge({ name: 'sluice_queue_depth', help: 'Batch requests waiting for their batch to be made', registers: [registry] });
  new Gauge({
    name: 'sluice_cached_batches',
    help: 'Batches held in memory',
    registers: [registry],
    collect() {
      this.set(store.cached);
    },
  });
  new Gauge({
    name: 'sluice_pipeline_runs',
    help: 'Pipeline runs alive',
    registers: [registry],
    collect() {
      this.set(store.activeRuns);
    },
  });
  new Gauge({
    name: 'sluice_batches_made_total',
    help: 'Batches the pipeline made, re-made ones included',
    registers: [registry],
    collect() {
      this.set(store.produced);
    },
  });

  // Encoded bodies of recent batches, shared by clients asking for the same one (bounded like the batch cache).
  const bodies = new Map<string, Promise<Uint8Array>>();
  const bodyLimit = options.cacheBatches ?? 32;
  const body = (seq: number, format: BodyFormat): Promise<Uint8Array | null> => {
    const key = `${seq}:${format}`;
    let p = bodies.get(key);
    if (p === undefined) {
      p = store.get(seq).then((b) => {
        if (b === null) {
          bodies.delete(key);
          return null as unknown as Uint8Array;
        }
        return format === MSGPACK ? batchToMsgpack(b) : batchToArrowStream(b, plan.label);
      });
      p.catch(() => bodies.delete(key));
      bodies.set(key, p);
      while (bodies.size > bodyLimit) bodies.delete(bodies.keys().next().value!);
    } else {
      bodies.delete(key);
      bodies.set(key, p);
    }
    return p;
  };

  const json = (res: ServerResponse, status: number, obj: unknown): void => {
    const text = JSON.stringify(obj);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const authorized = (req: IncomingMessage): boolean => {
    if (token === null) return true;
    const got = Buffer.from(req.headers.authorization ?? '');
    return got.length === token.length && timingSafeEqual(got, token);
  };

  const infoBody = {
    batchSize: plan.batchSize,
    batches: store.batches,
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

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<string> {
    const url = req.url ?? '/';
    if (url.length > maxUrl) {
      json(res, 414, { error: `request target longer than ${maxUrl} bytes` });
      return 'other';
    }
    if (req.method !== 'GET') {
      res.setHeader('allow', 'GET');
      json(res, 405, { error: `method ${req.method} not allowed` });
      return 'other';
    }
    const path = url.split('?')[0]!;
    if (path === '/healthz') {
      json(res, 200, { ok: true });
      return 'healthz';
    }
    if (path === '/metrics') {
      const text = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType });
      res.end(text);
      return 'metrics';
    }
    if (!path.startsWith('/v1/')) {
      json(res, 404, { error: `no such path ${path}` });
      return 'other';
    }
    if (!authorized(req)) {
      res.setHeader('www-authenticate', 'Bearer');
      json(res, 401, { error: 'missing or wrong bearer token' });
      return 'other';
    }
    if (path === '/v1/info') {
      json(res, 200, infoBody);
      return 'info';
    }
    const m = SEQ.exec(path);
    if (m === null) {
      json(res, 404, { error: `no such path ${path}` });
      return 'other';
    }
    const text = m[1]!;
    const seq = Number(text);
    if (!/^(0|[1-9][0-9]*)$/.test(text) || !Number.isSafeInteger(seq)) {
      json(res, 400, { error: `batch seq must be a non-negative integer, got "${decodeURIComponent(text)}"` });
      return 'batch';
    }
    const format = negotiate(req.headers.accept);
    if (format === null) {
      json(res, 406, { error: `can send ${ARROW_STREAM} or ${MSGPACK}` });
      return 'batch';
    }
    waiting.inc();
    let out: Uint8Array | null;
    try {
      out = await body(seq, format);
    } finally {
      waiting.dec();
    }
    if (out === null) {
      json(res, 404, { end: true, batches: store.batches });
      return 'batch';
    }
    res.writeHead(200, { 'content-type': format, 'content-length': out.byteLength, 'x-sluice-seq': String(seq), 'cache-control': 'no-store' });
    res.end(out);
    served.inc({ format: format === MSGPACK ? 'msgpack' : 'arrow' });
    bytes.inc(out.byteLength);
    return 'batch';
  }

  const server = createServer((req, res) => {
    const t0 = performance.now();
    handle(req, res).then(
      (route) => {
        latency.observe({ route, status: String(res.statusCode) }, (performance.now() - t0) / 1000);
      },
      (e: unknown) => {
        if (!res.headersSent) json(res, 500, { error: (e as Error).message });
        else res.destroy();
        latency.observe({ route: 'error', status: '500' }, (performance.now() - t0) / 1000);
      },
    );
  });
  server.maxConnections = options.maxConnections ?? 64;
  server.requestTimeout = 60_000;
  server.headersTimeout = 10_000;
  server.maxHeadersCount = 64;

  return {
    server,
    store,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        server.once('error', (e: NodeJS.ErrnoException) => {
          const why =
            e.code === 'EADDRINUSE'
              ? 'the port is in use'
              : e.code === 'EACCES'
                ? 'permission denied (ports below 1024 need privileges)'
                : e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND'
                  ? 'this machine has no such address'
                  : e.message;
          reject(new SluiceError(`cannot listen on ${host}:${port}: ${why}`, {}, { cause: e }));
        });
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
