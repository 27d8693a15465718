/**
 * Workload presets (`sluice gen --preset NAME`, `sluice plan --preset NAME`): the shape of the
 * synthetic data each one generates and the default preprocessing plan for it. Shapes come from
 * PreSto (ISCA'24) Table I, PIPER §4.1.1 and RAP (ASPLOS'24) Tables 1–3; see
 * /work/shared/BENCHMARKS.md for the workloads table.
 */
import type { FeatureSpec, OpSpec, PlanSpec } from '@sluice/ops';
import { hash32, mix32, normalQuantile, Rng } from '../util/rng.js';

/** The binary label: float32 0/1, never null. */
export interface LabelColumnSpec {
  readonly kind: 'label';
  readonly name: string;
  /** Fraction of rows with label 1. */
  readonly positiveRate: number;
}

/**
 * A Criteo-like count feature: null with probability `nullRate`; −1 or −2 with probability
 * `negRate`; otherwise floor(exp(mu + sigma·Z)), Z standard normal (heavy-tailed, many 0s and 1s),
 * capped at 2^31 − 1. `float32` columns hold the same integral values as floats (PIPER Dataset I).
 */
export interface DenseColumnSpec {
  readonly kind: 'dense';
  readonly name: string;
  readonly type: 'int32' | 'float32';
  readonly nullRate: number;
  readonly negRate: number;
  readonly mu: number;
  readonly sigma: number;
}

/** Skewed categorical ids: rank r ~ SkewedIdSampler(vocab, hotFraction, hotMass), id = bijective u32 mix of (r, salt). */
interface SkewedIds {
  /** Number of distinct ids the column draws from. */
  readonly vocab: number;
  /** The hot tier: this fraction of the vocabulary receives `hotMass` of the draws (BAGPIPE: 0.1% → 90%). */
  readonly hotFraction: number;
  readonly hotMass: number;
  /** Per-column u32 salt so that columns use different ids. */
  readonly salt: number;
}

/** A categorical feature as an 8-char lowercase hex string (Criteo's hashed categoricals), nullable. */
export interface HexColumnSpec extends SkewedIds {
  readonly kind: 'hex';
  readonly name: string;
  readonly nullRate: number;
}

/** A multi-hot feature: LIST<INT64> of raw non-negative 63-bit ids; length 1 + floor(Exp), mean `meanLength`. */
export interface IdListColumnSpec extends SkewedIds {
  readonly kind: 'idList';
  readonly name: string;
  readonly nullRate: number;
  readonly meanLength: number;
  readonly maxLength: number;
}

export type ColumnSpec = LabelColumnSpec | DenseColumnSpec | HexColumnSpec | IdListColumnSpec;

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
  1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27, 14992, 5461306, 10, 5652,
  2173, 4, 7046547, 18, 15, 286181, 105, 142572,
];

/**
 * Criteo Terabyte per-feature cardinalities (TorchRec DLRM `--num_embeddings_per_feature`); they
 * sum to 177,944,275 = RAP Table 2's "Total Hash Size 177.9M" for Criteo Terabyte.
 */
export const CRITEO_TERABYTE_CARDINALITIES: readonly number[] = [
  45833188, 36746, 17245, 7413, 20243, 3, 7114, 1441, 62, 29275261, 1572176, 345138, 10, 2209, 11267, 128, 4, 974, 14,
  48937457, 11316796, 40094537, 452104, 12606, 104, 35,
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
/** PreSto §III: batch size 8,192. */
const BATCH_SIZE = 8192;

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

/**
 * The raw id the generator writes for rank `rank` of a column (rank 0 is the most frequent): the low
 * 32 bits are mix32(rank + salt), a bijection, so distinct ranks give distinct ids. Hex columns hold
 * these 32 bits as 8 hex chars; list columns add a high word with the sign bit clear.
 */
export function rawIdOfRank(col: HexColumnSpec | IdListColumnSpec, rank: number): bigint {
  const lo = mix32((rank + col.salt) >>> 0);
  if (col.kind === 'hex') return BigInt(lo);
  const hi = mix32(rank ^ listSalt2(col.salt)) & 0x7fffffff;
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/** Second salt of list columns' high id word. */
export function listSalt2(salt: number): number {
  return mix32(salt ^ 0x5bd1e995);
}

// ---------------------------------------------------------------------------------------------
// Plan helpers

const op = (name: string, params: Record<string, unknown> = {}): OpSpec => ({ op: name, ...params });

function basePlan(features: FeatureSpec[]): PlanSpec {
  return { batchSize: BATCH_SIZE, backend: { name: 'cpu' }, label: 'label', features };
}

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

function denseOf(cols: readonly ColumnSpec[]): DenseColumnSpec[] {
  return cols.filter((c): c is DenseColumnSpec => c.kind === 'dense');
}

function sparseOf(cols: readonly ColumnSpec[]): (HexColumnSpec | IdListColumnSpec)[] {
  return cols.filter((c): c is HexColumnSpec | IdListColumnSpec => c.kind === 'hex' || c.kind === 'idList');
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
// RAP Plans 2/3: random compositions of RAP Table 1's ops (plus hex2int for the hex inputs and log)

type NumType = 'int32' | 'int64' | 'float32';
interface ChainState {
  type: NumType;
  /** Bounds of the values at this point of the chain (hi is a typical bound for raw counts). */
  lo: number;
  hi: number;
  /** Still the raw ids of this column (only hex2int and fillNull so far): mapId can target the hot ids. */
  raw?: HexColumnSpec | IdListColumnSpec;
}
/** Appends one op to `ops` and returns the new state, or returns null when it does not apply. */
type Step = (s: ChainState, rng: Rng, ops: OpSpec[]) => ChainState | null;

const INT32_MAX = 2147483647;

function fmt6(x: number): number {
  return Number(x.toPrecision(6));
}

/** `count` strictly increasing borders spanning [lo, hi]: log-spaced when the range is wide and positive. */
function spanBorders(lo: number, hi: number, count: number, integral: boolean): number[] {
  const out: number[] = [];
  const logScale = lo >= 0 && hi / Math.max(lo, 1) > 100;
  const a = logScale ? Math.log(Math.max(lo, 1)) : lo;
  const b = logScale ? Math.log(hi) : hi;
  let prev = -Infinity;
  for (let j = 1; j <= count; j++) {
    const t = a + ((b - a) * j) / (count + 1);
    let v = logScale ? Math.exp(t) : t;
    v = integral ? Math.round(v) : fmt6(v);
    if (!(v > prev)) v = integral ? prev + 1 : prev + Math.max(Math.abs(prev) * 1e-6, 1e-6);
    out.push(v);
    prev = v;
  }
  return out;
}

const clampStep: Step = (s, rng, ops) => {
  const isInt = s.type !== 'float32';
  const min = isInt ? rng.pick([0, 0, 1]) : rng.pick([0, 0.5, 1]);
  const maxChoices = isInt ? [255, 1023, 65535, 1_000_000, INT32_MAX] : [1, 8, 16, 100];
  const max = rng.pick(maxChoices.filter((m) => m > min));
  ops.push(op('clamp', { min, max }));
  const c = (x: number): number => Math.min(max, Math.max(min, x));
  return { type: s.type, lo: c(s.lo), hi: c(s.hi) };
};

const castStep: Step = (s, rng, ops) => {
  if (s.type === 'float32') {
    if (s.hi > INT32_MAX || s.lo < -INT32_MAX) return null;
    ops.push(op('cast', { to: 'int32' }));
    return { type: 'int32', lo: Math.trunc(s.lo), hi: Math.trunc(s.hi) };
  }
  if (s.type === 'int64') {
    if (s.hi > INT32_MAX || rng.bernoulli(0.5)) {
      ops.push(op('cast', { to: 'float32' }));
      return { type: 'float32', lo: s.lo, hi: s.hi };
    }
    ops.push(op('cast', { to: 'int32' }));
    return { type: 'int32', lo: s.lo, hi: s.hi };
  }
  const to = rng.pick(['float32', 'int64'] as const);
  ops.push(op('cast', { to }));
  return { type: to, lo: s.lo, hi: s.hi };
};

const logStep: Step = (s, rng, ops) => {
  const offsets = [1, 3].filter((o) => s.lo + o > 0);
  if (offsets.length === 0) return null;
  const offset = rng.pick(offsets);
  ops.push(op('log', { offset }));
  return { type: 'float32', lo: Math.log(s.lo + offset), hi: Math.log(s.hi + offset) };
};

const logitStep: Step = (_s, rng, ops) => {
  const eps = rng.pick([1e-6, 1e-4]);
  ops.push(op('logit', { eps }));
  const b = Math.log((1 - eps) / eps);
  return { type: 'float32', lo: -b, hi: b };
};

const boxCoxStep: Step = (s, rng, ops) => {
  if (!(s.lo > 0)) return null; // boxCox of x <= 0 is a data error (OPS.md)
  const lambda = rng.pick([0, 0.25, 0.5]);
  ops.push(op('boxCox', { lambda }));
  const f = (x: number): number => (lambda === 0 ? Math.log(x) : (x ** lambda - 1) / lambda);
  return { type: 'float32', lo: f(s.lo), hi: f(s.hi) };
};

const bucketizeStep: Step = (s, rng, ops) => {
  const integral = s.type !== 'float32';
  const lo = integral ? Math.max(s.lo, 0) : s.lo;
  if (!(s.hi > lo)) return null;
  let count = rng.pick([8, 16, 64, 256]);
  if (integral) count = Math.max(2, Math.min(count, Math.floor(s.hi - lo)));
  ops.push(op('bucketize', { borders: spanBorders(lo, s.hi, count, integral) }));
  return { type: 'int32', lo: 0, hi: count };
};

const sigridStep: Step = (_s, rng, ops) => {
  const max = rng.pick([10_000, 100_000, 500_000, 1_000_000]);
  ops.push(op('sigridHash', { salt: rng.int(INT32_MAX), max }));
  return { type: 'int64', lo: 0, hi: max - 1 };
};

const sparseClampStep: Step = (s, rng, ops) => {
  if (s.type === 'float32') return null;
  const choices = [1023, 65535, 1_000_000, INT32_MAX].filter((m) => m < s.hi);
  if (Number.isSafeInteger(s.hi)) choices.push(s.hi);
  if (choices.length === 0) return null;
  const max = rng.pick(choices);
  ops.push(op('clamp', { min: 0, max }));
  return { type: s.type, lo: 0, hi: Math.min(s.hi, max) };
};

const sparseCastStep: Step = (s, _rng, ops) => {
  if (s.type === 'int32') {
    ops.push(op('cast', { to: 'int64' }));
    return { type: 'int64', lo: s.lo, hi: s.hi };
  }
  if (s.type === 'int64' && s.lo >= 0 && s.hi <= INT32_MAX) {
    ops.push(op('cast', { to: 'int32' }));
    return { type: 'int32', lo: s.lo, hi: s.hi };
  }
  return null;
};

/** FirstX (RAP Table 1, SN): a scalar becomes a list of one, a list is truncated (later ops all accept lists). */
const firstXStep: Step = (s, rng, ops) => {
  ops.push(op('firstX', { x: rng.pick([1, 4, 16]) }));
  return { type: s.type, lo: s.lo, hi: s.hi };
};

/** Ngram (RAP Table 1, FG): unigram hashes (n = 1) of the ids; on length-1 lists larger n yield nothing. */
const ngramStep: Step = (_s, _rng, ops) => {
  ops.push(op('ngram', { n: 1 }));
  return { type: 'int64', lo: -(2 ** 63), hi: 2 ** 63 };
};

/** Mapid (RAP Table 1, FG): the column's 8 hottest raw ids → 1..8, everything else → 0. */
const mapIdStep: Step = (s, _rng, ops) => {
  if (!s.raw) return null;
  const mapping: Record<string, number> = {};
  const hot = Math.min(8, s.raw.vocab);
  for (let r = 0; r < hot; r++) mapping[String(rawIdOfRank(s.raw, r))] = r + 1;
  ops.push(op('mapId', { mapping, default: 0 }));
  return { type: 'int64', lo: 0, hi: hot };
};

const DENSE_STEPS: readonly Step[] = [clampStep, castStep, logStep, logitStep, boxCoxStep, bucketizeStep];
const SPARSE_STEPS: readonly Step[] = [sparseClampStep, sigridStep, bucketizeStep, sparseCastStep, firstXStep, ngramStep, mapIdStep];

function runSteps(steps: readonly Step[], count: number, s0: ChainState, rng: Rng, ops: OpSpec[]): ChainState {
  let s = s0;
  for (let k = 0; k < count; k++) {
    for (;;) {
      const next = rng.pick(steps)(s, rng, ops);
      if (next) {
        // After any op the values are no longer the column's raw ids.
        s = { type: next.type, lo: next.lo, hi: next.hi };
        break;
      }
    }
  }
  return s;
}

/**
 * A seeded random plan over `cols` with exactly `totalOps` op steps (RAP §8.1: Plans 2 and 3 are
 * generated "by randomly applying different input preprocessing operations"). Dense features:
 * fillNull 0, then random DN/SN ops (clamp, cast, log, logit, boxCox, bucketize; sometimes ending in
 * clamp + oneHot); sparse: hex2int, fillNull 0, random (clamp, sigridHash, bucketize, cast), and a
 * final sigridHash onto the table size; `generated` extra bucketize features over I1.. .
 * Every op's preconditions are tracked (e.g. boxCox only on positive values, log only where
 * x + offset > 0), so the plan is valid for the data the preset generates.
 */
export function randomRapPlan(cols: readonly ColumnSpec[], totalOps: number, generated: number, seed: number): PlanSpec {
  const rng = new Rng(seed, 4);
  const dense = denseOf(cols);
  const sparse = sparseOf(cols);
  type Slot = { kind: 'dense' | 'sparse' | 'generated'; index: number; min: number; extra: number };
  const slots: Slot[] = [
    ...dense.map((_, index): Slot => ({ kind: 'dense', index, min: 2, extra: 0 })),
    ...Array.from({ length: generated }, (_, index): Slot => ({ kind: 'generated', index, min: 2, extra: 0 })),
    ...sparse.map((_, index): Slot => ({ kind: 'sparse', index, min: 3, extra: 0 })),
  ];
  const minOps = slots.reduce((a, s) => a + s.min, 0);
  if (totalOps < minOps) throw new Error(`randomRapPlan: ${totalOps} ops is below the minimum ${minOps} for these features`);
  for (let k = minOps; k < totalOps; k++) (slots[rng.int(slots.length)] as Slot).extra++;

  const features: FeatureSpec[] = slots.map((slot) => {
    const ops: OpSpec[] = [];
    const n = slot.min + slot.extra;
    if (slot.kind === 'sparse') {
      const c = sparse[slot.index] as HexColumnSpec | IdListColumnSpec;
      ops.push(op('hex2int'), op('fillNull', { value: 0 }));
      runSteps(SPARSE_STEPS, n - 3, { type: 'int64', lo: 0, hi: 0xffffffff, raw: c }, rng, ops);
      ops.push(op('sigridHash', { salt: 0, max: c.vocab }));
      return { name: c.name, input: c.name, kind: 'sparse', ops };
    }
    const c = dense[slot.index % dense.length] as DenseColumnSpec;
    const s0: ChainState = {
      type: c.type,
      lo: -2,
      hi: Math.min(INT32_MAX, Math.ceil(Math.exp(c.mu + 3.5 * c.sigma))),
    };
    ops.push(op('fillNull', { value: 0 }));
    if (slot.kind === 'generated') {
      const s = runSteps(DENSE_STEPS, n - 2, s0, rng, ops);
      const lo = s.type === 'float32' ? s.lo : Math.max(s.lo, 0);
      const hi = s.hi > lo ? s.hi : lo + 1;
      ops.push(op('bucketize', { borders: spanBorders(lo, hi, 1024, false) }));
      return { name: `B${slot.index + 1}`, input: c.name, kind: 'sparse', ops };
    }
    let rest = n - 1;
    const oneHot = rest >= 3 && rng.bernoulli(0.1);
    if (oneHot) rest -= 2;
    let s = runSteps(DENSE_STEPS, rest, s0, rng, ops);
    if (oneHot) {
      if (s.type === 'float32') {
        s = runSteps(DENSE_STEPS, 2, s, rng, ops); // no integer input for oneHot: spend the two ops elsewhere
      } else {
        const numClasses = rng.pick([4, 8, 16]);
        ops.push(op('clamp', { min: 0, max: numClasses - 1 }), op('oneHot', { numClasses }));
      }
    }
    return { name: c.name, input: c.name, kind: 'dense', ops };
  });
  return basePlan(features);
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

/** All presets by name. */
export const PRESETS: Readonly<Record<string, Preset>> = buildPresets();

/** The preset names, in registry order. */
export function presetNames(): string[] {
  return Object.keys(PRESETS);
}

/** The preset called `name`; throws an Error listing the valid names when there is none. */
export function getPreset(name: string): Preset {
  const p = Object.prototype.hasOwnProperty.call(PRESETS, name) ? PRESETS[name] : undefined;
  if (!p) throw new Error(`unknown preset "${name}"; valid presets: ${presetNames().join(', ')}`);
  return p;
}

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
