// A file's column types as the main thread learns them from a decode worker's `opened` reply:
// from the schema parquet-wasm read, or from the footer's own Parquet schema where that is certain
// (parquet/column-types.ts). apache-arrow is loaded on use, not at the top: the CLI imports the
// decoder pool early to start decode threads, and a plain file needs no Arrow at all.
import type { ColumnType } from '@sluice/ops';
import type { FooterColumns } from './parquet/index.js';

/** A file's columns: those Sluice reads with their types, the others with their Arrow types in words. */
export interface FileTypes {
  readonly types: ReadonlyMap<string, ColumnType>;
  readonly unsupported: ReadonlyMap<string, string>;
}

/** apache-arrow's IPC reader and the Arrow → column type mapping (./arrow.ts), loaded on first use. */
const arrow = () => Promise.all([import('apache-arrow'), import('./arrow.js')]);

/** Column types from a schema parquet-wasm read (an empty Arrow IPC stream). */
export async function ipcTypes(ipc: Uint8Array): Promise<FileTypes> {
  const [{ tableFromIPC }, { arrowColumnType }] = await arrow();
  const types = new Map<string, ColumnType>();
  const unsupported = new Map<string, string>();
  for (const f of tableFromIPC(ipc).schema.fields) {
    const t = arrowColumnType(f.type);
    if (t === undefined) unsupported.set(f.name, String(f.type));
    else types.set(f.name, t);
  }
  return { types, unsupported };
}

/**
 * Column types from the footer's Parquet schema (parquet/column-types.ts), or null where its
 * writer's embedded Arrow schema does not agree with them field for field (or does not parse):
 * arrow-rs would then type some column by that schema.
 */
export async function footerTypes(footer: FooterColumns): Promise<FileTypes | null> {
  const types = new Map(footer.columns);
  if (footer.arrowSchema !== null) {
    const [{ tableFromIPC }, { arrowColumnType }] = await arrow();
    let fields;
    try {
      const bytes = Buffer.from(footer.arrowSchema, 'base64');
      // The value is one encapsulated IPC message; an end-of-stream marker makes it a stream.
      fields = tableFromIPC(Buffer.concat([bytes, Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])])).schema.fields;
    } catch {
      return null;
    }
    if (fields.length !== types.size) return null;
    for (const f of fields) {
      const t = types.get(f.name);
      if (t === undefined || !sameType(arrowColumnType(f.type), t)) return null;
    }
  }
  return { types, unsupported: new Map() };
}

const sameType = (a: ColumnType | undefined, b: ColumnType): boolean =>
  a !== undefined && a.kind === b.kind && (a.kind !== 'list' || a.child === (b as typeof a).child);
