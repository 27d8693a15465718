/**
 * The Polars peer of realistic.ts: installed on demand into a cache folder (never a dependency of
 * the project), and the closest Polars query to a Sluice plan, built as serialized expressions
 * (bench/README.md, "realistic.ts").
 *
 * Why serialized: nodejs-polars' JS API has no `str.to_integer(base=16)` and no way to reach the
 * native `bin.reinterpret`, which a strict hex parse needs; and each expression built through the
 * chained JS API costs ~0.6 ms, ~0.6 s for RM1's query, where `pl.Expr.deserialize` builds the
 * same tree natively. The JSON below is Polars 0.55's (nodejs-polars 0.26) expression serde format.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ColumnType } from '@sluice/core/internal';
import type { PlanSpec } from '@sluice/core';
import { log } from './lib.js';

/** The nodejs-polars release the bench installs (the JSON format below is that release's). */
export const POLARS_VERSION = '0.26.1';

/** Where the bench installs nodejs-polars: `$SLUICE_BENCH_POLARS_DIR`, else `~/.cache/sluice-bench/polars`. */
export function polarsDir(): string {
  return process.env.SLUICE_BENCH_POLARS_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sluice-bench', 'polars');
}

/** nodejs-polars' native package for this platform (`npm i nodejs-polars` alone installs only the JS wrapper). */
function nativePackage(): string {
  return `nodejs-polars-${process.platform}-${process.arch}${process.platform === 'linux' ? '-gnu' : ''}`;
}

/** The parts of nodejs-polars the bench uses (it ships no types the bench can import without installing it). */
export interface Polars {
  Series(name: string, values: number[], dtype?: unknown): unknown;
  lit(v: unknown): PolarsExpr;
  Float64: unknown;
}
export interface PolarsExpr {
  serialize(format: 'json'): Buffer;
  explode(): PolarsExpr;
}

/**
 * nodejs-polars from the cache folder, installed there first when missing and `install` is set
 * (`npm install --prefix DIR nodejs-polars nodejs-polars-PLATFORM`; the native package declares
 * Node ≥ 22 but runs on Node 20, hence --engine-strict=false). Returns the folder, or why it
 * cannot be used (printed as the bench's notice).
 */
export function ensurePolars(install: boolean): { dir: string } | { skipped: string } {
  const dir = polarsDir();
  const native = nativePackage();
  const present = (): boolean =>
    existsSync(join(dir, 'node_modules', 'nodejs-polars', 'package.json')) && existsSync(join(dir, 'node_modules', native, 'package.json'));
  if (!present()) {
    if (!install) return { skipped: `Polars skipped: nodejs-polars is not installed in ${dir} (run without --no-install to install it, ~115 MB)` };
    log(`installing nodejs-polars ${POLARS_VERSION} and ${native} into ${dir} (~115 MB, once) …`);
    try {
      mkdirSync(dir, { recursive: true });
      execFileSync(
        'npm',
        [
          'install',
          '--prefix',
          dir,
          '--no-audit',
          '--no-fund',
          '--engine-strict=false',
          '--loglevel=error',
          `nodejs-polars@${POLARS_VERSION}`,
          `${native}@${POLARS_VERSION}`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], timeout: 600_000 },
      );
    } catch (e) {
      const err = (e as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(-2).join(' ') ?? (e as Error).message;
      return { skipped: `Polars skipped: installing nodejs-polars into ${dir} failed (${err.slice(0, 200)})` };
    }
    if (!present()) return { skipped: `Polars skipped: npm installed no ${native} into ${dir} (no build of nodejs-polars for this platform?)` };
  }
  try {
    loadPolars(dir);
  } catch (e) {
    return { skipped: `Polars skipped: nodejs-polars in ${dir} does not load (${(e as Error).message.split('\n')[0]!.slice(0, 200)})` };
  }
  return { dir };
}

/** nodejs-polars from `dir`. Its thread pool's size is read from POLARS_MAX_THREADS when it loads. */
export function loadPolars(dir: string): Polars {
  return createRequire(join(dir, 'package.json'))('nodejs-polars') as Polars;
}

// ---------------------------------------------------------------------------------------------
// The query, as Polars' serialized expressions

/** A serialized Polars expression (JSON). */
type J = Record<string, unknown> | string;

/**
 * A query over one Parquet file: `steps` are successive `withColumns` projections (the bucketize
 * searches, one step per halving), then `select` gives the outputs in the plan's order.
 */
export interface PolarsQuery {
  readonly steps: J[][];
  readonly select: J[];
}

const col = (c: string): J => ({ Column: c });
const int = (v: number): J => ({ Literal: { Scalar: { Int64: v } } });
const float = (v: number): J => ({ Literal: { Scalar: { Float64: v } } });
const fn = (input: J[], f: J): J => ({ Function: { input, function: f } });
const bin = (left: J, op: string, right: J): J => ({ BinaryExpr: { left, op, right } });
const cast = (expr: J, dtype: string): J => ({ Cast: { expr, dtype: { Literal: dtype }, options: 'NonStrict' } });
const alias = (expr: J, name: string): J => ({ Alias: [expr, name] });

/**
 * hex2int with a strict parse: left-pad to 16 digits, decode as hex bytes (strict: any other byte
 * fails the query, as Sluice's hex2int fails the run), then read the 8 bytes as a big-endian
 * int64 (16 digits wrap to negative, as in Sluice).
 */
const hex2int = (x: J): J =>
  fn([fn([fn([x, float(16)], { StringExpr: 'ZFill' })], { StringExpr: { HexDecode: true } })], { BinaryExpr: { Reinterpret: [{ Literal: 'Int64' }, false] } });

/**
 * The closest Polars query to `plan` — the same translation as the DuckDB SQL (duckdb-sql.ts):
 * fillNull → fill_null; neg2zero → clip(0); log o → log1p (o = 1) or log(x + o), dense → Float32;
 * hex2int → the strict parse above; sigridHash max → hash(0, 0, 0, 0) % max (Polars' hash, the
 * closest built-in); firstX n → list.slice(0, n), later ops in list.eval; bucketize → the same
 * unrolled binary search as the SQL, over the borders as a literal Series. `hash: false` leaves the
 * hashes out, so that the two engines' outputs can be compared value for value.
 */
export function polarsQuery(pl: Polars, plan: PlanSpec, types: ReadonlyMap<string, ColumnType>, opts: { hash?: boolean } = {}): PolarsQuery {
  const outs: J[] = [];
  const buckets: Array<{ name: string; x: J; borders: J; n: number }> = [];
  const order: string[] = [];
  for (const f of plan.features) {
    const list = types.get(f.input)?.kind === 'list';
    let e = col(f.input);
    // A list's ops after firstX run on its elements: gathered into one list.eval.
    let ev: J | null = null;
    const elem = (g: (x: J) => J): void => {
      if (list) ev = g(ev ?? 'Element');
      else e = g(e);
    };
    const flush = (): void => {
      if (ev !== null) e = { Eval: { expr: e, evaluation: ev, variant: 'List' } };
      ev = null;
    };
    let bucketed = false;
    for (const o of f.ops ?? []) {
      const p = o as Record<string, unknown>;
      switch (o.op) {
        case 'fillNull':
          elem((x) => fn([x, float(Number(p.value))], 'FillNull'));
          break;
        case 'neg2zero':
          elem((x) => fn([x, float(0)], { Clip: { has_min: true, has_max: false } }));
          break;
        case 'log': {
          const off = Number(p.offset ?? 1);
          elem((x) => (off === 1 ? fn([cast(x, 'Float64')], 'Log1p') : fn([bin(cast(x, 'Float64'), 'Plus', float(off)), float(Math.E)], 'Log')));
          break;
        }
        case 'hex2int':
          elem(hex2int);
          break;
        case 'sigridHash':
          if (opts.hash !== false) elem((x) => bin(fn([x], { Hash: [0, 0, 0, 0] }), 'Modulus', int(Number(p.max))));
          break;
        case 'modulus':
          elem((x) => bin(bin(bin(x, 'Modulus', int(Number(p.m))), 'Plus', int(Number(p.m))), 'Modulus', int(Number(p.m))));
          break;
        case 'firstX':
          if (!list) throw new Error(`feature ${f.name}: firstX on a scalar`);
          flush();
          e = fn([e, int(0), int(Number(p.x))], { ListExpr: 'Slice' });
          break;
        case 'bucketize': {
          if (list || p.right === true) throw new Error(`feature ${f.name}: only scalar left bucketize has a Polars query here`);
          const borders = p.borders as number[];
          const lit = JSON.parse(
            pl
              .lit(pl.Series('b', borders, pl.Float64))
              .explode()
              .serialize('json')
              .toString(),
          ) as J;
          buckets.push({ name: f.name, x: cast(e, 'Float64'), borders: lit, n: borders.length });
          bucketed = true;
          break;
        }
        default:
          throw new Error(`feature ${f.name}: no Polars expression for op ${o.op}`);
      }
      if (bucketed) break;
    }
    flush();
    order.push(f.name);
    if (!bucketed) outs.push(alias(f.kind === 'dense' ? cast(e, 'Float32') : e, f.name));
  }
  const b = (i: number): J => col(`__b${i}`);
  const steps: J[][] = [];
  if (buckets.length > 0) {
    steps.push(buckets.flatMap((k, i) => [alias(k.x, `__x${i}`), alias(int(0), `__b${i}`)]));
    const n = Math.max(...buckets.map((k) => k.n));
    // borders[b + s - 1] < x: an index past the end gathers null, so the test fails (as in the SQL).
    for (let s = 2 ** Math.floor(Math.log2(n)); s >= 1; s >>= 1) {
      steps.push(
        buckets.map((k, i) =>
          alias(
            {
              Ternary: {
                predicate: bin(
                  { Gather: { expr: k.borders, idx: bin(b(i), 'Plus', int(s - 1)), returns_scalar: false, null_on_oob: true } },
                  'Lt',
                  col(`__x${i}`),
                ),
                truthy: bin(b(i), 'Plus', int(s)),
                falsy: b(i),
              },
            },
            `__b${i}`,
          ),
        ),
      );
    }
  }
  const byName = new Map<string, J>([
    ...outs.map((o) => [(o as { Alias: [J, string] }).Alias[1], o] as const),
    ...buckets.map((k, i) => [k.name, alias(b(i), k.name)] as const),
  ]);
  const select = order.map((name) => byName.get(name)!);
  if (plan.label !== undefined) select.push(alias(cast(col(plan.label), 'Float32'), plan.label));
  return { steps, select };
}
