/**
 * What the workload presets (presets.ts) and the RAP plan generator (rap-plans.ts) share: the
 * column specs the data generator reads, the raw id a column writes for each rank, and the small
 * helpers both use to build plans.
 */
import type { FeatureSpec, OpSpec, PlanSpec } from '@sluice/ops';
import { mix32 } from '../util/rng.js';

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

/** PreSto §III: batch size 8,192. */
const BATCH_SIZE = 8192;

/** One op step of a plan: `op('log', { offset: 1 })` is `{ op: 'log', offset: 1 }`. */
export const op = (name: string, params: Record<string, unknown> = {}): OpSpec => ({ op: name, ...params });

/** A plan over `features` with the presets' batch size, the cpu backend and the `label` column. */
export function basePlan(features: FeatureSpec[]): PlanSpec {
  return { batchSize: BATCH_SIZE, backend: { name: 'cpu' }, label: 'label', features };
}

/** The dense columns of a schema, in order. */
export function denseOf(cols: readonly ColumnSpec[]): DenseColumnSpec[] {
  return cols.filter((c): c is DenseColumnSpec => c.kind === 'dense');
}

/** The sparse (hex and id-list) columns of a schema, in order. */
export function sparseOf(cols: readonly ColumnSpec[]): (HexColumnSpec | IdListColumnSpec)[] {
  return cols.filter((c): c is HexColumnSpec | IdListColumnSpec => c.kind === 'hex' || c.kind === 'idList');
}
