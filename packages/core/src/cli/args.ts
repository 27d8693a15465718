/**
 * Reading the parsed options, shared by the commands. Type-only imports: main.ts loads this module
 * before any command, so it must not pull in the pipeline.
 */
import type { BackendSpec, Plan } from '@sluice/ops';
import type { PipelineOptions } from '../pipeline/pipeline.js';

/** The options as node:util parseArgs returns them. */
export type Values = Record<string, string | boolean | string[] | undefined>;

/** A bad command line: main.ts prints it with a pointer to --help and exits 2. */
export class UsageError extends Error {}

/** A required string option. */
export function need(values: Values, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** A non-negative integer option; required unless it has a default. */
export function int(values: Values, name: string, dflt?: number): number {
  const v = values[name];
  if (v === undefined) {
    if (dflt === undefined) throw new UsageError(`--${name} is required`);
    return dflt;
  }
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer, got "${String(v)}"`);
  return n;
}

/** The --input values (at least one). */
export function inputs(values: Values): string[] {
  const v = values.input as string[] | undefined;
  if (!v || v.length === 0) throw new UsageError('--input is required');
  return v;
}

/** --backend / --workers as an override; the pipeline keeps the plan's options for the same backend. */
function backendOverride(values: Values, plan: Plan): BackendSpec | undefined {
  const name = values.backend as string | undefined;
  const workers = values.workers === undefined ? undefined : int(values, 'workers');
  if (name === undefined && workers === undefined) return undefined;
  return { name: name ?? plan.backend.name, ...(workers !== undefined ? { workers } : {}) };
}

/** Pipeline options from --input, --backend, --workers and --state. */
export function pipelineOptions(values: Values, plan: Plan): PipelineOptions {
  const o: PipelineOptions = { input: inputs(values) };
  const b = backendOverride(values, plan);
  if (b) o.backend = b;
  if (typeof values.state === 'string') o.fitState = values.state;
  return o;
}
