import { unpack } from 'msgpackr';
import { Agent, request } from 'undici';
import { SluiceError } from '../errors.js';

/** A batch as the HTTP client decodes it (the msgpack layout, with offsets worked out). */
export interface ClientBatch {
  readonly seq: number;
  readonly epoch: number;
  readonly rows: number;
  readonly dense: { readonly names: readonly string[]; readonly dim: number; readonly data: Float32Array };
  readonly sparse: { readonly keys: readonly string[]; readonly lengths: Int32Array; readonly offsets: Int32Array; readonly values: BigInt64Array };
  readonly labels: Float32Array | null;
}

/** What `GET /v1/info` says about the served plan. */
export interface ServerInfo {
  batchSize: number;
  batches: number;
  rowsPerEpoch: number;
  epochs: number;
  backend: string;
  label: string | null;
  features: Array<{ name: string; kind: string; ops: string[]; width: number }>;
  dense: { names: string[]; dim: number };
  sparse: { keys: string[] };
}

/** An HTTP error from the batch server (4xx are not retried). */
export class HttpError extends SluiceError {
  override name = 'HttpError';
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export interface ClientOptions {
  token?: string;
  /** Attempts after a transient failure (connection error, 5xx) before giving up (default 5). */
  retries?: number;
  /** First back-off (default 100 ms), doubling per attempt. */
  retryDelayMs?: number;
}

export interface BatchesOptions {
  /** First seq (a saved cursor; default 0). */
  start?: number;
  /** Seq stride: rank r of world w uses start r, step w (default 1). */
  step?: number;
  /** Requests in flight ahead of the loop (default 2). */
  prefetch?: number;
  signal?: AbortSignal;
}

export interface BatchClient {
  info(): Promise<ServerInfo>;
  /** Batch `seq`, or null past the end of the sequence. */
  batch(seq: number, signal?: AbortSignal): Promise<ClientBatch | null>;
  /** Iterates batches start, start+step, … until the end; `cursor` is the next seq to resume from. */
  batches(options?: BatchesOptions): AsyncIterable<ClientBatch> & { readonly cursor: number };
  close(): Promise<void>;
}

type Bin = { dtype: string; shape: number[]; data: Uint8Array };
type Wire = { seq: number; epoch: number; rows: number; dense: { names: string[]; shape: [number, number]; data: Uint8Array }; sparse: { keys: string[]; lengths: Bin; values: Bin }; labels: Bin | null };

/** A typed array over msgpack bin bytes: a view when aligned, else an aligned copy. */
function typed<T>(C: { new(b: ArrayBufferLike, o: number, n: number): T; BYTES_PER_ELEMENT: number }, u: Uint8Array): T {
  const n = u.byteLength / C.BYTES_PER_ELEMENT;
  if (u.byteOffset % C.BYTES_PER_ELEMENT === 0) return new C(u.buffer, u.byteOffset, n);
  const own = u.slice();
  return new C(own.buffer, 0, n);
}

/** Decodes a msgpack batch body. */
export function decodeMsgpackBatch(body: Uint8Array): ClientBatch {
  const w = unpack(body) as Wire;
  const lengths = typed(Int32Array, w.sparse.lengths.data);
  const K = w.sparse.keys.length;
  const offsets = new Int32Array(K + 1);
  for (let k = 0; k < K; k++) {
    let s = 0;
    for (let r = 0; r < w.rows; r++) s += lengths[k * w.rows + r]!;
    offsets[k + 1] = offsets[k]! + s;
  }
  return {
    seq: w.seq, epoch: w.epoch, rows: w.rows,
    dense: { names: w.dense.names, dim: w.dense.shape[1], data: typed(Float32Array, w.dense.data) },
    sparse: { keys: w.sparse.keys, lengths, offsets, values: typed(BigInt64Array, w.sparse.values.data) },
    labels: w.labels === null ? null : typed(Float32Array, w.labels.data),
  };
}

const TRANSIENT = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED']);

function transient(e: unknown): boolean {
  if (e instanceof HttpError) return e.status >= 500;
  const err = e as { code?: string; cause?: { code?: string } };
  return TRANSIENT.has(err.code ?? '') || TRANSIENT.has(err.cause?.code ?? '');
}

/**
 * A client for `sluice serve`: typed batches over msgpack, retries on transient errors (a body
 * cut off mid-way is asked for again), and resumable iteration from any cursor.
 *
 * @example
 * const c = createClient('http://127.0.0.1:8080', { token: process.env.SLUICE_TOKEN });
 * for await (const b of c.batches({ start: rank, step: world })) train(b);
 */
export function createClient(url: string, options: ClientOptions = {}): BatchClient {
  const base = new URL(url);
  const agent = new Agent({ connections: 8, keepAliveTimeout: 30_000 });
  const retries = options.retries ?? 5;
  const headers: Record<string, string> = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };

  async function get(path: string, accept: string, signal?: AbortSignal): Promise<{ status: number; body: Uint8Array }> {
    let delay = options.retryDelayMs ?? 100;
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await request(new URL(path, base), { method: 'GET', headers: { ...headers, accept }, dispatcher: agent, ...(signal ? { signal } : {}) });
        const body = new Uint8Array(await r.body.arrayBuffer());
        if (r.statusCode >= 500) throw new HttpError(r.statusCode, `${path}: HTTP ${r.statusCode} ${new TextDecoder().decode(body)}`);
        return { status: r.statusCode, body };
      } catch (e) {
        if (signal?.aborted || !transient(e) || attempt >= retries) throw e;
        await new Promise((res) => setTimeout(res, delay));
        delay *= 2;
      }
    }
  }

  const fail = (path: string, r: { status: number; body: Uint8Array }): never => {
    let msg = new TextDecoder().decode(r.body);
    try { msg = (JSON.parse(msg) as { error?: string }).error ?? msg; } catch { /* not JSON */ }
    throw new HttpError(r.status, `${path}: HTTP ${r.status}: ${msg}`);
  };

  const client: BatchClient = {
    async info() {
      const r = await get('/v1/info', 'application/json');
      if (r.status !== 200) fail('/v1/info', r);
      return JSON.parse(new TextDecoder().decode(r.body)) as ServerInfo;
    },
    async batch(seq, signal) {
      if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`seq must be a non-negative integer, got ${seq}`);
      const path = `/v1/batches/${seq}`;
      const r = await get(path, 'application/msgpack', signal);
      if (r.status === 404) {
        try { if ((JSON.parse(new TextDecoder().decode(r.body)) as { end?: boolean }).end) return null; } catch { /* not the end marker */ }
      }
      if (r.status !== 200) fail(path, r);
      return decodeMsgpackBatch(r.body);
    },
    batches(o = {}) {
      const step = o.step ?? 1;
      const depth = o.prefetch ?? 2;
      if (!Number.isInteger(step) || step < 1) throw new RangeError(`step must be a positive integer, got ${step}`);
      const state = { cursor: o.start ?? 0 };
      const it = async function* (): AsyncGenerator<ClientBatch> {
        const ahead: Array<Promise<ClientBatch | null>> = [];
        let next = state.cursor;
        try {
          for (;;) {
            while (ahead.length < depth) { ahead.push(client.batch(next, o.signal)); next += step; }
            const b = await ahead.shift()!;
            if (b === null) return;
            state.cursor = b.seq + step;
            yield b;
          }
        } finally {
          // Requests still in flight are dropped; their errors do not matter any more.
          for (const p of ahead) p.catch(() => undefined);
        }
      };
      return { [Symbol.asyncIterator]: it, get cursor() { return state.cursor; } };
    },
    close: () => agent.close(),
  };
  return client;
}
