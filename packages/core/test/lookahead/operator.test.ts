import { map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { LookaheadCache } from '../../src/lookahead/cache.js';
import type { Batch } from '../../src/batch/index.js';
import { lookahead, lookaheadBy, type HintedBatch } from '../../src/lookahead/operator.js';
import { Flow } from '../../src/stream/operators.js';

const scheduler = (): TestScheduler => new TestScheduler((a, e) => expect(a).toEqual(e));

/** A one-table item: its name and ids. */
interface Item {
  name: string;
  ids: number[];
}
const item = (name: string, ...ids: number[]): Item => ({ name, ids });
const idsOf = (it: Item): Int32Array[] => [Int32Array.from(it.ids)];
/** name:prefetch/evict of a hinted item. */
const show = (h: HintedBatch<Item>): string =>
  `${h.batch.name}@${h.hints.step}:${Array.from(h.hints.tables[0]!.prefetch as Int32Array).join(',')}/${Array.from(h.hints.tables[0]!.evict as Int32Array).join(',')}`;

// BAGPIPE Figure 6 (one batch beyond the current one).
const fig6 = { a: item('a', 3, 9), b: item('b', 3, 4), c: item('c', 3, 6), d: item('d', 6, 1) };

describe('lookaheadBy operator (marbles)', () => {
  it('emits each item once the L items after it have arrived, in order, and the rest at completion', () => {
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('-a-b-c-d|', fig6);
      const out = src.pipe(lookaheadBy(idsOf, { tables: 1, window: 1 }), map(show));
      expectObservable(out).toBe('---w-x-y(z|)', { w: 'a@0:3,9/9', x: 'b@1:4/4', y: 'c@2:6/3', z: 'd@3:1/6,1' });
      expectSubscriptions(src.subscriptions).toBe('^-------!');
    });
  });

  it('shrinks the window at the end of the stream: a short stream comes out whole at completion', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const src = cold('-a-b-c---|', fig6);
      expectObservable(src.pipe(lookaheadBy(idsOf, { tables: 1, window: 5 }), map(show))).toBe('---------(xyz|)', {
        // With the whole stream in view, 3 is kept from a to c and evicted only after c.
        x: 'a@0:3,9/9',
        y: 'b@1:4/4',
        z: 'c@2:6/3,6',
      });
    });
  });

  it('gives the same hints as LookaheadCache.run, item for item', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const items = { a: item('a', 1, 2, 1), b: item('b', 2, 5), c: item('c', 7), d: item('d', 1, 7, 5), e: item('e', 2) };
      const want = LookaheadCache.run(Object.values(items).map(idsOf), { tables: 1, window: 2 });
      const src = cold('-a-b-c-d-e|', items);
      expectObservable(
        src.pipe(
          lookaheadBy(idsOf, { tables: 1, window: 2 }),
          map((h) => h.hints),
        ),
      ).toBe('-----a-b-c(de|)', {
        a: want[0],
        b: want[1],
        c: want[2],
        d: want[3],
        e: want[4],
      });
    });
  });

  it('passes an upstream error on at once and drops the items still in the window', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const src = cold('-a-b-c-#', fig6, new Error('disk gone'));
      expectObservable(src.pipe(lookaheadBy(idsOf, { tables: 1, window: 1 }), map(show))).toBe(
        '---w-x-#',
        { w: 'a@0:3,9/9', x: 'b@1:4/4' },
        new Error('disk gone'),
      );
    });
  });

  it('errors, and unsubscribes upstream, when an item has the wrong number of tables', () => {
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('-a-b-c|', { a: [Int32Array.of(1)], b: [Int32Array.of(2), Int32Array.of(3)], c: [Int32Array.of(4)] });
      expectObservable(
        src.pipe(
          lookaheadBy((x: Int32Array[]) => x, { tables: 1, window: 1 }),
          map((h) => h.hints.step),
        ),
      ).toBe('---#', undefined, new RangeError('expected ids for 1 tables, got 2'));
      expectSubscriptions(src.subscriptions).toBe('^--!');
    });
  });

  it('completes at once on an empty stream', () => {
    scheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<Item>('---|').pipe(lookaheadBy(idsOf, { tables: 1, window: 3 }))).toBe('---|');
    });
  });

  it('stops when the consumer unsubscribes', () => {
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('-a-b-c-d|', fig6);
      expectObservable(src.pipe(lookaheadBy(idsOf, { tables: 1, window: 1 }), map(show)), '^---!').toBe('---w', { w: 'a@0:3,9/9' });
      expectSubscriptions(src.subscriptions).toBe('^---!');
    });
  });

  it('holds items back until a cache budget has fixed L (BAGPIPE §3.5)', () => {
    scheduler().run(({ cold, expectObservable }) => {
      // Distinct ids: a → 2, a+b → 3, a+b+c → 4 > 3: L = 2 is fixed when c arrives.
      const items = { a: item('a', 1, 2), b: item('b', 2, 3), c: item('c', 4), d: item('d', 1) };
      const src = cold('-a-b-c-d|', items);
      expectObservable(
        src.pipe(
          lookaheadBy(idsOf, { tables: 1, cacheBudget: { ids: 3 } }),
          map((h) => `${h.batch.name}${h.hints.window}`),
        ),
      ).toBe('-----a-b(cd|)', {
        a: 'a2',
        b: 'b2',
        c: 'c2',
        d: 'd2',
      });
    });
  });

  it('keeps a separate cache per subscription', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const hinted = cold('-a-b|', fig6).pipe(lookaheadBy(idsOf, { tables: 1, window: 1 }), map(show));
      expectObservable(hinted).toBe('---x(y|)', { x: 'a@0:3,9/9', y: 'b@1:4/3,4' });
      expectObservable(hinted).toBe('---x(y|)', { x: 'a@0:3,9/9', y: 'b@1:4/3,4' });
    });
  });

  it('rejects bad options when the operator is made, not later', () => {
    expect(() => lookaheadBy(idsOf, { tables: 1, window: -2 })).toThrow(/window must be a non-negative integer/);
    expect(() => lookahead({})).toThrow(/window \(L\), a cacheBudget/);
  });

  it('takes each batch off the flow as it enters the window, so a window longer than the prefetch limit cannot stall the source', () => {
    const flow = new Flow(2);
    flow.chunkOut(1);
    flow.chunkDone(1, 2);
    expect(flow.open).toBe(false);
    const seen: string[] = [];
    scheduler().run(({ cold, flush }) => {
      cold('-a-b|', fig6)
        .pipe(lookaheadBy(idsOf, { tables: 1, window: 5, flow }))
        .subscribe((h) => seen.push(h.batch.name));
      flush();
    });
    expect(flow.waiting).toBe(0);
    expect(flow.open).toBe(true);
    expect(seen).toEqual(['a', 'b']);
  });
});

/** A batch with sparse keys and their ids (rows = 1, no dense features). */
function batch(seq: number, sparse: Record<string, bigint[]>): Batch {
  const keys = Object.keys(sparse);
  const offsets = new Int32Array(keys.length + 1);
  keys.forEach((k, i) => {
    offsets[i + 1] = offsets[i]! + sparse[k]!.length;
  });
  return {
    seq,
    epoch: 0,
    rows: 1,
    dense: { names: [], features: [], dim: 0, data: new Float32Array(0) },
    sparse: { keys, lengths: Int32Array.from(keys, (k) => sparse[k]!.length), offsets, values: BigInt64Array.from(keys.flatMap((k) => sparse[k]!)) },
    labels: null,
    end: { epoch: 0, window: 0, offset: seq + 1 },
  };
}

describe('lookahead operator on pipeline batches (marbles)', () => {
  const batches = {
    a: batch(7, { C1: [3n, 9n], C2: [1n << 40n] }),
    b: batch(8, { C1: [3n, 4n], C2: [1n << 40n, -5n] }),
    c: batch(9, { C1: [3n, 6n], C2: [] }),
  };
  const ids = (a: unknown): string => Array.from(a as BigInt64Array, String).join(',');

  it('hints every sparse key of the batches, one table each, and passes the batch through', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const out = cold('-a-b-c|', batches).pipe(
        lookahead({ window: 1 }),
        map((h) => `${h.batch.seq}:${ids(h.hints.tables[0]!.prefetch)}|${ids(h.hints.tables[1]!.prefetch)}>${ids(h.hints.tables[1]!.evict)}`),
      );
      expectObservable(out).toBe('---x-y(z|)', { x: '7:3,9|1099511627776>', y: '8:4|-5>1099511627776,-5', z: '9:6|>' });
    });
  });

  it('hints only the keys asked for, in that order', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const out = cold('-a-b|', batches).pipe(
        lookahead({ window: 0, keys: ['C2'] }),
        map((h) => `${h.hints.tables.length}:${ids(h.hints.tables[0]!.prefetch)}`),
      );
      expectObservable(out).toBe('-x-y|', { x: '1:1099511627776', y: '1:1099511627776,-5' });
    });
  });

  it('errors with the key name when a requested key is missing', () => {
    scheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-a|', batches).pipe(lookahead({ window: 1, keys: ['C9'] }))).toBe(
        '-#',
        undefined,
        new RangeError('lookahead: batch has no sparse key "C9" (keys: C1, C2)'),
      );
    });
  });
});
