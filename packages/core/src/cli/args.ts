/**
 * Reading the parsed options, shared by the commands. Type-only imports apart from the error
 * classes: main.ts loads this module before any command, so it must not pull in the pipeline.
 */
import { statSync } from 'node:fs';
import { InputError } from '@sluice/ops/errors';
import { MAX_THREADS, type BackendSpec, type Plan } from '@sluice/ops';
import type { PipelineOptions } from '../pipeline/pipeline.js';

/** The options by long name: strings, true for flags, arrays for options that take several values. */
export type Values = Record<string, string | boolean | string[] | undefined>;

/** A bad command line: main.ts prints it with a pointer to --help and exits 2. */
export class UsageError extends Error {}

/** A required string option. */
export function need(values: Values, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/**
 * --token, else $SLUICE_TOKEN, else undefined (no token). An empty one is a usage error naming
 * where it came from: `SLUICE_TOKEN=` left empty by a deployment must not read as "no token".
 *
 * @example
 * tokenArg({ token: 's3cret' }); // 's3cret'
 */
export function tokenArg(values: Values): string | undefined {
  const given = values.token as string | undefined;
  const token = given ?? process.env.SLUICE_TOKEN;
  if (token === '')
    throw new UsageError(
      given === undefined
        ? 'SLUICE_TOKEN is set but empty: give it a token, or unset it to serve without one'
        : '--token is empty (an unset shell variable in --token "$SLUICE_TOKEN"?): give a token, or leave --token out to serve without one',
    );
  return token;
}

/** Bounds of an integer option: at least `min` (default 0), at most `max` (default the largest safe integer). */
export interface IntBounds {
  readonly min?: number;
  readonly max?: number;
}

/**
 * An integer option in plain decimal digits, within its bounds; required unless it has a default.
 * Only digits: `Number()` would also take `0x10`, `1e3`, ` 7 ` and `1e20` (not a safe integer,
 * so it failed later, inside the command, naming an internal field).
 *
 * @example
 * int(values, 'rows', undefined, { min: 1 }); // '1000' → 1000; '0', '1e3', '0x10', '-5' throw "--rows must be an integer of at least 1, got …"
 */
export function int(values: Values, name: string, dflt?: number, bounds: IntBounds = {}): number {
  const v = values[name];
  if (v === undefined) {
    if (dflt === undefined) throw new UsageError(`--${name} is required`);
    return dflt;
  }
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = bounds;
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= min)) throw new UsageError(`--${name} must be an integer of at least ${min}, got "${String(v)}"`);
  if (!(n <= max)) throw new UsageError(`--${name} must be at most ${max}, got "${String(v)}"`);
  return n;
}

/**
 * A positive integer option (a count of things that must exist, such as workers); undefined when absent.
 *
 * @example
 * positiveInt({ workers: '4' }, 'workers'); // 4; '0' or 'x' throws a UsageError
 */
export function positiveInt(values: Values, name: string, max?: number): number | undefined {
  if (values[name] === undefined) return undefined;
  return int(values, name, undefined, { min: 1, ...(max === undefined ? {} : { max }) });
}

/**
 * The --input values as given, or undefined without any. An empty one (`--input ''`, an unset
 * shell variable) is refused naming --input, rather than opened as a file named "" that is not there.
 */
export function givenInputs(values: Values): string[] | undefined {
  const v = values.input as string[] | undefined;
  if (v?.includes('')) throw new UsageError('--input has an empty path (""): give a file, glob, folder or URL');
  return v !== undefined && v.length > 0 ? v : undefined;
}

/**
 * The --input values (at least one), else the plan's `input`: docs/plan.md makes the plan's a
 * default that --input overrides, as `pipeline()` does.
 *
 * @example
 * inputs(values, loadPlan(planArg(values))); // ['day1.parquet'], or throws "--input is required ..."
 */
export function inputs(values: Values, plan: Pick<Plan, 'input'>): string[] {
  const v = givenInputs(values);
  if (v !== undefined) return v;
  if (plan.input !== null && plan.input.length > 0) return [...plan.input];
  throw new UsageError('--input is required (the plan has no "input")');
}

/**
 * A file the command reads, checked before anything else reads it, so that a missing one is one
 * sentence naming it instead of the system's error code (ENOENT). `what` names it: "plan file".
 *
 * @example
 * existingFile('state file', 'vocab.json'); // 'vocab.json', or throws "state file vocab.json does not exist"
 */
export function existingFile(what: string, path: string): string {
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new InputError(`${what} ${path} does not exist`);
    if (code === 'EACCES' || code === 'EPERM') throw new InputError(`${what} ${path} cannot be read: permission denied`);
    throw e;
  }
  if (!isFile) throw new InputError(`${what} ${path} is a folder, not a file`);
  return path;
}

/**
 * --plan: a JSON file that exists, or the plan itself inline (`--plan '{"features": ...}'`).
 *
 * @example
 * const plan = loadPlan(planArg(values));
 */
export function planArg(values: Values): string {
  const p = need(values, 'plan');
  return p.trimStart().startsWith('{') ? p : existingFile('plan file', p);
}

/**
 * The most --workers: pipeline/setup.ts and the cpu backend refuse more (MAX_THREADS, docs/backends.md).
 * Checked here too so that the command line is refused as a usage error, before any work.
 */
export const MAX_WORKERS = MAX_THREADS;

/** --backend / --workers as an override; the pipeline keeps the plan's options for the same backend. */
function backendOverride(values: Values, plan: Plan): BackendSpec | undefined {
  const name = values.backend as string | undefined;
  const workers = positiveInt(values, 'workers', MAX_WORKERS);
  if (name === undefined && workers === undefined) return undefined;
  return { name: name ?? plan.backend.name, ...(workers !== undefined ? { workers } : {}) };
}

/** Pipeline options from --input, --backend, --workers and --state. */
export function pipelineOptions(values: Values, plan: Plan): PipelineOptions {
  const o: PipelineOptions = { input: inputs(values, plan) };
  const b = backendOverride(values, plan);
  if (b) o.backend = b;
  if (typeof values.state === 'string') o.fitState = existingFile('state file', values.state);
  // commander gives a lone --no-X option the value true when absent and false when given.
  if (values['no-verify-crc'] === false) o.verifyCrc = false;
  return o;
}

/**
 * --redis (else $SLUICE_REDIS): a redis:// or rediss:// URL with a host, checked for its form
 * before connecting. Otherwise ioredis takes any word as a host name and the error is the
 * resolver's (`getaddrinfo ENOTFOUND notaurl`); a well-formed URL that cannot be reached still
 * fails at the connection, naming it.
 *
 * @example
 * redisArg({ redis: 'redis://cache:6379' }); // 'redis://cache:6379'; 'notaurl' throws a UsageError
 */
export function redisArg(values: Values): string {
  const given = values.redis;
  const url = typeof given === 'string' ? given : process.env.SLUICE_REDIS;
  const source = typeof given === 'string' ? '--redis' : 'SLUICE_REDIS';
  if (url === undefined || url === '') throw new UsageError('--redis is required (or SLUICE_REDIS)');
  let ok = false;
  try {
    const u = new URL(url);
    ok = (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '';
  } catch {
    // not a URL at all
  }
  // The value is echoed with any password hidden, as connect.ts's messages do.
  const shown = url.replace(/\/\/[^@/]*@/, '//***@');
  if (!ok) throw new UsageError(`${source} must be a redis:// or rediss:// URL (redis://[:password@]host:port), got "${shown}"`);
  // The path is the database number; ioredis would send anything else to SELECT and crash on the reply.
  const path = new URL(url).pathname;
  if (path !== '' && path !== '/' && !/^\/\d{1,9}$/.test(path))
    throw new UsageError(`${source}: the database after the port must be a number (redis://host:port/0), got "${path}" in "${shown}"`);
  return url;
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** Bytes in a size with a unit ("4GiB", "500MB", "1.5gb", "4096B"); undefined when it is not one. */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(text.trim());
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  return m && unit !== undefined ? Number(m[1]) * unit : undefined;
}
