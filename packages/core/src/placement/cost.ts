/**
 * Cost model and placement (RAP §7's latency predictor; RECom §5 co-running; PreSto §V
 * provisioning).
 *
 * - **Per-op predictor.** For each backend, op and input type, predicted milliseconds for a chunk
 *   are a + b·elements, fitted from microbenchmarks on first use: a one-op plan runs on the backend
 *   itself over synthetic columns of two sizes (RAP fits its predictor to measured kernel
 *   latencies the same way). Simulators are measured the same way but on their modelled time
 *   (`modelledMs`), i.e. their cost model itself. Fits are cached per machine in the cache
 *   directory, so only the first use pays.
 * - **Placement.** `backend: "auto"` (or a list of names) assigns each feature's chain to the
 *   backend where it is predicted cheapest, balancing the backends' loads (they run their
 *   features concurrently: co-running). Transfers count: a GPU backend's one-op benchmark
 *   includes its upload and download. Strings stay where the CPU runs them: a GPU backend runs
 *   hex2int on the host itself. Cross features and the features they read stay together.
 * - **Provisioning.** For a target throughput, how many units (cpu workers, devices) of each
 *   backend it takes, from the predicted per-unit rate (PreSto §V-A sizes its SmartSSD count the
 *   same way: target / per-device throughput, rounded up).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPlan, PlanError, typeCheckPlan, utf8FromStrings, type Column, type ColumnType, type PlanOp, type TypedFeature, type TypedPlan } from '@sluice/ops';
import { createBackend } from '../backend/registry.js';
import { cacheRoot, machineKey } from '../util/cache.js';

/** Predicted ms per chunk for one op on one backend: fixed + perElement × elements. */
export interface OpCost {
  readonly fixedMs: number;
  readonly perElementMs: number;
}

/** A backend's calibrated predictor. */
export interface CostModel {
  readonly backend: string;
  /** Key `op|inputType` → fitted cost. */
  readonly ops: Readonly<Record<string, OpCost>>;
  /** Whether times are measured wall time or the simulator's modelled time. */
  readonly timing: 'measured' | 'modelled';
  /**
   * Whether it computes on the host's own cores (the cpu pool; webgpu on a software adapter such
   * as llvmpipe): such backends do not add capacity when co-running, so their loads add up.
   */
  readonly sharesHost: boolean;
}

/** A mixed placement must beat the best single backend by this predicted margin (predictions are noisy). */
export const MIXED_MARGIN = 0.15;

/** Chunk sizes of the microbenchmark (elements), and repetitions (the minimum is kept). */
const SIZES = [2048, 32768] as const;
const REPEATS = 3;
/** List length of synthetic list columns (RM2–RM5 average sparse length is 20, PreSto Table I). */
const LIST_LEN = 20;

const typeKey = (t: ColumnType): string => (t.kind === 'list' ? `list<${t.child}>` : t.kind === 'fixed' ? `fixed${t.size}` : t.kind);
const opKey = (op: string, t: ColumnType): string => `${op}|${typeKey(t)}`;

/** A synthetic column of `n` elements of type `t` whose values every op accepts (positive, hex strings). */
function synthetic(t: ColumnType, n: number): Column | null {
  const rows = t.kind === 'list' ? Math.ceil(n / LIST_LEN) : n;
  const prim = (kind: string, m: number): Column | null => {
    const idx = Array.from({ length: m }, (_, i) => 1 + (((i * 2654435761) >>> 0) % 1000));
    switch (kind) {
      case 'int32':
        return { type: 'int32', values: Int32Array.from(idx), valid: null };
      case 'int64':
        return { type: 'int64', values: BigInt64Array.from(idx, (v) => BigInt(v)), valid: null };
      case 'float32':
        return { type: 'float32', values: Float32Array.from(idx, (v) => v / 1001), valid: null };
      case 'float64':
        return { type: 'float64', values: Float64Array.from(idx, (v) => v / 1001), valid: null };
      case 'utf8':
        return utf8FromStrings(idx.map((v) => (v * 40503).toString(16).padStart(8, '0')));
      default:
        return null;
    }
  };
  if (t.kind === 'list') {
    const child = prim(t.child, rows * LIST_LEN);
    if (child === null || child.type === 'utf8' || child.type === 'list' || child.type === 'fixed') return null;
    return { type: 'list', offsets: Int32Array.from({ length: rows + 1 }, (_, i) => i * LIST_LEN), child, valid: null };
  }
  return t.kind === 'fixed' ? null : prim(t.kind, rows);
}

/** Elements a column of type `t` carries per row, for predictions. */
const elementsPerRow = (t: ColumnType): number => (t.kind === 'list' ? LIST_LEN : 1);

function cachePath(backend: string): string {
  return join(cacheRoot(), `costmodel-${backend}-${machineKey()}.json`);
}

function readCache(backend: string): Record<string, OpCost> {
  try {
    return JSON.parse(readFileSync(cachePath(backend), 'utf8')) as Record<string, OpCost>;
  } catch {
    return {};
  }
}

function writeCache(backend: string, ops: Record<string, OpCost>): void {
  const p = cachePath(backend);
  try {
    mkdirSync(join(p, '..'), { recursive: true });
    const tmp = `${p}.tmp-${process.pid}`;
    writeFileSync(tmp, JSON.stringify(ops));
    renameSync(tmp, p);
  } catch {
    /* a read-only cache only costs a recalibration */
  }
}

/** Ops the predictor measures; vocab needs fitted state and cross other features: they run on the CPU. */
const CPU_ONLY = new Set(['vocab', 'cross']);

/**
 * The calibrated predictor of `backend` for the ops of `plan` (measuring what the cache lacks).
 *
 * @example
 * const m = await calibrate('cpu', typed);
 * predictFeature(m, typed.features[0], 8192); // ms per 8192-row chunk
 */
export async function calibrate(backend: string, plan: TypedPlan, options: { spec?: Record<string, unknown>; cache?: boolean } = {}): Promise<CostModel> {
  const cached = options.cache === false ? {} : readCache(backend);
  const ops: Record<string, OpCost> = { ...cached };
  const todo = new Map<string, { op: PlanOp; type: ColumnType }>();
  for (const f of plan.features) {
    f.ops.forEach((o, k) => {
      const t = k === 0 ? f.inputType : f.types[k - 1]!;
      const key = opKey(o.op, t);
      if (!(key in ops) && !CPU_ONLY.has(o.op) && !todo.has(key)) todo.set(key, { op: o, type: t });
    });
  }
  let timing: CostModel['timing'] = 'measured';
  let sharesHost = backend === 'cpu' || backend === 'reference';
  if (todo.size > 0) {
    const schema = new Map<string, ColumnType>();
    const features = [...todo.entries()].map(([key, { op, type }], i) => {
      schema.set(`c${i}`, type);
      return { key, spec: { name: `f${i}`, input: `c${i}`, kind: 'sparse' as const, ops: [{ op: op.op, ...(op.params as object) }] } };
    });
    for (const f of features) {
      // Each op alone, so that its time is its own (a backend runs a plan's features together).
      let typed: TypedPlan;
      try {
        typed = typeCheckPlan(loadPlan({ batchSize: SIZES[1], features: [{ ...f.spec, kind: 'dense' }] }), schema);
      } catch {
        typed = typeCheckPlan(loadPlan({ batchSize: SIZES[1], features: [f.spec] }), schema);
      }
      const b = await createBackend(typed, { name: backend, ...(options.spec ?? {}) }, new Map());
      try {
        if (b.capabilities.timing === 'modelled') timing = 'modelled';
        const adapter = String(b.summary?.().adapter ?? '');
        if (/llvmpipe|lavapipe|swiftshader|\(cpu\)|\bcpu\b/i.test(adapter)) sharesHost = true;
        const times: number[] = [];
        for (const n of SIZES) {
          const col = synthetic(schema.get(f.spec.input)!, n);
          if (col === null) break;
          const cols = new Map([[f.spec.input, col]]);
          let best = Infinity;
          for (let r = 0; r < REPEATS; r++) {
            const t0 = performance.now();
            const { report } = await b.run(cols, (row) => ({ row }));
            const ms = b.capabilities.timing === 'modelled' && typeof report.modelledMs === 'number' ? report.modelledMs : performance.now() - t0;
            best = Math.min(best, ms);
          }
          times.push(best);
        }
        if (times.length === 2) {
          const per = Math.max(0, (times[1]! - times[0]!) / (SIZES[1] - SIZES[0]));
          ops[f.key] = { fixedMs: Math.max(0, times[0]! - per * SIZES[0]), perElementMs: per };
        }
      } finally {
        await b.dispose();
      }
    }
    if (options.cache !== false) writeCache(backend, { ...ops, ...(sharesHost ? { $sharesHost: { fixedMs: 1, perElementMs: 0 } } : {}) });
  }
  if ('$sharesHost' in ops) sharesHost = true;
  const { $sharesHost: _s, ...rest } = ops;
  void _s;
  return { backend, ops: rest, timing, sharesHost };
}

/** Predicted ms for ops [from, to) of a feature on a chunk of `rows` rows; Infinity when the model has no figure for an op. */
export function predictOps(m: CostModel, f: TypedFeature, rows: number, from = 0, to = f.ops.length): number {
  let ms = 0;
  for (let k = from; k < to; k++) {
    const t = k === 0 ? f.inputType : f.types[k - 1]!;
    const c = m.ops[opKey(f.ops[k]!.op, t)];
    if (c === undefined) return CPU_ONLY.has(f.ops[k]!.op) && m.backend === 'cpu' ? ms : Infinity;
    // Only the per-element part adds up inside one backend run; the fixed part is paid once per run.
    ms += c.perElementMs * rows * elementsPerRow(t);
  }
  return ms;
}

/** Fixed ms per chunk a backend pays (its cheapest measured op's fixed part: dispatch, messaging). */
export function fixedMs(m: CostModel): number {
  const f = Object.values(m.ops).map((c) => c.fixedMs);
  return f.length === 0 ? 0 : Math.min(...f);
}

/** Where each feature runs, and the predicted ms per chunk per backend. */
export interface Placement {
  readonly byFeature: ReadonlyMap<string, string>;
  /** Predicted ms per chunk for each backend's share (they run concurrently). */
  readonly predictedMs: Readonly<Record<string, number>>;
  /** Predicted ms per chunk of the whole placement: the slowest backend's share. */
  readonly makespanMs: number;
  /** Predicted ms per chunk for each backend running everything alone. */
  readonly singleMs: Readonly<Record<string, number>>;
}

/**
 * Places features on backends: longest-first, each on the backend where its finish time (that
 * backend's load so far + its predicted cost) is least; cross features go with what they read, on
 * the first backend that runs cross. The placement is kept only if it beats every backend alone.
 */
export function placeFeatures(plan: TypedPlan, models: readonly CostModel[], rows = plan.batchSize): Placement {
  if (models.length === 0) throw new PlanError('placement needs at least one backend');
  const single: Record<string, number> = {};
  for (const m of models) single[m.backend] = fixedMs(m) + plan.features.reduce((a, f) => a + predictOps(m, f, rows), 0);
  // Features that cross, or are crossed, form one group placed as a unit.
  const crossed = new Set(
    plan.features.flatMap((f) => f.ops.filter((o) => o.op === 'cross').flatMap((o) => [f.name, ...(o.params as { inputs: string[] }).inputs])),
  );
  const units: TypedFeature[][] = plan.features.filter((f) => !crossed.has(f.name)).map((f) => [f]);
  if (crossed.size > 0) units.push(plan.features.filter((f) => crossed.has(f.name)));
  const cost = (m: CostModel, u: TypedFeature[]): number => u.reduce((a, f) => a + predictOps(m, f, rows), 0);
  // Each unit's cheapest cost, once (a comparator that recomputes it is O(n log n) predictions: RM5 has 588 units).
  const cheapest = new Map(units.map((u) => [u, Math.min(...models.map((m) => cost(m, u)))]));
  units.sort((a, b) => cheapest.get(b)! - cheapest.get(a)!);
  const load: Record<string, number> = Object.fromEntries(models.map((m) => [m.backend, 0]));
  const used = new Set<string>();
  const byFeature = new Map<string, string>();
  for (const u of units) {
    let best = models[0]!;
    let bestFinish = Infinity;
    for (const m of models) {
      const finish = load[m.backend]! + cost(m, u) + (used.has(m.backend) ? 0 : fixedMs(m));
      if (finish < bestFinish) {
        best = m;
        bestFinish = finish;
      }
    }
    if (!Number.isFinite(bestFinish)) throw new PlanError(`no backend of ${models.map((m) => m.backend).join(', ')} can run feature ${u[0]!.name}`);
    load[best.backend] = bestFinish;
    used.add(best.backend);
    for (const f of u) byFeature.set(f.name, best.backend);
  }
  // Backends on the host's cores time-share them: their loads add up; the others run in parallel.
  const shared = models.filter((m) => m.sharesHost).reduce((a, m) => a + load[m.backend]!, 0);
  const makespan = Math.max(shared, ...models.filter((m) => !m.sharesHost).map((m) => load[m.backend]!));
  const bestSingle = Object.entries(single).sort((a, b) => a[1] - b[1])[0]!;
  if (bestSingle[1] * (1 - MIXED_MARGIN) <= makespan || used.size === 1) {
    return {
      byFeature: new Map(plan.features.map((f) => [f.name, bestSingle[0]])),
      predictedMs: { [bestSingle[0]]: bestSingle[1] },
      makespanMs: bestSingle[1],
      singleMs: single,
    };
  }
  const predictedMs = Object.fromEntries(Object.entries(load).filter(([b]) => used.has(b)));
  return { byFeature, predictedMs, makespanMs: makespan, singleMs: single };
}

/** Units of each backend needed for a target throughput. */
export interface Provision {
  readonly backend: string;
  /** Predicted rows/s of one unit (one worker, one device) running the whole plan. */
  readonly rowsPerSecPerUnit: number;
  readonly units: number;
}

/**
 * PreSto-style provisioning: for each backend, ceil(target / rows per second of one unit), where
 * one unit's rate comes from the predictor (rows per chunk / predicted ms per chunk).
 *
 * @example
 * provision(typed, models, 2_000_000); // [{ backend: 'cpu', rowsPerSecPerUnit: 410000, units: 5 }, …]
 */
export function provision(plan: TypedPlan, models: readonly CostModel[], targetRowsPerSec: number, rows = plan.batchSize): Provision[] {
  if (!(targetRowsPerSec > 0)) throw new PlanError(`target rows per second must be positive, got ${targetRowsPerSec}`);
  return models.map((m) => {
    const ms = fixedMs(m) + plan.features.reduce((a, f) => a + predictOps(m, f, rows), 0);
    const rate = ms > 0 && Number.isFinite(ms) ? (rows / ms) * 1000 : 0;
    return { backend: m.backend, rowsPerSecPerUnit: rate, units: rate > 0 ? Math.ceil(targetRowsPerSec / rate) : Infinity };
  });
}

/** Backend names an `auto` spec or a list names ("auto" = every registered real backend that can start). */
export function autoCandidates(spec: { name: string; backends?: unknown }): string[] | null {
  if (spec.name !== 'auto' && !spec.name.includes(',')) return null;
  const list = spec.name.includes(',') ? spec.name.split(',').map((s) => s.trim()) : spec.backends;
  if (list === undefined) return ['cpu', 'webgpu'];
  if (!Array.isArray(list) || list.length === 0 || !list.every((x) => typeof x === 'string' && x !== '' && x !== 'auto')) {
    throw new PlanError('backend "auto" takes "backends": a non-empty list of backend names (or write them as "cpu,webgpu")');
  }
  return [...new Set(list as string[])];
}

/** Where a backend's calibrated predictor is cached on this machine. */
export const costModelCachePath = cachePath;
