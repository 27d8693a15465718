// The tests' oracle reader: `sluice run` writes Parquet, and the Python that runs the tests may
// have no Parquet reader (Debian ships none beside python3-torch), so this reads the file with the
// repository's own parquet-wasm and writes each column as raw little-endian arrays plus a JSON
// index: `node parquet_dump.mjs FILE OUT_DIR`.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';

const [file, out] = process.argv.slice(2);
if (!file || !out) {
  process.stderr.write('usage: node parquet_dump.mjs FILE OUT_DIR\n');
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const table = tableFromIPC(pw.readParquet(readFileSync(file)).intoIPCStream());
const index = { rows: table.numRows, columns: [] };
const bytes = (a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

table.schema.fields.forEach((field, i) => {
  const col = table.getChildAt(i);
  const entry = { name: field.name, list: false, dtype: '' };
  if (field.type.children?.length) {
    // A list column: per-row lengths, then every row's values in order.
    const lengths = new Int32Array(table.numRows);
    const parts = [];
    for (let r = 0; r < table.numRows; r++) {
      const v = col.get(r);
      const a = v === null ? [] : v.toArray();
      lengths[r] = a.length;
      parts.push(a);
    }
    const isInt = typeof parts.find((p) => p.length > 0)?.[0] === 'bigint' || String(field.type.children[0].type).startsWith('Int');
    const total = lengths.reduce((s, n) => s + n, 0);
    const values = isInt ? new BigInt64Array(total) : new Float32Array(total);
    let at = 0;
    for (const p of parts) {
      values.set(p, at);
      at += p.length;
    }
    Object.assign(entry, { list: true, dtype: isInt ? 'int64' : 'float32' });
    writeFileSync(join(out, `${i}.lengths`), bytes(lengths));
    writeFileSync(join(out, `${i}.values`), bytes(values));
  } else {
    entry.dtype = 'float32';
    writeFileSync(join(out, `${i}.values`), bytes(Float32Array.from(col.toArray())));
  }
  index.columns.push(entry);
});
writeFileSync(join(out, 'index.json'), JSON.stringify(index));
