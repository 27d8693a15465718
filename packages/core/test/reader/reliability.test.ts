// Files nobody on the project wrote, and damaged copies: page CRCs (verified, and what happens
// without them), unsigned integers written by DuckDB against DuckDB's own SQL, a
// dictionary_page_offset of 0, and encrypted files named as such.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { Float64, Int32, Int64, Table, Utf8 } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPlan } from '@sluice/ops';
import { pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { writeParquetTable } from '../../src/output/parquet-write.js';
import { tempDir, vec } from '../helpers.js';
import { pageCrc32, tableCrc32 } from '../../src/reader/parquet/page.js';
import { rewriteParquet } from './parquet-edit.js';

const dir = tempDir('sluice-reliability-');
const N = 4000;
let db: DuckDBInstance;
let duck: DuckDBConnection;

beforeAll(async () => {
  db = await DuckDBInstance.create(':memory:');
  duck = await db.connect();
});
afterAll(() => {
  duck.closeSync();
  db.closeSync();
});

/** A batch as plain values: dense rows, each sparse key's ids per row, labels. */
interface Rows {
  dense: number[][];
  sparse: Record<string, bigint[][]>;
}

async function drain(p: AsyncIterable<Batch>): Promise<Rows> {
  const out: Rows = { dense: [], sparse: {} };
  for await (const b of p) {
    for (let r = 0; r < b.rows; r++) out.dense.push([...b.dense.data.subarray(r * b.dense.dim, (r + 1) * b.dense.dim)]);
    b.sparse.keys.forEach((k, ki) => {
      const rows = (out.sparse[k] ??= []);
      let at = b.sparse.offsets[ki]!;
      for (let r = 0; r < b.rows; r++) {
        const n = b.sparse.lengths[ki * b.rows + r]!;
        rows.push([...b.sparse.values.subarray(at, at + n)]);
        at += n;
      }
    });
    b.release?.();
  }
  return out;
}

/** Runs `p` to its end: the rows it gave and the error it ended with (null when none). */
async function attempt(p: AsyncIterable<Batch>): Promise<{ rows: number; error: Error | null }> {
  let rows = 0;
  try {
    for await (const b of p) {
      rows += b.rows;
      b.release?.();
    }
    return { rows, error: null };
  } catch (e) {
    return { rows, error: e as Error };
  }
}

describe('page CRCs', () => {
  // Sluice's own writer (parquet-wasm), uncompressed and PLAIN, so that changed bytes are changed
  // values rather than a page that no longer decompresses; CRCs added as parquet-mr writes them.
  const ids = Array.from({ length: N }, (_, i) => i);
  const table = new Table({
    label: vec(
      new Int32(),
      ids.map((i) => i % 2),
    ),
    v: vec(
      new Int64(),
      ids.map((i) => BigInt(i) * 7919n),
    ),
    f: vec(
      new Float64(),
      ids.map((i) => (i % 9 === 0 ? null : i / 3)),
    ),
    s: vec(
      new Utf8(),
      ids.map((i) => ((i % 50) * 2654435761).toString(16).padStart(8, '0')),
    ),
  });
  const plan: PlanSpec = {
    batchSize: 500,
    label: 'label',
    features: [
      { name: 'f', input: 'f', kind: 'dense', ops: [{ op: 'fillNull', value: -1 }] },
      { name: 'v', input: 'v', kind: 'sparse', ops: [{ op: 'modulus', m: 1000003 }] },
      { name: 's', input: 's', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 1, max: 1000 }] },
    ],
  };
  let plain: string;
  let withCrc: string;
  let damaged: string;
  /** Where the damage is: row group 1's `v` column, a data page's values. */
  let place: { rowGroup: number; firstRow: number };

  beforeAll(async () => {
    plain = join(dir, 'plain.parquet');
    await writeParquetTable(plain, table, { compression: 'uncompressed', dictionary: false, rowGroupSize: 1000 });
    const bytes = rewriteParquet(readFileSync(plain), { crc: true });
    withCrc = join(dir, 'with-crc.parquet');
    writeFileSync(withCrc, bytes);
    const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    const m = md.row_groups[1]!.columns.find((c) => c.meta_data!.path_in_schema[0] === 'v')!.meta_data!;
    // Two bytes near the end of the chunk: inside its last page's PLAIN values.
    const end = Number(m.data_page_offset) + Number(m.total_compressed_size);
    const bad = Buffer.from(bytes);
    bad[end - 20] ^= 0x01;
    bad[end - 11] ^= 0x40;
    damaged = join(dir, 'crc-damaged.parquet');
    writeFileSync(damaged, bad);
    place = { rowGroup: 1, firstRow: 1000 };
  });

  it('a file with CRCs reads the same with verification on and off, and as the file without them', async () => {
    const want = await drain(pipeline(plan, { input: plain }));
    expect(want.dense.length).toBe(N);
    expect(await drain(pipeline(plan, { input: withCrc }))).toEqual(want);
    expect(await drain(pipeline(plan, { input: withCrc, verifyCrc: false }))).toEqual(want);
    expect(await drain(pipeline({ ...plan, verifyCrc: false }, { input: withCrc }))).toEqual(want);
  });

  it('a page whose bytes changed is refused with its file, row group, column and page, after the row groups before it', async () => {
    const { rows, error } = await attempt(pipeline(plan, { input: damaged }));
    expect(error?.message).toMatch(
      /^file \S+crc-damaged\.parquet, row group 1, column v: page \d+ \(at byte \d+\): CRC mismatch \(the header says 0x[0-9a-f]{8}, the page's bytes give 0x[0-9a-f]{8}\): the page is damaged$/,
    );
    expect(rows, 'row group 0 came through').toBe(place.firstRow);
  });

  it('with verification off (plan or pipeline option) the same damage goes unnoticed: wrong values, which is what CRCs are for', async () => {
    const want = await drain(pipeline(plan, { input: plain }));
    for (const got of [
      await drain(pipeline(plan, { input: damaged, verifyCrc: false })),
      await drain(pipeline({ ...plan, verifyCrc: false }, { input: damaged })),
    ]) {
      const wrong = got.sparse.v!.flatMap((ids, r) => (ids[0] === want.sparse.v![r]![0] ? [] : [r]));
      expect(wrong.length, 'rows with a wrong id').toBeGreaterThan(0);
      expect(wrong.every((r) => r >= 1000 && r < 2000)).toBe(true);
    }
  });

  it('the CLI refuses the damaged page too, and --no-verify-crc reads it as the plan option does (built bin)', () => {
    const planFile = join(dir, 'crc-plan.json');
    writeFileSync(planFile, JSON.stringify(plan));
    const bin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
    const bench = (...extra: string[]) =>
      spawnSync(process.execPath, [bin, 'bench', '--plan', planFile, '--input', damaged, '--quiet', '--json', ...extra], { encoding: 'utf8', timeout: 60_000 });
    const on = bench();
    expect(on.status, on.stderr).toBe(1);
    expect(on.stderr).toMatch(/crc-damaged\.parquet, row group 1, column v: page \d+ \(at byte \d+\): CRC mismatch/);
    const off = bench('--no-verify-crc');
    expect(off.status, off.stderr).toBe(0);
    expect(JSON.parse(off.stdout).rows).toBe(N);
  });

  it('columns parquet-wasm decodes are checked too: a damaged page of one is refused with its column and page', async () => {
    // UINTEGER widens to int64, which Sluice's own decoder leaves to parquet-wasm.
    const src = join(dir, 'duck-u32.parquet');
    await duck.run(
      `COPY (SELECT i::BIGINT AS a, (i * 1000 + 7)::UINTEGER AS u32 FROM range(${N}) t(i)) TO '${src}' (ROW_GROUP_SIZE 2048, COMPRESSION 'uncompressed')`,
    );
    const bytes = rewriteParquet(readFileSync(src), { crc: true });
    const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    const m = md.row_groups[0]!.columns.find((c) => c.meta_data!.path_in_schema[0] === 'u32')!.meta_data!;
    const bad = Buffer.from(bytes);
    bad[Number(m.data_page_offset) + Number(m.total_compressed_size) - 3] ^= 0x08;
    const file = join(dir, 'u32-crc-damaged.parquet');
    writeFileSync(file, bad);
    const p: PlanSpec = { features: [{ name: 'u', input: 'u32', kind: 'sparse', ops: [{ op: 'modulus', m: 1000003 }] }] };
    const { error } = await attempt(pipeline(p, { input: file }));
    expect(error?.message).toMatch(/^file \S+u32-crc-damaged\.parquet, row group 0, column u32: page \d+ \(at byte \d+\): CRC mismatch /);
    // Unchecked, the damage reaches parquet-wasm, which reads something or refuses in Sluice's words.
    const unchecked = await attempt(pipeline(p, { input: file, verifyCrc: false }));
    expect(unchecked.error?.message ?? '').not.toMatch(/CRC|unreachable|RuntimeError/);
  });

  it("CRC-32 is the standard one (check value of '123456789'), and the fallback for Node before 20.15 agrees on random pages", () => {
    const check = new TextEncoder().encode('123456789');
    expect(pageCrc32(check)).toBe(0xcbf43926);
    expect(tableCrc32(check)).toBe(0xcbf43926);
    let s = 7;
    for (const n of [0, 1, 15, 4096, 100_003]) {
      const page = Uint8Array.from({ length: n }, () => (s = (s * 1103515245 + 12345) % 2147483648) & 0xff);
      expect(tableCrc32(page), `${n} bytes`).toBe(pageCrc32(page));
    }
  });

  it('verifyCrc in a plan must be true or false', () => {
    expect(() => loadPlan({ ...plan, verifyCrc: 'no' })).toThrow(/verifyCrc must be true or false/);
  });
});

describe('unsigned integers written by DuckDB', () => {
  // Every width at its edges (the top bit set, the largest value) and nulls; a row id keeps order.
  const file = join(dir, 'unsigned.parquet');
  const edges = (bits: number): string => {
    const max = (1n << BigInt(bits)) - 1n;
    const top = 1n << BigInt(bits - 1);
    return `CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 THEN ${max} WHEN i % 10 = 2 THEN ${top} WHEN i % 10 = 3 THEN ${top - 1n} ELSE (i * 2654435761) % ${max} END`;
  };
  beforeAll(async () => {
    await duck.run(
      `COPY (SELECT i, (i % 2)::INTEGER AS label,
         (${edges(8)})::UTINYINT AS u8, (${edges(16)})::USMALLINT AS u16, (${edges(32)})::UINTEGER AS u32,
         -- UBIGINT up to int64's maximum (larger values are refused: the next test)
         (CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 THEN 9223372036854775807 ELSE (i::HUGEINT * 2654435761 * 2654435761) % 9223372036854775807 END)::UBIGINT AS u64
       FROM range(${N}) t(i)) TO '${file}' (ROW_GROUP_SIZE 2048)`,
    );
  });

  const cols = ['u8', 'u16', 'u32', 'u64'];
  const plan: PlanSpec = {
    batchSize: 700,
    label: 'label',
    features: [
      ...cols.map((c) => ({
        name: `d_${c}`,
        input: c,
        kind: 'dense' as const,
        ops: [
          { op: 'fillNull', value: 0 },
          { op: 'log', offset: 1 },
        ],
      })),
      ...cols.map((c) => ({ name: `m_${c}`, input: c, kind: 'sparse' as const, ops: [{ op: 'modulus', m: 1000003 }] })),
      ...cols.map((c) => ({ name: `s_${c}`, input: c, kind: 'sparse' as const, ops: [{ op: 'cast', to: 'int64' }] })),
    ],
  } as PlanSpec;

  for (const decoders of [1, 2]) {
    it(`dense and sparse ops give DuckDB SQL's values on every row (${decoders} decoder${decoders > 1 ? 's' : ''})`, async () => {
      const got = await drain(pipeline(plan, { input: file, decoders }));
      const sql = cols.map((c) => `ln(coalesce(${c}, 0)::DOUBLE + 1) AS d_${c}, ${c} % 1000003 AS m_${c}, ${c} AS s_${c}`).join(', ');
      const want = (await duck.runAndReadAll(`SELECT ${sql} FROM '${file}' ORDER BY i`)).getRowObjects();
      expect(got.dense.length).toBe(N);
      for (let r = 0; r < N; r++) {
        const w = want[r]!;
        cols.forEach((c, k) => {
          const d = w[`d_${c}`] as number;
          expect(Math.abs(got.dense[r]![k]! - d), `row ${r}, d_${c}: ${got.dense[r]![k]} vs ${d}`).toBeLessThanOrEqual(Math.abs(d) * 1e-6);
          for (const f of ['m', 's']) {
            const v = w[`${f}_${c}`] as bigint | number | null;
            expect(got.sparse[`${f}_${c}`]![r], `row ${r}, ${f}_${c}`).toEqual(v === null ? [] : [BigInt(v)]);
          }
        });
      }
      // The edges are there: the largest value of each width, and one with the top bit set.
      expect(got.sparse.s_u8!.some((ids) => ids[0] === 255n)).toBe(true);
      expect(got.sparse.s_u32!.some((ids) => ids[0] === 4294967295n)).toBe(true);
      expect(got.sparse.s_u64!.some((ids) => ids[0] === 9223372036854775807n)).toBe(true);
    });
  }

  it('a UBIGINT above int64 maximum is refused with its file, row group, column and row, never wrapped to a negative id', async () => {
    const big = join(dir, 'ubigint-big.parquet');
    await duck.run(
      `COPY (SELECT i, (CASE WHEN i = 2500 THEN 18446744073709551615 ELSE i END)::UBIGINT AS u64 FROM range(${N}) t(i)) TO '${big}' (ROW_GROUP_SIZE 2048)`,
    );
    const p = pipeline({ batchSize: 512, features: [{ name: 'u', input: 'u64', kind: 'sparse', ops: [{ op: 'modulus', m: 1000 }] }] }, { input: big });
    const { rows, error } = await attempt(p);
    expect(error?.message).toMatch(
      /^file \S+ubigint-big\.parquet, row group 1, column u64: row 452 of the row group holds the unsigned 64-bit value 18446744073709551615, above the largest int64/,
    );
    expect(rows).toBe(2048);
  });
});

describe("other writers' layouts", () => {
  it('reads column chunks whose dictionary_page_offset is 0 as DuckDB does, the columns parquet-wasm decodes included', async () => {
    const src = join(dir, 'duck-lists.parquet');
    // a and b: the direct decoder; ls (a list of strings) and u32 (widened): parquet-wasm.
    await duck.run(
      `COPY (SELECT i::BIGINT AS a, (i % 7)::INTEGER AS b, ['x' || (i % 3)::VARCHAR, 'y'] AS ls, (i * 1000)::UINTEGER AS u32 FROM range(${N}) t(i)) TO '${src}' (ROW_GROUP_SIZE 2048)`,
    );
    const zero = join(dir, 'dict-offset-0.parquet');
    writeFileSync(
      zero,
      rewriteParquet(readFileSync(src), {
        columnMeta: (m) => {
          m.field_11 ??= 0n;
        },
      }),
    );
    const zeros = parquetMetadata(readFileSync(zero).buffer as ArrayBuffer).row_groups.flatMap((g) =>
      g.columns.filter((c) => c.meta_data!.dictionary_page_offset === 0n),
    );
    expect(zeros.length, 'chunks with dictionary_page_offset 0').toBeGreaterThan(0);
    const sums = async (f: string): Promise<unknown> => (await duck.runAndReadAll(`SELECT sum(a), sum(b), count(ls), sum(u32) FROM '${f}'`)).getRows();
    expect(await sums(zero)).toEqual(await sums(src));
    const plan: PlanSpec = {
      batchSize: 1000,
      features: [
        { name: 'a', input: 'a', kind: 'sparse', ops: [{ op: 'modulus', m: 97 }] },
        { name: 'b', input: 'b', kind: 'dense', ops: [{ op: 'log', offset: 1 }] },
        { name: 'u32', input: 'u32', kind: 'sparse', ops: [{ op: 'modulus', m: 1000003 }] },
      ],
    };
    const want = await drain(pipeline(plan, { input: src }));
    expect(want.dense.length).toBe(N);
    expect(await drain(pipeline(plan, { input: zero }))).toEqual(want);
  });

  it('refuses a row group whose metadata places it outside the file when the row group is reached, after the ones before it', async () => {
    const src = join(dir, 'to-damage-a-row-group.parquet');
    await duck.run(`COPY (SELECT i::BIGINT AS a FROM range(8192) t(i)) TO '${src}' (FORMAT parquet, ROW_GROUP_SIZE 2048)`);
    const damaged = join(dir, 'damaged-row-group-2.parquet');
    writeFileSync(
      damaged,
      rewriteParquet(readFileSync(src), {
        footer: (md) => {
          const meta = ((md.field_4 as Array<Record<string, unknown>>)[2]!.field_1 as Array<Record<string, unknown>>)[0]!.field_3 as Record<string, unknown>;
          meta.field_9 = 10n ** 12n; // data_page_offset, past the file
          meta.field_11 = undefined; // and no dictionary page before it
        },
      }),
    );
    const plan: PlanSpec = { batchSize: 1024, features: [{ name: 'a', input: 'a', kind: 'sparse', ops: [{ op: 'modulus', m: 7 }] }] };
    const { rows, error } = await attempt(pipeline(plan, { input: damaged }));
    // One line, the row group named once (by the footer's check, not again by the decoder pool).
    expect(error?.message).toMatch(
      new RegExp(
        `^file ${damaged}: not a readable Parquet file: row group 2, column a: the footer places its pages at bytes 1000000000000\\.\\.\\d+, outside the file's \\d+ bytes of data$`,
      ),
    );
    expect(rows).toBe(2 * 2048);
  });

  it('names encryption as encryption: a plaintext footer over encrypted columns, and an encrypted footer', async () => {
    const src = join(dir, 'to-encrypt.parquet');
    await duck.run(`COPY (SELECT i::BIGINT AS a FROM range(100) t(i)) TO '${src}'`);
    const plaintextFooter = join(dir, 'encrypted-plaintext-footer.parquet');
    // FileMetaData field 8, encryption_algorithm (AES_GCM_V1), as writers in plaintext-footer mode set it.
    writeFileSync(
      plaintextFooter,
      rewriteParquet(readFileSync(src), {
        footer: (md) => {
          md.field_8 = { field_1: { field_3: true } };
        },
      }),
    );
    const encryptedFooter = join(dir, 'encrypted-footer.parquet');
    await duck.run(`SET force_mbedtls_unsafe = 'true'`);
    await duck.run(`PRAGMA add_parquet_key('k', '0123456789112345')`);
    await duck.run(`COPY (SELECT i::BIGINT AS a FROM range(100) t(i)) TO '${encryptedFooter}' (ENCRYPTION_CONFIG {footer_key: 'k'})`);
    const plan: PlanSpec = { features: [{ name: 'a', input: 'a', kind: 'sparse', ops: [{ op: 'modulus', m: 7 }] }] };
    for (const [f, mode] of [
      [plaintextFooter, 'its footer is plaintext, its columns are not'],
      [encryptedFooter, 'its footer is encrypted'],
    ] as const) {
      const { error } = await attempt(pipeline(plan, { input: f }));
      expect(error?.message).toBe(
        `file ${f}: not a readable Parquet file: it is encrypted (Parquet modular encryption); Sluice does not decrypt files: decrypt it with the tool that holds its keys first (${mode})`,
      );
    }
  });
});
