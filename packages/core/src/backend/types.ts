/**
 * What a backend is to the pipeline: a factory compiles a plan into a `Backend`, which runs one
 * chunk's columns at a time and reports what it cost. Backend packages implement these types.
 */
import type { BackendSpec, Column, PlanState, RowLocator, TypedPlan } from '@sluice/ops';
import type { StagedPlan } from '../plan/graph.js';

/**
 * What running a chunk cost. Real backends measure; simulators add modelled figures.
 *
 * @example
 * const { report } = await backend.run(columns, locate);
 * console.log(report.wallMs, report.bytesIn, report.modelledMs); // modelledMs: a simulator's extra
 */
export interface CostReport {
  /** Measured wall time of the run call, milliseconds. */
  readonly wallMs: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly [extra: string]: unknown;
}

/**
 * What a backend can do, for placement and for skipping tests with a reason.
 *
 * @example
 * const capabilities: Capabilities = { ops: new Set(['fillNull', 'log', 'bucketize']), timing: 'modelled' };
 */
export interface Capabilities {
  /** Op names it runs; others make `compile` fail with a PlanError. */
  readonly ops: ReadonlySet<string> | 'all';
  /** Whether results are real (`measured`) or come with a cost model (`modelled`). */
  readonly timing: 'measured' | 'modelled';
}

/**
 * A backend ready to run one compiled plan (what its factory's compile step returns).
 *
 * @example
 * const echo: Backend = {
 *   name: 'echo', capabilities: { ops: 'all', timing: 'measured' }, concurrency: 1,
 *   async run(columns) { return { columns: new Map(columns), report: { wallMs: 0, bytesIn: 0, bytesOut: 0 } }; },
 *   async dispose() {},
 * };
 */
export interface Backend {
  readonly name: string;
  readonly capabilities: Capabilities;
  /**
   * Chunks it can run at once (1 for in-process backends, the pool size for worker pools). The
   * pipeline keeps that many in flight and still emits results in input order.
   */
  readonly concurrency: number;
  /** Transforms one chunk's input columns into output columns by feature name. */
  run(columns: ReadonlyMap<string, Column>, locate: RowLocator): Promise<{ columns: Map<string, Column>; report: CostReport }>;
  /**
   * Optional: the backend's own figures for the run so far (a GPU backend's kernels per batch, a
   * simulator's modelled throughput, energy and cost), printed by `sluice bench`. Called once when
   * a run ends, before `dispose`.
   */
  summary?(): Record<string, number | string>;
  /**
   * Optional: the optimizer graph and stage schedule the backend really runs per chunk (its
   * kernel launches), for `sluice explain`. Backends without one are explained with core's
   * generic CPU schedule.
   */
  stagedPlan?(): StagedPlan;
  /** Releases workers, devices and buffers. Safe to call twice. */
  dispose(): Promise<void>;
}

/**
 * Compiles a plan for a backend: validates the options, checks every op is supported, and
 * returns the runnable backend. Registered under a name with `registerBackend`.
 *
 * @example
 * const traced: BackendFactory = async (plan, options, state) => {
 *   const inner = await createBackend(plan, { name: 'reference' }, state);
 *   return { ...inner, name: options.name };
 * };
 * registerBackend('traced', traced);
 */
export type BackendFactory = (plan: TypedPlan, options: BackendSpec, state: PlanState) => Backend | Promise<Backend>;
