/**
 * `BatchStore`: batch bodies by seq and format for the server, in bounded memory. Bodies wait on a
 * shelf — the disk spill by default (serve/spill.ts), else a memory cache (serve/shelf.ts) — and
 * missing ones are made by pipeline runs (serve/runs.ts). A msgpack body is made with the batch;
 * an Arrow body is made from the msgpack one the first time a client asks for it.
 */
import { tmpdir } from 'node:os';
import { SluiceError, type Plan } from '@sluice/ops';
import type { Batch, BatchLayout } from '../batch/index.js';
import type { PipelineInfo, PipelineMetrics, PipelineOptions } from '../pipeline/pipeline.js';
import { ARROW_STREAM, MSGPACK, batchFromMsgpack, batchToArrowStream, batchToMsgpack, type BodyFormat } from './encode.js';
import { BatchMaker } from './runs.js';
import { MemoryShelf, type Body, type Shelf } from './shelf.js';
import { Spill } from './spill.js';

/**
 * Bounds of the batch store: its shelf, its pipeline runs and their resume points.
 *
 * @example
 * createBatchServer(plan, { input }, { spillDir: '/scratch', spillBytes: 16 * 2 ** 30, maxRuns: 2 });
 */
export interface BatchStoreOptions {
  /** Disk the spill may take, in bytes (default 4 GiB); 0 keeps bodies in memory only (`cacheBatches`, `cacheBytes`). */
  spillBytes?: number;
  /** Folder of the spill's files (default the OS temporary folder); they are unlinked at once, so nothing is left behind. */
  spillDir?: string;
  /** Without a spill: bodies kept in memory at most (default: as many as `cacheBytes` holds). */
  cacheBatches?: number;
  /** Without a spill: bytes of bodies kept in memory (default 256 MiB). */
  cacheBytes?: number;
  /** Batches made past the highest one asked for (default 4). */
  prefetch?: number;
  /** Pipeline runs alive at once (default 2). */
  maxRuns?: number;
  /** A resume point is kept every this many batches (default 16). */
  checkpointEvery?: number;
  /** A run nobody has asked anything of for this long is stopped, freeing its threads (default 30 000 ms; 0 never). */
  runIdleMs?: number;
  /** Told when the store changes course (a spill that failed): the CLI prints it. */
  onWarning?: (message: string) => void;
}

const MiB = 2 ** 20;
/** Takes of a body that was evicted before it could be sent, before giving up. */
const TAKE_TRIES = 4;

/**
 * Batch bodies of a plan's deterministic sequence by seq and format, made on demand by at most
 * `maxRuns` pipeline runs and kept on a bounded shelf, so that a batch is made about once however
 * many clients ask for it in whatever order (docs/serving.md, "Memory and re-made batches").
 *
 * @example
 * const store = await BatchStore.open(plan, { input }, await pipeline(plan, { input }).info());
 * const body = await store.get(7, MSGPACK); // null past the end
 * try { res.end(body!.memory ?? (await body!.read())); } finally { body!.release(); }
 */
export class BatchStore {
  private shelf: Shelf;
  private readonly maker: BatchMaker;
  private readonly converting = new Map<number, Promise<boolean>>();
  private closed = false;
  private readonly cacheBatches: number;
  private readonly cacheBytes: number;
  private readonly layout: BatchLayout;
  private readonly label: string | null;
  private readonly warn: (message: string) => void;
  /** Bytes the shelf holds at most. */
  private readonly capacity: number;
  private sized = false;

  private constructor(plan: Plan, options: PipelineOptions, info: PipelineInfo, o: BatchStoreOptions, shelf: Shelf) {
    this.shelf = shelf;
    this.layout = info.layout;
    this.label = plan.label;
    this.warn = o.onWarning ?? (() => undefined);
    this.capacity = shelf instanceof Spill ? shelf.maxBytes : (o.cacheBytes ?? 256 * MiB);
    this.cacheBatches = o.cacheBatches ?? Infinity;
    this.cacheBytes = o.cacheBytes ?? 256 * MiB;
    // Batches per epoch: full batches, plus the epoch's partial one unless dropLast.
    const r = info.rowsPerEpoch;
    const b = plan.batchSize;
    const total = plan.epochs * (plan.dropLast ? Math.floor(r / b) : Math.ceil(r / b));
    this.maker = new BatchMaker(
      plan,
      options,
      total,
      { maxRuns: o.maxRuns ?? 2, checkpointEvery: o.checkpointEvery ?? 16, prefetch: o.prefetch ?? 4, idleMs: o.runIdleMs ?? 30_000 },
      { have: (seq) => this.shelf.has(key(seq, MSGPACK)), deliver: (batch) => this.deliver(batch) },
    );
  }

  /** A store for `plan` over `options.input`, whose files `info` describes; opens the spill (an unwritable folder fails here). */
  static async open(plan: Plan, options: PipelineOptions, info: PipelineInfo, o: BatchStoreOptions = {}): Promise<BatchStore> {
    for (const [k, v] of Object.entries({ maxRuns: o.maxRuns, checkpointEvery: o.checkpointEvery, cacheBatches: o.cacheBatches, cacheBytes: o.cacheBytes })) {
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) throw new RangeError(`${k} must be a positive integer, got ${v}`);
    }
    for (const [k, v] of Object.entries({ prefetch: o.prefetch, spillBytes: o.spillBytes, runIdleMs: o.runIdleMs })) {
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) throw new RangeError(`${k} must be a non-negative integer, got ${v}`);
    }
    const spillBytes = o.spillBytes ?? 4 * 1024 * MiB;
    const shelf =
      spillBytes > 0 ? await Spill.open(o.spillDir ?? tmpdir(), spillBytes) : new MemoryShelf(o.cacheBatches ?? Infinity, o.cacheBytes ?? 256 * MiB);
    return new BatchStore(plan, options, info, o, shelf);
  }

  /** Batches in the whole sequence. */
  get batches(): number {
    return this.maker.total;
  }
  /** Bodies on the shelf (both formats). */
  get cached(): number {
    return this.shelf.entries;
  }
  /** Bytes of bodies on the shelf. */
  get cachedBytes(): number {
    return this.shelf.bytes;
  }
  /** Bodies the shelf has evicted. */
  get evicted(): number {
    return this.shelf.evicted;
  }
  /** Whether bodies go to disk (false: memory only, or the spill failed). */
  get spilling(): boolean {
    return this.shelf instanceof Spill;
  }
  get activeRuns(): number {
    return this.maker.activeRuns;
  }
  /** The pipeline runs' counters summed (rows, stage times, backend reports), finished runs included. */
  pipelineMetrics(): PipelineMetrics {
    return this.maker.metrics();
  }
  /** Batches the pipeline runs made, re-made ones included. */
  get made(): number {
    return this.maker.made;
  }
  /** Seqs made at least once (-1 when too many to track). */
  get distinct(): number {
    return this.maker.distinct;
  }
  /** Pipeline runs started, restarts included. */
  get runsStarted(): number {
    return this.maker.started;
  }

  /** Batch `seq`'s body in `format`, pinned until its `release()`; null past the end. */
  async get(seq: number, format: BodyFormat = MSGPACK): Promise<Body | null> {
    if (this.closed) throw new SluiceError('the server is closing');
    for (let i = 0; i < TAKE_TRIES; i++) {
      if (seq >= this.maker.total) return null;
      const body = this.shelf.take(key(seq, format));
      if (body !== null) return body;
      if (!(await (format === MSGPACK ? this.maker.want(seq) : this.convert(seq)))) return null;
    }
    throw new SluiceError(
      `batch ${seq} left the cache ${TAKE_TRIES} times before it could be sent: the cache is too small for this load (raise cacheBatches and cacheBytes, or use the spill)`,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.maker.close();
    await this.shelf.close();
  }

  private async deliver(b: Batch): Promise<void> {
    const body = batchToMsgpack(b);
    if (!this.sized) this.checkSize(body.byteLength);
    await this.put(key(b.seq, MSGPACK), body);
  }

  /**
   * Warns once, at the first batch made, when the shelf cannot hold every batch: clients that
   * come back to more batches than it holds make the server re-make them (docs/serving.md).
   */
  private checkSize(bytes: number): void {
    this.sized = true;
    const total = this.maker.total;
    const spill = this.shelf instanceof Spill;
    const fits = Math.min(spill ? Infinity : this.cacheBatches, Math.floor(this.capacity / bytes));
    if (fits >= total) return;
    const mib = (n: number): string => (n < MiB ? `${Math.ceil(n / 1024)} KiB` : `${(n / MiB).toFixed(1)} MiB`);
    this.warn(
      `the ${spill ? 'spill' : 'memory cache'} holds about ${fits} of the ${total} batches (${mib(bytes)} each as msgpack, Arrow about as much again): ` +
        `clients that come back to more of them make the server re-make batches; ${spill ? '--spill-size (spillBytes)' : 'cacheBytes'} of ${mib(bytes * total * 1.1)} would hold them all`,
    );
  }

  /** Puts a body on the shelf; a spill that fails (disk full) gives way to a memory shelf, with a warning. */
  private async put(k: string, body: Uint8Array): Promise<void> {
    const shelf = this.shelf;
    try {
      await shelf.put(k, body);
    } catch (e) {
      if (!(shelf instanceof Spill) || this.closed) throw e;
      if (this.shelf === shelf) {
        const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        this.warn(
          `the spill in ${shelf.dir} failed (${why}); keeping batches in memory from now on (at most ${Math.round(this.cacheBytes / MiB)} MiB of them)`,
        );
        this.shelf = new MemoryShelf(this.cacheBatches, this.cacheBytes);
        void shelf.close();
      }
      await this.shelf.put(k, body);
    }
  }

  /** Makes batch `seq`'s Arrow body from its msgpack one; concurrent requests share one conversion. */
  private convert(seq: number): Promise<boolean> {
    let p = this.converting.get(seq);
    if (p !== undefined) return p;
    p = (async (): Promise<boolean> => {
      const m = await this.get(seq, MSGPACK);
      if (m === null) return false;
      let bytes: Uint8Array;
      try {
        bytes = m.memory ?? (await m.read());
      } finally {
        m.release();
      }
      await this.put(key(seq, ARROW_STREAM), batchToArrowStream(batchFromMsgpack(bytes, this.layout), this.label));
      return true;
    })();
    this.converting.set(seq, p);
    p.then(
      () => this.converting.delete(seq),
      () => this.converting.delete(seq),
    );
    return p;
  }
}

function key(seq: number, format: BodyFormat): string {
  return `${seq}:${format === MSGPACK ? 'm' : 'a'}`;
}
