/**
 * Leasing splits from the job's stream with the workers' consumer group: a dead worker's splits
 * first (XAUTOCLAIM once their lease time has passed), then new ones (XREADGROUP), and handing
 * leases back at once (SIGTERM) by parking them under a consumer whose entries look long idle.
 */
import type { Redis } from 'ioredis';
import type { JobSpec, Split } from './job.js';
import { RELEASED, jobKeys, type JobKeys } from './keys.js';

/**
 * A split this worker holds: its stream entry id, and whether it was taken from another worker.
 *
 * @example
 * const [l] = await leases.next(true); // none when there is nothing to take now
 */
export interface Lease {
  readonly split: Split;
  readonly id: string;
  readonly reclaimed: boolean;
  /** Date.now() when it was taken (a heartbeat older than this does not know of it). */
  readonly at: number;
}

/** Idle time given to a released entry: far past any lease time, so the next XAUTOCLAIM takes it. */
const RELEASED_IDLE_MS = 1e12;

/**
 * The lease operations of one worker (consumer `consumer` of the job's group).
 *
 * @example
 * const leases = new Leases(redis, blocking, job, 'w1', 10_000);
 * const [l] = await leases.next(held < maxHeld);
 * if (l) await leases.release([l.id]);
 */
export class Leases {
  private readonly k: JobKeys;
  /** Splits taken from other workers (or released by them). */
  reclaims = 0;
  /** Splits taken, reclaims included. */
  taken = 0;

  constructor(
    private readonly redis: Redis,
    /** A connection of its own: XREADGROUP BLOCK holds it while it waits. */
    private readonly blocking: Redis,
    private readonly job: JobSpec,
    private readonly consumer: string,
    private readonly leaseMs: number,
  ) {
    this.k = jobKeys(job.name);
  }

  /**
   * The next split to make: an expired or released lease (always, even when this worker is full,
   * since trainers may be waiting on it and on nothing else), else a new split when `takeNew`
   * (waiting up to half a second for one): up to `count` consecutive ones, which one pipeline run
   * makes without restarting. Empty when there is none.
   */
  async next(takeNew: boolean, count = 1): Promise<Lease[]> {
    const claimed = (await this.redis.call('XAUTOCLAIM', this.k.splits, this.k.group, this.consumer, String(this.leaseMs), '0-0', 'COUNT', '1')) as [
      string,
      Array<[string, string[]] | null>,
    ];
    const entry = claimed[1].find((e) => e !== null);
    if (entry) {
      this.reclaims++;
      this.taken++;
      await this.redis.hincrby(this.k.counters, 'reclaims', 1);
      return [this.lease(entry[0], true)];
    }
    if (!takeNew) return [];
    const got = (await this.blocking.call(
      'XREADGROUP',
      'GROUP',
      this.k.group,
      this.consumer,
      'COUNT',
      String(count),
      'BLOCK',
      '500',
      'STREAMS',
      this.k.splits,
      '>',
    )) as [string, Array<[string, string[]]>] | Array<[string, Array<[string, string[]]>]> | null;
    if (got === null || got.length === 0) return [];
    // One stream asked for: ioredis gives [name, entries] rather than [[name, entries]].
    const stream = (typeof got[0] === 'string' ? got : got[0]) as [string, Array<[string, string[]]>];
    this.taken += stream[1].length;
    return stream[1].map(([id]) => this.lease(id, false));
  }

  /** Hands leases back now: parked under a consumer that looks idle for ages, any worker's next XAUTOCLAIM takes them. */
  async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.redis.call('XCLAIM', this.k.splits, this.k.group, RELEASED, '0', ...ids, 'IDLE', String(RELEASED_IDLE_MS), 'JUSTID');
  }

  /** Acknowledges an entry without completing it (a split already done or dead when leased). */
  async ack(id: string): Promise<void> {
    await this.redis.xack(this.k.splits, this.k.group, id);
  }

  private lease(id: string, reclaimed: boolean): Lease {
    const index = Number(id.split('-')[0]) - 1;
    return { split: this.job.splits[index]!, id, reclaimed, at: Date.now() };
  }
}
