/**
 * The main thread's side of the heartbeat (cluster/heartbeat-thread.ts): starts the thread, hands
 * it the worker's record to store with each beat, and reports which leases each beat renewed.
 */
import { Worker } from 'node:worker_threads';
import type { HeartbeatData, HeartbeatIn, HeartbeatOut } from './heartbeat-thread.js';

/**
 * A running heartbeat thread.
 *
 * @example
 * const hb = new Heartbeat(data, (ids, at) => dropLeasesNotIn(ids, at), console.warn);
 * hb.record(JSON.stringify(myRecord));
 * hb.stop();
 */
export class Heartbeat {
  private readonly thread: Worker;
  private failing = false;

  /**
   * `onHeld(ids, at)`: after each beat, the stream ids it renewed, and when (Date.now()) it began —
   * a lease taken before `at` and not among `ids` was taken by another worker.
   */
  constructor(data: HeartbeatData, onHeld: (ids: ReadonlySet<string>, at: number) => void, onWarning?: (message: string) => void) {
    this.thread = new Worker(new URL('../../dist/cluster/heartbeat-thread.js', import.meta.url), { workerData: data });
    this.thread.unref();
    this.thread.on('message', (m: HeartbeatOut) => {
      if (m.kind === 'held') {
        if (this.failing) onWarning?.('the heartbeat reaches Redis again');
        this.failing = false;
        onHeld(new Set(m.ids), m.at);
        return;
      }
      // Said once per outage: a Redis restart fails beats until it is back.
      if (!this.failing) onWarning?.(`a heartbeat failed (${m.message}); leases expire after the lease time unless it recovers`);
      this.failing = true;
    });
    this.thread.on('error', (e: Error) => onWarning?.(`the heartbeat thread stopped: ${e.message}; this worker's leases will expire and go to other workers`));
  }

  /** The worker's public record (JSON), stored with each beat from now on. */
  record(json: string): void {
    this.thread.postMessage({ kind: 'record', json } satisfies HeartbeatIn);
  }

  /** Stops beating (the thread ends after its current beat). */
  stop(): void {
    this.thread.postMessage({ kind: 'stop' } satisfies HeartbeatIn);
  }

  /** Resolves when the thread has ended. */
  onExit(fn: () => void): void {
    this.thread.once('exit', fn);
  }
}
