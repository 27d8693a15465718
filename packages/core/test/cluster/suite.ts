/**
 * The setup every Redis-backed cluster suite shares: one redis-server, a client for the test's own
 * checks, the data set (and, unless told otherwise, the oracle's digests), and the worker processes
 * the tests start — all torn down once the suite ends, workers first so none outlives its Redis.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Redis } from 'ioredis';
import { tempDir } from '../helpers.js';
import { dataset, oracle, plan, startWorker, type WorkerProc } from './cluster.js';
import { RedisServer } from './redis.js';

/** What a suite's tests reach once `beforeAll` has run. */
export interface ClusterSuite {
  readonly server: RedisServer;
  readonly redis: Redis;
  /** The suite's temporary folder (the data set lies in it). */
  readonly dir: string;
  readonly input: string;
  /** The oracle's digests of `plan()` over `input` (empty when the suite asked for none). */
  readonly expected: string[];
  /** Starts a worker for `job` against this suite's Redis; it is killed when the suite ends. */
  worker(job: string, extra?: string[]): Promise<WorkerProc>;
  /** Kills `ws` when the suite ends (for workers started some other way). */
  track(...ws: WorkerProc[]): void;
}

/**
 * Registers the suite's `beforeAll`/`afterAll` and returns the object they fill in. Call it inside
 * `describe`; hooks the suite adds after it run after this setup.
 */
export function clusterSuite(o: { oracle?: boolean } = {}): ClusterSuite {
  const workers: WorkerProc[] = [];
  const s = {
    worker: async (job: string, extra: string[] = []): Promise<WorkerProc> => {
      const w = await startWorker(s.server.url, job, extra);
      workers.push(w);
      return w;
    },
    track: (...ws: WorkerProc[]): void => void workers.push(...ws),
  } as { -readonly [K in keyof ClusterSuite]: ClusterSuite[K] };

  beforeAll(async () => {
    s.server = await RedisServer.start();
    s.redis = s.server.client();
    s.dir = tempDir();
    s.input = await dataset(s.dir);
    s.expected = o.oracle === false ? [] : await oracle(plan(), s.input);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    s.redis?.disconnect();
    await s.server?.stop();
  });

  return s;
}
