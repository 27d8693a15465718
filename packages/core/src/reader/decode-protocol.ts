/**
 * The messages between a `DecoderPool` (decoder-pool.ts, main thread) and its decode workers
 * (decode-worker.ts). A request with an `id` above 0 gets replies with that id: a read may send
 * `batch` replies before its last one, every other request one reply. Requests with id 0 (`spec`,
 * `reset`) get none.
 */
import type { Column, ColumnType, OpChain } from '@sluice/ops';
import type { BatchLayout, DensePlace, IdsPlan, KeysTask, Pack, SlotMemory } from '../batch/index.js';
import type { DerivedSpec } from './dict-ops.js';
import type { FooterColumns, RowRange } from './parquet/index.js';
import type { S3Access } from './s3/access.js';

/**
 * Opens a file: replied with `opened`. A local file whose columns are all plainly typed is read by
 * Sluice's footer parser alone (parquet/column-types.ts); others, and any with `wasm`, by parquet-wasm.
 */
export interface OpenRequest {
  readonly kind: 'open';
  readonly id: number;
  readonly source: string;
  /** Read the schema with parquet-wasm (the main thread found the footer's own types uncertain). */
  readonly wasm?: true;
  /** How to reach and sign for an `s3://` source (resolved once, in the main thread). */
  readonly s3?: S3Access;
}

/**
 * Where a read of part of a row group may start and end: replied with `pages`, from the file's
 * offset index.
 */
export interface PagesRequest {
  readonly kind: 'pages';
  readonly id: number;
  readonly source: string;
  readonly rowGroup: number;
}

/** A derived column: an op chain on an input column, which the worker runs per dictionary entry (dict-ops.ts). */
export interface DerivedRequest extends DerivedSpec {
  readonly ops: OpChain;
}

/** How the rows of a read are laid out as batch arrays, when the worker computes every feature. */
export interface PackShape {
  readonly layout: BatchLayout;
  /** Feature name -> the column (raw or derived) that is its output. */
  readonly outputs: ReadonlyArray<readonly [string, string]>;
  readonly label: string | null;
}

/** Where one read's packs go. */
export interface PackCuts {
  /** Pack i holds rows [cuts[i], cuts[i + 1]) of the read. */
  readonly cuts: readonly number[];
  /** Shared memory lent for the packs (PackArena): pack i goes in slots[i] when there is one and it fits. */
  readonly slots?: ReadonlyArray<readonly [number, SlotMemory]>;
  /**
   * A shuffled window that is this one row group: its permutation, `permutation(rows, ...keys)`
   * (util/rng.ts), which the worker computes itself. Pack i then holds the read's rows p[cuts[i]],
   * …, p[cuts[i + 1] - 1], in that order.
   */
  readonly permute?: { readonly rows: number; readonly keys: readonly number[] };
  /** The packs' arrays in fresh shared memory (a row group of a shuffled window of several, whose ids the decoders place later: `PlaceRequest`). */
  readonly shared?: boolean;
  /**
   * Where the rows' dense values go, straight to the window's chunks (with `shared`, a read of one
   * pack): the pack then comes back without them (`Pack.densePlaced`).
   */
  readonly densePlace?: DensePlace;
}

/** What one read asks of its packs beyond the pipeline's shape: its cuts, its permutation, its memory (`PackCuts`). */
export type PackRead = Pick<PackCuts, 'cuts' | 'permute' | 'shared' | 'densePlace'>;

/** A read's own pack fields as its message carries them: those it has, with the slots lent for it. */
export function readPackFields(pack: PackRead, slots: NonNullable<PackCuts['slots']> | undefined): PackCuts {
  const out: { -readonly [K in keyof PackCuts]: PackCuts[K] } = { cuts: pack.cuts };
  if (slots !== undefined) out.slots = slots;
  if (pack.permute !== undefined) out.permute = pack.permute;
  if (pack.shared === true) out.shared = true;
  if (pack.densePlace !== undefined) out.densePlace = pack.densePlace;
  return out;
}

/** What the reads of a pipeline have in common (sent once per worker as a `spec`). */
export interface ReadShared {
  readonly columns: readonly string[];
  /** Rows per record batch of parquet-wasm's output. */
  readonly batchSize: number;
  /**
   * The Sluice types of the columns read (and of derived columns' inputs). With them, for a local
   * file, the direct decoder (parquet/) reads the columns it can and computes the derived columns.
   */
  readonly types?: ReadonlyArray<readonly [string, ColumnType]>;
  readonly derived?: readonly DerivedRequest[];
  /** URL of a module whose `FAST_OPS` run the derived columns' ops (`BackendRegistration.readerKernels`). */
  readonly kernels?: string;
  readonly pack?: PackShape;
  /** Verify page CRCs where the file has them (default true; parquet/page.ts). */
  readonly verifyCrc?: boolean;
}

/** The row group a read decodes. */
interface ReadTarget {
  readonly kind: 'read';
  readonly id: number;
  readonly source: string;
  readonly rowGroup: number;
  /**
   * Only these rows, for the direct decoder's columns and packs (page boundaries, flat columns);
   * parquet-wasm's record batches always hold the whole row group.
   */
  readonly range?: RowRange;
  /** How to reach and sign for an `s3://` source. */
  readonly s3?: S3Access;
}

/** A read that carries all it needs. */
export interface ReadInline extends ReadShared, ReadTarget {
  readonly spec?: undefined;
  readonly pack?: PackShape & PackCuts;
}

/** A read that refers to a `spec` sent before; its cuts and slots go with the spec's pack. */
export interface ReadBySpec extends ReadTarget, Partial<PackCuts> {
  readonly spec: number;
}

/**
 * Decodes a row group: replied with a `batch` per record batch of the columns parquet-wasm reads,
 * then `done` with the columns the direct decoder read; or only `packed` when the direct decoder
 * read every feature's column and a label without nulls, and the read asked for packs.
 */
export type ReadRequest = ReadInline | ReadBySpec;

/** What later reads refer to by `spec` (a worker keeps the last few). */
export interface SpecRequest extends ReadShared {
  readonly kind: 'spec';
  readonly id: 0;
  readonly spec: number;
}

/**
 * Forget every file parquet-wasm opened and every read spec: sent when the pool parks the worker
 * for reuse by another pool. Parsed footers stay, checked against the file whenever they are used.
 */
export interface ResetRequest {
  readonly kind: 'reset';
  readonly id: 0;
}

/** Places a shuffled window's ids for some of its chunks (batch/window-ids.ts); the plan's arrays are shared memory. */
export interface PlaceRequest {
  readonly kind: 'place';
  readonly id: number;
  readonly plan: IdsPlan;
  readonly chunks: readonly number[];
}

/** Places some keys of a shuffled window whose reads came as columns (batch/window-ids.ts, `placeKeyIds`); the reads' arrays come transferred. */
export interface PlaceKeysRequest {
  readonly kind: 'placeKeys';
  readonly id: number;
  readonly task: KeysTask;
}

export type DecodeRequest = OpenRequest | PagesRequest | ReadRequest | SpecRequest | ResetRequest | PlaceRequest | PlaceKeysRequest;

/** Sent once, when the worker's imports have loaded: a failure after it is about a task's data, not the installation. */
export interface StartedReply {
  readonly kind: 'started';
}

/** A file's footer as parquet-wasm reads it. */
export interface OpenedFile {
  /** Rows per row group. */
  readonly rowGroups: number[];
  readonly numRows: number;
  readonly createdBy: string | null;
  /** The schema as parquet-wasm reads it, an empty Arrow IPC stream (transferred); the main thread parses it with apache-arrow. */
  readonly schemaIpc?: Uint8Array;
  /** Else the columns' types from the footer itself, and its writer's Arrow schema (parquet/column-types.ts). */
  readonly footer?: FooterColumns;
}

export interface OpenedReply {
  readonly kind: 'opened';
  readonly id: number;
  readonly meta: OpenedFile;
}

/**
 * The rows after the first where a page of every column of the row group starts: where a read's
 * `range` may start and end. [] without an offset index, or for a URL.
 */
export interface PagesReply {
  readonly kind: 'pages';
  readonly id: number;
  readonly rows: number[];
}

/** One record batch of the columns parquet-wasm read, as an Arrow IPC stream (transferred). */
export interface BatchReply {
  readonly kind: 'batch';
  readonly id: number;
  readonly ipc: Uint8Array;
}

/** The end of a read: the columns (and derived columns) the direct decoder read, if it applied (buffers transferred). */
export interface DoneReply {
  readonly kind: 'done';
  readonly id: number;
  readonly columns?: Array<[string, Column]>;
}

/** A pack as a worker sends it: `slot` is the id of the lent slot it lies in, or -1. */
export type WorkerPack = Omit<Pack, 'release'> & { readonly slot: number };

/** The end of a read laid out as batch arrays, one pack per cut (buffers outside lent slots transferred). */
export interface PackedReply {
  readonly kind: 'packed';
  readonly id: number;
  readonly packs: WorkerPack[];
}

/** The ids of a `PlaceRequest`'s chunks, in its order (transferred). */
export interface PlacedReply {
  readonly kind: 'placed';
  readonly id: number;
  readonly values: BigInt64Array[];
}

/** A `PlaceKeysRequest`'s ids are in place. */
export interface PlacedKeysReply {
  readonly kind: 'placedKeys';
  readonly id: number;
}

/** A request failed in a way the worker caught (a task that crashes the worker sends nothing). */
export interface ErrorReply {
  readonly kind: 'error';
  readonly id: number;
  /** What is wrong, in Sluice's words (never a library's). */
  readonly error: string;
  /** The column it concerns, when one does. */
  readonly column?: string;
  /** A library's own words about it, for --debug (the error's cause). */
  readonly detail?: string;
  /** parquet-wasm trapped: this worker's wasm instance is unusable, and the pool ends the worker. */
  readonly broken?: boolean;
}

export type DecodeReply = StartedReply | OpenedReply | PagesReply | BatchReply | DoneReply | PackedReply | PlacedReply | PlacedKeysReply | ErrorReply;
