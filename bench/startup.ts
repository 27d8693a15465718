/**
 * CLI start-up: wall time of `sluice --help`, `sluice run --help` and `sluice --version`, each a
 * fresh `node packages/core/bin/sluice.js` process, beside a bare `node -e ''` measured in the same
 * rounds (the peer: what any Node command costs on this machine); and of a short `sluice bench`
 * run, 2 workers over 8,192 RM1 rows in one row group — one batch, so its wall time is the time to
 * the first batch plus the exit. These answer from static text
 * (cli/usage.ts) through the parser (cli/program.ts, commander: the one library they load), so
 * they should cost bare Node plus a few milliseconds; they must stay under 150 ms. (Building that
 * text must not call toLocaleString: its first call loads ICU's data, ~15 ms here.)
 *
 * Then one more run of each with an import recorder (a node:module `load` hook, plus the CommonJS
 * cache at exit) lists the modules it loaded and flags the heavy ones (Parquet, Arrow, RxJS, the
 * HTTP stack, the backends, core's pipeline layers): none are expected.
 *
 * `--compare DIR` times each command of another build too (DIR/bin/sluice.js, e.g. a copy of
 * packages/core's bin/, dist/, assets/, build/ and package.json made before a change, placed
 * beside packages/core, say packages/core-before/, so that it resolves the same node_modules and
 * finds the backends' files where the bundle looks for them, at ../../backend-*), in the same
 * rounds. The bundle finds its own files from where it lies, its decode worker included.
 *
 *   npm run bench:startup [-- --runs 20 --compare DIR --json]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importRecorder } from './module-recorder.js';
import { parseArgs } from 'node:util';
import { getPreset } from '@sluice/core/gen';
import { cachedDataset, emitJson, fmtRatio, intArg, log, machine, median, printTable } from './lib.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' }, compare: { type: 'string' }, json: { type: 'boolean' } } });
const RUNS = intArg(values.runs, 20, 'runs');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages', 'core', 'bin', 'sluice.js');

interface Case {
  readonly name: string;
  readonly args: readonly string[];
}

const PEER: Case = { name: "node -e ''", args: ['-e', ''] };
const dir = mkdtempSync(join(tmpdir(), 'sluice-startup-'));
const plan = join(dir, 'rm1-plan.json');
writeFileSync(plan, JSON.stringify(getPreset('rm1').defaultPlan()));
const oneBatch = await cachedDataset({ preset: 'rm1', rows: 8192, rowGroupSize: 8192 });
const casesOf = (bin: string, tag: string): Case[] => [
  { name: `sluice --help${tag}`, args: [bin, '--help'] },
  { name: `sluice run --help${tag}`, args: [bin, 'run', '--help'] },
  { name: `sluice --version${tag}`, args: [bin, '--version'] },
  { name: `sluice bench, 1 batch${tag}`, args: [bin, 'bench', '--plan', plan, '--input', oneBatch.path, '--workers', '2', '--json', '--quiet'] },
];
const CASES: readonly Case[] = [
  ...casesOf(BIN, ''),
  ...(values.compare === undefined ? [] : casesOf(join(resolve(values.compare), 'bin', 'sluice.js'), ` (${values.compare})`)),
];
/** What a help or version answer must not load; a bench run loads the pipeline by design. */
const answersFromText = (c: Case): boolean => !c.name.startsWith('sluice bench');

/** Heavy dependencies a help or version answer must not load, by a pattern of their file URLs. */
const HEAVY: ReadonlyArray<readonly [string, RegExp]> = [
  ['parquet-wasm', /\/node_modules\/parquet-wasm\//],
  ['hyparquet', /\/node_modules\/hyparquet[^/]*\//],
  ['apache-arrow', /\/node_modules\/apache-arrow\//],
  ['rxjs', /\/node_modules\/rxjs\//],
  ['zstddec', /\/node_modules\/zstddec\//],
  ['prom-client', /\/node_modules\/prom-client\//],
  ['msgpackr', /\/node_modules\/msgpackr\//],
  ['undici', /\/node_modules\/undici\//],
  ['backends', /\/(packages|@sluice)\/backend-[^/]+\//],
  ['core pipeline layers', /\/packages\/core\/(dist|src)\/(batch|reader|output|plan|backend|stream|placement|pipeline|serve|transport|gen|lookahead)\//],
];

/** One process's wall time in ms; fails on a non-zero exit, which would time an error path. */
function wallMs(c: Case): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, c.args, { cwd: ROOT, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${c.name} exited ${String(r.status)}: ${r.stderr}`);
  return ms;
}

const p90 = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(0.9 * xs.length) - 1)]!;

/** The modules one run of `c` loads (node: built-ins left out) and the heavy ones among them. */
function loaded(c: Case, dir: string): { modules: number; heavy: string[] } {
  const { preload, out } = importRecorder(dir);
  wallMs({ name: c.name, args: ['--import', preload, ...c.args] });
  const urls = [
    ...new Set(
      readFileSync(out, 'utf8')
        .split('\n')
        .filter((u) => u !== '' && !u.startsWith('node:') && !u.includes(dir)),
    ),
  ];
  // A file of the CLI's bundle stands for the modules it holds (its build lists them).
  const held = JSON.parse(readFileSync(join(ROOT, 'packages/core/dist/bundle/modules.json'), 'utf8')) as Record<string, string[]>;
  const sources = urls.flatMap((u) => held[relative(ROOT, fileURLToPath(u))]?.map((m) => pathToFileURL(join(ROOT, m)).href) ?? [u]);
  return { modules: urls.length, heavy: HEAVY.filter(([, re]) => sources.some((u) => re.test(u))).map(([name]) => name) };
}

log(`timing ${CASES.length} commands and bare node, ${RUNS} rounds…`);
// Rounds interleave the cases, so a busy moment on a shared machine falls on all of them alike.
const times = new Map<string, number[]>([PEER, ...CASES].map((c) => [c.name, []]));
wallMs(PEER);
for (const c of CASES) wallMs(c);
for (let i = 0; i < RUNS; i++) for (const c of [PEER, ...CASES]) times.get(c.name)!.push(wallMs(c));

const rows = [PEER, ...CASES].map((c) => {
  const ms = times.get(c.name)!;
  const l = c === PEER ? { modules: 0, heavy: [] } : loaded(c, dir);
  return {
    command: c.name,
    medianMs: median(ms),
    p90Ms: p90(ms),
    vsNode: median(ms) / median(times.get(PEER.name)!),
    modules: l.modules,
    heavy: answersFromText(c) ? l.heavy : null,
  };
});
rmSync(dir, { recursive: true, force: true });

if (values.json) {
  emitJson({ bench: 'startup', runs: RUNS, machine: machine(), results: rows });
} else {
  printTable(
    `CLI start-up, ${RUNS} runs each (wall ms of a fresh process; bare node is the peer)`,
    ['command', 'median ms', 'p90 ms', 'median / node', 'modules loaded', 'heavy modules loaded'],
    rows.map((r) => [
      r.command,
      r.medianMs.toFixed(0),
      r.p90Ms.toFixed(0),
      fmtRatio(r.vsNode),
      r === rows[0] ? '-' : String(r.modules),
      r === rows[0] ? '-' : r.heavy === null ? 'n/a (runs the pipeline)' : r.heavy.join(', ') || 'none',
    ]),
    'lrrrrl',
  );
}
