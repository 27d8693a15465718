import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import type { Piscina as PiscinaPool } from 'piscina';
import { DataError, PlanError, SluiceError, type Backend, type BackendSpec, type TypedPlan } from '@sluice/core';
import { packColumns, stateToJSON, unpackColumns, workerExecArgv, type Column, type ColumnType, type PlanState, type RowLocator } from '@sluice/core/internal';
import type { WorkerData, WorkerFailure, WorkerResult } from './protocol.js';
import { MAX_THREADS } from '@sluice/ops';

// The pool's file is the worker's CommonJS entry (worker-entry.cts, which loads dist/worker.js);
// src/ and dist/ are both one level below the package root, so this URL works from the TypeScript
// sources under vitest and from the build.
const WORKER_URL = new URL('../dist/worker-entry.cjs', import.meta.url);

const OPTIONS = new Set(['name', 'workers', 'fast', 'testCrash']);

// The fast kernels' module (FAST_OPS), for the decode workers that compute pushed-down ops.
const KERNELS_URL = new URL('../dist/kernels/index.js', import.meta.url).href;

/** Options of the `cpu` backend (the plan's `backend` object, or `--workers`). */
export interface CpuBackendOptions {
  /** Worker threads (default: available parallelism − 1, at least 1). */
  workers?: number;
  /** Use the WebAssembly kernels where they are faster (default true). */
  fast?: boolean;
  /**
   * Test hook: a worker exits (as if it crashed) when it starts the chunk whose first file row is
   * `row`; `times` is how many attempts crash (1 = the retry succeeds, 2 = the run fails).
   */
  testCrash?: { row: number; times: number };
}

function parseOptions(spec: BackendSpec): Required<Omit<CpuBackendOptions, 'testCrash'>> & Pick<CpuBackendOptions, 'testCrash'> {
  for (const k of Object.keys(spec)) if (!OPTIONS.has(k)) throw new PlanError(`backend cpu: unknown option "${k}" (known: workers, fast)`);
  // The main thread (batch assembly) and the Parquet decoder need a core too: on 2 cores, 1 worker
  // beat 2 in every bench/e2e.ts run (RM1 2 workers / 1 worker 0.91x, RM5 0.60x).
  const workers = spec.workers ?? Math.max(1, availableParallelism() - 1);
  if (!Number.isInteger(workers) || (workers as number) < 1 || (workers as number) > MAX_THREADS)
    throw new PlanError(`backend cpu: workers must be an integer from 1 to ${MAX_THREADS}, got ${JSON.stringify(spec.workers)}`);
  const fast = spec.fast ?? true;
  if (typeof fast !== 'boolean') throw new PlanError('backend cpu: fast must be true or false');
  const testCrash = spec.testCrash as CpuBackendOptions['testCrash'];
  return { workers: workers as number, fast, ...(testCrash ? { testCrash } : {}) };
}

/**
 * The kernels the reader runs this backend's pushed-down ops with (core's
 * `BackendRegistration.readerKernels`): the WebAssembly ones, unless the spec says `fast: false`.
 * The same bit-identical kernels as the pool's workers, on dictionary entries instead of rows.
 */
export function cpuReaderKernels(spec: BackendSpec): string | null {
  return parseOptions(spec).fast ? KERNELS_URL : null;
}

/**
 * piscina, loaded when a pool starts: a run whose every feature the reader computes (the cpu
 * backend's pushdown) starts none, and loading it was ~25 ms on the way to its first batch.
 */
let Piscina: typeof PiscinaPool | null = null;
const piscina = (): typeof PiscinaPool => (Piscina ??= (createRequire(import.meta.url)('piscina') as { Piscina: typeof PiscinaPool }).Piscina);

/**
 * The worker-pool CPU backend: each chunk runs on one of `workers` threads, `workers` chunks at
 * a time, results in input order. A worker that dies is replaced and its chunk retried once.
 *
 * @example
 * import '@sluice/backend-cpu';
 * for await (const b of pipeline(plan, { input, backend: { name: 'cpu', workers: 2 } })) train(b);
 */
export function createCpuBackend(plan: TypedPlan, spec: BackendSpec, state: PlanState): Backend {
  const opts = parseOptions(spec);
  const data: WorkerData = {
    plan: plan.spec,
    schema: [
      ...plan.features.map((f): [string, ColumnType] => [f.input, f.inputType]),
      ...(plan.label !== null && plan.labelType !== null ? [[plan.label, { kind: plan.labelType }] as [string, ColumnType]] : []),
    ],
    state: stateToJSON(plan, state),
    fast: opts.fast,
    ...(opts.testCrash ? { testCrash: opts.testCrash } : {}),
  };
  const pool = new (piscina())({
    filename: WORKER_URL.href,
    minThreads: opts.workers,
    maxThreads: opts.workers,
    idleTimeout: 60_000,
    execArgv: workerExecArgv(),
    workerData: data,
  });
  let disposed = false;
  let attempts = 0;
  // Input buffers are recycled once their chunk is done: a fresh multi-MB SharedArrayBuffer per
  // chunk is garbage the main thread pays to collect. Keep a few, enough for the chunks in flight.
  const spare: SharedArrayBuffer[] = [];
  const take = (bytes: number): SharedArrayBuffer | undefined => {
    const i = spare.findIndex((b) => b.byteLength >= bytes && b.byteLength <= bytes * 2);
    return i < 0 ? undefined : spare.splice(i, 1)[0];
  };
  const give = (b: ArrayBuffer | SharedArrayBuffer): void => {
    if (b instanceof SharedArrayBuffer && spare.length < opts.workers + 2) spare.push(b);
  };
  // A worker that fails while starting (compiling the plan) is reported here, not on a task;
  // without a listener the pool's 'error' event would take the process down.
  const startup: { error: Error | null } = { error: null };
  pool.on('error', (e: Error) => {
    startup.error ??= e;
  });
  // A worker whose code did not load fails every task with this reason (worker-entry.cts): no retry.
  const loadFailure = (e: unknown): SluiceError | null =>
    e instanceof Error && /could not load its code/.test(e.message) ? new SluiceError(`cpu worker failed to start: ${e.message}`, {}, { cause: e }) : null;
  const startupFailure = (): SluiceError | null =>
    startup.error ? new SluiceError(`cpu worker failed to start: ${startup.error.message}`, {}, { cause: startup.error }) : null;

  const runOnce = async (packed: ReturnType<typeof packColumns>, firstRow: number, attempt: number): Promise<WorkerResult | WorkerFailure> => {
    attempts++;
    return (await pool.run({ packed, firstRow, attempt })) as WorkerResult | WorkerFailure;
  };

  return {
    name: 'cpu',
    capabilities: { ops: 'all', timing: 'measured' },
    concurrency: opts.workers,
    async run(columns: ReadonlyMap<string, Column>, locate: RowLocator) {
      if (disposed) throw new SluiceError('cpu backend used after dispose');
      const t0 = performance.now();
      // Shared memory: the worker reads it in place, and it stays readable here for a retry.
      const packed = packColumns(columns, true, take);
      const firstRow = locate(0).row ?? 0;
      let result: WorkerResult | WorkerFailure;
      try {
        result = await runOnce(packed, firstRow, 0);
      } catch (first) {
        if (disposed) throw new SluiceError('cpu backend disposed while a chunk was running', locate(0));
        const failedStart = startupFailure() ?? loadFailure(first);
        if (failedStart) throw failedStart;
        try {
          result = await runOnce(packed, firstRow, 1);
        } catch (second) {
          const failedStart = startupFailure();
          if (failedStart) throw failedStart;
          throw new SluiceError(`a cpu worker died twice on this chunk (${describe(first)}; then ${describe(second)})`, locate(0), { cause: second });
        }
      }
      // The worker is done reading the input (a crashed try has been retried by now).
      give(packed.buffer);
      if ('error' in result) throw rebuild(result, locate);
      const out = unpackColumns(result.packed);
      return {
        columns: out,
        report: {
          wallMs: performance.now() - t0,
          bytesIn: packed.buffer.byteLength,
          bytesOut: result.packed.buffer.byteLength,
          workerMs: result.computeMs,
          fastOps: result.fastOps,
          attempts,
        },
      };
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      await pool.destroy();
    },
    // For tests: the live worker threads.
    get threads() {
      return pool.threads;
    },
  } as Backend & { readonly threads: unknown };
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Turns a failure reported by a worker back into the error class and location it stands for. */
function rebuild(f: WorkerFailure, locate: RowLocator): Error {
  const w = f.error.where;
  const where = {
    ...(w.row !== undefined ? locate(w.row) : locate(0)),
    ...(w.column ? { column: w.column } : {}),
    ...(w.feature ? { feature: w.feature } : {}),
    ...(w.op ? { op: w.op } : {}),
  };
  if (f.error.name === 'DataError') return new DataError(f.error.reason, where);
  if (f.error.name === 'PlanError') return new PlanError(f.error.reason, where);
  return new SluiceError(f.error.reason, where);
}
