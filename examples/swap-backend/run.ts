// The same training-data script, run with two plans that differ only in `backend`:
//   npx tsx examples/swap-backend/run.ts examples/swap-backend/plan-reference.json
//   npx tsx examples/swap-backend/run.ts examples/swap-backend/plan-cpu.json
// Both print the same batch digest; only the backend line and the timing change.
import { createHash } from 'node:crypto';
import { demoDataset } from '@sluice/core/gen';
import { pipeline } from '@sluice/core';

const planFile = process.argv[2];
if (!planFile) throw new Error('usage: run.ts PLAN.json');
const p = pipeline(planFile, { input: await demoDataset() });
const h = createHash('sha256');
const t0 = performance.now();
let rows = 0;
for await (const b of p) {
  rows += b.rows;
  for (const a of [b.dense.data, b.sparse.lengths, b.sparse.values, b.labels!]) h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
}
const info = await p.info();
console.log(`backend ${info.backend}: ${rows} rows in ${((performance.now() - t0) / 1000).toFixed(2)} s, batch digest ${h.digest('hex').slice(0, 16)}`);
