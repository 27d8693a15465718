/**
 * Opening a Redis connection for the cluster: ioredis reconnects on its own and keeps commands
 * waiting meanwhile; a first connection that fails is one line naming the URL (password hidden)
 * and Redis's own reason (WRONGPASS, ECONNREFUSED, a TLS error), not ioredis's "Connection is closed".
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
  try {
    await r.connect();
  } catch (e) {
    r.disconnect();
    const why = (last as Error | null)?.message ?? (e as Error).message;
    throw new SluiceError(`cannot reach Redis at ${redactUrl(url)}: ${why}`);
  }
  return r;
}
