/**
 * The lookahead cache as an RxJS stage: `lookahead` hints a pipeline's batches by their sparse
 * keys, `lookaheadBy` any stream of items by the ids a function picks out.
 */
import { Observable, type OperatorFunction } from 'rxjs';
import { LookaheadCache, type IdArray, type LookaheadOptions, type StepHints } from './cache.js';
import type { Batch } from '../batch/index.js';
import type { Flow } from '../stream/operators.js';

/** A batch with its BAGPIPE cache hints (see `LookaheadCache` for what each field means). */
export interface HintedBatch<T = Batch> {
  readonly batch: T;
  readonly hints: StepHints;
}

export interface LookaheadOperatorOptions extends Omit<LookaheadOptions, 'tables'> {
  /** Sparse keys to treat as embedding tables, in this order (default: every key of the first batch). */
  readonly keys?: readonly string[];
  /**
   * The pipeline's flow, if any. The window holds L + 1 batches, more than a flow's prefetch limit
   * usually allows, so the operator takes each batch off the flow as it enters the window (as
   * `prefetch(flow)` does for a consumer); put it where `prefetch(flow)` would go.
   */
  readonly flow?: Flow;
}

/** How to hint a stream, decided when its first item arrives (a Batch names its keys only then). */
type Setup<T> = (first: T) => { readonly options: LookaheadOptions; readonly ids: (item: T) => readonly IdArray[] };

function hinted<T>(setup: Setup<T>, flow: Flow | undefined): OperatorFunction<T, HintedBatch<T>> {
  return (input) =>
    new Observable<HintedBatch<T>>((subscriber) => {
      let la: LookaheadCache | null = null;
      let ids: ((item: T) => readonly IdArray[]) | null = null;
      // Items in the window, oldest first: a growable ring, so emitting never shifts an array.
      let queue: Array<T | undefined> = new Array<T | undefined>(16);
      let head = 0;
      let size = 0;
      const enqueue = (item: T): void => {
        if (size === queue.length) {
          const bigger = new Array<T | undefined>(2 * queue.length);
          for (let i = 0; i < size; i++) bigger[i] = queue[(head + i) % queue.length];
          queue = bigger;
          head = 0;
        }
        queue[(head + size++) % queue.length] = item;
      };
      const dequeue = (): T => {
        const item = queue[head] as T;
        queue[head] = undefined;
        head = (head + 1) % queue.length;
        size--;
        return item;
      };
      return input.subscribe({
        next(item) {
          let h: StepHints | null;
          try {
            if (la === null) {
              const s = setup(item);
              la = new LookaheadCache(s.options);
              ids = s.ids;
            }
            h = la.push(ids!(item));
          } catch (e) {
            subscriber.error(e);
            return;
          }
          enqueue(item);
          flow?.consumed();
          if (h !== null) subscriber.next({ batch: dequeue(), hints: h });
        },
        error: (e) => subscriber.error(e),
        complete() {
          if (la !== null) {
            try {
              for (const h of la.drain()) subscriber.next({ batch: dequeue(), hints: h });
            } catch (e) {
              subscriber.error(e);
              return;
            }
          }
          subscriber.complete();
        },
      });
    });
}

/**
 * Annotates each item with BAGPIPE lookahead cache hints over the ids `ids(item)` returns (one
 * array per table). An item is emitted once the L items after it have arrived, or when the stream
 * completes; order is kept. An error upstream is passed on at once and drops the items still in
 * the window (their hints would need batches that never came). Each subscription has its own cache.
 *
 * @example
 * items$.pipe(lookaheadBy((it) => [it.userIds, it.adIds], { tables: 2, window: 200 }))
 *   .subscribe(({ batch, hints }) => trainer.prefetch(hints.tables[0].prefetch));
 */
export function lookaheadBy<T>(ids: (item: T) => readonly IdArray[], opts: LookaheadOptions & { readonly flow?: Flow }): OperatorFunction<T, HintedBatch<T>> {
  const { flow, ...options } = opts;
  // Checked at once, not on the first item: a bad window is a programming error.
  LookaheadCache.checkOptions(options);
  return hinted(() => ({ options, ids }), flow);
}

/** The ids of sparse key `k` of a batch: a view of its values, no copy. */
export function batchIds(b: Batch, k: number): BigInt64Array {
  return b.sparse.values.subarray(b.sparse.offsets[k]!, b.sparse.offsets[k + 1]!);
}

/**
 * BAGPIPE lookahead cache hints (SOSP'23 §3.2, Algorithm 1) as a pipeline stage: each batch comes
 * out with, per sparse key (embedding table), the ids to prefetch, the ids to keep cached with
 * their TTL, and the ids to evict. Window L counts batches beyond the current one; give `window`,
 * a `cacheBudget` to choose L from, or both. `hints.step` counts batches from the first one this
 * subscription sees (add the first batch's `seq` for the pipeline's numbering).
 *
 * @example
 * batches$.pipe(lookahead({ window: 200 })).subscribe(({ batch, hints }) => train(batch, hints));
 */
export function lookahead(opts: LookaheadOperatorOptions): OperatorFunction<Batch, HintedBatch<Batch>> {
  const { keys, flow, ...rest } = opts;
  LookaheadCache.checkOptions({ ...rest, tables: Math.max(1, keys?.length ?? 1) });
  return hinted((first: Batch) => {
    const names = keys ?? first.sparse.keys;
    const index = names.map((k) => {
      const i = first.sparse.keys.indexOf(k);
      if (i < 0) throw new RangeError(`lookahead: batch has no sparse key "${k}" (keys: ${first.sparse.keys.join(', ') || 'none'})`);
      return i;
    });
    if (index.length === 0) throw new RangeError('lookahead: the batches have no sparse keys to hint');
    return {
      options: { ...rest, tables: index.length },
      ids: (b: Batch) => {
        // Every batch of a pipeline has the same keys; a stream that changes them is a bug upstream.
        if (b.sparse.keys !== first.sparse.keys && b.sparse.keys.join('\0') !== first.sparse.keys.join('\0')) {
          throw new RangeError(`lookahead: batch ${b.seq} has sparse keys ${b.sparse.keys.join(', ')}, the first had ${first.sparse.keys.join(', ')}`);
        }
        return index.map((k) => batchIds(b, k));
      },
    };
  }, flow);
}
