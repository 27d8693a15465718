// A cpu backend worker: compiles the plan once per thread, then runs chunks handed over in shared
// memory and hands the outputs back in one transferred buffer.
import { workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import {
  SluiceError,
  executePlan,
  loadPlan,
  packColumns,
  stateFromJSON,
  typeCheckPlan,
  unpackColumns,
  type KernelOverride,
  type KernelOverrides,
} from '@sluice/ops';
import { FAST_OPS, fastKernelsAvailable, fastKernelsError } from './kernels/index.js';
import type { WorkerData, WorkerFailure, WorkerResult, WorkerTask } from './protocol.js';

const data = workerData as WorkerData;
const plan = typeCheckPlan(loadPlan(data.plan), new Map(data.schema));
const state = stateFromJSON(plan, data.state);

let fastOps = 0;
let overrides: KernelOverrides | undefined;
// Without the wasm build (or with SLUICE_FAST_KERNELS=0) FAST_OPS is empty and the reference
// kernels run; fastKernelsError() says why.
if (data.fast && fastKernelsAvailable()) {
  // Count the ops a fast kernel took, for the cost report.
  overrides = new Map(
    [...FAST_OPS].map(([name, k]): [string, KernelOverride] => [
      name,
      (input, params, ctx) => {
        const out = k(input, params, ctx);
        if (out !== undefined) fastOps++;
        return out;
      },
    ]),
  );
} else if (data.fast) {
  process.emitWarning(`sluice cpu backend: WebAssembly kernels unavailable (${fastKernelsError() ?? 'unknown reason'}); using the reference kernels`);
}

/** Runs one chunk. Data and plan errors come back as values; only a crash rejects the task. */
export default function run(task: WorkerTask): unknown {
  const crash = data.testCrash;
  if (crash && task.firstRow === crash.row && task.attempt < crash.times) process.exit(70);
  const t0 = performance.now();
  fastOps = 0;
  try {
    const out = executePlan(plan, unpackColumns(task.packed), state, undefined, overrides);
    const packed = packColumns(out);
    const result: WorkerResult = { packed, computeMs: performance.now() - t0, fastOps };
    return move({ [transferableSymbol]: [packed.buffer], [valueSymbol]: result } as never);
  } catch (e) {
    if (!(e instanceof SluiceError)) throw e;
    // The row in `where` is relative to the chunk (no locator here); the main thread maps it.
    const cause = (e as Error & { cause?: unknown }).cause;
    const reason = cause instanceof Error ? cause.message : e.message;
    const failure: WorkerFailure = { error: { name: e.name, reason, where: e.where } };
    return failure;
  }
}
