/**
 * A job's state as `GET /v1/cluster` and `sluice job status` show it: workers, splits by state,
 * reclaims and the slowest split, read from Redis in one pipeline of commands.
 */
import type { Redis } from 'ioredis';
import type { JobSpec } from './job.js';
import { RELEASED, jobKeys } from './keys.js';

/**
 * One worker as the status shows it.
 *
 * @example
 * for (const w of status.workers) console.log(w.id, w.state, w.rowsPerSec);
 */
export interface WorkerStatus {
  readonly id: string;
  readonly url: string;
  readonly state: 'active' | 'draining' | 'dead';
  /** Milliseconds since its last heartbeat. */
  readonly lastSeenMs: number;
  readonly batchesMade: number;
  readonly batchesServed: number;
  readonly rowsPerSec: number;
}

/**
 * A job's state (the `/v1/cluster` body; `sluice job status NAME --json` prints the same).
 *
 * @example
 * const s = await clusterStatus(redis, job);
 * console.log(`${s.splits.done}/${s.splits.total} splits done`);
 */
export interface ClusterStatus {
  readonly job: string;
  /** The epoch of the earliest split not done (the last epoch once all are). */
  readonly epoch: number;
  readonly workers: WorkerStatus[];
  readonly splits: { total: number; done: number; leased: number; pending: number; dead: number };
  readonly reclaims: number;
  readonly slowestSplit: { id: string; seconds: number } | null;
}

/**
 * What a worker stores of itself with each heartbeat (cluster/worker.ts): the status's fields,
 * except that `lastSeenMs` is when (ms since the Unix epoch), which the status turns into an age.
 */
export interface WorkerRecord extends Omit<WorkerStatus, 'lastSeenMs'> {
  readonly lastSeenMs: number;
}

/**
 * Reads job `job`'s state from Redis.
 *
 * @example
 * const s = await clusterStatus(redis, await loadJob(redis, 'ctr'));
 * console.log(s.splits.done, s.splits.total);
 */
export async function clusterStatus(redis: Redis, job: JobSpec): Promise<ClusterStatus> {
  const k = jobKeys(job.name);
  const [workersRaw, counters, consumers, groups] = (await redis
    .multi()
    .hgetall(k.workers)
    .hgetall(k.counters)
    .call('XINFO', 'CONSUMERS', k.splits, k.group)
    .call('XINFO', 'GROUPS', k.splits)
    .exec())!.map(([e, v]) => {
    if (e) throw e;
    return v;
  }) as [Record<string, string>, Record<string, string>, unknown[][], unknown[][]];
  const records = Object.values(workersRaw).map((t) => JSON.parse(t) as WorkerRecord);
  const alive = records.length === 0 ? [] : ((await redis.mget(...records.map((r) => k.alive(r.id)))) as Array<string | null>);
  const now = Date.now();
  const workers = records.map((r, i): WorkerStatus => ({
    id: r.id,
    url: r.url,
    state: alive[i] === null ? 'dead' : r.state,
    lastSeenMs: Math.max(0, now - r.lastSeenMs),
    batchesMade: r.batchesMade,
    batchesServed: r.batchesServed,
    rowsPerSec: alive[i] === null ? 0 : r.rowsPerSec,
  }));
  // Entries pending to a worker are leased; those parked under RELEASED wait for the next taker.
  let leased = 0;
  for (const c of consumers) {
    const f = fields(c);
    if (f.name !== RELEASED) leased += Number(f.pending);
  }
  const done = Number(counters.done ?? 0);
  const dead = Number(counters.dead ?? 0);
  const total = job.splits.length;
  const group = groups.map(fields).find((g) => g.name === k.group);
  // The earliest split not done: the lowest pending entry, else the next undelivered one.
  const lastDelivered = Number(String(group?.['last-delivered-id'] ?? '0-0').split('-')[0]);
  let earliest = Math.min(lastDelivered, total - 1);
  const low = (await redis.call('XPENDING', k.splits, k.group)) as [number, string | null, string | null, unknown];
  if (low[1] !== null) earliest = Math.min(earliest, Number(low[1].split('-')[0]) - 1);
  const slowId = counters.slowestId;
  return {
    job: job.name,
    epoch: job.splits[Math.max(0, earliest)]!.epoch,
    workers,
    splits: { total, done, leased, pending: Math.max(0, total - done - dead - leased), dead },
    reclaims: Number(counters.reclaims ?? 0),
    slowestSplit: slowId === undefined ? null : { id: slowId, seconds: Number(counters.slowestMs) / 1000 },
  };
}

/** XINFO's flat [name, value, name, value…] reply as an object. */
function fields(flat: unknown[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) o[String(flat[i])] = flat[i + 1];
  return o;
}

/**
 * The status as a table for `sluice job status`.
 *
 * @example
 * console.log(formatStatus(await clusterStatus(redis, job)));
 */
export function formatStatus(s: ClusterStatus): string {
  const lines = [
    `job ${s.job}, epoch ${s.epoch}: splits ${s.splits.done}/${s.splits.total} done, ${s.splits.leased} leased, ${s.splits.pending} pending, ${s.splits.dead} dead; ${s.reclaims} reclaimed`,
  ];
  if (s.slowestSplit !== null) lines.push(`slowest split: ${s.slowestSplit.id} (${s.slowestSplit.seconds.toFixed(2)} s)`);
  const rows = [['worker', 'url', 'state', 'last seen', 'made', 'served', 'rows/s']];
  for (const w of s.workers)
    rows.push([w.id, w.url, w.state, `${(w.lastSeenMs / 1000).toFixed(1)} s`, String(w.batchesMade), String(w.batchesServed), w.rowsPerSec.toFixed(0)]);
  const width = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows)
    lines.push(
      r
        .map((x, c) => x.padEnd(width[c]!))
        .join('  ')
        .trimEnd(),
    );
  return lines.join('\n');
}
