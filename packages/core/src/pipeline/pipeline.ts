import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Observable, defer, finalize, from, mergeMap, type Subscription } from 'rxjs';
import { createBackend, readerKernels } from '../backend/registry.js';
import { allInReader, planPushdown, readerCanCompute, type Pushdown } from '../plan/pushdown.js';
import { eliminateRedundant } from '../plan/optimize.js';
import { readColumnStats } from '../plan/stats.js';
import { autoPlacement } from '../placement/auto.js';
import { autoCandidates } from '../placement/cost.js';
import { chooseMeasured, measureCandidates, predictRun, readMeasurements, runCandidates, writeMeasurements, type Measurement } from '../placement/calibration.js';
import type { Backend, CostReport } from '../backend/types.js';
import type { Column, ColumnType } from '@sluice/ops';
import { PlanError, SluiceError } from '@sluice/ops';
import type { Dataset } from '../reader/dataset.js';
import { openInput } from './fit.js';
import { DecoderPool } from '../reader/decoder-pool.js';
import { PackArena, packSlotBytes } from '../batch/index.js';
import { runFeature, stateFromJSON, statefulOps, type PlanState } from '@sluice/ops';
import { loadPlan, type Plan, type TypedPlan } from '@sluice/ops';
import type { BackendSpec, PlanSpec } from '@sluice/ops';
import { batchLayout, type Batch, type BatchLayout, type ProcessedChunk } from '../batch/index.js';
import { Flow, batch, preprocess, source } from '../stream/operators.js';
import { START, epochRows, readChunks, type Chunk, type Cursor, type PackRequest } from '../stream/source.js';
import { show } from '@sluice/ops';

/**
 * Where an interrupted run stands: small JSON, never buffered data. Passing it back as
 * `pipeline(plan, { resume })` yields exactly the batches the interrupted run had yet to yield.
 */
export interface IteratorState {
  readonly version: 1;
  readonly epoch: number;
  readonly window: number;
  readonly offset: number;
  /** Batches emitted so far (the next batch's seq). */
  readonly seq: number;
  /** Shuffle seed, or null without shuffle. */
  readonly seed: number | null;
  /** Fingerprint of the plan and file list; a state from another plan or data set is refused. */
  readonly fingerprint: string;
}

export interface PipelineOptions {
  /** Parquet paths, globs or http(s) URLs (overrides the plan's `input`). */
  input?: string | string[];
  /** Resume from a saved `state()`. */
  resume?: IteratorState;
  /** Fitted state for stateful ops: a path to `sluice fit` output, its parsed JSON, or a map. */
  fitState?: string | object | PlanState;
  /** Overrides the plan's backend (a name, or a spec with options). */
  backend?: string | BackendSpec;
  /** Overrides the plan's prefetch depth. */
  prefetch?: number;
  /**
   * Parquet decode threads, 1 to 256. Default: the backend's parallelism when the reader computes
   * the features (the cpu backend's `workers`: one per core but one), else up to 2.
   */
  decoders?: number;
  /** Aborting stops the run: iteration throws the abort reason and resources are released. */
  signal?: AbortSignal;
  /**
   * When the reader computes every feature (pushdown), let the decode workers lay batches out too
   * (default true); false assembles them on this thread. The batches are the same either way.
   */
  pack?: boolean;
  /**
   * Remove redundant op steps using the files' footer statistics before the backend sees the plan
   * (plan/optimize.ts); default on for webgpu, off elsewhere. Also a backend option `optimize`.
   */
  optimize?: boolean;
}

/** A probe of auto's calibration stops once it has run this long past its first batch (plan/calibration.ts). */
const PROBE_STEADY_MS = 1500;

/** Counters of a run, for `sluice bench` and metrics endpoints. */
export interface PipelineMetrics {
  rows: number;
  batches: number;
  /** Time the preprocess stage spent in the backend, ms. */
  preprocessMs: number;
  /** Time from the start of the run (files open) to its backend being ready, ms: auto's choice, optimizer, backend start. */
  setupMs: number;
  /** Time waiting for decoded chunks, ms. */
  sourceWaitMs: number;
  /** Time assembling batches, ms. */
  batchMs: number;
  bytesIn: number;
  bytesOut: number;
  /** Most batches waiting at once in the prefetch buffer. */
  maxBuffered: number;
  /** Last backend report (simulators put their modelled costs here). */
  lastReport: CostReport | null;
  /**
   * Sums over the run of every numeric field of the backends' cost reports beyond wallMs, bytesIn
   * and bytesOut (e.g. a simulator's `modelledMs`, a GPU backend's `kernels`), by field name.
   */
  reportTotals: Record<string, number>;
  /** The backend's own summary of the run (`Backend.summary()`), when it has one. */
  backendSummary: Record<string, number | string> | null;
  /**
   * Op chains computed per dictionary entry in the reader (plan/pushdown.ts), or null when the
   * run does not push down: how many derived columns, and per chunk and column, how often the
   * reader computed one and how often the pipeline had to (non-dictionary pages, bad values).
   */
  pushdown: { derived: number; computedInReader: number; computedInPipeline: number } | null;
  /** Chunks that arrived laid out as batch arrays by a decode worker (`PipelineOptions.pack`). */
  packedChunks: number;
  /**
   * Chunks of row groups read by several decoders at once, each decoding a share of the columns
   * (a file with fewer row groups than decoders); the main thread lays these out.
   */
  sharedChunks: number;
  /**
   * Chunks of row groups read in parts by rows, by several decoders at once: the row groups left
   * over when an epoch's do not deal out evenly among the decoders (`PipelineOptions.decoders` > 1,
   * files with an offset index).
   */
  splitChunks: number;
  /**
   * How many times memory the consumer gave back with `Batch.release()` was handed to a decode
   * worker again (io/pack-arena.ts): about one per batch laid out without allocating. 0 when
   * nothing was released.
   */
  recycledPacks: number;
  /**
   * The optimizer's rewrite (plan/optimize.ts), or null when the run does not optimize: op steps
   * as written and after removing redundant ones (Parquet statistics, ranges, repeated casts).
   */
  optimizer: { opsBefore: number; opsAfter: number; removed: number } | null;
  /**
   * With `backend: "auto"` or a list: where the cost model placed the features (feature count per
   * backend) and the predicted ms per chunk of each backend's share; null otherwise.
   */
  placement: {
    /** Features per place they are computed: a backend, or `reader` for those pushed into the decode workers. */
    features: Record<string, number>;
    /** The cost model's predicted ms per batch of each backend's share of its own placement (ops only). */
    predictedMs: Record<string, number>;
    /** The cost model's predicted ms per batch of each backend running every feature (ops only). */
    singleMs: Record<string, number>;
    /** The candidate placement run: `cpu`, `webgpu`, `webgpu+pushdown`, `mixed`, or `given` (written in the plan). */
    chosen: string;
    /** What decided: measurements of the candidates on this plan's data (plan/calibration.ts), the cost model alone, or the plan. */
    basis: 'measured' | 'model' | 'given';
    /** Per candidate: measured fixed ms per run and ms per batch, and the ms predicted for this run from them. */
    measured: Record<string, { fixedMs: number; perBatchMs: number; runMs: number }>;
  } | null;
}

/** What a run is made of once its files are open. */
export interface PipelineInfo {
  readonly plan: TypedPlan;
  readonly dataset: Dataset;
  readonly layout: BatchLayout;
  /** Rows this rank reads per epoch. */
  readonly rowsPerEpoch: number;
  readonly backend: string;
}

const emptyMetrics = (): PipelineMetrics => ({ rows: 0, batches: 0, preprocessMs: 0, setupMs: 0, sourceWaitMs: 0, batchMs: 0, bytesIn: 0, bytesOut: 0, maxBuffered: 0, lastReport: null, reportTotals: {}, backendSummary: null, pushdown: null, packedChunks: 0, sharedChunks: 0, splitChunks: 0, recycledPacks: 0, optimizer: null, placement: null });

/**
 * A preprocessing pipeline over Parquet files: iterate it with `for await`, or subscribe to
 * `observable()`. Each iteration or subscription is a run from the start (or from `resume`).
 *
 * @example
 * const p = pipeline(plan, { input: 'data/*.parquet' });
 * for await (const b of p) train(b.dense.data, b.sparse, b.labels);
 */
export class Pipeline implements AsyncIterable<Batch> {
  readonly plan: Plan;
  private current: IteratorState | null = null;
  private info_: Promise<PipelineInfo> | null = null;
  private fit: PlanState | null = null;
  private _metrics = emptyMetrics();

  constructor(plan: PlanSpec | Plan | string, private readonly options: PipelineOptions = {}) {
    this.plan = loadPlan(plan);
    if (options.prefetch !== undefined && (!Number.isInteger(options.prefetch) || options.prefetch < 1)) throw new PlanError('prefetch must be a positive integer');
    const d = options.decoders;
    if (d !== undefined && (!Number.isInteger(d) || d < 1 || d > 256)) throw new PlanError(`decoders must be an integer from 1 to 256, got ${show(d)}`);
  }

  /** Opens the files (once) and type-checks the plan against them. */
  info(): Promise<PipelineInfo> {
    this.info_ ??= this.open();
    return this.info_;
  }

  /** The resumable position after the last batch taken by the consumer (or the start). */
  state(): IteratorState | null {
    return this.current;
  }

  /** Counters of the latest run. */
  metrics(): PipelineMetrics {
    const m = this._metrics;
    return { ...m, reportTotals: { ...m.reportTotals }, pushdown: m.pushdown && { ...m.pushdown }, optimizer: m.optimizer && { ...m.optimizer }, placement: m.placement && { ...m.placement, features: { ...m.placement.features }, measured: { ...m.placement.measured } } };
  }

  private async open(): Promise<PipelineInfo> {
    const pool = new DecoderPool(1);
    try {
      const { dataset, plan } = await openInput(this.plan, this.options.input ?? this.plan.input, pool);
      this.fit = this.loadFitState(plan);
      return { plan, dataset, layout: batchLayout(plan), rowsPerEpoch: epochRows(dataset, { shard: plan.shard }), backend: this.backendSpec().name };
    } finally {
      await pool.close();
    }
  }

  /**
   * The backend spec without the pipeline's own `pushdown` option, and the pushdown plan when it
   * applies: on by default for the `cpu` backend, for unshuffled reads of local files (the reader
   * computes per-value op chains on dictionary entries; see plan/pushdown.ts).
   */
  private pushdownFor(info: PipelineInfo, plan: TypedPlan, resolved: BackendSpec): { spec: BackendSpec; pushdown: Pushdown | null } {
    const { pushdown: opt, optimize: _o, ...spec } = resolved;
    void _o;
    if (opt !== undefined && typeof opt !== 'boolean') throw new PlanError(`backend option "pushdown" must be true or false, got ${show(opt)}`);
    const want = opt ?? spec.name === 'cpu';
    if (!want || !readerCanCompute(info.dataset, plan)) return { spec, pushdown: null };
    return { spec, pushdown: planPushdown(plan) };
  }

  /**
   * `backend: "auto"` (or a list): chooses a placement. The cost model (plan/cost.ts) proposes
   * one; then every candidate placement (plan/calibration.ts: each backend alone, each non-cpu
   * backend with the reader's pushdown, the model's mixed placement) is measured on the first
   * batches of the real data through this very pipeline path, unless its measurement is cached
   * for this plan and machine, and the one predicted fastest for this run is kept. A placement on
   * a single backend becomes that backend itself (so all-cpu keeps the reader pushdown, webgpu its
   * optimizer); a mixed one becomes the auto backend with the placement fixed.
   */
  private async resolveAuto(info: PipelineInfo): Promise<{ spec: BackendSpec; placement: PipelineMetrics['placement']; byFeature: ReadonlyMap<string, string> | null }> {
    const spec = this.backendSpec();
    if (autoCandidates(spec) === null) return { spec, placement: null, byFeature: null };
    const plan = info.plan;
    const { backends: _b, placement: given, calibrate: cal, ...rest } = spec;
    void _b;
    if (cal !== undefined && typeof cal !== 'boolean') throw new PlanError(`backend auto: option "calibrate" must be true or false, got ${show(cal)}`);
    if (given !== undefined) {
      // A placement written in the plan is run as written (autoBackend checks it).
      const byFeature = new Map(Object.entries(given as Record<string, string>));
      return { spec: { ...rest, name: 'auto', placement: given }, placement: { features: {}, predictedMs: {}, singleMs: {}, chosen: 'given', basis: 'given', measured: {} }, byFeature };
    }
    const { placement: p, models } = await autoPlacement(plan, spec);
    const { candidates, modelChoice } = runCandidates(models.map((m) => m.backend), p, plan, info.dataset, rest);
    const batches = (info.rowsPerEpoch * plan.epochs) / plan.batchSize;
    let measured: Record<string, Measurement> = {};
    if (cal !== false && candidates.length > 1) {
      const cached = readMeasurements(plan);
      for (const c of candidates) if (cached[c.label] !== undefined) measured[c.label] = cached[c.label]!;
      const missing = candidates.filter((c) => measured[c.label] === undefined);
      if (missing.length > 0) {
        const fresh = await measureCandidates(missing, batches, (c) => this.probe(info, { ...rest, ...c.spec }));
        writeMeasurements(plan, fresh);
        measured = { ...measured, ...fresh };
      }
    }
    const chosen = chooseMeasured(candidates, measured, batches) ?? modelChoice;
    const byFeature = chosen.label === 'mixed' ? p.byFeature : new Map(plan.features.map((f) => [f.name, chosen.spec.name]));
    const placement: NonNullable<PipelineMetrics['placement']> = {
      features: {},
      predictedMs: { ...p.predictedMs },
      singleMs: { ...p.singleMs },
      chosen: chosen.label,
      basis: measured[chosen.label] !== undefined ? 'measured' : 'model',
      measured: Object.fromEntries(Object.entries(measured).map(([k, m]) => [k, { ...m, runMs: predictRun(m, batches) }])),
    };
    return { spec: { ...rest, ...chosen.spec }, placement, byFeature };
  }

  /**
   * Runs a candidate backend spec over a prefix of the data — its first row groups, at least two
   * and at least four batches' worth — through this pipeline's own path (same files, fitted state
   * and options), and fits its time as fixed + per row: the per-row part from the first batch to
   * the last (rows counted as the preprocess stage finished them: a packed reader hands over whole
   * row groups), the fixed part (setup, worker start, pipeline fill) what is left of the first
   * batch's time. It stops early once it has run `PROBE_STEADY_MS` past the first batch.
   */
  private async probe(info: PipelineInfo, spec: BackendSpec): Promise<Measurement> {
    const { units } = info.dataset;
    let n = 0;
    let rows = 0;
    while (n < units.length && (n < 2 || rows < 4 * info.plan.batchSize)) rows += units[n++]!.rows;
    const dataset = { ...info.dataset, units: units.slice(0, n), totalRows: rows };
    const p = new Pipeline(this.plan, { ...this.options, backend: spec, resume: undefined });
    p.info_ = Promise.resolve({ ...info, plan: { ...info.plan, epochs: 1 }, dataset, rowsPerEpoch: epochRows(dataset, { shard: info.plan.shard }) });
    p.fit = this.fit;
    const t0 = performance.now();
    let first: { ms: number; rows: number } | null = null;
    let last: { ms: number; rows: number } | null = null;
    for await (const b of p) {
      void b;
      last = { ms: performance.now() - t0, rows: p._metrics.rows };
      first ??= last;
      if (last.rows > first.rows && last.ms - first.ms >= PROBE_STEADY_MS) break;
    }
    if (first === null || last === null || last.rows === 0) throw new SluiceError('probe read no rows');
    // One arrival only (the whole prefix at once): no slope to fit; all but the setup is per row.
    const perRow = last.rows > first.rows ? (last.ms - first.ms) / (last.rows - first.rows) : Math.max(0, last.ms - p._metrics.setupMs) / last.rows;
    return { fixedMs: Math.max(0, first.ms - perRow * first.rows), perBatchMs: perRow * info.plan.batchSize };
  }

  /**
   * The plan the backend runs: with the `optimize` option (on by default for webgpu, which runs
   * the optimizer's staged graph), redundant op steps are removed using the files' footer
   * statistics (plan/optimize.ts). Outputs are identical either way. `spec` is the backend the
   * run resolved to (auto's choice), so an auto run on webgpu is optimized like webgpu.
   */
  private async optimizedPlan(info: PipelineInfo, spec: BackendSpec): Promise<{ plan: TypedPlan; optimizer: PipelineMetrics['optimizer'] }> {
    const opt = this.options.optimize ?? spec.optimize;
    if (opt !== undefined && typeof opt !== 'boolean') throw new PlanError(`option "optimize" must be true or false, got ${show(opt)}`);
    if (!(opt ?? spec.name === 'webgpu')) return { plan: info.plan, optimizer: null };
    const local = info.dataset.files.map((f) => f.source);
    const stats = await readColumnStats(local, info.plan.columns);
    const { plan, removed } = eliminateRedundant(info.plan, stats);
    const count = (p: TypedPlan): number => p.features.reduce((a, f) => a + f.ops.length, 0);
    // Backends that reload the plan in workers get the rewritten spec (same features, fewer ops).
    const features = plan.features.map((f, i) => ({ ...info.plan.spec.features[i]!, ops: f.ops.map((o) => info.plan.spec.features[i]!.ops![o.index]!) }));
    return { plan: { ...plan, spec: { ...plan.spec, features } }, optimizer: { opsBefore: count(info.plan), opsAfter: count(plan), removed: removed.length } };
  }

  /** The `workers` the backend spec asks for, else one per core but one (the cpu backend's default). */
  private workersWanted(): number {
    const w = this.backendSpec().workers;
    if (w === undefined) return Math.max(1, availableParallelism() - 1);
    if (!Number.isInteger(w) || (w as number) < 1 || (w as number) > 256) throw new PlanError(`backend ${this.backendSpec().name}: workers must be an integer from 1 to 256, got ${show(w)}`);
    return w as number;
  }

  private backendSpec(): BackendSpec {
    const o = this.options.backend;
    if (o === undefined) return this.plan.backend;
    const spec = typeof o === 'string' ? { name: o } : o;
    // `--backend B` keeps the plan's options when it names the same backend.
    return spec.name === this.plan.backend.name ? { ...this.plan.backend, ...spec } : spec;
  }

  private loadFitState(plan: TypedPlan): PlanState {
    const needs = statefulOps(plan);
    const fs = this.options.fitState;
    if (fs === undefined) {
      if (needs.length > 0) {
        const f = needs[0]!;
        throw new PlanError('this plan has stateful ops; run `sluice fit` and pass its output (--state / fitState)', { feature: f.feature.name, op: `${f.feature.ops[f.index]!.op} (#${f.index + 1})` });
      }
      return new Map();
    }
    if (fs instanceof Map) return fs;
    if (typeof fs === 'string') {
      let json: unknown;
      try {
        json = JSON.parse(readFileSync(fs, 'utf8'));
      } catch (e) {
        throw new PlanError(`cannot read fit state ${fs}: ${(e as Error).message}`);
      }
      return stateFromJSON(plan, json, fs);
    }
    return stateFromJSON(plan, fs);
  }

  private fingerprint(info: PipelineInfo): string {
    const h = createHash('sha256');
    h.update(JSON.stringify(this.plan.spec.features));
    h.update(JSON.stringify([this.plan.batchSize, this.plan.dropLast, this.plan.shuffle, this.plan.shard, this.plan.epochs, this.plan.label]));
    for (const f of info.dataset.files) h.update(`${f.source}:${f.rowGroups.join(',')}`);
    return h.digest('hex').slice(0, 16);
  }

  /**
   * A cold Observable of batches: each subscription is a run. The subscriber is the consumer:
   * a batch counts as taken once its `next` handler returns.
   */
  observable(): Observable<Batch> {
    return this.run((flow) => (b: Batch) => { this.take(b); flow.consumed(); });
  }

  /** The run as an Observable; `onTaken(flow)` is called when a batch is handed to the consumer. */
  private run(onTaken: ((flow: Flow) => (b: Batch) => void) | null): Observable<Batch> {
    return defer(() => from(this.info())).pipe(
      // A backend finished after the run was cancelled is disposed at once (no stray worker pool).
      mergeMap((info) => new Observable<{ info: PipelineInfo; backend: Backend; pushdown: Pushdown | null; kernels: string | null; optimizer: PipelineMetrics['optimizer']; placement: PipelineMetrics['placement']; setupMs: number }>((sub) => {
        let cancelled = false;
        const t0 = performance.now();
        this.resolveAuto(info).then(async ({ spec: resolved, placement, byFeature }) => {
          const { plan, optimizer } = await this.optimizedPlan(info, resolved);
          const { spec, pushdown } = this.pushdownFor(info, plan, resolved);
          // Where each feature is computed: pushed-down features in the reader (decode workers).
          if (placement !== null && byFeature !== null) {
            for (const f of plan.features) {
              const at = pushdown?.outputs.has(f.name) ? 'reader' : byFeature.get(f.name)!;
              placement.features[at] = (placement.features[at] ?? 0) + 1;
            }
          }
          // The reader runs the pushed-down ops with the backend's own kernels where it has them
          // (the cpu backend's WebAssembly ones), else with core's reference kernels.
          const kernels = pushdown === null ? null : await readerKernels(spec);
          // Every feature pushed into the reader: no backend work is left, so no worker pool is
          // started; the in-process backend stands in (it is never called).
          const target = allInReader(pushdown) ? { name: 'reference' } : spec;
          const backend = await createBackend(pushdown?.plan ?? plan, target, this.fit!);
          if (cancelled) { void backend.dispose(); return; }
          sub.next({ info: { ...info, plan }, backend, pushdown, kernels, optimizer, placement, setupMs: performance.now() - t0 });
          sub.complete();
        }).catch((e: unknown) => sub.error(e));
        return () => { cancelled = true; };
      })),
      mergeMap(({ info, backend, pushdown, kernels, optimizer, placement, setupMs }) => {
        const plan = info.plan;
        const fitState = this.fit!;
        // Null when every feature was pushed down into the reader: the backend is then never called.
        const backendPlan = pushdown === null ? plan : pushdown.plan;
        // The flow bounds the chunks being preprocessed plus the batches waiting: with a slow
        // consumer every chunk ends up waiting, so it is the most batches ever buffered. By default
        // it is raised to the backend's concurrency, so that every worker of a pool can be busy;
        // a prefetch the user gave is kept as given (README: at most `prefetch` batches wait),
        // which leaves workers beyond it idle.
        const flow = new Flow(this.options.prefetch ?? plan.spec.prefetch ?? Math.max(plan.prefetch, backend.concurrency));
        // With pushdown the decoders run the pushed ops too, so they get the backend's parallelism.
        const pool = new DecoderPool(this.options.decoders ?? (pushdown === null ? Math.min(2, backend.concurrency) : allInReader(pushdown) ? this.workersWanted() : backend.concurrency), { kernels });
        const resume = this.options.resume;
        const fp = this.fingerprint(info);
        let start: Cursor = START;
        let firstSeq = 0;
        if (resume !== undefined) {
          if (resume.version !== 1 || resume.fingerprint !== fp) throw new PlanError('resume state is from another plan or data set (fingerprint differs)');
          start = { epoch: resume.epoch, window: resume.window, offset: resume.offset };
          firstSeq = resume.seq;
        }
        this._metrics = emptyMetrics();
        this.current = { version: 1, ...start, seq: firstSeq, seed: plan.shuffle?.seed ?? null, fingerprint: fp };
        const m = this._metrics;
        m.optimizer = optimizer;
        m.placement = placement;
        m.setupMs = setupMs;
        if (pushdown !== null) m.pushdown = { derived: pushdown.derived.length, computedInReader: 0, computedInPipeline: 0 };
        // With pushdown the reader computes derived columns; it reads only the other columns raw.
        const readRaw = backendPlan?.columns ?? (plan.label === null ? [] : [plan.label]);
        const columns = new Map<string, ColumnType>(readRaw.map((c) => [c, info.dataset.schema.get(c)!]));
        // Nothing left for the backend: the decoders lay the batches out themselves, and this
        // thread only hands their arrays on. Once the consumer releases batches, the decoders lay
        // them out in the arena's reused memory (see Batch.release); a pack is one chunk, never
        // more rows than a batch or a row group.
        let pack: PackRequest | undefined;
        if (allInReader(pushdown) && this.options.pack !== false) {
          const packRowsMax = Math.min(plan.batchSize, info.dataset.units.reduce((a, u) => Math.max(a, u.rows), 1));
          pack = { layout: info.layout, outputs: [...pushdown.outputs], label: plan.label, arena: PackArena.take(packSlotBytes(info.layout, packRowsMax)) };
        }
        const arena = pack?.arena;
        const chunks = (): AsyncIterator<Chunk> => {
          const it = readChunks(info.dataset, pool, {
            columns, chunkRows: plan.batchSize, shuffle: plan.shuffle, shard: plan.shard, epochs: plan.epochs, start,
            ...(pushdown ? { derived: pushdown.derived } : {}),
            ...(pack !== undefined ? { pack } : {}),
            ...(this.options.signal ? { signal: this.options.signal } : {}),
          });
          // Time spent waiting on the reader is the source's share of the run.
          return {
            async next() {
              const t0 = performance.now();
              const r = await it.next();
              m.sourceWaitMs += performance.now() - t0;
              return r;
            },
            return: async () => it.return(undefined),
          };
        };
        const run = async (c: Chunk): Promise<ProcessedChunk> => {
          if (c.shared) m.sharedChunks++;
          if (c.split) m.splitChunks++;
          if (c.packed !== undefined) {
            m.pushdown!.computedInReader += pushdown!.derived.length;
            m.packedChunks++;
            m.recycledPacks = arena?.reused ?? 0;
            m.rows += c.rows;
            return { outputs: new Map(), label: null, rows: c.rows, at: c.at, windowRows: c.windowRows, lastInEpoch: c.lastInEpoch, locate: c.locate, packed: c.packed };
          }
          const t0 = performance.now();
          let inputs: ReadonlyMap<string, Column> = c.columns;
          // A derived column the reader could not compute: the chunk has its raw input, and the
          // feature's own ops make it here (their errors name the feature, op and row).
          for (const d of pushdown?.derived ?? []) {
            if (inputs.has(d.name)) { m.pushdown!.computedInReader++; continue; }
            m.pushdown!.computedInPipeline++;
            const copy = new Map(inputs);
            copy.set(d.name, runFeature(d.feature, inputs.get(d.input)!, new Map(), new Map(), fitState, c.locate));
            inputs = copy;
          }
          // Pushed-down features are done; the backend runs the rest (if any are left).
          const { columns: outputs, report } = backendPlan !== null
            ? await backend.run(inputs, c.locate)
            : { columns: new Map<string, Column>(), report: { wallMs: 0, bytesIn: 0, bytesOut: 0 } };
          for (const [f, d] of pushdown?.outputs ?? []) outputs.set(f, inputs.get(d)!);
          m.preprocessMs += performance.now() - t0;
          m.bytesIn += report.bytesIn;
          m.bytesOut += report.bytesOut;
          m.lastReport = report;
          for (const [k, v] of Object.entries(report)) {
            if (typeof v === 'number' && k !== 'wallMs' && k !== 'bytesIn' && k !== 'bytesOut') m.reportTotals[k] = (m.reportTotals[k] ?? 0) + v;
          }
          m.rows += c.rows;
          return { outputs, label: plan.label === null ? null : c.columns.get(plan.label)!, rows: c.rows, at: c.at, windowRows: c.windowRows, lastInEpoch: c.lastInEpoch, locate: c.locate };
        };
        const batches = source(chunks, flow).pipe(
          preprocess(run, backend.concurrency),
          batch({ layout: info.layout, batchSize: plan.batchSize, dropLast: plan.dropLast, firstSeq, ...(arena ? { arena } : {}), onAssembled: (ms) => { m.batchMs += ms; } }, flow),
        );
        const taken = onTaken?.(flow);
        return new Observable<Batch>((sub) => {
          const inner: Subscription = batches.subscribe({
            next: (b) => {
              m.batches++;
              m.maxBuffered = Math.max(m.maxBuffered, flow.maxQueued);
              sub.next(b);
              taken?.(b);
            },
            error: (e) => sub.error(e),
            complete: () => sub.complete(),
          });
          const onAbort = (): void => sub.error(abortReason(this.options.signal!));
          this.options.signal?.addEventListener('abort', onAbort, { once: true });
          if (this.options.signal?.aborted) onAbort();
          return () => {
            this.options.signal?.removeEventListener('abort', onAbort);
            inner.unsubscribe();
          };
        }).pipe(finalize(() => {
          m.backendSummary = backend.summary?.() ?? null;
          void pool.close();
          // Kept a while for the next pipeline of this shape (a new epoch, a benchmark's next run).
          arena?.park();
          void backend.dispose();
        }));
      }),
    );
  }

  private take(b: Batch): void {
    const c = this.current!;
    this.current = { ...c, epoch: b.end.epoch, window: b.end.window, offset: b.end.offset, seq: b.seq + 1 };
  }

  /**
   * Iterates the batches of a run. The body of the `for await` loop is the consumer: the
   * pipeline keeps at most `prefetch` batches ready ahead of it. Breaking out stops the run.
   */
  [Symbol.asyncIterator](): AsyncIterator<Batch> {
    const queue: Batch[] = [];
    let done = false;
    let failure: unknown = null;
    let wake: (() => void) | null = null;
    let flowRef: Flow | null = null;
    const signal = (): void => { const w = wake; wake = null; w?.(); };
    const sub = this.run((flow) => { flowRef = flow; return () => undefined; }).subscribe({
      next: (b) => { queue.push(b); signal(); },
      error: (e) => { failure = e; done = true; signal(); },
      complete: () => { done = true; signal(); },
    });
    return {
      next: async (): Promise<IteratorResult<Batch>> => {
        for (;;) {
          // An abort stops delivery at once; a data error still lets the good batches before it out.
          if (this.options.signal?.aborted) {
            queue.length = 0;
            sub.unsubscribe();
            throw abortReason(this.options.signal);
          }
          if (queue.length > 0) {
            const b = queue.shift()!;
            this.take(b);
            flowRef?.consumed();
            return { done: false, value: b };
          }
          if (failure !== null) { const f = failure; failure = null; sub.unsubscribe(); throw f; }
          if (done) return { done: true, value: undefined };
          await new Promise<void>((r) => { wake = r; });
        }
      },
      return: async (): Promise<IteratorResult<Batch>> => {
        done = true;
        queue.length = 0;
        sub.unsubscribe();
        return { done: true, value: undefined };
      },
    };
  }
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new SluiceError('aborted');
}


/**
 * Builds the usual chain — Parquet source, preprocess on the plan's backend, batch, bounded
 * prefetch — from a JSON plan.
 *
 * @example
 * import { pipeline } from '@sluice/core';
 * for await (const batch of pipeline('plan.json', { input: 'train.parquet' })) {
 *   console.log(batch.rows, batch.dense.dim, batch.sparse.keys.length);
 * }
 */
export function pipeline(plan: PlanSpec | Plan | string, options: PipelineOptions = {}): Pipeline {
  return new Pipeline(plan, options);
}
