import { columnBytes, executePlan, PlanError, type BackendSpec, type Column, type PlanState, type RowLocator, type TypedPlan } from '@sluice/ops';
import { buildGraph, executeGraph, scheduleStages } from '../plan/graph.js';
import { registerBuiltinBackend } from './registry.js';
import type { Backend } from './types.js';

/**
 * The in-process CPU backend: core's reference kernels on the calling thread. It is what `cpu`
 * means until the worker-pool backend package registers itself over it.
 */
export function inlineCpuBackend(plan: TypedPlan, options: BackendSpec, state: PlanState): Backend {
  // `workers` is accepted so a plan written for the worker-pool backend still runs here.
  const known = new Set(['name', 'workers', 'graph']);
  for (const k of Object.keys(options)) if (!known.has(k)) throw new PlanError(`backend ${options.name}: unknown option "${k}"`);
  if (options.graph !== undefined && typeof options.graph !== 'boolean') throw new PlanError(`backend ${options.name}: option "graph" must be true or false`);
  // graph: run the optimizer's graph (shared sub-chains, fused stages) instead of feature by feature.
  const graph = options.graph === true ? buildGraph(plan) : null;
  const schedule = graph === null ? null : scheduleStages(graph);
  return {
    name: options.name,
    capabilities: { ops: 'all', timing: 'measured' },
    concurrency: 1,
    async run(columns: ReadonlyMap<string, Column>, locate: RowLocator) {
      const t0 = performance.now();
      const out = graph === null ? executePlan(plan, columns, state, locate) : executeGraph(graph, schedule!, columns, state, locate);
      const wallMs = performance.now() - t0;
      let bytesIn = 0;
      let bytesOut = 0;
      for (const c of columns.values()) bytesIn += columnBytes(c);
      for (const c of out.values()) bytesOut += columnBytes(c);
      return { columns: out, report: { wallMs, bytesIn, bytesOut } };
    },
    ...(graph === null ? {} : { stagedPlan: () => ({ graph, schedule: schedule! }) }),
    async dispose() {},
  };
}

// `reference` is always core's kernels in-process (the oracle conformance tests compare against);
// `cpu` means the same until @sluice/backend-cpu registers its worker pool over it.
registerBuiltinBackend('reference', inlineCpuBackend);
registerBuiltinBackend('cpu', inlineCpuBackend);
