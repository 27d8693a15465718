/**
 * ZSTD page decompression alone: every ZSTD page of the given Parquet files (by default the RM1
 * and RM5 files `sluice gen` writes, as bench/realistic.ts caches them), decompressed by zstddec
 * as it ships (a fresh copy per page), the reader's wasm decompressor (zstddec's wasm, reused
 * memory) and zstd's C library through zstd-napi (reader/zstd.ts, reused memory). Warm: median of
 * `--reps` passes after one, every decoder's output checked against zstddec's first. See
 * bench/README.md, 'zstd.ts'.
 *
 *   npx tsx bench/zstd.ts [--reps 5] [--json] [file.parquet …]
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parquetMetadata } from 'hyparquet';
import { ZSTDDecoder } from 'zstddec';
import { codecPages, nativePageZstd, wasmPageZstd, type Zstd } from '@sluice/core/internal';
import { benchCacheDir, emitJson, fmtRatio, intArg, log, machine, median, printTable } from './lib.js';

const { values: args, positionals } = parseArgs({
  options: {
    reps: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  allowPositionals: true,
  strict: true,
});
if (args.help) {
  log('usage: npx tsx bench/zstd.ts [--reps 5] [--json] [file.parquet …]');
  process.exit(0);
}
const reps = intArg(args.reps, 5, 'reps');
const files = positionals.length > 0 ? positionals : ['rm1-r1000000-s42-g100000', 'rm5-r100000-s42-g10000'].map((f) => join(benchCacheDir(), `${f}.parquet`));
for (const f of files)
  if (!existsSync(f)) throw new Error(`bench/zstd.ts: ${f} does not exist (npx tsx bench/realistic.ts --quick caches the RM1 file; sluice gen writes any)`);

const shipped = new ZSTDDecoder();
await shipped.init();
const native = nativePageZstd();
const DECODERS: Record<string, Zstd> = {
  'zstddec as shipped': (src, size) => shipped.decode(src, size),
  'wasm, reused memory': await wasmPageZstd(),
};
if (native === null) log('zstd-napi is not installed (or did not build): its row is left out');
else DECODERS['zstd-napi (native), reused memory'] = native;

const pass = (d: Zstd, pages: Array<[Uint8Array, number]>): number => {
  const t0 = performance.now();
  for (const [body, size] of pages) d(body, size);
  return (performance.now() - t0) / 1000;
};

const docs = [];
for (const file of files) {
  const buf = readFileSync(file);
  const pages = codecPages(buf, parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)), 'ZSTD');
  if (pages.length === 0) throw new Error(`bench/zstd.ts: ${file} has no ZSTD pages`);
  const bytes = pages.reduce((a, [, n]) => a + n, 0);
  const stored = pages.reduce((a, [b]) => a + b.length, 0);
  const names = Object.keys(DECODERS);
  const decoders = names.map((n) => DECODERS[n]!);
  for (const [body, size] of pages) {
    const want = shipped.decode(body, size);
    for (let i = 1; i < decoders.length; i++)
      if (Buffer.compare(decoders[i]!(body, size), want) !== 0) throw new Error(`${names[i]} differs from zstddec on a page of ${file}`);
  }
  const warm: number[][] = names.map(() => []);
  for (let r = 0; r < reps; r++) for (const i of r % 2 === 0 ? names.keys() : [...names.keys()].reverse()) warm[i]!.push(pass(decoders[i]!, pages));
  const base = median(warm[0]!);
  printTable(
    `${file}: ${pages.length} ZSTD pages, ${(stored / 1e6).toFixed(1)} MB stored, ${(bytes / 1e6).toFixed(1)} MB decompressed; warm, median of ${reps}`,
    ['decoder', 'MB/s', 'vs zstddec as shipped'],
    names.map((n, i) => [n, (bytes / median(warm[i]!) / 1e6).toFixed(0), fmtRatio(base / median(warm[i]!))]),
  );
  docs.push({ file, pages: pages.length, stored, bytes, decoders: names.map((n, i) => ({ name: n, warmSeconds: warm[i] })) });
}
if (args.json) emitJson({ bench: 'zstd', machine: machine(), reps, files: docs });
