/**
 * `sluice explain`: what the optimizer does to a plan on a backend — op steps before and after,
 * the stages, and kernel launches per batch — without reading any data beyond Parquet footers.
 */
import type { ColumnType } from '@sluice/ops';
import { PlanError } from '@sluice/ops';
import { PRESETS } from '../gen/presets.js';
import { presetArrowSchema } from '../gen/generate.js';
import { arrowColumnType } from '../reader/arrow.js';
import type { Backend } from '../backend/types.js';
import { buildGraph, scheduleStages, type PlanGraph, type Schedule } from './graph.js';
import { loadPlan, typeCheckPlan, type Plan, type TypedPlan } from '@sluice/ops';
import { countOps, eliminateRedundant, type Removal } from './optimize.js';
import type { ColumnStats } from './stats.js';

/** A backend's own graph and schedule: what it really launches per chunk. */
export interface StagedPlan {
  readonly graph: PlanGraph;
  readonly schedule: Schedule;
}

/** One stage as explain reports it. */
export interface ExplainStage {
  readonly index: number;
  readonly device: string;
  readonly kind: string;
  /** Fused nodes in the stage (one per feature sub-chain). */
  readonly nodes: number;
  /** Op steps the stage runs per chunk. */
  readonly ops: number;
  readonly opTypes: Record<string, number>;
  /** Kernel launches for the stage (its shards). */
  readonly kernels: number;
  /** Placement by the cost model (`backend: "auto"`), when there is one. */
  readonly backend?: string;
}

/** The JSON of `sluice explain --json`. */
export interface Explain {
  readonly backend: string;
  /** Op steps in the plan as written. */
  readonly ops: number;
  /** Distinct op names in the plan. */
  readonly opTypes: number;
  readonly opTypeNames: readonly string[];
  /** Op steps left after redundancy elimination. */
  readonly opsAfterRewrite: number;
  /** Op steps run per batch once features share common sub-chains. */
  readonly opsExecuted: number;
  readonly removed: readonly Removal[];
  /** Vertically fused nodes (kernels without horizontal fusion). */
  readonly nodes: number;
  readonly kernelsPerBatch: number;
  readonly kernelsByDevice: Record<string, number>;
  readonly search: Schedule['search'];
  readonly lowerBound: number;
  readonly stages: readonly ExplainStage[];
}

/** Summarises a backend's staged plan against the plan as written. */
export function explainStaged(original: TypedPlan, staged: StagedPlan, backend: string, removed: readonly Removal[]): Explain {
  const names = [...new Set(original.features.flatMap((f) => f.ops.map((o) => o.op)))].sort();
  const kernelsByDevice: Record<string, number> = {};
  const stages = staged.schedule.stages.map((s, index): ExplainStage => {
    const opTypes: Record<string, number> = {};
    let ops = 0;
    for (const id of s.nodes) {
      const n = staged.graph.nodes[id]!;
      for (let k = n.from; k < n.to; k++) { const op = n.feature.ops[k]!.op; opTypes[op] = (opTypes[op] ?? 0) + 1; ops++; }
    }
    kernelsByDevice[s.device] = (kernelsByDevice[s.device] ?? 0) + s.shards.length;
    return { index, device: s.device, kind: s.kind, nodes: s.nodes.length, ops, opTypes, kernels: s.shards.length };
  });
  return {
    backend,
    ops: countOps(original),
    opTypes: names.length,
    opTypeNames: names,
    opsAfterRewrite: countOps(staged.graph.plan),
    opsExecuted: staged.graph.opsExecuted,
    removed,
    nodes: staged.graph.nodes.length,
    kernelsPerBatch: staged.schedule.kernels,
    kernelsByDevice,
    search: staged.schedule.search,
    lowerBound: staged.schedule.lowerBound,
    stages,
  };
}

/**
 * The input schema a plan needs when no data is given: the schema of the first preset whose
 * columns cover every input the plan reads (plans printed by `sluice plan --preset`).
 */
export function presetSchemaFor(plan: Plan): Map<string, ColumnType> | null {
  const need = [...new Set([...plan.features.map((f) => f.input), ...(plan.label ? [plan.label] : [])])];
  for (const p of Object.values(PRESETS)) {
    const schema = new Map<string, ColumnType>();
    for (const f of presetArrowSchema(p).fields) { const t = arrowColumnType(f.type); if (t) schema.set(f.name, t); }
    if (need.every((c) => schema.has(c))) return schema;
  }
  return null;
}

export interface ExplainOptions {
  /** Input schema (from data or a preset); required when the plan is not typed yet. */
  readonly schema?: ReadonlyMap<string, ColumnType>;
  /** Footer statistics of the input columns, for redundancy elimination. */
  readonly stats?: ReadonlyMap<string, ColumnStats>;
  /** A backend created for the rewritten plan: its own staged plan is reported when it has one. */
  readonly backend?: Backend;
  readonly backendName?: string;
}

/** Type-checks a plan for explain, from given or preset schema. */
export function typedForExplain(plan: Plan | TypedPlan, schema?: ReadonlyMap<string, ColumnType>): TypedPlan {
  if ('columns' in plan) return plan;
  const s = schema ?? presetSchemaFor(plan);
  if (s === null) throw new PlanError('explain needs the input types: pass --input (a Parquet file with the plan\'s columns), or use a plan of a preset (`sluice plan --preset NAME`)');
  return typeCheckPlan(loadPlan(plan), s);
}

/**
 * Explains the optimizer's work on a plan: the rewrite, the graph, the stages and kernels per
 * batch, for the backend's own staged plan when it has one (webgpu) and the generic CPU one else.
 *
 * @example
 * const e = explainPlan(typeCheckPlan(loadPlan(spec), schema), { stats });
 * console.log(e.ops, '→', e.kernelsPerBatch, 'kernels per batch');
 */
export function explainPlan(plan: TypedPlan, options: ExplainOptions = {}): Explain {
  const { plan: lean, removed } = eliminateRedundant(plan, options.stats);
  const staged = options.backend?.stagedPlan?.() ?? (() => {
    const device = options.backendName ?? 'cpu';
    const graph = buildGraph(lean, () => device);
    return { graph, schedule: scheduleStages(graph) };
  })();
  return explainStaged(plan, staged, options.backendName ?? options.backend?.name ?? 'cpu', removed);
}
