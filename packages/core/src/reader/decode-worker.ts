/**
 * The Parquet decode worker (a DecoderPool's thread; messages in decode-protocol.ts).
 * parquet-wasm panics (`RuntimeError: unreachable`) on many damaged files and leaves its wasm
 * instance unusable, so decoding runs here: the footer and every page parquet-wasm is given are
 * checked in Sluice's code first (parquet/check.ts), a panic that still happens is reported in
 * Sluice's words (`failure`), and the pool replaces this thread.
 *
 * A read goes to the direct decoder (parquet/) first, which also computes derived columns once
 * per dictionary entry (dict-ops.ts) and may lay the rows out as batch arrays; what it does not
 * read goes to parquet-wasm.
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { readOffsetIndex } from 'hyparquet/src/indexes.js';
import type { FileMetaData } from 'hyparquet/src/types.js';
import type * as PW from 'parquet-wasm';
import { chainFeature, runOps, type Column, type ColumnType, type KernelOverrides, type OpChainFeature, type PlanState } from '@sluice/ops';
import { chunkSources, columnBuffers, packMany, packRows, placeChunkIds, placeKeyIds, type Pack, type PackSource, type SlotMemory } from '../batch/index.js';
import { permutation } from '../util/rng.js';
import { isUrl } from '../util/url.js';
import type {
  DecodeReply,
  DecodeRequest,
  DerivedRequest,
  ErrorReply,
  OpenedFile,
  PackCuts,
  PackShape,
  ReadInline,
  ReadShared,
  WorkerPack,
} from './decode-protocol.js';
import { readPackFields } from './decode-protocol.js';
import {
  decodeDerived,
  decodeDerivedIndexed,
  decodeListDerivedIndexed,
  gatherIndexed,
  gatherIndexedList,
  releaseIndexed,
  type IndexedColumn,
  isListColumn,
  type IndexedList,
  type ListDerived,
} from './dict-ops.js';
import {
  checkChunks,
  decodeFlatRowGroup,
  FileRefusal,
  footerColumns,
  pageChecks,
  readFooter,
  Refusal,
  repairedFooter,
  rowGroupRows,
  type ReadAt,
} from './parquet/index.js';
import { pageZstd } from './zstd.js';
import type { Zstd } from './parquet/index.js';
import type { S3Access } from './s3/access.js';
import { S3Error } from './s3/errors.js';
import { isS3Url } from './s3/url.js';

if (parentPort === null) throw new Error('the decode worker runs in a worker thread (DecoderPool)');
const port = parentPort;

/** Posts a reply, transferring the buffers in `transfer`. */
const reply = (m: DecodeReply, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);

/** Files parquet-wasm has open, by source, with the file's statKey when opened. */
const files = new Map<string, { readonly key: string; readonly file: PW.ParquetFile }>();

/**
 * parquet-wasm, loaded on first use: compiling its 5 MB of WebAssembly costs a decoder ~0.1 s of
 * CPU as it starts, and a decoder whose reads the direct decoder serves never needs it.
 */
let parquetWasm: Promise<typeof PW> | null = null;
const loadParquetWasm = (): Promise<typeof PW> => (parquetWasm ??= import('parquet-wasm'));
/** Footers parsed with hyparquet, by source, with the file's statKey; the last 32. */
const footers = new Map<string, { readonly key: string; readonly md: FileMetaData }>();
/** Read specs by id (SpecRequest); the last 8. */
const specs = new Map<number, ReadShared>();
// Pages decompress into reused memory (zstd.ts). Loaded without a top-level await: a worker
// ended while its module still awaits at top level crashes V8 ("Check failed: (location_) !=
// nullptr" in ExecuteAsyncModule), which a CLI that fails fast (a missing file) did as it exited
// with its decoders still starting. Tasks wait for it (`zstdReady`).
let loaded: Zstd | null = null;
const zstdReady = pageZstd().then((z) => {
  loaded = z;
});
const zstd: Zstd = (src, size) => loaded!(src, size);

/** What identifies a file's current contents for the caches here: size, modification time, inode. */
const statKey = (st: fs.Stats): string => `${st.size}\0${st.mtimeMs}\0${st.ino}`;

/**
 * A positional reader over an open file descriptor. With `scratch`, every read lands in one
 * grow-only buffer and the result is a view that the next read overwrites (the direct decoder's
 * ReadAt contract): column chunks are read once each and decoded before the next read, so the read
 * buffers are not garbage for this thread's GC.
 */
let readScratch = new Uint8Array(0);
const reader = (fd: number, scratch = false): ReadAt => readBytesAt.bind(null, fd, scratch);
function readBytesAt(fd: number, scratch: boolean, offset: number, length: number): Uint8Array {
  if (scratch && readScratch.length < length) readScratch = new Uint8Array(Math.max(length, 2 * readScratch.length));
  const buf = scratch ? readScratch.subarray(0, length) : new Uint8Array(length);
  let got = 0;
  while (got < length) {
    const n = fs.readSync(fd, buf, got, length - got, offset + got);
    if (n === 0) throw new Error(`unexpected end of file at byte ${offset + got}`);
    got += n;
  }
  return buf;
}

/** Kernel modules by URL (a read's `kernels`): their FAST_OPS map, or null where one did not load. */
const kernelModules = new Map<string, KernelOverrides | null>();

/**
 * The kernels a backend gave the reader (core's BackendRegistration.readerKernels): op name ->
 * kernel returning a column, or undefined to leave the call to core's reference kernel. A module
 * that does not load leaves the reference kernels, with a warning; the results are the same.
 */
async function kernelsFrom(url: string): Promise<KernelOverrides | null> {
  let k = kernelModules.get(url);
  if (k === undefined) {
    try {
      k = ((await import(url)) as { FAST_OPS?: KernelOverrides }).FAST_OPS ?? null;
      if (typeof k?.get !== 'function') throw new Error('it exports no FAST_OPS map');
    } catch (e) {
      process.emitWarning(
        `sluice decoder: the reader kernels ${url} did not load (${e instanceof Error && e.message ? e.message : String(e)}); using core's reference kernels`,
      );
      k = null;
    }
    kernelModules.set(url, k);
  }
  return k;
}

/**
 * The file's footer parsed with hyparquet. It is kept while the file's size, modification time and
 * inode stay the same: parsing a large footer at the start of every pipeline's first read adds up.
 */
function footerOf(fd: number, source: string): FileMetaData {
  const st = fs.fstatSync(fd);
  const key = statKey(st);
  let footer = footers.get(source);
  if (footer === undefined || footer.key !== key) {
    // Checked before anything else reads the file (parquet/check.ts): magic, length, encryption,
    // where the column chunks lie.
    footer = { key, md: readFooter(st.size, reader(fd)) };
    footers.delete(source);
    footers.set(source, footer);
    if (footers.size > 32) footers.delete(footers.keys().next().value!);
  }
  return footer.md;
}

/**
 * The rows after the first where a page of every column chunk of a row group starts, from the
 * chunks' offset indexes (one read: writers put them together). [] when a chunk has no offset
 * index or they do not parse (the row group is then read whole).
 */
function pageStarts(source: string, rowGroup: number): number[] {
  if (isUrl(source)) return [];
  const fd = fs.openSync(source, 'r');
  try {
    const rg = footerOf(fd, source).row_groups[rowGroup];
    if (rg === undefined || rg.columns.some((c) => c.offset_index_offset === undefined || c.offset_index_length === undefined)) return [];
    const from = Math.min(...rg.columns.map((c) => Number(c.offset_index_offset)));
    const to = Math.max(...rg.columns.map((c) => Number(c.offset_index_offset) + c.offset_index_length!));
    // Offset indexes are a few bytes per page; a row group whose indexes are scattered is not split.
    if (to - from > 16 << 20) return [];
    const bytes = reader(fd)(from, to - from);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let common: Set<number> | null = null;
    for (const c of rg.columns) {
      const starts = readOffsetIndex({ view, offset: Number(c.offset_index_offset) - from }).page_locations.map((l) => Number(l.first_row_index));
      const seen = common as Set<number> | null;
      common = seen === null ? new Set(starts) : new Set(starts.filter((r) => seen.has(r)));
    }
    const rows = Number(rg.num_rows);
    return [...(common ?? [])].filter((r) => r > 0 && r < rows).sort((a, b) => a - b);
  } catch {
    return [];
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A derived column's op chain made runnable once per read spec: `all` its ops (a scalar input),
 * `perValue` all but firstX (a list input's elements' dictionary), and `keep`, the elements a list
 * keeps (its firstX ops' smallest x; Infinity for none).
 */
interface DerivedRun {
  readonly all: OpChainFeature;
  readonly perValue: OpChainFeature;
  readonly keep: number;
}

/** DerivedRuns by derived column name, per `derived` list (a spec's list is the same object for all its reads). */
const derivedRuns = new WeakMap<readonly DerivedRequest[], Map<string, DerivedRun>>();

function runsOf(derived: readonly DerivedRequest[]): Map<string, DerivedRun> {
  let runs = derivedRuns.get(derived);
  if (runs === undefined) {
    runs = new Map();
    for (const d of derived) {
      const all = chainFeature(d.name, d.input, d.ops);
      const perValue = { ...all, ops: all.ops.filter((o) => o.op !== 'firstX') };
      const keep = Math.min(Infinity, ...all.ops.filter((o) => o.op === 'firstX').map((o) => (o.params as { x: number }).x));
      runs.set(d.name, { all, perValue, keep });
    }
    derivedRuns.set(derived, runs);
  }
  return runs;
}

/** What the direct decoder read: columns, or packs when it could lay every row out; `rest` is left to parquet-wasm. */
type Direct =
  | { readonly columns: Array<[string, Column]>; readonly rest: string[]; readonly packs?: undefined }
  | { readonly packs: WorkerPack[]; readonly rest: string[] };

/**
 * Decodes with the direct decoder, or returns null when it does not apply or fails (parquet-wasm
 * then decides). `fast`: kernels for derived columns' ops (kernelsFrom), or null.
 */
function readDirect(msg: ReadInline, fast: KernelOverrides | null, remote?: { md: FileMetaData; readAt: ReadAt }): Direct | null {
  if (!msg.types || (remote === undefined && isUrl(msg.source)) || process.env.SLUICE_DIRECT_DECODE === '0') return null;
  // The descriptor lives for this call only: a worker thread's open files would outlive it.
  let fd: number | undefined;
  try {
    if (remote === undefined) fd = fs.openSync(msg.source, 'r');
    const readAt = remote?.readAt ?? reader(fd!, true);
    const md = remote?.md ?? footerOf(fd!, msg.source);
    const range = msg.range;
    const types = new Map(msg.types);
    const derived = msg.derived ?? [];
    const runs = runsOf(derived);
    // Scalar derived columns stay indexed (ops' results per dictionary entry + row indices) until
    // they are either packed straight into batch arrays or gathered into columns. List derived
    // columns (the per-value ops on the elements' dictionary, firstX as a cut of each list,
    // plan/pushdown.ts) are left indexed too: packed straight from the indices, or cut and
    // gathered into list columns. Plain loops and bound module-level functions, not closures
    // made per read: V8 compiled those again for every read (see the note above packRows, batch/).
    const scalar: DerivedRequest[] = [];
    const lists: DerivedRequest[] = [];
    for (const d of derived) (types.get(d.input)?.kind === 'list' ? lists : scalar).push(d);
    // Without a pack to lay out, scalar derived columns are gathered as they are computed (decodeDerived).
    const gathered =
      scalar.length > 0 && !msg.pack ? decodeDerived(md, msg.rowGroup, scalar, types, readAt, zstd, applyNamed.bind(null, runs, fast), range) : NO_COLUMNS;
    // A shuffled window that is this row group: the rows in the order its packs take them, which
    // the indexed columns' row indices are put in as each input is decoded.
    if (range !== undefined && msg.pack?.permute !== undefined) throw new Error('a shuffled window is read by whole row groups only');
    const order = msg.pack?.permute !== undefined ? windowOrder(msg.pack.permute, msg.pack.cuts) : undefined;
    const indexed =
      scalar.length > 0 && msg.pack
        ? decodeDerivedIndexed(md, msg.rowGroup, scalar, types, readAt, zstd, applyNamed.bind(null, runs, fast), range, order)
        : new Map<string, IndexedColumn>();
    if (range !== undefined && lists.length > 0) throw new Error('list columns are read by whole row groups only');
    const listed =
      lists.length > 0
        ? decodeListDerivedIndexed(md, msg.rowGroup, lists, types, readAt, zstd, applyNamedPerValue.bind(null, runs, fast), keptOf.bind(null, runs))
        : new Map<string, ListDerived>();
    // Raw columns: the ones asked for, and the inputs of derived columns not computed above.
    const raw = new Set(msg.columns);
    for (const d of derived) if (!gathered.has(d.name) && !indexed.has(d.name) && !listed.has(d.name)) raw.add(d.input);
    const { columns, rest } = decodeFlatRowGroup(md, msg.rowGroup, [...raw], types, readAt, zstd, range);
    const packs = msg.pack && rest.length === 0 ? packChunks(msg.pack, columns, indexed, listed, order) : null;
    const out: Direct =
      packs !== null
        ? { packs, rest }
        : {
            columns: [
              ...columns,
              ...gathered,
              ...[...indexed].map(([name, d]): [string, Column] => [name, gatherIndexed(d)]),
              ...[...listed].map(([name, l]): [string, Column] => [name, gatherIndexedList(l)]),
            ],
            rest,
          };
    // The packs and gathered columns are new arrays: the row indices can be reused.
    releaseIndexed(indexed.values());
    return out;
  } catch (e) {
    // Damaged data is reported with its column and page; a shape this decoder does not know goes
    // to parquet-wasm, which either reads it or fails in a way the main thread reports.
    if (e instanceof Refusal || e instanceof FileRefusal) throw e;
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const NO_COLUMNS: ReadonlyMap<string, Column> = new Map();

/** Empty context for the derived columns' ops: per-value and stateless, they read no other feature and no state. */
const NO_FEATURES: ReadonlyMap<string, Column> = new Map();
const NO_TYPES: ReadonlyMap<string, ColumnType> = new Map();
const NO_STATE: PlanState = new Map();

/**
 * Derived column `name`'s op chain from op `from` on `col`, with `fast` kernels where they take the call, else
 * core's reference kernels (errors propagate: the caller falls back).
 */
function applyNamed(runs: ReadonlyMap<string, DerivedRun>, fast: KernelOverrides | null, name: string, col: Column, from: number): Column {
  const f = runs.get(name)!.all;
  return runOps(f, col, from, f.ops.length, NO_FEATURES, NO_TYPES, NO_STATE, undefined, fast ?? undefined);
}

/** The per-value ops of list column `name`'s chain (all but firstX) on its elements' dictionary `col`. */
function applyNamedPerValue(runs: ReadonlyMap<string, DerivedRun>, fast: KernelOverrides | null, name: string, col: Column, from: number): Column {
  const f = runs.get(name)!.perValue;
  return runOps(f, col, from, f.ops.length, NO_FEATURES, NO_TYPES, NO_STATE, undefined, fast ?? undefined);
}

/** The elements a list column `name` keeps (DerivedRun.keep). */
function keptOf(runs: ReadonlyMap<string, DerivedRun>, name: string): number {
  return runs.get(name)!.keep;
}

/**
 * Lays the row group out as batch arrays, one pack per chunk cut, or returns null when a feature's
 * column or the label is missing, or the label has a null (the main thread then assembles the
 * batch and reports the null with its row).
 */
function packChunks(
  pack: PackShape & PackCuts,
  columns: ReadonlyMap<string, Column>,
  indexed: ReadonlyMap<string, IndexedColumn>,
  listed: ReadonlyMap<string, ListDerived>,
  /** A shuffled window's rows in its packs' order (`windowOrder`), which `indexed`'s row indices are in already. */
  order: Int32Array | undefined,
): WorkerPack[] | null {
  const byName = columns;
  const outputs = new Map<string, Column>();
  const byFeature = new Map<string, IndexedColumn>();
  const listsByFeature = new Map<string, IndexedList>();
  const sparse = new Set(pack.layout.sparseKeys);
  for (const [feature, column] of pack.outputs) {
    const ix = indexed.get(column);
    if (ix !== undefined) {
      byFeature.set(feature, ix);
      continue;
    }
    const l = listed.get(column);
    // A sparse key's ids go from the indices into the pack; a dense feature gets the list column,
    // as does a list computed as its column.
    if (l !== undefined) {
      if (sparse.has(feature) && !isListColumn(l)) listsByFeature.set(feature, l);
      else outputs.set(feature, gatherIndexedList(l));
      continue;
    }
    const c = byName.get(column);
    if (c === undefined) return null;
    outputs.set(feature, c);
  }
  let label: Column | null = null;
  if (pack.label !== null) {
    const l = byName.get(pack.label);
    if (l === undefined || (l.valid !== null && l.valid.includes(0))) return null;
    label = l;
  }
  const chunk: PackSource = {
    outputs,
    label,
    indexed: byFeature,
    indexedLists: listsByFeature,
    locate: () => {
      throw new Error('no row to locate');
    },
  };
  // A shuffled window's chunks: their rows, in the permutation's order (stream/source.ts), laid
  // out together (`packMany`: key by key across the chunks, as every chunk reads each key's
  // dictionary at random). Pack i goes in lent slot i when there is one (shared memory the main
  // thread recycles).
  if (order !== undefined) {
    const permuted = chunkSources(chunk, order, pack.cuts);
    const laid = packMany(
      pack.layout,
      permuted.map((c, i) => [{ chunk: c, from: 0, to: pack.cuts[i + 1]! - pack.cuts[i]! }]),
      permuted.map((_, i) => pack.slots?.[i]?.[1]),
    );
    return laid.map((p, i) => workerPack(p, pack.slots?.[i]));
  }
  // In row order each chunk reads the dictionaries about in order: pack by pack, as it was
  // (key by key measured no faster there).
  const packs: WorkerPack[] = [];
  for (let i = 0; i + 1 < pack.cuts.length; i++) {
    const slot = pack.slots?.[i];
    // A part of a shuffled window (one pack from row 0) writes its dense rows to their places.
    const place = pack.cuts.length === 2 && pack.cuts[0] === 0 ? pack.densePlace : undefined;
    packs.push(workerPack(packRows(pack.layout, [{ chunk, from: pack.cuts[i]!, to: pack.cuts[i + 1]! }], slot?.[1], pack.shared === true, place), slot));
  }
  return packs;
}

/** The rows of a shuffled window that is one row group, in the order its packs (cut at `cuts`) take them. */
function windowOrder(permute: NonNullable<PackCuts['permute']>, cuts: readonly number[]): Int32Array {
  return permutation(permute.rows, ...permute.keys).subarray(cuts[0]!, cuts[cuts.length - 1]!);
}

/** A pack as the reply carries it: the lent slot's number where its arrays are in that slot, else -1. */
function workerPack(p: Pack & { readonly inSlot: boolean }, slot: readonly [number, SlotMemory] | undefined): WorkerPack {
  const { inSlot, ...pack } = p;
  return { ...pack, slot: inSlot ? slot![0] : -1 };
}

/** The packs' own buffers to transfer (a lent slot is shared memory: it is not transferred). */
function packBuffers(packs: readonly WorkerPack[]): ArrayBuffer[] {
  const set = new Set<ArrayBuffer>();
  for (const p of packs)
    for (const a of [p.dense, p.lengths, p.offsets, p.values, p.labels]) if (a && !(a.buffer instanceof SharedArrayBuffer)) set.add(a.buffer as ArrayBuffer);
  return [...set];
}

/** The buffers of columns to transfer. */
function buffersOf(columns: ReadonlyArray<readonly [string, Column]>): ArrayBuffer[] {
  const set = new Set<ArrayBuffer>();
  for (const [, c] of columns) for (const b of columnBuffers(c)) set.add(b as ArrayBuffer);
  return [...set];
}

/** A local file as it is now (size, modification time, inode), or '' for a URL. */
const fileKey = (source: string): string => (isUrl(source) ? '' : statKey(fs.statSync(source)));

/**
 * An s3:// object's footer and its row group's projected column chunks, fetched (s3/object.ts),
 * for the direct decoder; undefined when the direct decoder will not run.
 */
async function remoteRowGroup(msg: ReadInline): Promise<{ md: FileMetaData; readAt: ReadAt } | undefined> {
  if (!isS3Url(msg.source) || !msg.types || process.env.SLUICE_DIRECT_DECODE === '0') return undefined;
  const { openS3Object, fetchRowGroup } = await s3Object();
  const o = await openS3Object(msg.source, s3Of(msg), false);
  return { md: o.md, readAt: await fetchRowGroup(o, msg.rowGroup, new Set([...msg.columns, ...(msg.derived ?? []).map((d) => d.input)])) };
}

/**
 * The S3 object reader (and its signing library), loaded on the first s3:// source: a worker that
 * reads local files starts without it.
 */
let s3Objects: Promise<typeof import('./s3/object.js')> | null = null;
const s3Object = (): Promise<typeof import('./s3/object.js')> => (s3Objects ??= import('./s3/object.js'));

const s3Of = (msg: { readonly source: string; readonly s3?: S3Access }): S3Access => {
  if (msg.s3 === undefined) throw new Error(`no S3 credentials were sent with ${msg.source}`);
  return msg.s3;
};

async function open(source: string, s3?: S3Access, fresh = false): Promise<PW.ParquetFile> {
  // An s3:// object is keyed by its ETag: `fresh` (an open request) asks the store for it again.
  const key = isS3Url(source)
    ? (await (await s3Object()).openS3Object(source, s3Of({ source, ...(s3 !== undefined ? { s3 } : {}) }), fresh)).etag
    : fileKey(source);
  let e = files.get(source);
  if (e !== undefined && e.key !== key) {
    // Rewritten since it was opened here: open it afresh.
    files.delete(source);
    e.file.free();
    e = undefined;
  }
  if (e === undefined) {
    let blob: Blob | null = null;
    if (isS3Url(source)) {
      // Remote: the footer comes through signed range reads; parquet-wasm checks it as it parses.
      const { S3Blob, openS3Object } = await s3Object();
      blob = new S3Blob(await openS3Object(source, s3!, false));
    } else if (!isUrl(source)) {
      // The footer is checked in Sluice's code before parquet-wasm parses it, and parquet-wasm
      // gets a repaired one where it would misread the file's (parquet/check.ts).
      const fd = fs.openSync(source, 'r');
      try {
        const md = footerOf(fd, source);
        blob = await fs.openAsBlob(source);
        const fixed = repairedFooter(md);
        if (fixed !== undefined) {
          const tail = new Uint8Array(8);
          new DataView(tail.buffer).setUint32(0, fixed.length, true);
          tail.set([0x50, 0x41, 0x52, 0x31], 4);
          blob = new Blob([blob.slice(0, blob.size - 8 - md.metadata_length), fixed as Uint8Array<ArrayBuffer>, tail]);
        }
      } finally {
        fs.closeSync(fd);
      }
    }
    const pw = await loadParquetWasm();
    let file: PW.ParquetFile;
    try {
      file = blob === null ? await pw.ParquetFile.fromUrl(source) : await pw.ParquetFile.fromFile(blob);
    } catch (err) {
      throw new WasmFailure(err, null);
    }
    e = { key, file };
    files.set(source, e);
  }
  return e.file;
}

/** parquet-wasm failed on a file Sluice's checks passed: `columns` it was decoding, or null for the footer. */
class WasmFailure extends Error {
  constructor(
    readonly original: unknown,
    readonly columns: readonly string[] | null,
  ) {
    super('parquet-wasm failed');
  }
}

const wordsOf = (e: unknown): string => (e instanceof Error && e.message ? e.message : String(e));

/**
 * An error as the main thread gets it: Sluice's own sentence, the column where known, and a
 * library's words only as `detail`. A parquet-wasm trap (a panic: "unreachable") leaves its wasm
 * instance unusable, so the reply says `broken` and the pool ends this worker.
 */
function failure(err: unknown): Omit<ErrorReply, 'kind' | 'id'> {
  if (err instanceof Refusal) return { error: err.message, column: err.column };
  if (err instanceof FileRefusal) return { error: `not a readable Parquet file: ${err.message}` };
  if (!(err instanceof WasmFailure)) return { error: wordsOf(err) };
  const words = wordsOf(err.original);
  const broken = err.original instanceof WebAssembly.RuntimeError || /unreachable|panicked|RuntimeError/i.test(words);
  const what =
    !broken && /not (yet )?(implemented|supported)|unsupported/i.test(words)
      ? "it uses a Parquet feature Sluice's readers do not read"
      : "its bytes do not add up (damaged or truncated in a way Sluice's own checks did not catch)";
  const cols = err.columns;
  if (cols === null) return { error: `not a readable Parquet file: ${footerProblem(words, broken)}`, detail: words, broken };
  if (cols.length === 1) return { error: `cannot decode it: ${what}`, column: cols[0]!, detail: words, broken };
  return { error: `cannot decode one of the columns ${cols.join(', ')}: ${what}`, detail: words, broken };
}

/** What parquet-wasm found wrong with a footer Sluice's checks passed, in a sentence of Sluice's (`words` are parquet-wasm's). */
function footerProblem(words: string, broken: boolean): string {
  if (/ARROW:schema/.test(words)) return 'the Arrow schema its writer embedded in the footer (key ARROW:schema) is damaged';
  if (/utf-?8/i.test(words)) return 'a string in its footer is not valid UTF-8 (damaged)';
  const missing = /Required field (\w+) is missing/.exec(words);
  if (missing !== null) return `its footer lacks the required field ${missing[1]} (damaged, or written by a broken writer)`;
  if (!broken && /not (yet )?(implemented|supported)|unsupported/i.test(words)) return "its schema uses a Parquet feature Sluice's readers do not read";
  return "its footer does not add up (damaged in a way Sluice's own checks did not catch)";
}

/**
 * A local file described from Sluice's own footer parse, where its columns' types are certain
 * from the footer (parquet/column-types.ts), else null: parquet-wasm then reads the schema.
 */
function describeFooter(source: string): OpenedFile | null {
  if (isUrl(source) || process.env.SLUICE_DIRECT_DECODE === '0') return null;
  const fd = fs.openSync(source, 'r');
  let md: FileMetaData;
  try {
    md = footerOf(fd, source);
  } finally {
    fs.closeSync(fd);
  }
  const footer = footerColumns(md);
  if (footer === null) return null;
  return { rowGroups: rowGroupRows(md), numRows: Number(md.num_rows), createdBy: md.created_by ?? null, footer };
}

function describe(f: PW.ParquetFile): OpenedFile {
  const md = f.metadata();
  const rowGroups: number[] = [];
  for (let i = 0; i < md.numRowGroups(); i++) rowGroups.push(md.rowGroup(i).numRows());
  // The schema travels as an empty Arrow IPC stream; the main thread parses it with apache-arrow.
  return { rowGroups, numRows: md.fileMetadata().numRows(), createdBy: md.fileMetadata().createdBy() ?? null, schemaIpc: f.schema().intoIPCStream() };
}

/** A read as it is decoded: one that names a spec gets the spec's fields, and its cuts and slots go with the spec's pack. */
function resolveRead(msg: Extract<DecodeRequest, { kind: 'read' }>): ReadInline | string {
  if (msg.spec === undefined) return msg;
  const body = specs.get(msg.spec);
  if (body === undefined) return `read spec ${msg.spec} was never sent to this decoder`;
  const { kind, id, source, rowGroup, range, cuts, slots, permute, shared: inShared, densePlace, s3 } = msg;
  const { pack, ...shared } = body;
  return {
    kind,
    id,
    source,
    rowGroup,
    ...(range !== undefined ? { range } : {}),
    ...(s3 !== undefined ? { s3 } : {}),
    ...shared,
    ...(pack !== undefined ? { pack: { ...pack, ...readPackFields({ cuts: cuts!, permute, shared: inShared, densePlace }, slots) } } : {}),
  };
}

async function read(msg: ReadInline): Promise<void> {
  const { id } = msg;
  pageChecks.crc = msg.verifyCrc !== false;
  const direct = readDirect(msg, msg.kernels === undefined ? null : await kernelsFrom(msg.kernels), await remoteRowGroup(msg));
  // What the direct decoder left (all of it when it does not apply) goes to parquet-wasm,
  // which returns raw columns: the derived columns' inputs as well.
  const columns = direct !== null ? direct.rest : [...new Set([...msg.columns, ...(msg.derived ?? []).map((d) => d.input)])];
  if (direct?.packs !== undefined) {
    reply({ kind: 'packed', id, packs: direct.packs }, packBuffers(direct.packs));
    return;
  }
  if (columns.length === 0) {
    reply({ kind: 'done', id, columns: direct!.columns }, buffersOf(direct!.columns));
    return;
  }
  const f = await open(msg.source, msg.s3);
  if (!isUrl(msg.source)) {
    // Every page parquet-wasm is about to decode, checked in Sluice's code first (parquet/check.ts).
    const fd = fs.openSync(msg.source, 'r');
    try {
      checkChunks(footerOf(fd, msg.source), msg.rowGroup, columns, reader(fd, true), zstd);
    } finally {
      fs.closeSync(fd);
    }
  }
  try {
    const stream = await f.stream({ batchSize: msg.batchSize, rowGroups: [msg.rowGroup], columns });
    const batches = stream.getReader();
    for (;;) {
      const { done, value } = await batches.read();
      if (done) break;
      const ipc = (value as PW.RecordBatch).intoIPCStream();
      reply({ kind: 'batch', id, ipc }, [ipc.buffer as ArrayBuffer]);
    }
  } catch (err) {
    throw new WasmFailure(err, columns);
  }
  if (direct !== null) reply({ kind: 'done', id, columns: direct.columns }, buffersOf(direct.columns));
  else reply({ kind: 'done', id });
}

port.on('message', async (msg: DecodeRequest) => {
  if (msg.kind === 'spec') {
    const { id: _, kind: __, spec, ...body } = msg;
    specs.set(spec, body);
    if (specs.size > 8) specs.delete(specs.keys().next().value!);
    return;
  }
  if (msg.kind === 'reset') {
    // Parked for another pool: forget every file parquet-wasm opened (it may change before this
    // worker reads it again). Parsed footers stay: each is checked against the file when used.
    for (const e of files.values()) e.file.free();
    files.clear();
    specs.clear();
    if (s3Objects !== null) (await s3Objects).forgetS3Objects();
    return;
  }
  const { id } = msg;
  try {
    if (loaded === null) await zstdReady;
    if (msg.kind === 'place') {
      const values = placeChunkIds(msg.plan, msg.chunks);
      // Fresh arrays are moved; those in the window's slots (shared memory) are shared, not moved.
      reply(
        { kind: 'placed', id, values },
        values.filter((v) => !(v.buffer instanceof SharedArrayBuffer)).map((v) => v.buffer as ArrayBuffer),
      );
    } else if (msg.kind === 'placeKeys') {
      placeKeyIds(msg.task);
      reply({ kind: 'placedKeys', id });
    } else if (msg.kind === 'open') {
      const meta = (msg.wasm === true ? null : describeFooter(msg.source)) ?? describe(await open(msg.source, msg.s3, true));
      reply({ kind: 'opened', id, meta }, meta.schemaIpc !== undefined ? [meta.schemaIpc.buffer as ArrayBuffer] : []);
    } else if (msg.kind === 'pages') {
      reply({ kind: 'pages', id, rows: pageStarts(msg.source, msg.rowGroup) });
    } else {
      const r = resolveRead(msg);
      if (typeof r === 'string') reply({ kind: 'error', id, error: r });
      else await read(r);
    }
  } catch (err) {
    // An S3Error's detail leaves out the object's name: the pool puts it in front with the row group.
    reply({ kind: 'error', id, ...(err instanceof S3Error ? { error: err.detail } : failure(err)) });
  }
});

// Every import above has loaded: a failure from here on is about a task's data, not the install.
void zstdReady.then(() => reply({ kind: 'started' }));
