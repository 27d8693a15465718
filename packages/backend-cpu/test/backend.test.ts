import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import '@sluice/backend-cpu';
import { cpuReaderKernels, createCpuBackend } from '@sluice/backend-cpu';
import { DecoderPool, checkColumns, openDataset, readChunks } from '@sluice/core/internal';
import { loadPlan, pipeline, typeCheckPlan, type Batch, type PlanSpec } from '@sluice/core';
import { tempDir, writeSmall } from '../../core/test/helpers.js';
import { fastKernelsAvailable } from '../src/kernels/index.js';

const dir = tempDir('sluice-cpu-');
const file = writeSmall(join(dir, 'small.parquet'), 4000, 500);
const plan: PlanSpec = {
  batchSize: 100,
  label: 'label',
  features: [
    { name: 'id', input: 'id', kind: 'dense' },
    { name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
    { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 1000 }] },
  ],
};
const ids = (b: Batch): number[] => Array.from({ length: b.rows }, (_, r) => b.dense.data[r * b.dense.dim]!);

async function collect(spec: PlanSpec['backend']): Promise<Batch[]> {
  const out: Batch[] = [];
  for await (const b of pipeline({ ...plan, backend: spec }, { input: file })) out.push(b);
  return out;
}

describe('cpu backend (worker pool)', () => {
  it('keeps input order with several workers and reports worker time', async () => {
    const p = pipeline({ ...plan, backend: { name: 'cpu', workers: 2 } }, { input: file });
    const got: Batch[] = [];
    for await (const b of p) got.push(b);
    expect(got.flatMap(ids)).toEqual(Array.from({ length: 4000 }, (_, i) => i));
    expect((await p.info()).backend).toBe('cpu');
    const report = p.metrics().lastReport!;
    expect(report.workerMs).toBeGreaterThan(0);
    expect(report.bytesIn).toBeGreaterThan(0);
  });

  it('rejects bad options when the plan is compiled', async () => {
    await expect(collect({ name: 'cpu', workers: 0 })).rejects.toThrow(/workers must be an integer from 1 to 256/);
    await expect(collect({ name: 'cpu', wrokers: 2 })).rejects.toThrow(/unknown option "wrokers"/);
  });

  it('gives the decoders its WebAssembly kernels for the ops pushed into the reader, unless fast is false', async () => {
    const url = cpuReaderKernels({ name: 'cpu', workers: 2 });
    expect(url).toMatch(/\/backend-cpu\/dist\/kernels\/index\.js$/);
    const { FAST_OPS } = (await import(url!)) as { FAST_OPS: ReadonlyMap<string, unknown> };
    if (fastKernelsAvailable()) expect([...FAST_OPS.keys()]).toEqual(expect.arrayContaining(['fillNull', 'neg2zero', 'log', 'hex2int', 'sigridHash']));
    expect(cpuReaderKernels({ name: 'cpu', fast: false })).toBeNull();
    expect(() => cpuReaderKernels({ name: 'cpu', fast: 'yes' })).toThrow(/fast must be true or false/);
    // Every feature in the reader (no backend work left): the options are checked all the same,
    // and the batches are the reference's.
    const pushed: PlanSpec = { ...plan, features: plan.features.slice(1) };
    const run = async (backend: PlanSpec['backend']): Promise<Batch[]> => {
      const out: Batch[] = [];
      const p = pipeline({ ...pushed, backend }, { input: file });
      for await (const b of p) out.push(b);
      if (backend !== 'reference') expect(p.metrics().pushdown?.computedInPipeline).toBe(0);
      return out;
    };
    await expect(run({ name: 'cpu', fast: 1 })).rejects.toThrow(/fast must be true or false/);
    const want = await run('reference');
    for (const fast of [true, false]) {
      const got = await run({ name: 'cpu', workers: 2, fast });
      expect(got.map((b) => [b.dense.data, b.sparse.lengths, b.sparse.values])).toEqual(want.map((b) => [b.dense.data, b.sparse.lengths, b.sparse.values]));
    }
  });

  it('a worker that dies on a chunk is replaced and the chunk retried: no batch lost or doubled', async () => {
    const want = await collect('reference');
    // The worker exits when it starts the chunk beginning at file row 1700, once.
    const got = await collect({ name: 'cpu', workers: 2, testCrash: { row: 1700, times: 1 } });
    expect(got.map((b) => b.seq)).toEqual(want.map((b) => b.seq));
    expect(got.flatMap(ids)).toEqual(want.flatMap(ids));
    expect(got.map((b) => Array.from(b.sparse.values))).toEqual(want.map((b) => Array.from(b.sparse.values)));
  });

  it('a chunk that kills its worker twice fails the run with the file, row group and row', async () => {
    const seen: Batch[] = [];
    const err = await (async () => {
      for await (const b of pipeline({ ...plan, backend: { name: 'cpu', workers: 2, testCrash: { row: 1700, times: 2 } } }, { input: file })) seen.push(b);
    })().then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/row group 3, row 1700: a cpu worker died twice on this chunk/);
    // Everything before the bad chunk was delivered, once, in order.
    expect(seen.flatMap(ids)).toEqual(Array.from({ length: 1700 }, (_, i) => i));
  });

  it('survives a worker thread killed from outside mid-run', async () => {
    const pool = new DecoderPool(1);
    const ds = await openDataset([file], pool);
    const typed = typeCheckPlan(loadPlan(plan), ds.schema);
    checkColumns(ds, typed.columns);
    const backend = createCpuBackend(typed, { name: 'cpu', workers: 2 }, new Map()) as ReturnType<typeof createCpuBackend> & {
      threads: Array<{ terminate(): Promise<number> }>;
    };
    const reference = createCpuBackend(typed, { name: 'cpu', workers: 1, fast: false }, new Map());
    try {
      const columns = new Map(typed.columns.map((c) => [c, ds.schema.get(c)!]));
      const chunks = [];
      for await (const c of readChunks(ds, pool, { columns, chunkRows: 100, shuffle: null, shard: { rank: 0, worldSize: 1 }, epochs: 1 })) chunks.push(c);
      // Start every chunk at once, then kill a worker while they run.
      const runs = chunks.map((c) => backend.run(c.columns, c.locate));
      await new Promise((r) => setTimeout(r, 5));
      await backend.threads[0]!.terminate();
      const got = await Promise.all(runs);
      const want = await Promise.all(chunks.map((c) => reference.run(c.columns, c.locate)));
      got.forEach((g, i) => {
        for (const [name, col] of want[i]!.columns) expect(g.columns.get(name)).toEqual(col);
      });
    } finally {
      await backend.dispose();
      await reference.dispose();
      await pool.close();
    }
  });

  it('maps a data error inside a worker back to file, row group and row', async () => {
    const { writeParquet, str, i32 } = await import('../../core/test/helpers.js');
    const f = writeParquet(
      join(dir, 'bad.parquet'),
      { id: i32(Array.from({ length: 600 }, (_, i) => i)), C1: str(Array.from({ length: 600 }, (_, i) => (i === 444 ? 'g00d' : 'ff'))) },
      200,
    );
    const bad: PlanSpec = {
      batchSize: 50,
      backend: { name: 'cpu', workers: 2 },
      features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }] }],
    };
    const err = await (async () => {
      for await (const _ of pipeline(bad, { input: f })) {
        /* drain */
      }
    })().then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.name).toBe('DataError');
    expect(err?.message).toMatch(/bad\.parquet, row group 2, row 444, column C1, feature C1, op hex2int \(#1\): .*"g00d"/);
  });
});
