import { expect } from 'vitest';
import { pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { type PlanState } from '@sluice/core/internal';

/** Every batch of `plan` over `input` on `backend`. */
export async function collect(plan: PlanSpec, input: string, backend: PlanSpec['backend'], fitState?: PlanState): Promise<Batch[]> {
  const out: Batch[] = [];
  for await (const b of pipeline({ ...plan, backend }, { input, ...(fitState ? { fitState } : {}) })) out.push(b);
  return out;
}

/** Bitwise equality of batches (floats compared as their bit patterns). */
export function expectSameBatches(got: Batch[], want: Batch[]): void {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => {
    const w = want[i]!;
    expect(g.rows).toBe(w.rows);
    expect(g.dense.names).toEqual(w.dense.names);
    expect(new Uint32Array(g.dense.data.buffer, g.dense.data.byteOffset, g.dense.data.length)).toEqual(
      new Uint32Array(w.dense.data.buffer, w.dense.data.byteOffset, w.dense.data.length),
    );
    expect(g.sparse.keys).toEqual(w.sparse.keys);
    expect(g.sparse.lengths).toEqual(w.sparse.lengths);
    expect(g.sparse.offsets).toEqual(w.sparse.offsets);
    expect(g.sparse.values).toEqual(w.sparse.values);
    expect(g.labels).toEqual(w.labels);
  });
}
