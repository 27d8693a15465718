/**
 * What an open dashboard costs the server: `sluice serve` in a child process, a client pulling
 * every batch of the run (two requests in flight, as `@sluice/client` does), with and without a
 * headless Chromium page on /dashboard polling it, alternating, a fresh server per run so every
 * run makes its batches. Prints rows/s of each run, the server process's CPU seconds per million
 * rows (all its threads, from /proc: what the page costs the server, less disturbed than wall time
 * by other load on a shared host), and the medians; then, on an idle server, the
 * server's own time per `/v1/metrics.json` request (its request-duration histogram) times the
 * page's requests per second: the cost without the noise of a shared host (on which the browser's
 * own drawing also competes for the cores; a real viewer's browser runs elsewhere).
 *
 *   npx tsx bench/dashboard-overhead.ts [--rows 200000] [--batch-size 1024] [--epochs 2] [--runs 5] [--interval 1000] [--json]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { getPreset } from '@sluice/core/gen';
import { collectErrors, launchBrowser, noBrowser } from '../test/browser.js';
import { benchCacheDir, cachedDataset, emitJson, intArg, log, machine, median, printTable } from './lib.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string' },
    'batch-size': { type: 'string' },
    epochs: { type: 'string' },
    runs: { type: 'string' },
    interval: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const ROWS = intArg(args.rows, 200_000, '--rows');
const BATCH = intArg(args['batch-size'], 1024, '--batch-size');
const EPOCHS = intArg(args.epochs, 2, '--epochs');
const RUNS = intArg(args.runs, 5, '--runs');
const INTERVAL = intArg(args.interval, 1000, '--interval', 100);
if (noBrowser !== null) {
  log(`cannot run: ${noBrowser}`);
  process.exit(2);
}

const BIN = fileURLToPath(new URL('../packages/core/bin/sluice.js', import.meta.url));
const TOKEN = 'overhead-bench';
const data = await cachedDataset({ preset: 'rm1', rows: ROWS });
const planFile = join(benchCacheDir(), `dashboard-overhead-plan-${BATCH}-${EPOCHS}.json`);
writeFileSync(planFile, JSON.stringify({ ...getPreset('rm1').defaultPlan(), batchSize: BATCH, epochs: EPOCHS }));

/** Starts `sluice serve` on a free port; resolves once it says where. */
function startServer(): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--plan', planFile, '--input', data.path, '--port', '0', '--token', TOKEN], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = / at (http:\/\/[^/\s]+)\/v1\/batches/.exec(err);
      if (m) resolve({ child, url: m[1]! });
    });
    child.on('exit', (code) => reject(new Error(`sluice serve exited (${code}): ${err}`)));
  });
}

async function stopServer(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** CPU seconds a process has used, all threads, user and system (Linux /proc; clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, so split after its closing parenthesis): utime and stime are the 12th and 13th.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const headers = { authorization: `Bearer ${TOKEN}`, accept: 'application/msgpack' };

/** Pulls every batch, two requests in flight; resolves to rows/s from the first request to the last body. */
async function pullAll(url: string): Promise<number> {
  const info = (await (await fetch(`${url}/v1/info`, { headers })).json()) as { batches: number };
  const t0 = performance.now();
  let next = 0;
  let bytes = 0;
  const lane = async (): Promise<void> => {
    while (next < info.batches) {
      const seq = next++;
      const r = await fetch(`${url}/v1/batches/${seq}`, { headers });
      if (r.status !== 200) throw new Error(`batch ${seq}: HTTP ${r.status}`);
      bytes += (await r.arrayBuffer()).byteLength;
    }
  };
  await Promise.all([lane(), lane()]);
  const seconds = (performance.now() - t0) / 1000;
  void bytes;
  return (ROWS * EPOCHS) / seconds;
}

/** The server's time answering the dashboard (its request-duration histogram, route "dashboard"): requests and seconds. */
async function dashboardTime(url: string): Promise<{ requests: number; seconds: number }> {
  const text = await (await fetch(`${url}/metrics`, { headers })).text();
  const sum = (name: string): number =>
    [...text.matchAll(new RegExp(`^${name}\\{route="dashboard"[^}]*\\} ([0-9.e+-]+)$`, 'gm'))].reduce((s, m) => s + Number(m[1]), 0);
  return { requests: sum('sluice_request_duration_seconds_count'), seconds: sum('sluice_request_duration_seconds_sum') };
}

/**
 * On an idle server: the server's time per snapshot request, from its own histogram (request to
 * response handed to the socket), over `n` requests after a warm-up.
 */
async function idleSnapshotMs(n: number): Promise<number> {
  const { child, url } = await startServer();
  try {
    const get = async (): Promise<void> => void (await (await fetch(`${url}/v1/metrics.json`, { headers })).arrayBuffer());
    for (let i = 0; i < 20; i++) await get();
    const before = await dashboardTime(url);
    for (let i = 0; i < n; i++) await get();
    const after = await dashboardTime(url);
    return ((after.seconds - before.seconds) * 1000) / (after.requests - before.requests);
  } finally {
    await stopServer(child);
  }
}

const { browser, close } = await launchBrowser();
const without: number[] = [];
const withPage: number[] = [];
const cpuWithout: number[] = [];
const cpuWith: number[] = [];
const pollsPerSecond: number[] = [];
try {
  for (let i = 0; i < RUNS * 2; i++) {
    const open = i % 2 === 1;
    const { child, url } = await startServer();
    try {
      let page = null;
      let errors: string[] = [];
      if (open) {
        page = await browser.newPage();
        errors = collectErrors(page);
        await page.goto(`${url}/dashboard?token=${TOKEN}&interval=${INTERVAL}`);
        await page.waitForFunction(() => (window as unknown as { sluiceDashboard: { polls: number } }).sluiceDashboard.polls > 0);
      }
      const t0 = performance.now();
      const cpu0 = cpuSeconds(child.pid!);
      const rate = await pullAll(url);
      const cpu = ((cpuSeconds(child.pid!) - cpu0) * 1e6) / (ROWS * EPOCHS);
      const seconds = (performance.now() - t0) / 1000;
      (open ? withPage : without).push(rate);
      (open ? cpuWith : cpuWithout).push(cpu);
      if (page !== null) {
        pollsPerSecond.push((await dashboardTime(url)).requests / seconds);
        await page.close();
        if (errors.length > 0) throw new Error(`the page logged errors: ${errors.join('; ')}`);
      }
      log(
        `run ${i + 1}/${RUNS * 2}: ${open ? 'page open  ' : 'page closed'} ${Math.round(rate).toLocaleString('en-US')} rows/s, server ${cpu.toFixed(2)} CPU s per million rows`,
      );
    } finally {
      await stopServer(child);
    }
  }
} finally {
  await close();
}

const mWithout = median(without);
const mWith = median(withPage);
const costMs = await idleSnapshotMs(500);
const polls = median(pollsPerSecond);
const result = {
  bench: 'dashboard-overhead',
  machine: machine(),
  rows: ROWS * EPOCHS,
  batchSize: BATCH,
  runs: RUNS,
  intervalMs: INTERVAL,
  results: [
    { page: 'closed', rowsPerSecond: mWithout, runs: without, serverCpuSecondsPerMillionRows: cpuWithout },
    { page: 'open', rowsPerSecond: mWith, runs: withPage, serverCpuSecondsPerMillionRows: cpuWith },
  ],
  throughputChange: mWith / mWithout - 1,
  serverCpuChange: median(cpuWith) / median(cpuWithout) - 1,
  serverMsPerDashboardRequest: costMs,
  dashboardRequestsPerSecond: polls,
  // The server's busy time the page's polling causes, as a share of one core's second.
  serverShareOfOneCore: (costMs * polls) / 1000,
};
if (args.json) emitJson(result);
else {
  printTable(
    `Dashboard overhead: ${(ROWS * EPOCHS).toLocaleString('en-US')} RM1 rows in batches of ${BATCH} from sluice serve, ${RUNS} runs each, alternating`,
    ['page', 'median rows/s', 'runs (rows/s)', 'median server CPU s / M rows', 'runs'],
    [
      [
        'closed',
        Math.round(mWithout).toLocaleString('en-US'),
        without.map((r) => Math.round(r).toLocaleString('en-US')).join(', '),
        median(cpuWithout).toFixed(2),
        cpuWithout.map((c) => c.toFixed(2)).join(', '),
      ],
      [
        'open',
        Math.round(mWith).toLocaleString('en-US'),
        withPage.map((r) => Math.round(r).toLocaleString('en-US')).join(', '),
        median(cpuWith).toFixed(2),
        cpuWith.map((c) => c.toFixed(2)).join(', '),
      ],
    ],
  );
  log(
    `\nmedian change with the page open: throughput ${(result.throughputChange * 100).toFixed(1)}%, server CPU per row ${(result.serverCpuChange * 100).toFixed(1)}%\n` +
      `server time per /v1/metrics.json request (idle server, 500 requests): ${costMs.toFixed(3)} ms; the page made ${polls.toFixed(2)} dashboard requests/s (page load included) → ${(result.serverShareOfOneCore * 100).toFixed(3)}% of one core\n` +
      `machine: ${JSON.stringify(machine())}`,
  );
}
