/**
 * A real S3-compatible store for tests: OpenStack Swift from Debian (proxy, object, container and
 * account servers, memcached) with its s3api and tempauth middleware, configured in a temporary
 * folder, listening on loopback ports, with a one-replica ring on 127.0.0.1. It checks SigV4
 * signatures for real: a wrong secret gets 403 SignatureDoesNotMatch.
 *
 * `startSwift()` returns the running store, or the reason it cannot start (packages missing, not
 * root, a server that does not come up). Under CI=true a store that cannot start is an error, so CI
 * never passes with these tests skipped (.ci/run installs the packages).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { AwsClient } from 'aws4fetch';
import { tempDir } from '../helpers.js';

/** The tempauth user: its S3 access key id is `account:user`, its secret the password. */
export const SWIFT_KEY_ID = 'test:tester';
export const SWIFT_SECRET = 'testing';

/** A running Swift with s3api. */
export interface Swift {
  /** `http://127.0.0.1:PORT`: the proxy, where S3 requests go. */
  readonly endpoint: string;
  /** Environment that points Sluice at this store (credentials, endpoint, region). */
  readonly env: Record<string, string>;
  /** Creates a bucket (no error when it exists). */
  createBucket(bucket: string): Promise<void>;
  /** Stores an object. */
  put(bucket: string, key: string, body: Uint8Array): Promise<void>;
  /** Stops every server and removes the folder. */
  stop(): Promise<void>;
}

const BINARIES = ['swift-proxy-server', 'swift-object-server', 'swift-container-server', 'swift-account-server', 'swift-ring-builder', 'memcached'];
const BIN_DIRS = ['/usr/bin', '/usr/sbin', '/usr/local/bin'];

const which = (name: string): string | null => {
  for (const d of BIN_DIRS) {
    try {
      accessSync(join(d, name), constants.X_OK);
      return join(d, name);
    } catch {
      /* next */
    }
  }
  return null;
};

/** A free loopback TCP port (closed again at once; the servers bind it moments later). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

function serverConf(dir: string, kind: string, port: number, user: string): string {
  return `[DEFAULT]
swift_dir = ${dir}/etc
devices = ${dir}/srv
mount_check = false
bind_ip = 127.0.0.1
bind_port = ${port}
workers = 0
user = ${user}
log_level = WARNING

[pipeline:main]
pipeline = ${kind}-server

[app:${kind}-server]
use = egg:swift#${kind}

[${kind}-replicator]
[${kind}-auditor]
[${kind}-updater]
`;
}

function proxyConf(dir: string, port: number, memcachePort: number, user: string): string {
  // s3api before tempauth (it turns the SigV4 request into one tempauth checks); slo is required
  // by s3api (multipart uploads).
  return `[DEFAULT]
swift_dir = ${dir}/etc
bind_ip = 127.0.0.1
bind_port = ${port}
workers = 0
user = ${user}
log_level = WARNING

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:${memcachePort}
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:s3api]
use = egg:swift#s3api
location = us-east-1
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = ${SWIFT_SECRET} .admin
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
`;
}

/** Why Swift cannot run here, or null. */
function missing(): string | null {
  const absent = BINARIES.filter((b) => which(b) === null);
  if (absent.length > 0)
    return `OpenStack Swift is not installed (no ${absent.join(', ')}; apt install swift-proxy swift-object swift-container swift-account memcached)`;
  if (!existsSync('/etc/swift/swift.conf')) return 'OpenStack Swift has no /etc/swift/swift.conf (its hash settings; install the swift package)';
  if (process.getuid?.() !== 0) return 'the Swift servers switch to the swift user, which needs root';
  return null;
}

/**
 * Starts Swift with s3api on loopback, or returns why it cannot (a string). Under CI=true, throws
 * instead of returning a reason.
 *
 * @example
 * const swift = await startSwift();
 * if (typeof swift === 'string') it.skip(swift); else await swift.put('data', 'a.parquet', bytes);
 */
export async function startSwift(): Promise<Swift | string> {
  const why = missing();
  const fail = (reason: string): string => {
    if (process.env.CI === 'true') throw new Error(`Swift (the S3 test store) must start under CI=true: ${reason}`);
    return reason;
  };
  if (why !== null) return fail(why);

  const dir = tempDir('sluice-swift-');
  const procs: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGTERM');
            setTimeout(() => p.kill('SIGKILL'), 5000).unref();
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const d of ['etc', 'srv/sdb1', 'log']) mkdirSync(join(dir, d), { recursive: true });
    const [proxy, account, container, object, memcache] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
    const ports: Record<string, number> = { account, container, object };
    for (const [kind, port] of Object.entries(ports)) {
      const builder = join(dir, 'etc', `${kind}.builder`);
      execFileSync(which('swift-ring-builder')!, [builder, 'create', '6', '1', '1'], { stdio: 'ignore' });
      execFileSync(which('swift-ring-builder')!, [builder, 'add', `r1z1-127.0.0.1:${port}/sdb1`, '100'], { stdio: 'ignore' });
      // rebalance exits 1 with a warning on a one-device ring, and still writes it.
      try {
        execFileSync(which('swift-ring-builder')!, [builder, 'rebalance'], { stdio: 'ignore' });
      } catch {
        /* checked below */
      }
      if (!existsSync(join(dir, 'etc', `${kind}.ring.gz`))) throw new Error(`swift-ring-builder wrote no ${kind} ring`);
      writeFileSync(join(dir, 'etc', `${kind}-server.conf`), serverConf(dir, kind, port, 'swift'));
    }
    writeFileSync(join(dir, 'etc', 'proxy-server.conf'), proxyConf(dir, proxy, memcache, 'swift'));
    // The servers run as the swift user: their data must be its.
    execFileSync('chown', ['-R', 'swift:swift', join(dir, 'srv')]);

    const start = (cmd: string, args: string[], log: string): void => {
      const out = openSync(join(dir, 'log', log), 'a');
      const p = spawn(which(cmd)!, args, { stdio: ['ignore', out, out] });
      procs.push(p);
    };
    start('memcached', ['-u', 'swift', '-l', '127.0.0.1', '-p', String(memcache), '-U', '0'], 'memcached.log');
    for (const kind of ['account', 'container', 'object', 'proxy']) start(`swift-${kind}-server`, [join(dir, 'etc', `${kind}-server.conf`)], `${kind}.log`);

    const endpoint = `http://127.0.0.1:${proxy}`;
    const aws = new AwsClient({ accessKeyId: SWIFT_KEY_ID, secretAccessKey: SWIFT_SECRET, service: 's3', region: 'us-east-1', retries: 0 });
    const send = async (method: string, path: string, body?: Uint8Array): Promise<Response> =>
      aws.fetch(`${endpoint}${path}`, body !== undefined ? { method, body: body as Uint8Array<ArrayBuffer> } : { method });
    // Up when the proxy answers and a bucket can be made (the account and container servers too).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const dead = procs.find((p) => p.exitCode !== null);
      if (dead !== undefined) throw new Error(`${dead.spawnfile} exited with ${dead.exitCode}`);
      const r = await send('PUT', '/sluice-probe').catch(() => null);
      if (r !== null) await r.text();
      if (r !== null && r.ok) break;
      if (Date.now() > deadline) throw new Error(`the proxy did not accept a bucket within 60 s (last answer: ${r === null ? 'no connection' : r.status})`);
      await new Promise((res) => setTimeout(res, 250));
    }
    return {
      endpoint,
      env: { AWS_ACCESS_KEY_ID: SWIFT_KEY_ID, AWS_SECRET_ACCESS_KEY: SWIFT_SECRET, AWS_ENDPOINT_URL: endpoint, AWS_REGION: 'us-east-1' },
      async createBucket(bucket) {
        const r = await send('PUT', `/${bucket}`);
        const text = await r.text();
        if (!r.ok && r.status !== 409) throw new Error(`creating bucket ${bucket}: ${r.status} ${text}`);
      },
      async put(bucket, key, body) {
        const r = await send('PUT', `/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`, body);
        const text = await r.text();
        if (!r.ok) throw new Error(`putting ${bucket}/${key}: ${r.status} ${text}`);
      },
      stop,
    };
  } catch (e) {
    const logs = ['proxy', 'account', 'container', 'object', 'memcached']
      .map((l) => {
        try {
          return readFileSync(join(dir, 'log', `${l}.log`), 'utf8')
            .trim()
            .split('\n')
            .slice(-3)
            .join(' | ');
        } catch {
          return '';
        }
      })
      .filter((l) => l !== '')
      .join(' / ');
    await stop();
    return fail(`Swift did not start: ${e instanceof Error ? e.message : String(e)}${logs ? ` (logs: ${logs.slice(0, 400)})` : ''}`);
  }
}
