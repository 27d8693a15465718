/**
 * RAP Plans 2 and 3 (`rap-plan2`, `rap-plan3` presets): seeded random compositions of RAP Table 1's
 * ops (plus hex2int for the hex inputs, and log) with the exact op count of RAP Table 3. Each step
 * tracks the type and value range of the column so far, so every op it appends is valid there.
 */
import type { FeatureSpec, OpSpec, PlanSpec } from '@sluice/ops';
import { Rng } from '../util/rng.js';
import { basePlan, denseOf, op, rawIdOfRank, sparseOf, type ColumnSpec, type DenseColumnSpec, type HexColumnSpec, type IdListColumnSpec } from './spec.js';

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
