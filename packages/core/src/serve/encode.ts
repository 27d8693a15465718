import { tableToIPC } from 'apache-arrow';
import { pack } from 'msgpackr';
import { batchToArrow } from '../io/batch-arrow.js';
import type { Batch } from '../stream/batch.js';

export const ARROW_STREAM = 'application/vnd.apache.arrow.stream';
export const MSGPACK = 'application/msgpack';
export type BodyFormat = typeof ARROW_STREAM | typeof MSGPACK;

const bin = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * A batch as MessagePack for clients in any language: standard maps, little-endian binary
 * arrays, lengths key-major (`lengths[k*B + r]`).
 */
export function batchToMsgpack(b: Batch): Uint8Array {
  const B = b.rows;
  return pack({
    seq: b.seq,
    epoch: b.epoch,
    rows: B,
    dense: { names: b.dense.names, shape: [B, b.dense.dim], dtype: 'float32', data: bin(b.dense.data) },
    sparse: {
      keys: b.sparse.keys,
      lengths: { dtype: 'int32', shape: [b.sparse.keys.length * B], data: bin(b.sparse.lengths) },
      values: { dtype: 'int64', shape: [b.sparse.values.length], data: bin(b.sparse.values) },
    },
    labels: b.labels === null ? null : { dtype: 'float32', shape: [B], data: bin(b.labels) },
  });
}

/** A batch as an Arrow IPC stream, one column per feature (what `sluice run` writes). */
export function batchToArrowStream(b: Batch, labelName: string | null): Uint8Array {
  return tableToIPC(batchToArrow(b, labelName), 'stream');
}

/**
 * Picks the body format from an Accept header: Arrow unless msgpack is preferred (by order or
 * q-value); null when the header accepts neither.
 */
export function negotiate(accept: string | undefined): BodyFormat | null {
  if (accept === undefined || accept.trim() === '') return ARROW_STREAM;
  let best: BodyFormat | null = null;
  let bestQ = 0;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.trim().split(';').map((s) => s.trim());
    const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? 1);
    let f: BodyFormat | null = null;
    if (type === MSGPACK || type === 'application/x-msgpack') f = MSGPACK;
    else if (type === ARROW_STREAM || type === '*/*' || type === 'application/*') f = ARROW_STREAM;
    if (f !== null && Number.isFinite(q) && q > bestQ) { best = f; bestQ = q; }
  }
  return best;
}
