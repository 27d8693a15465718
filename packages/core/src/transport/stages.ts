/**
 * Batches over a queue pair: `toTransport` sends a pipeline's batches with flow control, and
 * `fromTransport` is the trainer's end that yields them. One connection; feed.ts adds reconnects.
 */
import type { IteratorState } from '../pipeline/pipeline.js';
import type { Batch } from '../batch/index.js';
import { decodeBatchMessage, encodeBatch, encodeEnd, encodeError } from './batch-codec.js';
import { PeerLostError, TransportError, cutShort, type Completion, type QueuePair } from './types.js';

export interface ToTransportOptions {
  /** Batches sent and not yet acknowledged at most (default 4); the receiver's credits bound it too. */
  window?: number;
  /**
   * Release each batch (`Batch.release`) once the peer has it, so that a pipeline can lay later
   * batches out in its memory (default true). Never on a queue pair whose peer reads the sender's
   * own arrays (`sharesBuffers`: in-process). Pass false if you keep the batches you send.
   */
  release?: boolean;
  signal?: AbortSignal;
}

/**
 * Why work on `qp` was flushed, as the error to throw: a PeerLostError when the peer or the
 * connection was lost (it may come back), else a TransportError (closed on purpose).
 */
function gone(qp: QueuePair, message: (peer: string) => string): TransportError {
  return cutShort(qp.ended, message(qp.ended instanceof PeerLostError ? 'went away' : 'closed the connection'));
}

function check(qp: QueuePair, c: Completion, what: string): void {
  if (c.status === 'success') return;
  if (c.status === 'length-error')
    throw new TransportError(`${what} is larger than the receive buffers the trainer posted (raise fromTransport's maxBatchBytes)`);
  if (c.status === 'flushed') throw gone(qp, (peer) => `the receiver ${peer} before ${what} was delivered`);
  throw new TransportError(`${what} failed: ${c.status}`);
}

/** A batch source that knows where a resumed run would start: a `pipeline(...)`. */
interface Resumable {
  state(): IteratorState | null;
}
const resumable = (x: unknown): x is Resumable => typeof (x as Partial<Resumable>).state === 'function';

/**
 * The sending end of a trainer feed: sends every batch of `batches` (e.g. a `pipeline(plan)`)
 * through `qp`, then an end-of-stream message. Reads the next batch only while fewer than
 * `window` are unacknowledged, so a slow trainer slows the pipeline instead of filling memory.
 * Each batch is released once the peer has it (see `ToTransportOptions.release`). The caller owns
 * `qp` (close it after).
 *
 * When `batches` is a pipeline, each batch carries the pipeline's resume state after it, which
 * the trainer reads from `fromTransport(...).state()` to checkpoint its place in the data. When
 * `batches` fails (a corrupt file, say), the trainer is told why before this rejects with the
 * same error, so it fails with the reason instead of "the sender went away".
 *
 * @example
 * const qp = await connectTcp({ host: 'trainer', port: 7000 });
 * await toTransport(qp, pipeline(plan, { input }));
 */
export async function toTransport(qp: QueuePair, batches: AsyncIterable<Batch>, options: ToTransportOptions = {}): Promise<{ batches: number; bytes: number }> {
  const window = options.window ?? 4;
  if (!Number.isInteger(window) || window < 1) throw new TransportError(`window must be a positive integer, got ${window}`);
  const release = (options.release ?? true) && qp.sharesBuffers !== true;
  const inFlight = new Map<number, Batch>();
  let sent = 0;
  let bytes = 0;
  let wr = 0;
  const settle = async (): Promise<void> => {
    const c = await qp.cq.next(options.signal);
    const b = inFlight.get(c.wrId);
    inFlight.delete(c.wrId);
    check(qp, c, b === undefined ? 'the end-of-stream message' : `batch ${b.seq}`);
    if (b !== undefined) {
      sent++;
      bytes += c.byteLength;
      // The peer acknowledged it: its bytes are in the peer's own memory.
      if (release) b.release?.();
    }
  };
  let it: AsyncIterator<Batch> | null = null;
  const states = resumable(batches) ? batches : null;
  for (;;) {
    let r: IteratorResult<Batch>;
    try {
      it ??= batches[Symbol.asyncIterator]();
      r = await it.next();
    } catch (e) {
      // The batches failed, not the connection: tell the trainer why, as far as it still listens.
      await sendError(qp, errorText(e), options.signal).catch(() => undefined);
      throw e;
    }
    if (r.done === true) break;
    const b = r.value;
    try {
      while (inFlight.size >= window) await settle();
      inFlight.set(++wr, b);
      qp.postSend(wr, encodeBatch(b, states?.state() ?? undefined));
    } catch (e) {
      await it.return?.();
      throw e;
    }
  }
  while (inFlight.size > 0) await settle();
  qp.postSend(++wr, encodeEnd(sent));
  await settle();
  return { batches: sent, bytes };
}

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * Sends a failure message behind the batches in flight and waits until it is delivered or the
 * peer is gone (the batches' own completions are passed over: the stream is failing anyway).
 */
export async function sendError(qp: QueuePair, message: string, signal: AbortSignal | undefined): Promise<void> {
  if (qp.state !== 'ready') return;
  const id = Number.MAX_SAFE_INTEGER;
  qp.postSend(id, encodeError(message));
  while ((await qp.cq.next(signal)).wrId !== id);
}

export interface FromTransportOptions {
  /** Receive buffers kept posted: how many batches may be in flight to this trainer (default 4). */
  slots?: number;
  /** Size of each receive buffer (default 16 MiB); a bigger batch fails the sender with a clear error. */
  maxBatchBytes?: number;
  /**
   * Copy each batch out of the receive buffer (default false: a yielded batch views the buffer and
   * stays valid until the loop asks for the next one; in-process, it is the sender's own arrays).
   */
  copy?: boolean;
  signal?: AbortSignal;
}

/** What `fromTransport` returns: the batches, and where the sender's pipeline stands after the last one. */
export interface TransportFeed extends AsyncGenerator<Batch, void, undefined> {
  /**
   * The sender's pipeline state after the last batch this loop took: save it with a checkpoint,
   * and `pipeline(plan, { resume })` (or `connectFeed(..., { resume })`) continues after that
   * batch. Null before the first batch, or when the sender's batches were not a pipeline.
   */
  state(): IteratorState | null;
}

/**
 * The trainer's end: yields the batches a `toTransport` peer sends, until its end-of-stream.
 * Throws a TransportError when the sender goes away first (a `PeerLostError` when it was lost
 * rather than closed), or with the sender's reason when its batches failed. The caller owns `qp`.
 *
 * @example
 * const l = await listenTcp({ port: 7000 });
 * const feed = fromTransport(await l.accept());
 * for await (const b of feed) { train(b); if (b.seq % 100 === 0) checkpoint(model, feed.state()); }
 */
export function fromTransport(qp: QueuePair, options: FromTransportOptions = {}): TransportFeed {
  let state: IteratorState | null = null;
  return Object.assign(
    receive(qp, options, (s) => {
      state = s;
    }),
    { state: () => state },
  );
}

async function* receive(qp: QueuePair, options: FromTransportOptions, took: (s: IteratorState | null) => void): AsyncGenerator<Batch, void, undefined> {
  const slots = options.slots ?? 4;
  const size = Math.ceil((options.maxBatchBytes ?? 16 << 20) / 8) * 8;
  if (!Number.isInteger(slots) || slots < 1) throw new TransportError(`slots must be a positive integer, got ${slots}`);
  const region = qp.registerMemory(slots * size);
  for (let s = 0; s < slots; s++) qp.postRecv(s, region, s * size, size);
  let last = -1;
  const after = (): string => `last batch received: ${last < 0 ? 'none' : last}`;
  for (;;) {
    const c = await qp.cq.next(options.signal);
    if (c.opcode !== 'recv') continue;
    if (c.status !== 'success') throw gone(qp, (peer) => `the sender ${peer} before the end of the stream (${after()})`);
    const m = decodeBatchMessage(c.data!, options.copy ?? false);
    if (m.kind === 'end') return;
    if (m.kind === 'error') throw new TransportError(`the sender failed (${after()}): ${m.message}`);
    last = m.batch.seq;
    took(m.resume);
    yield m.batch;
    if (qp.state === 'ready') qp.postRecv(c.wrId, region, c.wrId * size, size);
  }
}
