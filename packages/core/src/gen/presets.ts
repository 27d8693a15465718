/**
 * Workload presets (`sluice gen --preset NAME`, `sluice plan --preset NAME`): the shape of the
 * synthetic data each one generates and the default preprocessing plan for it. Shapes come from
 * PreSto (ISCA'24) Table I, PIPER §4.1.1 and RAP (ASPLOS'24) Tables 1–3; see
 * /work/shared/BENCHMARKS.md for the workloads table. The column specs are in spec.ts; RAP Plans 2
 * and 3, generated at random, in rap-plans.ts.
 */
import type { FeatureSpec, PlanSpec } from '@sluice/ops';
import { hash32, normalQuantile, Rng } from '../util/rng.js';
import { randomRapPlan } from './rap-plans.js';
import {
  basePlan,
  denseOf,
  op,
  sparseOf,
  type ColumnSpec,
  type DenseColumnSpec,
  type HexColumnSpec,
  type IdListColumnSpec,
  type LabelColumnSpec,
} from './spec.js';

/** A workload: the columns of its synthetic data and the plans that preprocess them. */
export interface Preset {
  readonly name: string;
  readonly description: string;
  /** The paper and table the shape follows. */
  readonly source: string;
  /** Rows in the paper's dataset, where it says (informational; `gen --rows` decides). */
  readonly paperRows?: number;
  readonly columns: readonly ColumnSpec[];
  /** The default plan for this data (a fresh object on every call). */
  defaultPlan(): PlanSpec;
  /** Further named plans over the same data (e.g. PIPER's P-I, P-II, P-III). */
  readonly variants?: Readonly<Record<string, () => PlanSpec>>;
  /** Set by {@link withIds} when the hex ids are not the default `skewed`. */
  readonly idCardinality?: IdCardinality;
}

// ---------------------------------------------------------------------------------------------
// Constants from the papers

/** Criteo positive rate (Kaggle train set ≈ 25.6% clicks). */
const CRITEO_POSITIVE_RATE = 0.256;
/** BAGPIPE §2.3, Fig. 3: ~90% of embedding accesses hit 0.1% of the embeddings. */
export const HOT_FRACTION = 0.001;
export const HOT_MASS = 0.9;
/** Dense null rate (BENCHMARKS.md: "~10% nulls"). */
const DENSE_NULL_RATE = 0.1;

/**
 * Criteo Kaggle per-feature cardinalities (DLRM); they sum to 33,762,577 = RAP Table 2's
 * "Total Hash Size 33.7M" for Criteo Kaggle.
 */
export const CRITEO_KAGGLE_CARDINALITIES: readonly number[] = [
  1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572,
];

/**
 * Criteo Terabyte per-feature cardinalities (TorchRec DLRM `--num_embeddings_per_feature`); they
 * sum to 177,944,275 = RAP Table 2's "Total Hash Size 177.9M" for Criteo Terabyte.
 */
export const CRITEO_TERABYTE_CARDINALITIES: readonly number[] = [
  45833188, 36746, 17245, 7413, 20243, 3, 7114, 1441, 62, 29275261, 1572176, 345138, 10, 2209, 11267, 128, 4, 974, 14, 48937457, 11316796, 40094537, 452104,
  12606, 104, 35,
];

/** PreSto Table I: "Avg. # Embeddings 500,000" per table → the sigridHash max of the RM plans. */
export const PRESTO_EMBEDDINGS = 500_000;
/** PreSto Table I: avg sparse feature length 20 for RM2–RM5. */
const PRESTO_AVG_LIST_LENGTH = 20;
/** firstX for RM2–RM5 lists (lengths are 1 + Exp with mean 20, so ~20% of lists exceed 32). */
export const RM_FIRST_X = 32;
/**
 * PIPER §3.4: the vocabulary list length "is determined by the range of Modulus"; P-II / P-III use
 * 8K / 512K vocabularies (Table 4: VocabGen-8K, VocabGen-512K). P-I uses the 512K range so that
 * P-III is exactly P-I + vocab.
 */
export const PIPER_MODULUS_8K = 8192;
export const PIPER_MODULUS_512K = 524_288;

/** PreSto Table I rows: dense, sparse, generated (bucketize) features and bucket borders. */
const PRESTO_TABLE_I = {
  rm1: { dense: 13, sparse: 26, generated: 13, borders: 1024 },
  rm2: { dense: 504, sparse: 42, generated: 21, borders: 1024 },
  rm3: { dense: 504, sparse: 42, generated: 42, borders: 1024 },
  rm4: { dense: 504, sparse: 42, generated: 42, borders: 2048 },
  rm5: { dense: 504, sparse: 42, generated: 42, borders: 4096 },
} as const;

/** RAP Table 3: dense / sparse input features and total op count per plan. */
export const RAP_TABLE_3 = {
  'rap-plan0': { dataset: 'Kaggle', dense: 13, sparse: 26, totalOps: 104, generated: 0 },
  'rap-plan1': { dataset: 'Terabyte', dense: 13, sparse: 26, totalOps: 104, generated: 0 },
  'rap-plan2': { dataset: 'Terabyte', dense: 26, sparse: 52, totalOps: 384, generated: 0 },
  // 1548 ops at 9.80 ops per feature is 158 features: the 156 inputs plus 2 generated bucketize features.
  'rap-plan3': { dataset: 'Terabyte', dense: 52, sparse: 104, totalOps: 1548, generated: 2 },
} as const;

// ---------------------------------------------------------------------------------------------
// Column schemas

function labelColumn(): LabelColumnSpec {
  return { kind: 'label', name: 'label', positiveRate: CRITEO_POSITIVE_RATE };
}

function denseColumns(count: number, type: 'int32' | 'float32', rng: Rng): DenseColumnSpec[] {
  const cols: DenseColumnSpec[] = [];
  for (let i = 1; i <= count; i++) {
    cols.push({
      kind: 'dense',
      name: `I${i}`,
      type,
      nullRate: DENSE_NULL_RATE,
      negRate: round4(rng.uniform(0.01, 0.03)),
      mu: round4(rng.uniform(0.5, 4.5)),
      sigma: round4(rng.uniform(1.0, 2.2)),
    });
  }
  return cols;
}

function hexColumns(count: number, cardinalities: readonly number[], rng: Rng): HexColumnSpec[] {
  const cols: HexColumnSpec[] = [];
  for (let i = 1; i <= count; i++) {
    cols.push({
      kind: 'hex',
      name: `C${i}`,
      nullRate: round4(rng.uniform(0.01, 0.05)),
      vocab: cardinalities[(i - 1) % cardinalities.length] as number,
      hotFraction: HOT_FRACTION,
      hotMass: HOT_MASS,
      salt: rng.nextU32(),
    });
  }
  return cols;
}

function idListColumns(count: number, rng: Rng): IdListColumnSpec[] {
  const cols: IdListColumnSpec[] = [];
  for (let i = 1; i <= count; i++) {
    cols.push({
      kind: 'idList',
      name: `C${i}`,
      nullRate: 0.01,
      // Raw id spaces between 10^5 and 10^7.5 distinct ids, hashed down to 500K by the plan.
      vocab: Math.round(10 ** rng.uniform(5, 7.5)),
      meanLength: PRESTO_AVG_LIST_LENGTH,
      maxLength: 256,
      hotFraction: HOT_FRACTION,
      hotMass: HOT_MASS,
      salt: rng.nextU32(),
    });
  }
  return cols;
}

/** Criteo-shaped columns: label, I1..I{dense}, C1..C{sparse} hex strings. */
function criteoColumns(name: string, dense: number, sparse: number, denseType: 'int32' | 'float32', cards: readonly number[]): ColumnSpec[] {
  const rng = new Rng(hash32(...Array.from(name, (c) => c.charCodeAt(0))), 1);
  return [labelColumn(), ...denseColumns(dense, denseType, rng), ...hexColumns(sparse, cards, rng)];
}

/** PreSto RM2–RM5 columns: label, I1..I504 int32, C1..C42 LIST<INT64>. Shared by rm2..rm5 (same data). */
function productionColumns(): ColumnSpec[] {
  const rng = new Rng(0x5e570, 2);
  return [labelColumn(), ...denseColumns(504, 'int32', rng), ...idListColumns(42, rng)];
}

// ---------------------------------------------------------------------------------------------
// Plan helpers

/**
 * `count` bucket borders that are quantiles of a dense column's positive part, exp(mu + sigma·Φ⁻¹(p)),
 * at seeded jittered probabilities p_j = (j + u_j)/count: strictly increasing, log-spaced-like, and
 * spanning the generated value range (rounded to 6 significant digits).
 */
export function quantileBorders(col: DenseColumnSpec, count: number, rng: Rng): number[] {
  const borders: number[] = [];
  let prev = -Infinity;
  for (let j = 0; j < count; j++) {
    const p = (j + 0.05 + 0.9 * rng.next()) / count;
    const exact = Math.exp(col.mu + col.sigma * normalQuantile(p));
    let b = Number(exact.toPrecision(6));
    if (!(b > prev)) b = exact > prev ? exact : prev + Math.max(Math.abs(prev) * 1e-9, 1e-9);
    borders.push(b);
    prev = b;
  }
  return borders;
}

/** dense → fillNull 0 → neg2zero → log offset 1 (BENCHMARKS.md default; PIPER's dense pipeline). */
function standardDense(cols: readonly ColumnSpec[]): FeatureSpec[] {
  return denseOf(cols).map((c) => ({
    name: c.name,
    input: c.name,
    kind: 'dense',
    ops: [op('fillNull', { value: 0 }), op('neg2zero'), op('log', { offset: 1 })],
  }));
}

/** B1..Bn over I1..In: fillNull 0 → bucketize with `borders` quantile borders (PreSto Algorithm 1). */
function generatedBuckets(cols: readonly ColumnSpec[], count: number, borders: number, seed: number): FeatureSpec[] {
  const rng = new Rng(seed, 3);
  return denseOf(cols)
    .slice(0, count)
    .map((c, i) => ({
      name: `B${i + 1}`,
      input: c.name,
      kind: 'sparse',
      ops: [op('fillNull', { value: 0 }), op('bucketize', { borders: quantileBorders(c, borders, rng) })],
    }));
}

function rmPlan(name: keyof typeof PRESTO_TABLE_I, cols: readonly ColumnSpec[]): PlanSpec {
  const t = PRESTO_TABLE_I[name];
  const sparse: FeatureSpec[] = sparseOf(cols).map((c) => ({
    name: c.name,
    input: c.name,
    kind: 'sparse',
    ops:
      c.kind === 'hex'
        ? [op('hex2int'), op('sigridHash', { salt: 0, max: PRESTO_EMBEDDINGS })]
        : [op('firstX', { x: RM_FIRST_X }), op('sigridHash', { salt: 0, max: PRESTO_EMBEDDINGS })],
  }));
  return basePlan([...standardDense(cols), ...generatedBuckets(cols, t.generated, t.borders, hash32(t.borders, t.generated)), ...sparse]);
}

/** PIPER P-I (stateless), P-II (+ vocab 8K), P-III (+ vocab 512K) — PIPER §4.1.3, Table 1. */
function piperPlan(variant: 'P-I' | 'P-II' | 'P-III', cols: readonly ColumnSpec[]): PlanSpec {
  const m = variant === 'P-II' ? PIPER_MODULUS_8K : PIPER_MODULUS_512K;
  const tail = variant === 'P-I' ? [] : [op('vocab')];
  const sparse: FeatureSpec[] = sparseOf(cols).map((c) => ({
    name: c.name,
    input: c.name,
    kind: 'sparse',
    ops: [op('hex2int'), op('modulus', { m }), ...tail],
  }));
  return basePlan([...standardDense(cols), ...sparse]);
}

/**
 * RAP Plans 0/1 follow TorchArrow's Criteo default (RAP §8.1): FillNull on every input, log(x+3)
 * on dense (TorchArrow's Criteo preproc), SigridHash on sparse with the table's hash size.
 * 13·2 + 26·3 = 104 ops = RAP Table 3.
 */
function torchArrowCriteoPlan(cols: readonly ColumnSpec[]): PlanSpec {
  const dense: FeatureSpec[] = denseOf(cols).map((c) => ({
    name: c.name,
    input: c.name,
    kind: 'dense',
    ops: [op('fillNull', { value: 0 }), op('log', { offset: 3 })],
  }));
  const sparse: FeatureSpec[] = sparseOf(cols).map((c) => ({
    name: c.name,
    input: c.name,
    kind: 'sparse',
    ops: [op('hex2int'), op('fillNull', { value: 0 }), op('sigridHash', { salt: 0, max: c.vocab })],
  }));
  return basePlan([...dense, ...sparse]);
}

// ---------------------------------------------------------------------------------------------
// Registry

function rmPreset(name: keyof typeof PRESTO_TABLE_I, cols: () => ColumnSpec[]): Preset {
  const t = PRESTO_TABLE_I[name];
  const columns = cols();
  return {
    name,
    description:
      `PreSto ${name.toUpperCase()}: ${t.dense} dense int32, ${t.sparse} sparse ` +
      (name === 'rm1' ? 'hex strings' : `LIST<INT64> (avg length ${PRESTO_AVG_LIST_LENGTH})`) +
      `, ${t.generated} generated bucketize features with ${t.borders} borders`,
    source: 'PreSto (ISCA 2024) Table I',
    ...(name === 'rm1' ? { paperRows: 45_840_617 } : {}),
    columns,
    defaultPlan: () => rmPlan(name, columns),
  };
}

function rapPreset(name: keyof typeof RAP_TABLE_3): Preset {
  const t = RAP_TABLE_3[name];
  const cards = t.dataset === 'Kaggle' ? CRITEO_KAGGLE_CARDINALITIES : CRITEO_TERABYTE_CARDINALITIES;
  const columns = criteoColumns(name, t.dense, t.sparse, 'int32', cards);
  const plan =
    t.totalOps === t.dense * 2 + t.sparse * 3 && t.generated === 0
      ? () => torchArrowCriteoPlan(columns)
      : () => randomRapPlan(columns, t.totalOps, t.generated, hash32(t.totalOps, t.dense, t.sparse));
  return {
    name,
    description: `RAP ${name.slice(4).replace('plan', 'Plan ')}: Criteo ${t.dataset}-like, ${t.dense} dense int32 + ${t.sparse} hex sparse, ${t.totalOps} ops`,
    source: 'RAP (ASPLOS 2024) Tables 1–3',
    columns,
    defaultPlan: plan,
  };
}

function piperPreset(): Preset {
  const columns = criteoColumns('piper-d1', 13, 26, 'float32', CRITEO_KAGGLE_CARDINALITIES);
  return {
    name: 'piper-d1',
    description: 'PIPER Dataset I: Criteo Kaggle-like, 13 dense float32 + 26 hex-string sparse; default plan P-I',
    source: 'PIPER §4.1.1 (Dataset I) and §4.1.3 (Pipelines I–III)',
    paperRows: 45_000_000,
    columns,
    defaultPlan: () => piperPlan('P-I', columns),
    variants: {
      'P-I': () => piperPlan('P-I', columns),
      'P-II': () => piperPlan('P-II', columns),
      'P-III': () => piperPlan('P-III', columns),
    },
  };
}

function buildPresets(): Readonly<Record<string, Preset>> {
  const production = productionColumns();
  const list: Preset[] = [
    rmPreset('rm1', () => criteoColumns('rm1', 13, 26, 'int32', CRITEO_KAGGLE_CARDINALITIES)),
    rmPreset('rm2', () => production),
    rmPreset('rm3', () => production),
    rmPreset('rm4', () => production),
    rmPreset('rm5', () => production),
    piperPreset(),
    rapPreset('rap-plan0'),
    rapPreset('rap-plan1'),
    rapPreset('rap-plan2'),
    rapPreset('rap-plan3'),
  ];
  return Object.freeze(Object.fromEntries(list.map((p) => [p.name, p])));
}

/** All presets by name, in registry order. */
export const PRESETS: Readonly<Record<string, Preset>> = buildPresets();

/** The preset names, in registry order. */
export function presetNames(): string[] {
  return Object.keys(PRESETS);
}

/**
 * The preset called `name`; throws an Error listing the valid names when there is none.
 *
 * @example
 * const rm1 = getPreset('rm1');
 * for await (const b of pipeline(rm1.defaultPlan(), { input: 'rm1.parquet' })) console.log(b.rows);
 */
export function getPreset(name: string): Preset {
  const p = Object.prototype.hasOwnProperty.call(PRESETS, name) ? PRESETS[name] : undefined;
  if (!p) throw new Error(`unknown preset "${name}"; valid presets: ${presetNames().join(', ')}`);
  return p;
}

/**
 * How concentrated a preset's hex id columns are (`sluice gen --ids`). `skewed` (the default) gives
 * every column BAGPIPE's 0.1% → 90% hot tier. Within one column that is far more concentrated than
 * Criteo's: a 16,384-row batch of it holds about half the unique ids BAGPIPE counted, and even the
 * largest column stays under DuckDB's dictionary limit in a full row group, so DuckDB keeps a
 * dictionary where real files are PLAIN. `realistic` keeps the hot tier's size and lowers its mass on the large
 * columns only, so that both of BAGPIPE's numbers hold at once (docs/cli.md#gen has the figures).
 */
export type IdCardinality = 'skewed' | 'realistic';
export const ID_CARDINALITIES: readonly IdCardinality[] = ['skewed', 'realistic'];

/**
 * BAGPIPE §2.3: a Criteo batch of 16,384 rows (425,984 lookups over 26 features) holds ~65,000
 * unique embeddings, and (Fig. 3) the top 0.1% of the embeddings take ~90% of the accesses. Criteo
 * Kaggle's five columns of 2.2M–10.1M ids carry the unique ones; a hot mass of 0.5 on columns of at
 * least 1M ids meets both numbers within a few percent, the smaller columns keeping HOT_MASS.
 */
export const REALISTIC_LARGE_VOCAB = 1_000_000;
export const REALISTIC_HOT_MASS = 0.5;

/**
 * `p` with its hex id columns' cardinality set to `ids` (the same preset object for `skewed`, so the
 * default data and its digests are unchanged). Throws for `realistic` on a preset without hex columns.
 */
export function withIds(p: Preset, ids: IdCardinality): Preset {
  if (ids === 'skewed') return p;
  if (!ID_CARDINALITIES.includes(ids)) throw new Error(`unknown id cardinality "${String(ids)}"; valid: ${ID_CARDINALITIES.join(', ')}`);
  if (!p.columns.some((c) => c.kind === 'hex')) throw new Error(`id cardinality "${ids}" shapes hex id columns, and preset "${p.name}" has none`);
  const columns = p.columns.map((c) => (c.kind === 'hex' && c.vocab >= REALISTIC_LARGE_VOCAB ? { ...c, hotMass: REALISTIC_HOT_MASS } : c));
  return { ...p, columns, idCardinality: ids };
}

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
