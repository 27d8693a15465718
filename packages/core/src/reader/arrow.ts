import { Type, type Data, type DataType, type Field, type Vector } from 'apache-arrow';
import { concatColumns, gatherColumn, InputError, type Column, type ColumnType, type PrimitiveColumn, type PrimitiveType, type ValidMask } from '@sluice/ops';

/**
 * The Sluice column type an Arrow field is read as: integers of ≤ 32 bits as int32, 64-bit and
 * unsigned 32-bit as int64, floats as float32/float64, strings as utf8, lists of those as lists.
 */
export function arrowColumnType(type: DataType): ColumnType | undefined {
  const prim = arrowPrimitive(type);
  if (prim !== undefined) return { kind: prim };
  if (type.typeId === Type.List || type.typeId === Type.LargeList) {
    const child = arrowPrimitive((type as DataType & { children: Field[] }).children[0]!.type);
    return child === undefined ? undefined : { kind: 'list', child };
  }
  return undefined;
}

function arrowPrimitive(type: DataType): PrimitiveType | undefined {
  switch (type.typeId) {
    case Type.Int: {
      const t = type as DataType & { bitWidth: number; isSigned: boolean };
      if (t.bitWidth < 32 || (t.bitWidth === 32 && t.isSigned)) return 'int32';
      return 'int64';
    }
    case Type.Float: {
      const precision = (type as DataType & { precision: number }).precision;
      return precision === 2 ? 'float64' : precision === 1 ? 'float32' : undefined;
    }
    case Type.Utf8:
    case Type.LargeUtf8:
      return 'utf8';
    case Type.Bool:
      return 'int32';
    case Type.Dictionary:
      return arrowPrimitive((type as DataType & { dictionary: DataType }).dictionary);
    default:
      return undefined;
  }
}

// Arrow-js indexing rule: value and offset buffers are already sliced to the Data (index 0 is its
// first slot), while the validity bitmap is not (slot i is bit `d.offset + i`).

/** Arrow's bit-packed validity (LSB first) of slots [start, start+n) as one byte per slot. */
function validMask(d: Data, start = 0, n = d.length - start): ValidMask {
  if (d.nullCount === 0 || !d.nullBitmap || d.nullBitmap.length === 0) return null;
  const out = new Uint8Array(n);
  const bm = d.nullBitmap;
  const off = d.offset + start;
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    const b = off + i;
    const v = (bm[b >> 3]! >> (b & 7)) & 1;
    out[i] = v;
    nulls += v ^ 1;
  }
  return nulls === 0 ? null : out;
}

function primitiveFromData(d: Data, as: PrimitiveType, start = 0, n = d.length - start): PrimitiveColumn {
  const valid = validMask(d, start, n);
  const off = start;
  const t = d.type;
  if (t.typeId === Type.Dictionary) {
    // Dictionary-encoded input: expand through the dictionary (utf8 or numeric).
    const dict = (d as Data & { dictionary: Vector }).dictionary;
    const dictCol = concatColumns(dict.data.map((x) => primitiveFromData(x, as))) as PrimitiveColumn;
    const idx = new Int32Array(n);
    const keys = d.values as ArrayLike<number | bigint>;
    for (let i = 0; i < n; i++) idx[i] = Number(keys[off + i]!);
    return withValid(gatherColumn(dictCol, idx) as PrimitiveColumn, valid);
  }
  if (as === 'utf8') {
    const valueOffsets = d.valueOffsets as Int32Array | BigInt64Array;
    const offsets =
      valueOffsets instanceof Int32Array ? valueOffsets.subarray(off, off + n + 1) : Int32Array.from(valueOffsets.subarray(off, off + n + 1), Number);
    return { type: 'utf8', offsets, data: d.values as Uint8Array, valid };
  }
  if (t.typeId === Type.Bool) {
    const values = new Int32Array(n);
    const bits = d.values as Uint8Array;
    for (let i = 0; i < n; i++) {
      const b = d.offset + off + i;
      values[i] = (bits[b >> 3]! >> (b & 7)) & 1;
    }
    return { type: 'int32', values, valid };
  }
  const src = (d.values as Int32Array).subarray(off, off + n) as ArrayLike<number> & { BYTES_PER_ELEMENT: number; constructor: unknown };
  switch (as) {
    case 'int32':
      return { type: 'int32', values: src instanceof Int32Array ? src : Int32Array.from(src), valid };
    case 'int64':
      if (src instanceof BigInt64Array) return { type: 'int64', values: src, valid };
      if (src instanceof BigUint64Array) return { type: 'int64', values: unsigned64(src, valid), valid };
      return { type: 'int64', values: BigInt64Array.from(src as ArrayLike<number>, (x) => BigInt(x)), valid };
    case 'float32':
      return { type: 'float32', values: src instanceof Float32Array ? src : Float32Array.from(src), valid };
    case 'float64':
      return { type: 'float64', values: src instanceof Float64Array ? src : Float64Array.from(src), valid };
  }
}

/**
 * An unsigned 64-bit column as int64, refused when a value is above int64's maximum: read as
 * int64 it would wrap to a negative number (the direct decoder checks the same, parquet/chunk.ts).
 */
function unsigned64(src: BigUint64Array, valid: ValidMask): BigInt64Array {
  const out = new BigInt64Array(src.buffer, src.byteOffset, src.length);
  const words = new Int32Array(src.buffer, src.byteOffset, src.length * 2);
  for (let i = 0; i < src.length; i++) {
    if (words[2 * i + 1]! < 0 && (valid === null || valid[i] === 1)) {
      throw new InputError(
        `an unsigned 64-bit column holds ${src[i]} (at row ${i} of the record batch), above the largest int64 (9223372036854775807); Sluice reads ids as int64 and will not wrap it to a negative number`,
      );
    }
  }
  return out;
}

function withValid(c: PrimitiveColumn, valid: ValidMask): PrimitiveColumn {
  if (valid === null) return c;
  if (c.valid !== null) for (let i = 0; i < valid.length; i++) valid[i] = valid[i]! & c.valid[i]!;
  return { ...c, valid } as PrimitiveColumn;
}

/** Converts one Arrow Data chunk to a Sluice column of the given type (views where possible). */
export function columnFromData(d: Data, type: ColumnType): Column {
  if (type.kind === 'fixed') throw new TypeError('fixed-size columns are outputs, never read');
  if (type.kind !== 'list') return primitiveFromData(d, type.kind);
  const valid = validMask(d);
  const n = d.length;
  const raw = d.valueOffsets as Int32Array | BigInt64Array;
  const base = Number(raw[0]!);
  const offsets = new Int32Array(n + 1);
  for (let i = 0; i <= n; i++) offsets[i] = Number(raw[i]!) - base;
  const child = primitiveFromData(d.children[0]!, type.child, base, offsets[n]!);
  // Lists from other writers may contain null elements; the sparse assembly drops them.
  return { type: 'list', offsets, child, valid };
}

/** Converts an Arrow vector (one or more chunks) to a single Sluice column. */
export function columnFromVector(v: Vector, type: ColumnType): Column {
  const parts = v.data.map((d) => columnFromData(d, type));
  return parts.length === 1 ? parts[0]! : concatColumns(parts);
}
