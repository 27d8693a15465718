import { expect } from 'vitest';
import { pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { type PlanState } from '@sluice/core/internal';

/** Every batch of `plan` over `input` on `backend`. */
export async function collect(plan: PlanSpec, input: string, backend: PlanSpec['backend'], fitState?: PlanState): Promise<Batch[]> {
  const out: Batch[] = [];
  for await (const b of pipeline({ ...plan, backend }, { input, ...(fitState ? { fitState } : {}) })) out.push(b);
  return out;
}

/**
 * Bitwise equality of batches (floats compared as their bit patterns). Arrays are compared by
 * their bytes first; only where those differ does vitest's element-by-element comparison run, for
 * its diff: on a batch of millions of ids it takes minutes.
 */
export function expectSameBatches(got: Batch[], want: Batch[]): void {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => {
    const w = want[i]!;
    const at = `batch ${i}`;
    expect(g.rows, at).toBe(w.rows);
    expect(g.dense.names, at).toEqual(w.dense.names);
    expectSameBits(bitsOf(g.dense.data), bitsOf(w.dense.data), `${at}: dense`);
    expect(g.sparse.keys, at).toEqual(w.sparse.keys);
    expectSameBits(g.sparse.lengths, w.sparse.lengths, `${at}: sparse lengths`);
    expectSameBits(g.sparse.offsets, w.sparse.offsets, `${at}: sparse offsets`);
    expectSameBits(g.sparse.values, w.sparse.values, `${at}: sparse values`);
    if (g.labels === null || w.labels === null) expect(g.labels, `${at}: labels`).toEqual(w.labels);
    else expectSameBits(bitsOf(g.labels), bitsOf(w.labels), `${at}: labels`);
  });
}

/** A float array's bit patterns. */
const bitsOf = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** Two typed arrays of one kind with the same bytes; else vitest's comparison, for the diff it prints. */
function expectSameBits<T extends Uint32Array | Int32Array | BigInt64Array>(got: T, want: T, what: string): void {
  const bytes = (a: T): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  if (got.constructor === want.constructor && bytes(got).equals(bytes(want))) return;
  expect(got, what).toEqual(want);
}
