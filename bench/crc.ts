/**
 * What verifying page CRCs costs: the RM1 preset's plan end to end over the same file with page
 * CRCs, with verification on (the default) and off (`verifyCrc: false`), interleaved, and the
 * CRC32 itself (node:zlib's) over the file's bytes as the limit. See bench/README.md, 'crc.ts'.
 *
 *   npx tsx bench/crc.ts [--rows 300000] [--reps 5] [--json]
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { crc32 } from 'node:zlib';
import { getPreset } from '@sluice/core/gen';
import { pipeline } from '@sluice/core';
import { rewriteParquet } from '../packages/core/test/reader/parquet-edit.js';
import { cachedDataset, emitJson, fmtInt, fmtRate, fmtRatio, fmtSeconds, intArg, log, machine, median, printTable } from './lib.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string' },
    reps: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  log('usage: npx tsx bench/crc.ts [--rows N (RM1, default 300000)] [--reps 5] [--json]');
  process.exit(0);
}
const rows = intArg(args.rows, 300_000, 'rows');
const reps = intArg(args.reps, 5, 'reps');

const data = await cachedDataset({ preset: 'rm1', rows });
// The same file with a CRC on every page, as parquet-mr writes it.
const file = data.path.replace(/\.parquet$/, '-crc.parquet');
if (!existsSync(file)) writeFileSync(file, rewriteParquet(readFileSync(data.path), { crc: true }));
const plan = getPreset('rm1').defaultPlan();

async function once(verifyCrc: boolean): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  for await (const b of pipeline(plan, { input: file, verifyCrc })) {
    n += b.rows;
    b.release?.();
  }
  if (n !== rows) throw new Error(`read ${n} rows, expected ${rows}`);
  return (performance.now() - t0) / 1000;
}

const times: Record<'on' | 'off', number[]> = { on: [], off: [] };
await once(true); // warm-up: decoders, kernels, page cache
for (let r = 0; r < reps; r++) {
  for (const mode of r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) times[mode].push(await once(mode === 'on'));
}
const bytes = readFileSync(file);
const c0 = performance.now();
for (let r = 0; r < 5; r++) crc32(bytes);
const crcSeconds = (performance.now() - c0) / 5 / 1000;

const on = median(times.on);
const off = median(times.off);
printTable(
  `page CRCs: ${fmtInt(rows)} RM1 rows, median of ${reps} interleaved runs each`,
  ['what', 'median s', 'rows/s', 'vs off'],
  [
    ['RM1 plan, CRCs verified', fmtSeconds(on), fmtRate(rows / on), fmtRatio(on / off)],
    ['RM1 plan, verifyCrc: false', fmtSeconds(off), fmtRate(rows / off), fmtRatio(1)],
    [
      `CRC32 of the whole file (${fmtInt(bytes.length)} bytes)`,
      fmtSeconds(crcSeconds),
      `${(bytes.length / crcSeconds / 1e9).toFixed(2)} GB/s`,
      fmtRatio(crcSeconds / off),
    ],
  ],
);
if (args.json) emitJson({ bench: 'crc', machine: machine(), rows, reps, onSeconds: times.on, offSeconds: times.off, fileBytes: bytes.length, crcSeconds });
