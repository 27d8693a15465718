import {
  Observable,
  catchError,
  concatMap,
  from,
  map,
  mergeMap,
  of,
  throwError,
  type ObservableInput,
  type OperatorFunction,
  type MonoTypeOperatorFunction,
} from 'rxjs';
import { SluiceError } from '@sluice/ops';
import { assembleBatch, type Batch, type BatchLayout, type ProcessedChunk, type Segment, type SlotLender } from '../batch/index.js';
import type { Chunk, Cursor } from './source.js';

/**
 * The demand channel between the end of a pipeline and its source.
 *
 * RxJS pushes; a data loader must not read faster than its trainer eats. The source asks the
 * flow before reading each chunk; the batch stage reports the batches each chunk produced; the
 * consumer reports each batch it takes. The source reads only while (chunks in flight + batches
 * waiting) < limit, and since a chunk holds at most one batch's rows, no more than `limit`
 * batches ever wait.
 *
 * @example
 * const flow = new Flow(4);
 * source(() => readChunks(ds, pool, opts), flow)
 *   .pipe(preprocess(run), batch({ layout, batchSize: 8192, dropLast: false }, flow), prefetch(flow))
 *   .subscribe((b) => train(b));
 */
export class Flow {
  private inFlight = 0;
  private queued = 0;
  private waiters: Array<() => void> = [];
  /** Most batches ever waiting at once (tests assert it never exceeds `limit`). */
  maxQueued = 0;
  /** Whether the source is paused, waiting for the flow to open. */
  private paused = false;
  /**
   * Time the source has spent paused while made batches waited for the consumer, ms (finished
   * stretches). A pause with no batch waiting is the preprocess stage's chunks in flight, not the
   * consumer, and does not count.
   */
  private consumerWait = 0;
  /** When the stretch in progress began, or null. */
  private consumerSince: number | null = null;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`prefetch limit must be a positive integer, got ${limit}`);
  }

  /** True when the source may read another chunk. */
  get open(): boolean {
    return this.inFlight + this.queued < this.limit;
  }

  /** Batches produced and not yet taken by the consumer. */
  get waiting(): number {
    return this.queued;
  }

  /** Time the source has waited for the consumer to take batches so far (a wait in progress included), ms. */
  get consumerWaitMs(): number {
    return this.consumerWait + (this.consumerSince === null ? 0 : performance.now() - this.consumerSince);
  }

  /** Calls `cb` once the flow is open (at once if it is); returns a cancel function. */
  whenOpen(cb: () => void): () => void {
    if (this.open) {
      cb();
      return () => undefined;
    }
    this.paused = true;
    this.track();
    this.waiters.push(cb);
    return () => {
      this.waiters = this.waiters.filter((w) => w !== cb);
      if (this.waiters.length === 0) {
        this.paused = false;
        this.track();
      }
    };
  }

  /** The source emitted a chunk that can complete up to `weight` batches. */
  chunkOut(weight: number): void {
    this.inFlight += weight;
  }

  /** The batch stage finished a chunk of `weight`, producing `batches` batches. */
  chunkDone(weight: number, batches: number): void {
    this.inFlight -= weight;
    this.queued += batches;
    if (this.queued > this.maxQueued) this.maxQueued = this.queued;
    this.wake();
  }

  /** The consumer took a batch. */
  consumed(): void {
    this.queued--;
    this.wake();
  }

  private wake(): void {
    if (this.open) this.paused = false;
    this.track();
    while (this.open && this.waiters.length > 0) this.waiters.shift()!();
  }

  /** Starts or ends a stretch of consumer wait: the source paused while batches wait to be taken. */
  private track(): void {
    const waiting = this.paused && this.queued > 0;
    if (waiting && this.consumerSince === null) this.consumerSince = performance.now();
    else if (!waiting && this.consumerSince !== null) {
      this.consumerWait += performance.now() - this.consumerSince;
      this.consumerSince = null;
    }
  }
}

/** A chunk can complete one full batch, plus the epoch's partial batch when it ends an epoch. */
export const chunkWeight = (c: { lastInEpoch: boolean }): number => (c.lastInEpoch ? 2 : 1);

const isPromise = <T>(x: unknown): x is Promise<T> => typeof (x as { then?: unknown })?.then === 'function';

/**
 * A cold Observable over a (sync or async) iterator of chunks that reads the next chunk only when
 * the flow is open.
 *
 * Unsubscribing stops reading at once and closes the iterator (releasing files).
 *
 * @example
 * source(() => readChunks(ds, pool, opts), flow).subscribe((chunk) => console.log(chunk.rows));
 */
export function source<T extends { lastInEpoch: boolean }>(open: () => Iterator<T> | AsyncIterator<T>, flow?: Flow): Observable<T> {
  return new Observable<T>((subscriber) => {
    let it: Iterator<T> | AsyncIterator<T>;
    try {
      it = open();
    } catch (e) {
      subscriber.error(e);
      return undefined;
    }
    let closed = false;
    let busy = false;
    let cancelWait: (() => void) | null = null;
    const handle = (r: IteratorResult<T>): boolean => {
      if (closed) return false;
      if (r.done) {
        closed = true;
        subscriber.complete();
        return false;
      }
      flow?.chunkOut(chunkWeight(r.value));
      subscriber.next(r.value);
      return true;
    };
    const fail = (e: unknown): void => {
      if (!closed) {
        closed = true;
        subscriber.error(e);
      }
    };
    const pump = (): void => {
      cancelWait = null;
      while (!closed && !busy) {
        if (flow && !flow.open) {
          cancelWait = flow.whenOpen(pump);
          return;
        }
        let r: IteratorResult<T> | Promise<IteratorResult<T>>;
        try {
          r = it.next();
        } catch (e) {
          fail(e);
          return;
        }
        if (isPromise<IteratorResult<T>>(r)) {
          busy = true;
          r.then((res) => {
            busy = false;
            if (handle(res)) pump();
          }, fail);
          return;
        }
        if (!handle(r)) return;
      }
    };
    pump();
    return () => {
      closed = true;
      cancelWait?.();
      // Closing the generator runs its finally blocks; errors there have nowhere to go.
      try {
        const r = it.return?.();
        if (isPromise(r)) r.catch(() => undefined);
      } catch {
        /* already closed */
      }
    };
  });
}

/**
 * Runs each chunk through `run` (a backend), `concurrency` at a time, delivering results in order.
 *
 * Errors that are not already Sluice errors are wrapped with the chunk's file and row group.
 *
 * @example
 * const processed$ = chunks$.pipe(preprocess((c) => backend.run(c.columns, c.locate), 2));
 * processed$.subscribe(({ columns }) => console.log([...columns.keys()]));
 */
export function preprocess<I extends { locate: Chunk['locate'] }, O>(run: (chunk: I) => ObservableInput<O>, concurrency = 1): OperatorFunction<I, O> {
  const one = (chunk: I): Observable<O> => {
    let out: ObservableInput<O>;
    try {
      out = run(chunk);
    } catch (e) {
      return throwError(() => wrap(e, chunk));
    }
    return from(out).pipe(catchError((e: unknown) => throwError(() => wrap(e, chunk))));
  };
  if (concurrency <= 1) return concatMap(one);
  // Up to `concurrency` chunks run at once; results are re-ordered to input order. A failure waits
  // its turn too, so every good chunk before the bad one is still delivered.
  return (input) =>
    new Observable<O>((subscriber) => {
      const ready = new Map<number, { ok: true; value: O } | { ok: false; error: unknown }>();
      let nextOut = 0;
      return input
        .pipe(
          map((chunk, i) => ({ chunk, i })),
          mergeMap(
            ({ chunk, i }) =>
              one(chunk).pipe(
                map((value) => ({ i, r: { ok: true as const, value } })),
                catchError((error: unknown) => of({ i, r: { ok: false as const, error } })),
              ),
            concurrency,
          ),
        )
        .subscribe({
          next: ({ i, r }) => {
            ready.set(i, r);
            while (ready.has(nextOut)) {
              const v = ready.get(nextOut)!;
              ready.delete(nextOut++);
              if (!v.ok) {
                subscriber.error(v.error);
                return;
              }
              subscriber.next(v.value);
            }
          },
          error: (e) => subscriber.error(e),
          // mergeMap completes after every inner result has been delivered, so nothing is left in `ready`.
          complete: () => subscriber.complete(),
        });
    });
}

function wrap(e: unknown, chunk: { locate: Chunk['locate'] }): unknown {
  if (e instanceof SluiceError) return e;
  return new SluiceError(`preprocessing failed: ${(e as Error)?.message ?? String(e)}`, chunk.locate(0), { cause: e });
}

/**
 * How the `batch` stage cuts processed chunks into batches: their layout and size.
 *
 * @example
 * const opts: BatchOptions = { layout: batchLayout(plan), batchSize: 8192, dropLast: true };
 * processed$.pipe(batch(opts, flow)).subscribe((b) => console.log(b.seq, b.rows));
 */
export interface BatchOptions {
  readonly layout: BatchLayout;
  readonly batchSize: number;
  readonly dropLast: boolean;
  /** Sequence number of the first batch (a resumed run continues the count). */
  readonly firstSeq?: number;
  /** Flush at each window's end too, so batches never cross windows (`SourceOptions.windowBatches`). */
  readonly windowBatches?: boolean;
  /** Called with the milliseconds each batch took to assemble (for metrics). */
  readonly onAssembled?: (ms: number) => void;
  /** Shared memory for batches copied across chunk boundaries (see `assembleBatch`). */
  readonly arena?: SlotLender;
}

/** The cursor just after row `to` of a processed chunk, normalized to the next window/epoch. */
export function cursorAfter(c: ProcessedChunk, to: number): Cursor {
  const offset = c.at.offset + to;
  if (offset < c.windowRows) return { epoch: c.at.epoch, window: c.at.window, offset };
  if (c.lastInEpoch) return { epoch: c.at.epoch + 1, window: 0, offset: 0 };
  return { epoch: c.at.epoch, window: c.at.window + 1, offset: 0 };
}

/**
 * Cuts processed chunks into batches of `batchSize` rows, in order.
 *
 * Batches never span epochs: an epoch's last rows form a short batch, or are dropped with
 * `dropLast`.
 *
 * @example
 * processed$.pipe(batch({ layout, batchSize: 8192, dropLast: false }, flow))
 */
export function batch(opts: BatchOptions, flow?: Flow): OperatorFunction<ProcessedChunk, Batch> {
  return (input) =>
    new Observable<Batch>((subscriber) => {
      let segments: Segment[] = [];
      let rows = 0;
      let seq = opts.firstSeq ?? 0;
      let epoch: number | null = null;
      let produced = 0;
      const emit = (): void => {
        const last = segments[segments.length - 1]!;
        const t0 = opts.onAssembled ? performance.now() : 0;
        const b = assembleBatch(opts.layout, segments, seq++, cursorAfter(last.chunk, last.to), opts.arena);
        opts.onAssembled?.(performance.now() - t0);
        segments = [];
        rows = 0;
        produced++;
        subscriber.next(b);
      };
      const flush = (): void => {
        if (rows === 0) return;
        if (opts.dropLast) {
          segments = [];
          rows = 0;
          return;
        }
        emit();
      };
      return input.subscribe({
        next(pc) {
          produced = 0;
          try {
            if (epoch !== null && pc.at.epoch !== epoch) flush();
            epoch = pc.at.epoch;
            for (let from = 0; from < pc.rows;) {
              const take = Math.min(opts.batchSize - rows, pc.rows - from);
              segments.push({ chunk: pc, from, to: from + take });
              rows += take;
              from += take;
              if (rows === opts.batchSize) emit();
            }
            if (pc.lastInEpoch || (opts.windowBatches === true && pc.at.offset + pc.rows === pc.windowRows)) flush();
          } catch (e) {
            subscriber.error(e);
            return;
          }
          flow?.chunkDone(chunkWeight(pc), produced);
        },
        error: (e) => subscriber.error(e),
        complete() {
          produced = 0;
          try {
            flush();
          } catch (e) {
            subscriber.error(e);
            return;
          }
          if (flow && produced > 0) flow.chunkDone(0, produced);
          subscriber.complete();
        },
      });
    });
}

/**
 * The consumer end of a flow: each batch delivered downstream counts as taken.
 *
 * That lets the source read on. Use it when the subscriber itself is the trainer; `Pipeline`'s
 * async iterator reports consumption itself, when the loop body asks for the next batch.
 *
 * @example
 * batches$.pipe(prefetch(flow)).subscribe((b) => train(b));
 */
export function prefetch<T>(flow: Flow): MonoTypeOperatorFunction<T> {
  return (input) =>
    new Observable<T>((subscriber) =>
      input.subscribe({
        next(b) {
          subscriber.next(b);
          flow.consumed();
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      }),
    );
}
