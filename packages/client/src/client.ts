/**
 * The HTTP client of `sluice serve`: `createClient` (retries, resumable iteration, reuse of released
 * batches' memory) and the msgpack batch decoder. Arrow bodies are decoded by arrow-ipc.ts, which
 * is loaded on the first `arrow()` call.
 */
import type { Table } from 'apache-arrow';
import { unpack } from 'msgpackr';
import type { Agent, Dispatcher } from 'undici';
import { SluiceError } from '@sluice/ops/errors';
import { defineRelease } from '@sluice/ops/release';
import { BodyPool, DirectPool, MAX_BODY_BYTES, Unsupported, tooLarge, type Got } from './direct.js';

/**
 * A batch as the HTTP client decodes it (the msgpack layout, with offsets worked out).
 *
 * @example
 * const b = (await client.batch(0))!;
 * const row0Dense = b.dense.data.subarray(0, b.dense.dim);
 * const key0Ids = b.sparse.values.subarray(b.sparse.offsets[0], b.sparse.offsets[1]);
 */
export interface ClientBatch {
  readonly seq: number;
  readonly epoch: number;
  readonly rows: number;
  readonly dense: { readonly names: readonly string[]; readonly dim: number; readonly data: Float32Array };
  readonly sparse: { readonly keys: readonly string[]; readonly lengths: Int32Array; readonly offsets: Int32Array; readonly values: BigInt64Array };
  readonly labels: Float32Array | null;
  /**
   * Set on the batches a client fetches: the loop is done with this batch, so the client may read
   * a later batch into its memory (as `Batch.release` lets a pipeline). Optional: a batch never
   * released is collected as usual. After `release()` nothing may read the batch's arrays.
   */
  readonly release?: () => void;
}

/**
 * An Arrow table from `BatchClient.arrow`: its columns view the response body.
 *
 * @example
 * const t = (await client.arrow(0))!;
 * console.log(t.numRows, t.getChild('I1')!.toArray());
 * t.release?.();
 */
export type ClientTable = Table & {
  /** As `ClientBatch.release`: the client may read a later body into this table's memory; nothing may read the table after. */
  readonly release?: () => void;
};

/**
 * What `GET /v1/info` says about the served plan.
 *
 * @example
 * const info: ServerInfo = await client.info();
 * console.log(info.batches, info.dense.dim, info.sparse.keys);
 */
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

/**
 * An HTTP error from the batch server (4xx are not retried).
 *
 * @example
 * try { await client.batch(0); } catch (e) { if (e instanceof HttpError && e.status === 401) console.error('wrong token'); }
 */
export class HttpError extends SluiceError {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Options of {@link createClient}: the server's token and how transient failures are retried.
 *
 * @example
 * const client = createClient(url, { token: process.env.SLUICE_TOKEN, retries: 3, retryDelayMs: 200 });
 */
export interface ClientOptions {
  token?: string;
  /** Attempts after a transient failure (connection error, 5xx) before giving up (default 5). */
  retries?: number;
  /** First back-off (default 100 ms), doubling per attempt. */
  retryDelayMs?: number;
}

/**
 * Options of `BatchClient.batches`: where to start, this rank's stride, and how far to read ahead.
 *
 * @example
 * for await (const b of client.batches({ start: savedCursor, step: worldSize, prefetch: 4 })) train(b);
 */
export interface BatchesOptions {
  /** First seq (a saved cursor; default 0). */
  start?: number;
  /** Seq stride: rank r of world w uses start r, step w (default 1). */
  step?: number;
  /** Requests in flight ahead of the loop (default 2; 0 and 1 both fetch one batch at a time). */
  prefetch?: number;
  signal?: AbortSignal;
}

/**
 * A connection to one `sluice serve`: its plan's info, single batches (msgpack or Arrow) and
 * resumable iteration.
 *
 * @example
 * const client: BatchClient = createClient('http://127.0.0.1:8080');
 * try { for await (const b of client.batches()) { train(b); b.release?.(); } } finally { await client.close(); }
 */
export interface BatchClient {
  info(): Promise<ServerInfo>;
  /** Batch `seq`, or null past the end of the sequence. */
  batch(seq: number, signal?: AbortSignal): Promise<ClientBatch | null>;
  /**
   * Batch `seq` as the server's Arrow table (one column per feature, as `sluice run` writes), or
   * null past the end. Its `release()` works as a ClientBatch's does.
   */
  arrow(seq: number, signal?: AbortSignal): Promise<ClientTable | null>;
  /** Iterates batches start, start+step, … until the end; `cursor` is the next seq to resume from. */
  batches(options?: BatchesOptions): AsyncIterable<ClientBatch> & { readonly cursor: number };
  close(): Promise<void>;
}

type Bin = { dtype: string; shape: number[]; data: Uint8Array };
type Wire = {
  seq: number;
  epoch: number;
  rows: number;
  dense: { names: string[]; shape: [number, number]; data: Uint8Array };
  sparse: { keys: string[]; lengths: Bin; values: Bin };
  labels: Bin | null;
};

/** A typed array over msgpack bin bytes: a view when aligned (the server aligns them), else an aligned copy. */
function typed<T>(C: { new (b: ArrayBufferLike, o: number, n: number): T; BYTES_PER_ELEMENT: number }, u: Uint8Array): T {
  const n = u.byteLength / C.BYTES_PER_ELEMENT;
  if (u.byteOffset % C.BYTES_PER_ELEMENT === 0) return new C(u.buffer, u.byteOffset, n);
  // A copy of its own at offset 0 (not `u.slice()`: msgpackr's bins are Node Buffers, whose slice is a view).
  const own = new Uint8Array(u);
  return new C(own.buffer, 0, n);
}

/**
 * Decodes a msgpack batch body (`Accept: application/msgpack`) into typed arrays that view it.
 *
 * @example
 * const res = await fetch(`${url}/v1/batches/0`, { headers: { accept: 'application/msgpack' } });
 * const batch = decodeMsgpackBatch(new Uint8Array(await res.arrayBuffer()));
 */
export function decodeMsgpackBatch(body: Uint8Array): ClientBatch {
  const w = unpack(body) as Wire;
  const lengths = typed(Int32Array, w.sparse.lengths.data);
  const K = w.sparse.keys.length;
  const B = w.rows;
  const offsets = new Int32Array(K + 1);
  for (let k = 0; k < K; k++) {
    // Four independent running sums, so the adds do not wait on each other (this loop is most of the decode's time).
    const l = lengths.subarray(k * B, (k + 1) * B);
    let s0 = 0,
      s1 = 0,
      s2 = 0,
      s3 = 0,
      r = 0;
    for (; r + 3 < B; r += 4) {
      s0 += l[r]!;
      s1 += l[r + 1]!;
      s2 += l[r + 2]!;
      s3 += l[r + 3]!;
    }
    for (; r < B; r++) s0 += l[r]!;
    offsets[k + 1] = offsets[k]! + s0 + s1 + s2 + s3;
  }
  return {
    seq: w.seq,
    epoch: w.epoch,
    rows: w.rows,
    dense: { names: w.dense.names, dim: w.dense.shape[1], data: typed(Float32Array, w.dense.data) },
    sparse: { keys: w.sparse.keys, lengths, offsets, values: typed(BigInt64Array, w.sparse.values.data) },
    labels: w.labels === null ? null : typed(Float32Array, w.labels.data),
  };
}

/**
 * One GET, its body read straight into a single buffer of the response's content-length (chunks
 * are copied in as they arrive: no list of chunks, no concatenation, no stream), so the body is an
 * ArrayBuffer of its own at offset 0 and the server's 8-aligned arrays can be viewed in place.
 */
function getOnce(agent: Agent, origin: string, path: string, headers: Record<string, string>, bodies: BodyPool, signal?: AbortSignal): Promise<Got> {
  return new Promise((resolve, reject) => {
    let status = 0;
    let location: string | undefined;
    let body: Uint8Array | null = null;
    let chunks: Uint8Array[] = [];
    let at = 0;
    let settled = false;
    let onAbort: (() => void) | null = null;
    const settle = (e: unknown, r?: Got): void => {
      if (settled) return;
      settled = true;
      if (onAbort !== null) signal!.removeEventListener('abort', onAbort);
      if (e === null) resolve(r!);
      else reject(e);
    };
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(controller) {
        if (signal === undefined || onAbort !== null) return;
        if (signal.aborted) {
          controller.abort(signal.reason);
          return;
        }
        onAbort = () => controller.abort(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
      },
      onResponseStart(controller, statusCode, h) {
        status = statusCode;
        const loc = h.location;
        location = typeof loc === 'string' ? loc : undefined;
        at = 0;
        chunks = [];
        const len = Number(h['content-length']);
        if (len > MAX_BODY_BYTES) {
          controller.abort(tooLarge(len));
          return;
        }
        body = Number.isSafeInteger(len) && len >= 0 ? bodies.take(len) : null;
      },
      onResponseData(controller, chunk) {
        if (body === null) {
          at += chunk.byteLength;
          if (at > MAX_BODY_BYTES) {
            controller.abort(tooLarge(at));
            return;
          }
          chunks.push(chunk);
          return;
        }
        if (at + chunk.byteLength > body.byteLength) {
          controller.abort(new HttpError(status, `${path}: body longer than its content-length`));
          return;
        }
        body.set(chunk, at);
        at += chunk.byteLength;
      },
      onResponseEnd() {
        if (body === null) body = Buffer.concat(chunks);
        else if (at !== body.byteLength) {
          settle(Object.assign(new Error(`${path}: body cut off at ${at} of ${body.byteLength} bytes`), { code: 'UND_ERR_SOCKET' }));
          return;
        }
        settle(null, { status, body, ...(location !== undefined ? { location } : {}) });
      },
      onResponseError(_controller, e) {
        settle(e);
      },
    };
    agent.dispatch({ origin, path, method: 'GET', headers }, handler);
  });
}

/** Redirect statuses the client follows (a cluster worker answers 307). */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const TRANSIENT = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

function transient(e: unknown): boolean {
  if (e instanceof HttpError) return e.status >= 500;
  const err = e as { code?: string; cause?: { code?: string } };
  return TRANSIENT.has(err.code ?? '') || TRANSIENT.has(err.cause?.code ?? '');
}

/**
 * A client for `sluice serve`: typed batches over msgpack, retries on transient errors (a body
 * cut off mid-way is asked for again), and resumable iteration from any cursor. Over plain HTTP,
 * batch bodies are read by keep-alive sockets straight into one buffer each (DirectPool); other
 * requests, https, and servers that answer without a content-length go through undici.
 *
 * @example
 * const c = createClient('http://127.0.0.1:8080', { token: process.env.SLUICE_TOKEN });
 * for await (const b of c.batches({ start: rank, step: world })) train(b);
 */
export function createClient(url: string, options: ClientOptions = {}): BatchClient {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (parsed === null || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new SluiceError(`createClient: ${JSON.stringify(url)} is not an http(s) URL of a sluice serve (e.g. http://127.0.0.1:8080)`);
  }
  const base: URL = parsed;
  if (options.token !== undefined) {
    // undici refuses such a header as "invalid authorization header"; the direct reader would send it.
    const bad = [...options.token].findIndex((ch) => ch < ' ' || (ch >= '\x7f' && ch < '\xa0') || ch > '\xff');
    if (bad !== -1) {
      const ch = [...options.token][bad]!;
      const what =
        ch === '\n' || ch === '\r'
          ? 'a line break (read from a file with its newline?)'
          : ch > '\xff'
            ? 'a character an HTTP header cannot carry'
            : 'a control character';
      throw new SluiceError(`createClient: the token holds ${what} at position ${bad} of ${[...options.token].length}`);
    }
  }
  // undici is loaded on the first request that needs it (most batch reads do not): it is the
  // largest module the client would otherwise load into every training script.
  let agentP: Promise<Agent> | null = null;
  const agent = (): Promise<Agent> => (agentP ??= import('undici').then(({ Agent: A }) => new A({ connections: 8, keepAliveTimeout: 30_000 })));
  // The Arrow reader (and apache-arrow with it) is loaded on the first `arrow()` call, so a trainer
  // that reads msgpack batches never loads Arrow.
  let arrowIpcP: Promise<typeof import('./arrow-ipc.js')> | null = null;
  const arrowIpc = (): Promise<typeof import('./arrow-ipc.js')> => (arrowIpcP ??= import('./arrow-ipc.js'));
  const retries = options.retries ?? 5;
  const headers: Record<string, string> = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };
  const bodies = new BodyPool();

  // Batch bodies over plain HTTP are read by DirectPool, straight into their buffers; undici does
  // the rest (and any response DirectPool does not take).
  // A server (or proxy) that answers without a content-length is left to undici from then on.
  let direct = base.protocol === 'http:' ? new DirectPool(base.hostname.replace(/^\[|\]$/g, ''), Number(base.port || 80), base.host, bodies, 8) : null;
  const getDirect = async (target: string, h: Record<string, string>, signal?: AbortSignal): Promise<Got> => {
    try {
      return await direct!.get(target, h, signal);
    } catch (e) {
      if (!(e instanceof Unsupported)) throw e;
      direct?.close();
      direct = null;
      return getOnce(await agent(), base.origin, target, h, bodies, signal);
    }
  };

  /**
   * One GET, following redirects (a cluster worker sends a trainer to the worker that holds the
   * batch, docs/cluster.md). The token goes along only while the scheme stays the same, as the
   * Python client does: never from https down to http.
   */
  async function getFollowing(path: string, accept: string, signal: AbortSignal | undefined, body: boolean): Promise<Got> {
    let url = new URL(path, base);
    let h: Record<string, string> = { ...headers, accept };
    for (let hop = 0; ; hop++) {
      const target = url.pathname + url.search;
      const r =
        url.origin === base.origin && body && direct !== null
          ? await getDirect(target, h, signal)
          : await getOnce(await agent(), url.origin, target, h, bodies, signal);
      if (!REDIRECTS.has(r.status) || r.location === undefined) return r;
      if (hop >= 5) throw new HttpError(r.status, `${path}: more than 5 redirects`);
      const next = new URL(r.location, url);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new HttpError(r.status, `${path}: redirected to ${next.protocol} URL`);
      if (next.protocol !== url.protocol) h = { accept };
      url = next;
    }
  }

  async function get(path: string, accept: string, signal?: AbortSignal, body = false): Promise<Got> {
    let delay = options.retryDelayMs ?? 100;
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await getFollowing(path, accept, signal, body);
        if (r.status >= 500) throw new HttpError(r.status, `${path}: HTTP ${r.status} ${new TextDecoder().decode(r.body)}`);
        return r;
      } catch (e) {
        if (signal?.aborted || !transient(e)) throw e;
        if (attempt >= retries) {
          if (e instanceof HttpError) throw e;
          const err = e as { code?: string; cause?: { code?: string }; message?: string };
          throw new SluiceError(
            `${path}: cannot reach ${base.origin} (${err.code ?? err.cause?.code ?? err.message}) after ${attempt + 1} attempts`,
            {},
            { cause: e },
          );
        }
        await new Promise((res) => setTimeout(res, delay));
        delay *= 2;
      }
    }
  }

  const fail = (path: string, r: { status: number; body: Uint8Array }): never => {
    let msg = new TextDecoder().decode(r.body);
    try {
      msg = (JSON.parse(msg) as { error?: string }).error ?? msg;
    } catch {
      /* not JSON */
    }
    throw new HttpError(r.status, `${path}: HTTP ${r.status}: ${msg}`);
  };

  /** The body of batch `seq` in a format, or null past the end. */
  /** A 200 body that is not what a sluice serve sends (another server at the URL): one line naming it, not the decoder's own text. */
  const notSluice = (path: string, what: string, e: unknown): SluiceError =>
    new SluiceError(`${base.origin}${path}: the answer is not ${what} (is ${base.origin} a sluice serve?)`, {}, { cause: e });

  async function batchBody(seq: number, accept: string, signal?: AbortSignal): Promise<Uint8Array | null> {
    if (!Number.isInteger(seq) || seq < 0) throw new RangeError(`seq must be a non-negative integer, got ${seq}`);
    if (!Number.isSafeInteger(seq)) throw new RangeError(`seq must be at most ${Number.MAX_SAFE_INTEGER}, got ${seq}`);
    const path = `/v1/batches/${seq}`;
    const r = await get(path, accept, signal, true);
    if (r.status === 404) {
      try {
        if ((JSON.parse(new TextDecoder().decode(r.body)) as { end?: boolean }).end) return null;
      } catch {
        /* not the end marker */
      }
    }
    if (r.status !== 200) fail(path, r);
    return r.body;
  }

  const client: BatchClient = {
    async info() {
      const r = await get('/v1/info', 'application/json');
      if (r.status !== 200) fail('/v1/info', r);
      try {
        return JSON.parse(new TextDecoder().decode(r.body)) as ServerInfo;
      } catch (e) {
        throw notSluice('/v1/info', 'JSON', e);
      }
    },
    async batch(seq, signal) {
      const body = await batchBody(seq, 'application/msgpack', signal);
      if (body === null) return null;
      let b: ClientBatch;
      try {
        b = decodeMsgpackBatch(body);
      } catch (e) {
        throw notSluice(`/v1/batches/${seq}`, 'a msgpack batch', e);
      }
      return defineRelease(b, () => bodies.give(body.buffer));
    },
    async arrow(seq, signal) {
      // Arrow IPC aligns its buffers to 8 bytes and the body is a buffer of its own: columns are views.
      const ipc = arrowIpc(); // loads while the request is in flight
      ipc.catch(() => undefined); // a failed load is reported where it is awaited, not as an unhandled rejection
      const body = await batchBody(seq, 'application/vnd.apache.arrow.stream', signal);
      if (body === null) return null;
      const { tableFromArrowStream } = await ipc;
      let t: ClientTable;
      try {
        t = tableFromArrowStream(body) as ClientTable;
      } catch (e) {
        throw notSluice(`/v1/batches/${seq}`, 'an Arrow stream', e);
      }
      return defineRelease(t, () => bodies.give(body.buffer));
    },
    batches(o = {}) {
      const step = o.step ?? 1;
      const depth = o.prefetch ?? 2;
      if (!Number.isInteger(step) || step < 1) throw new RangeError(`step must be a positive integer, got ${step}`);
      if (!Number.isInteger(depth) || depth < 0) throw new RangeError(`prefetch must be a non-negative integer, got ${depth}`);
      const start = o.start ?? 0;
      if (!Number.isSafeInteger(start) || start < 0) throw new RangeError(`start must be a non-negative integer, got ${start}`);
      const state = { cursor: start };
      const it = async function* (): AsyncGenerator<ClientBatch> {
        const ahead: Array<Promise<ClientBatch | null>> = [];
        let next = state.cursor;
        try {
          for (;;) {
            // prefetch 0: nothing ahead, the one request the loop waits for.
            while (ahead.length < Math.max(1, depth)) {
              const p = client.batch(next, o.signal);
              // A request ahead may fail before the loop awaits it (the server gone, a body not a
              // batch): handled here, it is thrown where it is awaited, not as an unhandled
              // rejection that ends the process.
              p.catch(() => undefined);
              ahead.push(p);
              next += step;
            }
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
      return {
        [Symbol.asyncIterator]: it,
        get cursor() {
          return state.cursor;
        },
      };
    },
    close: async () => {
      direct?.close();
      if (agentP !== null) await (await agentP).close();
    },
  };
  return client;
}
