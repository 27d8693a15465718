import type { Plan } from '@sluice/ops';
import { pipeline, type IteratorState, type Pipeline, type PipelineInfo, type PipelineOptions } from '../pipeline/pipeline.js';
import type { Batch } from '../batch/index.js';

export interface BatchStoreOptions {
  /** Batches kept in memory (default 32): the prefetched ones and those recently served. */
  cacheBatches?: number;
  /** Batches produced ahead of the highest one asked for (default 4, at most cacheBatches / 2). */
  prefetch?: number;
  /** Pipeline runs alive at once (default 3): one follows the fastest client, others serve clients behind it. */
  maxRuns?: number;
  /** A resume point is kept every this many batches (default 16): a lagging client costs at most that many re-made batches. */
  checkpointEvery?: number;
}

interface Run {
  pipeline: Pipeline;
  it: AsyncIterator<Batch>;
  /** Seq of the batch this run yields next. */
  next: number;
  /** Serialises advancing the run. */
  busy: Promise<unknown>;
  lastUsed: number;
  closed: boolean;
}

/**
 * Random access to a plan's deterministic batch sequence with bounded memory. Batch `seq` comes
 * from a small cache, or from a pipeline run advanced to it; a run starts from the nearest resume
 * point (small JSON states, never data), so a client far behind re-makes its batches instead of
 * the server holding every batch since it started.
 */
export class BatchStore {
  private readonly cache = new Map<number, Batch>();
  private readonly checkpoints = new Map<number, IteratorState>();
  private runs: Run[] = [];
  private total: number | null = null;
  private highest = -1;
  private clock = 0;
  private readonly cacheBatches: number;
  private readonly prefetch: number;
  private readonly maxRuns: number;
  private readonly every: number;
  private closed = false;
  /** Batches made by runs (re-made ones included), for metrics. */
  produced = 0;

  constructor(
    private readonly plan: Plan,
    private readonly options: PipelineOptions,
    info: PipelineInfo,
    o: BatchStoreOptions = {},
  ) {
    this.cacheBatches = o.cacheBatches ?? 32;
    this.prefetch = Math.min(o.prefetch ?? 4, Math.floor(this.cacheBatches / 2));
    this.maxRuns = o.maxRuns ?? 3;
    this.every = o.checkpointEvery ?? 16;
    for (const [k, v] of Object.entries({ cacheBatches: this.cacheBatches, maxRuns: this.maxRuns, checkpointEvery: this.every })) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer, got ${v}`);
    }
    // Batches per epoch: full batches, plus the epoch's partial one unless dropLast.
    const r = info.rowsPerEpoch;
    const b = plan.batchSize;
    this.total = plan.epochs * (plan.dropLast ? Math.floor(r / b) : Math.ceil(r / b));
  }

  /** Batches in the whole sequence. */
  get batches(): number {
    return this.total!;
  }
  get cached(): number {
    return this.cache.size;
  }
  get activeRuns(): number {
    return this.runs.length;
  }

  /** Batch `seq`, or null past the end. */
  async get(seq: number): Promise<Batch | null> {
    if (this.closed) throw new Error('batch store is closed');
    if (seq >= this.total!) return null;
    this.highest = Math.max(this.highest, seq);
    const hit = this.cache.get(seq);
    if (hit) {
      this.touch(seq, hit);
      this.prefetchAhead();
      return hit;
    }
    const run = this.runFor(seq);
    const b = await this.advance(run, seq);
    this.prefetchAhead();
    return b;
  }

  async close(): Promise<void> {
    this.closed = true;
    const runs = this.runs;
    this.runs = [];
    await Promise.all(runs.map((r) => this.stop(r)));
    this.cache.clear();
  }

  private touch(seq: number, b: Batch): void {
    this.cache.delete(seq);
    this.cache.set(seq, b);
  }

  private remember(b: Batch): void {
    this.touch(b.seq, b);
    while (this.cache.size > this.cacheBatches) this.cache.delete(this.cache.keys().next().value!);
  }

  /** A run that reaches `seq` soon: one already at or a little before it, else a new one from a resume point. */
  private runFor(seq: number): Run {
    let best: Run | null = null;
    for (const r of this.runs) {
      if (r.closed || r.next > seq || seq - r.next > this.cacheBatches) continue;
      if (best === null || r.next > best.next) best = r;
    }
    if (best) return best;
    let from = 0;
    for (const k of this.checkpoints.keys()) if (k <= seq && k > from) from = k;
    if (this.runs.length >= this.maxRuns) {
      const idle = [...this.runs].sort((x, y) => x.lastUsed - y.lastUsed)[0]!;
      this.runs = this.runs.filter((r) => r !== idle);
      void this.stop(idle);
    }
    const resume = from === 0 ? undefined : this.checkpoints.get(from)!;
    const p = pipeline(this.plan, { ...this.options, ...(resume ? { resume } : {}) });
    const run: Run = { pipeline: p, it: p[Symbol.asyncIterator](), next: from, busy: Promise.resolve(), lastUsed: ++this.clock, closed: false };
    this.runs.push(run);
    return run;
  }

  private async stop(r: Run): Promise<void> {
    r.closed = true;
    await r.busy.catch(() => undefined);
    await r.it.return?.();
  }

  /** Moves `run` forward until it has made `seq` (caching what it makes), serialised per run. */
  private advance(run: Run, seq: number): Promise<Batch | null> {
    const step = run.busy.then(async (): Promise<Batch | null> => {
      run.lastUsed = ++this.clock;
      const have = this.cache.get(seq);
      if (have) return have;
      // Another request may have moved the run past seq while this one waited.
      if (run.next > seq || run.closed) return this.get(seq);
      while (run.next <= seq) {
        let r: IteratorResult<Batch>;
        try {
          r = await run.it.next();
        } catch (e) {
          // A failed run is dropped: its iterator would next say "done", which is not the end of
          // the data. The next request for this seq starts a new run and meets the error again.
          run.closed = true;
          this.runs = this.runs.filter((x) => x !== run);
          throw e;
        }
        if (r.done) {
          this.total = run.next;
          this.runs = this.runs.filter((x) => x !== run);
          run.closed = true;
          return null;
        }
        const b = r.value;
        this.produced++;
        run.next = b.seq + 1;
        if (run.next % this.every === 0) this.checkpoints.set(run.next, run.pipeline.state()!);
        this.remember(b);
        if (b.seq === seq) return b;
      }
      return this.cache.get(seq) ?? null;
    });
    run.busy = step.catch(() => undefined);
    return step;
  }

  /** Keeps the run nearest the fastest client up to `prefetch` batches ahead of it. */
  private prefetchAhead(): void {
    if (this.prefetch === 0) return;
    const target = Math.min(this.highest + this.prefetch, this.total! - 1);
    if (this.cache.has(target)) return;
    const run = this.runs.filter((r) => !r.closed && r.next <= target).sort((x, y) => y.next - x.next)[0];
    if (run === undefined || target - run.next > this.cacheBatches) return;
    this.advance(run, target).catch(() => undefined);
  }
}
