/**
 * The optimizer's rewrite pass: removes op steps whose result is already known to equal their
 * input (RECom §5, "eliminate redundant computation"; RAP §6 applies its fusion to what is left).
 *
 * - fillNull on a scalar that cannot be null: the Parquet footer says the column has no nulls and
 *   nothing before it can make one (fillNull of a column without nulls returns it as is, OPS.md);
 * - clamp whose input range already lies in [min, max], and modulus m on integers already in
 *   [0, m): ranges come from footer min / max and are propagated through every op before;
 * - repeated casts: a cast to the type the values already have (cast returns its input), and a
 *   widening int32 → int64 directly followed by another cast (int32 values survive int64 exactly,
 *   so the second cast alone gives the same result).
 *
 * The rewritten plan keeps every remaining op's original position (`PlanOp.index`), so errors and
 * fitted state still name the op as the user wrote it. Features with stateful ops are left as they
 * are (their fitted state is keyed by position).
 */
import type { ColumnType, PlanOp, PrimitiveType, TypedFeature, TypedPlan } from '@sluice/ops';
import type { ColumnStats } from './stats.js';

/** One removed op step and why. */
export interface Removal {
  readonly feature: string;
  readonly op: string;
  /** Position in the feature's op list as written (0-based). */
  readonly index: number;
  readonly reason: string;
}

export interface RewriteResult {
  readonly plan: TypedPlan;
  readonly removed: readonly Removal[];
}

/** What is known about a value flowing through a chain: can it be null, and a bound on its elements. */
interface Known {
  nulls: boolean;
  lo: number;
  hi: number;
}

const UNKNOWN = (): Known => ({ nulls: true, lo: -Infinity, hi: Infinity });
const el = (t: ColumnType): PrimitiveType | 'fixed' => (t.kind === 'list' ? t.child : t.kind === 'fixed' ? 'fixed' : t.kind);
const isScalar = (t: ColumnType): boolean => t.kind !== 'list' && t.kind !== 'fixed';
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/** A parameter that may be an int64 decimal string, as a number only when exact. */
function exact(v: unknown): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) {
    const n = Number(v);
    return BigInt(n) === BigInt(v) ? n : null;
  }
  return null;
}

/** The bound after op `o` (type before `t`, after `to`), from the bound before. */
function after(o: PlanOp, t: ColumnType, to: ColumnType, k: Known): Known {
  const p = o.params as Record<string, unknown>;
  const nulls = k.nulls;
  switch (o.op) {
    case 'fillNull': {
      const v = exact(p.value);
      return { nulls: isScalar(t) ? false : nulls, lo: v === null ? -Infinity : Math.min(k.lo, v), hi: v === null ? Infinity : Math.max(k.hi, v) };
    }
    case 'neg2zero':
      return { nulls, lo: Math.max(k.lo, 0), hi: Math.max(k.hi, 0) };
    case 'clamp': {
      // float32 values are clamped to the float32-rounded bounds (clamp.ts).
      const r = el(t) === 'float32' ? Math.fround : (x: number): number => x;
      const lo0 = exact(p.min);
      const hi0 = exact(p.max);
      const lo = lo0 === null ? null : r(lo0);
      const hi = hi0 === null ? null : r(hi0);
      return {
        nulls,
        lo: lo === null ? -Infinity : Math.max(Math.min(k.lo, hi ?? Infinity), lo),
        hi: hi === null ? Infinity : Math.min(Math.max(k.hi, lo ?? -Infinity), hi),
      };
    }
    case 'modulus': {
      const m = exact(p.m);
      return { nulls, lo: 0, hi: m === null ? Infinity : m - 1 };
    }
    case 'sigridHash': {
      const m = exact(p.max);
      return { nulls, lo: 0, hi: m === null ? Infinity : m - 1 };
    }
    case 'bucketize':
      return { nulls, lo: 0, hi: (p.borders as readonly number[]).length };
    case 'log': {
      const off = p.offset as number;
      if (!(k.lo + off > 0)) return { nulls, lo: -Infinity, hi: Infinity };
      // float64 log rounded once to float32: monotone, so the rounded ends bound the result.
      return { nulls, lo: Math.fround(Math.log(k.lo + off)), hi: Math.fround(Math.log(k.hi + off)) };
    }
    case 'cast': {
      const from = el(t);
      const dest = el(to);
      if (from === dest) return k;
      if (dest === 'float32') return { nulls, lo: Math.fround(k.lo), hi: Math.fround(k.hi) };
      if (from === 'int32' && dest === 'int64') return k;
      if (from === 'int64' && dest === 'int32') return k.lo >= INT32_MIN && k.hi <= INT32_MAX ? k : { nulls, lo: INT32_MIN, hi: INT32_MAX };
      // float → integer: NaN and out-of-range values become null.
      return { nulls: true, lo: Math.trunc(k.lo), hi: Math.trunc(k.hi) };
    }
    case 'mapId': {
      const vals = Object.values((p.mapping as Record<string, unknown>) ?? {}).map(exact);
      const d = exact(p.default);
      const all = [...vals, d];
      if (all.some((v) => v === null)) return { nulls, lo: -Infinity, hi: Infinity };
      return { nulls, lo: Math.min(...(all as number[])), hi: Math.max(...(all as number[])) };
    }
    case 'firstX':
      // Elements are a subset of the input's; a null scalar becomes an empty list.
      return { nulls: true, lo: k.lo, hi: k.hi };
    default:
      // hex2int (empty string → null), logit, boxCox, oneHot, ngram, cross, vocab: assume nothing.
      return UNKNOWN();
  }
}

/** Why op `o` can be dropped given what is known before it, or null when it must stay. */
function redundant(o: PlanOp, t: ColumnType, k: Known, next: PlanOp | undefined): string | null {
  const p = o.params as Record<string, unknown>;
  const e = el(t);
  switch (o.op) {
    case 'fillNull':
      return isScalar(t) && !k.nulls ? 'input has no nulls (Parquet statistics)' : null;
    case 'clamp': {
      const r = e === 'float32' ? Math.fround : (x: number): number => x;
      const lo0 = exact(p.min);
      const hi0 = exact(p.max);
      const lo = lo0 === null ? null : r(lo0);
      const hi = hi0 === null ? null : r(hi0);
      return lo !== null && hi !== null && k.lo >= lo && k.hi <= hi ? `input range [${k.lo}, ${k.hi}] is within [${lo}, ${hi}]` : null;
    }
    case 'modulus': {
      const m = exact(p.m);
      return (e === 'int32' || e === 'int64') && m !== null && k.lo >= 0 && k.hi < m ? `input range [${k.lo}, ${k.hi}] is within [0, ${m})` : null;
    }
    case 'cast':
      if (p.to === e) return `values are already ${e}`;
      if (e === 'int32' && p.to === 'int64' && next?.op === 'cast') return 'widening int32 → int64 directly followed by another cast';
      return null;
    default:
      return null;
  }
}

/** Removes redundant op steps of one feature; returns the kept ops and what was removed. */
function rewriteFeature(f: TypedFeature, stats: ReadonlyMap<string, ColumnStats>): { ops: PlanOp[]; removed: Removal[] } {
  if (f.ops.some((o) => o.def.stateful)) return { ops: [...f.ops], removed: [] };
  let ops = [...f.ops];
  const removed: Removal[] = [];
  // Each removal can expose another (a cast pair collapsing to a same-type cast): repeat to a fixpoint.
  for (let changed = true; changed;) {
    changed = false;
    const s = stats.get(f.input);
    const scalarIn = isScalar(f.inputType);
    let k: Known = scalarIn && s ? { nulls: s.nulls !== 0, lo: s.min ?? -Infinity, hi: s.max ?? Infinity } : UNKNOWN();
    let t = f.inputType;
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i]!;
      const why = redundant(o, t, k, ops[i + 1]);
      if (why !== null) {
        removed.push({ feature: f.name, op: o.op, index: o.index, reason: why });
        ops = ops.filter((_, j) => j !== i);
        changed = true;
        break;
      }
      const to = o.def.outputType(t, o.params, { featureTypes: new Map() });
      k = after(o, t, to, k);
      t = to;
    }
  }
  return { ops, removed };
}

/**
 * Drops redundant op steps from every feature of a typed plan, using footer statistics of the
 * input columns where given. Output columns are unchanged, bit for bit.
 *
 * @example
 * const { plan: lean, removed } = eliminateRedundant(typed, await readColumnStats(files, typed.columns));
 */
export function eliminateRedundant(plan: TypedPlan, stats: ReadonlyMap<string, ColumnStats> = new Map()): RewriteResult {
  const removed: Removal[] = [];
  const featureTypes = new Map<string, ColumnType>();
  const features = plan.features.map((f): TypedFeature => {
    featureTypes.set(f.name, f.outputType);
    if (f.ops.some((o) => o.op === 'cross')) return f;
    const r = rewriteFeature(f, stats);
    if (r.removed.length === 0) return f;
    let t = f.inputType;
    const types = r.ops.map((o) => (t = o.def.outputType(t, o.params, { featureTypes })));
    // A removal never changes what the feature produces; if the type did, keep the feature as is.
    if (JSON.stringify(t) !== JSON.stringify(f.outputType)) return f;
    removed.push(...r.removed);
    return { ...f, ops: r.ops, types, outputType: t };
  });
  return { plan: { ...plan, features }, removed };
}

/** Op steps in a plan. */
export const countOps = (plan: Pick<TypedPlan, 'features'>): number => plan.features.reduce((a, f) => a + f.ops.length, 0);
