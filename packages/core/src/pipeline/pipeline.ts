/**
 * The pipeline façade: a `Pipeline` is a plan plus options; each iteration or subscription runs
 * it. Setting a run up (files, backend, stages) is pipeline/setup.ts; its counters
 * pipeline/metrics.ts; resuming pipeline/resume.ts.
 */
import { Observable, defer, finalize, from, mergeMap, type Subscription } from 'rxjs';
import { loadPlan, SluiceError, type BackendSpec, type Plan, type PlanSpec, type PlanState } from '@sluice/ops';
import type { Batch } from '../batch/index.js';
import { fitProbe, PROBE_STEADY_MS, probePrefix, type Measurement, type ProbePoint } from '../placement/calibration.js';
import { epochRows } from '../stream/source.js';
import type { Flow } from '../stream/operators.js';
import { copyMetrics, emptyMetrics, type PipelineMetrics } from './metrics.js';
import { checkOptions } from './options.js';
import { stateAfter, type IteratorState } from './resume.js';
import { backendSpecOf, buildStages, openRun, prepareRun, type PipelineInfo, type PipelineOptions, type RunSetup } from './setup.js';

export type { IteratorState } from './resume.js';
export type { PipelineMetrics } from './metrics.js';
export type { PipelineInfo, PipelineOptions } from './setup.js';

/**
 * A preprocessing pipeline over Parquet files: iterate it with `for await`, or subscribe to
 * `observable()`. Each iteration or subscription is a run from the start (or from `resume`).
 *
 * @example
 * const p = pipeline(plan, { input: 'data/*.parquet' });
 * for await (const b of p) train(b.dense.data, b.sparse, b.labels);
 */
export class Pipeline implements AsyncIterable<Batch> {
  readonly plan: Plan;
  private current: IteratorState | null = null;
  private info_: Promise<PipelineInfo> | null = null;
  private fit: PlanState | null = null;
  private _metrics = emptyMetrics();
  /** The latest run's flow: what waits in its prefetch buffer, and how long the source waited on the consumer. */
  private flow: Flow | null = null;

  private readonly options: PipelineOptions;

  constructor(plan: PlanSpec | Plan | string, options: PipelineOptions = {}) {
    this.plan = loadPlan(plan);
    this.options = checkOptions(options);
  }

  /** Opens the files (once) and type-checks the plan against them. */
  info(): Promise<PipelineInfo> {
    this.info_ ??= this.open();
    return this.info_;
  }

  /** The resumable position after the last batch taken by the consumer (or the start). */
  state(): IteratorState | null {
    return this.current;
  }

  /** Counters of the latest run. */
  metrics(): PipelineMetrics {
    const m = copyMetrics(this._metrics);
    if (this.flow !== null) {
      m.buffered = this.flow.waiting;
      m.consumerWaitMs = this.flow.consumerWaitMs;
    }
    return m;
  }

  private async open(): Promise<PipelineInfo> {
    const { info, fit } = await openRun(this.plan, this.options);
    this.fit = fit;
    return info;
  }

  /**
   * Measures a candidate backend spec for `auto` (placement/calibration.ts): runs it over a
   * prefix of the data through this pipeline's own path (same files, fitted state and options)
   * until it has run `PROBE_STEADY_MS` past its first batch, and fits its time as fixed + per row.
   */
  private async probe(info: PipelineInfo, spec: BackendSpec): Promise<Measurement> {
    const dataset = probePrefix(info.dataset, info.plan.batchSize);
    const p = new Pipeline(this.plan, { ...this.options, backend: spec, resume: undefined });
    p.info_ = Promise.resolve({ ...info, plan: { ...info.plan, epochs: 1 }, dataset, rowsPerEpoch: epochRows(dataset, { shard: info.plan.shard }) });
    p.fit = this.fit;
    const t0 = performance.now();
    let first: ProbePoint | null = null;
    let last: ProbePoint | null = null;
    for await (const b of p) {
      void b;
      last = { ms: performance.now() - t0, rows: p._metrics.rows };
      first ??= last;
      if (last.rows > first.rows && last.ms - first.ms >= PROBE_STEADY_MS) break;
    }
    if (first === null || last === null || last.rows === 0) throw new SluiceError('probe read no rows');
    return fitProbe(first, last, p._metrics.setupMs, info.plan.batchSize);
  }

  /**
   * A cold Observable of batches: each subscription is a run. The subscriber is the consumer:
   * a batch counts as taken once its `next` handler returns.
   */
  observable(): Observable<Batch> {
    return this.run((flow) => (b: Batch) => {
      this.take(b);
      flow.consumed();
    });
  }

  /** The run as an Observable; `onTaken(flow)` is called when a batch is handed to the consumer. */
  private run(onTaken: ((flow: Flow) => (b: Batch) => void) | null): Observable<Batch> {
    const spec = backendSpecOf(this.plan, this.options.backend);
    return defer(() => from(this.info())).pipe(
      // A backend finished after the run was cancelled is disposed at once (no stray worker pool).
      mergeMap(
        (info) =>
          new Observable<RunSetup>((sub) => {
            let cancelled = false;
            prepareRun(info, spec, this.options.optimize, this.fit!, (s) => this.probe(info, s))
              .then((setup) => {
                if (cancelled) {
                  void setup.backend.dispose();
                  return;
                }
                sub.next(setup);
                sub.complete();
              })
              .catch((e: unknown) => sub.error(e));
            return () => {
              cancelled = true;
            };
          }),
      ),
      mergeMap((setup) => {
        const stages = buildStages(setup, this.plan, spec, this.fit!, this.options);
        this._metrics = stages.metrics;
        this.current = stages.state;
        const { flow } = stages;
        this.flow = flow;
        const m = stages.metrics;
        const taken = onTaken?.(flow);
        return new Observable<Batch>((sub) => {
          const inner: Subscription = stages.batches.subscribe({
            next: (b) => {
              m.batches++;
              m.maxBuffered = Math.max(m.maxBuffered, flow.maxQueued);
              sub.next(b);
              taken?.(b);
            },
            error: (e) => sub.error(e),
            complete: () => sub.complete(),
          });
          const onAbort = (): void => sub.error(abortReason(this.options.signal!));
          this.options.signal?.addEventListener('abort', onAbort, { once: true });
          if (this.options.signal?.aborted) onAbort();
          return () => {
            this.options.signal?.removeEventListener('abort', onAbort);
            inner.unsubscribe();
          };
        }).pipe(finalize(() => stages.finish()));
      }),
    );
  }

  private take(b: Batch): void {
    this.current = stateAfter(this.current!, b);
  }

  /**
   * Iterates the batches of a run. The body of the `for await` loop is the consumer: the
   * pipeline keeps at most `prefetch` batches ready ahead of it. Breaking out stops the run.
   */
  [Symbol.asyncIterator](): AsyncIterator<Batch> {
    const queue: Batch[] = [];
    let done = false;
    let failure: unknown = null;
    let wake: (() => void) | null = null;
    let flowRef: Flow | null = null;
    const signal = (): void => {
      const w = wake;
      wake = null;
      w?.();
    };
    const sub = this.run((flow) => {
      flowRef = flow;
      return () => undefined;
    }).subscribe({
      next: (b) => {
        queue.push(b);
        signal();
      },
      error: (e) => {
        failure = e;
        done = true;
        signal();
      },
      complete: () => {
        done = true;
        signal();
      },
    });
    return {
      next: async (): Promise<IteratorResult<Batch>> => {
        for (;;) {
          // An abort stops delivery at once; a data error still lets the good batches before it out.
          if (this.options.signal?.aborted) {
            queue.length = 0;
            sub.unsubscribe();
            throw abortReason(this.options.signal);
          }
          if (queue.length > 0) {
            const b = queue.shift()!;
            this.take(b);
            flowRef?.consumed();
            return { done: false, value: b };
          }
          if (failure !== null) {
            const f = failure;
            failure = null;
            sub.unsubscribe();
            throw f;
          }
          if (done) return { done: true, value: undefined };
          await new Promise<void>((r) => {
            wake = r;
          });
        }
      },
      return: async (): Promise<IteratorResult<Batch>> => {
        done = true;
        queue.length = 0;
        sub.unsubscribe();
        // A next() still waiting (a consumer that stops another task's loop) ends too, done.
        signal();
        return { done: true, value: undefined };
      },
    };
  }
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new SluiceError('aborted');
}

/**
 * Builds the usual chain — Parquet source, preprocess on the plan's backend, batch, bounded
 * prefetch — from a JSON plan.
 *
 * @example
 * import { pipeline } from '@sluice/core';
 * for await (const batch of pipeline('plan.json', { input: 'train.parquet' })) {
 *   console.log(batch.rows, batch.dense.dim, batch.sparse.keys.length);
 * }
 */
export function pipeline(plan: PlanSpec | Plan | string, options: PipelineOptions = {}): Pipeline {
  return new Pipeline(plan, options);
}
