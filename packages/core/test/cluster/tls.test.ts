/**
 * Redis over TLS: a redis-server with only a TLS port and a self-signed certificate; `sluice job`
 * and `sluice worker` reach it with a rediss:// URL (trusting the certificate through
 * NODE_EXTRA_CA_CERTS), and without that trust the failure is one line about the certificate.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSluice, tempDir } from '../helpers.js';
import { checkExactlyOnce, dataset, oracle, plan, startWorker, train, until, type WorkerProc } from './cluster.js';
import { freePort, redisMissing } from './redis.js';

const missing = redisMissing() ?? (spawnSync('openssl', ['version']).status === 0 ? null : 'openssl is not installed (needed to make a certificate)');

describe.skipIf(missing !== null)(`cluster: Redis over TLS${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let dir: string;
  let redis: ChildProcess;
  let url: string;
  let ca: string;
  let worker: WorkerProc | null = null;

  beforeAll(async () => {
    dir = tempDir();
    ca = join(dir, 'redis.crt');
    const key = join(dir, 'redis.key');
    const cert = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        ca,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { encoding: 'utf8' },
    );
    if (cert.status !== 0) throw new Error(cert.stderr);
    const port = await freePort();
    redis = spawn(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--tls-cert-file',
        ca,
        '--tls-key-file',
        key,
        '--tls-ca-cert-file',
        ca,
        '--tls-auth-clients',
        'no',
      ],
      { stdio: 'ignore' },
    );
    url = `rediss://127.0.0.1:${port}`;
    await until(
      'redis-server with TLS to listen',
      () => spawnSync('redis-cli', ['--tls', '--cacert', ca, '-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG',
      10_000,
    );
  }, 60_000);

  afterAll(async () => {
    await worker?.kill('SIGKILL');
    redis?.kill('SIGKILL');
  });

  it('submit, status and a worker over rediss://; an untrusted certificate is one line', async () => {
    const input = await dataset(dir);
    const planPath = join(dir, 'plan.json');
    writeFileSync(planPath, JSON.stringify(plan()));
    const env = { NODE_EXTRA_CA_CERTS: ca };
    const untrusted = await runSluice(['job', 'status', 'tls', '--redis', url], { NODE_EXTRA_CA_CERTS: '' });
    expect(untrusted.status).toBe(1);
    expect(untrusted.stderr).toMatch(/^sluice job: cannot reach Redis at rediss:\/\/127\.0\.0\.1:\d+: .*self[- ]signed certificate\n$/);
    const submitted = await runSluice(['job', 'submit', 'tls', '--redis', url, '--plan', planPath, '--input', input], env);
    expect(submitted.stderr).toMatch(/^submitted: job tls/);
    process.env.NODE_EXTRA_CA_CERTS = ca; // the worker process inherits it
    try {
      worker = await startWorker(url, 'tls');
    } finally {
      delete process.env.NODE_EXTRA_CA_CERTS;
    }
    checkExactlyOnce(await oracle(plan(), input), await train(worker.url, 0, 1));
    const status = JSON.parse((await runSluice(['job', 'status', 'tls', '--redis', url, '--json'], env)).stdout);
    expect(status.splits.done).toBe(status.splits.total);
  }, 120_000);
});
