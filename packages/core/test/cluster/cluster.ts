/**
 * The cluster tests' pieces: a small data set and job, `sluice worker` processes (the built bin),
 * trainers reading through @sluice/client, and the oracle — the same plan run by `pipeline()` on
 * this machine with `windowBatches`, digested batch by batch.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@sluice/client';
import type { PlanSpec } from '@sluice/ops';
import { generateDataset } from '../../src/gen/index.js';
import { pipeline } from '../../src/pipeline/pipeline.js';
import { buildJob, submitJob, type JobSpec } from '../../src/cluster/index.js';
import type { Redis } from 'ioredis';

const BIN = join(fileURLToPath(new URL('../../bin/sluice.js', import.meta.url)));

/** 12,000 RM1 rows in row groups of 2,000. */
export async function dataset(dir: string): Promise<string> {
  const input = join(dir, 'rm1.parquet');
  await generateDataset({ preset: 'rm1', rows: 12_000, rowGroupSize: 2_000, out: input });
  return input;
}

/** A shuffled two-epoch plan over a few dense and sparse features: windows of two row groups. */
export function plan(): PlanSpec {
  return {
    batchSize: 500,
    label: 'label',
    epochs: 2,
    shuffle: { seed: 11, bufferRows: 4_000 },
    backend: { name: 'cpu', workers: 1 },
    features: [
      { name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
      { name: 'I2', input: 'I2', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
      { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 1000 }] },
      { name: 'C2', input: 'C2', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 1000 }] },
    ],
  } as PlanSpec;
}

/** The parts of a batch that are its data, digested. */
export function digest(b: { dense: { data: Float32Array }; sparse: { lengths: Int32Array; values: BigInt64Array }; labels: Float32Array | null }): string {
  const h = createHash('sha256');
  for (const a of [b.dense.data, b.sparse.lengths, b.sparse.values, b.labels ?? new Float32Array()])
    h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return h.digest('hex').slice(0, 16);
}

/** The job's sequence as `pipeline()` yields it on one machine: digest by seq. */
export async function oracle(spec: PlanSpec, input: string): Promise<string[]> {
  const out: string[] = [];
  for await (const b of pipeline(spec, { input, windowBatches: true })) {
    if (b.seq !== out.length) throw new Error(`oracle: seq ${b.seq} at ${out.length}`);
    out.push(digest(b));
    b.release?.();
  }
  return out;
}

/** Builds and submits a job. */
export async function submit(redis: Redis, name: string, spec: PlanSpec, input: string, splitBatches = 2): Promise<JobSpec> {
  const job = await buildJob({ name, plan: spec, input, splitBatches });
  await submitJob(redis, job);
  return job;
}

/** A `sluice worker` process. */
export interface WorkerProc {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly id: string;
  stderr(): string;
  /** Sends `signal` and resolves once the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** Starts `sluice worker` for `job` and resolves once it serves. */
export function startWorker(redisUrl: string, job: string, extra: string[] = []): Promise<WorkerProc> {
  const proc = spawn(process.execPath, [BIN, 'worker', '--redis', redisUrl, '--job', job, '--lease-ms', '1500', '--wait-ms', '20000', ...extra], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`worker did not start: ${err}`)), 30_000);
    proc.stderr!.setEncoding('utf8');
    proc.stderr!.on('data', (d: string) => {
      err += d;
      const m = /worker (\S+) of job \S+ serving at (\S+)\/v1\/batches/.exec(err);
      if (m && t.hasRef()) {
        clearTimeout(t);
        t.unref();
        resolve({
          proc,
          url: m[2]!,
          id: m[1]!,
          stderr: () => err,
          kill: (signal) =>
            new Promise<void>((res) => {
              if (proc.exitCode !== null || proc.signalCode !== null) return res();
              proc.once('exit', () => res());
              proc.kill(signal);
            }),
        });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`worker exited with ${code}: ${err}`));
    });
  });
}

/**
 * A trainer of rank `rank` in `world`: reads seq ≡ rank (mod world) from `from` onward through
 * @sluice/client at `url`, until the end or `stopAt` batches; returns [seq, digest] in order.
 */
export async function train(
  url: string,
  rank: number,
  world: number,
  o: { from?: number; stopAt?: number; onBatch?: (seq: number) => Promise<void> | void } = {},
): Promise<Array<[number, string]>> {
  const c = createClient(url, { retries: 8, retryDelayMs: 100 });
  const got: Array<[number, string]> = [];
  try {
    for await (const b of c.batches({ start: o.from ?? rank, step: world, prefetch: 2 })) {
      got.push([b.seq, digest(b)]);
      b.release?.();
      await o.onBatch?.(b.seq);
      if (o.stopAt !== undefined && got.length >= o.stopAt) break;
    }
  } finally {
    await c.close();
  }
  return got;
}

/** Every seq exactly once, each with the oracle's digest. */
export function checkExactlyOnce(expected: readonly string[], ...trainers: ReadonlyArray<ReadonlyArray<[number, string]>>): void {
  const seen = new Map<number, string>();
  for (const t of trainers) {
    for (const [seq, d] of t) {
      if (seen.has(seq)) throw new Error(`batch ${seq} delivered twice`);
      seen.set(seq, d);
    }
  }
  const missing = expected.map((_, i) => i).filter((i) => !seen.has(i));
  if (missing.length > 0) throw new Error(`batches missing: ${missing.slice(0, 10).join(', ')}`);
  const wrong = expected.map((d, i) => (seen.get(i) === d ? -1 : i)).filter((i) => i >= 0);
  if (wrong.length > 0) throw new Error(`batches that differ from pipeline(): ${wrong.slice(0, 10).join(', ')}`);
  if (seen.size !== expected.length) throw new Error(`${seen.size} batches for ${expected.length}`);
}

/** Polls `check` every 50 ms until it holds (or throws after `ms`). */
export async function until(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A worker's gauge from its /metrics. */
export async function gauge(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}
