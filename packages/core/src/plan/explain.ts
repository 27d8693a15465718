/**
 * `sluice explain`: what the optimizer does to a plan on a backend — op steps before and after,
 * the stages, and kernel launches per batch — without reading any data beyond Parquet footers.
 * Typing a plan without data (from a preset's schema) is gen/schema.ts's `typedForExplain`.
 */
import type { TypedPlan } from '@sluice/ops';
import { buildGraph, scheduleStages, type Schedule, type StagedPlan } from './graph.js';
import { countOps, eliminateRedundant, type Removal } from './optimize.js';
import type { ColumnStats } from './stats.js';

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
      for (let k = n.from; k < n.to; k++) {
        const op = n.feature.ops[k]!.op;
        opTypes[op] = (opTypes[op] ?? 0) + 1;
        ops++;
      }
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

export interface ExplainOptions {
  /** Footer statistics of the input columns, for redundancy elimination. */
  readonly stats?: ReadonlyMap<string, ColumnStats>;
  /**
   * A backend created for the rewritten plan (any `Backend`): its own staged plan is reported
   * when it has one.
   */
  readonly backend?: { readonly name: string; stagedPlan?(): StagedPlan };
  readonly backendName?: string;
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
  const staged =
    options.backend?.stagedPlan?.() ??
    (() => {
      const device = options.backendName ?? 'cpu';
      const graph = buildGraph(lean, () => device);
      return { graph, schedule: scheduleStages(graph) };
    })();
  return explainStaged(plan, staged, options.backendName ?? options.backend?.name ?? 'cpu', removed);
}
