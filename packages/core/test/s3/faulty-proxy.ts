/**
 * A loopback HTTP proxy in front of a real store that breaks chosen requests on purpose: it
 * answers some ranged GETs with 503 SlowDown, and cuts others off half way through the body (the
 * headers promise the whole range, then the socket closes). Everything else, headers included
 * (the SigV4 signature covers Host), passes through unchanged, so the store still checks every
 * signature.
 */
import { request, createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What to break: the first `fail503` ranged GETs of more than `minBytes`, then the next `cut`. */
export interface Faults {
  readonly fail503: number;
  readonly cut: number;
  /** Only ranges longer than this are broken (default 1000: column chunks, not 4-byte probes). */
  readonly minBytes?: number;
}

/** A running proxy and what it did. */
export interface FaultyProxy {
  readonly endpoint: string;
  /** Requests seen, and those broken. */
  readonly seen: { requests: number; failed503: number; cut: number };
  close(): Promise<void>;
}

const rangeLength = (h: string | undefined): number => {
  const m = h === undefined ? null : /^bytes=(\d+)-(\d+)$/.exec(h);
  return m === null ? -1 : Number(m[2]) - Number(m[1]) + 1;
};

/**
 * Starts a proxy to `target` (`http://127.0.0.1:PORT`) that breaks requests as `faults` says.
 *
 * @example
 * const p = await faultyProxy(swift.endpoint, { fail503: 1, cut: 1 });
 * // point AWS_ENDPOINT_URL at p.endpoint
 */
export async function faultyProxy(target: string, faults: Faults): Promise<FaultyProxy> {
  const to = new URL(target);
  const seen = { requests: 0, failed503: 0, cut: 0 };
  const min = faults.minBytes ?? 1000;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.requests++;
    const big = req.method === 'GET' && rangeLength(req.headers.range) > min;
    if (big && seen.failed503 < faults.fail503) {
      seen.failed503++;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' });
      res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
      return;
    }
    const cut = big && seen.failed503 >= faults.fail503 && seen.cut < faults.cut;
    if (cut) seen.cut++;
    const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      if (!cut) {
        r.pipe(res);
        return;
      }
      const total = Number(r.headers['content-length'] ?? 0);
      let sent = 0;
      r.on('data', (chunk: Buffer) => {
        if (sent >= total / 2) return;
        const part = chunk.subarray(0, Math.max(0, Math.floor(total / 2) - sent));
        sent += part.length;
        res.write(part);
        if (sent >= total / 2) {
          r.destroy();
          // Half the promised body, then the connection goes: the client sees a cut stream.
          res.socket?.destroy();
        }
      });
    });
    up.on('error', () => res.socket?.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
