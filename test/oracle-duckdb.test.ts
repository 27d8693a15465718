// Independent oracle: DuckDB writes the input Parquet file, `sluice run` preprocesses it, and DuckDB
// SQL (or a BigInt reference for sigridHash) recomputes every output value from the input.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../packages/core/test/helpers.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'packages/core/bin/sluice.js');
const dir = tempDir('sluice-oracle-');
const input = join(dir, 'duck.parquet');
const plain = join(dir, 'duck-plain.parquet');
const output = join(dir, 'out.parquet');
const N = 5000;

// ---- sigridHash, written again from OPS.md with BigInt (independent of the kernels) ----
const M64 = (1n << 64n) - 1n;
function twang(k: bigint): bigint {
  k = (~k + (k << 21n)) & M64;
  k ^= k >> 24n;
  k = (k + (k << 3n) + (k << 8n)) & M64;
  k ^= k >> 14n;
  k = (k + (k << 2n) + (k << 4n)) & M64;
  k ^= k >> 28n;
  return (k + (k << 31n)) & M64;
}
function hash128(u: bigint, l: bigint): bigint {
  const kMul = 0x9ddfea08eb382d69n;
  let a = ((l ^ u) * kMul) & M64;
  a ^= a >> 47n;
  let b = ((u ^ a) * kMul) & M64;
  b ^= b >> 47n;
  return (b * kMul) & M64;
}
function sigrid(x: bigint, salt: bigint, max: bigint): bigint {
  if (max === 1n) return 0n;
  const h = BigInt.asIntN(64, hash128(salt & M64, twang(x & M64)));
  return ((h % max) + max) % max;
}

const plan = {
  batchSize: 1000,
  label: 'label',
  features: [
    { name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
    {
      name: 'F1',
      input: 'F1',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'clamp', min: -1, max: 1 },
      ],
    },
    {
      name: 'P1',
      input: 'P1',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 0.5 },
        { op: 'logit', eps: 1e-6 },
      ],
    },
    {
      name: 'I1_oh',
      input: 'I1',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'modulus', m: 4 },
        { op: 'oneHot', numClasses: 4 },
      ],
    },
    {
      name: 'I1_b',
      input: 'I1',
      kind: 'sparse',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'bucketize', borders: [0, 10, 100, 1000] },
      ],
    },
    {
      name: 'I1_br',
      input: 'I1',
      kind: 'sparse',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'bucketize', borders: [0, 10, 100, 1000], right: true },
      ],
    },
    { name: 'B1', input: 'B1', kind: 'sparse', ops: [{ op: 'modulus', m: 97 }] },
    { name: 'C1_raw', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }] },
    { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 500000 }] },
    {
      name: 'L1',
      input: 'L1',
      kind: 'sparse',
      ops: [
        { op: 'firstX', x: 3 },
        { op: 'clamp', min: 0, max: 1000 },
      ],
    },
    { name: 'F2', input: 'F2', kind: 'dense', ops: [{ op: 'cast', to: 'int32' }] },
  ],
};

let con: DuckDBConnection;

async function rows(sql: string): Promise<unknown[][]> {
  return (await con.runAndReadAll(sql)).getRows() as unknown[][];
}

const SRC = `SELECT
    (i % 3 = 0)::INTEGER AS label,
    CASE WHEN i % 10 = 0 THEN NULL ELSE ((i * 7919) % 3000) - 200 END::INTEGER AS I1,
    CASE WHEN i % 13 = 0 THEN NULL ELSE sin(i) * 3 END::DOUBLE AS F1,
    CASE WHEN i % 17 = 0 THEN NULL ELSE ((i * 31) % 1001) / 1000.0 END::DOUBLE AS P1,
    ((i * 104729) % 2000003) - 1000000 AS B1,
    CASE WHEN i % 9 = 0 THEN NULL ELSE printf('%08x', ((i % 300) * 2654435761) % 4294967296) END AS C1,
    CASE WHEN i % 23 = 0 THEN NULL
         ELSE list_transform(range(i % 6), j -> CASE WHEN (i + j) % 29 = 0 THEN NULL ELSE ((i * 37 + j * 1009) % 2500) - 100 END)
    END::BIGINT[] AS L1,
    (((i % 200) - 100) * 1.7)::DOUBLE AS F2
  FROM range(${N}) t(i)`;

beforeAll(async () => {
  con = await (await DuckDBInstance.create(':memory:')).connect();
  await con.run(`SET threads = 2`);
  // DuckDB dictionary-encodes the strings by default; the second file forces plain encoding.
  await con.run(`COPY (${SRC}) TO '${input}' (FORMAT parquet, ROW_GROUP_SIZE 1000)`);
  await con.run(`COPY (${SRC}) TO '${plain}' (FORMAT parquet, ROW_GROUP_SIZE 1000, DICTIONARY_SIZE_LIMIT 1)`);
  const planFile = join(dir, 'plan.json');
  writeFileSync(planFile, JSON.stringify(plan));
  execFileSync(process.execPath, [bin, 'run', '--plan', planFile, '--input', input, '--output', output, '--quiet'], { stdio: 'pipe' });
}, 120_000);

const J = `FROM read_parquet('${input}') i POSITIONAL JOIN read_parquet('${output}') o`;
/** Rows where float32 output differs from the expected value by more than 1 ulp. */
const ulpMismatch = (out: string, expected: string): string =>
  `SELECT count(*) ${J} WHERE NOT (abs(${out}::DOUBLE - (${expected})::FLOAT::DOUBLE) <= 1.2e-7 * greatest(abs((${expected})::FLOAT::DOUBLE), 1e-30) OR (${out} = (${expected})::FLOAT))`;

describe('sluice run vs DuckDB on a DuckDB-written file', () => {
  it('writes every row, in input order, with the label', async () => {
    expect(await rows(`SELECT count(*) FROM read_parquet('${output}')`)).toEqual([[BigInt(N)]]);
    expect(await rows(`SELECT count(*) ${J} WHERE o.label <> i.label::FLOAT`)).toEqual([[0n]]);
  });

  it('dense: fillNull → neg2zero → log1p, within 1 ulp of float32', async () => {
    expect(await rows(ulpMismatch('o.I1', 'ln(greatest(coalesce(i.I1, 0), 0) + 1)'))).toEqual([[0n]]);
  });

  it('dense: clamp on doubles and logit', async () => {
    expect(await rows(ulpMismatch('o.F1', 'least(greatest(coalesce(i.F1, 0), -1), 1)'))).toEqual([[0n]]);
    expect(
      await rows(ulpMismatch('o.P1', 'ln(least(greatest(coalesce(i.P1, 0.5), 1e-6), 1 - 1e-6) / (1 - least(greatest(coalesce(i.P1, 0.5), 1e-6), 1 - 1e-6)))')),
    ).toEqual([[0n]]);
  });

  it('dense: cast float → int truncates toward zero', async () => {
    expect(await rows(`SELECT count(*) ${J} WHERE o.F2 <> trunc(i.F2)::FLOAT`)).toEqual([[0n]]);
  });

  it('dense: oneHot of a positive modulus is a LIST<FLOAT> with one 1', async () => {
    const expected = `list_transform(range(4), k -> CASE WHEN k = (((coalesce(i.I1, 0) % 4) + 4) % 4) THEN 1.0 ELSE 0.0 END::FLOAT)`;
    expect(await rows(`SELECT count(*) ${J} WHERE o.I1_oh <> ${expected}`)).toEqual([[0n]]);
  });

  it('sparse: bucketize (left and right) matches counting borders', async () => {
    expect(await rows(`SELECT count(*) ${J} WHERE o.I1_b <> [len(list_filter([0, 10, 100, 1000], b -> b < coalesce(i.I1, 0)))]::BIGINT[]`)).toEqual([[0n]]);
    expect(await rows(`SELECT count(*) ${J} WHERE o.I1_br <> [len(list_filter([0, 10, 100, 1000], b -> b <= coalesce(i.I1, 0)))]::BIGINT[]`)).toEqual([[0n]]);
  });

  it('sparse: positive modulus of negative int64', async () => {
    expect(await rows(`SELECT count(*) ${J} WHERE o.B1 <> [((i.B1 % 97) + 97) % 97]::BIGINT[]`)).toEqual([[0n]]);
  });

  it('sparse: hex2int (null → empty list) matches DuckDB hex parsing', async () => {
    expect(await rows(`SELECT count(*) ${J} WHERE o.C1_raw <> CASE WHEN i.C1 IS NULL THEN []::BIGINT[] ELSE [('0x' || i.C1)::BIGINT] END`)).toEqual([[0n]]);
  });

  it('sparse: sigridHash matches a BigInt reference on every row', async () => {
    const got = await rows(`SELECT i.C1, o.C1 ${J}`);
    let checked = 0;
    for (const [hex, out] of got) {
      const ids = (out as { items: bigint[] }).items;
      if (hex === null) {
        expect(ids).toEqual([]);
        continue;
      }
      expect(ids).toEqual([sigrid(BigInt('0x' + (hex as string)), 0n, 500000n)]);
      checked++;
    }
    expect(checked).toBeGreaterThan(N * 0.8);
  });

  it('sparse: firstX then clamp on LIST<INT64>, dropping null elements and null lists', async () => {
    const expected = `list_transform(list_filter(coalesce(i.L1, []::BIGINT[])[1:3], x -> x IS NOT NULL), x -> least(greatest(x, 0), 1000))`;
    expect(await rows(`SELECT count(*) ${J} WHERE o.L1 <> ${expected}`)).toEqual([[0n]]);
    // The data really has nulls, null lists and long lists.
    expect(
      (
        await rows(
          `SELECT count(*) FILTER (WHERE L1 IS NULL) > 0, max(len(L1)) > 3, count(*) FILTER (WHERE list_contains(list_transform(L1, x -> x IS NULL), true)) > 0 FROM read_parquet('${input}')`,
        )
      )[0],
    ).toEqual([true, true, true]);
  });

  it('reads the same values from plain-encoded and dictionary-encoded strings', async () => {
    const planFile = join(dir, 'plan.json');
    const out2 = join(dir, 'out-plain.parquet');
    execFileSync(process.execPath, [bin, 'run', '--plan', planFile, '--input', plain, '--output', out2, '--quiet'], { stdio: 'pipe' });
    expect(
      await rows(
        `SELECT count(*) FROM read_parquet('${output}') a POSITIONAL JOIN read_parquet('${out2}') b WHERE a.C1 <> b.C1 OR a.C1_raw <> b.C1_raw OR a.L1 <> b.L1 OR a.I1 <> b.I1`,
      ),
    ).toEqual([[0n]]);
    const enc = async (f: string): Promise<string> =>
      JSON.stringify(await rows(`SELECT DISTINCT encodings FROM parquet_metadata('${f}') WHERE path_in_schema = 'C1'`));
    expect(await enc(input)).toMatch(/DICTIONARY/);
    expect(await enc(plain)).not.toMatch(/DICTIONARY/);
  });
});
