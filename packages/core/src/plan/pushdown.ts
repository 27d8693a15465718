/**
 * Pushdown of per-value op chains into the Parquet reader (RECom §4: do not compute the same
 * thing twice).
 *
 * A feature whose every op maps one value to one value (fillNull, cast, neg2zero, clamp, log,
 * logit, boxCox, bucketize, hex2int, sigridHash, modulus) gives, for row i, f(input[i]). When the
 * input column is dictionary-encoded in the file, the reader can run f once per dictionary entry
 * (plus once on null) and gather the results by the row's index: the strings of a hex column are
 * never expanded, and a 100k-row row group with 5k distinct values runs the ops 5k times.
 *
 * A list feature (a numeric list input, RM5's id lists) whose ops are per-value ops and firstX is
 * pushed down the same way: the per-value ops run on the dictionary of the list's elements and
 * are gathered by each element's index, and firstX cuts each list to its first x elements. A
 * per-value op acts on each element and firstX only on the lengths, so the two commute and the
 * result is the chain's, in any order.
 *
 * The result is a *derived column* per distinct (input, op chain); features that share both share
 * it, and the derived column is the feature's output: the backend runs only the other features.
 * PLAIN pages are computed value by value into the same derived column (reader/parquet/plain.ts).
 * Where the reader cannot push down (a DELTA page, a codec or type the direct decoder does not
 * read, a value the ops reject), the chunk carries the raw input instead and the pipeline computes
 * the derived column from it with the feature's own ops, so errors name the feature, op and row
 * exactly as without pushdown. Shuffled reads push down the same way: the shuffle then permutes
 * the computed columns (stream/shuffle.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import { loadPlan, typeCheckPlan, type ColumnType, type FeatureSpec, type TypedFeature, type TypedPlan } from '@sluice/ops';
import { isS3Url, isUrl } from '../util/url.js';

/** Ops whose output for a row depends only on that row's input value (and that keep no state). */
export const PER_VALUE_OPS: ReadonlySet<string> = new Set([
  'fillNull',
  'cast',
  'neg2zero',
  'clamp',
  'log',
  'logit',
  'boxCox',
  'bucketize',
  'hex2int',
  'sigridHash',
  'modulus',
]);

export interface DerivedColumn {
  /** Column name the backend plan reads (not a name a Parquet file would use). */
  readonly name: string;
  /** The raw input column. */
  readonly input: string;
  readonly type: ColumnType;
  /** The op chain, as plan op name and validated params (what the reader runs). */
  readonly ops: ReadonlyArray<{ readonly op: string; readonly params: unknown }>;
  /** A feature that computes it, for the pipeline's fallback and its error messages. */
  readonly feature: TypedFeature;
}

export interface Pushdown {
  readonly derived: readonly DerivedColumn[];
  /** Output feature name -> the derived column that is its value. */
  readonly outputs: ReadonlyMap<string, string>;
  /** The plan the backend runs: the features that were not pushed down; null when none are left. */
  readonly plan: TypedPlan | null;
}

/**
 * Whether the reader can compute op chains for a read of `dataset` (pushdown): local files or
 * s3:// objects only (both go through the direct decoder; http(s) URLs do not). Shuffled reads
 * too: the op chains map one value to one value, so computing them before the shuffle permutes
 * the rows gives what computing them after would (stream/shuffle.ts). Takes any object with the
 * files' sources (a reader `Dataset`), so that plan/ does not depend on the reader. The plan
 * sets no condition now; its callers keep passing it for the day one does.
 */
export const readerCanCompute = (dataset: { readonly files: ReadonlyArray<{ readonly source: string }> }, _plan: TypedPlan): boolean =>
  !dataset.files.some((f) => isUrl(f.source) && !isS3Url(f.source));

/** True when the reader computes every feature, so no backend work is left (the plan runs in the decoders). */
export const allInReader = (pd: Pushdown | null): pd is Pushdown & { readonly plan: null } => pd !== null && pd.plan === null;

const isScalar = (t: ColumnType): boolean => t.kind !== 'list' && t.kind !== 'fixed';
/** A list of numbers: what the reader's own Parquet decoder reads (reader/). */
const isNumericList = (t: ColumnType): boolean => t.kind === 'list' && t.child !== 'utf8';

/** Features that a cross op reads by name: they stay with the backend, which computes them in order. */
const crossedNames = (plan: TypedPlan): Set<string> =>
  new Set(plan.features.flatMap((f) => f.ops.filter((o) => o.op === 'cross').flatMap((o) => (o.params as { inputs: readonly string[] }).inputs)));

/**
 * Whether the reader can compute a feature: per-value, stateless ops from a scalar to a
 * non-string scalar, or per-value ops and firstX from a list of numbers to a list of numbers; and
 * not crossed.
 */
const pushable = (f: TypedFeature, crossed: ReadonlySet<string>): boolean =>
  f.ops.length > 0 &&
  ((isScalar(f.inputType) && isScalar(f.outputType) && f.outputType.kind !== 'utf8' && f.ops.every((o) => PER_VALUE_OPS.has(o.op))) ||
    (isNumericList(f.inputType) && isNumericList(f.outputType) && f.ops.every((o) => PER_VALUE_OPS.has(o.op) || o.op === 'firstX'))) &&
  f.ops.every((o) => !o.def.stateful) &&
  // A feature another feature crosses by name stays with the backend (cross looks it up by name).
  !crossed.has(f.name);

/**
 * How much of a plan `planPushdown` would push into the reader — no feature, some, or all —
 * without building the split (cheap: auto asks this for every run).
 */
export function pushdownExtent(plan: TypedPlan): 'none' | 'some' | 'all' {
  if (plan.spec.features.length !== plan.features.length) return 'none';
  const crossed = crossedNames(plan);
  const n = plan.features.filter((f) => pushable(f, crossed)).length;
  return n === 0 ? 'none' : n === plan.features.length ? 'all' : 'some';
}

/** Splits a typed plan into derived columns for the reader and a plan for the backend, or null when nothing can be pushed. */
export function planPushdown(plan: TypedPlan): Pushdown | null {
  const derived: DerivedColumn[] = [];
  const byInput = new Map<string, DerivedColumn[]>();
  const specs: FeatureSpec[] = [];
  const schema = new Map<string, ColumnType>();
  const crossed = crossedNames(plan);
  const outputs = new Map<string, string>();
  if (plan.spec.features.length !== plan.features.length) return null;
  for (const [i, f] of plan.features.entries()) {
    if (!pushable(f, crossed)) {
      specs.push(plan.spec.features[i]!);
      schema.set(f.input, f.inputType);
      continue;
    }
    // Features with the same input and the same op chain share a derived column. Params are
    // compared as values (isDeepStrictEqual: -0 is not 0), not by a JSON key, which is slow for
    // long bucketize borders and would make fillNull(-0) share fillNull(0)'s column.
    const same = byInput.get(f.input) ?? [];
    let d = same.find((c) => c.ops.length === f.ops.length && c.ops.every((o, k) => o.op === f.ops[k]!.op && isDeepStrictEqual(o.params, f.ops[k]!.params)));
    if (d === undefined) {
      d = {
        name: `${f.input}\u241f${derived.length}`,
        input: f.input,
        type: f.outputType,
        ops: f.ops.map((o) => ({ op: o.op, params: o.params })),
        feature: f,
      };
      byInput.set(f.input, [...same, d]);
      derived.push(d);
    }
    outputs.set(f.name, d.name);
  }
  if (derived.length === 0) return null;
  if (plan.label !== null && plan.labelType !== null) schema.set(plan.label, { kind: plan.labelType });
  const backendPlan = specs.length === 0 ? null : typeCheckPlan(loadPlan({ ...plan.spec, features: specs }), schema);
  return { derived, outputs, plan: backendPlan };
}
