import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Endpoint, type Frame, type Wire, type WireSink } from './engine.js';
import { FrameParser, encodeFrame } from './frames.js';
import { PeerLostError, TransportError } from './types.js';

/** Bytes a connecting end reads at a time, into one buffer it keeps (see `Reads`). */
const READ_BUFFER_BYTES = 1 << 20;

/**
 * A socket's reads into one reused buffer (net's `onread`), for the end that connects: by default
 * each read is a fresh 64 KiB Buffer, and at 4 MB batches their allocation and collection slow a
 * long-running receiving thread down (bench/README.md, transport.ts, "Settling"). The frame
 * parser copies what it needs before the next read. A socket accepted by a server has no
 * `onread`, so the listening end reads Node's chunks as before.
 */
class Reads {
  readonly buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private deliver: ((chunk: Uint8Array) => void) | null = null;
  /** Reads that came before the wire started (copies: the buffer is read into again). */
  private readonly early: Buffer[] = [];

  read(n: number): boolean {
    const chunk = this.buffer.subarray(0, n);
    if (this.deliver !== null) this.deliver(chunk);
    else this.early.push(Buffer.from(chunk));
    return true;
  }

  to(deliver: (chunk: Uint8Array) => void): void {
    this.deliver = deliver;
    for (const c of this.early.splice(0)) deliver(c);
  }
}

class TcpWire implements Wire {
  private gone = false;

  constructor(
    private readonly socket: Socket,
    private readonly reads?: Reads,
  ) {
    socket.setNoDelay(true);
    // A peer whose machine or network vanished sends no FIN: keep-alive probes find it out.
    socket.setKeepAlive(true, 10_000);
  }

  start(sink: WireSink): void {
    const parser = new FrameParser(sink);
    if (this.reads !== undefined) this.reads.to((chunk) => parser.push(chunk));
    else this.socket.on('data', (chunk: Buffer) => parser.push(chunk));
    const lost = (e?: Error): void => {
      if (this.gone) return;
      this.gone = true;
      sink.lost(new PeerLostError(`the peer went away${e ? ` (${e.message})` : ''}`, {}, { cause: e }));
    };
    this.socket.on('error', lost);
    this.socket.on('close', () => lost());
  }

  send(f: Frame): void {
    if (this.gone || this.socket.destroyed) return;
    const parts = encodeFrame(f);
    this.socket.cork();
    for (const p of parts) this.socket.write(p);
    this.socket.uncork();
  }

  close(): void {
    this.gone = true;
    this.socket.end();
  }

  abort(): void {
    this.gone = true;
    this.socket.destroy();
  }
}

/**
 * A queue pair over an already connected socket.
 *
 * @example
 * net.createServer((socket) => serveOn(tcpQueuePair(socket))).listen(7000);
 */
export function tcpQueuePair(socket: Socket): Endpoint {
  return new Endpoint(new TcpWire(socket));
}

/** A TCP listener whose connections become queue pairs. */
export interface TcpListener {
  readonly port: number;
  readonly host: string;
  /** The next incoming connection. */
  accept(signal?: AbortSignal): Promise<Endpoint>;
  close(): Promise<void>;
}

/**
 * Listens for queue-pair connections (127.0.0.1 unless `host` says otherwise; port 0 picks one).
 *
 * @example
 * const l = await listenTcp({ port: 0 });
 * const qp = await l.accept();
 */
export async function listenTcp(options: { port?: number; host?: string } = {}): Promise<TcpListener> {
  const host = options.host ?? '127.0.0.1';
  const ready: Endpoint[] = [];
  const waiters: Array<(e: Endpoint) => void> = [];
  const server: Server = createServer((socket) => {
    const qp = tcpQueuePair(socket);
    const w = waiters.shift();
    if (w) w(qp);
    else ready.push(qp);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new TransportError(`cannot listen on ${host}:${options.port ?? 0}: ${e.message}`, {}, { cause: e })));
    server.listen(options.port ?? 0, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    host,
    accept(signal?: AbortSignal): Promise<Endpoint> {
      const qp = ready.shift();
      if (qp) return Promise.resolve(qp);
      return new Promise((resolve, reject) => {
        waiters.push(resolve);
        signal?.addEventListener(
          'abort',
          () => {
            waiters.splice(waiters.indexOf(resolve), 1);
            reject(signal.reason);
          },
          { once: true },
        );
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface ConnectOptions {
  host?: string;
  port: number;
  /** Attempts after the first failure (default 20). */
  retries?: number;
  /** First wait between attempts, doubled each time up to 2 s (default 50 ms). */
  retryDelayMs?: number;
  signal?: AbortSignal;
}

/**
 * Connects to a `listenTcp` peer, retrying while it is not up yet (refused, reset, unreachable),
 * with exponential back-off. A connection that later drops flushes the queue pair like any lost
 * peer; connect again and resume from the last batch received.
 *
 * @example
 * const qp = await connectTcp({ host: 'loader', port: 7000 });
 */
export async function connectTcp(options: ConnectOptions): Promise<Endpoint> {
  const host = options.host ?? '127.0.0.1';
  const retries = options.retries ?? 20;
  let delay = options.retryDelayMs ?? 50;
  for (let attempt = 0; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      const reads = new Reads();
      const socket = await new Promise<Socket>((resolve, reject) => {
        const s = connect({ host, port: options.port, onread: { buffer: reads.buffer, callback: (n: number) => reads.read(n) } });
        s.once('connect', () => {
          s.removeListener('error', reject);
          resolve(s);
        });
        s.once('error', reject);
      });
      return new Endpoint(new TcpWire(socket, reads));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const transient = code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'ETIMEDOUT';
      if (!transient || attempt >= retries) throw new TransportError(`cannot connect to ${host}:${options.port}: ${(e as Error).message}`, {}, { cause: e });
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    }
  }
}
