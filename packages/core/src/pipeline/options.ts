/**
 * Checking `pipeline()`'s options when the pipeline is made, as the plan's fields are checked when
 * it is loaded: a JavaScript caller has no type checker, and an option the pipeline ignored (a
 * misspelt `inptu`, a plan field such as `batchSize` put here) or one of the wrong type would
 * otherwise run with the default, or fail later inside the run with a TypeError about undefined.
 */
import { isInputSpec, MAX_THREADS, PLAN_FIELDS, PlanError, show, type BackendSpec, type PlanState } from '@sluice/ops';
import type { IteratorState } from './resume.js';

/**
 * Options of `pipeline()`: where the data is, resuming, fitted state, and overrides of the plan's
 * backend and prefetch.
 *
 * @example
 * pipeline('plan.json', { input: 'data/*.parquet', fitState: 'state.json', backend: 'auto', prefetch: 4 });
 */
export interface PipelineOptions {
  /** Parquet paths, globs or http(s) URLs (overrides the plan's `input`). */
  input?: string | string[];
  /** Resume from a saved `state()`. */
  resume?: IteratorState;
  /** Fitted state for stateful ops: a path to `sluice fit` output, its parsed JSON, or a map. */
  fitState?: string | object | PlanState;
  /** Overrides the plan's backend (a name, or a spec with options). */
  backend?: string | BackendSpec;
  /** Overrides the plan's prefetch depth. */
  prefetch?: number;
  /**
   * Parquet decode threads, 1 to 256. Default: the backend's parallelism when the reader computes
   * the features (the cpu backend's `workers`: one per core but one), else up to 2.
   */
  decoders?: number;
  /** Aborting stops the run: iteration throws the abort reason and resources are released. */
  signal?: AbortSignal;
  /**
   * Verify each Parquet page's CRC where the file has one (overrides the plan's `verifyCrc`;
   * default true). A mismatch fails the run naming the file, row group, column and page.
   */
  verifyCrc?: boolean;
  /**
   * When the reader computes every feature (pushdown), let the decode workers lay batches out too
   * (default true); false assembles them on this thread. The batches are the same either way.
   */
  pack?: boolean;
  /**
   * Remove redundant op steps using the files' footer statistics before the backend sees the plan
   * (plan/optimize.ts); default on for webgpu, off elsewhere. Also a backend option `optimize`.
   */
  optimize?: boolean;
  /**
   * Yield a cluster job's sequence (docs/cluster.md#determinism): batches do not cross windows —
   * a row group each when unshuffled, a shuffle window otherwise — so each window's last batch may
   * be short (or, with dropLast, its tail is dropped). Default false: batches run across row groups.
   */
  windowBatches?: boolean;
}

type Check = (v: unknown) => string | null;

const isBoolean: Check = (v) => (typeof v === 'boolean' ? null : 'must be true or false');
const isIntIn =
  (lo: number, hi: number): Check =>
  (v) =>
    Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi ? null : `must be an integer from ${lo} to ${hi}`;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Each option and what its value must be (PipelineOptions above documents them). */
const OPTIONS: Readonly<Record<keyof PipelineOptions, Check>> = {
  input: (v) => (isInputSpec(v) ? null : 'must be a path, glob or URL, or a non-empty list of them'),
  resume: (v) => (isObject(v) ? null : 'must be a state that pipeline.state() returned'),
  fitState: (v) => ((typeof v === 'string' && v !== '') || isObject(v) || v instanceof Map ? null : 'must be a fit state file, its parsed JSON, or a Map'),
  backend: (v) =>
    (typeof v === 'string' && v !== '') || (isObject(v) && typeof v.name === 'string' && v.name !== '')
      ? null
      : 'must be a backend name or an object with a "name" (such as { name: "cpu", workers: 4 })',
  prefetch: isIntIn(1, 1 << 20),
  decoders: isIntIn(1, MAX_THREADS),
  signal: (v) => (v instanceof AbortSignal ? null : 'must be an AbortSignal (AbortController.signal)'),
  verifyCrc: isBoolean,
  pack: isBoolean,
  optimize: isBoolean,
  windowBatches: isBoolean,
};

/** Options set for the cpu backend in its spec, not on the pipeline. */
const BACKEND_OPTIONS = new Set(['workers', 'pushdown']);

/**
 * `options` as `pipeline()` takes them, or a PlanError naming the first option that is unknown or
 * has a value of the wrong kind. An option set to `undefined` counts as not given.
 */
export function checkOptions(options: unknown): PipelineOptions {
  return checkAgainst(options, OPTIONS, 'pipeline options') as PipelineOptions;
}

/** `fit()`'s options (its input, and a progress callback), checked as `checkOptions` checks `pipeline()`'s. */
export function checkFitOptions(options: unknown): FitOptions {
  return checkAgainst(options, FIT_OPTIONS, 'fit options') as FitOptions;
}

/**
 * Options of `fit()` (pipeline/fit.ts): where the data is, and a progress callback.
 *
 * @example
 * await fit('plan.json', { input: 'train/*.parquet', onProgress: (rows, total) => console.log(`${rows}/${total}`) });
 */
export interface FitOptions {
  /** Parquet paths, globs or URLs (overrides the plan's `input`). */
  input?: string | readonly string[];
  /** Called as rows are read: rows so far, rows in all. */
  onProgress?: (rows: number, total: number) => void;
}

const FIT_OPTIONS: Readonly<Record<keyof FitOptions, Check>> = {
  input: OPTIONS.input,
  onProgress: (v) => (typeof v === 'function' ? null : 'must be a function (rows, total) => void'),
};

function checkAgainst(options: unknown, table: Readonly<Record<string, Check>>, what: string): object {
  if (options === undefined) return {};
  if (!isObject(options)) throw new PlanError(`${what} must be an object, got ${show(options)}`);
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const check = table[key];
    if (check === undefined) throw new PlanError(unknownOption(key, table));
    const problem = check(value);
    if (problem !== null) throw new PlanError(`${key} ${problem}, got ${show(value)}`);
  }
  return options;
}

function unknownOption(key: string, table: Readonly<Record<string, Check>>): string {
  if (BACKEND_OPTIONS.has(key)) return `unknown option "${key}": it is a backend option (backend: { name: "cpu", ${key}: ... })`;
  if (PLAN_FIELDS.has(key)) return `unknown option "${key}": it is a plan field (set it in the plan)`;
  return `unknown option "${key}" (options: ${Object.keys(table).join(', ')})`;
}
