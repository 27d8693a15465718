/**
 * Peak memory of streaming: a child Node process runs the RM1 default plan over 10M rows (cached
 * file, ~390 MB) with the default prefetch, discards every batch, and reports its own peak RSS
 * (VmHWM: all threads, decoders and workers included). Target: under 1 GB.
 *
 *   npx tsx bench/rss.ts [--rows 10000000] [--workers N] [--prefetch N] [--decoders N] [--release] [--inline] [--shuffle] [--seed 42] [--json]
 *   --release calls `b.release()` on each batch, as a training loop may (batch/arena.ts: batches
 *   are then laid out in reused shared memory, whose slots count in the peak).
 *
 * `--inline` runs core's in-process cpu backend even where @sluice/backend-cpu is built.
 * `--shuffle` reads shuffled (seed 42, bufferRows 100000, the plan default): a window then holds
 * up to bufferRows rows of the computed columns.
 *
 * The child is plain JavaScript importing the built `@sluice/core` (no tsx in it), so what is
 * measured is the pipeline and Node itself.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_PREFETCH } from '@sluice/core/internal';
import { cachedDataset, emitJson, fmtInt, fmtMB, fmtRate, fmtSeconds, intArg, log, machine, PEAK_RSS_SNIPPET, printTable, runNodeChild } from './lib.js';

const TARGET_BYTES = 1e9;

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string' },
    workers: { type: 'string' },
    prefetch: { type: 'string' },
    decoders: { type: 'string' },
    inline: { type: 'boolean', default: false },
    release: { type: 'boolean', default: false },
    shuffle: { type: 'boolean', default: false },
    seed: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  log(
    'usage: npx tsx bench/rss.ts [--rows N (default 10000000)] [--workers N] [--prefetch N] [--decoders N] [--release] [--inline] [--shuffle] [--seed 42] [--json]',
  );
  process.exit(0);
}
const ROWS = intArg(args.rows, 10_000_000, 'rows');
const SEED = intArg(args.seed, 42, 'seed');

interface ChildConfig {
  /** URLs of the built packages. */
  core: string;
  gen: string;
  cpuBackend: string;
  file: string;
  workers: number | null;
  prefetch: number | null;
  decoders: number | null;
  release: boolean;
  inline: boolean;
  shuffle: boolean;
}

interface ChildReport {
  rows: number;
  batches: number;
  seconds: number;
  cpuCores: number;
  backend: string;
  cpuBackendPackage: string;
  maxBuffered: number;
  /** RSS after importing core, before the run. */
  baselineRss: number;
  /** RSS sampled at 25, 50, 75 and 100% of the rows (growth would show a leak). */
  rssAt: number[];
  peak: { bytes: number; source: string; maxRss: number };
}

// The child: a plain ESM file in a temporary folder, importing the built core by URL (threads
// inherit `node`'s flags, so `--input-type=module -e` is no way to run it). It writes one JSON
// line to stdout at the end.
const CHILD = `
import { readFileSync } from 'node:fs';
const cfg = JSON.parse(process.env.SLUICE_BENCH_RSS);
const { inlineCpuBackend, pipeline, registerBackend } = await import(cfg.core);
const { getPreset } = await import(cfg.gen);
${PEAK_RSS_SNIPPET}
let cpuBackendPackage;
if (cfg.inline) { registerBackend('inline-cpu', inlineCpuBackend); cpuBackendPackage = "core's in-process cpu backend (--inline)"; }
else try { await import(cfg.cpuBackend); cpuBackendPackage = '@sluice/backend-cpu (worker pool)'; }
catch (e) { cpuBackendPackage = "core's in-process cpu backend (" + String(e.message).split('\\n')[0].slice(0, 100) + ')'; }
const baselineRss = process.memoryUsage.rss();
const name = cfg.inline ? 'inline-cpu' : 'cpu';
const backend = cfg.workers === null ? (cfg.inline ? { name } : undefined) : { name, workers: cfg.workers };
const opts = { input: cfg.file };
if (backend) opts.backend = backend;
if (cfg.prefetch !== null) opts.prefetch = cfg.prefetch;
if (cfg.decoders !== null) opts.decoders = cfg.decoders;
const plan = getPreset('rm1').defaultPlan();
if (cfg.shuffle) plan.shuffle = { seed: 42, bufferRows: 100000 };
const p = pipeline(plan, opts);
const info = await p.info();
const total = info.rowsPerEpoch;
const marks = [0.25, 0.5, 0.75];
const rssAt = [];
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let rows = 0;
for await (const b of p) {
  rows += b.rows;
  if (cfg.release) b.release();
  while (marks.length > 0 && rows >= marks[0] * total) { marks.shift(); rssAt.push(process.memoryUsage.rss()); }
}
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
rssAt.push(process.memoryUsage.rss());
const m = p.metrics();
process.stdout.write(JSON.stringify({
  rows, batches: m.batches, seconds, cpuCores: (cpu.user + cpu.system) / 1e6 / seconds, backend: info.backend, cpuBackendPackage,
  maxBuffered: m.maxBuffered, baselineRss, rssAt, peak: peakRss(),
}) + '\\n');
`;

const data = await cachedDataset({ preset: 'rm1', rows: ROWS, seed: SEED });
const require = createRequire(import.meta.url);
const resolveUrl = (name: string): string => {
  try {
    return pathToFileURL(require.resolve(name)).href;
  } catch {
    return name; // the child's import fails the same way and reports why
  }
};
const cfg: ChildConfig = {
  core: resolveUrl('@sluice/core/internal'),
  gen: resolveUrl('@sluice/core/gen'),
  cpuBackend: resolveUrl('@sluice/backend-cpu'),
  file: data.path,
  workers: args.workers === undefined ? null : intArg(args.workers, 1, 'workers'),
  prefetch: args.prefetch === undefined ? null : intArg(args.prefetch, 1, 'prefetch'),
  decoders: args.decoders === undefined ? null : intArg(args.decoders, 1, 'decoders'),
  release: args.release ?? false,
  inline: args.inline ?? false,
  shuffle: args.shuffle ?? false,
};
log(`streaming ${fmtInt(ROWS)} RM1 rows (${fmtMB(data.bytes)}) in a child process …`);
const tmp = mkdtempSync(join(tmpdir(), 'sluice-rss-'));
const script = join(tmp, 'child.mjs');
writeFileSync(script, CHILD);
let child: Awaited<ReturnType<typeof runNodeChild<ChildReport>>>;
try {
  child = await runNodeChild<ChildReport>([script], {
    env: { ...process.env, SLUICE_BENCH_RSS: JSON.stringify(cfg) },
    onStderr: (s) => process.stderr.write(s),
  });
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
const { result: r, wallSeconds } = child;
if (r.rows !== ROWS) throw new Error(`the child streamed ${r.rows} rows, expected ${ROWS}`);

const within = r.peak.bytes <= TARGET_BYTES;
const settings = {
  backend: `${r.backend} — ${r.cpuBackendPackage}`,
  workers: cfg.workers ?? 'backend default',
  decoders: cfg.decoders ?? 'pipeline default',
  prefetch: cfg.prefetch ?? `default (${DEFAULT_PREFETCH})`,
  batches: cfg.release ? 'released after use (reused memory)' : 'dropped',
  order: cfg.shuffle ? 'shuffled (seed 42, bufferRows 100000)' : 'file order',
};
if (args.json) {
  emitJson({
    bench: 'rss',
    env: machine(),
    file: { path: data.path, bytes: data.bytes, generatedSeconds: +data.generatedSeconds.toFixed(1) },
    settings,
    ...r,
    childWallSeconds: wallSeconds,
    targetBytes: TARGET_BYTES,
    withinTarget: within,
  });
} else {
  const mb = (b: number): string => `${(b / 1e6).toFixed(0)} MB`;
  process.stdout.write(
    `\nSluice streaming memory — RM1 default plan, batches discarded${cfg.release ? ' and released' : ''}\n${Object.entries({ ...machine(), ...settings })
      .map(([k, v]) => `  ${k}: ${String(v)}`)
      .join('\n')}\n`,
  );
  printTable(
    `Peak RSS streaming ${fmtInt(ROWS)} RM1 rows (${fmtMB(data.bytes)} Parquet) in a child process`,
    ['measure', 'value'],
    [
      ['rows streamed', fmtInt(r.rows)],
      ['batches', fmtInt(r.batches)],
      ['time', `${fmtSeconds(r.seconds)} s (${fmtRate(r.rows / r.seconds)} rows/s, ${r.cpuCores.toFixed(2)} cores)`],
      ['most batches buffered', String(r.maxBuffered)],
      ['RSS after import', mb(r.baselineRss)],
      ['RSS at 25/50/75/100%', r.rssAt.map(mb).join(' / ')],
      [`peak RSS (${r.peak.source})`, mb(r.peak.bytes)],
      ['target', `${mb(TARGET_BYTES)} — ${within ? 'within' : 'OVER'} (${((r.peak.bytes / TARGET_BYTES) * 100).toFixed(0)}% of it)`],
    ],
    'll',
  );
}
