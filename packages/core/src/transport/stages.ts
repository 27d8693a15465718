import type { Batch } from '../stream/batch.js';
import { decodeBatch, encodeBatch, encodeEnd } from './batch-codec.js';
import { TransportError, type Completion, type QueuePair } from './types.js';

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

function check(c: Completion, what: string): void {
  if (c.status === 'success') return;
  if (c.status === 'length-error') throw new TransportError(`${what} is larger than the receive buffers the trainer posted (raise fromTransport's maxBatchBytes)`);
  if (c.status === 'flushed') throw new TransportError(`the receiver went away before ${what} was delivered`);
  throw new TransportError(`${what} failed: ${c.status}`);
}

/**
 * The sending end of a trainer feed: sends every batch of `batches` (e.g. a `pipeline(plan)`)
 * through `qp`, then an end-of-stream message. Reads the next batch only while fewer than
 * `window` are unacknowledged, so a slow trainer slows the pipeline instead of filling memory.
 * Each batch is released once the peer has it (see `ToTransportOptions.release`). The caller owns
 * `qp` (close it after).
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
    check(c, b === undefined ? 'the end-of-stream message' : `batch ${b.seq}`);
    if (b !== undefined) {
      sent++;
      bytes += c.byteLength;
      // The peer acknowledged it: its bytes are in the peer's own memory.
      if (release) b.release?.();
    }
  };
  for await (const b of batches) {
    while (inFlight.size >= window) await settle();
    inFlight.set(++wr, b);
    qp.postSend(wr, encodeBatch(b));
  }
  while (inFlight.size > 0) await settle();
  qp.postSend(++wr, encodeEnd(sent));
  await settle();
  return { batches: sent, bytes };
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

/**
 * The trainer's end: yields the batches a `toTransport` peer sends, until its end-of-stream.
 * Throws a TransportError when the sender goes away first. The caller owns `qp`.
 *
 * @example
 * const l = await listenTcp({ port: 7000 });
 * for await (const b of fromTransport(await l.accept())) train(b);
 */
export async function* fromTransport(qp: QueuePair, options: FromTransportOptions = {}): AsyncGenerator<Batch, void, undefined> {
  const slots = options.slots ?? 4;
  const size = Math.ceil((options.maxBatchBytes ?? 16 << 20) / 8) * 8;
  if (!Number.isInteger(slots) || slots < 1) throw new TransportError(`slots must be a positive integer, got ${slots}`);
  const region = qp.registerMemory(slots * size);
  for (let s = 0; s < slots; s++) qp.postRecv(s, region, s * size, size);
  let last = -1;
  for (;;) {
    const c = await qp.cq.next(options.signal);
    if (c.opcode !== 'recv') continue;
    if (c.status !== 'success') throw new TransportError(`the sender went away before the end of the stream (last batch received: ${last < 0 ? 'none' : last})`);
    const m = decodeBatch(c.data!, options.copy ?? false);
    if ('end' in m && m.end === true) return;
    const b = m as Batch;
    last = b.seq;
    yield b;
    if (qp.state === 'ready') qp.postRecv(c.wrId, region, c.wrId * size, size);
  }
}
