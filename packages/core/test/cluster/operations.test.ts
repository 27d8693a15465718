/**
 * Operations: `sluice job submit` (idempotent; another job under the name refused),
 * `sluice job status` (table and --json, the same object as GET /v1/cluster), the bearer token on
 * every /v1 path of a worker (redirects included), Prometheus metrics, and a Redis with a password.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runSluice } from '../helpers.js';
import { checkExactlyOnce, oracle, plan, startWorker } from './cluster.js';
import { freePort, redisMissing } from './redis.js';
import { clusterSuite } from './suite.js';
import { createClient } from '@sluice/client';

const missing = redisMissing();
const TOKEN = 's3cret-token';
const PASSWORD = 'pw-4-redis';
const PYTHON_CLIENT = fileURLToPath(new URL('../../../../clients/python', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const pythonMissing =
  spawnSync('/usr/bin/python3', ['-c', 'import numpy, msgpack'], { encoding: 'utf8' }).status === 0 ? null : '/usr/bin/python3 lacks numpy or msgpack';

describe.skipIf(missing !== null)(`cluster: operations${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let planPath: string;
  let url: string;
  const env = clusterSuite({ oracle: false });

  beforeAll(async () => {
    // From here on the server asks for a password: every URL below carries it.
    await env.redis.config('SET', 'requirepass', PASSWORD);
    await env.redis.auth(PASSWORD);
    url = `redis://:${PASSWORD}@127.0.0.1:${env.server.port}`;
    planPath = join(env.dir, 'plan.json');
    writeFileSync(planPath, JSON.stringify(plan()));
  });

  it('job submit is idempotent, refuses another job under a used name, and a wrong password is one line', async () => {
    const args = ['job', 'submit', 'ops', '--redis', url, '--plan', planPath, '--input', env.input, '--split-batches', '4'];
    const first = await runSluice(args);
    expect(first.status).toBe(0);
    expect(first.stderr).toMatch(/^submitted: job ops: 48 batches in 12 splits over 1 file\n$/);
    const again = await runSluice(args);
    expect(again.status).toBe(0);
    expect(again.stderr).toMatch(/^already submitted \(unchanged\): job ops/);
    const other = await runSluice([...args.slice(0, -1), '2']);
    expect(other.status).toBe(1);
    expect(other.stderr).toBe('sluice job: job ops exists with another plan, input or split size: choose another name (or delete its keys sluice:{ops}:*)\n');
    const wrong = await runSluice(['job', 'status', 'ops', '--redis', `redis://:nope@127.0.0.1:${env.server.port}`]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr.split('\n')).toHaveLength(2);
    expect(wrong.stderr).toBe(`sluice job: cannot reach Redis at redis://:***@127.0.0.1:${env.server.port}: wrong password (or user name) in the URL\n`);
  }, 60_000);

  it('Redis URLs that cannot work are one line in words: no password, nothing listening, a database the server lacks or that is no number', async () => {
    const port = env.server.port;
    const noPassword = await runSluice(['job', 'status', 'ops', '--redis', `redis://127.0.0.1:${port}`]);
    expect(noPassword.status).toBe(1);
    expect(noPassword.stderr).toBe(
      `sluice job: cannot reach Redis at redis://127.0.0.1:${port}: the server asks for a password: give it in the URL, redis://:PASSWORD@host:port\n`,
    );
    const closed = await freePort();
    const refused = await runSluice(['job', 'status', 'ops', '--redis', `redis://127.0.0.1:${closed}`]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      `sluice job: cannot reach Redis at redis://127.0.0.1:${closed}: connection refused (is redis-server running there, on that port?)\n`,
    );
    // Database 16 of a 16-database server: ioredis would go on in database 0, where job "ops" is.
    const noDb = await runSluice(['job', 'status', 'ops', '--redis', `${url}/16`]);
    expect(noDb.status).toBe(1);
    expect(noDb.stdout).toBe('');
    expect(noDb.stderr).toMatch(/^sluice job: Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/16 has no database 16 \(.*\)\n$/);
    // Database "abc": ioredis sent SELECT NaN and died of the reply, a stack trace.
    const notNumber = await runSluice(['job', 'status', 'ops', '--redis', `${url}/abc`]);
    expect(notNumber.status).toBe(2);
    expect(notNumber.stderr).toBe(
      `sluice job: --redis: the database after the port must be a number (redis://host:port/0), got "/abc" in "redis://***@127.0.0.1:${port}/abc"\n(see sluice job --help)\n`,
    );
    expect((await runSluice(['job', 'status', 'ops', '--redis', `${url}/0`])).status).toBe(0);
  }, 60_000);

  it("a worker that cannot start exits 1 with one line (no such job, the port in use), and a timer beyond Node's is a usage error", async () => {
    // Each used to print its line and then hang with two Redis connections open, deaf to SIGTERM.
    const run = (args: string[]): Promise<{ status: number | null; signal: string | null; stderr: string }> =>
      new Promise((resolve) => {
        const p = spawn(process.execPath, [BIN, 'worker', '--redis', url, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        const t = setTimeout(() => p.kill('SIGKILL'), 20_000);
        p.once('exit', (status, signal) => {
          clearTimeout(t);
          resolve({ status, signal, stderr });
        });
      });
    const noJob = await run(['--job', 'nosuch']);
    expect(noJob).toEqual({
      status: 1,
      signal: null,
      stderr: 'sluice worker: no job named nosuch in this Redis (submit it first: sluice job submit nosuch …)\n',
    });
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    try {
      const inUse = await run(['--job', 'ops', '--port', String(port)]);
      expect(inUse).toEqual({ status: 1, signal: null, stderr: `sluice worker: cannot listen on 127.0.0.1:${port}: the port is in use\n` });
    } finally {
      await new Promise((r) => taken.close(r));
    }
    // 2^31 ms and more: Node's timers fire after 1 ms instead.
    const long = await run(['--job', 'ops', '--wait-ms', '3000000000']);
    expect(long.status).toBe(2);
    expect(long.stderr).toMatch(/^sluice worker: --wait-ms must be at most 2147483647, got "3000000000"\n/);
  }, 90_000);

  it('workers behind a token: 401 without it, batches with it (redirects too); /v1/cluster, job status and metrics agree', async () => {
    // Each holds few batches, so that both make splits and a trainer of one is redirected to the other.
    const a = await startWorker(url, 'ops', ['--token', TOKEN, '--max-held', '8']);
    const b = await startWorker(url, 'ops', ['--token', TOKEN, '--max-held', '8']);
    env.track(a, b);
    for (const path of ['/v1/batches/0', '/v1/info', '/v1/cluster', '/metrics']) expect((await fetch(`${a.url}${path}`)).status, path).toBe(401);
    expect((await fetch(`${a.url}/healthz`)).status).toBe(200);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const info = await (await fetch(`${a.url}/v1/info`, { headers: auth })).json();
    expect(info).toMatchObject({ job: 'ops', batches: 48, batchSize: 500 });
    // One trainer through worker A: about half the batches are B's, reached by redirect with the token.
    const c = createClient(a.url, { token: TOKEN });
    const got: Array<[number, string]> = [];
    const { digest } = await import('./cluster.js');
    for await (const x of c.batches()) {
      got.push([x.seq, digest(x)]);
      x.release?.();
    }
    await c.close();
    checkExactlyOnce(await oracle(plan(), env.input), got);
    // Each started without a false alarm: the first heartbeat used to go out before its connection was up.
    for (const w of [a, b]) expect(w.stderr()).not.toMatch(/heartbeat/);
    const metrics = await (await fetch(`${a.url}/metrics`, { headers: auth })).text();
    for (const name of [
      'sluice_cluster_leases_total',
      'sluice_cluster_reclaims_total',
      'sluice_cluster_held_batches',
      'sluice_batches_made_total',
      'sluice_batches_served_total',
      'sluice_bytes_served_total',
      'sluice_cluster_redirects_total',
      'sluice_request_duration_seconds_count',
    ])
      expect(metrics, name).toMatch(new RegExp(`^${name}(\\{[^}]*\\})? \\d`, 'm'));
    expect(Number(/^sluice_cluster_redirects_total (\d+)/m.exec(metrics)![1])).toBeGreaterThan(0);
    // The live dashboard, as on sluice serve, with the cluster panel's source named.
    expect((await fetch(`${a.url}/dashboard`)).status).toBe(401);
    const page = await fetch(`${a.url}/dashboard?token=${TOKEN}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const snap = await (await fetch(`${a.url}/v1/metrics.json`, { headers: auth })).json();
    expect(snap.cluster).toBe('/v1/cluster');
    expect(snap.counters['batches made']).toBeGreaterThan(0);
    expect(snap.pipeline.rows).toBeGreaterThan(0);
    // The status, three ways: the same object.
    const viaHttp = await (await fetch(`${b.url}/v1/cluster`, { headers: auth })).json();
    const viaCli = await runSluice(['job', 'status', 'ops', '--redis', url, '--json']);
    expect(viaCli.status).toBe(0);
    const cli = JSON.parse(viaCli.stdout);
    for (const s of [viaHttp, cli]) {
      expect(Object.keys(s).sort()).toEqual(['epoch', 'job', 'reclaims', 'slowestSplit', 'splits', 'workers']);
      expect(s.job).toBe('ops');
      expect(s.epoch).toBe(1);
      expect(s.splits).toEqual({ total: 12, done: 12, leased: 0, pending: 0, dead: 0 });
      expect(s.slowestSplit).toMatchObject({ id: expect.stringMatching(/^\d+$/), seconds: expect.any(Number) });
      expect(s.workers.map((w: { id: string }) => w.id).sort()).toEqual([a.id, b.id].sort());
      for (const w of s.workers) {
        expect(Object.keys(w).sort()).toEqual(['batchesMade', 'batchesServed', 'id', 'lastSeenMs', 'rowsPerSec', 'state', 'url']);
        expect(w.state).toBe('active');
      }
    }
    const table = await runSluice(['job', 'status', 'ops', '--redis', url]);
    expect(table.stdout).toMatch(/^job ops, epoch 1: splits 12\/12 done, 0 leased, 0 pending, 0 dead; \d+ reclaimed\n/);
    expect(table.stdout).toMatch(/\nworker +url +state +last seen +made +served +rows\/s\n/);
    expect(table.stdout).toContain(a.url);
    // The Python client, unchanged, with the token: all 48 batches again from B (delivered before, so B makes them again).
    if (pythonMissing === null) {
      const py = spawnSync(
        '/usr/bin/python3',
        ['-c', `from sluice.client import Client\nc = Client(['${b.url}'], token='${TOKEN}')\nprint(c.job, [b.seq for b in c.batches()] == list(range(48)))`],
        { encoding: 'utf8', env: { ...process.env, PYTHONPATH: PYTHON_CLIENT } },
      );
      expect(py.stderr).toBe('');
      expect(py.stdout).toBe('ops True\n');
    } else console.warn(`python client part skipped: ${pythonMissing}`);
    // A stopped worker shows as dead.
    await a.kill('SIGTERM');
    const after = JSON.parse((await runSluice(['job', 'status', 'ops', '--redis', url, '--json'])).stdout);
    expect(after.workers.find((w: { id: string }) => w.id === a.id).state).toBe('dead');
  }, 120_000);
});
