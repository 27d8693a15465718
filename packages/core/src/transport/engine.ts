import { memcpyInto } from '../util/copy.js';
import {
  PeerClosedError,
  TransportError,
  cutShort,
  type Completion,
  type CompletionQueue,
  type MemoryRegion,
  type Payload,
  type QueuePair,
  type QueuePairState,
  type RemoteAddress,
} from './types.js';

/**
 * What travels between two endpoints. Every transport carries the same frames; only how differs
 * (object hand-off, a byte stream over a shared-memory ring, a TCP socket), so credit, ordering
 * and completion rules live once, here.
 */
export type Frame =
  /**
   * The peer posted a receive of `length` bytes: one credit. Going out, `buffer` is the posted
   * memory (a shared-memory wire names it to the peer when the peer can write there); coming in,
   * `addr` is where in the peer's shared memory this side may write the message itself.
   */
  | { type: 'credit'; length: number; buffer?: Uint8Array; addr?: number }
  /**
   * A message for the oldest posted receive. `placed`: a byte-stream wire already copied it there.
   * `addr`: the credit it uses named a receive the wire can write into directly (one copy).
   */
  | { type: 'send'; id: number; imm: number | null; data: readonly Uint8Array[]; placed?: Uint8Array; addr?: number }
  /** A one-sided write. `placed`: already copied into the region (undefined: not yet; null: refused). */
  | { type: 'write'; id: number; key: number; offset: number; imm: number | null; data: readonly Uint8Array[]; placed?: Uint8Array | null }
  /** The peer finished send/write `id` (ok = false: refused). */
  | { type: 'ack'; id: number; ok: boolean }
  /** The peer closed its end on purpose. */
  | { type: 'close' };

/** What a wire calls back into its endpoint. */
export interface WireSink {
  frame(f: Frame): void;
  /** Where a byte-stream wire should copy an incoming send/write's bytes; null: nowhere (protocol error or refused write). */
  place(type: 'send' | 'write', length: number, key: number, offset: number): Uint8Array | null;
  /** The connection is gone (peer died, socket dropped). */
  lost(reason: Error): void;
}

/** Moves frames to the peer, in order, reliably while connected. */
export interface Wire {
  start(sink: WireSink): void;
  /**
   * Memory for a region that the peer can write into directly (shared memory), or null when the
   * wire has none left; a wire without it gets private memory.
   */
  alloc?(bytes: number): Uint8Array | null;
  /** Gives back memory from `alloc`. */
  free?(bytes: Uint8Array): void;
  send(f: Frame): void;
  /** Flushes what was sent, then ends the connection. */
  close(): void;
  /** Drops the connection at once without a goodbye (what a crash looks like to the peer). */
  abort(): void;
}

class Queue implements CompletionQueue {
  private items: Completion[] = [];
  private waiters: Array<{ resolve: (c: Completion) => void; reject: (e: unknown) => void }> = [];
  private ended: Error | null = null;

  get size(): number {
    return this.items.length;
  }

  push(c: Completion): void {
    const w = this.waiters.shift();
    if (w) w.resolve(c);
    else this.items.push(c);
  }

  /** No completion will come any more: waiters on an empty queue are told so. */
  end(reason: Error): void {
    this.ended = reason;
    for (const w of this.waiters.splice(0)) w.reject(reason);
  }

  poll(max = Infinity): Completion[] {
    return this.items.splice(0, Math.min(max, this.items.length));
  }

  next(signal?: AbortSignal): Promise<Completion> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift()!);
    if (this.ended) return Promise.reject(this.ended);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const w = { resolve, reject };
      this.waiters.push(w);
      signal?.addEventListener(
        'abort',
        () => {
          this.waiters = this.waiters.filter((x) => x !== w);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
}

interface PostedRecv {
  wrId: number;
  region: MemoryRegion;
  offset: number;
  length: number;
}
interface Outgoing {
  wrId: number;
  opcode: 'send' | 'write';
  data: readonly Uint8Array[];
  bytes: number;
  imm: number | null;
  remote: RemoteAddress | null;
}

const asList = (p: Payload): readonly Uint8Array[] => (p instanceof Uint8Array ? [p] : p);
const sizeOf = (l: readonly Uint8Array[]): number => l.reduce((a, b) => a + b.byteLength, 0);

function checkImm(imm: number | undefined): number | null {
  if (imm === undefined) return null;
  if (!Number.isInteger(imm) || imm < 0 || imm > 0xffffffff) throw new TransportError(`imm must be a 32-bit unsigned integer, got ${imm}`);
  return imm;
}

function checkWrId(wrId: number): void {
  if (!Number.isSafeInteger(wrId)) throw new TransportError(`wrId must be a safe integer, got ${wrId}`);
}

/** Copies a gather list into `dst` (which is exactly its size). */
export function gather(data: readonly Uint8Array[], dst: Uint8Array): void {
  let o = 0;
  for (const d of data) {
    memcpyInto(dst, o, d);
    o += d.byteLength;
  }
}

/**
 * A queue pair over any wire. The rules: each posted receive is one credit for the peer; sends
 * (and writes with an immediate) leave in posting order, each only with a credit for a receive big
 * enough; a too-big send completes `length-error` and keeps the credit; a send or write completes
 * at the sender when the peer acknowledges it; when either side goes away, all unfinished work on
 * both sides completes `flushed`.
 */
export class Endpoint implements QueuePair {
  readonly cq: CompletionQueue;
  private readonly q = new Queue();
  private _state: QueuePairState = 'ready';
  private _ended: Error | null = null;
  private readonly regions = new Map<number, MemoryRegion>();
  private nextKey = 1;
  private readonly recvs: PostedRecv[] = [];
  /** The receives the peer has posted and no send has used yet, oldest first: their lengths, and where the wire may place a message directly (-1: it may not). */
  private readonly credit: Array<{ length: number; addr: number }> = [];
  /** Regions whose memory came from the wire. */
  private readonly wireOwned = new Set<MemoryRegion>();
  private readonly waiting: Outgoing[] = [];
  private readonly unacked = new Map<number, Outgoing>();
  private nextId = 1;

  constructor(
    private readonly wire: Wire,
    private readonly zeroCopy = false,
  ) {
    this.cq = this.q;
    wire.start({
      frame: (f) => this.onFrame(f),
      place: (type, length, key, offset) => this.place(type, length, key, offset),
      lost: (e) => this.fail('error', e),
    });
  }

  get state(): QueuePairState {
    return this._state;
  }
  get ended(): Error | null {
    return this._ended;
  }
  get credits(): number {
    return this.credit.length;
  }
  get queuedSends(): number {
    return this.waiting.length;
  }
  get sharesBuffers(): boolean {
    return this.zeroCopy;
  }

  registerMemory(bytes: number | Uint8Array, options: { remoteWrite?: boolean } = {}): MemoryRegion {
    let buf: Uint8Array;
    let fromWire = false;
    if (typeof bytes === 'number') {
      if (!Number.isSafeInteger(bytes) || bytes < 0) throw new TransportError(`region size must be a non-negative integer, got ${bytes}`);
      // Memory the peer can reach lets a send land in a receive with one copy; else private memory.
      const shared = bytes > 0 ? (this.wire.alloc?.(bytes) ?? null) : null;
      fromWire = shared !== null;
      buf = shared ?? new Uint8Array(bytes);
    } else buf = bytes;
    const region: MemoryRegion = { key: this.nextKey++, bytes: buf, remoteWrite: options.remoteWrite ?? false };
    this.regions.set(region.key, region);
    if (fromWire) this.wireOwned.add(region);
    return region;
  }

  deregisterMemory(region: MemoryRegion): void {
    if (this.recvs.some((r) => r.region === region)) throw new TransportError(`region ${region.key} still has posted receives`);
    this.regions.delete(region.key);
    if (this.wireOwned.delete(region)) this.wire.free?.(region.bytes);
  }

  postRecv(wrId: number, region: MemoryRegion, offset = 0, length?: number): void {
    this.checkReady();
    checkWrId(wrId);
    if (this.regions.get(region.key) !== region) throw new TransportError(`region ${region.key} is not registered with this queue pair`);
    const len = length ?? region.bytes.byteLength - offset;
    if (!Number.isInteger(offset) || !Number.isInteger(len) || offset < 0 || len < 0 || offset + len > region.bytes.byteLength) {
      throw new TransportError(`receive [${offset}, ${offset + len}) is outside region ${region.key} of ${region.bytes.byteLength} bytes`);
    }
    this.recvs.push({ wrId, region, offset, length: len });
    this.wire.send({ type: 'credit', length: len, buffer: region.bytes.subarray(offset, offset + len) });
  }

  postSend(wrId: number, payload: Payload, options: { imm?: number } = {}): void {
    this.checkReady();
    checkWrId(wrId);
    const data = asList(payload);
    this.waiting.push({ wrId, opcode: 'send', data, bytes: sizeOf(data), imm: checkImm(options.imm), remote: null });
    this.pump();
  }

  postWrite(wrId: number, payload: Payload, remote: RemoteAddress, options: { imm?: number } = {}): void {
    this.checkReady();
    checkWrId(wrId);
    if (!Number.isInteger(remote.key) || !Number.isInteger(remote.offset) || remote.offset < 0)
      throw new TransportError(`bad remote address ${JSON.stringify(remote)}`);
    const data = asList(payload);
    const op: Outgoing = { wrId, opcode: 'write', data, bytes: sizeOf(data), imm: checkImm(options.imm), remote };
    // A plain write needs no receive on the peer, so it does not wait behind sends short of credit.
    if (op.imm === null) this.transmit(op);
    else {
      this.waiting.push(op);
      this.pump();
    }
  }

  close(): void {
    if (this._state !== 'ready') return;
    this.wire.send({ type: 'close' });
    this.wire.close();
    this.fail('closed', new TransportError('queue pair closed'));
  }

  /** Drops the connection without a goodbye, as a crashed process would (for tests and supervisors). */
  abandon(): void {
    if (this._state !== 'ready') return;
    this.wire.abort();
    this.fail('closed', new TransportError('queue pair abandoned'));
  }

  private checkReady(): void {
    if (this._state !== 'ready') throw cutShort(this._ended, `queue pair is ${this._state === 'closed' ? 'closed' : 'disconnected (the peer went away)'}`);
  }

  /** Sends what has credit, strictly in posting order. */
  private pump(): void {
    while (this.waiting.length > 0 && this.credit.length > 0) {
      const op = this.waiting[0]!;
      // A write with an immediate consumes a receive but places its bytes by address.
      const need = op.opcode === 'send' ? op.bytes : 0;
      if (need > this.credit[0]!.length) {
        this.waiting.shift();
        this.q.push({ wrId: op.wrId, opcode: op.opcode, status: 'length-error', byteLength: 0 });
        continue;
      }
      this.waiting.shift();
      const { addr } = this.credit.shift()!;
      this.transmit(op, addr);
    }
  }

  private transmit(op: Outgoing, addr = -1): void {
    const id = this.nextId++;
    this.unacked.set(id, op);
    if (op.opcode === 'send') this.wire.send({ type: 'send', id, imm: op.imm, data: op.data, ...(addr >= 0 ? { addr } : {}) });
    else this.wire.send({ type: 'write', id, key: op.remote!.key, offset: op.remote!.offset, imm: op.imm, data: op.data });
  }

  private writable(key: number, offset: number, length: number): MemoryRegion | null {
    const r = this.regions.get(key);
    return r !== undefined && r.remoteWrite && offset + length <= r.bytes.byteLength ? r : null;
  }

  private place(type: 'send' | 'write', length: number, key: number, offset: number): Uint8Array | null {
    if (type === 'write') {
      const r = this.writable(key, offset, length);
      return r === null ? null : r.bytes.subarray(offset, offset + length);
    }
    const r = this.recvs[0];
    if (r === undefined || length > r.length) return null;
    return r.region.bytes.subarray(r.offset, r.offset + length);
  }

  private onFrame(f: Frame): void {
    if (this._state !== 'ready') return;
    switch (f.type) {
      case 'credit':
        this.credit.push({ length: f.length, addr: f.addr ?? -1 });
        this.pump();
        return;
      case 'send': {
        const r = this.recvs.shift();
        if (r === undefined) {
          this.protocol('the peer sent without a credit');
          return;
        }
        let data: readonly Uint8Array[];
        let bytes: number;
        if (f.placed !== undefined) {
          data = [f.placed];
          bytes = f.placed.byteLength;
        } else {
          bytes = sizeOf(f.data);
          if (bytes > r.length) {
            this.protocol(`the peer sent ${bytes} bytes into a ${r.length}-byte receive`);
            return;
          }
          if (this.zeroCopy) data = f.data;
          else {
            const dst = r.region.bytes.subarray(r.offset, r.offset + bytes);
            gather(f.data, dst);
            data = [dst];
          }
        }
        this.q.push({ wrId: r.wrId, opcode: 'recv', status: 'success', byteLength: bytes, data, ...(f.imm !== null ? { imm: f.imm } : {}) });
        this.wire.send({ type: 'ack', id: f.id, ok: true });
        return;
      }
      case 'write': {
        let ok: boolean;
        let bytes = 0;
        if (f.placed !== undefined) {
          ok = f.placed !== null;
          bytes = f.placed?.byteLength ?? 0;
        } else {
          bytes = sizeOf(f.data);
          const r = this.writable(f.key, f.offset, bytes);
          ok = r !== null;
          if (r !== null) gather(f.data, r.bytes.subarray(f.offset, f.offset + bytes));
        }
        if (f.imm !== null) {
          // The sender spent a credit on it, so a refused write-with-immediate still uses the receive.
          const r = this.recvs.shift();
          if (r === undefined) {
            this.protocol('the peer wrote with an immediate without a credit');
            return;
          }
          this.q.push({ wrId: r.wrId, opcode: 'write-imm', status: ok ? 'success' : 'remote-access-error', byteLength: ok ? bytes : 0, imm: f.imm });
        }
        this.wire.send({ type: 'ack', id: f.id, ok });
        return;
      }
      case 'ack': {
        const op = this.unacked.get(f.id);
        if (op === undefined) {
          this.protocol(`acknowledgement for unknown work ${f.id}`);
          return;
        }
        this.unacked.delete(f.id);
        this.q.push({
          wrId: op.wrId,
          opcode: op.opcode,
          status: f.ok ? 'success' : 'remote-access-error',
          byteLength: f.ok ? op.bytes : 0,
          ...(op.imm !== null ? { imm: op.imm } : {}),
        });
        return;
      }
      case 'close':
        this.wire.close();
        this.fail('error', new PeerClosedError('the peer closed the connection'));
        return;
    }
  }

  private protocol(message: string): void {
    this.wire.abort();
    this.fail('error', new TransportError(`protocol error: ${message}`));
  }

  /** Ends the queue pair: everything unfinished completes `flushed`, in posting order per kind. */
  private fail(state: QueuePairState, reason: Error): void {
    if (this._state !== 'ready') return;
    this._state = state;
    this._ended = reason;
    const flushed = (wrId: number, opcode: Completion['opcode']): Completion => ({ wrId, opcode, status: 'flushed', byteLength: 0 });
    for (const op of this.unacked.values()) this.q.push(flushed(op.wrId, op.opcode));
    for (const op of this.waiting) this.q.push(flushed(op.wrId, op.opcode));
    for (const r of this.recvs) this.q.push(flushed(r.wrId, 'recv'));
    this.unacked.clear();
    this.waiting.length = 0;
    this.recvs.length = 0;
    this.credit.length = 0;
    this.q.end(reason);
  }
}
