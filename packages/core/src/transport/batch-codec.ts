import type { IteratorState } from '../pipeline/pipeline.js';
import type { Batch } from '../batch/index.js';
import { TransportError } from './types.js';

/**
 * A batch on the wire, as a gather list (no copy of the arrays):
 * [u32 magic][u32 header bytes][header JSON][pad to 8] then dense f32, lengths i32, offsets i32,
 * values i64 and labels f32, each starting on an 8-byte boundary. The header may carry `resume`,
 * the pipeline state after the batch (where a run resumed from it starts). The end of a stream is
 * a header-only message `{ end: true, batches }`; a sender whose source failed says so with a
 * header-only `{ error }`.
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
  resume?: IteratorState;
  error?: string;
}

const pad8 = (n: number): number => (8 - (n % 8)) % 8;
const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

const utf8 = new TextEncoder();

function prefix(header: object): Uint8Array[] {
  return [headerBytesOf(utf8.encode(JSON.stringify(header)))];
}

/** [magic][length][JSON][pad to 8] around `json`, given as its UTF-8 parts in order. */
function headerBytesOf(...json: Uint8Array[]): Uint8Array {
  const n = json.reduce((a, j) => a + j.byteLength, 0);
  const head = new Uint8Array(8 + n + pad8(n));
  const v = new DataView(head.buffer);
  v.setUint32(0, MAGIC, true);
  v.setUint32(4, n, true);
  let at = 8;
  for (const j of json) {
    head.set(j, at);
    at += j.byteLength;
  }
  return head;
}

interface Layout {
  readonly names: readonly string[];
  readonly features: Batch['dense']['features'];
  readonly keys: readonly string[];
}

/** A layout's fields as the tail of a header: its JSON without the opening brace, as UTF-8. */
const layoutJson = (l: Layout): Uint8Array => utf8.encode(JSON.stringify({ names: l.names, features: l.features, keys: l.keys }).slice(1));

/**
 * The header fields that stay the same across a pipeline's batches (names, features, keys: about
 * 1 KB of JSON for RM1), as UTF-8, for the last layout seen. A pipeline's batches share these
 * arrays, so their identity finds the text; writing it anew was most of the time a batch's header
 * took, on the shared-memory path where per-batch overhead counts.
 */
let layoutText: (Layout & { readonly bytes: Uint8Array }) | null = null;

function layoutBytes(b: Batch): Uint8Array {
  const l = layoutText;
  if (l !== null && l.names === b.dense.names && l.features === b.dense.features && l.keys === b.sparse.keys) return l.bytes;
  const layout = { names: b.dense.names, features: b.dense.features, keys: b.sparse.keys };
  layoutText = { ...layout, bytes: layoutJson(layout) };
  return layoutText.bytes;
}

/** A batch as a gather list for `postSend`; `resume`: the pipeline state after it, if known. */
export function encodeBatch(b: Batch, resume?: IteratorState): Uint8Array[] {
  // The header JSON: the batch's own fields, then the layout's (which close the object).
  const own: Omit<Header, 'names' | 'features' | 'keys'> = {
    seq: b.seq,
    epoch: b.epoch,
    rows: b.rows,
    dim: b.dense.dim,
    nnz: b.sparse.values.length,
    labels: b.labels !== null,
    cursor: b.end,
    ...(resume !== undefined ? { resume } : {}),
  };
  const text = JSON.stringify(own);
  const out = [headerBytesOf(utf8.encode(text.slice(0, -1) + ','), layoutBytes(b))];
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

/** A trainer's first message on a feed connection: where it wants the batches to start (null: the beginning). */
export function encodeHello(resume: IteratorState | null): Uint8Array[] {
  return prefix({ hello: 1, resume });
}

/** The resume state of a hello message (null: from the beginning); throws on anything else. */
export function decodeHello(data: readonly Uint8Array[]): IteratorState | null {
  const h = readHeader(data).h as { hello?: unknown; resume?: unknown };
  if (h.hello !== 1) throw new TransportError('the trainer did not start with a feed hello (is it connectFeed?)');
  const r = h.resume;
  if (r === null || r === undefined) return null;
  const s = r as Record<string, unknown>;
  const int = (k: string): boolean => Number.isSafeInteger(s[k]) && (s[k] as number) >= 0;
  if (
    typeof r !== 'object' ||
    s.version !== 1 ||
    !['epoch', 'window', 'offset', 'seq'].every(int) ||
    typeof s.fingerprint !== 'string' ||
    !(s.seed === null || Number.isSafeInteger(s.seed))
  ) {
    throw new TransportError(`the trainer's resume state is malformed: ${JSON.stringify(r).slice(0, 200)}`);
  }
  return r as IteratorState;
}

/** The message a sender whose batches failed sends instead of the end of the stream. */
export function encodeError(message: string): Uint8Array[] {
  return prefix({ error: message });
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
    if (e > s) {
      out.set(d.subarray(s, e), at);
      at += e - s;
    }
    base += d.byteLength;
  }
  if (at !== length) throw new TransportError(`truncated batch message: wanted ${length} bytes at ${offset}`);
  return out;
}

type Ctor<T> = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): T; BYTES_PER_ELEMENT: number };

function view<T>(C: Ctor<T>, bytes: Uint8Array, copy: boolean): T {
  const n = bytes.byteLength / C.BYTES_PER_ELEMENT;
  if (!copy && bytes.byteOffset % C.BYTES_PER_ELEMENT === 0) return new C(bytes.buffer, bytes.byteOffset, n);
  // A copy of its own at offset 0 (not `bytes.slice()`: on a Node Buffer that is a view, not a copy).
  const own = new Uint8Array(bytes);
  return new C(own.buffer, 0, n);
}

function headerBytes(data: readonly Uint8Array[]): number {
  const p = slice(data, 0, 8);
  const v = new DataView(p.buffer, p.byteOffset, 8);
  if (v.getUint32(0, true) !== MAGIC) throw new TransportError('not a Sluice batch message (bad magic)');
  return v.getUint32(4, true);
}

const utf8Decoder = new TextDecoder();

/** The message's header JSON, parsed, its length in bytes, and the bytes themselves. */
function readHeader(data: readonly Uint8Array[]): { h: unknown; hlen: number; bytes: Uint8Array } {
  const hlen = headerBytes(data);
  const bytes = slice(data, 8, hlen);
  const h = parseLayoutOnce(bytes) ?? parseJson(bytes);
  return { h, hlen, bytes };
}

function parseJson(bytes: Uint8Array): unknown {
  const text = utf8Decoder.decode(bytes);
  try {
    return JSON.parse(text);
  } catch {
    throw new TransportError(`a batch message whose header is not JSON: ${text.slice(0, 80)}`);
  }
}

/**
 * The receiving side of `layoutBytes`: the layout part of the last batch header parsed (its UTF-8
 * text, which ends the header, and the arrays it parsed to). A header that ends with the same
 * bytes after a comma is the batch's own fields plus that layout, so only the ~150 bytes of its
 * own fields are parsed, and every batch of a stream shares one `names`, `features` and `keys`,
 * as a pipeline's own batches do. Parsing the whole ~1 KB header made garbage on every batch,
 * and a receiver's scavenges stall the sender waiting for its credits.
 */
let layoutSeen: (Layout & { readonly bytes: Uint8Array }) | null = null;
const COMMA = 0x2c;

function parseLayoutOnce(bytes: Uint8Array): unknown {
  const l = layoutSeen;
  if (l === null) return null;
  const cut = layoutCut(bytes, l.bytes);
  if (cut < 0) return null;
  let own: unknown;
  try {
    own = JSON.parse(`${utf8Decoder.decode(bytes.subarray(0, cut - 1))}}`);
  } catch {
    return null; // the bytes matched inside a string, say: the whole header is parsed instead
  }
  if (typeof own !== 'object' || own === null || Array.isArray(own)) return null;
  return Object.assign(own, { names: l.names, features: l.features, keys: l.keys });
}

/**
 * Where the header `bytes` ends its own fields when it ends with `layout` after a comma, as
 * `encodeBatch` writes it: the layout's start; else -1.
 */
function layoutCut(bytes: Uint8Array, layout: Uint8Array): number {
  const cut = bytes.byteLength - layout.byteLength;
  if (cut < 2 || bytes[cut - 1] !== COMMA) return -1;
  for (let i = layout.byteLength - 1; i >= 0; i--) if (bytes[cut + i] !== layout[i]) return -1;
  return cut;
}

/** Remembers a batch header's layout for `parseLayoutOnce`, when the header ends with it as `encodeBatch` writes it. */
function learnLayout(bytes: Uint8Array, h: Header): void {
  if (!Array.isArray(h.names) || !Array.isArray(h.keys) || !Array.isArray(h.features)) return;
  const layout = { names: h.names, features: h.features, keys: h.keys };
  const text = layoutJson(layout);
  if (layoutCut(bytes, text) >= 0) layoutSeen = { ...layout, bytes: text };
}

/** A decoded message: a batch (with the resume state after it, when the sender knew it), the end of the stream, or the sender's failure. */
export type BatchMessage =
  { kind: 'batch'; batch: Batch; resume: IteratorState | null } | { kind: 'end'; batches: number } | { kind: 'error'; message: string };

/**
 * Decodes a message from `encodeBatch`/`encodeEnd`. With `copy` false the arrays view the
 * message's memory (the receive buffer): valid until that buffer is posted again.
 */
export function decodeBatch(data: readonly Uint8Array[], copy: boolean): Batch | { end: true; batches: number } {
  const m = decodeBatchMessage(data, copy);
  if (m.kind === 'error') throw new TransportError(`the sender failed: ${m.message}`);
  return m.kind === 'end' ? { end: true, batches: m.batches } : m.batch;
}

/** `decodeBatch`, with the resume state and a sender's failure as data. */
export function decodeBatchMessage(data: readonly Uint8Array[], copy: boolean): BatchMessage {
  const { h: header, hlen, bytes } = readHeader(data);
  const h = header as Header;
  if (h.end) return { kind: 'end', batches: h.batches! };
  if (typeof h.error === 'string') return { kind: 'error', message: h.error };
  if (h.names !== layoutSeen?.names) learnLayout(bytes, h);
  let at = 8 + hlen + pad8(hlen);
  const take = (bytes: number): Uint8Array => {
    const s = slice(data, at, bytes);
    at += bytes + pad8(bytes);
    return s;
  };
  const K = h.keys.length;
  const dense = view(Float32Array, take(h.rows * h.dim * 4), copy);
  const lengths = view(Int32Array, take(K * h.rows * 4), copy);
  const offsets = view(Int32Array, take((K + 1) * 4), copy);
  const values = view(BigInt64Array, take(h.nnz * 8), copy);
  const labels = h.labels ? view(Float32Array, take(h.rows * 4), copy) : null;
  const batch: Batch = {
    seq: h.seq,
    epoch: h.epoch,
    rows: h.rows,
    dense: { names: h.names, features: h.features, dim: h.dim, data: dense },
    sparse: { keys: h.keys, lengths, offsets, values },
    labels,
    end: h.cursor,
  };
  return { kind: 'batch', batch, resume: h.resume ?? null };
}
