import type { ColumnType, PackedColumns, stateToJSON } from '@sluice/core/internal';
import type { ErrorWhere, PlanSpec } from '@sluice/core';

/** What every worker is started with: enough to compile the plan once per thread. */
export interface WorkerData {
  readonly plan: PlanSpec;
  readonly schema: ReadonlyArray<readonly [string, ColumnType]>;
  readonly state: ReturnType<typeof stateToJSON>;
  readonly fast: boolean;
  readonly testCrash?: { row: number; times: number };
}

export interface WorkerTask {
  readonly packed: PackedColumns;
  /** File row of the chunk's first row (for the crash test hook). */
  readonly firstRow: number;
  /** 0 for the first try, 1 for the retry after a crash. */
  readonly attempt: number;
}

export interface WorkerResult {
  readonly packed: PackedColumns;
  readonly computeMs: number;
  /** Ops that ran on a fast kernel in this chunk. */
  readonly fastOps: number;
}

/** A data or plan error inside the worker, sent back as data so the main thread can rebuild it. */
export interface WorkerFailure {
  readonly error: { readonly name: string; readonly reason: string; readonly where: ErrorWhere };
}
