/**
 * SNAPPY page decompression alone: every SNAPPY page of the given Parquet files (by default the
 * RM1 files DuckDB and arrow-rs write, as bench/realistic.ts caches them), decompressed by
 * hyparquet's JS decoder, hysnappy as it ships (a fresh copy per page) and the reader's wasm
 * decoder (reader/parquet/snappy.ts, reused memory). Warm: median of `--reps` passes after one;
 * first call: a fresh process's first pass, module load included. See bench/README.md, 'snappy.ts'.
 *
 *   npx tsx bench/snappy.ts [--reps 7] [--json] [file.parquet …]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parquetMetadata } from 'hyparquet';
import { snappyUncompressor } from 'hysnappy';
import { jsSnappy, snappyPages as pagesOf, wasmSnappy, type Snappy } from '@sluice/core/internal';
import { benchCacheDir, emitJson, fmtRatio, intArg, log, machine, median, printTable, runNodeChild } from './lib.js';

const { values: args, positionals } = parseArgs({
  options: {
    reps: { type: 'string' },
    json: { type: 'boolean', default: false },
    first: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  allowPositionals: true,
  strict: true,
});
if (args.help) {
  log('usage: npx tsx bench/snappy.ts [--reps 7] [--json] [file.parquet …]');
  process.exit(0);
}
const reps = intArg(args.reps, 7, 'reps');
const files = positionals.length > 0 ? positionals : ['duckdb', 'arrow-d32768'].map((w) => join(benchCacheDir(), `rm1-r1000000-s42-g100000-${w}.parquet`));

const DECODERS: Record<string, () => Snappy> = {
  'hyparquet (JS)': () => jsSnappy,
  'hysnappy as shipped': snappyUncompressor,
  'wasm, reused memory': () => {
    const d = wasmSnappy();
    if (d === null) throw new Error('hysnappy wasm does not load');
    return d;
  },
};

/** Every SNAPPY page body of `file` (v2 pages: the compressed part after the levels) with its decompressed size. */
function snappyPages(file: string): Array<[Uint8Array, number]> {
  const buf = readFileSync(file);
  return pagesOf(buf, parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)));
}

const pass = (d: Snappy, pages: Array<[Uint8Array, number]>): number => {
  const t0 = performance.now();
  for (const [body, size] of pages) d(body, size);
  return (performance.now() - t0) / 1000;
};

if (args.first !== undefined) {
  // Child: one fresh process's first call, module load included.
  const pages = snappyPages(positionals[0]!);
  const t0 = performance.now();
  const d = DECODERS[args.first]!();
  const seconds = (performance.now() - t0) / 1000 + pass(d, pages);
  emitJson({ seconds });
  process.exit(0);
}

const self = fileURLToPath(import.meta.url);
const docs = [];
for (const file of files) {
  const pages = snappyPages(file);
  const bytes = pages.reduce((a, [, n]) => a + n, 0);
  const stored = pages.reduce((a, [b]) => a + b.length, 0);
  const names = Object.keys(DECODERS);
  const decoders = names.map((n) => DECODERS[n]!());
  for (const [body, size] of pages) {
    const want = jsSnappy(body, size);
    for (let i = 1; i < decoders.length; i++)
      if (Buffer.compare(decoders[i]!(body, size), want) !== 0) throw new Error(`${names[i]} differs from hyparquet on a page of ${file}`);
  }
  const warm: number[][] = names.map(() => []);
  for (let r = 0; r < reps; r++) for (const i of r % 2 === 0 ? names.keys() : [...names.keys()].reverse()) warm[i]!.push(pass(decoders[i]!, pages));
  const first: number[][] = names.map(() => []);
  for (let r = 0; r < 3; r++)
    for (const [i, n] of names.entries()) {
      const { result } = await runNodeChild<{ seconds: number }>([...process.execArgv, self, '--first', n, file]);
      first[i]!.push(result.seconds);
    }
  const js = median(warm[0]!);
  printTable(
    `${file}: ${pages.length} SNAPPY pages, ${(stored / 1e6).toFixed(1)} MB stored, ${(bytes / 1e6).toFixed(1)} MB decompressed; warm: median of ${reps}, first call: median of 3 fresh processes`,
    ['decoder', 'warm MB/s', 'warm vs JS', 'first call MB/s', 'first call vs JS'],
    names.map((n, i) => [
      n,
      (bytes / median(warm[i]!) / 1e6).toFixed(0),
      fmtRatio(js / median(warm[i]!)),
      (bytes / median(first[i]!) / 1e6).toFixed(0),
      fmtRatio(median(first[0]!) / median(first[i]!)),
    ]),
  );
  docs.push({ file, pages: pages.length, stored, bytes, decoders: names.map((n, i) => ({ name: n, warmSeconds: warm[i], firstSeconds: first[i] })) });
}
if (args.json) emitJson({ bench: 'snappy', machine: machine(), reps, files: docs });
