import { tableToIPC } from 'apache-arrow';
import { unpack } from 'msgpackr';
import { batchToArrow } from '../output/batch-arrow.js';
import type { Batch, BatchLayout } from '../batch/index.js';

/** What a body carries of a batch: everything but its resume cursor and `release`. */
export type BatchBody = Pick<Batch, 'seq' | 'epoch' | 'rows' | 'dense' | 'sparse' | 'labels'>;

export const ARROW_STREAM = 'application/vnd.apache.arrow.stream';
export const MSGPACK = 'application/msgpack';
export type BodyFormat = typeof ARROW_STREAM | typeof MSGPACK;

const bin = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * A batch as MessagePack for clients in any language: standard maps, little-endian binary
 * arrays, lengths key-major (`lengths[k*B + r]`).
 *
 * Every binary array starts on a multiple of 8 bytes from the start of the body, so a client that
 * reads the body into its own buffer can view the arrays as Float32Array / BigInt64Array (or
 * numpy arrays) without copying them. MessagePack has no padding, so the few bytes needed go into
 * wider encodings of three short strings before each array (str8/str16/str32 instead of fixstr),
 * which every decoder reads as the same strings.
 *
 * @example
 * res.end(batchToMsgpack(batch)); // unpack(body).dense.data: 8-aligned Uint8Array view
 */
export function batchToMsgpack(b: BatchBody): Uint8Array {
  const B = b.rows;
  const w = new MsgpackWriter();
  w.map(6);
  w.str('seq');
  w.uint(b.seq);
  w.str('epoch');
  w.uint(b.epoch);
  w.str('rows');
  w.uint(B);
  w.str('dense');
  w.map(4);
  w.str('names');
  w.array(b.dense.names.length);
  for (const n of b.dense.names) w.str(n);
  w.alignedArray(['shape', null, 'dtype', 'float32'], [B, b.dense.dim], bin(b.dense.data));
  w.str('sparse');
  w.map(3);
  w.str('keys');
  w.array(b.sparse.keys.length);
  for (const k of b.sparse.keys) w.str(k);
  w.str('lengths');
  w.map(3);
  w.alignedArray(['dtype', 'int32', 'shape', null], [b.sparse.keys.length * B], bin(b.sparse.lengths));
  w.str('values');
  w.map(3);
  w.alignedArray(['dtype', 'int64', 'shape', null], [b.sparse.values.length], bin(b.sparse.values));
  w.str('labels');
  if (b.labels === null) w.nil();
  else {
    w.map(3);
    w.alignedArray(['dtype', 'float32', 'shape', null], [B], bin(b.labels));
  }
  return w.finish();
}

const utf8 = new TextEncoder();

/** Just the MessagePack this module writes: maps, arrays, unsigned ints, strings, nil and bin. */
class MsgpackWriter {
  private readonly parts: Uint8Array[] = [];
  private head = new Uint8Array(1024);
  private hv = new DataView(this.head.buffer);
  private n = 0;
  /** Bytes written so far, parts and head together. */
  private pos = 0;

  private room(k: number): void {
    if (this.n + k <= this.head.byteLength) return;
    const grown = new Uint8Array(Math.max(this.head.byteLength * 2, this.n + k));
    grown.set(this.head.subarray(0, this.n));
    this.head = grown;
    this.hv = new DataView(grown.buffer);
  }

  private u8(x: number): void {
    this.room(1);
    this.head[this.n++] = x;
    this.pos++;
  }
  private be16(x: number): void {
    this.room(2);
    this.hv.setUint16(this.n, x);
    this.n += 2;
    this.pos += 2;
  }
  private be32(x: number): void {
    this.room(4);
    this.hv.setUint32(this.n, x);
    this.n += 4;
    this.pos += 4;
  }
  private bytes(x: Uint8Array): void {
    this.room(x.byteLength);
    this.head.set(x, this.n);
    this.n += x.byteLength;
    this.pos += x.byteLength;
  }

  map(size: number): void {
    this.u8(0x80 | size);
  } // fixmap: this module's maps have at most 15 entries
  nil(): void {
    this.u8(0xc0);
  }

  array(size: number): void {
    if (size < 16) this.u8(0x90 | size);
    else if (size < 0x10000) {
      this.u8(0xdc);
      this.be16(size);
    } else {
      this.u8(0xdd);
      this.be32(size);
    }
  }

  uint(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`not an unsigned integer: ${v}`);
    if (v < 0x80) this.u8(v);
    else if (v < 0x100) {
      this.u8(0xcc);
      this.u8(v);
    } else if (v < 0x10000) {
      this.u8(0xcd);
      this.be16(v);
    } else if (v < 2 ** 32) {
      this.u8(0xce);
      this.be32(v);
    } else {
      this.u8(0xcf);
      this.be32(Math.floor(v / 2 ** 32));
      this.be32(v >>> 0);
    }
  }

  /** A string; `wider` 1, 2 or 4 writes a short one as str8, str16 or str32 (that many bytes more than fixstr). */
  str(s: string, wider: 0 | 1 | 2 | 4 = 0): void {
    const b = utf8.encode(s);
    const len = b.byteLength;
    if (wider === 0 && len < 32) this.u8(0xa0 | len);
    else if ((wider === 0 || wider === 1) && len < 0x100) {
      this.u8(0xd9);
      this.u8(len);
    } else if ((wider === 0 || wider === 2) && len < 0x10000) {
      this.u8(0xda);
      this.be16(len);
    } else {
      this.u8(0xdb);
      this.be32(len);
    }
    this.bytes(b);
  }

  /**
   * The entries of an array's map: `entries` are two key/value pairs of short strings in order, a
   * null value standing for `shape`; then `data` as bin32 starting on a multiple of 8 bytes.
   */
  alignedArray(entries: readonly [string, string | null, string, string | null], shape: readonly number[], data: Uint8Array): void {
    const strings = entries.filter((e): e is string => e !== null);
    let before = 0;
    for (const s of strings) before += 1 + utf8.encode(s).byteLength;
    before += shapeBytes(shape) + 5 + 5; // the shape array, fixstr "data", the bin32 header
    const pad = (8 - ((this.pos + before) % 8)) % 8;
    // The padding, bit by bit, as wider encodings of the first three strings.
    const wider: Array<0 | 1 | 2 | 4> = [pad & 1 ? 1 : 0, pad & 2 ? 2 : 0, pad & 4 ? 4 : 0, 0];
    let i = 0;
    for (const e of entries) {
      if (e === null) {
        this.array(shape.length);
        for (const d of shape) this.uint(d);
      } else this.str(e, wider[i++]!);
    }
    this.str('data');
    this.u8(0xc6);
    this.be32(data.byteLength);
    if (this.pos % 8 !== 0) throw new Error(`internal: msgpack bin at ${this.pos} is not 8-aligned`);
    this.parts.push(this.head.slice(0, this.n));
    this.n = 0;
    this.parts.push(data);
    this.pos += data.byteLength;
  }

  /** The message as one buffer. */
  finish(): Uint8Array {
    this.parts.push(this.head.subarray(0, this.n));
    const out = new Uint8Array(this.pos);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.byteLength;
    }
    return out;
  }
}

function shapeBytes(shape: readonly number[]): number {
  let n = shape.length < 16 ? 1 : shape.length < 0x10000 ? 3 : 5;
  for (const v of shape) n += v < 0x80 ? 1 : v < 0x100 ? 2 : v < 0x10000 ? 3 : v < 2 ** 32 ? 5 : 9;
  return n;
}

/**
 * A batch as an Arrow IPC stream, one column per feature (what `sluice run` writes).
 *
 * @example
 * res.end(batchToArrowStream(batch, plan.label));
 */
export function batchToArrowStream(b: BatchBody, labelName: string | null): Uint8Array {
  // batchToArrow reads the arrays and the layout only, never the cursor.
  return tableToIPC(batchToArrow(b as Batch, labelName), 'stream');
}

/** A msgpack body as batchToMsgpack writes it. */
interface MsgpackBody {
  seq: number;
  epoch: number;
  rows: number;
  dense: { names: string[]; shape: [number, number]; data: Uint8Array };
  sparse: { keys: string[]; lengths: { data: Uint8Array }; values: { data: Uint8Array } };
  labels: { data: Uint8Array } | null;
}

/**
 * The batch a `batchToMsgpack` body holds, its arrays viewing the body where they are aligned
 * (a body read into a buffer of its own is) and copied where not; `layout` gives the dense
 * features, which the body does not carry. The server makes a batch's Arrow body from its msgpack one.
 *
 * @example
 * batchToArrowStream(batchFromMsgpack(await body.read(), info.layout), plan.label);
 */
export function batchFromMsgpack(body: Uint8Array, layout: BatchLayout): BatchBody {
  const m = unpack(Buffer.from(body.buffer, body.byteOffset, body.byteLength)) as MsgpackBody;
  const rows = m.rows;
  const lengths = view(m.sparse.lengths.data, Int32Array);
  const keys = m.sparse.keys.length;
  const offsets = new Int32Array(keys + 1);
  for (let k = 0; k < keys; k++) {
    let n = 0;
    for (let r = 0; r < rows; r++) n += lengths[k * rows + r]!;
    offsets[k + 1] = offsets[k]! + n;
  }
  return {
    seq: m.seq,
    epoch: m.epoch,
    rows,
    dense: { names: m.dense.names, features: layout.dense, dim: m.dense.shape[1], data: view(m.dense.data, Float32Array) },
    sparse: { keys: m.sparse.keys, lengths, offsets, values: view(m.sparse.values.data, BigInt64Array) },
    labels: m.labels === null ? null : view(m.labels.data, Float32Array),
  };
}

type Typed<T> = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): T; readonly BYTES_PER_ELEMENT: number };

/** `bin` as a typed array: a view where it is aligned, else a copy. */
function view<T>(bin: Uint8Array, C: Typed<T>): T {
  const n = bin.byteLength / C.BYTES_PER_ELEMENT;
  if (bin.byteOffset % C.BYTES_PER_ELEMENT === 0) return new C(bin.buffer, bin.byteOffset, n);
  return new C(bin.slice().buffer, 0, n);
}

/**
 * Picks the body format from an Accept header: Arrow unless msgpack is preferred (by order or
 * q-value); null when the header accepts neither. Media types and the `q` parameter are matched
 * without regard to case, as HTTP has them (RFC 9110 §8.3.1, §12.4.2).
 */
export function negotiate(accept: string | undefined): BodyFormat | null {
  if (accept === undefined || accept.trim() === '') return ARROW_STREAM;
  let best: BodyFormat | null = null;
  let bestQ = 0;
  for (const part of accept.split(',')) {
    const [type, ...params] = part
      .trim()
      .toLowerCase()
      .split(';')
      .map((s) => s.trim());
    const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? 1);
    let f: BodyFormat | null = null;
    if (type === MSGPACK || type === 'application/x-msgpack') f = MSGPACK;
    else if (type === ARROW_STREAM || type === '*/*' || type === 'application/*') f = ARROW_STREAM;
    if (f !== null && Number.isFinite(q) && q > bestQ) {
      best = f;
      bestQ = q;
    }
  }
  return best;
}
