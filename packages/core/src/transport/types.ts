/**
 * The transport contract: a queue pair (RDMA-style verbs: registered memory, posted receives,
 * sends and one-sided writes, a completion queue) and its errors. Every wire (in-process, shared
 * memory, TCP) gives the same guarantees through `Endpoint` (engine.ts).
 */
import { SluiceError } from '@sluice/ops';

/** A transport misuse or failure: bad region, closed queue pair, protocol violation, lost peer. */
export class TransportError extends SluiceError {
  override name = 'TransportError';
}

/**
 * The peer went away without closing: it crashed, or the connection dropped. Unlike a peer that
 * closed on purpose, it may come back (`serveFeed` and `connectFeed` reconnect after this one).
 */
export class PeerLostError extends TransportError {
  override name = 'PeerLostError';
}

/** The peer closed the connection on purpose (`close()`), before the work here was done. */
export class PeerClosedError extends TransportError {
  override name = 'PeerClosedError';
}

/**
 * The error for work that `ended` (a queue pair's `ended`) cut short: a PeerLostError when the
 * peer or the connection was lost, so that a reconnecting feed dials again; else a TransportError.
 */
export function cutShort(ended: Error | null, message: string): TransportError {
  const E = ended instanceof PeerLostError ? PeerLostError : TransportError;
  return new E(message, {}, { cause: ended });
}

/** Memory registered with a queue pair: receives land in it, and with `remoteWrite` the peer may write into it by key. */
export interface MemoryRegion {
  /** Names the region to the peer (for `postWrite`); unique within its queue pair. */
  readonly key: number;
  readonly bytes: Uint8Array;
  readonly remoteWrite: boolean;
}

/** Where a one-sided write lands on the peer: a region key (learnt from the peer) and a byte offset. */
export interface RemoteAddress {
  readonly key: number;
  readonly offset: number;
}

/** A message body: one buffer, or a gather list sent as one message. */
export type Payload = Uint8Array | readonly Uint8Array[];

export type CompletionStatus =
  /** Done. */
  | 'success'
  /** A send was larger than the receive buffer the peer posted for it; nothing was sent and the credit stays. */
  | 'length-error'
  /** A write named a key the peer does not have (or not writable) or ran past the region's end. */
  | 'remote-access-error'
  /** The queue pair closed or the peer went away before this work request finished. */
  | 'flushed';

export type Opcode = 'send' | 'write' | 'recv' | 'write-imm';

/** One finished work request, as a completion queue reports it. */
export interface Completion {
  readonly wrId: number;
  readonly opcode: Opcode;
  readonly status: CompletionStatus;
  /** Bytes moved (0 unless success). */
  readonly byteLength: number;
  /**
   * For a successful `recv`: the message as a gather list. Byte-stream transports (TCP, shared
   * memory rings) deliver one view into the posted region; the in-process transport hands over
   * the sender's buffers themselves (zero copy).
   */
  readonly data?: readonly Uint8Array[];
  /** The 32-bit immediate of a send or write-with-immediate, when the sender gave one. */
  readonly imm?: number;
}

export type QueuePairState = 'ready' | 'closed' | 'error';

/**
 * One end of a reliable connection with verbs after RDMA: receives are posted into registered
 * memory, each posted receive gives the peer one credit, and a send waits (in posting order)
 * until it has one — so a sender never overruns the receiver. Every work request finishes with
 * exactly one completion on `cq`.
 *
 * @example
 * const mr = qp.registerMemory(1 << 20);
 * qp.postRecv(1, mr);
 * peer.postSend(7, new TextEncoder().encode('hi'));
 * const c = await qp.cq.next(); // { wrId: 1, opcode: 'recv', data: [...] }
 */
export interface QueuePair {
  readonly cq: CompletionQueue;
  readonly state: QueuePairState;
  /**
   * Why the queue pair is no longer ready: a `PeerLostError` when the peer or the connection was
   * lost, a `PeerClosedError` when the peer closed it, another TransportError when this end closed
   * it or the peer broke the protocol; null while ready.
   */
  readonly ended: Error | null;
  /** Sends the peer has room for right now (receives it has posted that no send has used). */
  readonly credits: number;
  /** Sends posted and still waiting for a credit. */
  readonly queuedSends: number;
  /**
   * True when the peer may still read a send's memory after the send completed: the in-process
   * pair hands the receiver the sender's own arrays. Absent or false when the peer has its own
   * copy by then (shared memory, TCP).
   */
  readonly sharesBuffers?: boolean;
  /** Registers memory (a size to allocate, or a buffer) for receives and, optionally, remote writes. */
  registerMemory(bytes: number | Uint8Array, options?: { remoteWrite?: boolean }): MemoryRegion;
  deregisterMemory(region: MemoryRegion): void;
  /** Posts a receive buffer: `length` bytes of `region` from `offset` (default: the rest of it). */
  postRecv(wrId: number, region: MemoryRegion, offset?: number, length?: number): void;
  /** Posts a send; it goes out when the peer has a receive posted for it. */
  postSend(wrId: number, payload: Payload, options?: { imm?: number }): void;
  /**
   * Writes into the peer's registered memory without involving its receives. With `imm`, the write
   * also consumes one of the peer's receives (a credit) and completes it as `write-imm`.
   */
  postWrite(wrId: number, payload: Payload, remote: RemoteAddress, options?: { imm?: number }): void;
  /** Closes this end: the peer sees its work flushed; local outstanding work is flushed too. */
  close(): void;
}

/** Completions of a queue pair, polled or awaited, in the order the work finished. */
export interface CompletionQueue {
  /** Takes up to `max` completions that are ready (none: an empty array). */
  poll(max?: number): Completion[];
  /** Waits for the next completion. */
  next(signal?: AbortSignal): Promise<Completion>;
  readonly size: number;
}
