/**
 * Streaming Parquet writer over parquet-wasm's `transformParquetStream` (arrow-rs AsyncArrowWriter
 * in WebAssembly), run in a worker thread so that encoding overlaps with whatever produces the
 * batches. Each batch goes over as an Arrow IPC buffer (transferred, not copied); the encoder
 * flushes every finished row group as one chunk of bytes, which is written to the file before it
 * takes more input. Memory holds about one encoded row group plus two batches in flight — never
 * the whole file.
 *
 * Findings behind this design (parquet-wasm 0.8, Node 20):
 *  - `transformParquetStream` works in Node and honours `setMaxRowGroupSize` exactly.
 *  - Piping its output into `Writable.toWeb(fs.createWriteStream())` buffered the WHOLE file in
 *    memory (no effective backpressure); reading the stream and awaiting `FileHandle.write` per
 *    chunk keeps memory bounded.
 *  - Its promise only settles once the first batch has been pulled, and the Rust side ignores the
 *    result of `writer.write` (a rejected batch is silently dropped), so batches are checked against
 *    the first schema here and the footer's row count is verified on close.
 *  - Encoding (ZSTD + dictionary) is the bottleneck of data generation, hence the worker.
 */
import { mkdirSync, openAsBlob } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import type * as PW from 'parquet-wasm';
import { workerExecArgv } from '../util/worker-argv.js';

export type ParquetCompression = 'zstd' | 'snappy' | 'gzip' | 'brotli' | 'lz4' | 'uncompressed';

export interface ParquetWriteOptions {
  /** Default 'zstd'. */
  compression?: ParquetCompression;
  /** Maximum rows per row group (default 100_000). */
  rowGroupSize?: number;
  /** Dictionary encoding (default true). */
  dictionary?: boolean;
  /** Min/max statistics per page and column chunk ('page', the default), per column chunk only, or none. */
  statistics?: 'page' | 'chunk' | 'none';
  /** Key-value metadata for the file footer. */
  metadata?: Record<string, string>;
  /** Throw on close when the footer's row count differs from the rows written (default true). */
  verify?: boolean;
}

export interface ParquetWriteResult {
  path: string;
  rows: number;
  /** File size in bytes. */
  bytes: number;
  rowGroups: number;
}

/**
 * parquet-wasm, loaded when a writer opens: importing it compiles 5 MB of WebAssembly (~50 ms),
 * which every process that imports `@sluice/core` paid before, a training run that writes nothing
 * included.
 */
let parquetWasm: Promise<typeof PW> | null = null;
const loadParquetWasm = (): Promise<typeof PW> => (parquetWasm ??= import('parquet-wasm'));

const COMPRESSIONS: readonly ParquetCompression[] = ['zstd', 'snappy', 'gzip', 'brotli', 'lz4', 'uncompressed'];

function compressionOf(pw: typeof PW, c: ParquetCompression): PW.Compression {
  const byName: Record<ParquetCompression, PW.Compression> = {
    zstd: pw.Compression.ZSTD,
    snappy: pw.Compression.SNAPPY,
    gzip: pw.Compression.GZIP,
    brotli: pw.Compression.BROTLI,
    lz4: pw.Compression.LZ4_RAW,
    uncompressed: pw.Compression.UNCOMPRESSED,
  };
  return byName[c];
}

const STATISTICS = ['page', 'chunk', 'none'] as const;

function statisticsOf(pw: typeof PW, s: (typeof STATISTICS)[number]): PW.EnabledStatistics {
  return { page: pw.EnabledStatistics.Page, chunk: pw.EnabledStatistics.Chunk, none: pw.EnabledStatistics.None }[s];
}

/** Batches handed to the worker but not yet taken by the encoder. */
const MAX_IN_FLIGHT = 2;

interface EncoderOptions {
  compression: number;
  rowGroupSize: number;
  dictionary: boolean;
  statistics: number;
  metadata: Array<[string, string]>;
  createdBy: string;
}

/**
 * The worker (CommonJS, evaluated from this string so it runs the same from the TypeScript sources
 * under vitest and from dist). Messages in: {t:'batch', ipc}, {t:'close', schemaIpc}. Out:
 * {t:'ready'}, {t:'ack'} once the encoder has taken a batch, {t:'closed', bytes}, {t:'error', message}.
 */
const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const fsp = require('node:fs/promises');
const pw = require(workerData.wasmPath);
const o = workerData.options;
const props = () => {
  let b = new pw.WriterPropertiesBuilder()
    .setCompression(o.compression)
    .setMaxRowGroupSize(o.rowGroupSize)
    .setDictionaryEnabled(o.dictionary)
    .setStatisticsEnabled(o.statistics)
    .setCreatedBy(o.createdBy);
  if (o.metadata.length > 0) b = b.setKeyValueMetadata(new Map(o.metadata));
  return b.build();
};
const errorOf = (e) => (e instanceof Error ? e : new Error(String(e)));

// A pull-driven source: each pushed batch is handed over only when the encoder asks for one.
const queue = [];
let onItem = null;
let ctrl = null;
const deliver = (item) => {
  if (item.rb === null) ctrl.close();
  else ctrl.enqueue(item.rb);
  item.delivered();
};
const source = new ReadableStream({
  start(c) { ctrl = c; },
  pull() {
    const item = queue.shift();
    if (item) { deliver(item); return undefined; }
    return new Promise((resolve) => { onItem = () => { deliver(queue.shift()); resolve(); }; });
  },
}, { highWaterMark: 0 });
const push = (rb) => new Promise((delivered) => {
  queue.push({ rb, delivered });
  const f = onItem;
  if (f) { onItem = null; f(); }
});

let fh = null;
let drain = null;
// Rejects when the encoder fails or its output ends before the input did.
let failure = new Promise(() => undefined);
const guard = (p) => Promise.race([p, failure]);

async function drainTo(out) {
  const reader = out.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    let off = 0;
    while (off < value.byteLength) {
      const { bytesWritten } = await fh.write(value, off, value.byteLength - off);
      off += bytesWritten;
    }
    bytes += value.byteLength;
  }
}

async function feed(rb) {
  if (drain !== null) return guard(push(rb));
  const started = pw.transformParquetStream(source, props());
  failure = started.then(() => new Promise(() => undefined), (e) => Promise.reject(errorOf(e)));
  failure.catch(() => undefined);
  await guard(push(rb)); // the encoder peeks the first batch before 'started' settles
  drain = drainTo(await started);
  failure = drain.then(
    () => Promise.reject(new Error('the Parquet encoder stopped before the input ended')),
    (e) => Promise.reject(errorOf(e)),
  );
  failure.catch(() => undefined);
}

async function handle(m) {
  if (m.t === 'batch') {
    const t = pw.Table.fromIPCStream(new Uint8Array(m.ipc));
    const rbs = t.recordBatches();
    t.free();
    for (const rb of rbs) await feed(rb);
    parentPort.postMessage({ t: 'ack' });
  } else if (m.t === 'close') {
    let bytes;
    if (drain === null) {
      // Nothing was written: a schema-only file via the non-streaming writer.
      const out = pw.writeParquet(pw.Table.fromIPCStream(new Uint8Array(m.schemaIpc)), props());
      await fh.write(out);
      bytes = out.byteLength;
    } else {
      await guard(push(null));
      bytes = await drain;
    }
    await fh.close();
    fh = null;
    parentPort.postMessage({ t: 'closed', bytes });
  }
}

let chain = fsp.open(workerData.path, 'w').then((h) => { fh = h; parentPort.postMessage({ t: 'ready' }); });
parentPort.on('message', (m) => {
  chain = chain.then(() => handle(m)).catch((e) => {
    parentPort.postMessage({ t: 'error', message: errorOf(e).stack || String(e) });
    chain = new Promise(() => undefined); // stop handling further messages
  });
});
`;

let wasmPath: string | null = null;
function parquetWasmPath(): string {
  wasmPath ??= createRequire(import.meta.url).resolve('parquet-wasm');
  return wasmPath;
}

function schemaSignature(schema: arrow.Schema): string {
  return schema.fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`).join('|');
}

/** An IPC stream buffer that the worker can take over without a copy. */
function ownedBuffer(bytes: Uint8Array): ArrayBuffer {
  const b = bytes.buffer;
  if (b instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === b.byteLength) return b;
  return bytes.slice().buffer as ArrayBuffer;
}

type Waiter = { resolve: () => void; reject: (e: Error) => void };

/** Writes one Parquet file from a sequence of Arrow record batches, streaming row groups to disk. */
export class ParquetFileWriter {
  private schema: arrow.Schema | null = null;
  private signature = '';
  private rows = 0;
  private state: 'open' | 'closing' | 'closed' | 'aborted' = 'open';
  private inFlight = 0;
  private readonly ackWaiters: Waiter[] = [];
  private failed: Error | null = null;
  private closedWaiter: { resolve: (bytes: number) => void; reject: (e: Error) => void } | null = null;

  private constructor(
    /** Final path; data goes to `tmpPath` until `close()` renames it. */
    readonly path: string,
    private readonly tmpPath: string,
    private readonly worker: Worker,
    private readonly verify: boolean,
  ) {
    worker.on('message', (m: { t: string; message?: string; bytes?: number }) => {
      if (m.t === 'ack') {
        this.inFlight--;
        // An idle encoder must not keep the process alive (a writer that is never closed).
        if (this.inFlight === 0 && this.state === 'open') worker.unref();
        this.ackWaiters.shift()?.resolve();
      } else if (m.t === 'closed') {
        this.closedWaiter?.resolve(m.bytes ?? 0);
      } else if (m.t === 'error') {
        this.fail(new Error(`ParquetFileWriter(${this.path}): ${m.message ?? 'encoder failed'}`));
      }
    });
    worker.on('error', (e) => this.fail(e instanceof Error ? e : new Error(String(e))));
    worker.on('exit', (code) => {
      if (this.state === 'open' || this.state === 'closing') this.fail(new Error(`ParquetFileWriter(${this.path}): encoder thread exited (code ${code})`));
    });
  }

  /** Opens a writer for `filePath` (parent folders are created; the file appears on `close()`). */
  static async open(filePath: string, opts: ParquetWriteOptions = {}): Promise<ParquetFileWriter> {
    const compression = opts.compression ?? 'zstd';
    if (!COMPRESSIONS.includes(compression)) {
      throw new Error(`unknown Parquet compression "${String(compression)}"; valid: ${COMPRESSIONS.join(', ')}`);
    }
    if (opts.statistics !== undefined && !STATISTICS.includes(opts.statistics)) {
      throw new Error(`unknown statistics level "${String(opts.statistics)}"; valid: page, chunk, none`);
    }
    const rowGroupSize = opts.rowGroupSize ?? 100_000;
    if (!Number.isInteger(rowGroupSize) || rowGroupSize < 1) throw new Error(`rowGroupSize must be a positive integer, got ${rowGroupSize}`);
    const pw = await loadParquetWasm();
    const options: EncoderOptions = {
      compression: compressionOf(pw, compression),
      rowGroupSize,
      dictionary: opts.dictionary ?? true,
      statistics: statisticsOf(pw, opts.statistics ?? 'page'),
      metadata: Object.entries(opts.metadata ?? {}),
      createdBy: 'sluice (parquet-wasm)',
    };
    // Synchronous on purpose: an async mkdir runs on libuv's thread pool, where it can re-create a
    // folder that a Ctrl-C clean-up (cli/interrupt.ts) has just removed on the main thread.
    mkdirSync(path.dirname(path.resolve(filePath)), { recursive: true });
    const tmp = `${filePath}.${process.pid}.${Math.floor(Math.random() * 1e9).toString(36)}.partial`;
    const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: workerExecArgv(), workerData: { wasmPath: parquetWasmPath(), path: tmp, options } });
    // Ready once the worker has loaded parquet-wasm and created the file.
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: { t: string; message?: string }): void => {
        if (m.t === 'ready') done(null);
        else if (m.t === 'error') done(new Error(m.message));
      };
      const onError = (e: Error): void => done(e);
      const onExit = (code: number): void => done(new Error(`encoder thread exited (code ${code})`));
      const done = (e: Error | null): void => {
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        if (e) reject(new Error(`ParquetFileWriter(${filePath}): could not start the encoder: ${e.message}`));
        else resolve();
      };
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    }).catch(async (e: unknown) => {
      await worker.terminate();
      await rm(tmp, { force: true });
      throw e;
    });
    worker.unref();
    return new ParquetFileWriter(filePath, tmp, worker, opts.verify ?? true);
  }

  /** Rows accepted so far. */
  get rowsWritten(): number {
    return this.rows;
  }

  /** Appends a batch (or every batch of a table); all must share the first batch's schema. */
  async write(data: arrow.RecordBatch | arrow.Table): Promise<void> {
    if (this.state !== 'open') throw new Error(`ParquetFileWriter(${this.path}): write after ${this.state}`);
    if (this.failed) throw this.failed;
    this.checkSchema(data.schema);
    const batches = (data instanceof arrow.Table ? data.batches : [data]).filter((b) => b.numRows > 0);
    if (batches.length === 0) return;
    while (this.inFlight >= MAX_IN_FLIGHT) {
      await new Promise<void>((resolve, reject) => this.ackWaiters.push({ resolve, reject }));
    }
    const ipc = ownedBuffer(arrow.tableToIPC(new arrow.Table(batches), 'stream'));
    this.inFlight++;
    this.worker.ref();
    this.worker.postMessage({ t: 'batch', ipc }, [ipc]);
    this.rows += batches.reduce((a, b) => a + b.numRows, 0);
  }

  /** Finishes the file (footer), moves it into place and returns its size and row count. */
  async close(): Promise<ParquetWriteResult> {
    if (this.state !== 'open') throw new Error(`ParquetFileWriter(${this.path}): close after ${this.state}`);
    if (this.failed) {
      await this.abort();
      throw this.failed;
    }
    if (this.schema === null) {
      await this.abort();
      throw new Error(`ParquetFileWriter(${this.path}): nothing was written, so there is no schema to write`);
    }
    this.state = 'closing';
    try {
      const closed = new Promise<number>((resolve, reject) => {
        this.closedWaiter = { resolve, reject };
      });
      const schemaIpc = ownedBuffer(arrow.tableToIPC(new arrow.Table(this.schema), 'stream'));
      this.worker.ref();
      this.worker.postMessage({ t: 'close', schemaIpc }, [schemaIpc]);
      await closed;
      this.state = 'closed';
      await this.worker.terminate();
      await rename(this.tmpPath, this.path);
    } catch (e) {
      this.state = 'open';
      await this.abort();
      throw e;
    }
    try {
      return await this.finish();
    } catch (e) {
      await rm(this.path, { force: true });
      throw e;
    }
  }

  /** Stops writing and removes the partial file. Safe to call more than once. */
  async abort(): Promise<void> {
    if (this.state === 'aborted' || this.state === 'closed') return;
    this.state = 'aborted';
    this.fail(new Error(`ParquetFileWriter(${this.path}): aborted`));
    await this.worker.terminate();
    await rm(this.tmpPath, { force: true });
  }

  private fail(e: Error): void {
    this.failed ??= e;
    for (const w of this.ackWaiters.splice(0)) w.reject(this.failed);
    this.closedWaiter?.reject(this.failed);
    this.closedWaiter = null;
  }

  private checkSchema(schema: arrow.Schema): void {
    const sig = schemaSignature(schema);
    if (this.schema === null) {
      this.schema = schema;
      this.signature = sig;
    } else if (sig !== this.signature) {
      throw new Error(`ParquetFileWriter(${this.path}): batch schema differs from the first batch's\n  first: ${this.signature}\n  this:  ${sig}`);
    }
  }

  private async finish(): Promise<ParquetWriteResult> {
    const blob = await openAsBlob(this.path);
    const pw = await loadParquetWasm();
    const file = await pw.ParquetFile.fromFile(blob);
    try {
      const md = file.metadata();
      const rows = md.fileMetadata().numRows();
      if (this.verify && rows !== this.rows) {
        throw new Error(`ParquetFileWriter(${this.path}): wrote ${this.rows} rows but the file footer says ${rows} (the encoder dropped a batch)`);
      }
      return { path: this.path, rows, bytes: blob.size, rowGroups: md.numRowGroups() };
    } finally {
      file.free();
    }
  }
}

/** Writes an Arrow table to one Parquet file through `ParquetFileWriter` (row group by row group). */
export async function writeParquetTable(filePath: string, table: arrow.Table, opts: ParquetWriteOptions = {}): Promise<ParquetWriteResult> {
  const w = await ParquetFileWriter.open(filePath, opts);
  try {
    await w.write(table);
  } catch (e) {
    await w.abort();
    throw e;
  }
  return w.close();
}
