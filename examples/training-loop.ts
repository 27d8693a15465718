// A minimal training loop fed by Sluice: logistic regression on the dense features of RM1.
// Run: npx tsx examples/training-loop.ts [data.parquet]   (default: the `sluice demo` data set)
import { existsSync } from 'node:fs';
import { demoDataset, getPreset } from '@sluice/core/gen';
import { pipeline, type PlanSpec } from '@sluice/core';

const input = process.argv[2] ?? (await demoDataset());
if (!existsSync(input)) throw new Error(`no such file: ${input}`);
const plan: PlanSpec = { ...getPreset('rm1').defaultPlan(), batchSize: 4096, shuffle: { seed: 1, bufferRows: 50_000 }, epochs: 2 };

const batches = pipeline(plan, { input });
let w: Float32Array | null = null;
let bias = 0;
const lr = 0.05;
for await (const b of batches) {
  const D = b.dense.dim;
  w ??= new Float32Array(D);
  const grad = new Float32Array(D);
  let gBias = 0;
  let loss = 0;
  for (let r = 0; r < b.rows; r++) {
    let z = bias;
    for (let j = 0; j < D; j++) z += w[j]! * b.dense.data[r * D + j]!;
    const p = 1 / (1 + Math.exp(-z));
    const y = b.labels![r]!;
    loss -= y * Math.log(p + 1e-7) + (1 - y) * Math.log(1 - p + 1e-7);
    for (let j = 0; j < D; j++) grad[j]! += (p - y) * b.dense.data[r * D + j]!;
    gBias += p - y;
  }
  for (let j = 0; j < D; j++) w[j]! -= (lr * grad[j]!) / b.rows;
  bias -= (lr * gBias) / b.rows;
  console.log(`step ${b.seq}  epoch ${b.epoch}  loss ${(loss / b.rows).toFixed(4)}`);
  // Done with this batch: its memory may hold a later one (optional; see Batch.release).
  b.release?.();
}
console.log('resumable state after the run:', JSON.stringify(batches.state()));
