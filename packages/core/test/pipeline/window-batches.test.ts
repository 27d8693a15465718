/**
 * `windowBatches`: the order a cluster job yields (docs/cluster.md#determinism). Batches do not
 * cross windows, so a row group (or shuffle window) ends with a short batch; the rows and their
 * order are exactly those of the default run, only cut differently; and resuming works as usual.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PlanSpec } from '@sluice/ops';
import { generateDataset } from '../../src/gen/index.js';
import { pipeline } from '../../src/pipeline/pipeline.js';
import type { IteratorState } from '../../src/pipeline/resume.js';
import { tempDir } from '../helpers.js';

const spec = (shuffle: PlanSpec['shuffle']): PlanSpec =>
  ({
    batchSize: 300,
    label: 'label',
    epochs: 2,
    shuffle,
    backend: { name: 'cpu', workers: 1 },
    features: [
      {
        name: 'I1',
        input: 'I1',
        kind: 'dense',
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'log', offset: 1 },
        ],
      },
      { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 1000 }] },
    ],
  }) as PlanSpec;

interface Run {
  rows: number[];
  dense: number[];
  values: bigint[];
  seqs: number[];
}

async function run(
  p: PlanSpec,
  input: string,
  o: { windowBatches?: boolean; resume?: IteratorState; stopAfter?: number } = {},
): Promise<Run & { state: IteratorState | null }> {
  const { stopAfter, ...options } = o;
  const pl = pipeline(p, { input, ...options });
  const r: Run = { rows: [], dense: [], values: [], seqs: [] };
  for await (const b of pl) {
    r.rows.push(b.rows);
    r.seqs.push(b.seq);
    r.dense.push(...b.dense.data);
    r.values.push(...b.sparse.values);
    b.release?.();
    if (stopAfter !== undefined && r.rows.length === stopAfter) break;
  }
  return { ...r, state: pl.state() };
}

describe('pipeline({ windowBatches })', () => {
  let input: string;
  beforeAll(async () => {
    input = join(tempDir(), 'w.parquet');
    await generateDataset({ preset: 'rm1', rows: 5_000, rowGroupSize: 1_000, out: input });
  }, 60_000);

  it('unshuffled: each row group ends a batch (1,000 rows → 300, 300, 300, 100); same rows in the same order', async () => {
    const plain = await run(spec(false), input);
    const win = await run(spec(false), input, { windowBatches: true });
    expect(plain.rows.slice(0, 4)).toEqual([300, 300, 300, 300]);
    expect(win.rows).toEqual(Array.from({ length: 10 }, () => [300, 300, 300, 100]).flat());
    expect(win.seqs).toEqual([...win.rows.keys()]);
    expect(win.dense).toEqual(plain.dense);
    expect(win.values).toEqual(plain.values);
  });

  it('shuffled: each shuffle window ends a batch; same rows in the same order as the default run', async () => {
    const s = { seed: 5, bufferRows: 2_000 };
    const plain = await run(spec(s), input);
    const win = await run(spec(s), input, { windowBatches: true });
    // Windows of 2,000, 2,000 and 1,000 rows per epoch.
    expect(win.rows).toEqual(
      Array.from({ length: 2 }, () => [300, 300, 300, 300, 300, 300, 200, 300, 300, 300, 300, 300, 300, 200, 300, 300, 300, 100]).flat(),
    );
    expect(win.dense).toEqual(plain.dense);
    expect(win.values).toEqual(plain.values);
  });

  it('resumes from state() to exactly the rest of the sequence', async () => {
    const s = { seed: 5, bufferRows: 2_000 };
    const all = await run(spec(s), input, { windowBatches: true });
    const head = await run(spec(s), input, { windowBatches: true, stopAfter: 9 });
    const tail = await run(spec(s), input, { windowBatches: true, resume: head.state! });
    expect([...head.seqs, ...tail.seqs]).toEqual(all.seqs);
    expect([...head.dense, ...tail.dense]).toEqual(all.dense);
  });
});
