/**
 * Every batch of every epoch reaches the trainers exactly once, in order, with 1, 2 and 3 worker
 * processes, and the sequence is the one `pipeline({ windowBatches: true })` yields on one machine.
 */
import { describe, expect, it } from 'vitest';
import { checkExactlyOnce, gauge, plan, startWorker, submit, train, until } from './cluster.js';
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
      // Work is shared: before any trainer reads, each worker makes batches until it holds 4 (two
      // splits of 2), so the first to start cannot take the whole job and every worker makes
      // some, however late a loaded host starts it. Read from each worker's own counter: CI once
      // found one of two workers with none made in the cluster status, which has the counts from
      // heartbeats, a beat behind, while trainers reading at once may drain the first worker
      // before a late one starts.
      await until(
        'every worker to make a batch',
        async () => (await Promise.all(ws.map((w) => gauge(w.url, 'sluice_batches_made_total')))).every((m) => m > 0),
        60_000,
      );
      // Trainer r asks worker r mod n: with several workers most batches come by redirect.
      const [a, b] = await Promise.all([train(ws[0]!.url, 0, 2), train(ws[1 % n]!.url, 1, 2)]);
      for (const t of [a, b]) expect(t.map(([s]) => s)).toEqual([...t.map(([s]) => s)].sort((x, y) => x - y));
      checkExactlyOnce(env.expected, a, b);
      // Every split acknowledged once all its batches were delivered.
      const status = await (await fetch(`${ws[0]!.url}/v1/cluster`)).json();
      expect(status.splits).toEqual({ total: job.splits.length, done: job.splits.length, leased: 0, pending: 0, dead: 0 });
      await Promise.all(ws.map((w) => w.kill('SIGTERM')));
    }, 120_000);
  }
});
