/**
 * `ConnectionGuard`: keeps idle and slow clients from starving the others. Node's own timeouts
 * close a connection that does not send its request, or sits idle after one; at the connection
 * limit a new client takes the place of the connection idle longest instead of being refused; and
 * a response a client does not read within the send timeout is cut off.
 */
import type { Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Limits on the server's connections; 0 turns each off (docs/serving.md says what each costs).
 *
 * @example
 * createBatchServer(plan, { input }, { maxConnections: 1024, sendTimeoutMs: 0 });
 */
export interface GuardOptions {
  /**
   * Connections at once (default 256). At the limit a new connection closes the one idle longest
   * (connected with no request in progress); when none is idle the new one is closed.
   */
  maxConnections?: number;
  /** A client must send its request's headers within this (default 10 000 ms), else it gets 408 and is closed. */
  headersTimeoutMs?: number;
  /** A keep-alive connection idle this long after a response is closed (default 5 000 ms). */
  keepAliveTimeoutMs?: number;
  /** A response must be written within this once it starts (default 60 000 ms); a slower reader is cut off. */
  sendTimeoutMs?: number;
}

interface Conn {
  /** Requests in progress. */
  active: number;
  /** When it last became idle (connected, or its last response ended). */
  idleSince: number;
}

/** How often Node checks the header timeout (its default, 30 s, let silent clients linger that much longer). */
const CHECK_INTERVAL_MS = 1000;

/**
 * The `http.createServer` options for these limits (Node takes the checking interval only at
 * creation); checks all four limits, so that a bad one fails before anything is started.
 */
export function guardServerOptions(o: GuardOptions): ServerOptions {
  nonNegative('maxConnections', o.maxConnections, 0);
  nonNegative('sendTimeoutMs', o.sendTimeoutMs, 0, MAX_TIMEOUT_MS);
  const headers = nonNegative('headersTimeoutMs', o.headersTimeoutMs, 10_000, MAX_TIMEOUT_MS);
  return {
    connectionsCheckingInterval: CHECK_INTERVAL_MS,
    headersTimeout: headers,
    // A GET has no body: the request is whole with its headers. Node wants this at least headersTimeout; 0 turns both off.
    requestTimeout: headers === 0 ? 0 : headers * 2,
    keepAliveTimeout: nonNegative('keepAliveTimeoutMs', o.keepAliveTimeoutMs, 5_000, MAX_TIMEOUT_MS),
  };
}

/**
 * Watches a server's connections: evicts the longest-idle one at the limit, and cuts off responses
 * not written within the send timeout (`sending(res)` starts the clock). Counts what it did.
 *
 * @example
 * const server = createServer(guardServerOptions(o), handler);
 * const guard = new ConnectionGuard(server, o);
 * guard.sending(res); res.end(body);
 */
export class ConnectionGuard {
  private readonly conns = new Map<Socket, Conn>();
  private readonly max: number;
  private readonly sendMs: number;
  /** Idle connections closed to make room for new ones. */
  evicted = 0;
  /** New connections closed because every connection was busy. */
  refused = 0;
  /** Responses cut off at the send timeout. */
  sendTimeouts = 0;

  constructor(server: Server, o: GuardOptions) {
    this.max = nonNegative('maxConnections', o.maxConnections, 256);
    this.sendMs = nonNegative('sendTimeoutMs', o.sendTimeoutMs, 60_000, MAX_TIMEOUT_MS);
    server.on('connection', (socket: Socket) => {
      this.conns.set(socket, { active: 0, idleSince: performance.now() });
      socket.once('close', () => this.conns.delete(socket));
      if (this.max > 0 && this.conns.size > this.max) this.makeRoom(socket);
    });
    server.on('request', (req: { socket: Socket }, res: ServerResponse) => {
      const c = this.conns.get(req.socket);
      if (c === undefined) return;
      c.active++;
      res.once('close', () => {
        c.active--;
        c.idleSince = performance.now();
      });
    });
  }

  /** Connections open now. */
  get connections(): number {
    return this.conns.size;
  }

  /** The response's body starts now: cut it off if it is not written within the send timeout. */
  sending(res: ServerResponse): void {
    if (this.sendMs === 0) return;
    const t = setTimeout(() => {
      this.sendTimeouts++;
      res.destroy();
    }, this.sendMs);
    t.unref();
    res.once('close', () => clearTimeout(t));
  }

  /** Over the limit because `fresh` connected: close the connection idle longest, else `fresh`. */
  private makeRoom(fresh: Socket): void {
    let victim: Socket | null = null;
    let since = Infinity;
    for (const [s, c] of this.conns) {
      if (s === fresh || c.active > 0 || c.idleSince >= since) continue;
      victim = s;
      since = c.idleSince;
    }
    if (victim !== null) {
      this.evicted++;
      this.conns.delete(victim);
      victim.destroy();
    } else {
      this.refused++;
      this.conns.delete(fresh);
      fresh.destroy();
    }
  }
}

/** The longest time a Node timer takes (about 24.8 days): past it setTimeout fires after 1 ms, which would cut off every response. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

function nonNegative(name: string, v: number | undefined, dflt: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative integer (0 turns it off), got ${v}`);
  if (v > max) throw new RangeError(`${name} must be at most ${max} (about 24.8 days; 0 turns it off), got ${v}`);
  return v;
}
