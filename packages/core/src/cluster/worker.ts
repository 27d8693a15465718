/**
 * `sluice worker`: one member of a cluster job. It leases splits (cluster/lease.ts), makes their
 * batches with a pipeline run, keeps them until trainers fetch them over the same HTTP protocol as
 * `sluice serve` (cluster/http.ts), and acknowledges a split once every batch of it was delivered.
 */
import { hostname } from 'node:os';
import { SluiceError, loadPlan, type Plan } from '@sluice/ops';
import type { Redis } from 'ioredis';
import type { Batch } from '../batch/index.js';
import { emptyMetrics, sumMetrics, type PipelineMetrics } from '../pipeline/metrics.js';
import { pipeline, type Pipeline, type PipelineInfo, type PipelineOptions } from '../pipeline/pipeline.js';
import { fingerprint, type IteratorState } from '../pipeline/resume.js';
import { batchToMsgpack } from '../serve/encode.js';
import { createDashboard } from '../serve/dashboard.js';
import type { GuardOptions } from '../serve/guard.js';
import { Heartbeat } from './heartbeat.js';
import type { HeartbeatData } from './heartbeat-thread.js';
import { WorkerHttp, type JobFailure } from './http.js';
import { describeSplit, loadJob, type JobSpec, type Split } from './job.js';
import { jobKeys, type JobKeys } from './keys.js';
import { Leases, type Lease } from './lease.js';
import { workerMetrics, type WorkerMetrics } from './metrics.js';
import { connectRedis } from './connect.js';
import { DEAD_LETTER, DELIVER } from './scripts.js';
import type { WorkerRecord } from './status.js';

/**
 * Options of `startWorker`.
 *
 * @example
 * const w = await startWorker({ redis: 'redis://127.0.0.1:6379', job: 'ctr', port: 0, token: 'secret' });
 */
export interface WorkerOptions extends GuardOptions {
  /** Redis URL: redis://[:password@]host:port[/db], or rediss:// for TLS. */
  readonly redis: string;
  readonly job: string;
  /** HTTP port (0 picks a free one). */
  readonly port?: number;
  /** Address to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** The URL other workers redirect trainers to (default the listening URL). */
  readonly advertise?: string;
  /** Backend override (a name, as `--backend`). */
  readonly backend?: string;
  /** Bearer token every /v1 request must carry. */
  readonly token?: string;
  /** Who may read /metrics when there is a token (default 'token'). */
  readonly metricsAuth?: 'token' | 'open';
  /** A lease not renewed for this long is taken by another worker (default 10 000 ms). */
  readonly leaseMs?: number;
  /** Made batches held for delivery before the worker stops leasing (default 64; it may hold one lease of splits more). */
  readonly maxHeld?: number;
  /** How long a request waits for a batch that is not made yet before a 503 (default 30 000 ms). */
  readonly waitMs?: number;
  /** Times a split may be started before it goes to the dead-letter stream (default 3). */
  readonly maxAttempts?: number;
  /** Consecutive splits taken at a time, made by one run (default 4). */
  readonly leaseSplits?: number;
  /** Decode threads per pipeline run. */
  readonly decoders?: number;
  /** Told when something goes wrong that the worker rides out (Redis away, a split that failed): the CLI prints it. */
  readonly onWarning?: (message: string) => void;
}

/**
 * A running worker.
 *
 * @example
 * const w = await startWorker({ redis, job: 'ctr' });
 * process.on('SIGTERM', () => void w.stop());
 */
export interface ClusterWorker {
  readonly id: string;
  /** The URL trainers and other workers reach it at. */
  readonly url: string;
  /** Hands its leases back at once (other workers take them without waiting for the lease time), then closes. */
  stop(): Promise<void>;
}

/** A split this worker leased: its batches being made, then held until delivered. */
interface Mine {
  readonly lease: Lease;
  /** When making it started (for the slowest split). */
  t0: number;
  made: boolean;
  lost: boolean;
}

/**
 * Starts a worker of job `o.job`: checks that its files are the job's, listens, and leases splits
 * until stopped.
 *
 * @example
 * const w = await startWorker({ redis: 'redis://127.0.0.1:6379', job: 'ctr', port: 8081 });
 * console.log(w.url);
 */
export async function startWorker(o: WorkerOptions): Promise<ClusterWorker> {
  const leaseMs = positive('leaseMs', o.leaseMs, 10_000);
  const maxHeld = positive('maxHeld', o.maxHeld, 64);
  const waitMs = positive('waitMs', o.waitMs, 30_000);
  const maxAttempts = positive('maxAttempts', o.maxAttempts, 3);
  const leaseSplits = positive('leaseSplits', o.leaseSplits, 4);
  if (o.token === '') throw new SluiceError('the token must not be empty');
  // Commands wait while Redis is away (a restart) instead of failing.
  const redis = await connectRedis(o.redis, { maxRetriesPerRequest: null });
  const blocking = await connectRedis(o.redis, { maxRetriesPerRequest: null }).catch((e: unknown) => {
    redis.disconnect();
    throw e;
  });
  // A worker that cannot start closes its connections, which would otherwise keep the process
  // alive after the error (`sluice worker` printed it and hung).
  try {
    const job = await loadJob(redis, o.job);
    const k = jobKeys(job.name);
    const plan = loadPlan(job.plan);
    const runOptions: PipelineOptions = {
      input: job.input,
      windowBatches: true,
      ...(job.fitState ? { fitState: job.fitState } : {}),
      ...(o.backend ? { backend: o.backend } : {}),
      ...(o.decoders ? { decoders: o.decoders } : {}),
    };
    const info = await pipeline(plan, runOptions).info();
    if (fingerprint(plan, info.dataset) !== job.fingerprint) {
      throw new SluiceError(`the input files this worker sees differ from job ${job.name}'s (row groups or paths): every worker must read the same files`);
    }
    const id = `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 6)}`;
    return await new WorkerNode(o, { leaseMs, maxHeld, waitMs, maxAttempts, leaseSplits }, redis, blocking, job, k, plan, info, runOptions, id).start();
  } catch (e) {
    redis.disconnect();
    blocking.disconnect();
    throw e;
  }
}

interface Limits {
  leaseSplits: number;
  leaseMs: number;
  maxHeld: number;
  waitMs: number;
  maxAttempts: number;
}

class WorkerNode implements ClusterWorker {
  url = '';
  private readonly held = new Map<number, Uint8Array>();
  private readonly mine = new Map<number, Mine>();
  private readonly replays = new Map<number, Promise<Map<number, Uint8Array>>>();
  private readonly leases: Leases;
  private metrics!: WorkerMetrics;
  private heartbeat: Heartbeat | null = null;
  private stopping = false;
  private stopped: Promise<void> | null = null;
  private wakers = new Set<() => void>();
  private run: { p: Pipeline; it: AsyncIterator<Batch>; next: { epoch: number; window: number; offset: number }; seq: number } | null = null;
  /** The counters of the runs that ended (the dashboard shows them summed with the current one's). */
  private finishedMetrics: PipelineMetrics = emptyMetrics();
  private batchesMade = 0;
  private rowsWindow: Array<[number, number]> = [];
  private state: WorkerRecord['state'] = 'active';
  /** The job's first dead split, once there is one (the `failed` key). */
  private failure: JobFailure | null = null;
  private loop: Promise<void> = Promise.resolve();
  private http!: WorkerHttp;

  constructor(
    private readonly o: WorkerOptions,
    private readonly lim: Limits,
    private readonly redis: Redis,
    private readonly blocking: Redis,
    private readonly job: JobSpec,
    private readonly k: JobKeys,
    private readonly plan: Plan,
    private readonly info: PipelineInfo,
    private readonly runOptions: PipelineOptions,
    readonly id: string,
  ) {
    this.leases = new Leases(redis, blocking, job, id, lim.leaseMs);
  }

  async start(): Promise<this> {
    this.metrics = await workerMetrics({ held: () => this.held.size, leases: () => this.leases.taken, reclaims: () => this.leases.reclaims });
    // The live page of `sluice serve` (docs/dashboard.md), with the cluster panel from /v1/cluster.
    const dashboard = createDashboard({
      ...(this.o.token === undefined ? {} : { token: this.o.token }),
      title: `sluice worker ${this.id} (job ${this.job.name})`,
      backend: this.info.backend,
      batchSize: this.info.plan.batchSize,
      metrics: () => sumMetrics([this.finishedMetrics, ...(this.run === null ? [] : [this.run.p.metrics()])]),
      counters: () => ({
        'batches made': this.batchesMade,
        'batches served': this.http.batchesServed,
        'batches held': this.held.size,
        'splits leased': this.leases.taken,
        'splits reclaimed': this.leases.reclaims,
      }),
      cluster: true,
    });
    this.http = new WorkerHttp(this.o, {
      id: this.id,
      job: this.job,
      k: this.k,
      redis: this.redis,
      plan: this.plan,
      info: this.info,
      waitMs: this.lim.waitMs,
      metrics: this.metrics,
      dashboard,
      held: this.held,
      state: () => this.state,
      leased: (index) => this.mine.get(index),
      failure: () => this.failure,
      setFailure: (f) => {
        this.failure = f;
      },
      wake: () => this.wake(),
      waitForChange: (ms) => this.waitForChange(ms),
      delivered: (s, seq) => this.delivered(s, seq),
      replay: (s) => this.replay(s),
    });
    const a = await this.http.listen(this.o.host ?? '127.0.0.1', this.o.port ?? 0);
    this.url = (this.o.advertise ?? `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`).replace(/\/+$/, '');
    await this.redis.hset(this.k.workers, this.id, this.record());
    this.startHeartbeat();
    this.loop = this.leaseLoop();
    return this;
  }

  // ---- making ----

  /** Leases and makes splits until stopped. */
  private async leaseLoop(): Promise<void> {
    while (!this.stopping) {
      let got: Lease[];
      // Consecutive splits, which one run makes without restarting: a run that restarts for every
      // split decodes its first row group alone, while a running one decodes ahead in parallel.
      const room = this.lim.maxHeld - this.held.size;
      try {
        got = await this.leases.next(room > 0, this.lim.leaseSplits);
      } catch {
        if (!this.stopping) await sleep(200); // Redis away (a restart): try again
        continue;
      }
      if (got.length === 0) {
        if (room <= 0) await this.waitForChange(200);
        continue;
      }
      if (this.stopping) {
        await this.leases.release(got.map((l) => l.id)).catch(() => undefined);
        break;
      }
      // Known as ours from the start: a SIGTERM from here on hands them back.
      const entries = got.map((lease): Mine => ({ lease, t0: performance.now(), made: false, lost: false }));
      for (const e of entries) this.mine.set(e.lease.split.index, e);
      for (const entry of entries) {
        if (this.stopping) break;
        try {
          await this.make(entry);
        } catch (e) {
          // Redis went away mid-split: the lease stays ours (or expires), and the loop goes on.
          if (this.stopping) break;
          this.o.onWarning?.(`${describeSplit(entry.lease.split)}: ${(e as Error).message}; going on`);
          await sleep(200);
        }
      }
    }
  }

  /** Makes a leased split's batches and holds those not delivered yet. */
  private async make(entry: Mine): Promise<void> {
    const lease = entry.lease;
    const s = lease.split;
    const i = String(s.index);
    entry.t0 = performance.now();
    const [state, attempts] = (await this.redis.multi().hget(this.k.state, i).hincrby(this.k.attempts, i, 1).exec())!.map(([, v]) => v) as [
      string | null,
      number,
    ];
    if (state !== null) {
      this.mine.delete(s.index);
      await this.leases.ack(lease.id);
      return;
    }
    if (attempts > this.lim.maxAttempts) {
      this.mine.delete(s.index);
      const last = await this.redis.hget(this.k.errors, i);
      await this.deadLetter(s, lease, attempts - 1, last ?? `the workers making it stopped (killed, or out of memory) ${attempts - 1} times`);
      return;
    }
    await this.redis.hset(this.k.owner, i, this.id);
    if (this.stopping) return;
    try {
      for await (const b of this.batchesOf(s)) {
        const seq = b.seq;
        const body = batchToMsgpack(b);
        this.countRows(b.rows);
        b.release?.();
        this.batchesMade++;
        this.metrics.made.inc();
        if (entry.lost || this.stopping) return;
        if ((await this.redis.getbit(this.k.delivered, seq)) === 1) continue;
        this.held.set(seq, body);
        this.wake();
      }
    } catch (e) {
      if (this.stopping || entry.lost) return;
      this.closeRun();
      this.drop(s);
      const message = (e as Error).message;
      this.o.onWarning?.(`${describeSplit(s)} failed (attempt ${attempts} of ${this.lim.maxAttempts}): ${message}`);
      await this.redis.hset(this.k.errors, i, message);
      if (attempts >= this.lim.maxAttempts) await this.deadLetter(s, lease, attempts, message);
      else await this.leases.release([lease.id]);
      return;
    }
    entry.made = true;
    this.wake();
    // A reclaimed split whose batches were all delivered before: complete it now.
    if (![...this.held.keys()].some((q) => q >= s.firstSeq && q < s.firstSeq + s.batches)) await this.delivered(s, s.firstSeq);
  }

  /** The resume point at split `s`'s start: a run from it yields exactly the split's batches first. */
  private resumeAt(s: Split): IteratorState {
    return {
      version: 1,
      epoch: s.epoch,
      window: s.window,
      offset: s.offset,
      seq: s.firstSeq,
      seed: this.plan.shuffle?.seed ?? null,
      fingerprint: this.job.fingerprint,
    };
  }

  /** The batches of split `s`, from the run in progress when it is at the split's start, else a new run. */
  private async *batchesOf(s: Split): AsyncGenerator<Batch> {
    const r = this.run;
    if (r === null || r.seq !== s.firstSeq || r.next.epoch !== s.epoch || r.next.window !== s.window || r.next.offset !== s.offset) {
      this.closeRun();
      const p = pipeline(this.plan, { ...this.runOptions, resume: this.resumeAt(s) });
      this.run = { p, it: p[Symbol.asyncIterator](), next: { epoch: s.epoch, window: s.window, offset: s.offset }, seq: s.firstSeq };
    }
    const run = this.run!;
    for (let n = 0; n < s.batches; n++) {
      const got = await run.it.next();
      if (got.done) throw new SluiceError(`${describeSplit(s)}: the data ended after ${n} of its batches`);
      run.next = got.value.end;
      run.seq = got.value.seq + 1;
      yield got.value;
    }
  }

  private closeRun(): void {
    const r = this.run;
    this.run = null;
    if (r === null) return;
    this.finishedMetrics = sumMetrics([this.finishedMetrics, { ...r.p.metrics(), buffered: 0 }]);
    void r.it.return?.();
  }

  private async deadLetter(s: Split, lease: Lease, attempts: number, message: string): Promise<void> {
    const failure = JSON.stringify({ split: s.index, message: `${describeSplit(s)} failed ${attempts} times and went to the dead-letter stream: ${message}` });
    await this.redis.eval(
      DEAD_LETTER,
      6,
      this.k.splits,
      this.k.dead,
      this.k.state,
      this.k.counters,
      this.k.failed,
      this.k.owner,
      this.k.group,
      lease.id,
      String(s.index),
      failure,
      String(attempts),
    );
    this.wake();
  }

  /** Records batch `seq` of `s` as delivered; acknowledges the split when that was its last. */
  private async delivered(s: Split, seq: number): Promise<void> {
    const m = this.mine.get(s.index);
    const ms = m ? Math.round(performance.now() - m.t0) : 0;
    const [, completed] = (await this.redis.eval(
      DELIVER,
      6,
      this.k.delivered,
      this.k.deliveredCount,
      this.k.state,
      this.k.counters,
      this.k.splits,
      this.k.owner,
      String(seq),
      String(s.index),
      String(s.batches),
      this.k.group,
      `${s.index + 1}-0`,
      String(ms),
    )) as [number, number];
    if (completed === 1) this.drop(s);
  }

  /** Forgets split `s`: its lease entry and any of its batches still held. */
  private drop(s: Split): void {
    this.mine.delete(s.index);
    for (let q = s.firstSeq; q < s.firstSeq + s.batches; q++) this.held.delete(q);
    this.wake();
  }

  // ---- heartbeat ----

  private startHeartbeat(): void {
    const data: HeartbeatData = {
      redisUrl: this.o.redis,
      stream: this.k.splits,
      group: this.k.group,
      consumer: this.id,
      aliveKey: this.k.alive(this.id),
      workersKey: this.k.workers,
      leaseMs: this.lim.leaseMs,
    };
    const hb = new Heartbeat(
      data,
      (ids, at) => {
        // A lease this beat did not renew was taken by another worker (this one stalled past the lease time).
        for (const e of this.mine.values()) {
          if (e.lease.at < at && !ids.has(e.lease.id)) {
            e.lost = true;
            this.drop(e.lease.split);
          }
        }
      },
      this.o.onWarning,
    );
    this.heartbeat = hb;
    const post = (): void => {
      hb.record(this.record());
      // Whether the job failed, so that batches held here after a dead split are refused too.
      this.redis.get(this.k.failed).then(
        (f) => {
          if (f !== null) this.failure = JSON.parse(f) as JobFailure;
        },
        () => undefined,
      );
    };
    post();
    const t = setInterval(post, 500);
    t.unref();
    hb.onExit(() => clearInterval(t));
  }

  private record(): string {
    const now = Date.now();
    const recent = this.rowsWindow.filter(([t]) => t > now - 10_000);
    this.rowsWindow = recent;
    const rows = recent.reduce((a, [, n]) => a + n, 0);
    const span = recent.length > 0 ? Math.max(1000, now - recent[0]![0]) : 10_000;
    const r: WorkerRecord = {
      id: this.id,
      url: this.url,
      state: this.state,
      lastSeenMs: now,
      batchesMade: this.batchesMade,
      batchesServed: this.http.batchesServed,
      rowsPerSec: Math.round((rows / span) * 1000),
    };
    return JSON.stringify(r);
  }

  private countRows(n: number): void {
    this.rowsWindow.push([Date.now(), n]);
  }

  // ---- waiting ----

  private wake(): void {
    const ws = this.wakers;
    this.wakers = new Set();
    for (const w of ws) w();
  }

  /** Resolves at the next change (a batch made or delivered, a split dropped) or after `ms`. */
  private waitForChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        resolve();
      }
      this.wakers.add(done);
    });
  }

  // ---- replays ----

  /**
   * Split `s` made again, for a trainer that asks for a batch already delivered (it resumed from
   * a checkpoint): a run of its own, beside the leased work. Concurrent requests share it; a few
   * replayed splits are kept for the requests that follow.
   */
  private replay(s: Split): Promise<Map<number, Uint8Array>> {
    let p = this.replays.get(s.index);
    if (p !== undefined) return p;
    p = (async () => {
      const out = new Map<number, Uint8Array>();
      for await (const b of pipeline(this.plan, { ...this.runOptions, resume: this.resumeAt(s) })) {
        out.set(b.seq, batchToMsgpack(b));
        b.release?.();
        this.metrics.made.inc();
        if (out.size === s.batches) break;
      }
      return out;
    })();
    this.replays.set(s.index, p);
    p.catch(() => this.replays.delete(s.index));
    // Keep the last few replayed splits: a resumed trainer asks for their batches one by one.
    while (this.replays.size > 4) this.replays.delete(this.replays.keys().next().value!);
    return p;
  }

  // ---- stopping ----

  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    this.state = 'draining';
    this.wake();
    // Leases first, so that other workers may take them within the second; then the run stops.
    const ids = new Set([...this.mine.values()].map((m) => m.lease.id));
    this.held.clear();
    try {
      await this.leases.release([...ids]);
    } catch {
      /* Redis away: the leases expire instead */
    }
    this.closeRun();
    await Promise.race([this.loop.catch(() => undefined), sleep(2000)]);
    // No beat after this: one would mark the worker alive again.
    this.heartbeat?.stop();
    try {
      // A split leased while the first release ran.
      await this.leases.release([...this.mine.values()].map((m) => m.lease.id).filter((id) => !ids.has(id)));
      this.mine.clear();
      this.state = 'dead';
      await this.redis.multi().del(this.k.alive(this.id)).hset(this.k.workers, this.id, this.record()).exec();
    } catch {
      /* Redis away: the leases expire instead */
    }
    await this.http.close();
    this.blocking.disconnect();
    this.redis.disconnect();
  }
}

function positive(name: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, got ${v}`);
  return v;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
