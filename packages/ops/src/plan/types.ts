/** The JSON plan format of OPS.md, as users write it. */

/**
 * One op step: the op's name and its parameters (OPS.md lists each op's).
 *
 * @example
 * const step: OpSpec = { op: 'log', offset: 1 };
 */
export interface OpSpec {
  op: string;
  [param: string]: unknown;
}

/**
 * One output feature: the input column it reads, dense or sparse, and the ops applied in order.
 *
 * @example
 * const f: FeatureSpec = { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 500000 }] };
 */
export interface FeatureSpec {
  /** Output name: a dense column name or a sparse key. */
  name: string;
  /** Input column in the Parquet file(s). */
  input: string;
  kind: 'dense' | 'sparse';
  ops?: OpSpec[];
}

/**
 * The backend that runs the ops, by registered name, with its own options.
 *
 * @example
 * const backend: BackendSpec = { name: 'cpu', workers: 4 };
 */
export interface BackendSpec {
  name: string;
  [option: string]: unknown;
}

/**
 * Seeded shuffling: row groups in a seeded order, rows mixed through a buffer of `bufferRows`.
 *
 * @example
 * const shuffle: ShuffleSpec = { seed: 42, bufferRows: 50_000 };
 */
export interface ShuffleSpec {
  seed: number;
  /** Rows held by the in-memory shuffle buffer (default 100000). 0 shuffles row-group order only. */
  bufferRows?: number;
}

/**
 * A preprocessing plan as users write it (JSON or an object): the features and how to batch them.
 *
 * @example
 * const plan: PlanSpec = {
 *   batchSize: 8192, label: 'label', shuffle: { seed: 1 },
 *   features: [{ name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'log', offset: 1 }] }],
 * };
 */
export interface PlanSpec {
  batchSize?: number;
  dropLast?: boolean;
  backend?: string | BackendSpec;
  /** Label column; omitted for unlabeled data. */
  label?: string;
  features: FeatureSpec[];
  /** Optional input paths / globs / URLs (can also be passed to `pipeline()` or the CLI). */
  input?: string | string[];
  shuffle?: ShuffleSpec | false;
  epochs?: number;
  shard?: { rank: number; worldSize: number };
  /** Batches buffered ahead of the consumer (default 4). */
  prefetch?: number;
  /** Verify page CRCs where the files have them (default true; docs/reliability.md gives the cost). */
  verifyCrc?: boolean;
}
