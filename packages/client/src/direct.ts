/**
 * The client's own read path for batch bodies over plain HTTP: keep-alive sockets that read each
 * response body straight into one buffer (`DirectPool`), and the buffers released batches give
 * back for reuse (`BodyPool`). Responses it does not take (chunked, no content-length) go
 * through undici instead.
 */
import { connect, type Socket } from 'node:net';

/** A response as the client uses it: the status and the whole body in one buffer of its own. */
export interface Got {
  status: number;
  body: Uint8Array;
  /** The Location header of a redirect. */
  location?: string;
}

/** The response is not one this reader takes (no content-length, chunked, 1xx): ask through undici instead. */
export class Unsupported extends Error {}

const MAX_HEAD = 64 << 10;
/**
 * The largest response body the client accepts (2 GiB): a content-length beyond it fails the
 * request with a clear error instead of an allocation that throws inside a socket callback.
 */
export const MAX_BODY_BYTES = 2 ** 31;
export const tooLarge = (length: number): Error => new Error(`the response body is ${length} bytes, over the client's limit of ${MAX_BODY_BYTES} bytes`);
const CRLF2 = Buffer.from('\r\n\r\n');

const socketError = (message: string): Error => Object.assign(new Error(message), { code: 'UND_ERR_SOCKET' });

/**
 * Memory for response bodies, with the buffers of released batches to reuse (`ClientBatch.release`).
 * A body is a fresh 4 MB buffer per RM1 batch otherwise, and in a thread that fetches for long
 * those stop dying young: only full GCs free them, and a long-running client thread slows down
 * (bench/README.md, transport.ts, "Settling"). Keeps at most `max` free buffers.
 */
export class BodyPool {
  private readonly free: ArrayBuffer[] = [];
  constructor(private readonly max = 8) {}

  /**
   * `length` bytes at offset 0 of their memory: the smallest free buffer that holds them and is
   * at most twice as big (a small body, an error's, does not take a batch's buffer), else new.
   */
  take(length: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const n = this.free[i]!.byteLength;
      if (n >= length && n <= 2 * length && (best < 0 || n < this.free[best]!.byteLength)) best = i;
    }
    // New memory has room for a body up to 1/16 longer (batches differ in their number of ids),
    // so that a given-back buffer fits the next batch; pages never written cost no memory.
    if (best < 0) return Buffer.from(Buffer.allocUnsafeSlow(length + (length >> 4)).buffer, 0, length);
    const [ab] = this.free.splice(best, 1);
    return Buffer.from(ab!, 0, length);
  }

  /** Takes back the memory of a body nothing reads any more. */
  give(memory: ArrayBufferLike): void {
    if (memory instanceof ArrayBuffer && this.free.length < this.max && !this.free.includes(memory)) this.free.push(memory);
  }
}

/**
 * One keep-alive HTTP/1.1 connection that reads a response body straight into its final buffer:
 * the socket is opened with `onread`, and once the head says how long the body is, every read
 * names the rest of that body's buffer. The kernel copies the bytes to where they stay (no 64 KiB
 * chunks copied again in JavaScript, and as many bytes per read as have arrived).
 */
class Conn {
  readonly sock: Socket;
  private readonly scratch = Buffer.allocUnsafe(MAX_HEAD);
  private head: Buffer | null = null;
  private body: Buffer | null = null;
  private at = 0;
  private status = 0;
  private location: string | undefined = undefined;
  private close = false;
  private pending: { resolve: (g: Got) => void; reject: (e: unknown) => void } | null = null;
  dead = false;

  constructor(
    host: string,
    port: number,
    private readonly onDead: (c: Conn) => void,
    private readonly bodies: BodyPool,
  ) {
    this.sock = connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: () => (this.body !== null ? this.body.subarray(this.at) : this.scratch),
        callback: (n: number, buf: Uint8Array) => {
          this.onRead(n, buf);
          return true;
        },
      },
    });
    this.sock.on('error', (e) => this.destroy(e));
    this.sock.on('close', () => this.destroy(socketError('the connection closed before the response ended')));
  }

  request(text: string, signal?: AbortSignal): Promise<Got> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        this.destroy(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      this.pending = {
        resolve: (g) => {
          done();
          resolve(g);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      };
      this.sock.write(text);
    });
  }

  destroy(reason: unknown): void {
    if (!this.dead) {
      this.dead = true;
      this.sock.destroy();
      this.onDead(this);
    }
    const p = this.pending;
    this.pending = null;
    p?.reject(reason);
  }

  private onRead(n: number, buf: Uint8Array): void {
    if (this.pending === null) {
      this.destroy(socketError('bytes arrived with no request waiting'));
      return;
    }
    if (this.body !== null && buf !== this.scratch) {
      this.at += n;
    } else {
      const got = this.head === null ? this.scratch.subarray(0, n) : Buffer.concat([this.head, this.scratch.subarray(0, n)]);
      const end = got.indexOf(CRLF2);
      if (end < 0) {
        if (got.byteLength >= MAX_HEAD) {
          this.destroy(socketError('response head too long'));
          return;
        }
        this.head = Buffer.from(got); // the scratch buffer is read into again
        return;
      }
      this.head = null;
      if (!this.parseHead(got.toString('latin1', 0, end))) return;
      const rest = got.subarray(end + 4);
      if (rest.byteLength > this.body!.byteLength) {
        this.destroy(socketError('more bytes than the content-length'));
        return;
      }
      this.body!.set(rest, 0);
      this.at = rest.byteLength;
    }
    if (this.at === this.body!.byteLength) {
      const g: Got = { status: this.status, body: this.body!, ...(this.location !== undefined ? { location: this.location } : {}) };
      this.body = null;
      const p = this.pending;
      this.pending = null;
      if (this.close) this.destroy(socketError('closed'));
      p.resolve(g);
    }
  }

  /** Reads the status line and headers; false (the connection given up) when the response is not one this reader takes. */
  private parseHead(text: string): boolean {
    const lines = text.split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
    let length = -1;
    let chunked = false;
    this.location = undefined;
    this.close = lines[0]!.startsWith('HTTP/1.0');
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') length = /^\d+$/.test(value) ? Number(value) : -2;
      else if (name === 'transfer-encoding') chunked = true;
      else if (name === 'location') this.location = value;
      else if (name === 'connection')
        this.close = value
          .toLowerCase()
          .split(',')
          .some((t) => t.trim() === 'close');
    }
    if (m === null || Number(m[1]) < 200 || chunked || length < 0 || !Number.isSafeInteger(length)) {
      this.destroy(new Unsupported(`response not read directly: ${lines[0]}`));
      return false;
    }
    if (length > MAX_BODY_BYTES) {
      this.destroy(tooLarge(length));
      return false;
    }
    this.status = Number(m[1]);
    this.body = this.bodies.take(length);
    return true;
  }
}

/**
 * Keep-alive connections to one origin for plain-HTTP GETs whose responses carry a content-length
 * (what `sluice serve` sends): at most `max` at once, reused while they stay open.
 */
export class DirectPool {
  private readonly idle: Conn[] = [];
  private readonly waiters: Array<(c: Conn | null) => void> = [];
  private open = 0;
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly hostHeader: string,
    private readonly bodies: BodyPool,
    private readonly max = 8,
  ) {}

  async get(path: string, headers: Record<string, string>, signal?: AbortSignal): Promise<Got> {
    let text = `GET ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\n`;
    for (const [k, v] of Object.entries(headers)) text += `${k}: ${v}\r\n`;
    text += '\r\n';
    const c = await this.acquire();
    const g = await c.request(text, signal);
    this.release(c);
    return g;
  }

  close(): void {
    this.closed = true;
    for (const c of this.idle.splice(0)) c.destroy(socketError('client closed'));
    for (const w of this.waiters.splice(0)) w(null);
  }

  private acquire(): Promise<Conn> {
    if (this.closed) return Promise.reject(new Error('the client is closed'));
    const c = this.idle.pop();
    if (c !== undefined) {
      c.sock.ref();
      return Promise.resolve(c);
    }
    if (this.open < this.max) {
      this.open++;
      return Promise.resolve(new Conn(this.host, this.port, (d) => this.gone(d), this.bodies));
    }
    return new Promise((resolve, reject) => this.waiters.push((w) => (w === null ? reject(new Error('the client is closed')) : resolve(w))));
  }

  private release(c: Conn): void {
    if (c.dead) return;
    if (this.closed) {
      c.destroy(socketError('client closed'));
      return;
    }
    const w = this.waiters.shift();
    if (w !== undefined) {
      w(c);
      return;
    }
    // An idle connection does not keep the process alive (as undici's do not).
    c.sock.unref();
    this.idle.push(c);
  }

  private gone(c: Conn): void {
    this.open--;
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
    // A waiter gets a fresh connection in place of the one that went.
    const w = this.waiters.shift();
    if (w !== undefined && !this.closed) {
      this.open++;
      w(new Conn(this.host, this.port, (d) => this.gone(d), this.bodies));
    }
  }
}
