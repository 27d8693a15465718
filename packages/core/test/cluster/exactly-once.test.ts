/**
 * Every batch of every epoch reaches the trainers exactly once, in order, with 1, 2 and 3 worker
 * processes, and the sequence is the one `pipeline({ windowBatches: true })` yields on one machine.
 */
import { describe, expect, it } from 'vitest';
import { checkExactlyOnce, plan, startWorker, submit, train } from './cluster.js';
import { redisMissing } from './redis.js';
import { clusterSuite } from './suite.js';

const missing = redisMissing();

describe.skipIf(missing !== null)(`cluster: exactly once${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const env = clusterSuite();

  for (const n of [1, 2, 3]) {
    it(`${n} worker${n > 1 ? 's' : ''}: two trainers (seq mod 2) get every batch once, identical to pipeline()`, async () => {
      const job = await submit(env.redis, `once-${n}`, plan(), env.input);
      expect(job.batches).toBe(env.expected.length);
      // Each holds few batches and leases one split at a time, so no worker can take the whole job
      // before another has started.
      const ws = await Promise.all(Array.from({ length: n }, () => startWorker(env.server.url, job.name, ['--max-held', '4', '--lease-splits', '1'])));
      env.track(...ws);
      // Trainer r asks worker r mod n: with several workers most batches come by redirect.
      const [a, b] = await Promise.all([train(ws[0]!.url, 0, 2), train(ws[1 % n]!.url, 1, 2)]);
      for (const t of [a, b]) expect(t.map(([s]) => s)).toEqual([...t.map(([s]) => s)].sort((x, y) => x - y));
      checkExactlyOnce(env.expected, a, b);
      // Every split acknowledged once all its batches were delivered.
      const status = await (await fetch(`${ws[0]!.url}/v1/cluster`)).json();
      expect(status.splits).toEqual({ total: job.splits.length, done: job.splits.length, leased: 0, pending: 0, dead: 0 });
      if (n > 1) {
        // Work was shared. With three workers on a loaded 2-vCPU host the last to start can find
        // every split taken (seen once), so at least two of them must have made batches.
        const made = status.workers.filter((w: { batchesMade: number }) => w.batchesMade > 0).length;
        expect(made).toBeGreaterThanOrEqual(2);
      }
      await Promise.all(ws.map((w) => w.kill('SIGTERM')));
    }, 120_000);
  }
});
