import type { Column } from '../column.js';
import type { PlanState, RowLocator } from '../plan/execute.js';
import type { TypedPlan } from '../plan/load.js';
import type { BackendSpec } from '../plan/types.js';

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

/** A backend ready to run one compiled plan. */
export interface Backend {
  readonly name: string;
  readonly capabilities: Capabilities;
  /** Transforms one chunk's input columns into output columns by feature name. */
  run(columns: ReadonlyMap<string, Column>, locate: RowLocator): Promise<{ columns: Map<string, Column>; report: CostReport }>;
  /** Releases workers, devices and buffers. Safe to call twice. */
  dispose(): Promise<void>;
}

/** Creates a backend for a plan: `compile(plan)` in the backend's terms. */
export type BackendFactory = (plan: TypedPlan, options: BackendSpec, state: PlanState) => Backend | Promise<Backend>;
