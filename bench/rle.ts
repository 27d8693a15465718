/**
 * The RLE / bit-packed hybrid decoders alone: the JS ones (reader/parquet/rle.ts) against the wasm
 * kernel (rle-wasm.ts, assembly/rle.ts) on synthetic pages shaped like the RM1 / RM5 files' (run
 * mixes, widths and page sizes as bench/README.md, 'rle.ts', lists them). Checks both give the
 * same values first. Median of `--reps` interleaved passes (JS and wasm alternate, in alternating
 * order), ns per value; then, for short pages, where the kernel stops paying (MIN_WASM_INDICES, MIN_WASM_LEVELS).
 *
 *   npx tsx bench/rle.ts [--reps 7] [--json]
 */
import { parseArgs } from 'node:util';
import { MIN_WASM_INDICES, MIN_WASM_LEVELS, levels, levelsJs, rleHybrid, rleHybridJs, rleIndicesWithNulls, rleKernel, Rng } from '@sluice/core/internal';
import { emitJson, intArg, log, machine, median, printTable } from './lib.js';

const { values: args } = parseArgs({
  options: { reps: { type: 'string' }, json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
  strict: true,
});
if (args.help) {
  log('usage: npx tsx bench/rle.ts [--reps 7] [--json]');
  process.exit(0);
}
const reps = intArg(args.reps, 7, 'reps');
if (rleKernel() === null) throw new Error('build/rle.wasm does not load: run npm run build');

/** A seeded generator (the project's Rng, util/rng.ts). */
function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

function uleb(h: number, out: number[]): void {
  do {
    out.push((h & 0x7f) | (h >= 128 ? 0x80 : 0));
    h >>>= 7;
  } while (h > 0);
}

/**
 * One page's stream of `n` values at `width`: bit-packed runs of about `packed` values and RLE runs
 * of about `rle` values (0: none), alternating; values below `limit`.
 */
function page(r: () => number, width: number, n: number, packed: number, rle: number, limit: number): Uint8Array {
  const out: number[] = [];
  const bw = (width + 7) >> 3;
  let seen = 0;
  while (seen < n) {
    const groups = Math.min(Math.ceil((n - seen) / 8), Math.max(1, Math.round((packed * (0.5 + r())) / 8)));
    uleb(groups * 2 + 1, out);
    // Pack `groups * 8` values below `limit`, least significant bit first.
    let acc = 0;
    let have = 0;
    for (let k = 0; k < groups * 8; k++) {
      const v = Math.floor(r() * limit);
      for (let b = 0; b < width; b++) {
        acc |= ((v >>> b) & 1) << have;
        if (++have === 8) {
          out.push(acc);
          acc = 0;
          have = 0;
        }
      }
    }
    seen += groups * 8;
    if (rle > 0 && seen < n) {
      const len = Math.min(n - seen, Math.max(1, Math.round(rle * (0.5 + r()))));
      uleb(len * 2, out);
      const v = Math.floor(r() * limit);
      for (let k = 0; k < bw; k++) out.push((v >>> (8 * k)) & 0xff);
      seen += len;
    }
  }
  return Uint8Array.from(out);
}

interface Profile {
  readonly name: string;
  /** Levels of maximum `max`, or dictionary indices (max 0) of `width` bits. */
  readonly max: number;
  readonly width: number;
  readonly pages: Uint8Array[];
  readonly n: number;
}

/** Pages of `n` values enough for about `total` values. */
function profile(name: string, seed: number, opts: { width: number; max?: number; n: number; packed: number; rle: number; total?: number }): Profile {
  const r = rng(seed);
  const max = opts.max ?? 0;
  const limit = max > 0 ? max + 1 : 2 ** opts.width;
  const count = Math.max(1, Math.round((opts.total ?? 4_000_000) / opts.n));
  const pages = Array.from({ length: count }, () => page(r, opts.width, opts.n, opts.packed, opts.rle, limit));
  return { name, max, width: opts.width, pages, n: opts.n };
}

// Shapes from the RM1 / RM5 runs' decode threads (bench/README.md, 'rle.ts'): sluice's writer
// and arrow-rs pages of ~20,000 values, DuckDB's of ~120,000 (packed runs of 255 values), RM5's
// 9,000-value index pages and 200,000-value list pages.
const PROFILES: Profile[] = [
  profile('indices w12, packed runs of 500, 20k/page (sluice, arrow)', 1, { width: 12, n: 20_000, packed: 500, rle: 0 }),
  profile('indices w16, packed runs of 500, 9k/page (RM5)', 2, { width: 16, n: 9_000, packed: 500, rle: 0 }),
  profile('indices w10, packed 255 / RLE 13, 120k/page (DuckDB)', 3, { width: 10, n: 120_000, packed: 255, rle: 13 }),
  profile('indices w5, packed 18 / RLE 17, 20k/page (low cardinality)', 4, { width: 5, n: 20_000, packed: 18, rle: 17 }),
  profile('indices w20, packed runs of 500, 20k/page', 5, { width: 20, n: 20_000, packed: 500, rle: 0 }),
  profile('def levels (max 1), packed 14 / RLE 30, 20k/page', 6, { width: 1, max: 1, n: 20_000, packed: 14, rle: 30 }),
  profile('def levels (max 1), packed 255 / RLE 39, 120k/page (DuckDB)', 7, { width: 1, max: 1, n: 120_000, packed: 255, rle: 39 }),
  profile('list levels (max 2), packed 8 / RLE 2,000, 200k/page (RM5)', 8, { width: 2, max: 2, n: 200_000, packed: 8, rle: 2000 }),
];

type Decoder = 'JS' | 'wasm';
const idxOut = new Int32Array(200_000);
const lvlOut = new Uint8Array(200_000);

/** Decodes every page of `p` with `d`; seconds. */
function pass(p: Profile, d: Decoder): number {
  const t0 = performance.now();
  for (const b of p.pages) {
    if (p.max > 0) (d === 'JS' ? levelsJs : levels)(b, 0, b.length, p.max, lvlOut, p.n, 0);
    else (d === 'JS' ? rleHybridJs : rleHybrid)(b, 0, b.length, p.width, idxOut, 0, p.n);
  }
  return (performance.now() - t0) / 1000;
}

/** Both decoders give the same values on every page. */
function check(p: Profile): void {
  for (const b of p.pages) {
    if (p.max > 0) {
      const a = new Uint8Array(p.n);
      const w = new Uint8Array(p.n);
      levelsJs(b, 0, b.length, p.max, a, p.n, 0);
      levels(b, 0, b.length, p.max, w, p.n, 0);
      if (a.some((v, i) => v !== w[i])) throw new Error(`${p.name}: the decoders disagree`);
    } else {
      const a = new Int32Array(p.n);
      const w = new Int32Array(p.n);
      rleHybridJs(b, 0, b.length, p.width, a, 0, p.n);
      rleHybrid(b, 0, b.length, p.width, w, 0, p.n);
      if (a.some((v, i) => v !== w[i])) throw new Error(`${p.name}: the decoders disagree`);
    }
  }
}

/** Each decoder's median of `reps` interleaved runs (the order alternating) after one warm-up run each. */
function alternate(run: (d: Decoder) => number): Record<Decoder, number> {
  const times: Record<Decoder, number[]> = { JS: [], wasm: [] };
  run('JS');
  run('wasm');
  for (let i = 0; i < reps; i++) {
    const order: Decoder[] = i % 2 === 0 ? ['JS', 'wasm'] : ['wasm', 'JS'];
    for (const d of order) times[d].push(run(d));
  }
  return { JS: median(times.JS), wasm: median(times.wasm) };
}

/** Median ns per value of each decoder over `reps` interleaved passes after one warm-up pass each. */
function measure(p: Profile): Record<Decoder, number> {
  const m = alternate((d) => pass(p, d));
  const values = p.pages.length * p.n;
  return { JS: (m.JS / values) * 1e9, wasm: (m.wasm / values) * 1e9 };
}

const rows: string[][] = [];
const results: Array<{ profile: string; jsNsPerValue: number; wasmNsPerValue: number }> = [];
for (const p of PROFILES) {
  log(`${p.name} …`);
  check(p);
  const m = measure(p);
  results.push({ profile: p.name, jsNsPerValue: m.JS, wasmNsPerValue: m.wasm });
  rows.push([p.name, m.JS.toFixed(2), m.wasm.toFixed(2), `${(m.JS / m.wasm).toFixed(2)}×`]);
}

// Short pages: the kernel is called directly below the thresholds to see where it stops paying.
const shortRows: string[][] = [];
const shortResults: Array<{ n: number; kind: string; jsNsPerCall: number; wasmNsPerCall: number }> = [];
const kernel = rleKernel()!;
for (const n of [16, 32, 64, 128, 256, 1024]) {
  for (const kind of ['indices w10, packed 18 / RLE 17', 'def levels, packed 14 / RLE 30']) {
    const lv = kind.startsWith('def');
    const p = profile(kind, 9 + n, lv ? { width: 1, max: 1, n, packed: 14, rle: 30, total: 400_000 } : { width: 10, n, packed: 18, rle: 17, total: 400_000 });
    const run = (d: Decoder): number => {
      const t0 = performance.now();
      for (const b of p.pages) {
        if (lv && d === 'JS') levelsJs(b, 0, b.length, 1, lvlOut, n, 0);
        else if (lv) kernel.levels(b, 0, b.length, 1, lvlOut, n, 0);
        else if (d === 'JS') rleHybridJs(b, 0, b.length, 10, idxOut, 0, n);
        else kernel.indices(b, 0, b.length, 10, idxOut, 0, n);
      }
      return ((performance.now() - t0) / p.pages.length) * 1e6;
    };
    const { JS: js, wasm } = alternate(run);
    shortResults.push({ n, kind, jsNsPerCall: js, wasmNsPerCall: wasm });
    shortRows.push([kind, String(n), js.toFixed(0), wasm.toFixed(0), `${(js / wasm).toFixed(2)}×`]);
  }
}

// Indices mode with nulls (values.ts `indices`): decode, then merge with the validity bytes, in
// JS (rleHybridJs and the JS merge loop) or in the kernel (rleIndicesWithNulls).
const nullRows: string[][] = [];
const nullResults: Array<{ density: number; jsNsPerRow: number; wasmNsPerRow: number }> = [];
for (const density of [0.3, 0.7, 0.95]) {
  const r = rng(50);
  const n = 20_000;
  const pages = Array.from({ length: 100 }, () => {
    const valid = new Uint8Array(n);
    let present = 0;
    for (let i = 0; i < n; i++) present += valid[i] = r() < density ? 1 : 0;
    return { valid, present, b: page(r, 12, present, 500, 0, 4096) };
  });
  const idx = new Int32Array(n + 1);
  const rowIdx = new Int32Array(n);
  const run = (d: Decoder): number => {
    const t0 = performance.now();
    for (const { valid, present, b } of pages) {
      if (d === 'wasm') {
        if (!rleIndicesWithNulls(b, 0, b.length, 12, valid, 0, n, present, 4096, rowIdx)) throw new Error('the kernel declined a page');
        continue;
      }
      rleHybridJs(b, 0, b.length, 12, idx, 0, present);
      for (let i = 0, k = 0; i < n; i++) {
        const v = valid[i]!;
        rowIdx[i] = 4096 ^ ((idx[k]! ^ 4096) & -v);
        k += v;
      }
    }
    return ((performance.now() - t0) / (pages.length * n)) * 1e6;
  };
  const { JS: js, wasm } = alternate(run);
  nullResults.push({ density, jsNsPerRow: js, wasmNsPerRow: wasm });
  nullRows.push([`${Math.round(density * 100)}%`, js.toFixed(2), wasm.toFixed(2), `${(js / wasm).toFixed(2)}×`]);
}

if (args.json)
  emitJson({
    bench: 'rle',
    machine: machine(),
    reps,
    minWasmIndices: MIN_WASM_INDICES,
    minWasmLevels: MIN_WASM_LEVELS,
    results,
    short: shortResults,
    nulls: nullResults,
  });
else {
  printTable(`RLE / bit-packed hybrid decode, median of ${reps} interleaved passes (ns per value)`, ['page shape', 'JS', 'wasm', 'JS / wasm'], rows);
  printTable(
    `Short pages, kernel called directly (ns per call; the reader uses wasm from ${MIN_WASM_INDICES} indices, ${MIN_WASM_LEVELS} levels)`,
    ['shape', 'values', 'JS', 'wasm', 'JS / wasm'],
    shortRows,
  );
  printTable(
    `Indices mode with nulls: width 12, 20,000 rows per page, median of ${reps} (ns per row)`,
    ['valid rows', 'JS decode + merge', 'wasm decode + merge', 'JS / wasm'],
    nullRows,
  );
}
