/**
 * Scale-out's cost (`npm run bench:cluster`): rows/s reaching one trainer process from a 1-worker
 * and a 2-worker cluster (Redis Streams, docs/cluster.md), beside `sluice serve` with the same plan
 * and file over the same HTTP protocol, and beside an in-process `pipeline()`. The trainer is a
 * child process that reads every batch (msgpack, @sluice/client) and times itself from its first
 * request to its last batch. Contenders alternate, several reps; the ratio 1-worker / serve is the
 * cost of leases and coordination (target ≥ 0.85).
 *
 *   npx tsx bench/cluster.ts [--rows 1000000] [--reps 3] [--batch 4096] [--row-group 25000] [--json]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getPreset } from '../packages/core/src/gen/index.js';
import { cachedDataset, emitJson, fmtInt, fmtRate, fmtRatio, intArg, log, machine, median, printTable, runNodeChild } from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages', 'core', 'bin', 'sluice.js');
const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? undefined : argv[i + 1];
};
const rows = intArg(arg('rows'), 1_000_000, 'rows');
const reps = intArg(arg('reps'), 3, 'reps');
const batchSize = intArg(arg('batch'), 4096, 'batch');
const rowGroup = intArg(arg('row-group'), 25_000, 'row-group');
const json = argv.includes('--json');

/** The trainer: reads every batch from a URL (or runs pipeline() itself) and reports rows and seconds. */
const TRAINER = `
const [mode, target, planPath] = process.argv.slice(1);
const t0 = performance.now();
let rows = 0, batches = 0, t1 = 0, rows1 = 0;
const first = (b) => { if (batches === 1) { t1 = performance.now(); rows1 = b.rows; } };
if (mode === 'inproc') {
  const { pipeline } = await import('@sluice/core');
  const { readFileSync } = await import('node:fs');
  for await (const b of pipeline(JSON.parse(readFileSync(planPath, 'utf8')), { input: target, windowBatches: true })) { rows += b.rows; batches++; first(b); b.release?.(); }
} else {
  const { createClient } = await import('@sluice/client');
  const c = createClient(target);
  for await (const b of c.batches({ prefetch: 2 })) { rows += b.rows; batches++; first(b); b.release?.(); }
  await c.close();
}
const t2 = performance.now();
console.log(JSON.stringify({ rows, batches, seconds: (t2 - t0) / 1000, steady: (rows - rows1) / ((t2 - t1) / 1000) }));
`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Spawns `sluice …` and resolves once its stderr shows `pattern` (its first group: the URL). */
function serving(args: string[], pattern: RegExp): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  return new Promise((resolve, reject) => {
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      const m = pattern.exec(err);
      if (m) resolve({ proc, url: m[1]! });
    });
    proc.once('exit', (code) => reject(new Error(`sluice ${args[0]} exited with ${code}: ${err}`)));
  });
}

const stop = (p: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill('SIGTERM');
  });

/** What a trainer reports: rows, seconds from its start, and rows/s after its first batch (start-up left out). */
interface Trained {
  rows: number;
  seconds: number;
  steady: number;
}

async function trainer(mode: 'http' | 'inproc', target: string, planPath: string): Promise<Trained> {
  const { result } = await runNodeChild<Trained>(['--input-type=module', '-e', TRAINER, mode, target, planPath], { cwd: ROOT });
  return result;
}

async function main(): Promise<void> {
  if (spawnSync('redis-server', ['--version']).status !== 0) throw new Error('bench:cluster needs redis-server (apt-get install redis-server)');
  const data = await cachedDataset({ preset: 'rm1', rows, rowGroupSize: rowGroup });
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-cluster-'));
  const planPath = join(dir, 'plan.json');
  const plan = { ...getPreset('rm1').defaultPlan(), batchSize };
  writeFileSync(planPath, JSON.stringify(plan));
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes'], { stdio: 'ignore' });
  const redisUrl = `redis://127.0.0.1:${port}`;
  await new Promise((r) => setTimeout(r, 300));
  let job = 0;
  const contenders: Record<string, () => Promise<Trained>> = {
    'pipeline() in-process': () => trainer('inproc', data.path, planPath),
    'sluice serve': async () => {
      const s = await serving(['serve', '--plan', planPath, '--input', data.path, '--port', '0'], /at (http:\/\/\S+)\/v1\/batches/);
      try {
        return await trainer('http', s.url, planPath);
      } finally {
        await stop(s.proc);
      }
    },
    ...Object.fromEntries(
      [1, 2].map((n) => [
        `cluster, ${n} worker${n > 1 ? 's' : ''}`,
        async () => {
          const name = `bench-${process.pid}-${job++}`;
          const r = spawnSync(process.execPath, [BIN, 'job', 'submit', name, '--redis', redisUrl, '--plan', planPath, '--input', data.path], {
            encoding: 'utf8',
          });
          if (r.status !== 0) throw new Error(r.stderr);
          const ws = await Promise.all(
            Array.from({ length: n }, () => serving(['worker', '--redis', redisUrl, '--job', name], /serving at (http:\/\/\S+)\/v1\/batches/)),
          );
          try {
            return await trainer('http', ws[0]!.url, planPath);
          } finally {
            await Promise.all(ws.map((w) => stop(w.proc)));
          }
        },
      ]),
    ),
  };
  const names = Object.keys(contenders);
  const rates = new Map<string, number[]>(names.map((n) => [n, []]));
  const steady = new Map<string, number[]>(names.map((n) => [n, []]));
  try {
    for (let rep = 0; rep < reps; rep++) {
      // Alternate the order each rep, so that no contender always runs on a warmer (or busier) host.
      const order = rep % 2 === 0 ? names : [...names].reverse();
      for (const name of order) {
        const r = await contenders[name]!();
        if (r.rows !== data.rows) throw new Error(`${name}: ${r.rows} rows for ${data.rows}`);
        rates.get(name)!.push(r.rows / r.seconds);
        steady.get(name)!.push(r.steady);
        log(`rep ${rep + 1}: ${name}: ${fmtRate(r.rows / r.seconds)} rows/s (${fmtRate(r.steady)} after the first batch)`);
      }
    }
  } finally {
    redis.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  const serve = median(rates.get('sluice serve')!);
  const one = median(rates.get('cluster, 1 worker')!);
  const serveSteady = median(steady.get('sluice serve')!);
  const oneSteady = median(steady.get('cluster, 1 worker')!);
  if (json) {
    emitJson({
      bench: 'cluster',
      machine: machine(),
      rows,
      batchSize,
      rowGroup,
      reps,
      rates: Object.fromEntries(rates),
      steady: Object.fromEntries(steady),
      ratioOneWorkerToServe: one / serve,
      steadyRatioOneWorkerToServe: oneSteady / serveSteady,
    });
    return;
  }
  printTable(
    `rows/s reaching one trainer process, RM1 ${fmtInt(rows)} rows, batches of ${fmtInt(batchSize)}, row groups of ${fmtInt(rowGroup)} (median of ${reps}; all reps)`,
    ['contender', 'rows/s', 'reps', 'vs serve', 'after 1st batch', 'vs serve'],
    names.map((n) => [
      n,
      fmtRate(median(rates.get(n)!)),
      rates
        .get(n)!
        .map((x) => fmtRate(x))
        .join(' '),
      fmtRatio(median(rates.get(n)!) / serve),
      fmtRate(median(steady.get(n)!)),
      fmtRatio(median(steady.get(n)!) / serveSteady),
    ]),
  );
  console.log(
    `\n1-worker cluster / sluice serve: ${fmtRatio(one / serve)} from the trainer's start, ${fmtRatio(oneSteady / serveSteady)} after its first batch (target ≥ 0.85)`,
  );
}

await main();
