/**
 * Checking `pipeline()`'s options when the pipeline is made, as the plan's fields are checked when
 * it is loaded: a JavaScript caller has no type checker, and an option the pipeline ignored (a
 * misspelt `inptu`, a plan field such as `batchSize` put here) or one of the wrong type would
 * otherwise run with the default, or fail later inside the run with a TypeError about undefined.
 */
import { PLAN_FIELDS, PlanError, show } from '@sluice/ops';
import type { PipelineOptions } from './setup.js';

type Check = (v: unknown) => string | null;

const isBoolean: Check = (v) => (typeof v === 'boolean' ? null : 'must be true or false');
const isIntIn =
  (lo: number, hi: number): Check =>
  (v) =>
    Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi ? null : `must be an integer from ${lo} to ${hi}`;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Each option and what its value must be (PipelineOptions in setup.ts documents them). */
const OPTIONS: Readonly<Record<keyof PipelineOptions, Check>> = {
  input: (v) =>
    (typeof v === 'string' && v !== '') || (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x !== ''))
      ? null
      : 'must be a path, glob or URL, or a non-empty list of them',
  resume: (v) => (isObject(v) ? null : 'must be a state that pipeline.state() returned'),
  fitState: (v) => ((typeof v === 'string' && v !== '') || isObject(v) || v instanceof Map ? null : 'must be a fit state file, its parsed JSON, or a Map'),
  backend: (v) =>
    (typeof v === 'string' && v !== '') || (isObject(v) && typeof v.name === 'string' && v.name !== '')
      ? null
      : 'must be a backend name or an object with a "name" (such as { name: "cpu", workers: 4 })',
  prefetch: isIntIn(1, 1 << 20),
  decoders: isIntIn(1, 256),
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
  if (options === undefined) return {};
  if (!isObject(options)) throw new PlanError(`pipeline options must be an object, got ${show(options)}`);
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const check = OPTIONS[key as keyof PipelineOptions] as Check | undefined;
    if (check === undefined) throw new PlanError(unknownOption(key));
    const problem = check(value);
    if (problem !== null) throw new PlanError(`${key} ${problem}, got ${show(value)}`);
  }
  return options as PipelineOptions;
}

function unknownOption(key: string): string {
  if (BACKEND_OPTIONS.has(key)) return `unknown option "${key}": it is a backend option (backend: { name: "cpu", ${key}: ... })`;
  if (PLAN_FIELDS.has(key)) return `unknown option "${key}": it is a plan field (set it in the plan)`;
  return `unknown option "${key}" (options: ${Object.keys(OPTIONS).join(', ')})`;
}
