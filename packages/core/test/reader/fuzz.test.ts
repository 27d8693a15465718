// The reader on seeded damage: small files from two writers (Sluice's own, over parquet-wasm,
// and DuckDB's COPY), each with and without page CRCs, truncated, bit-flipped and overwritten in
// the footer, the page headers and the page bodies, and read end to end with pipeline(). Every
// run is bounded in time. What must hold: no crash and no hang; a run that fails says so in one
// line naming the file and where (row group, column, page), never a decoder's trap text; and a
// file with CRCs whose pages were damaged never yields a value that differs from the pristine
// file's. (A file without CRCs may be damaged into other valid data, which no reader can see.)
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Field, Float64, Int32, Int64, List, Table, Utf8 } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { writeParquetTable } from '../../src/output/parquet-write.js';
import { chunkStart } from '../../src/reader/parquet/page.js';
import { tempDir, vec } from '../helpers.js';
import { rewriteParquet } from './parquet-edit.js';

const dir = tempDir('sluice-fuzz-');
const ROWS = 1200;
/** Variants per base file: 4 writers' files x 80 = 320. */
const VARIANTS = 80;
/** A run that takes longer than this is a hang. */
const BOUND_MS = 15_000;
/** What a user must never read: a WebAssembly trap or a library's own words. */
const TRAP = /unreachable|RuntimeError|panicked|wasm|Parquet error|thrift|hyparquet|External format|\bat \S+:\d+/i;

const plan: PlanSpec = {
  batchSize: 256,
  label: 'label',
  features: [
    {
      name: 'i',
      input: 'i',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'log', offset: 1 },
      ],
    },
    { name: 'f', input: 'f', kind: 'dense', ops: [{ op: 'fillNull', value: -1 }] },
    { name: 'h', input: 'h', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'modulus', m: 100003 }] },
    { name: 'n', input: 'n', kind: 'sparse', ops: [{ op: 'modulus', m: 1009 }] },
    { name: 'l', input: 'l', kind: 'sparse', ops: [{ op: 'firstX', x: 4 }] },
  ],
};

/** A run's output as one string per row, and how it ended. */
interface Outcome {
  rows: string[];
  error: Error | null;
  hung: boolean;
}

function rowsOf(b: Batch): string[] {
  const out: string[] = [];
  for (let r = 0; r < b.rows; r++) {
    const parts = [...b.dense.data.subarray(r * b.dense.dim, (r + 1) * b.dense.dim)].map((x) => (Object.is(x, -0) ? '-0' : String(x)));
    let at = 0;
    b.sparse.keys.forEach((_, k) => {
      at = b.sparse.offsets[k]!;
      for (let q = 0; q < r; q++) at += b.sparse.lengths[k * b.rows + q]!;
      parts.push(`[${[...b.sparse.values.subarray(at, at + b.sparse.lengths[k * b.rows + r]!)].join(',')}]`);
    });
    parts.push(String(b.labels?.[r]));
    out.push(parts.join(' '));
  }
  return out;
}

async function run(file: string): Promise<Outcome> {
  const rows: string[] = [];
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), BOUND_MS);
  });
  const body = (async (): Promise<Error | null> => {
    try {
      for await (const b of pipeline(plan, { input: file, decoders: 1, signal: abort.signal })) {
        rows.push(...rowsOf(b));
        b.release?.();
      }
      return null;
    } catch (e) {
      return e as Error;
    }
  })();
  const r = await Promise.race([body, hang]);
  clearTimeout(timer);
  if (r === 'hung') {
    abort.abort(new Error('hung'));
    return { rows, error: null, hung: true };
  }
  return { rows, error: r, hung: false };
}

/** Byte ranges of a file: its footer, and each page's header and body. */
interface Regions {
  footer: [number, number];
  headers: Array<[number, number]>;
  bodies: Array<[number, number]>;
}

function regionsOf(bytes: Uint8Array): Regions {
  const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headers: Array<[number, number]> = [];
  const bodies: Array<[number, number]> = [];
  for (const rg of md.row_groups)
    for (const c of rg.columns) {
      const m = c.meta_data!;
      const end = chunkStart(m) + Number(m.total_compressed_size);
      const reader = { view, offset: chunkStart(m) };
      while (reader.offset < end) {
        const at = reader.offset;
        const h = parquetHeader(reader);
        headers.push([at, reader.offset]);
        bodies.push([reader.offset, reader.offset + h.compressed_page_size]);
        reader.offset += h.compressed_page_size;
      }
    }
  const len = view.getUint32(bytes.length - 8, true);
  return { footer: [bytes.length - 8 - len, bytes.length], headers, bodies };
}

/** A seeded generator (LCG): the same variants every run. */
function rng(seed: number): (k: number) => number {
  let s = seed >>> 0;
  return (k) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % k;
  };
}

type Region = 'footer' | 'header' | 'body';
type Kind = 'truncate' | 'flip' | 'overwrite' | 'zero';

/** Variant `i` of `clean`: a kind of damage in a region, at seeded places. */
function damage(clean: Uint8Array, regions: Regions, i: number, seed: number): { bytes: Uint8Array; region: Region; kind: Kind; at: number } {
  const rnd = rng(seed * 7919 + i);
  const region = (['footer', 'header', 'body'] as const)[i % 3]!;
  const kind = (['flip', 'overwrite', 'zero', 'truncate'] as const)[Math.floor(i / 3) % 4]!;
  const pick = (ranges: Array<[number, number]>): [number, number] => ranges[rnd(ranges.length)]!;
  const [from, to] = region === 'footer' ? regions.footer : pick(region === 'header' ? regions.headers : regions.bodies.filter(([a, b]) => b > a));
  const at = from + rnd(Math.max(1, to - from));
  if (kind === 'truncate') return { bytes: clean.slice(0, at), region, kind, at };
  const bytes = clean.slice();
  if (kind === 'flip') bytes[at] ^= 1 << rnd(8);
  else if (kind === 'overwrite') for (let k = 0, n = 1 + rnd(8); k < n && at + k < to; k++) bytes[at + k] = rnd(256);
  else bytes.fill(0, at, Math.min(to, at + 4 + rnd(29)));
  return { bytes, region, kind, at };
}

interface Base {
  name: string;
  file: string;
  crc: boolean;
}

const bases: Base[] = [];

beforeAll(async () => {
  const ids = Array.from({ length: ROWS }, (_, i) => i);
  const table = new Table({
    label: vec(
      new Int32(),
      ids.map((i) => i % 2),
    ),
    i: vec(
      new Int64(),
      ids.map((i) => (i % 13 === 0 ? null : BigInt(i * 37))),
    ),
    f: vec(
      new Float64(),
      ids.map((i) => (i % 9 === 0 ? null : i / 7)),
    ),
    h: vec(
      new Utf8(),
      ids.map((i) => (i % 11 === 0 ? null : ((i % 61) * 2654435761).toString(16).padStart(8, '0'))),
    ),
    n: vec(
      new Int32(),
      ids.map((i) => (i * 7) % 300),
    ),
    l: vec(
      new List(new Field('item', new Int64(), true)),
      ids.map((i) => (i % 17 === 0 ? null : Array.from({ length: i % 6 }, (_, j) => BigInt(i + j)))),
    ),
  });
  const sluice = join(dir, 'sluice.parquet');
  await writeParquetTable(sluice, table, { compression: 'zstd', rowGroupSize: 400 });
  const sluicePlain = join(dir, 'sluice-plain.parquet');
  await writeParquetTable(sluicePlain, table, { compression: 'uncompressed', dictionary: false, rowGroupSize: 400 });
  const duck = join(dir, 'duckdb.parquet');
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(
    `COPY (SELECT (i % 2)::INTEGER AS label, CASE WHEN i % 13 = 0 THEN NULL ELSE i * 37 END::BIGINT AS i,
       CASE WHEN i % 9 = 0 THEN NULL ELSE i / 7 END::DOUBLE AS f,
       CASE WHEN i % 11 = 0 THEN NULL ELSE lpad(printf('%x', (i % 61) * 2654435761), 8, '0') END AS h,
       ((i * 7) % 300)::USMALLINT AS n,
       CASE WHEN i % 17 = 0 THEN NULL ELSE list_transform(range(i % 6), j -> (i + j)::BIGINT) END AS l
     FROM range(${ROWS}) t(i)) TO '${duck}' (ROW_GROUP_SIZE 400)`,
  );
  c.closeSync();
  db.closeSync();
  const withCrc = (from: string, name: string): string => {
    const f = join(dir, name);
    writeFileSync(f, rewriteParquet(readFileSync(from), { crc: true }));
    return f;
  };
  bases.push(
    { name: "Sluice's writer, ZSTD, dictionary", file: sluice, crc: false },
    { name: "Sluice's writer, uncompressed, PLAIN, CRCs", file: withCrc(sluicePlain, 'sluice-plain-crc.parquet'), crc: true },
    { name: "DuckDB's COPY", file: duck, crc: false },
    { name: "DuckDB's COPY, CRCs", file: withCrc(duck, 'duckdb-crc.parquet'), crc: true },
  );
});

describe('seeded damage', () => {
  for (let b = 0; b < 4; b++) {
    it(`${VARIANTS} damaged copies of file ${b + 1} of 4: no crash, no hang, one located line per failure, no trap text${b % 2 === 1 ? ', no wrong value' : ''}`, async () => {
      const base = bases[b]!;
      // A copy, not a Buffer: Buffer.slice() is a view, and every variant would damage the next.
      const clean = new Uint8Array(readFileSync(base.file));
      const pristine = await run(base.file);
      expect(pristine.error, `${base.name}: the pristine file reads`).toBeNull();
      expect(pristine.rows.length).toBe(ROWS);
      const regions = regionsOf(clean);
      const tally: Record<string, number> = {};
      const problems: string[] = [];
      for (let i = 0; i < VARIANTS; i++) {
        const v = damage(clean, regions, i, b + 1);
        const file = join(dir, `v${b}-${i}-${v.region}-${v.kind}.parquet`);
        writeFileSync(file, v.bytes);
        const what = `${base.name}, variant ${i} (${v.kind} in a page ${v.region} at byte ${v.at})`;
        const out = await run(file);
        if (out.hung) {
          problems.push(`${what}: no answer within ${BOUND_MS} ms`);
          continue;
        }
        // What came out must be the pristine rows where CRCs protect the pages; a file without
        // them may have been damaged into other valid values.
        const same = out.rows.every((r, k) => r === pristine.rows[k]);
        const protectedPages = base.crc && v.region === 'body';
        if (protectedPages && !same) problems.push(`${what}: a value differs from the pristine file's`);
        if (out.error === null) {
          tally[same && out.rows.length === ROWS ? 'read, same' : 'read, different'] =
            (tally[same && out.rows.length === ROWS ? 'read, same' : 'read, different'] ?? 0) + 1;
          if (protectedPages && out.rows.length !== ROWS) problems.push(`${what}: ${out.rows.length} of ${ROWS} rows and no error`);
          continue;
        }
        tally.refused = (tally.refused ?? 0) + 1;
        if (process.env.FUZZ_SHOW) console.log(what, '=>', out.error.message);
        const msg = out.error.message;
        if (msg.includes('\n')) problems.push(`${what}: the message spans lines: ${JSON.stringify(msg)}`);
        if (TRAP.test(msg)) problems.push(`${what}: the message carries a library's words: ${msg}`);
        if (!msg.startsWith(`file ${file}`)) problems.push(`${what}: the message does not start with the file: ${msg}`);
        // A damaged page may decode into a value an op rejects (no CRC to catch it): then the row,
        // feature and op are named too.
        else if (!/^file \S+: not a readable Parquet file: |, row group \d+(, column \S+)?: |, row group \d+, row \d+, column \S+, feature \S+, op /.test(msg))
          problems.push(`${what}: the message names no row group: ${msg}`);
      }
      expect(problems, JSON.stringify(tally)).toEqual([]);
      // Both outcomes occur: the checks above ran on refusals and on reads.
      expect(tally.refused ?? 0, JSON.stringify(tally)).toBeGreaterThan(0);
      console.log(`${base.name}: ${JSON.stringify(tally)}`);
    }, 240_000);
  }
});
