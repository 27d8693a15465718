import type { Column } from '@sluice/ops';
import type { PlanState, RowLocator } from '@sluice/ops';
import type { TypedPlan } from '@sluice/ops';
import type { BackendSpec } from '@sluice/ops';
import type { StagedPlan } from '../plan/explain.js';

/** What running a chunk cost. Real backends measure; simulators add modelled figures. */
export interface CostReport {
  /** Measured wall time of the run call, milliseconds. */
  readonly wallMs: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly [extra: string]: unknown;
}

/** What a backend can do, for placement and for skipping tests with a reason. */
export interface Capabilities {
  /** Op names it runs; others make `compile` fail with a PlanError. */
  readonly ops: ReadonlySet<string> | 'all';
  /** Whether results are real (`measured`) or come with a cost model (`modelled`). */
  readonly timing: 'measured' | 'modelled';
}

/** A backend ready to run one compiled plan (what its factory's compile step returns). */
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
 */
export type BackendFactory = (plan: TypedPlan, options: BackendSpec, state: PlanState) => Backend | Promise<Backend>;
