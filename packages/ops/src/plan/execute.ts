import type { Column, ColumnType } from '../column.js';
import { DataError, PlanError, SluiceError, type ErrorWhere } from '../errors.js';
import { OpDataError, OpPlanError, type OpContext, type StatefulOpDef } from '../ops/types.js';
import { OPS } from '../ops/index.js';
import type { PlanOp, TypedFeature, TypedPlan } from './load.js';

/** Fitted state of stateful ops, keyed by {@link stateKey}. */
export type PlanState = ReadonlyMap<string, unknown>;

/** Key of a stateful op's state: feature name and op position. */
export const stateKey = (feature: string, opIndex: number): string => `${feature}#${opIndex}`;

/** Maps a row of the chunk being processed back to its file, row group and file row. */
export type RowLocator = (row: number) => ErrorWhere;

/**
 * A faster kernel for an op, tried before the reference one; it returns undefined for inputs it
 * does not handle. Backends pass these in; the reference kernel stays the oracle.
 */
export type KernelOverride = (input: Column, params: unknown, ctx: OpContext) => Column | undefined;
export type KernelOverrides = ReadonlyMap<string, KernelOverride>;

const noLocation: RowLocator = (row) => ({ row });

/** What {@link runOps} reads of a feature: its name, its input column and its ops. */
export type OpChainFeature = Pick<TypedFeature, 'name' | 'input' | 'ops'>;

/** An op chain as plain data (op names and validated params), as a plan's ops cross to another thread. */
export type OpChain = ReadonlyArray<{ readonly op: string; readonly params: unknown }>;

/**
 * Feature `name`'s op chain on column `input`, received as plain data, made runnable by
 * {@link runOps}: each op's kernel looked up by name. A decode worker runs pushed-down chains on
 * dictionaries with it (plan/pushdown.ts in @sluice/core).
 */
export function chainFeature(name: string, input: string, chain: OpChain): OpChainFeature {
  const ops = chain.map(({ op, params }, index): PlanOp => {
    const def = OPS.get(op);
    if (def === undefined) throw new PlanError('unknown op', { feature: name, op: `${op} (#${index + 1})` });
    return { op, def, params, index };
  });
  return { name, input, ops };
}

/**
 * Runs ops [from, to) of a feature on `col` with core's kernels (or `overrides`), turning a kernel
 * failure into an error that names the feature, op, column and (for bad data) the row. Backends
 * that run part of a chain elsewhere (a GPU) run the rest with this.
 */
export function runOps(
  f: OpChainFeature,
  col: Column,
  from: number,
  to: number,
  features: ReadonlyMap<string, Column>,
  featureTypes: ReadonlyMap<string, ColumnType>,
  state: PlanState,
  locate: RowLocator = noLocation,
  overrides?: KernelOverrides,
): Column {
  for (let k = from; k < to; k++) {
    const o = f.ops[k]!;
    // o.index is the op's position as written: an optimized chain may have dropped ops before it.
    const ctx: OpContext = { features, featureTypes, column: f.input, state: o.def.stateful ? state.get(stateKey(f.name, o.index)) : undefined };
    try {
      col = overrides?.get(o.op)?.(col, o.params, ctx) ?? o.def.apply(col, o.params, ctx);
    } catch (e) {
      const opName = `${o.op} (#${o.index + 1})`;
      if (e instanceof OpDataError) throw new DataError(e.message, { ...locate(e.row), column: f.input, feature: f.name, op: opName }, { cause: e });
      if (e instanceof OpPlanError) throw new PlanError(e.message, { feature: f.name, op: opName }, { cause: e });
      if (e instanceof SluiceError) throw e;
      throw new SluiceError(`op failed: ${(e as Error).message}`, { ...locate(0), feature: f.name, op: opName }, { cause: e });
    }
  }
  return col;
}

/** Runs one feature's op chain on its input column, stopping before op `stop` (default: all ops). */
export function runFeature(
  f: TypedFeature,
  input: Column,
  features: ReadonlyMap<string, Column>,
  featureTypes: ReadonlyMap<string, ColumnType>,
  state: PlanState,
  locate: RowLocator = noLocation,
  stop = f.ops.length,
  overrides?: KernelOverrides,
): Column {
  return runOps(f, input, 0, stop, features, featureTypes, state, locate, overrides);
}

/**
 * Runs every feature of a plan over one chunk of input columns with the reference kernels.
 * Returns output columns by feature name (the in-process CPU path and the oracle for backends).
 */
export function executePlan(
  plan: TypedPlan,
  columns: ReadonlyMap<string, Column>,
  state: PlanState = new Map(),
  locate?: RowLocator,
  overrides?: KernelOverrides,
): Map<string, Column> {
  const out = new Map<string, Column>();
  const types = new Map<string, ColumnType>();
  for (const f of plan.features) {
    out.set(f.name, runFeature(f, columns.get(f.input)!, out, types, state, locate, f.ops.length, overrides));
    types.set(f.name, f.outputType);
  }
  return out;
}

/** Does the plan have stateful ops (and so need `sluice fit` before `run`)? */
export function statefulOps(plan: TypedPlan): Array<{ feature: TypedFeature; index: number }> {
  const found: Array<{ feature: TypedFeature; index: number }> = [];
  for (const f of plan.features)
    f.ops.forEach((o, index) => {
      if (o.def.stateful) found.push({ feature: f, index });
    });
  return found;
}

/**
 * Builds the state of stateful ops (vocabularies) from chunks of input. Each pass fits the next
 * stateful op of every feature, running the chain before it with what earlier passes fitted; a
 * plan with one vocab per feature needs one pass. `chunks` is called once per pass.
 */
export async function fitPlan(
  plan: TypedPlan,
  chunks: () => AsyncIterable<{ columns: ReadonlyMap<string, Column>; locate?: RowLocator }>,
): Promise<Map<string, unknown>> {
  const state = new Map<string, unknown>();
  const passes = Math.max(0, ...plan.features.map((f) => f.ops.filter((o) => o.def.stateful).length));
  for (let pass = 0; pass < passes; pass++) {
    // The pass-th stateful op of each feature.
    const targets = plan.features.flatMap((f) => {
      const idx = f.ops.map((o, i) => (o.def.stateful ? i : -1)).filter((i) => i >= 0);
      return idx.length > pass ? [{ feature: f, index: idx[pass]!, def: f.ops[idx[pass]!]!.def as StatefulOpDef<unknown, unknown, unknown> }] : [];
    });
    const accs = targets.map((t) => t.def.createAccumulator(t.feature.ops[t.index]!.params));
    for await (const chunk of chunks()) {
      // Cross features read earlier features' outputs, so every feature runs in plan order.
      const out = new Map<string, Column>();
      const types = new Map<string, ColumnType>();
      for (const f of plan.features) {
        const input = chunk.columns.get(f.input)!;
        targets.forEach((t, k) => {
          if (t.feature !== f) return;
          const before = runFeature(f, input, out, types, state, chunk.locate, t.index);
          t.def.observe(accs[k], before, f.ops[t.index]!.params);
        });
        const laterStateful = f.ops.findIndex((o, i) => o.def.stateful && !state.has(stateKey(f.name, i)));
        out.set(f.name, runFeature(f, input, out, types, state, chunk.locate, laterStateful < 0 ? f.ops.length : laterStateful));
        types.set(f.name, f.outputType);
      }
    }
    targets.forEach((t, k) => state.set(stateKey(t.feature.name, t.index), t.def.finish(accs[k], t.feature.ops[t.index]!.params)));
  }
  return state;
}

/** JSON form of fitted state for `sluice fit --out`. */
export function stateToJSON(plan: TypedPlan, state: PlanState): { version: 1; ops: Record<string, unknown> } {
  const ops: Record<string, unknown> = {};
  for (const { feature, index } of statefulOps(plan)) {
    const key = stateKey(feature.name, index);
    const s = state.get(key);
    if (s !== undefined) ops[key] = { op: feature.ops[index]!.op, state: (feature.ops[index]!.def as StatefulOpDef<unknown, unknown, unknown>).stateToJSON(s) };
  }
  return { version: 1, ops };
}

/** Reads fitted state written by {@link stateToJSON}, checking it covers every stateful op of the plan. */
export function stateFromJSON(plan: TypedPlan, json: unknown, source = 'the state file'): Map<string, unknown> {
  const ops = (json as { version?: unknown; ops?: unknown })?.ops;
  if ((json as { version?: unknown })?.version !== 1 || typeof ops !== 'object' || ops === null)
    throw new PlanError(`${source} is not a Sluice fit state (expected {"version": 1, "ops": {...}})`);
  const state = new Map<string, unknown>();
  for (const { feature, index } of statefulOps(plan)) {
    const key = stateKey(feature.name, index);
    const entry = (ops as Record<string, { op?: string; state?: unknown }>)[key];
    const where = { feature: feature.name, op: `${feature.ops[index]!.op} (#${index + 1})` };
    if (entry === undefined) throw new PlanError(`${source} has no fitted state for this op; run \`sluice fit\` with this plan`, where);
    try {
      state.set(key, (feature.ops[index]!.def as StatefulOpDef<unknown, unknown, unknown>).stateFromJSON(entry.state));
    } catch (e) {
      throw new PlanError(`${source}: invalid state (${(e as Error).message})`, where);
    }
  }
  return state;
}
