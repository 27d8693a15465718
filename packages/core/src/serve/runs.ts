/**
 * `BatchMaker`: makes batches by seq with a few pipeline runs. The batch sequence is
 * deterministic, so any run that passes seq makes the same batch: a request waits on the run
 * that reaches it soonest, or starts one from the nearest resume point (a small JSON state kept
 * every few batches), and concurrent requests for one seq share one wait. Made batches go to the
 * shelf (serve/store.ts); a run that comes to batches already there jumps over them from a resume
 * point instead of making them again.
 */
import { availableParallelism } from 'node:os';
import { SluiceError, type Plan } from '@sluice/ops';
import type { Batch } from '../batch/index.js';
import { pipeline, type IteratorState, type Pipeline, type PipelineOptions } from '../pipeline/pipeline.js';
import { backendSpecOf } from '../pipeline/setup.js';
import { emptyMetrics, sumMetrics, type PipelineMetrics } from '../pipeline/metrics.js';

/** How the maker schedules its runs. */
export interface MakerOptions {
  /** Pipeline runs alive at once. */
  readonly maxRuns: number;
  /** A resume point every this many batches. */
  readonly checkpointEvery: number;
  /** Batches a run makes past the highest one asked of it. */
  readonly prefetch: number;
  /** A run nobody has asked anything of for this long is stopped (its threads and memory freed). */
  readonly idleMs: number;
}

/** What the maker asks of the shelf it fills. */
export interface MakerHooks {
  /** Whether batch `seq`'s body is on the shelf (a run need not make it). */
  have(seq: number): boolean;
  /** Puts a made batch's body on the shelf; resolves once it can be taken. */
  deliver(b: Batch): Promise<void>;
}

interface Run {
  pipeline: Pipeline;
  /** The pipeline's iterator, made (which starts the pipeline) once `gate` has resolved. */
  it: AsyncIterator<Batch> | null;
  /** The pipeline this one replaces, finishing: its threads go before this one's start. */
  gate: Promise<void>;
  /** Seq of the batch the run yields next. */
  next: number;
  /** The run makes batches while `next <= target`. */
  target: number;
  /** Requests waiting on this run. */
  pending: number;
  /** The `next()` in flight (settled), so that stopping waits for it. */
  step: Promise<unknown>;
  pumping: boolean;
  closed: boolean;
  lastUsed: number;
  idle: NodeJS.Timeout | null;
}

interface Want {
  readonly promise: Promise<boolean>;
  readonly resolve: (made: boolean) => void;
  readonly reject: (e: unknown) => void;
  run: Run | null;
}

/**
 * What a restart costs, in batches: a new run starts its threads, reads the footers and re-reads
 * the row group up to its resume point. A run waits for another this much behind rather than
 * starting anew, and jumps ahead only over at least this many batches already made.
 */
const RESTART_BATCHES = 8;

/** Resume points kept at most: past this, every other one is dropped and the interval doubles. */
const MAX_CHECKPOINTS = 4096;

/** Seqs whose first making is tracked (for the made/distinct metrics), at one bit each. */
const MAX_TRACKED = 2 ** 26;

/** Threads a cpu-backend run of the server gets unless the plan or options say (each costs ~20 MB; docs/serving.md). */
export const SERVE_WORKERS = 4;

/**
 * Makes batch `seq` on request: `want(seq)` resolves true once the batch has been delivered to the
 * shelf, false past the end of the data, and rejects with the pipeline's error where the data is
 * damaged. At most `maxRuns` pipeline runs are alive; made/distinct batches are counted.
 *
 * @example
 * const maker = new BatchMaker(plan, { input }, 196, { maxRuns: 2, checkpointEvery: 16, prefetch: 4, idleMs: 30_000 }, hooks);
 * if (await maker.want(150)) send(shelf.take('150:msgpack'));
 */
export class BatchMaker {
  private readonly wants = new Map<number, Want>();
  /** Wants no run could take (not expected: a take-over always leaves one); tried again when a run rests. */
  private readonly parked = new Set<number>();
  /** Batches made and being put on the shelf, by the run that made them. */
  private readonly delivering = new Map<number, Run>();
  private runs: Run[] = [];
  private readonly checkpoints = new Map<number, IteratorState>();
  private every: number;
  private clock = 0;
  private closed = false;
  private readonly options: PipelineOptions;
  /** Pipelines stopped but not yet finished, and the batches finished ones made. */
  private readonly retired = new Map<Pipeline, Promise<void>>();
  private madeByFinished = 0;
  /** The counters of finished pipelines, summed (their buffered batches are gone with them). */
  private finishedMetrics: PipelineMetrics = emptyMetrics();
  /** One bit per seq made at least once; null past MAX_TRACKED seqs (8 MiB of bits). */
  private readonly seen: Uint8Array | null;
  /** Seqs made at least once; -1 when there are too many seqs to track. */
  distinct = 0;
  /** Pipeline runs started, restarts included. */
  started = 0;

  constructor(
    private readonly plan: Plan,
    options: PipelineOptions,
    /** Batches in the whole sequence (corrected if the data ends sooner). */
    public total: number,
    private readonly o: MakerOptions,
    private readonly hooks: MakerHooks,
  ) {
    this.options = withServeWorkers(plan, options);
    this.every = o.checkpointEvery;
    this.seen = total <= MAX_TRACKED ? new Uint8Array(Math.ceil(total / 8)) : null;
    if (this.seen === null) this.distinct = -1;
  }

  /** Batches made by every run so far, re-made ones included. */
  get made(): number {
    let n = this.madeByFinished;
    for (const r of this.runs) n += r.pipeline.metrics().batches;
    for (const p of this.retired.keys()) n += p.metrics().batches;
    return n;
  }

  /** The counters of every run so far, finished ones included, as one (pipeline/metrics.ts `sumMetrics`). */
  metrics(): PipelineMetrics {
    const alive = [...this.runs.map((r) => r.pipeline), ...this.retired.keys()].map((p) => p.metrics());
    return sumMetrics([this.finishedMetrics, ...alive]);
  }

  /** Runs alive. */
  get activeRuns(): number {
    return this.runs.length;
  }

  /** Resolves true once batch `seq` is on the shelf, false if `seq` is past the end. */
  want(seq: number): Promise<boolean> {
    if (this.closed) return Promise.reject(new SluiceError('the server is closing'));
    if (seq >= this.total) return Promise.resolve(false);
    const had = this.wants.get(seq);
    if (had) return had.promise;
    let resolve!: (v: boolean) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<boolean>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const w: Want = { promise, resolve, reject, run: null };
    this.wants.set(seq, w);
    this.assign(seq, w);
    return promise;
  }

  /** Stops every run; requests still waiting fail. */
  async close(): Promise<void> {
    this.closed = true;
    const closing = new SluiceError('the server is closing');
    for (const w of this.wants.values()) w.reject(closing);
    this.wants.clear();
    this.parked.clear();
    for (const r of [...this.runs]) this.retire(r);
    await Promise.all(this.retired.values());
  }

  /**
   * Gives `seq` to the run that reaches it soonest: one behind it, or a new one from a resume
   * point when that is more than RESTART_BATCHES sooner. With every run busy, a request that would
   * wait much longer than a new run would take takes over the least recently asked run ahead of
   * it; that run's requests move to the new run, which passes them on its way.
   */
  private assign(seq: number, w: Want, mayTakeOver = true): void {
    const making = this.delivering.get(seq);
    if (making !== undefined) {
      // Made a moment ago and being written: the run that made it settles it.
      w.run = making;
      making.pending++;
      return;
    }
    const from = this.checkpointAtOrBefore(seq);
    let best: Run | null = null;
    for (const r of this.runs) if (!r.closed && r.next <= seq && (best === null || r.next > best.next)) best = r;
    const wait = best === null ? Infinity : seq - best.next;
    const fresh = seq - from + RESTART_BATCHES;
    if (best !== null && wait <= fresh) return this.give(best, seq, w);
    if (this.runs.length < this.o.maxRuns) return this.give(this.start(from, Promise.resolve()), seq, w);
    // A run nobody waits on makes way (the least recently asked).
    const idle = this.leastRecent((r) => r.pending === 0);
    if (idle !== null) return this.give(this.start(from, this.retire(idle)), seq, w);
    const victim = mayTakeOver && wait - fresh > 2 * this.every ? this.leastRecent((r) => r.next > seq) : null;
    if (victim !== null) {
      const moved = [...this.wants].filter(([, v]) => v.run === victim);
      this.give(this.start(from, this.retire(victim)), seq, w);
      // Each is past the victim's next, so past seq: the new run (from <= seq) reaches it.
      for (const [s, v] of moved) {
        v.run = null;
        this.assign(s, v, false);
      }
      return;
    }
    if (best !== null) return this.give(best, seq, w);
    this.parked.add(seq);
  }

  /** The least recently asked run that `ok` accepts, or null. */
  private leastRecent(ok: (r: Run) => boolean): Run | null {
    let found: Run | null = null;
    for (const r of this.runs) if (ok(r) && (found === null || r.lastUsed < found.lastUsed)) found = r;
    return found;
  }

  private give(run: Run, seq: number, w: Want): void {
    w.run = run;
    run.pending++;
    run.target = Math.max(run.target, Math.min(seq + this.o.prefetch, this.total - 1));
    run.lastUsed = ++this.clock;
    if (run.idle !== null) clearTimeout(run.idle);
    run.idle = null;
    void this.pump(run);
  }

  /** A pipeline from resume point `from`; it starts when the run first asks it for a batch. */
  private open(from: number): Pipeline {
    const resume = from === 0 ? undefined : this.checkpoints.get(from)!;
    this.started++;
    return pipeline(this.plan, { ...this.options, ...(resume ? { resume } : {}) });
  }

  private start(from: number, gate: Promise<void>): Run {
    const run: Run = {
      pipeline: this.open(from),
      it: null,
      gate,
      next: from,
      target: from - 1,
      pending: 0,
      step: Promise.resolve(),
      pumping: false,
      closed: false,
      lastUsed: ++this.clock,
      idle: null,
    };
    this.runs.push(run);
    return run;
  }

  /**
   * Stops a run's pipeline once its `next()` in flight has settled; resolves when it has (its
   * threads ended). Its count of made batches is kept.
   */
  private finishPipeline(run: Run): Promise<void> {
    const { pipeline: p, it, step, gate } = run;
    const done = Promise.all([step, gate])
      .then(() => it?.return?.())
      .catch(() => undefined)
      .then(() => {
        const m = p.metrics();
        this.madeByFinished += m.batches;
        this.finishedMetrics = sumMetrics([this.finishedMetrics, { ...m, buffered: 0 }]);
        this.retired.delete(p);
      });
    this.retired.set(p, done);
    return done;
  }

  /** Takes a run out; resolves once its pipeline has finished. */
  private retire(run: Run): Promise<void> {
    if (run.closed) return this.retired.get(run.pipeline) ?? Promise.resolve();
    run.closed = true;
    if (run.idle !== null) clearTimeout(run.idle);
    this.runs = this.runs.filter((r) => r !== run);
    return this.finishPipeline(run);
  }

  /** Moves `run` on to a new pipeline from resume point `from` (past batches already made), started once the old one has finished. */
  private restart(run: Run, from: number): void {
    const gate = this.finishPipeline(run);
    Object.assign(run, { pipeline: this.open(from), it: null, gate, next: from, step: Promise.resolve() });
  }

  /** Makes batches on `run` until it reaches its target: one loop per run at a time. */
  private async pump(run: Run): Promise<void> {
    if (run.pumping) return;
    run.pumping = true;
    try {
      while (!run.closed && run.next <= run.target) {
        if (this.hooks.have(run.next)) {
          // Made already (by another run, or before): jump over the made stretch if that is cheaper.
          let u = run.next + 1;
          while (u <= run.target && this.hooks.have(u)) u++;
          if (u > run.target) break;
          const from = this.checkpointAtOrBefore(u);
          if (from - run.next >= RESTART_BATCHES) {
            this.restart(run, from);
            continue;
          }
        }
        if (run.it === null) {
          await run.gate;
          if (run.closed) break;
          run.it = run.pipeline[Symbol.asyncIterator]();
        }
        const step = run.it.next();
        run.step = step.catch(() => undefined);
        let r: IteratorResult<Batch>;
        try {
          r = await step;
        } catch (e) {
          this.fail(run, e);
          return;
        }
        if (r.done) {
          this.end(run);
          return;
        }
        const b = r.value;
        run.next = b.seq + 1;
        this.keepCheckpoint(run);
        this.noteSeen(b.seq);
        // Another run putting the same batch on the shelf settles its want.
        if (this.delivering.has(b.seq)) continue;
        if (!this.hooks.have(b.seq)) {
          this.delivering.set(b.seq, run);
          try {
            await this.hooks.deliver(b);
          } catch (e) {
            this.settle(b.seq, e);
            continue;
          } finally {
            this.delivering.delete(b.seq);
          }
        }
        this.settle(b.seq, null);
      }
    } finally {
      run.pumping = false;
    }
    this.rest(run);
  }

  /** After a run's loop: a run at the end is stopped, one nobody waits on is stopped after `idleMs`; parked wants get another try. */
  private rest(run: Run): void {
    if (!run.closed && run.next >= this.total) this.retire(run);
    else if (!run.closed && run.pending === 0 && run.idle === null && this.o.idleMs > 0) {
      run.idle = setTimeout(() => {
        run.idle = null;
        if (run.pending === 0 && !run.pumping) this.retire(run);
      }, this.o.idleMs);
      run.idle.unref();
    }
    this.unpark();
  }

  private unpark(): void {
    for (const seq of [...this.parked]) {
      this.parked.delete(seq);
      const w = this.wants.get(seq);
      if (w !== undefined && w.run === null) this.assign(seq, w);
    }
  }

  /** The want for `seq` is met (or failed): its requests go on. */
  private settle(seq: number, error: unknown): void {
    const w = this.wants.get(seq);
    if (w === undefined) return;
    this.wants.delete(seq);
    if (w.run !== null) w.run.pending--;
    if (error === null) w.resolve(true);
    else w.reject(error);
  }

  /**
   * A run whose pipeline failed (damaged data) is dropped, and the requests waiting on it get the
   * error: it cannot pass the damage, so neither could it make their batches. The next request
   * starts a new run and meets the error again.
   */
  private fail(run: Run, error: unknown): void {
    this.retire(run);
    for (const [seq, w] of [...this.wants]) if (w.run === run) this.settle(seq, error);
    this.unpark();
  }

  /** A run reached the end of the data: that is the true total, and requests past it get "no such batch". */
  private end(run: Run): void {
    this.total = Math.min(this.total, run.next);
    this.retire(run);
    for (const [seq, w] of [...this.wants]) {
      if (seq < this.total) continue;
      this.wants.delete(seq);
      if (w.run !== null) w.run.pending--;
      this.parked.delete(seq);
      w.resolve(false);
    }
    this.unpark();
  }

  private keepCheckpoint(run: Run): void {
    if (run.next % this.every !== 0 || this.checkpoints.has(run.next)) return;
    const s = run.pipeline.state();
    if (s === null) return;
    this.checkpoints.set(run.next, s);
    if (this.checkpoints.size <= MAX_CHECKPOINTS) return;
    this.every *= 2;
    for (const k of [...this.checkpoints.keys()]) if (k % this.every !== 0) this.checkpoints.delete(k);
  }

  /** The nearest resume point at or before `seq` (0, the start, always is one). */
  private checkpointAtOrBefore(seq: number): number {
    let best = 0;
    for (const k of this.checkpoints.keys()) if (k <= seq && k > best) best = k;
    return best;
  }

  private noteSeen(seq: number): void {
    if (this.seen === null) return;
    const bit = 1 << (seq & 7);
    if ((this.seen[seq >> 3]! & bit) !== 0) return;
    this.seen[seq >> 3]! |= bit;
    this.distinct++;
  }
}

/**
 * The pipeline options of the server's runs: a cpu-backend run gets at most SERVE_WORKERS threads
 * unless the plan's backend or the options name `workers` (batches are the same whatever the
 * count). A run per core would multiply the server's memory by its runs.
 */
function withServeWorkers(plan: Plan, options: PipelineOptions): PipelineOptions {
  const spec = backendSpecOf(plan, options.backend);
  if (spec.name !== 'cpu' || spec.workers !== undefined) return options;
  return { ...options, backend: { ...spec, workers: Math.max(1, Math.min(SERVE_WORKERS, availableParallelism() - 1)) } };
}
