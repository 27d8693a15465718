// How a plan's features map onto a batch: dense columns and their offsets, sparse keys, label.
import type { TypedPlan } from '@sluice/ops';
import type { Batch } from './types.js';

/** The static shape of batches for a plan. */
export interface BatchLayout {
  readonly dense: Batch['dense']['features'];
  readonly denseNames: readonly string[];
  readonly dim: number;
  readonly sparseKeys: readonly string[];
  readonly label: boolean;
}

/** Works out the dense columns and sparse keys of a type-checked plan. */
export function batchLayout(plan: TypedPlan): BatchLayout {
  const dense: Array<{ name: string; offset: number; width: number; vector: boolean }> = [];
  const denseNames: string[] = [];
  let dim = 0;
  const sparseKeys: string[] = [];
  for (const f of plan.features) {
    if (f.kind === 'sparse') {
      sparseKeys.push(f.name);
      continue;
    }
    const vector = f.outputType.kind === 'fixed';
    dense.push({ name: f.name, offset: dim, width: f.width, vector });
    if (vector) for (let j = 0; j < f.width; j++) denseNames.push(`${f.name}:${j}`);
    else denseNames.push(f.name);
    dim += f.width;
  }
  return { dense, denseNames, dim, sparseKeys, label: plan.label !== null };
}
