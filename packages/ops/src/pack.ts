import type { Column, PrimitiveColumn } from './column.js';

/**
 * Columns packed into one ArrayBuffer plus a small JSON descriptor, so a chunk crosses a thread
 * (or a socket) as a single transfer instead of a structured clone of many arrays.
 */
export interface PackedColumns {
  readonly desc: ReadonlyArray<[string, ColumnDesc]>;
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
}

type ArrDesc = [offset: number, length: number];

export type ColumnDesc =
  | { t: 'int32' | 'int64' | 'float32' | 'float64'; v: ArrDesc; m: ArrDesc | null }
  | { t: 'utf8'; o: ArrDesc; d: ArrDesc; m: ArrDesc | null }
  | { t: 'list'; o: ArrDesc; c: ColumnDesc; m: ArrDesc | null }
  | { t: 'fixed'; s: number; v: ArrDesc; m: ArrDesc | null };

type View = Int32Array | BigInt64Array | Float32Array | Float64Array | Uint8Array;

/**
 * Packs columns into one buffer (8-byte aligned arrays). Copies once. With `shared`, the buffer is
 * a SharedArrayBuffer: the sender keeps it readable after posting (e.g. to retry a task), and
 * `reuse(bytes)` may hand back a recycled one of at least that size (its tail is left as is).
 */
export function packColumns(columns: ReadonlyMap<string, Column>, shared = false, reuse?: (bytes: number) => SharedArrayBuffer | undefined): PackedColumns {
  const parts: View[] = [];
  let size = 0;
  const add = (a: View): ArrDesc => {
    size = (size + 7) & ~7;
    const at = size;
    parts.push(a);
    size += a.byteLength;
    return [at, a.length];
  };
  const mask = (m: Uint8Array | null): ArrDesc | null => (m === null ? null : add(m));
  const describe = (c: Column): ColumnDesc => {
    switch (c.type) {
      case 'utf8': {
        // Rebase offsets so the packed data starts at byte 0.
        const n = c.offsets.length - 1;
        const b0 = c.offsets[0]!;
        let offsets = c.offsets;
        if (b0 !== 0) {
          offsets = new Int32Array(n + 1);
          for (let i = 0; i <= n; i++) offsets[i] = c.offsets[i]! - b0;
        }
        return { t: 'utf8', o: add(offsets), d: add(c.data.subarray(b0, c.offsets[n]!)), m: mask(c.valid) };
      }
      case 'list':
        return { t: 'list', o: add(c.offsets), c: describe(c.child), m: mask(c.valid) };
      case 'fixed':
        return { t: 'fixed', s: c.size, v: add(c.values), m: mask(c.valid) };
      default:
        return { t: c.type, v: add(c.values), m: mask(c.valid) };
    }
  };
  const desc = [...columns].map(([name, c]) => [name, describe(c)] as [string, ColumnDesc]);
  const bytesNeeded = (size + 7) & ~7;
  const buffer = shared ? (reuse?.(bytesNeeded) ?? new SharedArrayBuffer(bytesNeeded)) : new ArrayBuffer(bytesNeeded);
  const bytes = new Uint8Array(buffer);
  let at = 0;
  for (const p of parts) {
    at = (at + 7) & ~7;
    bytes.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength), at);
    at += p.byteLength;
  }
  return { desc, buffer };
}

/** Views packed columns in place (no copy). */
export function unpackColumns(p: PackedColumns): Map<string, Column> {
  const b = p.buffer;
  const u8 = (a: ArrDesc): Uint8Array => new Uint8Array(b, a[0], a[1]);
  const m = (a: ArrDesc | null): Uint8Array | null => (a === null ? null : u8(a));
  const view = (d: ColumnDesc): Column => {
    switch (d.t) {
      case 'int32':
        return { type: 'int32', values: new Int32Array(b, d.v[0], d.v[1]), valid: m(d.m) };
      case 'int64':
        return { type: 'int64', values: new BigInt64Array(b, d.v[0], d.v[1]), valid: m(d.m) };
      case 'float32':
        return { type: 'float32', values: new Float32Array(b, d.v[0], d.v[1]), valid: m(d.m) };
      case 'float64':
        return { type: 'float64', values: new Float64Array(b, d.v[0], d.v[1]), valid: m(d.m) };
      case 'utf8':
        return { type: 'utf8', offsets: new Int32Array(b, d.o[0], d.o[1]), data: u8(d.d), valid: m(d.m) };
      case 'list':
        return { type: 'list', offsets: new Int32Array(b, d.o[0], d.o[1]), child: view(d.c) as PrimitiveColumn, valid: m(d.m) };
      case 'fixed':
        return { type: 'fixed', size: d.s, values: new Float32Array(b, d.v[0], d.v[1]), valid: m(d.m) };
    }
  };
  return new Map(p.desc.map(([name, d]) => [name, view(d)]));
}
