import { catchError, map, of, take, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { int32Column, int64Column, type Column } from '@sluice/ops';
import { DataError } from '@sluice/ops';
import { mergePacks, packRows, type BatchLayout, type ProcessedChunk } from '../../src/batch/index.js';
import { chunkCuts } from '../../src/stream/source.js';
import { Flow, batch, cursorAfter, preprocess, source } from '../../src/stream/operators.js';

// Chunks of a one-window, one-epoch stream: dense `x` = row number, sparse `k` = row number.
function chunk(first: number, rows: number, windowRows: number, lastInEpoch = false, epoch = 0): ProcessedChunk {
  const x = Int32Array.from({ length: rows }, (_, i) => first + i);
  const k = BigInt64Array.from({ length: rows }, (_, i) => BigInt(first + i));
  return {
    outputs: new Map<string, Column>([
      ['x', int32Column(x)],
      ['k', int64Column(k)],
    ]),
    label: null,
    rows,
    at: { epoch, window: 0, offset: first },
    windowRows,
    lastInEpoch,
    locate: (row) => ({ file: 'f.parquet', rowGroup: 0, row: first + row }),
  };
}

const layout: BatchLayout = { dense: [{ name: 'x', offset: 0, width: 1, vector: false }], denseNames: ['x'], dim: 1, sparseKeys: ['k'], label: false };
const rowsOf = (b: { dense: { data: Float32Array } }): string => Array.from(b.dense.data).join(',');

const scheduler = (): TestScheduler => new TestScheduler((a, e) => expect(a).toEqual(e));

describe('batch operator (marbles)', () => {
  it('cuts chunks into batches in order, across chunk boundaries, and flushes the epoch tail', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const chunks = cold('-a-b-c|', { a: chunk(0, 3, 8), b: chunk(3, 3, 8), c: chunk(6, 2, 8, true) });
      const out = chunks.pipe(
        batch({ layout, batchSize: 4, dropLast: false }),
        map((b) => `${b.seq}:${rowsOf(b)}`),
      );
      // batch 0 completes at b (rows 0-3); batch 1 = rows 4-7 completes at c, the epoch's end.
      expectObservable(out).toBe('---x-y|', { x: '0:0,1,2,3', y: '1:4,5,6,7' });
    });
  });

  it('emits a short final batch, or drops it with dropLast', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const chunks = cold('-a-b-----|', { a: chunk(0, 3, 5), b: chunk(3, 2, 5, true) });
      expectObservable(
        chunks.pipe(
          batch({ layout, batchSize: 4, dropLast: false }),
          map((b) => rowsOf(b)),
        ),
      ).toBe('---(xy)--|', { x: '0,1,2,3', y: '4' });
      expectObservable(
        chunks.pipe(
          batch({ layout, batchSize: 4, dropLast: true }),
          map((b) => rowsOf(b)),
        ),
      ).toBe('---x-----|', { x: '0,1,2,3' });
    });
  });

  it('never lets a batch span two epochs', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const chunks = cold('-a-b|', { a: chunk(0, 3, 3, true, 0), b: chunk(0, 3, 3, true, 1) });
      expectObservable(
        chunks.pipe(
          batch({ layout, batchSize: 4, dropLast: false }),
          map((b) => `${b.epoch}:${rowsOf(b)}`),
        ),
      ).toBe('-x-y|', { x: '0:0,1,2', y: '1:0,1,2' });
    });
  });

  it('records the cursor after each batch (the resume point)', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const chunks = cold('-a-b-----|', { a: chunk(0, 3, 6), b: chunk(3, 3, 6, true) });
      const out = chunks.pipe(
        batch({ layout, batchSize: 4, dropLast: false, firstSeq: 7 }),
        map((b) => `${b.seq}@${b.end.epoch}/${b.end.window}/${b.end.offset}`),
      );
      expectObservable(out).toBe('---(xy)--|', { x: '7@0/0/4', y: '8@1/0/0' });
    });
  });

  it('propagates an upstream error after the batches already made', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const err = new DataError('bad row', { file: 'f.parquet', row: 5 });
      const chunks = cold('-a-b-#', { a: chunk(0, 2, 8), b: chunk(2, 2, 8) }, err);
      expectObservable(chunks.pipe(batch({ layout, batchSize: 4, dropLast: false }), map(rowsOf))).toBe('---x-#', { x: '0,1,2,3' }, err);
    });
  });

  it('unsubscribes upstream when the consumer stops early', () => {
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const chunks = cold('-a-b-c-d|', { a: chunk(0, 2, 8), b: chunk(2, 2, 8), c: chunk(4, 2, 8), d: chunk(6, 2, 8, true) });
      expectObservable(chunks.pipe(batch({ layout, batchSize: 2, dropLast: false }), take(2), map(rowsOf))).toBe('-x-(y|)', { x: '0,1', y: '2,3' });
      expectSubscriptions(chunks.subscriptions).toBe('^--!');
    });
  });
});

describe('preprocess operator (marbles)', () => {
  it('keeps chunk order and wraps a failing op with where it happened', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const chunks = cold('-a-b-c|', { a: chunk(0, 2, 6), b: chunk(2, 2, 6), c: chunk(4, 2, 6, true) });
      const out = chunks.pipe(
        preprocess((c) => (c.at.offset === 2 ? throwError(() => new Error('kernel exploded')) : of(c))),
        map((c) => String(c.at.offset)),
        catchError((e: Error) => of(`${e.name}: ${e.message}`)),
      );
      // Chunk a passes; chunk b fails and the error names the file and row group; c never runs.
      expectObservable(out).toBe('-x-(y|)', { x: '0', y: 'SluiceError: file f.parquet, row group 0, row 2: preprocessing failed: kernel exploded' });
    });
  });
});

describe('source + flow: bounded prefetch (marbles)', () => {
  it('reads only while fewer than `limit` batches wait, whatever the consumer speed', () => {
    scheduler().run(({ hot, expectObservable }) => {
      const flow = new Flow(2);
      let reads = 0;
      const chunks = Array.from({ length: 6 }, (_, i) => chunk(i * 4, 4, 24, i === 5));
      const batches$ = source(() => {
        const it = chunks[Symbol.iterator]();
        return {
          next: () => {
            const r = it.next();
            if (!r.done) reads++;
            return r;
          },
        };
      }, flow).pipe(
        preprocess((c) => of(c)),
        batch({ layout, batchSize: 4, dropLast: false }, flow),
        map((b) => String(b.seq)),
      );
      // A slow consumer takes one batch at frames 5, 10, 15, 20, 25. Two batches are ready at once;
      // each take lets exactly one more chunk be read. The end of the data shows on the next pull,
      // after the consumer takes batch 4.
      hot('-----x----x----x----x----x').subscribe(() => flow.consumed());
      expectObservable(batches$).toBe('(01)-2----3----4----5----|');
      scheduler().flush();
      expect(flow.maxQueued).toBeLessThanOrEqual(2);
      expect(reads).toBeLessThanOrEqual(6);
    });
  });

  it('stops reading and closes the iterator on unsubscribe', () => {
    const flow = new Flow(1);
    let reads = 0;
    let closed = false;
    const sub = source(
      () => ({
        next: () => {
          reads++;
          return { done: false, value: chunk(0, 1, 1) };
        },
        return: () => {
          closed = true;
          return { done: true, value: undefined };
        },
      }),
      flow,
    ).subscribe();
    expect(reads).toBe(1); // the flow allows one chunk in flight and nobody settles it
    sub.unsubscribe();
    flow.chunkDone(1, 0);
    expect(reads).toBe(1);
    expect(closed).toBe(true);
  });

  it('turns an iterator failure into an error notification', async () => {
    const err = new Error('disk on fire');
    const seen = await new Promise((resolve) => source(() => ({ next: () => Promise.reject(err) })).subscribe({ error: resolve }));
    expect(seen).toBe(err);
  });

  it('cursorAfter moves to the next window, and the next epoch after the last chunk', () => {
    expect(cursorAfter(chunk(0, 4, 8), 2)).toEqual({ epoch: 0, window: 0, offset: 2 });
    expect(cursorAfter(chunk(4, 4, 8), 4)).toEqual({ epoch: 0, window: 1, offset: 0 });
    expect(cursorAfter(chunk(4, 4, 8, true), 4)).toEqual({ epoch: 1, window: 0, offset: 0 });
  });
});

describe('preprocess with concurrency (marbles)', () => {
  it('runs chunks at once but emits in input order', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const chunks = cold('(abc|)', { a: chunk(0, 1, 3), b: chunk(1, 1, 3), c: chunk(2, 1, 3, true) });
      // Chunk a takes 5 frames, b 1 frame, c 2 frames: b and c finish first but wait for a.
      const delays: Record<number, string> = { 0: '-----(x|)', 1: '-(x|)', 2: '--(x|)' };
      const out = chunks.pipe(
        preprocess((c) => cold(delays[c.at.offset]!, { x: c.at.offset }), 3),
        map(String),
      );
      expectObservable(out).toBe('-----(012|)');
    });
  });
});

describe('preprocess with concurrency: errors keep their place (marbles)', () => {
  it('delivers the good chunks before a failed one even when the failure finishes first', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const chunks = cold('(ab|)', { a: chunk(0, 1, 2), b: chunk(1, 1, 2, true) });
      const out = chunks.pipe(
        // Chunk a takes 4 frames; chunk b fails after 1.
        preprocess((c) => (c.at.offset === 0 ? cold('----(x|)', { x: 'a' }) : cold('-#', undefined, new Error('b failed'))), 2),
        catchError((e: Error) => of(`E:${e.message}`)),
      );
      expectObservable(out).toBe('----(xy|)', { x: 'a', y: 'E:file f.parquet, row group 0, row 1: preprocessing failed: b failed' });
    });
  });
});

describe('packed chunks', () => {
  // Lists with nulls at both levels, int32 and int64 ids, a 2-wide vector and a label: every path of packRows.
  const wide: BatchLayout = {
    dense: [
      { name: 'x', offset: 0, width: 1, vector: false },
      { name: 'v', offset: 1, width: 2, vector: true },
    ],
    denseNames: ['x', 'v:0', 'v:1'],
    dim: 3,
    sparseKeys: ['k', 'l'],
    label: true,
  };
  function rich(first: number, rows: number): ProcessedChunk {
    const at = (i: number): number => first + i;
    const offsets = new Int32Array(rows + 1);
    for (let i = 0; i < rows; i++) offsets[i + 1] = offsets[i]! + (at(i) % 4);
    const n = offsets[rows]!;
    const child: Column = {
      type: 'int32',
      values: Int32Array.from({ length: n }, (_, j) => j * 7 - first),
      valid: Uint8Array.from({ length: n }, (_, j) => (j % 5 === 3 ? 0 : 1)),
    };
    const outputs = new Map<string, Column>([
      [
        'x',
        {
          type: 'float32',
          values: Float32Array.from({ length: rows }, (_, i) => at(i) / 3),
          valid: Uint8Array.from({ length: rows }, (_, i) => (at(i) % 6 === 0 ? 0 : 1)),
        },
      ],
      [
        'v',
        {
          type: 'fixed',
          size: 2,
          values: Float32Array.from({ length: 2 * rows }, (_, j) => first + j),
          valid: Uint8Array.from({ length: rows }, (_, i) => (at(i) % 10 === 4 ? 0 : 1)),
        },
      ],
      [
        'k',
        {
          type: 'int64',
          values: BigInt64Array.from({ length: rows }, (_, i) => BigInt(at(i)) * -3n),
          valid: Uint8Array.from({ length: rows }, (_, i) => (at(i) % 7 === 0 ? 0 : 1)),
        },
      ],
      ['l', { type: 'list', offsets, child, valid: Uint8Array.from({ length: rows }, (_, i) => (at(i) % 9 === 0 ? 0 : 1)) } as Column],
    ]);
    return {
      outputs,
      label: int32Column(Int32Array.from({ length: rows }, (_, i) => at(i) % 2)),
      rows,
      at: { epoch: 0, window: 0, offset: first },
      windowRows: 1000,
      lastInEpoch: false,
      locate: (row) => ({ file: 'f', rowGroup: 0, row: first + row }),
    };
  }
  const parts = (b: {
    rows: number;
    dense: Float32Array;
    lengths: Int32Array;
    offsets: Int32Array;
    values: BigInt64Array;
    labels: Float32Array | null;
  }): unknown[] => [b.rows, Array.from(b.dense), Array.from(b.lengths), Array.from(b.offsets), Array.from(b.values), b.labels && Array.from(b.labels)];

  it('mergePacks of row ranges of packs equals packRows of the same ranges', () => {
    const a = rich(0, 37);
    const b = rich(37, 29);
    const c = rich(66, 41);
    const pa = packRows(wide, [{ chunk: a, from: 0, to: 37 }]);
    const pb = packRows(wide, [{ chunk: b, from: 0, to: 29 }]);
    const pc = packRows(wide, [{ chunk: c, from: 0, to: 41 }]);
    for (const [fa, fb, tc] of [
      [0, 0, 41],
      [5, 3, 17],
      [36, 28, 1],
      [11, 0, 0],
    ] as const) {
      const want = packRows(wide, [
        { chunk: a, from: fa, to: 37 },
        { chunk: b, from: fb, to: 29 },
        { chunk: c, from: 0, to: tc },
      ]);
      const got = mergePacks(wide, [
        { pack: pa, from: fa, to: 37 },
        { pack: pb, from: fb, to: 29 },
        { pack: pc, from: 0, to: tc },
      ]);
      expect(parts(got), `from ${fa}, ${fb}, to ${tc}`).toEqual(parts(want));
    }
  });

  it('packRows of indexed columns (row r = dict[idx[r]]) equals packRows of the gathered columns', () => {
    const flat: BatchLayout = {
      dense: ['f32', 'i32', 'f64', 'i64'].map((name, offset) => ({ name, offset, width: 1, vector: false })),
      denseNames: ['f32', 'i32', 'f64', 'i64'],
      dim: 4,
      sparseKeys: ['s64', 's32', 'c64', 'c32', 'n32'],
      label: false,
    };
    const D = 11;
    const valid = Uint8Array.from({ length: D }, (_, j) => (j % 4 === 3 ? 0 : 1));
    const dicts = new Map<string, Column>([
      ['f32', { type: 'float32', values: Float32Array.from({ length: D }, (_, j) => j / 3), valid }],
      ['i32', { type: 'int32', values: Int32Array.from({ length: D }, (_, j) => j * 1000 - 5), valid: null }],
      ['f64', { type: 'float64', values: Float64Array.from({ length: D }, (_, j) => Math.sin(j)), valid }],
      ['i64', { type: 'int64', values: BigInt64Array.from({ length: D }, (_, j) => BigInt(j) * 12345678901n), valid }],
      ['s64', { type: 'int64', values: BigInt64Array.from({ length: D }, (_, j) => -BigInt(j) * 98765432109n), valid }],
      ['s32', { type: 'int32', values: Int32Array.from({ length: D }, (_, j) => j - 6), valid: null }],
      // Ids in [0, 2^31) with nulls: the compact (int32, -1 = null) path, as the last key too.
      ['c64', { type: 'int64', values: BigInt64Array.from({ length: D }, (_, j) => BigInt(j * 191 + 2147481000 * (j % 2))), valid }],
      ['c32', { type: 'int32', values: Int32Array.from({ length: D }, (_, j) => j * 3), valid }],
      [
        'n32',
        {
          type: 'int32',
          values: Int32Array.from({ length: D }, (_, j) => 2147483647 - j),
          valid: Uint8Array.from({ length: D }, (_, j) => (j % 3 === 1 ? 0 : 1)),
        },
      ],
    ]);
    const rows = 50;
    const idx = Int32Array.from({ length: rows }, (_, r) => (r * 7) % D);
    const gathered = new Map<string, Column>(
      [...dicts].map(([n, c]) => {
        const src = (c as { values: Int32Array }).values;
        const v = new (src.constructor as Int32ArrayConstructor)(rows);
        for (let r = 0; r < rows; r++) v[r] = src[idx[r]!]!;
        return [n, { ...c, values: v, valid: c.valid && Uint8Array.from(idx, (j) => c.valid![j]!) } as Column];
      }),
    );
    const locate = (row: number) => ({ file: 'f', rowGroup: 0, row });
    const indexed = new Map([...dicts].map(([n, dict]) => [n, { dict, idx }]));
    for (const [from, to] of [
      [0, rows],
      [7, 31],
    ] as const) {
      const want = packRows(flat, [{ chunk: { outputs: gathered, label: null, locate }, from, to }]);
      const got = packRows(flat, [{ chunk: { outputs: new Map(), label: null, locate, indexed }, from, to }]);
      expect(parts(got)).toEqual(parts(want));
    }
  });

  it('the batch operator hands a whole packed chunk on as it is, and merges packed with unpacked chunks', () => {
    const a = rich(0, 8);
    const b = rich(8, 8);
    const packedA: ProcessedChunk = { ...a, outputs: new Map(), label: null, packed: packRows(wide, [{ chunk: a, from: 0, to: 8 }]) };
    const got4: unknown[] = [];
    of(packedA, b)
      .pipe(batch({ layout: wide, batchSize: 4, dropLast: false }))
      .subscribe((x) => got4.push(parts({ rows: x.rows, dense: x.dense.data, ...x.sparse, labels: x.labels })));
    const want = (ch: ProcessedChunk, from: number): unknown[] => parts(packRows(wide, [{ chunk: ch, from, to: from + 4 }]));
    expect(got4).toEqual([want(a, 0), want(a, 4), want(b, 0), want(b, 4)]);
    // Zero copy for a batch that is exactly one packed chunk.
    let got: Float32Array | null = null;
    of({ ...packedA, rows: 8 })
      .pipe(batch({ layout: wide, batchSize: 8, dropLast: false }))
      .subscribe((x) => {
        got = x.dense.data;
      });
    expect(got).toBe(packedA.packed!.dense);
    // A batch made of a packed tail and an unpacked head.
    let mixed: unknown[] = [];
    of(packedA, b)
      .pipe(batch({ layout: wide, batchSize: 12, dropLast: false }))
      .subscribe((x) => {
        if (x.seq === 0) mixed = parts({ rows: x.rows, dense: x.dense.data, ...x.sparse, labels: x.labels });
      });
    expect(mixed).toEqual(
      parts(
        packRows(wide, [
          { chunk: a, from: 0, to: 8 },
          { chunk: b, from: 0, to: 4 },
        ]),
      ),
    );
  });
});

describe('chunkCuts', () => {
  it('cuts where the epoch row count reaches a multiple of the chunk size', () => {
    expect(chunkCuts(0, 10, 0, 4)).toEqual([0, 4, 8, 10]);
    // 10 rows already emitted: the next batch needs 2 more.
    expect(chunkCuts(0, 10, 10, 4)).toEqual([0, 2, 6, 10]);
    // A resumed row group starting at row 3.
    expect(chunkCuts(3, 10, 0, 4)).toEqual([3, 7, 10]);
    expect(chunkCuts(5, 5, 0, 4)).toEqual([5]);
  });
});
