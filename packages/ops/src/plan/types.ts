/** The JSON plan format of OPS.md, as users write it. */

/** One op step: `{ "op": "log", "offset": 1 }`. */
export interface OpSpec {
  op: string;
  [param: string]: unknown;
}

export interface FeatureSpec {
  /** Output name: a dense column name or a sparse key. */
  name: string;
  /** Input column in the Parquet file(s). */
  input: string;
  kind: 'dense' | 'sparse';
  ops?: OpSpec[];
}

export interface BackendSpec {
  name: string;
  [option: string]: unknown;
}

export interface ShuffleSpec {
  seed: number;
  /** Rows held by the in-memory shuffle buffer (default 100000). 0 shuffles row-group order only. */
  bufferRows?: number;
}

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
}
