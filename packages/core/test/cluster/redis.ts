/**
 * A real redis-server for the cluster tests: started on a free loopback port in a temporary
 * folder (AOF on, fsync at every write, so that a restart loses nothing acknowledged), stopped and
 * removed afterwards. Without a redis-server the tests skip with the reason; under CI=true that is
 * an error, so CI never passes with them skipped (.ci/run installs it).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { tempDir } from '../helpers.js';

/** Why the tests cannot run here, or null when redis-server is installed. */
export function redisMissing(): string | null {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (r.error === undefined && r.status === 0) return null;
  const why = 'redis-server is not installed (apt-get install redis-server; .ci/run does)';
  if (process.env.CI === 'true') throw new Error(`the cluster tests must run under CI=true: ${why}`);
  return why;
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A redis-server of the test's own. */
export class RedisServer {
  private proc: ChildProcess | null = null;
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<RedisServer> {
    const s = new RedisServer(tempDir('sluice-redis-'), await freePort());
    await s.up();
    return s;
  }

  /** Starts (or restarts) the server on the same port and folder; its AOF brings the data back. */
  async up(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'];
    this.proc = spawn('redis-server', args, { stdio: 'ignore' });
    const r = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => undefined);
    const t0 = Date.now();
    for (;;) {
      try {
        await r.connect();
        if ((await r.ping()) === 'PONG' && (await r.info('persistence')).includes('loading:0')) break;
      } catch {
        /* not up yet */
      }
      r.disconnect();
      if (Date.now() - t0 > 10_000) throw new Error(`redis-server did not start on port ${this.port}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    r.disconnect();
  }

  /** Kills the server with SIGKILL (no shutdown save: only the AOF is left). */
  async kill(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (p === null || p.exitCode !== null) return;
    await new Promise<void>((res) => {
      p.once('exit', () => res());
      p.kill('SIGKILL');
    });
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A client for the test's own checks. */
  client(): Redis {
    const r = new Redis(this.url, { maxRetriesPerRequest: null });
    r.on('error', () => undefined);
    return r;
  }
}
