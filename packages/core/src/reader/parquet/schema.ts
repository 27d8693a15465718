/**
 * Which column chunks the direct decoder reads (see index.ts): flat columns and three-level lists
 * of numbers, found through the footer's schema, with a codec and encodings it knows.
 */
import type { ColumnChunk, FileMetaData, SchemaElement } from 'hyparquet/src/types.js';
import type { ColumnType, NumericColumn, PrimitiveType } from '@sluice/ops';

const PHYSICAL: Record<string, PrimitiveType> = { INT32: 'int32', INT64: 'int64', FLOAT: 'float32', DOUBLE: 'float64', BYTE_ARRAY: 'utf8' };

/**
 * How a top-level schema element decodes to exactly `type` the way the Arrow reader would type
 * it: 'same' (the stored values as they are), 'unsigned64' (an unsigned 64-bit column: stored as
 * int64, each value checked to be at most int64's maximum), or null (not here: parquet-wasm reads
 * it). Unsigned 8- and 16-bit values are stored as non-negative int32s and read as they are;
 * unsigned 32-bit ones widen to int64, which parquet-wasm and ../arrow.ts do.
 */
function supported(el: SchemaElement | undefined, type: ColumnType): 'same' | 'unsigned64' | null {
  if (el === undefined || el.num_children !== undefined || type.kind === 'list' || type.kind === 'fixed') return null;
  if (el.repetition_type === 'REPEATED' || el.type === undefined || PHYSICAL[el.type] !== type.kind) return null;
  const logical = el.logical_type;
  const converted = el.converted_type;
  const plain = logical === undefined && converted === undefined;
  if (type.kind === 'utf8') return logical?.type === 'STRING' || converted === 'UTF8' ? 'same' : null;
  if (type.kind === 'int32') {
    if (plain || (converted !== undefined && INT32_CONVERTED.has(converted))) return 'same';
    if (logical?.type === 'INTEGER' && (logical.bitWidth < 32 || (logical.bitWidth === 32 && logical.isSigned))) return 'same';
    return null;
  }
  if (type.kind === 'int64') {
    if (plain || converted === 'INT_64') return 'same';
    if (converted === 'UINT_64') return 'unsigned64';
    if (logical?.type === 'INTEGER' && logical.bitWidth === 64) return logical.isSigned ? 'same' : 'unsigned64';
    return null;
  }
  return plain ? 'same' : null;
}

/** Converted types an INT32 column may carry and still hold its values as they are (the unsigned ones are below 2^16). */
export const INT32_CONVERTED: ReadonlySet<string> = new Set(['INT_8', 'INT_16', 'INT_32', 'UINT_8', 'UINT_16']);

const topLevel = new WeakMap<FileMetaData, Map<string, SchemaElement>>();

/** The top-level columns of a file's schema by name (a group's descendants skipped), cached per footer. */
function topLevelColumns(md: FileMetaData): Map<string, SchemaElement> {
  let top = topLevel.get(md);
  if (top === undefined) {
    top = new Map();
    for (let i = 1, skip = 0; i < md.schema.length; i++) {
      const el = md.schema[i]!;
      if (skip > 0) {
        skip += (el.num_children ?? 0) - 1;
        continue;
      }
      top.set(el.name, el);
      skip = el.num_children ?? 0;
    }
    topLevel.set(md, top);
  }
  return top;
}

/** A column chunk this decoder reads (flat, supported type, codec and encodings), or null. */
export function readable(
  md: FileMetaData,
  rg: FileMetaData['row_groups'][number],
  name: string,
  types: ReadonlyMap<string, ColumnType>,
): { chunk: ColumnChunk; el: SchemaElement; type: PrimitiveType; unsigned64: boolean } | null {
  const type = types.get(name);
  const el = topLevelColumns(md).get(name);
  const chunk = rg.columns.find((c) => c.meta_data?.path_in_schema.length === 1 && c.meta_data.path_in_schema[0] === name);
  const how = type === undefined ? null : supported(el, type);
  const ok =
    type !== undefined &&
    how !== null &&
    chunk?.meta_data !== undefined &&
    !chunk.file_path &&
    CODECS.includes(chunk.meta_data.codec) &&
    chunk.meta_data.encodings.every((e) => ENCODINGS.includes(e));
  return ok ? { chunk: chunk!, el: el!, type: type.kind as PrimitiveType, unsigned64: how === 'unsigned64' } : null;
}

const CODECS = ['UNCOMPRESSED', 'SNAPPY', 'ZSTD', 'GZIP'];
const ENCODINGS = ['PLAIN', 'RLE', 'RLE_DICTIONARY', 'PLAIN_DICTIONARY', 'BIT_PACKED'];

const schemaIndex = new WeakMap<FileMetaData, Map<SchemaElement, number>>();

/** Where a schema element sits in the footer's flattened (depth-first) schema, cached per footer. */
function indexOf(md: FileMetaData, el: SchemaElement): number {
  let m = schemaIndex.get(md);
  if (m === undefined) {
    m = new Map(md.schema.map((e, i) => [e, i]));
    schemaIndex.set(md, m);
  }
  return m.get(el) ?? -1;
}

/** A column chunk of a top-level list column that this decoder reads, and the shape of its levels. */
export interface ListChunk {
  readonly chunk: ColumnChunk;
  readonly outerOptional: boolean;
  readonly elementOptional: boolean;
  readonly type: NumericColumn['type'];
}

/** The chunk of list column `name` when this decoder reads it (see index.ts), else null. */
export function readableList(md: FileMetaData, rg: FileMetaData['row_groups'][number], name: string, types: ReadonlyMap<string, ColumnType>): ListChunk | null {
  const type = types.get(name);
  if (type?.kind !== 'list' || type.child === 'utf8') return null;
  const outer = topLevelColumns(md).get(name);
  if (outer === undefined || outer.num_children !== 1 || outer.type !== undefined) return null;
  if (outer.converted_type !== 'LIST' && outer.logical_type?.type !== 'LIST') return null;
  if (outer.repetition_type !== 'OPTIONAL' && outer.repetition_type !== 'REQUIRED') return null;
  const i = indexOf(md, outer);
  if (i < 0) return null;
  const mid = md.schema[i + 1];
  const leaf = md.schema[i + 2];
  if (mid === undefined || mid.repetition_type !== 'REPEATED' || mid.num_children !== 1 || mid.type !== undefined) return null;
  if (leaf === undefined || leaf.repetition_type === 'REPEATED' || supported(leaf, { kind: type.child }) !== 'same') return null;
  const chunk = rg.columns.find((c) => {
    const path = c.meta_data?.path_in_schema;
    return path?.length === 3 && path[0] === name && path[1] === mid.name && path[2] === leaf.name;
  });
  if (chunk?.meta_data === undefined || chunk.file_path || !CODECS.includes(chunk.meta_data.codec)) return null;
  if (!chunk.meta_data.encodings.every((e) => ENCODINGS.includes(e))) return null;
  return { chunk, outerOptional: outer.repetition_type === 'OPTIONAL', elementOptional: leaf.repetition_type === 'OPTIONAL', type: type.child };
}
