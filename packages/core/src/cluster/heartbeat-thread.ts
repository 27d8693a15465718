/**
 * The heartbeat thread: renews a worker's leases and its alive key on a timer, on a Redis
 * connection of its own. It runs in a worker_thread so that nothing the main thread does — a
 * long synchronous op chain, a big batch being encoded, a GC pause — can delay a renewal past the
 * lease time and let another worker take splits this one is still making.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Redis } from 'ioredis';
import { RENEW } from './scripts.js';

/** What the thread is started with. */
export interface HeartbeatData {
  readonly redisUrl: string;
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  readonly aliveKey: string;
  readonly workersKey: string;
  readonly leaseMs: number;
}

/** Messages from the main thread: the worker's public record (stored with each beat), or stop. */
export type HeartbeatIn = { kind: 'record'; json: string } | { kind: 'stop' };
/** Messages to the main thread: the leases still held after a beat, or a beat that failed. */
export type HeartbeatOut = { kind: 'held'; ids: string[]; at: number } | { kind: 'error'; message: string };

const d = workerData as HeartbeatData;
const redis = new Redis(d.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
redis.on('error', () => undefined); // reported per beat below
let record = '';
let stopping = false;

async function beat(): Promise<void> {
  const at = Date.now();
  try {
    // The record says when it was last seen: now, as of this beat.
    const json = record === '' ? '{}' : JSON.stringify({ ...(JSON.parse(record) as object), lastSeenMs: at });
    const ids = (await redis.eval(RENEW, 3, d.stream, d.aliveKey, d.workersKey, d.group, d.consumer, String(d.leaseMs), json)) as string[];
    parentPort!.postMessage({ kind: 'held', ids, at } satisfies HeartbeatOut);
  } catch (e) {
    parentPort!.postMessage({ kind: 'error', message: (e as Error).message } satisfies HeartbeatOut);
  }
}

// A third of the lease: two beats may fail (a Redis restart) before a lease runs out.
const timer = setInterval(() => void beat(), Math.max(50, Math.floor(d.leaseMs / 3)));
parentPort!.on('message', (m: HeartbeatIn) => {
  if (m.kind === 'record') {
    record = m.json;
    return;
  }
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  redis.disconnect();
  parentPort!.close();
});
// The first beat waits for the connection: with no offline queue, a command sent while it is
// still connecting fails at once, and every worker started with a "heartbeat failed" warning.
if (redis.status === 'ready') {
  void beat();
} else {
  redis.once('ready', () => {
    if (!stopping) void beat();
  });
}
