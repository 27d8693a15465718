// Benchmarks every backend that can run here on the same plan and data, in one table. Backends
// are found at run time: the built-in ones plus every installed @sluice/backend-* package; one
// whose creation fails is listed as skipped with the reason.
//
//   npx tsx examples/bench-backends.ts [--input data.parquet] [--rows-limit N]
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { backendNames, demoDataset, getPreset, pipeline } from '@sluice/core';

const { values } = parseArgs({ options: { input: { type: 'string' } } });
const input = values.input ?? (await demoDataset());
const plan = getPreset('rm1').defaultPlan();

// Installed backend packages: node_modules/@sluice/backend-NAME (loading one registers it).
const scope = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '@sluice');
let installed: string[] = [];
try { installed = readdirSync(scope).filter((d) => d.startsWith('backend-')).map((d) => d.slice('backend-'.length)); } catch { /* none */ }
const names = [...new Set([...backendNames(), ...installed])].sort();

const rows: string[][] = [];
for (const name of names) {
  const t0 = performance.now();
  let n = 0;
  let checksum = 0;
  try {
    const p = pipeline({ ...plan, backend: { name } }, { input });
    for await (const b of p) {
      n += b.rows;
      for (let i = 0; i < b.dense.data.length; i += 97) checksum += b.dense.data[i]!;
      b.release?.();
    }
    const s = (performance.now() - t0) / 1000;
    const m = p.metrics();
    rows.push([name, 'ok', n.toLocaleString('en-US'), s.toFixed(2), Math.round(n / s).toLocaleString('en-US'), m.preprocessMs.toFixed(0), checksum.toFixed(3)]);
  } catch (e) {
    rows.push([name, `skipped: ${(e as Error).message.split('\n')[0]}`, '-', '-', '-', '-', '-']);
  }
}
const head = ['backend', 'status', 'rows', 'seconds', 'rows/s', 'preprocess ms', 'dense checksum'];
const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]): string => r.map((c, i) => (i < 2 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
console.log(`RM1 plan on ${input}\n${line(head)}\n${w.map((x) => '-'.repeat(x)).join('  ')}\n${rows.map(line).join('\n')}`);
console.log('(equal checksums: every backend produced the same batches)');
