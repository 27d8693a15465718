import type { Batch } from '../stream/batch.js';
import { TransportError } from './types.js';

/**
 * A batch on the wire, as a gather list (no copy of the arrays):
 * [u32 magic][u32 header bytes][header JSON][pad to 8] then dense f32, lengths i32, offsets i32,
 * values i64 and labels f32, each starting on an 8-byte boundary. The end of a stream is a
 * header-only message `{ end: true, batches }`.
 */
const MAGIC = 0x31424c53; // "SLB1"
const ZEROS = new Uint8Array(8);

interface Header {
  end?: true;
  batches?: number;
  seq: number;
  epoch: number;
  rows: number;
  dim: number;
  names: readonly string[];
  features: Batch['dense']['features'];
  keys: readonly string[];
  nnz: number;
  labels: boolean;
  cursor: Batch['end'];
}

const pad8 = (n: number): number => (8 - (n % 8)) % 8;
const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

function prefix(header: object): Uint8Array[] {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(8 + json.byteLength + pad8(json.byteLength));
  const v = new DataView(head.buffer);
  v.setUint32(0, MAGIC, true);
  v.setUint32(4, json.byteLength, true);
  head.set(json, 8);
  return [head];
}

/** A batch as a gather list for `postSend`. */
export function encodeBatch(b: Batch): Uint8Array[] {
  const header: Header = {
    seq: b.seq, epoch: b.epoch, rows: b.rows, dim: b.dense.dim, names: b.dense.names, features: b.dense.features,
    keys: b.sparse.keys, nnz: b.sparse.values.length, labels: b.labels !== null, cursor: b.end,
  };
  const out = prefix(header);
  const arrays: ArrayBufferView[] = [b.dense.data, b.sparse.lengths, b.sparse.offsets, b.sparse.values];
  if (b.labels) arrays.push(b.labels);
  for (const a of arrays) {
    if (a.byteLength > 0) out.push(bytesOf(a));
    const p = pad8(a.byteLength);
    if (p > 0) out.push(ZEROS.subarray(0, p));
  }
  return out;
}

/** The end-of-stream message. */
export function encodeEnd(batches: number): Uint8Array[] {
  return prefix({ end: true, batches });
}

/** Bytes `[offset, offset+length)` of a gather list: a view when it lies in one piece, else a copy. */
function slice(data: readonly Uint8Array[], offset: number, length: number): Uint8Array {
  if (length === 0) return new Uint8Array(0);
  let base = 0;
  for (const d of data) {
    if (offset < base + d.byteLength) {
      if (offset + length <= base + d.byteLength) return d.subarray(offset - base, offset - base + length);
      break;
    }
    base += d.byteLength;
  }
  const out = new Uint8Array(length);
  let at = 0;
  base = 0;
  for (const d of data) {
    const s = Math.max(offset - base, 0);
    const e = Math.min(offset + length - base, d.byteLength);
    if (e > s) { out.set(d.subarray(s, e), at); at += e - s; }
    base += d.byteLength;
  }
  if (at !== length) throw new TransportError(`truncated batch message: wanted ${length} bytes at ${offset}`);
  return out;
}

type Ctor<T> = { new(buffer: ArrayBufferLike, byteOffset: number, length: number): T; BYTES_PER_ELEMENT: number };

function view<T>(C: Ctor<T>, bytes: Uint8Array, copy: boolean): T {
  const n = bytes.byteLength / C.BYTES_PER_ELEMENT;
  if (!copy && bytes.byteOffset % C.BYTES_PER_ELEMENT === 0) return new C(bytes.buffer, bytes.byteOffset, n);
  const own = bytes.slice();
  return new C(own.buffer, 0, n);
}

/**
 * Decodes a message from `encodeBatch`/`encodeEnd`. With `copy` false the arrays view the
 * message's memory (the receive buffer): valid until that buffer is posted again.
 */
export function decodeBatch(data: readonly Uint8Array[], copy: boolean): Batch | { end: true; batches: number } {
  const p = slice(data, 0, 8);
  const v = new DataView(p.buffer, p.byteOffset, 8);
  if (v.getUint32(0, true) !== MAGIC) throw new TransportError('not a Sluice batch message (bad magic)');
  const hlen = v.getUint32(4, true);
  const h = JSON.parse(new TextDecoder().decode(slice(data, 8, hlen))) as Header;
  if (h.end) return { end: true, batches: h.batches! };
  let at = 8 + hlen + pad8(hlen);
  const take = (bytes: number): Uint8Array => { const s = slice(data, at, bytes); at += bytes + pad8(bytes); return s; };
  const K = h.keys.length;
  const dense = view(Float32Array, take(h.rows * h.dim * 4), copy);
  const lengths = view(Int32Array, take(K * h.rows * 4), copy);
  const offsets = view(Int32Array, take((K + 1) * 4), copy);
  const values = view(BigInt64Array, take(h.nnz * 8), copy);
  const labels = h.labels ? view(Float32Array, take(h.rows * 4), copy) : null;
  return {
    seq: h.seq, epoch: h.epoch, rows: h.rows,
    dense: { names: h.names, features: h.features, dim: h.dim, data: dense },
    sparse: { keys: h.keys, lengths, offsets, values },
    labels, end: h.cursor,
  };
}
