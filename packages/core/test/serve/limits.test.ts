// What keeps `sluice serve` bounded and fair, each on a real server over loopback: malformed
// percent-escapes are 400, /metrics access follows metricsAuth, idle connections make room for new
// clients and are closed by the header timeout, a reader that stops reading is cut off at the send
// timeout, and the disk spill keeps every body byte-identical to the pipeline's batch while it
// evicts, re-makes from resume points and leaves no file behind.
import { createHash } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchToArrowStream, batchToMsgpack, createBatchServer, parseTarget, type BatchServer } from '@sluice/core/serve';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { pipeline, type PlanSpec } from '@sluice/core';
import { tempDir } from '../helpers.js';
import { silent } from './sockets.js';

const dir = tempDir('sluice-serve-limits-');
const small = join(dir, 'rm1-1k.parquet');
const medium = join(dir, 'rm1-20k.parquet');
const TOKEN = 'limits';
// The in-process reference backend: each pipeline run starts no worker pool.
const base: PlanSpec = { ...getPreset('rm1').defaultPlan(), backend: { name: 'reference' } };
const plan128: PlanSpec = { ...base, batchSize: 128 };

beforeAll(async () => {
  await generateDataset({ preset: 'rm1', rows: 1000, out: small, seed: 7, rowGroupSize: 300 });
  await generateDataset({ preset: 'rm1', rows: 20_000, out: medium, seed: 11, rowGroupSize: 3000 });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** One GET with the request target exactly as given (fetch would normalise it), on a connection of its own unless `agent` keeps one. */
function rawGet(
  url: string,
  target: string,
  headers: Record<string, string> = {},
  agent: Agent | false = false,
): Promise<{ status: number; body: Buffer; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = httpRequest({ host: u.hostname, port: u.port, path: target, headers, agent }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts), ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const connected = (s: Socket): Promise<void> => new Promise((r) => (s.readyState === 'open' ? r() : s.once('connect', () => r())));

describe('request targets', () => {
  let srv: BatchServer;
  let url = '';
  beforeAll(async () => {
    srv = await createBatchServer(plan128, { input: small }, { token: TOKEN });
    url = await srv.listen(0);
  });
  afterAll(() => srv?.close());

  it('a malformed percent-escape is 400 with one line saying which, wherever it is', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const cases: Array<[string, RegExp]> = [
      ['/v1/batches/%ZZ', /^malformed percent-escape in "%ZZ": "%ZZ" is not "%" and two hex digits$/],
      ['/v1/batches/%', /^malformed percent-escape in "%": "%" is not "%" and two hex digits$/],
      ['/v1/batches/%E0%A4%A', /^malformed percent-escape in "%E0%A4%A": "%A" is not "%" and two hex digits$/],
      ['/v1/batches/%C0%80', /^malformed percent-escape in "%C0%80": the escaped bytes are not UTF-8$/],
      ['/v1/%ZZ', /^malformed percent-escape in "%ZZ"/],
      ['/%', /^malformed percent-escape in "%"/],
    ];
    for (const [target, want] of cases) {
      for (const headers of [auth, {}]) {
        const r = await rawGet(url, target, headers);
        expect(r.status, target).toBe(400);
        const error = (JSON.parse(r.body.toString()) as { error: string }).error;
        expect(error, target).toMatch(want);
        expect(error).not.toMatch(/URI malformed|\n/);
      }
    }
    // Escapes that decode are read as what they spell; an escaped seq still has to be a seq.
    expect((await rawGet(url, '/v1/batches/%31', auth)).status).toBe(200);
    expect((await rawGet(url, '/v1/%69nfo', auth)).status).toBe(200);
    const slash = await rawGet(url, '/v1/batches/1%2F2', auth);
    expect(slash.status).toBe(400);
    expect(JSON.parse(slash.body.toString())).toEqual({ error: 'batch seq must be a non-negative integer, got "1/2"' });
    expect((await rawGet(url, '/v1/batches/0', auth)).status).toBe(200);
  });

  it('parseTarget names the route, and only non-negative integer seqs', () => {
    expect(parseTarget('/v1/batches/7?x=%ZZ')).toEqual({ kind: 'batch', seq: 7 });
    expect(parseTarget('/healthz')).toEqual({ kind: 'healthz' });
    expect(parseTarget('/v1/info')).toEqual({ kind: 'info' });
    expect(parseTarget('/v1/nope')).toEqual({ kind: 'unknown-v1', path: '/v1/nope' });
    expect(parseTarget('/elsewhere')).toEqual({ kind: 'unknown', path: '/elsewhere' });
    for (const bad of ['-1', '01', '1.5', '1e3', '', '9007199254740992']) expect(() => parseTarget(`/v1/batches/${bad}`)).toThrow(/non-negative integer/);
    expect(() => parseTarget('*')).toThrow(/must be a path starting with "\/"/);
  });
});

describe('/metrics access', () => {
  it('asks for the token by default, is open with metricsAuth "open", and is open anyway without a token', async () => {
    const count = async (opts: Parameters<typeof createBatchServer>[2]): Promise<[number, number]> => {
      const s = await createBatchServer(plan128, { input: small }, opts);
      try {
        const url = await s.listen(0);
        const bare = await rawGet(url, '/metrics');
        const withToken = await rawGet(url, '/metrics', { authorization: `Bearer ${TOKEN}` });
        if (withToken.status === 200) expect(withToken.body.toString()).toMatch(/^sluice_batches_made_total \d+$/m);
        return [bare.status, withToken.status];
      } finally {
        await s.close();
      }
    };
    expect(await count({ token: TOKEN })).toEqual([401, 200]);
    expect(await count({ token: TOKEN, metricsAuth: 'token' })).toEqual([401, 200]);
    expect(await count({ token: TOKEN, metricsAuth: 'open' })).toEqual([200, 200]);
    expect(await count({})).toEqual([200, 200]);
    await expect(createBatchServer(plan128, { input: small }, { metricsAuth: 'nobody' as 'open' })).rejects.toThrow(
      /metricsAuth must be "token" or "open", got "nobody"/,
    );
  });
});

describe('connections', () => {
  it('at the connection limit a new client takes the place of the connection idle longest', async () => {
    const s = await createBatchServer(plan128, { input: small }, { maxConnections: 8 });
    const url = await s.listen(0);
    const idle: Array<ReturnType<typeof silent>> = [];
    for (let i = 0; i < 8; i++) {
      idle.push(silent(url));
      await connected(idle[i]!.socket);
    }
    // Five clients that keep their connections: each needs a place, and takes the oldest silent one's.
    const agents = Array.from({ length: 5 }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    try {
      for (const agent of agents) {
        const r = await rawGet(url, '/v1/batches/0', {}, agent);
        expect(r.status).toBe(200);
        expect(r.ms).toBeLessThan(2000);
      }
      expect(s.guard.evicted).toBe(5);
      expect(s.guard.refused).toBe(0);
      const closed = await Promise.all(idle.slice(0, 5).map((c) => c.closed));
      expect(closed.every((c) => c.got === '')).toBe(true);
      expect(idle.slice(5).every((c) => !c.socket.destroyed)).toBe(true);
      // The kept connections are idle now but newer: the next newcomer takes a silent one's place.
      expect((await rawGet(url, '/healthz', {}, new Agent({ keepAlive: true }))).status).toBe(200);
      expect(s.guard.evicted).toBe(6);
      await idle[5]!.closed;
    } finally {
      idle.forEach((c) => c.socket.destroy());
      agents.forEach((a) => a.destroy());
      await s.close();
    }
  });

  it('a connection that sends no request is answered 408 and closed at the header timeout', async () => {
    const s = await createBatchServer(plan128, { input: small }, { headersTimeoutMs: 500 });
    const url = await s.listen(0);
    const idle = Array.from({ length: 4 }, () => silent(url));
    try {
      const closed = await Promise.all(idle.map((c) => c.closed));
      for (const c of closed) {
        expect(c.got).toMatch(/^HTTP\/1\.1 408 /);
        // Node checks every second (CHECK_INTERVAL_MS), not every 30 s as by default.
        expect(c.ms).toBeGreaterThanOrEqual(450);
        expect(c.ms).toBeLessThan(2500);
      }
    } finally {
      idle.forEach((c) => c.socket.destroy());
      await s.close();
    }
  });

  it('a reader that stops reading is cut off at the send timeout, and others are served meanwhile', async () => {
    // One batch of 20,000 rows (~8 MB as msgpack): more than loopback's socket buffers hold.
    const big: PlanSpec = { ...base, batchSize: 20_000 };
    const s = await createBatchServer(big, { input: medium }, { sendTimeoutMs: 1000 });
    const url = await s.listen(0);
    const u = new URL(url);
    const stalled = connect(Number(u.port), u.hostname);
    stalled.on('error', () => undefined);
    try {
      await connected(stalled);
      stalled.pause(); // reads nothing: the server's writes back up
      const t0 = performance.now();
      stalled.write(`GET /v1/batches/0 HTTP/1.1\r\nHost: x\r\nAccept: application/msgpack\r\n\r\n`);
      const other = await rawGet(url, '/healthz');
      expect(other.status).toBe(200);
      expect(other.ms).toBeLessThan(1000);
      while (s.guard.sendTimeouts === 0 && performance.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
      const at = performance.now() - t0;
      expect(s.guard.sendTimeouts).toBe(1);
      expect(at).toBeGreaterThanOrEqual(1000);
      expect(at).toBeLessThan(5000);
      // What the stalled reader gets once it reads: the head and part of the body, then the end.
      const got: Buffer[] = [];
      stalled.on('data', (c: Buffer) => got.push(c));
      stalled.resume();
      await new Promise((r) => stalled.once('close', r));
      const text = Buffer.concat(got);
      const head = text.subarray(0, text.indexOf('\r\n\r\n')).toString('latin1');
      const length = Number(/content-length: (\d+)/i.exec(head)![1]);
      expect(length).toBeGreaterThan(8 << 20);
      expect(text.byteLength - head.length - 4).toBeLessThan(length);
      // A reader that does read gets the whole batch.
      const whole = await rawGet(url, '/v1/batches/0', { accept: 'application/msgpack' });
      expect(whole.status).toBe(200);
      expect(whole.body.byteLength).toBe(length);
    } finally {
      stalled.destroy();
      await s.close();
    }
  });

  it('options out of range are refused by name', async () => {
    await expect(createBatchServer(plan128, { input: small }, { maxConnections: -1 })).rejects.toThrow(
      /maxConnections must be a non-negative integer \(0 turns it off\), got -1/,
    );
    await expect(createBatchServer(plan128, { input: small }, { maxRuns: 0 })).rejects.toThrow(/maxRuns must be a positive integer, got 0/);
    // Past 2^31 - 1 ms Node fires a timer after 1 ms: every response would be cut off at once.
    for (const o of [{ sendTimeoutMs: 3e9 }, { headersTimeoutMs: 2 ** 31 }, { keepAliveTimeoutMs: 2 ** 40 }]) {
      const [name, v] = Object.entries(o)[0]!;
      await expect(createBatchServer(plan128, { input: small }, o)).rejects.toThrow(
        `${name} must be at most 2147483647 (about 24.8 days; 0 turns it off), got ${v}`,
      );
    }
    await expect(createBatchServer(plan128, { input: small }, { spillDir: join(dir, 'no', 'such') })).rejects.toThrow(
      new RegExp(`^cannot write the spill in ${join(dir, 'no', 'such').replace(/[/\\.]/g, '\\$&')} \\(ENOENT\\): choose another folder`),
    );
  });
});

describe('the disk spill', () => {
  // 20,000 rows in batches of 256: 79 batches of ~100 KB, about 8 MB in all.
  const plan256: PlanSpec = { ...base, batchSize: 256 };
  let want: { msgpack: string[]; arrow: string[] };

  beforeAll(async () => {
    want = { msgpack: [], arrow: [] };
    for await (const b of pipeline(plan256, { input: medium })) {
      want.msgpack.push(sha(batchToMsgpack(b)));
      want.arrow.push(sha(batchToArrowStream(b, 'label')));
    }
  });

  /** 24 clients asking random seqs in both formats; every body checked against the pipeline's. */
  async function hammer(url: string, seed: number): Promise<number> {
    let s = seed;
    const rnd = (): number => ((s = (s * 1103515245 + 12345) & 0x7fffffff), s / 0x80000000);
    let n = 0;
    await Promise.all(
      Array.from({ length: 24 }, async (_, c) => {
        for (let i = 0; i < 12; i++) {
          const seq = Math.floor(rnd() * want.msgpack.length);
          const arrow = (c + i) % 3 === 0;
          const r = await fetch(`${url}/v1/batches/${seq}`, { headers: { accept: arrow ? 'application/vnd.apache.arrow.stream' : 'application/msgpack' } });
          expect(r.status).toBe(200);
          expect(sha(new Uint8Array(await r.arrayBuffer())), `batch ${seq}`).toBe((arrow ? want.arrow : want.msgpack)[seq]);
          n++;
        }
      }),
    );
    return n;
  }

  it('with room for every batch, concurrent random access makes each batch once', async () => {
    const s = await createBatchServer(plan256, { input: medium }, { spillDir: dir });
    try {
      expect(await hammer(await s.listen(0), 1)).toBe(24 * 12);
      expect(s.store.spilling).toBe(true);
      expect(s.store.made / s.store.distinct).toBeLessThanOrEqual(1.1);
      // The segment files were unlinked as soon as they were opened: nothing to see, nothing left behind.
      expect(readdirSync(dir).filter((f) => f.startsWith('sluice-spill-'))).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('a spill smaller than the data evicts, re-makes from resume points and still sends the same bytes', async () => {
    const warnings: string[] = [];
    const s = await createBatchServer(
      plan256,
      { input: medium },
      { spillDir: dir, spillBytes: 2 * 2 ** 20, checkpointEvery: 4, onWarning: (m) => warnings.push(m) },
    );
    try {
      const url = await s.listen(0);
      for (let round = 0; round < 2; round++) await hammer(url, 7 + round);
      // Said once, at the first batch: how many batches fit, and what would hold them all.
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        /^the spill holds about \d+ of the 79 batches \(\d+ KiB each as msgpack, Arrow about as much again\): .* --spill-size \(spillBytes\) of [\d.]+ MiB would hold them all$/,
      );
      expect(s.store.evicted).toBeGreaterThan(0);
      expect(s.store.made).toBeGreaterThan(s.store.distinct);
      // At most the budget plus the segment being written (1 MiB at this size).
      expect(s.store.cachedBytes).toBeLessThanOrEqual(3 * 2 ** 20);
    } finally {
      await s.close();
    }
  });

  it('a shuffled plan over two epochs, re-made from resume points mid-window, sends the pipeline bytes', async () => {
    const shuffled: PlanSpec = { ...base, batchSize: 512, epochs: 2, shuffle: { seed: 5, bufferRows: 4000 } };
    const oracle: string[] = [];
    for await (const b of pipeline(shuffled, { input: medium })) oracle.push(sha(batchToMsgpack(b)));
    expect(oracle).toHaveLength(2 * Math.ceil(20_000 / 512));
    const s = await createBatchServer(shuffled, { input: medium }, { spillBytes: 0, cacheBatches: 6, checkpointEvery: 3, prefetch: 1 });
    try {
      const url = await s.listen(0);
      let x = 3;
      const seqs = Array.from({ length: 48 }, () => ((x = (x * 1103515245 + 12345) & 0x7fffffff), x % oracle.length));
      await Promise.all(
        Array.from({ length: 6 }, async (_, c) => {
          for (const seq of seqs.slice(c * 8, c * 8 + 8)) {
            const r = await rawGet(url, `/v1/batches/${seq}`, { accept: 'application/msgpack' });
            expect(r.status).toBe(200);
            expect(sha(r.body), `batch ${seq}`).toBe(oracle[seq]);
          }
        }),
      );
      expect(s.store.made).toBeGreaterThan(s.store.distinct); // re-made, from resume points
      expect((await rawGet(url, `/v1/batches/${oracle.length}`)).status).toBe(404);
    } finally {
      await s.close();
    }
  });

  it('a request behind the only run, which is busy far ahead, takes it over instead of waiting for it', async () => {
    // One run, a memory cache of 8 batches, a resume point every 2: after batch 20 is made, batch
    // 10 is neither cached nor on the run's way to the last batch.
    const s = await createBatchServer(plan256, { input: medium }, { spillBytes: 0, cacheBatches: 8, maxRuns: 1, checkpointEvery: 2, prefetch: 0 });
    const last = want.msgpack.length - 1;
    const bytes = async (seq: number): Promise<[string, number]> => {
      const body = (await s.store.get(seq, 'application/msgpack'))!;
      const made = s.store.made;
      try {
        return [sha(await body.read()), made];
      } finally {
        body.release();
      }
    };
    try {
      expect((await bytes(20))[0]).toBe(want.msgpack[20]);
      const far = bytes(last); // the run goes on from 21 towards the end
      const [hash10, madeAt10] = await bytes(10);
      expect(hash10).toBe(want.msgpack[10]);
      // 10 came from a new run started at resume point 10, long before the old run could have
      // reached the last batch (it would have made 58 more first); the new run then made the rest.
      expect(madeAt10).toBeLessThan(21 + 40);
      expect((await far)[0]).toBe(want.msgpack[last]);
      expect(s.store.runsStarted).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('a run left idle stops, freeing its threads', async () => {
    const s = await createBatchServer(plan256, { input: medium }, { spillDir: dir, runIdleMs: 200 });
    try {
      const url = await s.listen(0);
      expect((await rawGet(url, '/v1/batches/3')).status).toBe(200);
      expect(s.store.activeRuns).toBe(1);
      await new Promise((r) => setTimeout(r, 600));
      expect(s.store.activeRuns).toBe(0);
      expect((await rawGet(url, '/v1/batches/40')).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});
