/**
 * The heartbeat thread on a healthy Redis: its first beat waits for its connection, so a worker
 * that starts normally prints no "a heartbeat failed" warning (each `sluice worker` printed one,
 * then "the heartbeat reaches Redis again" a beat later, because the thread's first beat ran
 * before its connection was up and its client queues nothing offline).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Heartbeat } from '../../src/cluster/heartbeat.js';
import { RedisServer, redisMissing } from './redis.js';

const missing = redisMissing();

describe.skipIf(missing !== null)(`cluster: heartbeat${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await RedisServer.start();
    const r = server.client();
    await r.xgroup('CREATE', 'hb:splits', 'hb:group', '0', 'MKSTREAM');
    r.disconnect();
  }, 30_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('renews from its first beat, with no warning on a Redis that is up', async () => {
    const warnings: string[] = [];
    let hb: Heartbeat | undefined;
    const first = new Promise<ReadonlySet<string>>((resolve) => {
      hb = new Heartbeat(
        { redisUrl: server.url, stream: 'hb:splits', group: 'hb:group', consumer: 'w1', aliveKey: 'hb:alive:w1', workersKey: 'hb:workers', leaseMs: 3000 },
        (ids) => resolve(ids),
        (m) => warnings.push(m),
      );
    });
    const ids = await first;
    const stopped = new Promise<void>((resolve) => hb!.onExit(resolve));
    hb!.stop();
    await stopped;
    expect(ids.size).toBe(0);
    expect(warnings).toEqual([]);
  }, 30_000);
});
