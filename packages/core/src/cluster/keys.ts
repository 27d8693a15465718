/**
 * The Redis keys of a cluster job. Every key of a job shares the hash tag `{job}`, so a Redis
 * Cluster keeps them on one shard and the Lua scripts (cluster/scripts.ts) may touch them together.
 */

/**
 * The names of one job's keys.
 *
 * @example
 * const k = jobKeys('ctr-2026-11');
 * await redis.xlen(k.splits);
 */
export interface JobKeys {
  /** The job spec (JSON): plan, inputs, seed, epochs, split table. */
  readonly spec: string;
  /** The stream of splits, one entry each with id `${index + 1}-0`; workers lease them through `group`. */
  readonly splits: string;
  /** The consumer group of the workers. */
  readonly group: string;
  /** Dead-letter stream: splits that failed too often, with the last error. */
  readonly dead: string;
  /** Hash split index → `done` | `dead`. */
  readonly state: string;
  /** Hash split index → id of the worker that holds (or makes) its batches. */
  readonly owner: string;
  /** Hash split index → times a worker started making it. */
  readonly attempts: string;
  /** Hash split index → the last error making it. */
  readonly errors: string;
  /** Bitmap by seq: the batch was delivered to a trainer. */
  readonly delivered: string;
  /** Hash split index → batches of it delivered. */
  readonly deliveredCount: string;
  /** Hash: `done`, `dead`, `reclaims`, `slowestId`, `slowestMs`. */
  readonly counters: string;
  /** Hash worker id → JSON of its registration and counters (cluster/status.ts reads it). */
  readonly workers: string;
  /** JSON of the first dead-lettered split: the epoch fails from its first batch on. */
  readonly failed: string;
  /** A key that exists while worker `id` is alive (its heartbeat renews the expiry). */
  alive(id: string): string;
}

/** The consumer a released lease is parked under, idle long enough for any worker to reclaim at once. */
export const RELEASED = 'released';

/**
 * The keys of job `name`.
 *
 * @example
 * jobKeys('ctr').splits; // 'sluice:{ctr}:splits'
 */
export function jobKeys(name: string): JobKeys {
  const p = `sluice:{${name}}:`;
  return {
    spec: `${p}spec`,
    splits: `${p}splits`,
    group: 'workers',
    dead: `${p}dead`,
    state: `${p}state`,
    owner: `${p}owner`,
    attempts: `${p}attempts`,
    errors: `${p}errors`,
    delivered: `${p}delivered`,
    deliveredCount: `${p}dcount`,
    counters: `${p}counters`,
    workers: `${p}workers`,
    failed: `${p}failed`,
    alive: (id) => `${p}alive:${id}`,
  };
}

/** A job name must be short and plain: it is part of every key and of URLs and logs. */
export function checkJobName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) {
    throw new RangeError(`job name must be 1-64 letters, digits, ".", "_" or "-" (starting with a letter or digit), got ${JSON.stringify(name)}`);
  }
  return name;
}
