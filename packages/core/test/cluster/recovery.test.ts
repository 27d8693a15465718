/**
 * Recovery: a trainer restarted from its checkpoint gets exactly the batches after it; a Redis
 * killed and restarted mid-epoch (AOF on) loses no progress that matters; a split that fails
 * every time (a corrupt row group) ends in the dead-letter stream and the trainer's error names it.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createClient } from '@sluice/client';
import type { PlanSpec } from '@sluice/ops';
import { jobKeys } from '../../src/cluster/keys.js';
import { checkExactlyOnce, plan, submit, train, until } from './cluster.js';
import { redisMissing } from './redis.js';
import { clusterSuite } from './suite.js';

const missing = redisMissing();

describe.skipIf(missing !== null)(`cluster: recovery${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const env = clusterSuite();

  it('a trainer restarted from its checkpoint {job, epoch, next seq} continues with exactly the remaining batches', async () => {
    const job = await submit(env.redis, 'resume', plan(), env.input);
    const [a, b] = [await env.worker(job.name), await env.worker(job.name)];
    // The trainer checkpoints after batch 10, reads on to 15, and dies (its process would be gone).
    let checkpoint: { job: string; epoch: number; next: number } | null = null;
    const first = await train(a.url, 0, 1, {
      stopAt: 16,
      onBatch: (seq) => {
        if (seq === 10) checkpoint = { job: job.name, epoch: job.splits.find((s) => s.firstSeq + s.batches > seq)!.epoch, next: seq + 1 };
      },
    });
    expect(first.map(([s]) => s)).toEqual([...Array(16).keys()]);
    const cp = JSON.parse(JSON.stringify(checkpoint)) as { job: string; epoch: number; next: number };
    expect(cp).toEqual({ job: job.name, epoch: 0, next: 11 });
    // Restarted from the checkpoint, against the other worker: 11, 12, … to the end, once each.
    const rest = await train(b.url, 0, 1, { from: cp.next });
    expect(rest.map(([s]) => s)).toEqual(env.expected.map((_, i) => i).slice(cp.next));
    checkExactlyOnce(env.expected, first.slice(0, cp.next), rest);
    await Promise.all([a.kill('SIGTERM'), b.kill('SIGTERM')]);
  }, 120_000);

  it('Redis killed and restarted (AOF on) mid-epoch: the job completes with the identical sequence', async () => {
    const job = await submit(env.redis, 'restart', plan(), env.input);
    const [a, b] = [await env.worker(job.name), await env.worker(job.name)];
    let restarted: Promise<void> | null = null;
    const onBatch = async (seq: number): Promise<void> => {
      if (seq !== 10) return;
      restarted = (async () => {
        await env.server.kill();
        await new Promise((r) => setTimeout(r, 700));
        await env.server.up();
      })();
      await restarted;
    };
    const [t0, t1] = await Promise.all([train(a.url, 0, 2, { onBatch }), train(b.url, 1, 2)]);
    expect(restarted).not.toBeNull();
    checkExactlyOnce(env.expected, t0, t1);
    // The progress survived the restart: every split is done, none is dead. A worker records a
    // split's last delivery after the batch went out, so the trainer can finish a moment before
    // the count does (CI once read 23 of 24): wait for it, bounded.
    const k = jobKeys(job.name);
    await until('every split recorded done', async () => Number((await env.redis.hgetall(k.counters)).done) === job.splits.length, 10_000);
    const counters = await env.redis.hgetall(k.counters);
    expect(Number(counters.done)).toBe(job.splits.length);
    expect(counters.dead).toBeUndefined();
    await Promise.all([a.kill('SIGTERM'), b.kill('SIGTERM')]);
  }, 120_000);

  it('a split that fails every time goes to the dead-letter stream, and the trainer gets an error naming it', async () => {
    // Unshuffled: one split per row group's batches; the middle of the file (row groups 2-3) is scribbled over.
    const bad = join(env.dir, 'corrupt.parquet');
    copyFileSync(env.input, bad);
    const bytes = readFileSync(bad);
    bytes.fill(0xab, Math.floor(bytes.length * 0.45), Math.floor(bytes.length * 0.5));
    writeFileSync(bad, bytes);
    const spec: PlanSpec = { ...plan(), shuffle: false, epochs: 1 };
    const job = await submit(env.redis, 'dead-letter', spec, bad, 4);
    const a = await env.worker(job.name, ['--max-attempts', '3']);
    const c = createClient(a.url, { retries: 0 });
    let err: Error | null = null;
    let got = 0;
    try {
      for await (const b of c.batches()) {
        got++;
        b.release?.();
      }
    } catch (e) {
      err = e as Error;
    } finally {
      await c.close();
    }
    expect(err).not.toBeNull();
    expect(err!.message).toMatch(
      /HTTP 410: split \d+ \(epoch 0, batches \d+-\d+, corrupt\.parquet row group \d\) failed 3 times and went to the dead-letter stream: .*corrupt\.parquet/,
    );
    const index = Number(/split (\d+)/.exec(err!.message)![1]);
    // The batches before the dead split came through; none after it did.
    expect(got).toBe(job.splits[index]!.firstSeq);
    const dead = (await env.redis.xrange(jobKeys(job.name).dead, '-', '+')) as Array<[string, string[]]>;
    expect(dead).toHaveLength(1);
    expect(dead[0]![1].slice(0, 4)).toEqual(['split', String(index), 'attempts', '3']);
    const status = await (await fetch(`${a.url}/v1/cluster`)).json();
    expect(status.splits.dead).toBe(1);
    await a.kill('SIGTERM');
  }, 120_000);
});
