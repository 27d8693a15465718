/**
 * Setting a run up: opening the files, choosing the backend (`auto` included), gating the
 * optimizer and the reader's pushdown, and wiring the stages — Parquet source, preprocess on the
 * backend, batch — that `Pipeline` runs and hands to its consumer.
 */
import { availableParallelism } from 'node:os';
import type { Observable } from 'rxjs';
import {
  MAX_THREADS,
  PlanError,
  readJsonFile,
  runFeature,
  show,
  stateFromJSON,
  statefulOps,
  type BackendSpec,
  type Column,
  type ColumnType,
  type Plan,
  type PlanState,
  type TypedPlan,
} from '@sluice/ops';
import { batchLayout, PackArena, packSlotBytes, type Batch, type BatchLayout, type ProcessedChunk } from '../batch/index.js';
import { createBackend, preloadBackend, readerKernels } from '../backend/registry.js';
import type { Backend } from '../backend/types.js';
import { eliminateRedundant } from '../plan/optimize.js';
import { allInReader, planPushdown, readerCanCompute, type Pushdown } from '../plan/pushdown.js';
import { readColumnStats } from '../plan/stats.js';
import type { Measurement } from '../placement/calibration.js';
import { resolveAuto, type PlacementReport } from '../placement/resolve.js';
import type { Dataset } from '../reader/dataset.js';
import { DecoderPool } from '../reader/decoder-pool.js';
import { Flow, batch, preprocess, source } from '../stream/operators.js';
import { epochRows, readChunks, type Chunk, type PackRequest } from '../stream/source.js';
import { openInput } from './fit.js';
import { addReport, emptyMetrics, timedSource, type PipelineMetrics } from './metrics.js';
import { fingerprint, resumeStart, type IteratorState } from './resume.js';
import type { PipelineOptions } from './options.js';
// Core's own backends, registered for `createBackend`: `reference` and `cpu` (in-process), `auto`.
import '../backend/inline.js';
import '../placement/register.js';

export type { PipelineOptions } from './options.js';

/**
 * What a run is made of once its files are open.
 *
 * @example
 * const { rowsPerEpoch, layout } = await pipeline(plan, { input }).info();
 */
export interface PipelineInfo {
  readonly plan: TypedPlan;
  readonly dataset: Dataset;
  readonly layout: BatchLayout;
  /** Rows this rank reads per epoch. */
  readonly rowsPerEpoch: number;
  readonly backend: string;
}

/** The backend spec a run asks for: the plan's, or the one the options give. */
export function backendSpecOf(plan: Plan, option: PipelineOptions['backend']): BackendSpec {
  if (option === undefined) return plan.backend;
  const spec = typeof option === 'string' ? { name: option } : option;
  // `--backend B` keeps the plan's options when it names the same backend.
  return spec.name === plan.backend.name ? { ...plan.backend, ...spec } : spec;
}

/** Opens the input's footers (once per pipeline), type-checks the plan against them and loads its fitted state. */
export async function openRun(plan: Plan, options: PipelineOptions): Promise<{ info: PipelineInfo; fit: PlanState }> {
  // The backend's package loads while the footers are read (the spec is checked where it is used).
  const name = (backendSpecOf(plan, options.backend) as Partial<BackendSpec> | undefined)?.name;
  if (typeof name === 'string') preloadBackend(name);
  const pool = new DecoderPool(1);
  try {
    const { dataset, plan: typed } = await openInput(plan, options.input ?? plan.input, pool);
    const fit = loadFitState(typed, options.fitState);
    return {
      info: {
        plan: typed,
        dataset,
        layout: batchLayout(typed),
        rowsPerEpoch: epochRows(dataset, { shard: typed.shard }),
        backend: backendSpecOf(plan, options.backend).name,
      },
      fit,
    };
  } finally {
    await pool.close();
  }
}

function loadFitState(plan: TypedPlan, fs: PipelineOptions['fitState']): PlanState {
  const needs = statefulOps(plan);
  if (fs === undefined) {
    if (needs.length > 0) {
      const f = needs[0]!;
      throw new PlanError('this plan has stateful ops; run `sluice fit` and pass its output (--state / fitState)', {
        feature: f.feature.name,
        op: `${f.feature.ops[f.index]!.op} (#${f.index + 1})`,
      });
    }
    return new Map();
  }
  if (fs instanceof Map) return fs;
  if (typeof fs === 'string') {
    return stateFromJSON(plan, readJsonFile(fs, 'fit state'), fs);
  }
  return stateFromJSON(plan, fs);
}

/** The `workers` the backend spec asks for, else one per core but one (the cpu backend's default). */
function workersWanted(spec: BackendSpec): number {
  const w = spec.workers;
  if (w === undefined) return Math.max(1, availableParallelism() - 1);
  if (!Number.isInteger(w) || (w as number) < 1 || (w as number) > MAX_THREADS)
    throw new PlanError(`backend ${spec.name}: workers must be an integer from 1 to ${MAX_THREADS}, got ${show(w)}`);
  return w as number;
}

/**
 * The plan the backend runs: with the `optimize` option (on by default for webgpu, which runs
 * the optimizer's staged graph), redundant op steps are removed using the files' footer
 * statistics (plan/optimize.ts). Outputs are identical either way. `spec` is the backend the
 * run resolved to (auto's choice), so an auto run on webgpu is optimized like webgpu.
 */
async function optimizedPlan(
  info: PipelineInfo,
  spec: BackendSpec,
  optimize: boolean | undefined,
): Promise<{ plan: TypedPlan; optimizer: PipelineMetrics['optimizer'] }> {
  const opt = optimize ?? spec.optimize;
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

/**
 * The backend spec without the pipeline's own `pushdown` option, and the pushdown plan when it
 * applies: on by default for the `cpu` backend, for unshuffled reads of local files (the reader
 * computes per-value op chains on dictionary entries; see plan/pushdown.ts).
 */
function pushdownFor(info: PipelineInfo, plan: TypedPlan, resolved: BackendSpec): { spec: BackendSpec; pushdown: Pushdown | null } {
  const { pushdown: opt, optimize: _o, ...spec } = resolved;
  void _o;
  if (opt !== undefined && typeof opt !== 'boolean') throw new PlanError(`backend option "pushdown" must be true or false, got ${show(opt)}`);
  const want = opt ?? spec.name === 'cpu';
  if (!want || !readerCanCompute(info.dataset, plan)) return { spec, pushdown: null };
  return { spec, pushdown: planPushdown(plan) };
}

/** A run ready to start: its plan as the backend runs it, the backend, and what the setup decided. */
export interface RunSetup {
  readonly info: PipelineInfo;
  readonly backend: Backend;
  readonly pushdown: Pushdown | null;
  /** Module of the backend's kernels for the reader's pushed-down ops, or null for core's. */
  readonly kernels: string | null;
  readonly optimizer: PipelineMetrics['optimizer'];
  readonly placement: PlacementReport | null;
  readonly setupMs: number;
}

/**
 * Chooses and starts a run's backend: auto's placement (placement/resolve.ts; `probe` measures a
 * candidate), the optimizer, the reader's pushdown and its kernels, then the backend itself.
 */
export async function prepareRun(
  info: PipelineInfo,
  spec: BackendSpec,
  optimize: boolean | undefined,
  fit: PlanState,
  probe: (spec: BackendSpec) => Promise<Measurement>,
): Promise<RunSetup> {
  const t0 = performance.now();
  const { spec: resolved, placement, byFeature } = await resolveAuto(spec, info, probe);
  const { plan, optimizer } = await optimizedPlan(info, resolved, optimize);
  const { spec: backendSpec, pushdown } = pushdownFor(info, plan, resolved);
  // Where each feature is computed: pushed-down features in the reader (decode workers).
  if (placement !== null && byFeature !== null) {
    for (const f of plan.features) {
      const at = pushdown?.outputs.has(f.name) ? 'reader' : byFeature.get(f.name)!;
      placement.features[at] = (placement.features[at] ?? 0) + 1;
    }
  }
  // The reader runs the pushed-down ops with the backend's own kernels where it has them
  // (the cpu backend's WebAssembly ones), else with core's reference kernels.
  const kernels = pushdown === null ? null : await readerKernels(backendSpec);
  // Every feature pushed into the reader: no backend work is left, so no worker pool is
  // started; the in-process backend stands in (it is never called).
  const target = allInReader(pushdown) ? { name: 'reference' } : backendSpec;
  const backend = await createBackend(pushdown?.plan ?? plan, target, fit);
  return { info: { ...info, plan }, backend, pushdown, kernels, optimizer, placement, setupMs: performance.now() - t0 };
}

/** A run's stages, wired but not started: subscribing to `batches` starts the source. */
export interface RunStages {
  readonly batches: Observable<Batch>;
  /** Bounds the chunks in work plus the batches waiting; the consumer reports each batch taken. */
  readonly flow: Flow;
  readonly metrics: PipelineMetrics;
  /** The resume state at the run's start. */
  readonly state: IteratorState;
  /** Releases the decoders, the pack arena and the backend once the run ends. */
  finish(): void;
}

/**
 * Wires a set-up run's stages: the Parquet source (from the start, or where `options.resume`
 * says), preprocess on the backend (or in the reader for pushed-down features), batch. `plan` is
 * the pipeline's plan as given (the resume fingerprint's), `spec` its backend spec before auto.
 */
export function buildStages(s: RunSetup, plan: Plan, spec: BackendSpec, fitState: PlanState, options: PipelineOptions): RunStages {
  const { info, backend, pushdown, kernels, optimizer, placement, setupMs } = s;
  const typed = info.plan;
  // Null when every feature was pushed down into the reader: the backend is then never called.
  const backendPlan = pushdown === null ? typed : pushdown.plan;
  // The flow bounds the chunks being preprocessed plus the batches waiting: with a slow
  // consumer every chunk ends up waiting, so it is the most batches ever buffered. By default
  // it is raised to the backend's concurrency, so that every worker of a pool can be busy;
  // a prefetch the user gave is kept as given (docs/pipeline.md: at most `prefetch` batches wait),
  // which leaves workers beyond it idle.
  const flow = new Flow(options.prefetch ?? typed.spec.prefetch ?? Math.max(typed.prefetch, backend.concurrency));
  // With pushdown the decoders run the pushed ops too, so they get the backend's parallelism.
  const pool = new DecoderPool(
    options.decoders ?? (pushdown === null ? Math.min(2, backend.concurrency) : allInReader(pushdown) ? workersWanted(spec) : backend.concurrency),
    { kernels, verifyCrc: options.verifyCrc ?? typed.spec.verifyCrc ?? true },
  );
  const fp = fingerprint(plan, info.dataset);
  const { start, firstSeq } = resumeStart(options.resume, fp);
  const m = emptyMetrics();
  const state: IteratorState = { version: 1, ...start, seq: firstSeq, seed: typed.shuffle?.seed ?? null, fingerprint: fp };
  m.optimizer = optimizer;
  m.placement = placement;
  m.setupMs = setupMs;
  if (pushdown !== null) m.pushdown = { derived: pushdown.derived.length, computedInReader: 0, computedInPipeline: 0 };
  // With pushdown the reader computes derived columns; it reads only the other columns raw.
  const readRaw = backendPlan?.columns ?? (typed.label === null ? [] : [typed.label]);
  const columns = new Map<string, ColumnType>(readRaw.map((c) => [c, info.dataset.schema.get(c)!]));
  // Nothing left for the backend: the decoders lay the batches out themselves, and this
  // thread only hands their arrays on, in the arena's slots, which come back for reuse as the
  // consumer releases its batches (see Batch.release); a pack is one chunk, never more rows than
  // a batch or a row group.
  let pack: PackRequest | undefined;
  if (allInReader(pushdown) && options.pack !== false) {
    const packRowsMax = Math.min(
      typed.batchSize,
      info.dataset.units.reduce((a, u) => Math.max(a, u.rows), 1),
    );
    pack = { layout: info.layout, outputs: [...pushdown.outputs], label: typed.label, arena: PackArena.take(packSlotBytes(info.layout, packRowsMax)) };
  }
  const arena = pack?.arena;
  const chunks = (): AsyncIterator<Chunk> =>
    timedSource(
      readChunks(info.dataset, pool, {
        columns,
        chunkRows: typed.batchSize,
        shuffle: typed.shuffle,
        shard: typed.shard,
        epochs: typed.epochs,
        start,
        ...(options.windowBatches === true ? { windowBatches: true } : {}),
        ...(pushdown ? { derived: pushdown.derived } : {}),
        ...(pack !== undefined ? { pack } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      }),
      m,
    );
  const run = async (c: Chunk): Promise<ProcessedChunk> => {
    if (c.shared) m.sharedChunks++;
    if (c.split) m.splitChunks++;
    if (c.packed !== undefined) {
      m.pushdown!.computedInReader += pushdown!.derived.length;
      m.packedChunks++;
      m.recycledPacks = arena?.reused ?? 0;
      m.rows += c.rows;
      return {
        outputs: new Map(),
        label: null,
        rows: c.rows,
        at: c.at,
        windowRows: c.windowRows,
        lastInEpoch: c.lastInEpoch,
        locate: c.locate,
        packed: c.packed,
      };
    }
    const t0 = performance.now();
    let inputs: ReadonlyMap<string, Column> = c.columns;
    // A derived column the reader could not compute: the chunk has its raw input, and the
    // feature's own ops make it here (their errors name the feature, op and row).
    for (const d of pushdown?.derived ?? []) {
      if (inputs.has(d.name)) {
        m.pushdown!.computedInReader++;
        continue;
      }
      m.pushdown!.computedInPipeline++;
      const copy = new Map(inputs);
      copy.set(d.name, runFeature(d.feature, inputs.get(d.input)!, new Map(), new Map(), fitState, c.locate));
      inputs = copy;
    }
    // Pushed-down features are done; the backend runs the rest (if any are left).
    const { columns: outputs, report } =
      backendPlan !== null ? await backend.run(inputs, c.locate) : { columns: new Map<string, Column>(), report: { wallMs: 0, bytesIn: 0, bytesOut: 0 } };
    for (const [f, d] of pushdown?.outputs ?? []) outputs.set(f, inputs.get(d)!);
    m.preprocessMs += performance.now() - t0;
    addReport(m, report);
    m.rows += c.rows;
    return {
      outputs,
      label: typed.label === null ? null : c.columns.get(typed.label)!,
      rows: c.rows,
      at: c.at,
      windowRows: c.windowRows,
      lastInEpoch: c.lastInEpoch,
      locate: c.locate,
    };
  };
  const batches = source(chunks, flow).pipe(
    preprocess(run, backend.concurrency),
    batch(
      {
        layout: info.layout,
        batchSize: typed.batchSize,
        dropLast: typed.dropLast,
        firstSeq,
        ...(options.windowBatches === true ? { windowBatches: true } : {}),
        ...(arena ? { arena } : {}),
        onAssembled: (ms) => {
          m.batchMs += ms;
        },
      },
      flow,
    ),
  );
  return {
    batches,
    flow,
    metrics: m,
    state,
    finish() {
      m.backendSummary = backend.summary?.() ?? null;
      void pool.close();
      // Kept a while for the next pipeline of this shape (a new epoch, a benchmark's next run).
      arena?.park();
      void backend.dispose();
    },
  };
}
