// Parquet decode worker. parquet-wasm panics (`RuntimeError: unreachable`) on a corrupt data page
// and leaves its wasm instance unusable, so decoding runs here: a panic kills this thread only,
// and the main thread reports the file and row group and starts a fresh worker.
//
// Protocol (parentPort messages):
//   in  {id, kind: 'open', source}                                    -> {id, ok, meta}
//   in  {id, kind: 'pages', source, rowGroup}                         -> {id, meta: rows}
//       the rows after the first where a page of every column of the row group starts, from the
//       offset index ([] without one, or for a URL): a read may start and end there
//   in  {id, kind: 'read', source, rowGroup, columns, batchSize, types?, derived?, kernels?, range?}
//       -> {id, ipc} per record batch (transferred) of the columns parquet-wasm reads, then
//          {id, done, columns?: [[name, Column], ...]} with the columns (and derived columns) the
//          direct decoder (../dist/reader/parquet/) read, when `types` is given and the file is local;
//          `kernels`: the URL of a module whose FAST_OPS run the derived columns' ops (kernelsFrom);
//          `range` {first, rows, share?, reverse?}: the direct decoder's columns (and packs) hold only
//          those rows of the row group (page boundaries, flat columns); parquet-wasm's IPC always the
//          whole row group. `share`, a SharedArrayBuffer the parts of one row group hold in common,
//          carries the derived columns' results per dictionary entry between them
//          (../dist/io/dict-share.js); `reverse`: this part walks the derived columns last to first
//   in  ... with pack: {layout, outputs: [[feature, column], ...], label, cuts, slots?: [[id, SharedArrayBuffer], ...]}
//       -> {id, done, packs: [Pack & {slot}, ...]} (buffers transferred): rows [cuts[i], cuts[i+1]) laid out
//          as batch arrays (../dist/stream/batch.js packRows), when the direct decoder produced
//          every feature's column and a label without nulls; otherwise the reply above. Pack i is
//          laid out in slots[i] when one was lent and it fits (`slot` is its id, else -1)
//   in  {id: 0, kind: 'spec', spec, columns, batchSize, types?, derived?, pack?}: what the reads of
//       a pipeline share (no reply); a read may then say {id, kind: 'read', source, rowGroup, spec,
//       cuts?, slots?} instead of carrying it all (pack then gets those cuts and slots)
//   in  {id: 0, kind: 'reset'}: forget every file parquet-wasm opened and every read spec (no
//       reply); the pool sends it when it parks this worker for reuse by another pool. Parsed
//       footers stay, checked against the file (statKey) whenever they are used
//   out {started: true} once, when the imports have loaded
//   out {id, error} on a catchable failure.
import { parentPort } from 'node:worker_threads';
import fs from 'node:fs';
import * as pw from 'parquet-wasm';
import { parquetMetadata } from 'hyparquet';
import { readOffsetIndex } from 'hyparquet/src/indexes.js';
import { decodeDerivedIndexed, decodeListDerivedIndexed, gatherIndexed, gatherIndexedList, releaseIndexed } from '../dist/reader/dict-ops.js';
import { decodeFlatRowGroup } from '../dist/reader/parquet/index.js';
import { OPS } from '@sluice/ops';
import { packRows } from '../dist/batch/batch.js';
import { pageZstd } from '../dist/reader/zstd.js';
import { isUrl } from '../dist/util/url.js';

const files = new Map();
const footers = new Map();
/** Read specs by id (see 'spec' above); the last few only. */
const specs = new Map();
// Pages decompress into reused wasm memory (../dist/io/zstd.js).
const zstd = await pageZstd();

/** What identifies a file's current contents for the caches here: size, modification time, inode. */
const statKey = (st) => `${st.size}\0${st.mtimeMs}\0${st.ino}`;

/**
 * A positional reader over an open file descriptor. With `scratch`, every read lands in one
 * grow-only buffer and the result is a view that the next read overwrites (the direct decoder's
 * ReadAt contract): column chunks are read once each and decoded before the next read, so ~39 MB
 * per 1M RM1 rows of read buffers are not garbage for this thread's GC.
 */
let readScratch = new Uint8Array(0);
const reader = (fd, scratch = false) => readBytesAt.bind(null, fd, scratch);
function readBytesAt(fd, scratch, offset, length) {
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
const kernelModules = new Map();

/**
 * The kernels a backend gave the reader (core's BackendRegistration.readerKernels): op name ->
 * kernel returning a column, or undefined to leave the call to core's reference kernel. A module
 * that does not load leaves the reference kernels, with a warning; the results are the same.
 */
async function kernelsFrom(url) {
  let k = kernelModules.get(url);
  if (k === undefined) {
    try {
      k = (await import(url)).FAST_OPS;
      if (typeof k?.get !== 'function') throw new Error('it exports no FAST_OPS map');
    } catch (e) {
      process.emitWarning(`sluice decoder: the reader kernels ${url} did not load (${e && e.message ? e.message : e}); using core's reference kernels`);
      k = null;
    }
    kernelModules.set(url, k);
  }
  return k;
}

/**
 * The file's footer parsed with hyparquet. It is kept while the file's size, modification time and
 * inode stay the same (parsing RM1's 49 KB footer takes 4-7 ms, at the start of every pipeline's
 * first read).
 */
function footerOf(fd, source) {
  const st = fs.fstatSync(fd);
  const key = statKey(st);
  let footer = footers.get(source);
  if (footer === undefined || footer.key !== key) {
    // The footer is read into fresh memory: the parsed metadata is cached and may keep views of it.
    const fresh = reader(fd);
    const len = new DataView(fresh(st.size - 8, 8).buffer).getUint32(0, true);
    footer = { key, md: parquetMetadata(fresh(st.size - 8 - len, len + 8)) };
    footers.delete(source);
    footers.set(source, footer);
    if (footers.size > 32) footers.delete(footers.keys().next().value);
  }
  return footer.md;
}

/**
 * The rows after the first where a page of every column chunk of a row group starts, from the
 * chunks' offset indexes (one read: writers put them together). [] when a chunk has no offset
 * index or they do not parse (the row group is then read whole).
 */
function pageStarts(source, rowGroup) {
  if (isUrl(source)) return [];
  const fd = fs.openSync(source, 'r');
  try {
    const rg = footerOf(fd, source).row_groups[rowGroup];
    if (rg === undefined || rg.columns.some((c) => c.offset_index_offset === undefined || c.offset_index_length === undefined)) return [];
    const from = Math.min(...rg.columns.map((c) => Number(c.offset_index_offset)));
    const to = Math.max(...rg.columns.map((c) => Number(c.offset_index_offset) + c.offset_index_length));
    // Offset indexes are a few bytes per page; a row group whose indexes are scattered is not split.
    if (to - from > 16 << 20) return [];
    const bytes = reader(fd)(from, to - from);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let common = null;
    for (const c of rg.columns) {
      const starts = readOffsetIndex({ view, offset: Number(c.offset_index_offset) - from }).page_locations.map((l) => Number(l.first_row_index));
      common = common === null ? new Set(starts) : new Set(starts.filter((r) => common.has(r)));
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
 * Decodes with the direct decoder, or returns null when it does not apply or fails (parquet-wasm
 * then decides). `fast`: kernels for derived columns' ops (kernelsFrom), or null.
 */
function readDirect(msg, fast) {
  if (!msg.types || isUrl(msg.source) || process.env.SLUICE_DIRECT_DECODE === '0') return null;
  // The descriptor lives for this call only: a worker thread's open files would outlive it.
  let fd;
  try {
    fd = fs.openSync(msg.source, 'r');
    const readAt = reader(fd, true);
    const md = footerOf(fd, msg.source);
    const range = msg.range;
    const types = new Map(msg.types);
    const derived = msg.derived ?? [];
    const ops = new Map();
    // Scalar derived columns stay indexed (ops' results per dictionary entry + row indices) until
    // they are either packed straight into batch arrays or gathered into columns. List derived
    // columns (the per-value ops on the elements' dictionary, firstX as a cut of each list,
    // plan/pushdown.ts) are left indexed too: packed straight from the indices, or cut and
    // gathered into list columns. Plain loops and bound module-level functions, not closures
    // made per read: V8 compiled those again for every read (see stream/batch.ts, above packRows).
    const scalar = [];
    const lists = [];
    for (const d of derived) {
      ops.set(d.name, d.ops);
      (types.get(d.input)?.kind === 'list' ? lists : scalar).push(d);
    }
    const indexed = scalar.length > 0 ? decodeDerivedIndexed(md, msg.rowGroup, scalar, types, readAt, zstd, applyNamed.bind(null, ops, fast), range) : new Map();
    if (range !== undefined && lists.length > 0) throw new Error('list columns are read by whole row groups only');
    const listed = lists.length > 0
      ? decodeListDerivedIndexed(md, msg.rowGroup, lists, types, readAt, zstd, applyNamedPerValue.bind(null, ops, fast), keptOf.bind(null, ops))
      : new Map();
    // Raw columns: the ones asked for, and the inputs of derived columns not computed above.
    const raw = new Set(msg.columns);
    for (const d of derived) if (!indexed.has(d.name) && !listed.has(d.name)) raw.add(d.input);
    const { columns, rest } = decodeFlatRowGroup(md, msg.rowGroup, [...raw], types, readAt, zstd, range);
    const packs = msg.pack && rest.length === 0 ? packChunks(msg.pack, columns, indexed, listed) : null;
    const out = packs !== null ? { packs, rest } : {
      columns: [...columns, ...[...indexed].map(([name, d]) => [name, gatherIndexed(d)]), ...[...listed].map(([name, l]) => [name, gatherIndexedList(l)])],
      rest,
    };
    // The packs and gathered columns are new arrays: the row indices can be reused.
    releaseIndexed(indexed.values());
    return out;
  } catch {
    // A page this decoder refuses (corrupt, or a shape it does not know) goes to parquet-wasm,
    // which either reads it or fails in a way the main thread reports with the row group.
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Derived column `name`'s op chain on `col` (`ops`: name -> op chain). */
function applyNamed(ops, fast, name, col) {
  return applyOps(ops.get(name), col, fast);
}

/** The per-value ops of list column `name`'s chain (all but firstX) on its elements' dictionary `col`. */
function applyNamedPerValue(ops, fast, name, col) {
  return applyOps(ops.get(name).filter((o) => o.op !== 'firstX'), col, fast);
}

/** The elements a list column `name` keeps: its firstX ops' smallest x (Infinity for none). */
function keptOf(ops, name) {
  return Math.min(Infinity, ...ops.get(name).filter((o) => o.op === 'firstX').map((o) => o.params.x));
}

/**
 * Runs a derived column's op chain with `fast` kernels where they take the call, else core's
 * reference kernels (errors propagate: the caller falls back).
 */
function applyOps(chain, col, fast) {
  const ctx = { features: new Map(), featureTypes: new Map(), column: '' };
  for (const { op, params } of chain) col = fast?.get(op)?.(col, params, ctx) ?? OPS.get(op).apply(col, params, ctx);
  return col;
}

/**
 * Lays the row group out as batch arrays, one pack per chunk cut, or returns null when a feature's
 * column or the label is missing, or the label has a null (the main thread then assembles the
 * batch and reports the null with its row).
 */
function packChunks(pack, columns, indexed, listed) {
  const byName = new Map(columns);
  const outputs = new Map();
  const byFeature = new Map();
  const listsByFeature = new Map();
  const sparse = new Set(pack.layout.sparseKeys);
  for (const [feature, column] of pack.outputs) {
    const ix = indexed.get(column);
    if (ix !== undefined) { byFeature.set(feature, ix); continue; }
    const l = listed.get(column);
    // A sparse key's ids go from the indices into the pack; a dense feature gets the list column.
    if (l !== undefined) { if (sparse.has(feature)) listsByFeature.set(feature, l); else outputs.set(feature, gatherIndexedList(l)); continue; }
    const c = byName.get(column);
    if (c === undefined) return null;
    outputs.set(feature, c);
  }
  let label = null;
  if (pack.label !== null) {
    label = byName.get(pack.label);
    if (label === undefined || (label.valid !== null && label.valid.includes(0))) return null;
  }
  const chunk = { outputs, label, indexed: byFeature, indexedLists: listsByFeature, locate: () => { throw new Error('no row to locate'); } };
  const packs = [];
  for (let i = 0; i + 1 < pack.cuts.length; i++) {
    // Pack i goes in lent slot i when there is one (shared memory the main thread recycles).
    const slot = pack.slots?.[i];
    const p = packRows(pack.layout, [{ chunk, from: pack.cuts[i], to: pack.cuts[i + 1] }], slot?.[1]);
    packs.push({ rows: p.rows, dense: p.dense, lengths: p.lengths, offsets: p.offsets, values: p.values, labels: p.labels, slot: p.inSlot ? slot[0] : -1 });
  }
  return packs;
}

/** The packs' own buffers to transfer (a lent slot is shared memory: it is not transferred). */
function packBuffers(packs) {
  const set = new Set();
  for (const p of packs) for (const a of [p.dense, p.lengths, p.offsets, p.values, p.labels]) if (a && !(a.buffer instanceof SharedArrayBuffer)) set.add(a.buffer);
  return [...set];
}

function buffersOf(columns) {
  const set = new Set();
  const walk = (c) => {
    for (const k of ['values', 'valid', 'offsets', 'data']) if (c[k]) set.add(c[k].buffer);
    if (c.child) walk(c.child);
  };
  for (const [, c] of columns) walk(c);
  return [...set];
}

/** A local file as it is now (size, modification time, inode), or '' for a URL. */
const fileKey = (source) => (isUrl(source) ? '' : statKey(fs.statSync(source)));

async function open(source) {
  const key = fileKey(source);
  let e = files.get(source);
  if (e !== undefined && e.key !== key) {
    // Rewritten since it was opened here: open it afresh.
    files.delete(source);
    e.file.free();
    e = undefined;
  }
  if (e === undefined) {
    const file = isUrl(source)
      ? await pw.ParquetFile.fromUrl(source)
      : await pw.ParquetFile.fromFile(await fs.openAsBlob(source));
    e = { key, file };
    files.set(source, e);
  }
  return e.file;
}

function describe(f) {
  const md = f.metadata();
  const rowGroups = [];
  for (let i = 0; i < md.numRowGroups(); i++) rowGroups.push(md.rowGroup(i).numRows());
  // The schema travels as an empty Arrow IPC stream; the main thread parses it with apache-arrow.
  return { rowGroups, numRows: md.fileMetadata().numRows(), createdBy: md.fileMetadata().createdBy() ?? null, schemaIpc: f.schema().intoIPCStream() };
}

parentPort.on('message', async (msg) => {
  const { id } = msg;
  if (msg.kind === 'spec') {
    const { id: _, kind: __, spec, ...body } = msg;
    specs.set(spec, body);
    if (specs.size > 8) specs.delete(specs.keys().next().value);
    return;
  }
  if (msg.kind === 'read' && msg.spec !== undefined) {
    const body = specs.get(msg.spec);
    if (body === undefined) { parentPort.postMessage({ id, error: `read spec ${msg.spec} was never sent to this decoder` }); return; }
    const { cuts, slots, ...rest } = msg;
    msg = { ...rest, ...body, ...(body.pack ? { pack: { ...body.pack, cuts, slots } } : {}) };
  }
  try {
    if (msg.kind === 'open') {
      const meta = describe(await open(msg.source));
      parentPort.postMessage({ id, meta }, [meta.schemaIpc.buffer]);
    } else if (msg.kind === 'pages') {
      parentPort.postMessage({ id, meta: pageStarts(msg.source, msg.rowGroup) });
    } else if (msg.kind === 'read') {
      const direct = readDirect(msg, msg.kernels === undefined ? null : await kernelsFrom(msg.kernels));
      // What the direct decoder left (all of it when it does not apply) goes to parquet-wasm,
      // which returns raw columns: the derived columns' inputs as well.
      const columns = direct !== null ? direct.rest : [...new Set([...msg.columns, ...(msg.derived ?? []).map((d) => d.input)])];
      if (direct !== null && direct.packs) {
        parentPort.postMessage({ id, done: true, packs: direct.packs }, packBuffers(direct.packs));
        return;
      }
      if (columns.length === 0) {
        parentPort.postMessage({ id, done: true, columns: direct.columns }, buffersOf(direct.columns));
        return;
      }
      const f = await open(msg.source);
      const stream = await f.stream({ batchSize: msg.batchSize, rowGroups: [msg.rowGroup], columns });
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const ipc = value.intoIPCStream();
        parentPort.postMessage({ id, ipc }, [ipc.buffer]);
      }
      if (direct !== null) parentPort.postMessage({ id, done: true, columns: direct.columns }, buffersOf(direct.columns));
      else parentPort.postMessage({ id, done: true });
    } else if (msg.kind === 'reset') {
      // Parked for another pool: forget every file parquet-wasm opened (it may change before this
      // worker reads it again). Parsed footers stay: each is checked against the file when used.
      for (const e of files.values()) e.file.free();
      files.clear();
      specs.clear();
    } else if (msg.kind === 'close') {
      const e = files.get(msg.source);
      if (e) { files.delete(msg.source); e.file.free(); }
      footers.delete(msg.source);
      parentPort.postMessage({ id, done: true });
    }
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message ? err.message : err) });
  }
});

// Every import above has loaded: a failure from here on is about a task's data, not the install.
parentPort.postMessage({ started: true });
