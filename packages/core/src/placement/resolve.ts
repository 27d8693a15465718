/**
 * How a run with `backend: "auto"` (or a list of backends) picks its backend: the cost model
 * (placement/cost.ts) proposes a placement, then every candidate placement
 * (placement/calibration.ts: each backend alone, each non-cpu backend with the reader's pushdown,
 * the model's mixed placement) is measured on the first batches of the real data through the
 * pipeline's own path, unless its measurement is cached for this plan and machine, and the one
 * predicted fastest for this run is kept. A placement on a single backend becomes that backend
 * itself (so all-cpu keeps the reader pushdown, webgpu its optimizer); a mixed one becomes the
 * auto backend with the placement fixed.
 */
import { PlanError, show, type BackendSpec, type TypedPlan } from '@sluice/ops';
import type { Dataset } from '../reader/dataset.js';
import { autoPlacement } from './auto.js';
import { chooseMeasured, measureCandidates, predictRun, readMeasurements, runCandidates, writeMeasurements, type Measurement } from './calibration.js';
import { autoCandidates } from './cost.js';

/**
 * Where `auto` placed a run's features and what decided it (`PipelineMetrics.placement`).
 *
 * @example
 * pipeline(plan, { input, backend: 'auto' }).metrics().placement?.chosen; // 'cpu', 'webgpu+pushdown', ...
 */
export interface PlacementReport {
  /** Features per place they are computed: a backend, or `reader` for those pushed into the decode workers. */
  features: Record<string, number>;
  /** The cost model's predicted ms per batch of each backend's share of its own placement (ops only). */
  predictedMs: Record<string, number>;
  /** The cost model's predicted ms per batch of each backend running every feature (ops only). */
  singleMs: Record<string, number>;
  /** The candidate placement run: `cpu`, `webgpu`, `webgpu+pushdown`, `mixed`, or `given` (written in the plan). */
  chosen: string;
  /** What decided: measurements of the candidates on this plan's data (placement/calibration.ts), the cost model alone, or the plan. */
  basis: 'measured' | 'model' | 'given';
  /** Per candidate: measured fixed ms per run and ms per batch, and the ms predicted for this run from them. */
  measured: Record<string, { fixedMs: number; perBatchMs: number; runMs: number }>;
  /**
   * Time this run spent choosing, ms: calibrating the cost model and probing the candidates the
   * cache lacks (seconds on a first run, little once cached). It is part of `setupMs` and comes
   * before the first batch; `sluice bench` reports it apart from its timed figures.
   */
  choosingMs: number;
}

/** The files a run reads and how many rows it takes from them per epoch. */
export interface RunInput {
  readonly plan: TypedPlan;
  readonly dataset: Dataset;
  readonly rowsPerEpoch: number;
}

/**
 * The backend spec a run really uses: `spec` itself unless it is `auto` or a list; then the
 * candidate chosen as described above, with its report and the backend of each feature. `probe`
 * runs the pipeline over a prefix of the data with a candidate's spec and measures it.
 */
export async function resolveAuto(
  spec: BackendSpec,
  run: RunInput,
  probe: (spec: BackendSpec) => Promise<Measurement>,
): Promise<{ spec: BackendSpec; placement: PlacementReport | null; byFeature: ReadonlyMap<string, string> | null }> {
  if (autoCandidates(spec) === null) return { spec, placement: null, byFeature: null };
  const t0 = performance.now();
  const plan = run.plan;
  const { backends: _b, placement: given, calibrate: cal, ...rest } = spec;
  void _b;
  if (cal !== undefined && typeof cal !== 'boolean') throw new PlanError(`backend auto: option "calibrate" must be true or false, got ${show(cal)}`);
  if (given !== undefined) {
    // A placement written in the plan is run as written (autoBackend checks it).
    const byFeature = new Map(Object.entries(given as Record<string, string>));
    return {
      spec: { ...rest, name: 'auto', placement: given },
      placement: { features: {}, predictedMs: {}, singleMs: {}, chosen: 'given', basis: 'given', measured: {}, choosingMs: performance.now() - t0 },
      byFeature,
    };
  }
  const { placement: p, models } = await autoPlacement(plan, spec);
  const { candidates, modelChoice } = runCandidates(
    models.map((m) => m.backend),
    p,
    plan,
    run.dataset,
    rest,
  );
  const batches = (run.rowsPerEpoch * plan.epochs) / plan.batchSize;
  let measured: Record<string, Measurement> = {};
  if (cal !== false && candidates.length > 1) {
    const cached = readMeasurements(plan);
    for (const c of candidates) if (cached[c.label] !== undefined) measured[c.label] = cached[c.label]!;
    const missing = candidates.filter((c) => measured[c.label] === undefined);
    if (missing.length > 0) {
      const fresh = await measureCandidates(missing, batches, (c) => probe({ ...rest, ...c.spec }));
      writeMeasurements(plan, fresh);
      measured = { ...measured, ...fresh };
    }
  }
  const chosen = chooseMeasured(candidates, measured, batches) ?? modelChoice;
  const byFeature = chosen.label === 'mixed' ? p.byFeature : new Map(plan.features.map((f) => [f.name, chosen.spec.name]));
  const placement: PlacementReport = {
    features: {},
    predictedMs: { ...p.predictedMs },
    singleMs: { ...p.singleMs },
    chosen: chosen.label,
    basis: measured[chosen.label] !== undefined ? 'measured' : 'model',
    measured: Object.fromEntries(Object.entries(measured).map(([k, m]) => [k, { ...m, runMs: predictRun(m, batches) }])),
    choosingMs: performance.now() - t0,
  };
  return { spec: { ...rest, ...chosen.spec }, placement, byFeature };
}
