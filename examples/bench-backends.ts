// Benchmarks every backend that can run here on the same plan and data, in one table. Backends
// are found at run time: the built-in ones plus every installed @sluice/backend-* package; one
// whose creation fails is listed as skipped with the reason.
//
// Each backend runs twice. The first run digests every array of every batch (SHA-256), which
// shows whether the backends agree, and warms up what a first run pays for once (decode threads
// starting, V8 compiling their loops, `auto` probing its candidates). The second run is timed and
// reads nothing: the table's time and rows/s are a steady run's. The script exits with status 1
// when two backends produced different batches.
//
//   npx tsx examples/bench-backends.ts [--input data.parquet]
import { createHash, type Hash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { backendNames, pipeline, type Batch } from '@sluice/core';
import { demoDataset, getPreset } from '@sluice/core/gen';
import { installedBackendPackages } from '@sluice/core/internal';

const { values } = parseArgs({ options: { input: { type: 'string' } } });
const input = values.input ?? (await demoDataset());
const plan = getPreset('rm1').defaultPlan();

// Registered backends and installed @sluice/backend-NAME packages (creating one loads it).
const names = [...new Set([...backendNames(), ...installedBackendPackages()])].sort();

/** Adds every array of a batch, with its shape, to `h`. */
function digest(h: Hash, b: Batch): void {
  h.update(`${b.seq} ${b.rows} ${b.dense.dim} ${b.sparse.keys.join(',')}\n`);
  for (const a of [b.dense.data, b.sparse.lengths, b.sparse.offsets, b.sparse.values, b.labels]) {
    if (a) h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  }
}

const rows: string[][] = [];
const digests = new Map<string, string>();
for (const name of names) {
  try {
    // Untimed: the digest and the warm-up.
    const h = createHash('sha256');
    for await (const b of pipeline({ ...plan, backend: { name } }, { input })) {
      digest(h, b);
      b.release?.();
    }
    const hex = h.digest('hex').slice(0, 16);
    digests.set(name, hex);
    // Timed: the same plan again, touching nothing.
    const t0 = performance.now();
    let n = 0;
    const p = pipeline({ ...plan, backend: { name } }, { input });
    for await (const b of p) {
      n += b.rows;
      b.release?.();
    }
    const s = (performance.now() - t0) / 1000;
    rows.push([name, 'ok', n.toLocaleString('en-US'), s.toFixed(2), Math.round(n / s).toLocaleString('en-US'), p.metrics().preprocessMs.toFixed(0), hex]);
  } catch (e) {
    rows.push([name, `skipped: ${(e as Error).message.split('\n')[0]}`, '-', '-', '-', '-', '-']);
  }
}
const head = ['backend', 'status', 'rows', 'seconds', 'rows/s', 'preprocess ms', 'batch digest'];
const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]): string => r.map((c, i) => (i < 2 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
console.log(`RM1 plan on ${input}\n${line(head)}\n${w.map((x) => '-'.repeat(x)).join('  ')}\n${rows.map(line).join('\n')}`);
const distinct = new Set(digests.values());
if (distinct.size <= 1) console.log(`(the second run of each is timed; ${digests.size} backends produced the same batches)`);
else {
  console.log(`DIFFERENT BATCHES: ${[...digests].map(([n, d]) => `${n} ${d}`).join(', ')}`);
  process.exitCode = 1;
}
