import { memcpyInto } from '../util/copy.js';
import type { Frame, WireSink } from './engine.js';
import { TransportError } from './types.js';

/**
 * Byte framing for stream wires (TCP, shared-memory rings): a 32-byte little-endian header
 * [magic, type, id, key, offset, imm, flags, length] then `length` bytes of payload.
 *
 * Over shared memory a credit may carry the address of its receive buffer (flag ADDR, in
 * `offset`), and a send may then arrive already placed there by the sender (flag PLACED: the
 * header names the address and length, and no payload follows).
 */
export const HEADER_BYTES = 32;
const MAGIC = 0x31434c53; // "SLC1"
const T_CREDIT = 1,
  T_SEND = 2,
  T_WRITE = 3,
  T_ACK = 4,
  T_CLOSE = 5;
const F_IMM = 1,
  F_OK = 2,
  F_ADDR = 4,
  F_PLACED = 8;

/**
 * A frame as byte pieces to write in order (the payload buffers are not copied). `placedAt`: the
 * send's bytes are already at that address of the peer's shared memory; only the header goes.
 */
export function encodeFrame(f: Frame, placedAt = -1): Uint8Array[] {
  const h = new Uint8Array(HEADER_BYTES);
  const v = new DataView(h.buffer);
  v.setUint32(0, MAGIC, true);
  let data: readonly Uint8Array[] = [];
  switch (f.type) {
    case 'credit':
      v.setUint32(4, T_CREDIT, true);
      v.setUint32(28, f.length, true);
      if (f.addr !== undefined) {
        v.setUint32(16, f.addr, true);
        v.setUint32(24, F_ADDR, true);
      }
      break;
    case 'ack':
      v.setUint32(4, T_ACK, true);
      v.setUint32(8, f.id, true);
      v.setUint32(24, f.ok ? F_OK : 0, true);
      break;
    case 'close':
      v.setUint32(4, T_CLOSE, true);
      break;
    case 'send':
    case 'write': {
      data = f.data;
      v.setUint32(4, f.type === 'send' ? T_SEND : T_WRITE, true);
      v.setUint32(8, f.id, true);
      if (f.type === 'write') {
        v.setUint32(12, f.key, true);
        v.setUint32(16, f.offset, true);
      }
      if (f.imm !== null) {
        v.setUint32(20, f.imm, true);
        v.setUint32(24, F_IMM, true);
      }
      v.setUint32(
        28,
        data.reduce((a, d) => a + d.byteLength, 0),
        true,
      );
      if (placedAt >= 0 && f.type === 'send') {
        v.setUint32(16, placedAt, true);
        v.setUint32(24, v.getUint32(24, true) | F_PLACED, true);
        data = [];
      }
      break;
    }
  }
  return [h, ...data];
}

/**
 * Parses a byte stream into frames, copying each payload straight to where the endpoint wants it
 * (the posted receive or the written region), so a message is copied once on arrival. Never keeps
 * a reference to a pushed chunk.
 */
export class FrameParser {
  private readonly header = new Uint8Array(HEADER_BYTES);
  private readonly hv = new DataView(this.header.buffer);
  private filled = 0;
  /** The frame whose payload is arriving. */
  private body: { frame: Frame; dst: Uint8Array | null; at: number; length: number } | null = null;
  private failed = false;

  /**
   * `placed`: on a shared-memory wire, says whether a send the peer placed at `addr` is where this
   * side's oldest posted receive `dst` is; without it, a placed send is a protocol error.
   */
  constructor(
    private readonly sink: WireSink,
    private readonly placed?: (dst: Uint8Array, addr: number) => boolean,
  ) {}

  push(chunk: Uint8Array): void {
    let p = 0;
    while (p < chunk.byteLength && !this.failed) {
      if (this.body === null) {
        const n = Math.min(HEADER_BYTES - this.filled, chunk.byteLength - p);
        this.header.set(chunk.subarray(p, p + n), this.filled);
        this.filled += n;
        p += n;
        if (this.filled === HEADER_BYTES) {
          this.filled = 0;
          this.onHeader();
        }
        continue;
      }
      const b = this.body;
      const n = Math.min(b.length - b.at, chunk.byteLength - p);
      if (b.dst !== null) memcpyInto(b.dst, b.at, chunk.subarray(p, p + n));
      b.at += n;
      p += n;
      if (b.at === b.length) this.finish();
    }
  }

  private onHeader(): void {
    const v = this.hv;
    if (v.getUint32(0, true) !== MAGIC) {
      this.fail('bad frame magic (not a Sluice transport peer, or a corrupt stream)');
      return;
    }
    const type = v.getUint32(4, true);
    const id = v.getUint32(8, true);
    const flags = v.getUint32(24, true);
    const length = v.getUint32(28, true);
    const imm = flags & F_IMM ? v.getUint32(20, true) : null;
    switch (type) {
      case T_CREDIT:
        this.sink.frame(flags & F_ADDR ? { type: 'credit', length, addr: v.getUint32(16, true) } : { type: 'credit', length });
        return;
      case T_ACK:
        this.sink.frame({ type: 'ack', id, ok: (flags & F_OK) !== 0 });
        return;
      case T_CLOSE:
        this.sink.frame({ type: 'close' });
        return;
      case T_SEND: {
        const dst = this.sink.place('send', length, 0, 0);
        if (dst === null) {
          this.fail(`the peer sent ${length} bytes with no receive posted that fits them`);
          return;
        }
        if (flags & F_PLACED) {
          const addr = v.getUint32(16, true);
          if (this.placed === undefined) {
            this.fail('a send placed in shared memory arrived on a byte-stream wire');
            return;
          }
          if (!this.placed(dst, addr)) {
            this.fail(`the peer placed a send at ${addr}, which is not the oldest posted receive`);
            return;
          }
          this.sink.frame({ type: 'send', id, imm, data: [], placed: dst });
          return;
        }
        this.body = { frame: { type: 'send', id, imm, data: [], placed: dst }, dst, at: 0, length };
        break;
      }
      case T_WRITE: {
        const key = v.getUint32(12, true);
        const offset = v.getUint32(16, true);
        const dst = this.sink.place('write', length, key, offset);
        // A refused write's bytes are read and dropped; the sender learns from the acknowledgement.
        this.body = { frame: { type: 'write', id, key, offset, imm, data: [], placed: dst }, dst, at: 0, length };
        break;
      }
      default:
        this.fail(`unknown frame type ${type}`);
        return;
    }
    if (length === 0) this.finish();
  }

  private finish(): void {
    const f = this.body!.frame;
    this.body = null;
    this.sink.frame(f);
  }

  private fail(message: string): void {
    this.failed = true;
    this.sink.lost(new TransportError(`protocol error: ${message}`));
  }
}
