/**
 * A file's column types read straight from its footer's Parquet schema, where every top-level
 * column is one whose type is certain: the type parquet-wasm (arrow-rs) would give it, as
 * ../arrow.ts `arrowColumnType` maps that. Opening a file then needs no parquet-wasm in the decode
 * worker: compiling its 5 MB of WebAssembly was ~0.1 s on the way to every run's first batch.
 *
 * Anything less plain (dates, timestamps, decimals, binary, maps, structs, legacy list layouts)
 * returns null, and parquet-wasm reads the schema as before, so its types and its messages for
 * unsupported columns stay what they were.
 */
import type { FileMetaData, SchemaElement } from 'hyparquet/src/types.js';
import type { ColumnType, PrimitiveType } from '@sluice/ops';
import { INT32_CONVERTED } from './schema.js';

/** A footer's columns by name and type, with the Arrow schema its writer embedded (base64), if any. */
export interface FooterColumns {
  readonly columns: ReadonlyArray<readonly [string, ColumnType]>;
  /**
   * The `ARROW:schema` key's value: arrow-rs types a column by it where it agrees with the Parquet
   * type (a 32-bit unsigned integer stored as INT32, say), so the main thread checks that each of
   * its fields maps to the same column type, and has parquet-wasm read the schema where not.
   */
  readonly arrowSchema: string | null;
}

/** The footer's top-level columns and their types, or null where one is not certain (see above). */
export function footerColumns(md: FileMetaData): FooterColumns | null {
  const columns: Array<readonly [string, ColumnType]> = [];
  const schema = md.schema;
  const top = schema[0]?.num_children ?? 0;
  let i = 1;
  for (let c = 0; c < top; c++) {
    const el = schema[i];
    if (el === undefined || el.repetition_type === 'REPEATED') return null;
    if (el.num_children === undefined) {
      const kind = primitiveOf(el);
      if (kind === null) return null;
      columns.push([el.name, { kind }]);
      i += 1;
      continue;
    }
    // The standard three-level list: <list> (LIST) / repeated group / one element.
    const mid = schema[i + 1];
    const leaf = schema[i + 2];
    const isList = el.converted_type === 'LIST' || el.logical_type?.type === 'LIST';
    if (!isList || el.num_children !== 1 || el.type !== undefined) return null;
    if (mid === undefined || mid.repetition_type !== 'REPEATED' || mid.num_children !== 1 || mid.type !== undefined || mid.converted_type !== undefined)
      return null;
    if (leaf === undefined || leaf.num_children !== undefined || leaf.repetition_type === 'REPEATED') return null;
    const child = primitiveOf(leaf);
    if (child === null) return null;
    columns.push([el.name, { kind: 'list', child }]);
    i += 3;
  }
  if (i !== schema.length) return null;
  const arrow = md.key_value_metadata?.find((kv) => kv.key === 'ARROW:schema');
  return { columns, arrowSchema: arrow === undefined ? null : (arrow.value ?? '') };
}

/**
 * The column type of a leaf as arrow-rs types it without a hint, or null where that is not a
 * plain number or string: integers of at most 32 bits (signed) as int32, unsigned 32-bit and
 * 64-bit ones as int64, booleans as int32, floats, and UTF-8 strings. The logical type, where
 * present, decides (as in arrow-rs); else the converted type.
 */
function primitiveOf(el: SchemaElement): PrimitiveType | null {
  const logical = el.logical_type;
  const converted = logical === undefined ? el.converted_type : undefined;
  const plain = logical === undefined && converted === undefined;
  switch (el.type) {
    case 'BOOLEAN':
      return plain ? 'int32' : null;
    case 'INT32':
      if (plain || (converted !== undefined && INT32_CONVERTED.has(converted))) return 'int32';
      if (converted === 'UINT_32') return 'int64';
      if (logical?.type === 'INTEGER' && logical.bitWidth <= 32) return logical.bitWidth < 32 || logical.isSigned ? 'int32' : 'int64';
      return null;
    case 'INT64':
      if (plain || converted === 'INT_64' || converted === 'UINT_64') return 'int64';
      if (logical?.type === 'INTEGER' && logical.bitWidth === 64) return 'int64';
      return null;
    case 'FLOAT':
      return plain ? 'float32' : null;
    case 'DOUBLE':
      return plain ? 'float64' : null;
    case 'BYTE_ARRAY':
      return logical?.type === 'STRING' || converted === 'UTF8' ? 'utf8' : null;
    default:
      return null;
  }
}
