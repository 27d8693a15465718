/**
 * Workers killed with SIGKILL at several points (after making a split but before delivering it,
 * and while delivering), stopped with SIGTERM, and added mid-epoch: the trainers still get every
 * batch exactly once, identical to pipeline()'s sequence.
 */
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { jobKeys } from '../../src/cluster/keys.js';
import { checkExactlyOnce, gauge, plan, submit, train, until, type WorkerProc } from './cluster.js';
import { redisMissing } from './redis.js';
import { clusterSuite } from './suite.js';

const missing = redisMissing();

describe.skipIf(missing !== null)(`cluster: faults${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const env = clusterSuite();

  it('backpressure: a worker nobody reads from stops leasing once it holds --max-held batches', async () => {
    const job = await submit(env.redis, 'backpressure', plan(), env.input);
    const a = await env.worker(job.name, ['--max-held', '4', '--lease-splits', '1']);
    await until('worker A to fill up', async () => (await gauge(a.url, 'sluice_cluster_held_batches')) >= 4);
    await new Promise((r) => setTimeout(r, 2_000));
    // Full: at most max-held plus the rest of the split it was making (2-batch splits), and no more leases.
    const held = await gauge(a.url, 'sluice_cluster_held_batches');
    expect(held).toBeGreaterThanOrEqual(4);
    expect(held).toBeLessThanOrEqual(5);
    const leases = await gauge(a.url, 'sluice_cluster_leases_total');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await gauge(a.url, 'sluice_cluster_leases_total')).toBe(leases);
    const status = await (await fetch(`${a.url}/v1/cluster`)).json();
    expect(status.splits.pending).toBe(job.splits.length - leases);
    await a.kill('SIGTERM');
  }, 60_000);

  it('SIGKILL after making splits but before delivering them: recomputed elsewhere, nothing lost or twice', async () => {
    const job = await submit(env.redis, 'kill-undelivered', plan(), env.input);
    const a = await env.worker(job.name, ['--max-held', '6']);
    // A makes splits and holds their batches: nobody has asked for them yet.
    await until('worker A to hold made batches', async () => (await gauge(a.url, 'sluice_cluster_held_batches')) >= 4);
    const b = await env.worker(job.name);
    await a.kill('SIGKILL');
    const [t0, t1] = await Promise.all([train(b.url, 0, 2), train(b.url, 1, 2)]);
    checkExactlyOnce(env.expected, t0, t1);
    const status = await (await fetch(`${b.url}/v1/cluster`)).json();
    expect(status.reclaims).toBeGreaterThan(0);
    expect(status.splits.done).toBe(job.splits.length);
    expect(status.workers.find((w: { id: string }) => w.id === a.id).state).toBe('dead');
    await b.kill('SIGTERM');
  }, 120_000);

  it('SIGKILL of two of three workers while trainers read (different epochs): the third finishes the job', async () => {
    const job = await submit(env.redis, 'kill-delivering', plan(), env.input);
    const [a, b, c] = [await env.worker(job.name), await env.worker(job.name), await env.worker(job.name)];
    const kills: Record<number, WorkerProc> = { 8: a, 30: b };
    const onBatch = async (seq: number): Promise<void> => {
      const w = kills[seq];
      if (w !== undefined) await w.kill('SIGKILL');
    };
    const [t0, t1] = await Promise.all([train(c.url, 0, 2, { onBatch }), train(c.url, 1, 2, { onBatch })]);
    checkExactlyOnce(env.expected, t0, t1);
    expect(a.proc.signalCode).toBe('SIGKILL');
    expect(b.proc.signalCode).toBe('SIGKILL');
    await c.kill('SIGTERM');
  }, 120_000);

  it('SIGTERM hands the leases back within a second; a worker added mid-epoch takes splits at once', async () => {
    const job = await submit(env.redis, 'term-join', plan(), env.input);
    const k = jobKeys(job.name);
    const a = await env.worker(job.name, ['--max-held', '4']);
    await until('worker A to lease', async () => (await pendingOf(env.redis, k.splits, a.id)) > 0);
    const t0 = performance.now();
    const exited = a.kill('SIGTERM');
    await until('A to hand its leases back', async () => (await pendingOf(env.redis, k.splits, a.id)) === 0, 5_000);
    const released = performance.now() - t0;
    await exited;
    console.log(`leases handed back ${released.toFixed(0)} ms after SIGTERM`);
    expect(released).toBeLessThan(1000);
    expect(a.proc.exitCode).toBe(0);
    // B starts after: the released splits are taken without waiting for the lease time. B may
    // hold few batches, so that splits are left for C, which joins mid-epoch.
    const b = await env.worker(job.name, ['--max-held', '4']);
    let c: WorkerProc | null = null;
    const onBatch = async (seq: number): Promise<void> => {
      if (seq === 10) c = await env.worker(job.name);
    };
    const [r0, r1] = await Promise.all([train(b.url, 0, 2, { onBatch }), train(b.url, 1, 2)]);
    checkExactlyOnce(env.expected, r0, r1);
    // Its counters reach Redis with its next heartbeat.
    const made = async (): Promise<number> => {
      const status = await (await fetch(`${b.url}/v1/cluster`)).json();
      return status.workers.find((w: { id: string }) => w.id === c!.id).batchesMade as number;
    };
    await until('the joined worker to show the batches it made', async () => (await made()) > 0, 3_000);
    await Promise.all([b.kill('SIGTERM'), c!.kill('SIGTERM')]);
  }, 120_000);
});

/** Stream entries pending to consumer `id`. */
async function pendingOf(redis: Redis, stream: string, id: string): Promise<number> {
  const consumers = (await redis.call('XINFO', 'CONSUMERS', stream, 'workers')) as unknown[][];
  for (const c of consumers) if (c[1] === id) return Number(c[3]);
  return 0;
}
