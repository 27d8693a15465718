/**
 * The `auto` backend: runs each feature on the backend the cost model places it on
 * (placement/cost.ts), all backends at once on the same chunk (RECom co-running), and merges their
 * outputs in plan order. A run chooses the placement first (placement/resolve.ts: the cost model
 * proposes, measurements of the candidates on the real data decide) and resolves one that puts
 * everything on one backend to that backend itself, so e.g. an all-cpu placement keeps the cpu
 * reader pushdown; this backend runs the mixed ones. placement/register.ts registers it.
 */
import {
  columnBytes,
  loadPlan,
  PlanError,
  typeCheckPlan,
  type BackendSpec,
  type Column,
  type ColumnType,
  type PlanState,
  type RowLocator,
  type TypedPlan,
} from '@sluice/ops';
import { createBackend } from '../backend/registry.js';
import type { Backend } from '../backend/types.js';
import { autoCandidates, calibrate, placeFeatures, type CostModel, type Placement } from './cost.js';

/**
 * Calibrates the candidate backends of an `auto` (or list) spec and places the plan's features.
 * With the default candidates a backend that cannot start here (no GPU adapter) is left out.
 */
export async function autoPlacement(
  plan: TypedPlan,
  spec: BackendSpec,
): Promise<{ placement: Placement; models: CostModel[]; skipped: Record<string, string> }> {
  const names = autoCandidates(spec);
  if (names === null) throw new PlanError(`backend "${spec.name}" is not "auto" or a list of backends`);
  const explicit = spec.name.includes(',') || spec.backends !== undefined;
  const models: CostModel[] = [];
  const skipped: Record<string, string> = {};
  for (const name of names) {
    try {
      models.push(await calibrate(name, plan, name === 'cpu' ? { spec: { workers: 1 } } : {}));
    } catch (e) {
      if (explicit) throw new PlanError(`backend "auto": cannot use "${name}": ${(e as Error).message}`);
      skipped[name] = (e as Error).message;
    }
  }
  return { placement: placeFeatures(plan, models), models, skipped };
}

/** Builds the composite backend for a placement given as `placement: { feature: backend }`. */
export async function autoBackend(plan: TypedPlan, spec: BackendSpec, state: PlanState): Promise<Backend> {
  for (const k of Object.keys(spec))
    if (!['name', 'backends', 'placement', 'workers'].includes(k)) throw new PlanError(`backend auto: unknown option "${k}" (known: backends, placement)`);
  let byFeature: Map<string, string>;
  if (spec.placement !== undefined) {
    const p = spec.placement as Record<string, unknown>;
    if (typeof p !== 'object' || p === null) throw new PlanError('backend auto: "placement" must map feature names to backend names');
    byFeature = new Map(
      plan.features.map((f) => {
        const b = p[f.name];
        if (typeof b !== 'string') throw new PlanError(`backend auto: "placement" names no backend for feature ${f.name}`);
        return [f.name, b];
      }),
    );
  } else {
    byFeature = new Map((await autoPlacement(plan, spec)).placement.byFeature);
  }
  const schema = new Map<string, ColumnType>();
  for (const f of plan.features) schema.set(f.input, f.inputType);
  const groups = new Map<string, number[]>();
  plan.features.forEach((f, i) => {
    const b = byFeature.get(f.name)!;
    (groups.get(b) ?? groups.set(b, []).get(b)!).push(i);
  });
  const parts: Array<{ backend: Backend; plan: TypedPlan }> = [];
  try {
    for (const [name, idx] of groups) {
      const sub = typeCheckPlan(loadPlan({ ...plan.spec, label: undefined, backend: name, features: idx.map((i) => plan.spec.features[i]!) }), schema);
      // Fitted state is keyed by feature name and op position: a feature's state goes with it.
      parts.push({
        backend: await createBackend(sub, { name, ...(name === 'cpu' && spec.workers !== undefined ? { workers: spec.workers } : {}) }, state),
        plan: sub,
      });
    }
  } catch (e) {
    await Promise.all(parts.map((p) => p.backend.dispose()));
    throw e;
  }
  const counts = Object.fromEntries([...groups].map(([b, idx]) => [b, idx.length]));
  return {
    name: 'auto',
    capabilities: { ops: 'all', timing: 'measured' },
    concurrency: Math.max(1, Math.min(...parts.map((p) => p.backend.concurrency))),
    async run(columns: ReadonlyMap<string, Column>, locate: RowLocator) {
      const t0 = performance.now();
      const results = await Promise.all(parts.map((p) => p.backend.run(new Map(p.plan.columns.map((c) => [c, columns.get(c)!])), locate)));
      const out = new Map<string, Column>();
      for (const f of plan.features)
        for (const r of results) {
          const c = r.columns.get(f.name);
          if (c) {
            out.set(f.name, c);
            break;
          }
        }
      let bytesIn = 0;
      let bytesOut = 0;
      for (const c of columns.values()) bytesIn += columnBytes(c);
      for (const c of out.values()) bytesOut += columnBytes(c);
      const report: Record<string, number> = {};
      parts.forEach((p, k) => {
        report[`${p.backend.name}Ms`] = results[k]!.report.wallMs;
      });
      return { columns: out, report: { wallMs: performance.now() - t0, bytesIn, bytesOut, ...report } };
    },
    summary() {
      const s: Record<string, number | string> = {
        placement: Object.entries(counts)
          .map(([b, n]) => `${b}: ${n} features`)
          .join(', '),
      };
      for (const p of parts) for (const [k, v] of Object.entries(p.backend.summary?.() ?? {})) s[`${p.backend.name}: ${k}`] = v;
      return s;
    },
    async dispose() {
      await Promise.all(parts.map((p) => p.backend.dispose()));
    },
  };
}
