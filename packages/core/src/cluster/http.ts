/**
 * A worker's HTTP side (`sluice worker`, cluster/worker.ts): the same protocol as `sluice serve`
 * (/v1/info, /v1/batches/SEQ, /metrics, /healthz, /dashboard) plus /v1/cluster. A batch is sent
 * from what this worker holds, redirected to the live worker that holds it, made again when it was
 * delivered before, or waited for (bounded); the worker's leasing and making stay in worker.ts and
 * are reached through `WorkerCore`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Plan } from '@sluice/ops';
import type { Redis } from 'ioredis';
import type { PipelineInfo } from '../pipeline/pipeline.js';
import { ARROW_STREAM, MSGPACK, batchFromMsgpack, batchToArrowStream } from '../serve/encode.js';
import { tokenCheck, type TokenCheck } from '../serve/auth.js';
import type { Dashboard } from '../serve/dashboard.js';
import { ConnectionGuard, guardServerOptions, type GuardOptions } from '../serve/guard.js';
import { acceptGet, bodyFormat, deny, json, listenError, routeOf } from '../serve/reply.js';
import { describeSplit, splitOf, type JobSpec, type Split } from './job.js';
import type { JobKeys } from './keys.js';
import type { WorkerMetrics } from './metrics.js';
import { clusterStatus, type WorkerRecord } from './status.js';

/** The job's first dead split, once there is one (the `failed` key). */
export interface JobFailure {
  split: number;
  message: string;
}

/** What the HTTP side reads of, and tells, the worker that leases and makes the batches. */
export interface WorkerCore {
  readonly id: string;
  readonly job: JobSpec;
  readonly k: JobKeys;
  readonly redis: Redis;
  readonly plan: Plan;
  readonly info: PipelineInfo;
  /** How long a request waits for a batch that is not made yet. */
  readonly waitMs: number;
  readonly metrics: WorkerMetrics;
  readonly dashboard: Dashboard;
  /** Made batches not delivered yet, msgpack-encoded, by seq (the HTTP side deletes those it sent). */
  readonly held: Map<number, Uint8Array>;
  state(): WorkerRecord['state'];
  /** Split `index` as leased here (`made` once all its batches were), or undefined when it is not. */
  leased(index: number): { readonly made: boolean } | undefined;
  failure(): JobFailure | null;
  setFailure(f: JobFailure): void;
  /** Wakes whoever waits for a change (a batch made or delivered). */
  wake(): void;
  /** Resolves at the next change or after `ms`. */
  waitForChange(ms: number): Promise<void>;
  /** Records batch `seq` of `s` as delivered; acknowledges the split when that was its last. */
  delivered(s: Split, seq: number): Promise<void>;
  /** Split `s` made again, for a batch asked for after it was delivered. */
  replay(s: Split): Promise<Map<number, Uint8Array>>;
}

/** Options of the worker's HTTP server. */
export interface WorkerHttpOptions extends GuardOptions {
  readonly token?: string;
  readonly metricsAuth?: 'token' | 'open';
}

/** The worker's HTTP server: routing, the token, and sending batches. */
export class WorkerHttp {
  /** Batches whose whole body was written to a trainer. */
  batchesServed = 0;
  private readonly server: Server;
  private readonly guard: ConnectionGuard;
  private readonly auth: TokenCheck;

  constructor(
    private readonly o: WorkerHttpOptions,
    private readonly w: WorkerCore,
  ) {
    this.server = createServer(guardServerOptions(o), (req, res) => this.onRequest(req, res));
    this.guard = new ConnectionGuard(this.server, o);
    this.auth = tokenCheck(o.token);
    this.server.maxHeadersCount = 64;
  }

  /** Listens on `host:port`; resolves with the address it got. */
  async listen(host: string, port: number): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', (e: NodeJS.ErrnoException) => reject(listenError(host, port, e)));
      this.server.listen(port, host, () => resolve());
    });
    return this.server.address() as AddressInfo;
  }

  /** Stops listening and drops open connections. */
  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const t0 = performance.now();
    this.handle(req, res).then(
      (route) => this.w.metrics.latency.observe({ route, status: String(res.statusCode) }, (performance.now() - t0) / 1000),
      (e: unknown) => {
        if (!res.headersSent) json(res, 500, { error: (e as Error).message });
        else res.destroy();
      },
    );
  }

  private authorized(req: IncomingMessage): boolean {
    return this.auth.header(req.headers.authorization);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<string> {
    if (await this.w.dashboard.handle(req, res)) return 'dashboard';
    const url = req.url ?? '/';
    if (url.length > 256) {
      json(res, 414, { error: 'request target longer than 256 bytes' });
      return 'other';
    }
    if (!acceptGet(req, res)) return 'other';
    const path = url.split('?')[0]!;
    if (path === '/v1/cluster') {
      if (!this.authorized(req)) return refuse(res);
      json(res, 200, await clusterStatus(this.w.redis, this.w.job));
      return 'cluster';
    }
    const route = routeOf(url, res);
    if (route === null) return 'other';
    switch (route.kind) {
      case 'healthz':
        json(res, 200, { ok: true, worker: this.w.id, state: this.w.state() });
        return 'healthz';
      case 'metrics':
        if ((this.o.metricsAuth ?? 'token') === 'token' && !this.authorized(req)) return refuse(res);
        res.writeHead(200, { 'content-type': this.w.metrics.registry.contentType });
        res.end(await this.w.metrics.registry.metrics());
        return 'metrics';
      case 'unknown':
        json(res, 404, { error: `no such path ${route.path}` });
        return 'other';
      default:
    }
    if (!this.authorized(req)) return refuse(res);
    if (route.kind === 'info') {
      json(res, 200, this.infoBody());
      return 'info';
    }
    if (route.kind === 'unknown-v1') {
      json(res, 404, { error: `no such path ${route.path}` });
      return 'other';
    }
    const format = bodyFormat(req, res);
    if (format === null) return 'batch';
    await this.batchRequest(route.seq, format, req, res);
    return 'batch';
  }

  private infoBody(): object {
    const info = this.w.info;
    const p = info.plan;
    return {
      job: this.w.job.name,
      worker: this.w.id,
      batchSize: p.batchSize,
      rowsPerEpoch: info.rowsPerEpoch,
      epochs: p.epochs,
      dropLast: p.dropLast,
      shuffle: p.shuffle,
      backend: info.backend,
      label: p.label,
      features: p.features.map((f) => ({ name: f.name, kind: f.kind, ops: f.ops.map((x) => x.op), width: f.width })),
      dense: { names: info.layout.denseNames, dim: info.layout.dim },
      sparse: { keys: info.layout.sparseKeys },
      formats: [ARROW_STREAM, MSGPACK],
      batches: this.w.job.batches,
    };
  }

  /** Serves batch `seq`: held here, redirected to its holder, made again after delivery, or waited for. */
  private async batchRequest(seq: number, format: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { job, k, redis } = this.w;
    if (seq >= job.batches) {
      json(res, 404, { end: true, batches: job.batches });
      return;
    }
    const s = splitOf(job, seq);
    const i = String(s.index);
    const deadline = performance.now() + this.w.waitMs;
    for (;;) {
      if (this.failsAt(s, seq)) {
        json(res, 410, { error: this.w.failure()!.message });
        return;
      }
      const body = this.w.held.get(seq);
      if (body !== undefined) {
        if (await this.send(res, seq, body, format)) {
          this.w.held.delete(seq);
          this.w.wake();
          await this.w.delivered(s, seq);
        }
        return;
      }
      const m = this.w.leased(s.index);
      if (m === undefined || m.made) {
        const [state, owner, bit, failed] = (await redis.multi().hget(k.state, i).hget(k.owner, i).getbit(k.delivered, seq).get(k.failed).exec())!.map(
          ([, v]) => v,
        ) as [string | null, string | null, number, string | null];
        if (failed !== null) this.w.setFailure(JSON.parse(failed) as JobFailure);
        if (this.failsAt(s, seq)) continue; // answered at the top
        if (state === 'done' || bit === 1) {
          const again = await this.w.replay(s);
          if (await this.send(res, seq, again.get(seq)!, format)) {
            this.w.metrics.replays.inc();
            await this.w.delivered(s, seq);
          }
          return;
        }
        if (owner !== null && owner !== this.w.id) {
          const rec = await redis.hget(k.workers, owner);
          const alive = rec !== null && (await redis.exists(k.alive(owner))) === 1;
          if (alive) {
            const to = (JSON.parse(rec) as WorkerRecord).url;
            this.w.metrics.redirects.inc();
            res.setHeader('location', `${to}${req.url}`);
            res.setHeader('cache-control', 'no-store');
            json(res, 307, { redirect: `${to}${req.url}`, worker: owner });
            return;
          }
        }
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        res.setHeader('retry-after', '1');
        json(res, 503, { error: `batch ${seq} (${describeSplit(s)}) was not made within ${this.w.waitMs} ms: no worker has it yet` });
        return;
      }
      await this.w.waitForChange(Math.min(left, m !== undefined && !m.made ? 1000 : 100));
    }
  }

  /** Whether batch `seq` of split `s` is at or after the dead split of its epoch: the epoch fails from there on, never skips it. */
  private failsAt(s: Split, seq: number): boolean {
    const failure = this.w.failure();
    if (failure === null) return false;
    const dead = this.w.job.splits[failure.split]!;
    return dead.epoch === s.epoch && seq >= dead.firstSeq;
  }

  /** Sends a body (msgpack as held, or Arrow made from it); true once the whole body was written. */
  private async send(res: ServerResponse, seq: number, body: Uint8Array, format: string): Promise<boolean> {
    const out = format === MSGPACK ? body : batchToArrowStream(batchFromMsgpack(body, this.w.info.layout), this.w.plan.label);
    res.writeHead(200, { 'content-type': format, 'content-length': out.byteLength, 'x-sluice-seq': String(seq), 'cache-control': 'no-store' });
    this.guard.sending(res);
    await new Promise<void>((resolve) => {
      res.once('close', resolve);
      res.end(out);
    });
    if (!res.writableFinished) return false;
    this.batchesServed++;
    this.w.metrics.served.inc({ format: format === MSGPACK ? 'msgpack' : 'arrow' });
    this.w.metrics.bytes.inc(out.byteLength);
    return true;
  }
}

/** Answers 401; the route the latency metric records for it. */
function refuse(res: ServerResponse): string {
  deny(res);
  return 'other';
}
