/**
 * The closest DuckDB SQL to a Sluice plan, op by op (bench/README.md, "The DuckDB SQL"): used by
 * e2e.ts and realistic.ts.
 */
import type { ColumnType } from '@sluice/core/internal';
import type { PlanSpec } from '@sluice/core';

export type BucketizeSql = 'bsearch' | 'asof' | 'count';

export const q = (name: string): string => `"${name.replace(/"/g, '""')}"`;

export interface Sql {
  /** Untimed setup: the bucket borders as tables (they are plan parameters, like the JSON plan). */
  readonly setup: string[];
  /** `SELECT …` computing every plan output from the file. */
  readonly select: string;
}

/**
 * Translates the ops of the presets' default plans into DuckDB expressions:
 *   fillNull v → coalesce(x, v); neg2zero → greatest(x, 0); log o → ln(x + o), dense → ::FLOAT;
 *   hex2int → ('0x' || x)::BIGINT; sigridHash max → hash(x) % max (DuckDB's hash, not sigridHash:
 *   the closest built-in); firstX n → list_slice(x, 1, n); ops after firstX run per element;
 *   bucketize → see `bucketSql` (it must be the last op of its feature).
 */
export function planSql(plan: PlanSpec, file: string, types: ReadonlyMap<string, ColumnType>, mode: BucketizeSql, opts: { hash?: boolean } = {}): Sql {
  const outs: string[] = [];
  const buckets: Array<{ name: string; x: string; borders: number[] }> = [];
  for (const f of plan.features) {
    let e = q(f.input);
    const list = types.get(f.input)?.kind === 'list';
    const elem = (fn: (x: string) => string): void => {
      e = list ? `list_transform(${e}, __v -> ${fn('__v')})` : fn(e);
    };
    let bucketed = false;
    for (const o of f.ops ?? []) {
      if (bucketed) throw new Error(`feature ${f.name}: no SQL for ops after bucketize`);
      const p = o as Record<string, unknown>;
      switch (o.op) {
        case 'fillNull':
          elem((x) => `coalesce(${x}, ${Number(p.value)})`);
          break;
        case 'neg2zero':
          elem((x) => `greatest(${x}, 0)`);
          break;
        case 'log':
          elem((x) => `ln(${x} + ${Number(p.offset ?? 1)})`);
          break;
        case 'hex2int':
          elem((x) => `('0x' || ${x})::BIGINT`);
          break;
        case 'sigridHash':
          // Left out to compare peers' values before hashing (the engines' hashes differ).
          if (opts.hash !== false) elem((x) => `hash(${x}) % ${Number(p.max)}`);
          break;
        case 'modulus':
          elem((x) => `((${x} % ${Number(p.m)}) + ${Number(p.m)}) % ${Number(p.m)}`);
          break;
        case 'firstX':
          if (!list) throw new Error(`feature ${f.name}: firstX on a scalar`);
          e = `list_slice(${e}, 1, ${Number(p.x)})`;
          break;
        case 'bucketize':
          if (list || p.right === true) throw new Error(`feature ${f.name}: only scalar left bucketize has SQL here`);
          buckets.push({ name: f.name, x: `(${e})::DOUBLE`, borders: p.borders as number[] });
          bucketed = true;
          break;
        default:
          throw new Error(`feature ${f.name}: no SQL for op ${o.op}`);
      }
    }
    if (!bucketed) outs.push(`${f.kind === 'dense' ? `(${e})::FLOAT` : e} AS ${q(f.name)}`);
  }
  const label = plan.label === undefined ? [] : [`${q(plan.label)}::FLOAT AS ${q(plan.label)}`];
  const order = [...plan.features.map((f) => q(f.name)), ...(plan.label === undefined ? [] : [q(plan.label)])];
  return bucketSql(mode, file, [...outs, ...label], buckets, order);
}

/**
 * Bucketize (number of borders < x) in SQL. DuckDB has no built-in binary search over a list
 * (no width_bucket), so:
 *   bsearch (default): the binary search Sluice's kernel does, unrolled — ⌈log2(n+1)⌉ stacked
 *     projections, each `p := CASE WHEN borders[p + s] < x THEN p + s ELSE p END` for
 *     s = 2^k … 1 (an index past the end reads NULL, so the test fails). Same algorithm, same
 *     number of comparisons per value.
 *   asof: one `ASOF LEFT JOIN` per feature with a (border, position) table — DuckDB's idiomatic
 *     range lookup; a sort-merge rather than a search, and it reorders rows.
 *   count: `len(list_filter(borders, b -> b < x))` — n comparisons per value instead of log2 n.
 * The borders live in tables made before timing (one LIST row, or (b, i) rows for asof).
 */
function bucketSql(mode: BucketizeSql, file: string, outs: string[], buckets: Array<{ name: string; x: string; borders: number[] }>, order: string[]): Sql {
  const src = `read_parquet('${file.replace(/'/g, "''")}')`;
  const lists = buckets.map((b, i) => `[${b.borders.map((v) => String(v)).join(',')}]::DOUBLE[] AS __l${i}`);
  if (buckets.length === 0) return { setup: [], select: `SELECT ${outs.join(', ')} FROM ${src}` };
  if (mode === 'count') {
    const cols = buckets.map((b, i) => `len(list_filter(__l${i}, __b -> __b < ${b.x}))::BIGINT AS ${q(b.name)}`);
    return {
      setup: [`CREATE OR REPLACE TABLE __borders AS SELECT ${lists.join(', ')}`],
      select: `SELECT ${order.join(', ')} FROM (SELECT ${[...outs, ...cols].join(', ')} FROM ${src}, __borders)`,
    };
  }
  if (mode === 'asof') {
    const setup = buckets.map(
      (b, i) =>
        `CREATE OR REPLACE TABLE __bt${i} AS SELECT unnest(l) AS b, generate_subscripts(l, 1)::BIGINT AS i FROM (SELECT [${b.borders.map(String).join(',')}]::DOUBLE[] AS l)`,
    );
    const xs = buckets.map((b, i) => `${b.x} AS __x${i}`);
    const joins = buckets.map((_, i) => `ASOF LEFT JOIN __bt${i} AS __j${i} ON __t.__x${i} > __j${i}.b`).join(' ');
    const cols = buckets.map((b, i) => `coalesce(__j${i}.i, 0) AS ${q(b.name)}`);
    return {
      setup,
      select: `SELECT ${order.join(', ')} FROM (SELECT __t.*, ${cols.join(', ')} FROM (SELECT ${[...outs, ...xs].join(', ')} FROM ${src}) AS __t ${joins})`,
    };
  }
  let sql = `SELECT ${[...outs, ...buckets.map((b, i) => `${b.x} AS __x${i}, 0::BIGINT AS ${q(b.name)}`)].join(', ')}, __borders.* FROM ${src}, __borders`;
  const n = Math.max(...buckets.map((b) => b.borders.length));
  for (let s = 2 ** Math.floor(Math.log2(n)); s >= 1; s >>= 1) {
    const steps = buckets.map((b, i) => `CASE WHEN __l${i}[${q(b.name)} + ${s}] < __x${i} THEN ${q(b.name)} + ${s} ELSE ${q(b.name)} END AS ${q(b.name)}`);
    sql = `SELECT * REPLACE (${steps.join(', ')}) FROM (${sql})`;
  }
  return { setup: [`CREATE OR REPLACE TABLE __borders AS SELECT ${lists.join(', ')}`], select: `SELECT ${order.join(', ')} FROM (${sql})` };
}
