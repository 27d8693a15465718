/**
 * Shared helpers of the benchmarks: a seeded data cache, timing (best-of-k, median, interleaved
 * repetitions), table and JSON output, and the peak RSS of a child process.
 *
 * Everything here runs under `npx tsx`; `@sluice/core` resolves to the built package (`npm run
 * build` first, which `npm run bench` does).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { cacheDir, generateDataset, type IdCardinality } from '@sluice/core/gen';
import { reportMachine } from '@sluice/core/internal';

// ---------------------------------------------------------------------------------------------
// Output: progress goes to stderr, results to stdout (a table, or one line of JSON with --json)

/** Progress and notes, on stderr so that `--json` output stays clean. */
export function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

/** One JSON document on one line, so that `npm run bench -- --json` prints JSON Lines. */
export function emitJson(doc: unknown): void {
  process.stdout.write(`${JSON.stringify(doc)}\n`);
}

/**
 * A plain-text table. `align` has one letter per column, `l` or `r`; by default the first column
 * is left-aligned and the others right-aligned.
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[], align?: string): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const left = (i: number): boolean => (align?.[i] ?? (i === 0 ? 'l' : 'r')) === 'l';
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (left(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function printTable(title: string, headers: readonly string[], rows: readonly (readonly string[])[], align?: string): void {
  process.stdout.write(`\n${title}\n${formatTable(headers, rows, align)}\n`);
}

export const fmtSeconds = (s: number): string => (s < 10 ? s.toFixed(3) : s.toFixed(2));
export function fmtRate(perSecond: number): string {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(2)}M`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)}k`;
  return perSecond.toFixed(0);
}
export const fmtRatio = (r: number): string => `${r.toFixed(2)}×`;
export const fmtMB = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
export const fmtInt = (n: number): string => n.toLocaleString('en-US');

/** What the numbers were measured on (printed with every report): the same fields `sluice report` shows. */
export const machine = reportMachine;

// ---------------------------------------------------------------------------------------------
// Arguments

/** Integer option value (accepts 1e6, 1_000_000, 200000). */
export function intArg(value: string | undefined, fallback: number, name: string, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < min) {
    log(`--${name} must be ${min === 1 ? 'a positive integer' : `an integer >= ${min}`}, got ${value}`);
    process.exit(2);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Seeded data cache

export interface CachedDataset {
  readonly path: string;
  readonly preset: string;
  readonly rows: number;
  readonly seed: number;
  readonly rowGroupSize: number;
  readonly bytes: number;
  /** Seconds spent generating it in this process (0 when it came from the cache). */
  readonly generatedSeconds: number;
}

/** `${SLUICE_CACHE_DIR or ~/.cache/sluice}/bench` (created on first use). */
export function benchCacheDir(): string {
  const dir = join(cacheDir(), 'bench');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * The Parquet file of `rows` rows of a preset's seeded synthetic data, generated once into the
 * bench cache and reused afterwards. The key is preset, rows, seed and row-group size; the file
 * is written under a temporary name and renamed, so an interrupted run never leaves half a file.
 */
export async function cachedDataset(opts: { preset: string; rows: number; seed?: number; rowGroupSize?: number; ids?: IdCardinality }): Promise<CachedDataset> {
  const seed = opts.seed ?? 42;
  const rowGroupSize = opts.rowGroupSize ?? 100_000;
  const ids = opts.ids ?? 'skewed';
  // Default ids keep the old name, so files already cached stay in use; other ids get their own.
  const path = join(benchCacheDir(), `${opts.preset}-r${opts.rows}-s${seed}-g${rowGroupSize}${ids === 'skewed' ? '' : `-ids-${ids}`}.parquet`);
  let generatedSeconds = 0;
  if (!existsSync(path)) {
    const tmp = `${path}.partial-${process.pid}`;
    log(`generating ${fmtInt(opts.rows)} ${opts.preset} rows (seed ${seed}, row groups of ${fmtInt(rowGroupSize)}, ${ids} ids) into ${path} …`);
    const t0 = performance.now();
    let lastReport = t0;
    try {
      await generateDataset({
        preset: opts.preset,
        rows: opts.rows,
        out: tmp,
        seed,
        rowGroupSize,
        ids,
        onProgress: (done, total) => {
          const now = performance.now();
          if (now - lastReport > 5000) {
            lastReport = now;
            log(`  ${fmtInt(done)} / ${fmtInt(total)} rows`);
          }
        },
      });
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
    renameSync(tmp, path);
    generatedSeconds = (performance.now() - t0) / 1000;
    log(`  done in ${generatedSeconds.toFixed(1)} s`);
  }
  return { path, preset: opts.preset, rows: opts.rows, seed, rowGroupSize, bytes: statSync(path).size, generatedSeconds };
}

// ---------------------------------------------------------------------------------------------
// Timing

let gcFn: (() => void) | null | undefined;
/** A full GC between measurements, so that one peer's garbage is not collected on another's clock. */
export function collectGarbage(): void {
  if (gcFn === undefined) {
    try {
      setFlagsFromString('--expose_gc');
      gcFn = runInNewContext('gc') as () => void;
    } catch {
      gcFn = null;
    }
  }
  gcFn?.();
}

export const best = (xs: readonly number[]): number => Math.min(...xs);
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Seconds `fn` takes, and what it returned. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { seconds: (performance.now() - t0) / 1000, value };
}

/** What a measured run returns besides its time: rows it produced and anything worth reporting. */
export interface RunOutcome {
  readonly rows: number;
  readonly extra?: Record<string, unknown>;
  /**
   * Set by a run done in another process (`childContenders`): its own wall and CPU seconds, which
   * then replace what this process measured around it (that adds the round trip, and this
   * process's CPU is not the run's).
   */
  readonly seconds?: number;
  readonly cpuSeconds?: number;
}

export interface Contender {
  readonly name: string;
  /** Untimed, once before the first repetition (opening files, building SQL). */
  readonly setup?: () => Promise<void>;
  /** The measured work. */
  readonly run: () => Promise<RunOutcome>;
  /** Untimed, after every repetition (dropping a table). */
  readonly after?: () => Promise<void>;
}

export interface Measurement {
  readonly name: string;
  /** Seconds of every repetition, in order. */
  readonly seconds: number[];
  readonly best: number;
  readonly median: number;
  readonly rows: number;
  /** Cores busy on average during the best repetition: process CPU time (all threads) / wall time. */
  readonly cpuCores: number;
  /** `extra` of the best repetition. */
  readonly extra: Record<string, unknown>;
}

/**
 * One run of `c` after a full GC, then its `after`: its wall and CPU seconds (all of this
 * process's threads; those the run reports itself where it ran in a child process), and what it
 * returned.
 */
async function measureOnce(c: Contender): Promise<{ seconds: number; cpuSeconds: number; value: RunOutcome }> {
  collectGarbage();
  const cpu0 = process.cpuUsage();
  const { seconds, value } = await timed(c.run);
  const used = process.cpuUsage(cpu0);
  await c.after?.();
  return { seconds: value.seconds ?? seconds, cpuSeconds: value.cpuSeconds ?? (used.user + used.system) / 1e6, value };
}

/**
 * Runs every contender `reps` times, interleaved — rep 1 of each, then rep 2 of each, … with
 * the starting contender rotating — so that a noisy neighbour slows all peers alike, and keeps
 * the best time of each. `warmup` rounds run first, the same way but untimed (rows still checked):
 * thread start-up and JIT compilation are paid there rather than in a timed run. Before every
 * run: a pause of `settleMs`, then a GC.
 */
export async function interleaved(contenders: readonly Contender[], reps: number, expectRows: number, warmup = 0, settleMs = 0): Promise<Measurement[]> {
  for (const c of contenders) await c.setup?.();
  const res = contenders.map(() => ({ seconds: [] as number[], cpu: [] as number[], extras: [] as Record<string, unknown>[], rows: 0 }));
  for (let r = -warmup; r < reps; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (((k + r) % contenders.length) + contenders.length) % contenders.length;
      const c = contenders[i]!;
      // The previous run's threads (parked decoders, DuckDB's pool) finish their GC and wind down.
      if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
      const { seconds, cpuSeconds, value } = await measureOnce(c);
      if (value.rows !== expectRows) throw new Error(`${c.name}: produced ${value.rows} rows, expected ${expectRows}`);
      if (r < 0) {
        log(`  warm-up   ${c.name.padEnd(22)} ${fmtSeconds(seconds)} s`);
        continue;
      }
      res[i]!.seconds.push(seconds);
      res[i]!.cpu.push(cpuSeconds / seconds);
      res[i]!.extras.push(value.extra ?? {});
      res[i]!.rows = value.rows;
      log(`  rep ${r + 1}/${reps}  ${c.name.padEnd(22)} ${fmtSeconds(seconds)} s`);
    }
  }
  return contenders.map((c, i) => {
    const s = res[i]!.seconds;
    const b = s.indexOf(best(s));
    return { name: c.name, seconds: s, best: s[b]!, median: median(s), rows: res[i]!.rows, cpuCores: res[i]!.cpu[b]!, extra: res[i]!.extras[b]! };
  });
}

// ---------------------------------------------------------------------------------------------
// The host's own 2-thread scaling

const LOOP_WORKER = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (n) => {
  let x = 0;
  for (let i = 0; i < n; i++) x += Math.log1p(i * 1e-9);
  parentPort.postMessage(x);
});`;

/**
 * What a second thread adds on this host to work that shares nothing: a loop of `Math.log1p`
 * (no memory traffic, no allocation, no GC, compiled once), `iterations` per thread, on one
 * thread and then on two at once; each sample is (2 × one thread's time) ÷ two threads' time, 2
 * where both vCPUs run as fast together as one alone. On the 2-vCPU development VM each vCPU ran
 * this loop at either ~45 or ~80-86 M/s, changing from one sample to the next, so the samples
 * spread from ~1.1 to ~2.8 (bench/README.md, "A noisy host"): a speed-up from a second worker
 * can only be read against them.
 */
export async function hostScaling(samples: number, iterations = 20_000_000): Promise<number[]> {
  const workers = [0, 1].map(() => new Worker(LOOP_WORKER, { eval: true }));
  const pass = (k: number): Promise<number> => {
    const t0 = performance.now();
    return Promise.all(
      workers.slice(0, k).map(
        (w) =>
          new Promise<void>((resolve, reject) => {
            const done = (): void => {
              w.off('error', failed);
              resolve();
            };
            const failed = (e: Error): void => {
              w.off('message', done);
              reject(e);
            };
            w.once('message', done);
            w.once('error', failed);
            w.postMessage(iterations);
          }),
      ),
    ).then(() => performance.now() - t0);
  };
  try {
    await pass(2); // both compile the loop
    const out: number[] = [];
    for (let i = 0; i < samples; i++) {
      const one = await pass(1);
      const two = await pass(2);
      out.push((2 * one) / two);
    }
    return out;
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

// ---------------------------------------------------------------------------------------------
// Child processes

/** Marks a contender child's replies on its stdout. */
const REPLY = '\u0001sluice-bench ';

/**
 * Contenders that run in a child process of their own, kept for all rounds: `script args…` is
 * started with `nodeArgs` (default: this process's Node flags, such as tsx's loader), must call
 * `serveContenders` with contenders of the same names, in the same order, and may log to stderr
 * (passed through). Each run reports the child's own wall and CPU seconds.
 *
 * Why: runs of several Sluice modes in one process (reading with the ops pushed down, decode-only,
 * ops on a backend pool) share decode threads and V8's helper threads, and each mode's runs made
 * TurboFan recompile the others' hot functions and V8 mark more garbage in between: work on the
 * helper threads that a 1-worker run leaves to the idle core but a 2-worker run pays for on a
 * 2-core machine (bench/README.md, "A noisy host"). A trainer's process runs one mode.
 */
export function childContenders(
  names: readonly string[],
  script: string,
  args: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; nodeArgs?: readonly string[] } = {},
): { contenders: Contender[]; close: () => Promise<void> } {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? process.execArgv), script, ...args], {
    env: opts.env ?? process.env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting: Array<{ resolve: (o: Record<string, unknown>) => void; reject: (e: Error) => void }> = [];
  let ended: Error | null = null;
  let buf = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      // Anything else on the child's stdout (V8's --trace-* output, a stray print) is passed on.
      if (!line.startsWith(REPLY)) {
        process.stderr.write(`${line}\n`);
        continue;
      }
      const w = waiting.shift();
      if (w === undefined) continue;
      try {
        w.resolve(JSON.parse(line.slice(REPLY.length)) as Record<string, unknown>);
      } catch {
        w.reject(new Error(`contender child (${names.join(', ')}) printed: ${line.slice(0, 200)}`));
      }
    }
  });
  const fail = (e: Error): void => {
    ended ??= e;
    for (const w of waiting.splice(0)) w.reject(ended);
  };
  child.on('error', fail);
  child.on('exit', (code, signal) => fail(new Error(`contender child (${names.join(', ')}) exited with ${code ?? signal} (its stderr is above)`)));
  const next = (): Promise<Record<string, unknown>> =>
    ended !== null
      ? Promise.reject(ended)
      : new Promise((resolve, reject) => {
          waiting.push({ resolve, reject });
        });
  const ready = next().then((m) => {
    const got = m.ready as string[] | undefined;
    if (got === undefined || got.join('\n') !== names.join('\n'))
      throw new Error(`contender child serves ${JSON.stringify(got)}, expected ${JSON.stringify(names)}`);
  });
  ready.catch(() => undefined);
  const ask = async (k: number): Promise<RunOutcome> => {
    const reply = next();
    child.stdin.write(`${k}\n`);
    const m = await reply;
    if (typeof m.error === 'string') throw new Error(`${names[k]} (child process): ${m.error}`);
    return m as unknown as RunOutcome;
  };
  return {
    contenders: names.map((name, k) => ({ name, setup: () => ready, run: () => ask(k) })),
    close: async () => {
      if (ended !== null) return;
      const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.stdin.end();
      await done;
    },
  };
}

/**
 * The child side of `childContenders`: sets every contender up, then runs contender `k` for each
 * line `k` on stdin — after a full GC, timed, its CPU taken over all this process's threads — and
 * answers with one JSON line. Returns when stdin ends.
 */
export async function serveContenders(contenders: readonly Contender[]): Promise<void> {
  const say = (o: unknown): void => {
    process.stdout.write(`${REPLY}${JSON.stringify(o)}\n`);
  };
  for (const c of contenders) await c.setup?.();
  say({ ready: contenders.map((c) => c.name) });
  for await (const line of createInterface({ input: process.stdin })) {
    const c = contenders[Number(line)];
    if (c === undefined) {
      say({ error: `no contender ${JSON.stringify(line)}` });
      continue;
    }
    try {
      const { seconds, cpuSeconds, value } = await measureOnce(c);
      say({ ...value, seconds, cpuSeconds });
    } catch (e) {
      say({ error: (e as Error).stack ?? String(e) });
    }
  }
}

export interface ChildResult<T> {
  /** The last line of the child's stdout, parsed as JSON. */
  readonly result: T;
  readonly wallSeconds: number;
  readonly stderr: string;
}

/**
 * Runs `node args…` in a child process and parses the last line of its stdout as JSON. A child
 * reports its own peak RSS (see `peakRssReport`), which covers all its threads — the only way to
 * get it from Node, which does not expose a child's rusage.
 */
export function runNodeChild<T>(
  args: readonly string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; onStderr?: (s: string) => void } = {},
): Promise<ChildResult<T>> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { cwd: opts.cwd ?? process.cwd(), env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      opts.onStderr?.(d);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const wallSeconds = (performance.now() - t0) / 1000;
      if (code !== 0) {
        reject(new Error(`child exited with ${code ?? signal}${opts.onStderr ? ' (its stderr is above)' : `:\n${err.trim()}`}`));
        return;
      }
      const last = out.trim().split('\n').pop() ?? '';
      try {
        resolve({ result: JSON.parse(last) as T, wallSeconds, stderr: err });
      } catch {
        reject(new Error(`child printed no JSON result:\n${out}\n${err}`));
      }
    });
  });
}

/**
 * Source of `peakRss()` for a child script (which must `import { readFileSync } from 'node:fs'`):
 * its peak RSS in bytes, from /proc/self/status VmHWM where there is one (Linux: the high-water
 * mark of the whole process, all threads), else `process.resourceUsage().maxRSS` (getrusage
 * ru_maxrss, KiB).
 */
export const PEAK_RSS_SNIPPET = `
function peakRss() {
  const maxRss = process.resourceUsage().maxRSS * 1024;
  try {
    const m = /^VmHWM:\\s*(\\d+)\\s*kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return { bytes: Number(m[1]) * 1024, source: 'VmHWM', maxRss };
  } catch {}
  return { bytes: maxRss, source: 'ru_maxrss', maxRss };
}`;
