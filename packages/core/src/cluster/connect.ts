/**
 * Opening a Redis connection for the cluster: ioredis reconnects on its own and keeps commands
 * waiting meanwhile; a first connection that fails is one line naming the URL (password hidden)
 * and why in words (connection refused, wrong password, a TLS error), not ioredis's "Connection is closed"
 * nor Redis's protocol replies.
 */
import { SluiceError } from '@sluice/ops';
import { Redis, type RedisOptions } from 'ioredis';

/** A Redis URL with its password hidden, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, (_, auth: string) => `//${auth.includes(':') ? `${auth.split(':')[0]}:***` : '***'}@`);
}

/**
 * Connects to `url` (redis:// or rediss:// for TLS) and resolves once connected.
 *
 * @example
 * const redis = await connectRedis('rediss://:secret@redis.internal:6380', { maxRetriesPerRequest: null });
 */
export async function connectRedis(url: string, options: RedisOptions = {}): Promise<Redis> {
  let last: Error | null = null;
  const r = new Redis(url, { lazyConnect: true, retryStrategy: (n) => Math.min(50 * n, 500), ...options });
  // ioredis reconnects by itself; the last error is kept for the message below.
  r.on('error', (e: Error) => {
    last = e;
  });
  const db = r.options.db ?? 0;
  if (!Number.isSafeInteger(db) || db < 0) throw new SluiceError(`the database in ${redactUrl(url)} must be a number after the port (redis://host:port/0)`);
  try {
    await r.connect();
  } catch (e) {
    r.disconnect();
    throw new SluiceError(`cannot reach Redis at ${redactUrl(url)}: ${reason((last as Error | null) ?? (e as Error))}`);
  }
  // ioredis only reports a failed SELECT as an 'error' event and goes on in database 0: a job
  // submitted to "/16" of a 16-database server would land in database 0. Ask again, and fail.
  if (db !== 0) {
    try {
      await r.select(db);
    } catch {
      r.disconnect();
      throw new SluiceError(
        `Redis at ${redactUrl(url)} has no database ${db} (the URL's /N picks it; the server's "databases" setting says how many there are, 16 by default: 0 to 15)`,
      );
    }
  }
  return r;
}

/** Why a connection failed, in words: the network's and Redis's own codes (ECONNREFUSED, WRONGPASS, NOAUTH) are not for users to decode. */
function reason(e: Error): string {
  const code = (e as NodeJS.ErrnoException).code;
  const msg = e.message;
  if (code === 'ECONNREFUSED') return 'connection refused (is redis-server running there, on that port?)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'no such host';
  if (code === 'ETIMEDOUT' || code === 'ECONNRESET' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH')
    return `the connection failed (${code.toLowerCase()})`;
  if (msg.startsWith('WRONGPASS') || msg.includes('invalid password')) return 'wrong password (or user name) in the URL';
  if (msg.startsWith('NOAUTH')) return 'the server asks for a password: give it in the URL, redis://:PASSWORD@host:port';
  return msg.split('\n')[0]!;
}
