import type { Column, ColumnType } from '../column.js';

/**
 * Thrown by an op's `validate` or `outputType` when a plan is loaded: the message is the reason
 * alone; the plan loader adds the feature and op.
 */
export class OpPlanError extends Error {
  override name = 'OpPlanError';
}

/**
 * Thrown by a kernel at run time for bad data (invalid hex, boxCox of x <= 0). `row` is the row
 * within the column handed to the kernel; the executor turns it into a file row and adds the
 * feature, op, file and row group.
 */
export class OpDataError extends Error {
  override name = 'OpDataError';
  constructor(
    message: string,
    readonly row: number,
  ) {
    super(message);
  }
}

/** What the executor hands to every kernel beside its input and parameters. */
export interface OpContext {
  /** Output columns of features already computed in this chunk, by feature name (for `cross`). */
  readonly features: ReadonlyMap<string, Column>;
  /** Static types of the features computed before this one, by name (for `cross` type checks). */
  readonly featureTypes: ReadonlyMap<string, ColumnType>;
  /** Fitted state for a stateful op (vocab), or undefined when nothing was fitted. */
  readonly state?: unknown;
  /** Name of the input column, for error messages. */
  readonly column: string;
}

/** Definition of one operator: metadata, parameter validation, type rule, and reference kernel. */
export interface OpDef<P = unknown> {
  readonly name: string;
  /** What it accepts, for docs and error messages (e.g. "integer scalar or list"). */
  readonly input: string;
  readonly stateful: boolean;
  /** Checks raw JSON params; returns the normalized params or throws OpPlanError(reason). */
  validate(params: Record<string, unknown>): P;
  /** The output type for an input type, or throws OpPlanError(reason). */
  outputType(input: ColumnType, params: P, ctx: Pick<OpContext, 'featureTypes'>): ColumnType;
  /** The reference kernel: a pure function of its inputs (never mutates `input`). */
  apply(input: Column, params: P, ctx: OpContext): Column;
}

/** Stateful ops add a fit pass that folds chunks into an accumulator and finishes into state. */
export interface StatefulOpDef<P, Acc, S> extends OpDef<P> {
  readonly stateful: true;
  createAccumulator(params: P): Acc;
  /** Observes one chunk of the op's input (the value of the chain just before this op). */
  observe(acc: Acc, input: Column, params: P): void;
  finish(acc: Acc, params: P): S;
  /** JSON form of the state for `sluice fit --out`, and back. */
  stateToJSON(state: S): unknown;
  stateFromJSON(json: unknown): S;
}
