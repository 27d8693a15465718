/**
 * A `sluice worker` that cannot start (no such job, files other than the job's, a port in use)
 * says so in one line and exits 1, as docs/cli.md says of bad input. It used to print the line and
 * then hang, its two Redis connections still open, ignoring the first SIGTERM too.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { dataset, plan, submit } from './cluster.js';
import { RedisServer, redisMissing } from './redis.js';

const missing = redisMissing();
const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));

/** Runs `sluice worker …`, killed after `ms`: the exit status (null when it had to be killed) and stderr. */
function worker(args: readonly string[], ms = 15_000): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [SLUICE, 'worker', ...args], { encoding: 'utf8' }, (err, _stdout, stderr) => {
      clearTimeout(timer);
      const code = err === null ? 0 : (err as { code?: unknown }).code;
      resolve({ status: typeof code === 'number' ? code : null, stderr });
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  });
}

describe.skipIf(missing !== null)(`cluster: a worker that cannot start${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let server: RedisServer;
  let busy: Server;
  const dir = tempDir('sluice-worker-start-');

  beforeAll(async () => {
    server = await RedisServer.start();
    busy = createServer();
    await new Promise<void>((res) => busy.listen(0, '127.0.0.1', res));
    const r = server.client();
    await submit(r, 'busy', plan(), await dataset(dir));
    r.disconnect();
  }, 60_000);

  afterAll(async () => {
    busy?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 1 with one line for a job that is not there', async () => {
    const r = await worker(['--redis', server.url, '--job', 'nope']);
    expect(r.stderr.trim()).toBe('sluice worker: no job named nope in this Redis (submit it first: sluice job submit nope …)');
    expect(r.status).toBe(1);
  }, 30_000);

  it('exits 1 with one line for a port in use', async () => {
    const port = (busy.address() as { port: number }).port;
    const r = await worker(['--redis', server.url, '--job', 'busy', '--port', String(port)]);
    expect(r.stderr.trim()).toBe(`sluice worker: cannot listen on 127.0.0.1:${port}: the port is in use`);
    expect(r.status).toBe(1);
  }, 30_000);
});
