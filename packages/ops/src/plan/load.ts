import { isIntegerType, isNumericType, typeName, type ColumnType, type PrimitiveType } from '../column.js';
import { PlanError } from '../errors.js';
import { OPS } from '../ops/index.js';
import { OpPlanError, type OpDef } from '../ops/types.js';
import type { BackendSpec, FeatureSpec, OpSpec, PlanSpec } from './types.js';
import { show } from '../util/show.js';
import { parseJsonText, readJsonFile } from '../util/json-text.js';

/** One validated op step. */
export interface PlanOp {
  readonly op: string;
  readonly def: OpDef;
  readonly params: unknown;
  /** Position in the feature's op list (0-based), for error messages. */
  readonly index: number;
}

export interface PlanFeature {
  readonly name: string;
  readonly input: string;
  readonly kind: 'dense' | 'sparse';
  readonly ops: readonly PlanOp[];
}

/**
 * A plan after load-time validation, with defaults filled in (what {@link loadPlan} returns).
 *
 * @example
 * const plan: Plan = loadPlan('plan.json');
 * console.log(plan.batchSize, plan.features.map((f) => f.name));
 */
export interface Plan {
  readonly batchSize: number;
  readonly dropLast: boolean;
  readonly backend: BackendSpec;
  readonly label: string | null;
  readonly features: readonly PlanFeature[];
  readonly input: readonly string[] | null;
  readonly shuffle: { readonly seed: number; readonly bufferRows: number } | null;
  readonly epochs: number;
  readonly shard: { readonly rank: number; readonly worldSize: number };
  readonly prefetch: number;
  /** The plan as written, for `state()` fingerprints and `sluice serve /v1/info`. */
  readonly spec: PlanSpec;
}

export const DEFAULT_BATCH_SIZE = 8192;
export const DEFAULT_PREFETCH = 4;
/**
 * The most threads a pipeline starts of one kind (the cpu backend's `workers`, `decoders`): a bound
 * on a typo (`workers: 1000`), checked by the plan's backend, pipeline() and the command line alike.
 */
export const MAX_THREADS = 256;
export const DEFAULT_SHUFFLE_BUFFER = 100_000;

/** The fields a plan may have (pipeline options name them when one is put among the options instead). */
export const PLAN_FIELDS: ReadonlySet<string> = new Set([
  'batchSize',
  'dropLast',
  'backend',
  'label',
  'features',
  'input',
  'shuffle',
  'epochs',
  'shard',
  'prefetch',
  'verifyCrc',
]);
const FEATURE_KEYS = new Set(['name', 'input', 'kind', 'ops']);

/** An input as a plan or `pipeline()` takes it: a path, URL or glob, or a non-empty list of them (none empty). */
export function isInputSpec(v: unknown): v is string | readonly string[] {
  return (typeof v === 'string' && v !== '') || (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x !== ''));
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isPosInt = (x: unknown): x is number => Number.isInteger(x) && (x as number) > 0;

/**
 * Validates a plan (object, JSON text, or path to a .json file) and fills defaults. Every problem
 * is reported with the feature, op and reason; nothing about the data is checked yet (see
 * {@link typeCheckPlan}).
 *
 * @example
 * const plan = loadPlan({ features: [{ name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'log' }] }] });
 */
export function loadPlan(source: PlanSpec | Plan | string | unknown): Plan {
  if (isLoadedPlan(source)) return source;
  let raw: unknown = source;
  if (typeof source === 'string') {
    const inline = source
      .replace(/^\uFEFF/, '')
      .trimStart()
      .startsWith('{');
    raw = inline ? parseJsonText(source, 'plan') : readJsonFile(source, 'plan file');
  }
  if (!isObj(raw)) throw new PlanError('plan must be a JSON object');
  for (const k of Object.keys(raw)) if (!PLAN_FIELDS.has(k)) throw new PlanError(`unknown plan field "${k}" (expected one of ${[...PLAN_FIELDS].join(', ')})`);
  const spec = raw as unknown as PlanSpec;

  const batchSize = spec.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!isPosInt(batchSize)) throw new PlanError(`batchSize must be a positive integer, got ${show(spec.batchSize)}`);
  const dropLast = spec.dropLast ?? false;
  if (typeof dropLast !== 'boolean') throw new PlanError('dropLast must be true or false');
  const prefetch = spec.prefetch ?? DEFAULT_PREFETCH;
  if (!isPosInt(prefetch)) throw new PlanError(`prefetch must be a positive integer, got ${show(spec.prefetch)}`);
  if (spec.verifyCrc !== undefined && typeof spec.verifyCrc !== 'boolean') throw new PlanError(`verifyCrc must be true or false, got ${show(spec.verifyCrc)}`);
  const epochs = spec.epochs ?? 1;
  if (!isPosInt(epochs)) throw new PlanError(`epochs must be a positive integer, got ${show(spec.epochs)}`);

  let backend: BackendSpec;
  if (spec.backend === undefined) backend = { name: 'cpu' };
  else if (typeof spec.backend === 'string') backend = { name: spec.backend };
  else if (isObj(spec.backend) && typeof spec.backend.name === 'string' && spec.backend.name !== '') backend = { ...spec.backend };
  else throw new PlanError('backend must be a name or an object with a "name"');

  const label = spec.label ?? null;
  if (label !== null && (typeof label !== 'string' || label === '')) throw new PlanError('label must be a column name');

  let input: string[] | null = null;
  if (spec.input !== undefined) {
    if (!isInputSpec(spec.input)) throw new PlanError('input must be a path, URL or glob, or a non-empty list of them');
    input = typeof spec.input === 'string' ? [spec.input] : [...spec.input];
  }

  let shuffle: Plan['shuffle'] = null;
  if (spec.shuffle !== undefined && spec.shuffle !== false) {
    if (!isObj(spec.shuffle) || !Number.isInteger(spec.shuffle.seed)) throw new PlanError('shuffle must be false or {"seed": integer, "bufferRows"?: integer}');
    const bufferRows = spec.shuffle.bufferRows ?? DEFAULT_SHUFFLE_BUFFER;
    if (!Number.isInteger(bufferRows) || bufferRows < 0) throw new PlanError('shuffle.bufferRows must be a non-negative integer');
    shuffle = { seed: spec.shuffle.seed, bufferRows };
  }

  let shard = { rank: 0, worldSize: 1 };
  if (spec.shard !== undefined) {
    const s = spec.shard as unknown;
    if (!isObj(s) || !Number.isInteger(s.rank) || !isPosInt(s.worldSize) || (s.rank as number) < 0 || (s.rank as number) >= (s.worldSize as number)) {
      throw new PlanError('shard must be {"rank": r, "worldSize": w} with 0 <= r < w');
    }
    shard = { rank: s.rank as number, worldSize: s.worldSize as number };
  }

  if (!Array.isArray(spec.features) || spec.features.length === 0) throw new PlanError('features must be a non-empty list');
  const names = new Set<string>();
  const features = spec.features.map((f, i) => loadFeature(f, i, names));
  // Outputs are columns by name (run's Parquet, HTTP batches): the label must not share one.
  if (label !== null && names.has(label)) throw new PlanError(`feature name clashes with the label column "${label}"; rename the feature`, { feature: label });

  return { batchSize, dropLast, backend, label, features, input, shuffle, epochs, shard, prefetch, spec };
}

/** A plan that already went through loadPlan (its ops carry their definitions). */
function isLoadedPlan(p: unknown): p is Plan {
  return isObj(p) && 'spec' in p && Array.isArray(p.features) && p.features.every((f: PlanFeature) => Array.isArray(f.ops) && f.ops.every((o) => 'def' in o));
}

function loadFeature(f: FeatureSpec | unknown, i: number, names: Set<string>): PlanFeature {
  if (!isObj(f)) throw new PlanError(`features[${i}] must be an object`);
  const name = f.name;
  if (typeof name !== 'string' || name === '') throw new PlanError(`features[${i}] needs a "name"`);
  const where = { feature: name };
  if (names.has(name)) throw new PlanError('duplicate feature name', where);
  names.add(name);
  for (const k of Object.keys(f)) if (!FEATURE_KEYS.has(k)) throw new PlanError(`unknown field "${k}" (expected name, input, kind, ops)`, where);
  if (typeof f.input !== 'string' || f.input === '') throw new PlanError('needs an "input" column name', where);
  if (f.kind !== 'dense' && f.kind !== 'sparse') throw new PlanError(`kind must be "dense" or "sparse", got ${show(f.kind)}`, where);
  const opsRaw = f.ops ?? [];
  if (!Array.isArray(opsRaw)) throw new PlanError('ops must be a list', where);
  const ops = opsRaw.map((o: OpSpec | unknown, index): PlanOp => {
    if (!isObj(o) || typeof o.op !== 'string') throw new PlanError(`ops[${index}] must be an object with an "op"`, where);
    const def = OPS.get(o.op);
    const opWhere = { feature: name, op: `${o.op} (#${index + 1})` };
    if (def === undefined) throw new PlanError(`unknown op (known: ${[...OPS.keys()].join(', ')})`, opWhere);
    const { op: _op, ...params } = o;
    void _op;
    try {
      return { op: o.op, def, params: def.validate(params), index };
    } catch (e) {
      if (e instanceof OpPlanError) throw new PlanError(e.message, opWhere);
      throw e;
    }
  });
  return { name, input: f.input, kind: f.kind, ops };
}

/** A feature with the static type after each of its ops. */
export interface TypedFeature extends PlanFeature {
  readonly inputType: ColumnType;
  /** types[k] is the type after ops[k]. */
  readonly types: readonly ColumnType[];
  readonly outputType: ColumnType;
  /** Dense width: 1, or numClasses for a fixed-size vector. 0 for sparse features. */
  readonly width: number;
}

/**
 * A plan checked against an input schema: each feature's type after every op, and the columns to read.
 *
 * @example
 * const typed: TypedPlan = typeCheckPlan(loadPlan('plan.json'), new Map([['I1', { kind: 'int32' }], ['label', { kind: 'float32' }]]));
 * console.log(typed.columns, typed.features[0]!.outputType);
 */
export interface TypedPlan extends Plan {
  readonly features: readonly TypedFeature[];
  /** Input columns to read (features' inputs and the label), in first-use order. */
  readonly columns: readonly string[];
  readonly labelType: PrimitiveType | null;
}

/**
 * Checks a plan against the input schema: every input exists, every op accepts the type it gets,
 * dense features end numeric, sparse features end integer. Errors name the feature, op and why.
 *
 * @example
 * const schema = new Map([['I1', { kind: 'int32' as const }], ['label', { kind: 'float32' as const }]]);
 * const typed = typeCheckPlan(loadPlan({ label: 'label', features: [{ name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'log', offset: 1 }] }] }), schema);
 */
export function typeCheckPlan(
  plan: Plan,
  schema: ReadonlyMap<string, ColumnType>,
  where = 'the input',
  unsupported: ReadonlyMap<string, string> = new Map(),
): TypedPlan {
  const featureTypes = new Map<string, ColumnType>();
  const columns: string[] = [];
  const need = (c: string): void => {
    if (!columns.includes(c)) columns.push(c);
  };
  const features = plan.features.map((f): TypedFeature => {
    const inputType = schema.get(f.input);
    if (inputType === undefined && unsupported.has(f.input)) {
      throw new PlanError(
        `input column "${f.input}" has type ${unsupported.get(f.input)}, which Sluice does not read (integers, float, double, UTF-8 strings and lists of those); cast it when writing the file`,
        { feature: f.name },
      );
    }
    if (inputType === undefined) {
      throw new PlanError(
        `input column "${f.input}" is not in ${where} (columns: ${[...schema.keys()].slice(0, 20).join(', ')}${schema.size > 20 ? ', …' : ''})`,
        { feature: f.name },
      );
    }
    need(f.input);
    let t = inputType;
    const types = f.ops.map((o) => {
      try {
        t = o.def.outputType(t, o.params, { featureTypes });
      } catch (e) {
        if (e instanceof OpPlanError) throw new PlanError(e.message, { feature: f.name, op: `${o.op} (#${o.index + 1})` });
        throw e;
      }
      return t;
    });
    let width = 0;
    if (f.kind === 'dense') {
      if (t.kind === 'fixed') width = t.size;
      else if (t.kind !== 'list' && isNumericType(t.kind)) width = 1;
      else throw new PlanError(`a dense feature must end as a numeric scalar, got ${typeName(t)}`, { feature: f.name });
    } else {
      const el = t.kind === 'list' ? t.child : t.kind;
      if (t.kind === 'fixed' || el === 'fixed' || !isIntegerType(el as PrimitiveType)) {
        throw new PlanError(`a sparse feature must end as integer ids (scalar or list), got ${typeName(t)}; add hex2int, sigridHash, bucketize or cast`, {
          feature: f.name,
        });
      }
    }
    featureTypes.set(f.name, t);
    return { ...f, inputType, types, outputType: t, width };
  });
  let labelType: PrimitiveType | null = null;
  if (plan.label !== null) {
    const lt = schema.get(plan.label);
    if (lt === undefined) throw new PlanError(`label column "${plan.label}" is not in ${where}`);
    if (lt.kind === 'list' || lt.kind === 'fixed' || !isNumericType(lt.kind))
      throw new PlanError(`label column "${plan.label}" must be numeric, got ${typeName(lt)}`);
    labelType = lt.kind;
    need(plan.label);
  }
  return { ...plan, features, columns, labelType };
}
