import { stat } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { InputError, SluiceError, type Column, type ColumnType } from '@sluice/ops';
import { isUrl } from '../util/url.js';
import type { S3Access } from './s3/access.js';
import { isS3Url } from './s3/url.js';
import { workerExecArgv } from '../util/worker-argv.js';
import type { RowRange } from './parquet/index.js';
import { footerTypes, ipcTypes, type FileTypes } from './file-types.js';
import { packBytes, releaseOnce, type IdsPlan, type KeysTask, type Pack, type PackArena } from '../batch/index.js';
import type {
  DecodeReply,
  DecodeRequest,
  DerivedRequest,
  DoneReply,
  ErrorReply,
  OpenedReply,
  PackRead,
  PackShape,
  PackedReply,
  PagesReply,
  PlacedKeysReply,
  PlacedReply,
  ReadShared,
} from './decode-protocol.js';
import { readPackFields } from './decode-protocol.js';

/** What the footer of a Parquet file tells us. */
export interface FileMeta {
  readonly source: string;
  /** Rows per row group. */
  readonly rowGroups: readonly number[];
  readonly numRows: number;
  readonly createdBy: string | null;
  /** The columns Sluice reads, by name, with their types. */
  readonly types: FileTypes['types'];
  /** The columns it does not, by name, with their Arrow types in words. */
  readonly unsupported: FileTypes['unsupported'];
}

/** A task's last reply, and the record batches (`batch` replies) that came before it. */
interface Finished<R = OpenedReply | PagesReply | DoneReply | PackedReply | PlacedReply | PlacedKeysReply> {
  readonly reply: R;
  readonly ipc: Uint8Array[];
}

/** The last reply of each kind of request. */
interface LastReply {
  open: OpenedReply;
  pages: PagesReply;
  read: DoneReply | PackedReply;
  place: PlacedReply;
  placeKeys: PlacedKeysReply;
}

/** A request as the pool queues it: without its id, which it gets when a worker takes it. */
type Request = DecodeRequest extends infer R ? (R extends { kind: keyof LastReply } ? Omit<R, 'id'> : never) : never;

interface Pending {
  resolve: (v: Finished) => void;
  reject: (e: Error) => void;
  chunks: Uint8Array[];
  /** What the task reads, for errors: the file, the row group and the columns. */
  what: { source: string; rowGroup?: number; columns?: readonly string[]; placing?: boolean };
}

interface Slot {
  worker: Worker;
  busy: Map<number, Pending>;
  /** Read specs this worker has been sent (see `ReadSpec`). */
  specs: Set<number>;
  /** The worker finished loading its modules (it says so before it reads any task). */
  started: boolean;
  /** Removes this pool's listeners from the worker (before it is parked for another pool). */
  detach: () => void;
  /** A task failed in it: its wasm state may be broken (parquet-wasm panics), so it is not reused. */
  failed: boolean;
  /** The settings it started with (`startEnv`). */
  env: string;
}

interface Task {
  msg: Request;
  /** Buffers the request moves to the worker rather than copies. */
  transfer?: readonly ArrayBuffer[];
  /** The spec a read refers to, sent to a worker before its first read that needs it. */
  spec?: ReadSpec;
  pending: Pending;
}

/**
 * What every read of a pipeline shares: the columns, their types, the derived columns' op chains
 * and the pack layout. It goes to each worker once instead of with every row group: it can be
 * large (bucketize borders), and serializing it per read cost time and garbage in both threads.
 */
interface ReadSpec {
  readonly id: number;
  /** What it was made from, compared by identity to reuse it. */
  readonly from: readonly unknown[];
  readonly body: ReadShared;
}

let nextSpecId = 1;
/** Read specs a pool keeps (a decode worker keeps the last 8 it was sent). */
const SPECS_KEPT = 4;

// The built worker (decode-worker.ts): src/reader/ and dist/reader/ are both two levels below the
// package root, so this URL names dist/reader/decode-worker.js from the TypeScript sources under
// vitest and from the build alike (a worker thread runs built JavaScript only).
const WORKER_URL = new URL('../../dist/reader/decode-worker.js', import.meta.url);

/**
 * Decode workers that a closed pool left idle, kept for the next pool in this process. A new
 * worker takes a while to start (thread, modules, parquet-wasm and zstd wasm compiles), then runs
 * its first row groups unoptimized while V8 compiles its hot loops (see bench/README.md, 'e2e.ts:
 * end to end'). A pipeline per epoch, a benchmark's repeated runs, or `sluice serve` re-making
 * batches then reuse warm ones. Parked workers are unref'd (they never keep the process alive),
 * forget every file they had open (`reset`), and end after `idleMs()` unused.
 */
const idle: Array<{ worker: Worker; started: () => boolean; env: string; unpark: () => void }> = [];

/** The variables a decode thread reads (decode-worker.ts, zstd.ts, parquet/rle-wasm.ts, util/huge-pages.ts). */
const WORKER_SETTINGS = ['SLUICE_DIRECT_DECODE', 'SLUICE_RLE_WASM', 'SLUICE_ZSTD', 'SLUICE_HUGE_PAGES'];

/**
 * The decode threads' settings as a worker started now would read them. A worker reads them from
 * the copy of the environment it got when it started, so a parked worker serves only a pool of a
 * process whose settings are still those: one that changed them (a test, or a script comparing
 * settings) gets a worker that reads the new ones.
 */
function startEnv(): string {
  return WORKER_SETTINGS.map((k) => `${k}=${process.env[k] ?? ''}`).join('\0');
}
const IDLE_MS = 10_000;
let idleSetting: { readonly raw: string | undefined; readonly ms: number } | null = null;

/**
 * How long a parked decode worker waits for the next pool before it ends: `SLUICE_DECODER_IDLE_MS`
 * (milliseconds, 0 ends it at once), else 10 s. A process that runs other work between pipelines
 * for longer than that (a benchmark that interleaves DuckDB runs, an evaluation pass between
 * epochs) starts cold decoders again unless it raises this. An invalid value warns once and the
 * default applies.
 */
function idleMs(): number {
  const raw = process.env.SLUICE_DECODER_IDLE_MS;
  if (idleSetting !== null && idleSetting.raw === raw) return idleSetting.ms;
  let ms = IDLE_MS;
  if (raw !== undefined && raw.trim() !== '') {
    const n = Number(raw);
    if (Number.isFinite(n) && n >= 0) ms = n;
    else process.emitWarning(`SLUICE_DECODER_IDLE_MS must be a number of milliseconds >= 0, got "${raw}"; using ${IDLE_MS}`, 'SluiceWarning');
  }
  idleSetting = { raw, ms };
  return ms;
}
const MAX_IDLE = 8;

function park(worker: Worker, env: string, started: () => boolean = () => true): void {
  if (idle.length >= MAX_IDLE) {
    void worker.terminate();
    return;
  }
  worker.postMessage({ id: 0, kind: 'reset' } satisfies DecodeRequest);
  worker.unref();
  const drop = (): void => {
    clearTimeout(timer);
    const i = idle.findIndex((e) => e.worker === worker);
    if (i >= 0) idle.splice(i, 1);
  };
  // setTimeout takes at most 2^31 - 1 ms (~24.8 days).
  const timer = setTimeout(
    () => {
      drop();
      void worker.terminate();
    },
    Math.min(idleMs(), 2 ** 31 - 1),
  );
  timer.unref();
  worker.once('exit', drop);
  idle.push({
    worker,
    started,
    env,
    unpark: () => {
      clearTimeout(timer);
      worker.off('exit', drop);
    },
  });
}

/** The most recently parked worker that started with this process's settings as they are now (see `startEnv`). */
function takeIdle(env: string): { worker: Worker; started: boolean } | null {
  let i = idle.length - 1;
  while (i >= 0 && idle[i]!.env !== env) i--;
  if (i < 0) return null;
  const [e] = idle.splice(i, 1);
  e!.unpark();
  return { worker: e!.worker, started: e!.started() };
}

/**
 * Starts decode workers now, up to `n` idle ones, and parks them for the first pools of this
 * process to take. Why: a pool starts its workers only when it has a task, so a short run started
 * its first decoder after the main thread had loaded the pipeline's modules, and its second only
 * once the footers were read; each then spent its first ~150 ms (more on a busy host) loading
 * modules and compiling parquet-wasm. The CLI calls this before it loads a command that reads
 * Parquet, so that the threads start while the main thread loads (bench/README.md, "startup.ts").
 *
 * @example
 * prestartDecoders(2); // then pipeline(…): its decoder pool takes these two
 */
export function prestartDecoders(n: number): void {
  for (let i = idle.length; i < Math.min(n, MAX_IDLE); i++) {
    const worker = new Worker(WORKER_URL, { execArgv: workerExecArgv() });
    let started = false;
    const onMessage = (m: DecodeReply): void => {
      if (m.kind !== 'started') return;
      started = true;
      worker.off('message', onMessage);
    };
    worker.on('message', onMessage);
    // One that fails to start while parked just exits (and leaves the idle list); a pool that took
    // it reports the failure from its own listeners.
    worker.on('error', () => undefined);
    park(worker, startEnv(), () => started);
  }
}

/**
 * Footers of local files opened in this process, most recently used last, keyed by path, size,
 * modification time and inode: a pipeline start then skips a worker round trip, parquet-wasm's
 * open and the schema's parse.
 */
const footerCache = new Map<string, FileMeta>();
const FOOTER_CACHE = 32;

/** The cache key of a local file as it is now, or null (a URL, or a file stat cannot see). */
async function footerKey(source: string): Promise<string | null> {
  if (isUrl(source)) return null;
  const st = await stat(source).catch(() => null);
  return st === null || !st.isFile() ? null : `${source}\0${st.size}\0${st.mtimeMs}\0${st.ino}`;
}

/** Idle decode workers kept warm in this process (see `park`). */
export const idleDecoders = (): number => idle.length;

/**
 * A pool of Parquet decode workers. Decoding off the main thread keeps a wasm panic on corrupt
 * data from taking the process down, and lets row groups decode while the main thread runs ops.
 *
 * @example
 * const pool = new DecoderPool(1);
 * const meta = await pool.open('data.parquet');
 * const ipc = await pool.readRowGroup('data.parquet', 0, ['I1'], 65536);
 * await pool.close();
 */
export class DecoderPool {
  private readonly slots: Slot[] = [];
  /** Recent read specs, newest last (row groups read in shares alternate between the shares' specs). */
  private readonly specs: ReadSpec[] = [];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;
  /** URL of the kernels module the workers run derived columns' ops with (null: core's reference kernels). */
  private readonly kernels: string | null;
  /** Whether the workers verify page CRCs where a file has them. */
  private readonly verifyCrc: boolean;
  /** Credentials and endpoint for s3:// sources, found once per pool (workers may outlive the environment they started in). */
  private s3: Promise<S3Access> | null = null;

  /**
   * `size` workers. `kernels`: a module whose `FAST_OPS` the workers use for the ops of derived
   * columns (see `BackendRegistration.readerKernels`); by default core's reference kernels.
   * `verifyCrc`: check each page's CRC32 where the file has one (default true; the cost is in
   * docs/reliability.md).
   */
  constructor(
    readonly size = 1,
    options: { readonly kernels?: string | null; readonly verifyCrc?: boolean } = {},
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`decoder pool size must be a positive integer, got ${size}`);
    this.kernels = options.kernels ?? null;
    this.verifyCrc = options.verifyCrc ?? true;
  }

  /**
   * Reads a file's footer: row groups and schema. A local file's footer is remembered for the
   * process while its size, modification time and inode stay the same (`footerCache`), so a
   * pipeline per epoch does not pay a decode worker's round trip and parse again.
   */
  async open(source: string): Promise<FileMeta> {
    const key = await footerKey(source);
    const known = key === null ? undefined : footerCache.get(key);
    if (known !== undefined) {
      footerCache.delete(key!);
      footerCache.set(key!, known);
      return known;
    }
    const s3 = await this.s3Of(source);
    let { meta } = (await this.submit({ kind: 'open', source, ...s3 }, { source })).reply;
    let types = meta.footer === undefined ? null : await footerTypes(meta.footer);
    // The writer's Arrow schema types a column otherwise than its Parquet type alone: parquet-wasm
    // reads the schema, as arrow-rs applies that hint.
    if (types === null && meta.schemaIpc === undefined) {
      meta = (await this.submit({ kind: 'open', source, wasm: true, ...s3 }, { source })).reply.meta;
    }
    types ??= await ipcTypes(meta.schemaIpc!);
    const out: FileMeta = { source, rowGroups: meta.rowGroups, numRows: meta.numRows, createdBy: meta.createdBy, ...types };
    if (key !== null) {
      footerCache.set(key, out);
      if (footerCache.size > FOOTER_CACHE) footerCache.delete(footerCache.keys().next().value!);
    }
    return out;
  }

  /**
   * The rows after the first where a page of every column of a row group starts, from the file's
   * offset index: where a read of part of the row group (`readRowGroupColumns`' `range`) may
   * start or end. [] for a row group without an offset index, and for a URL. Asked only for row
   * groups a source may split: reading every row group's offset indexes at every open is slow on
   * large files.
   */
  async pageStarts(source: string, rowGroup: number): Promise<readonly number[]> {
    return (await this.submit({ kind: 'pages', source, rowGroup }, { source, rowGroup })).reply.rows;
  }

  /** Decodes one row group's projected columns into Arrow IPC stream buffers (one per record batch). */
  async readRowGroup(source: string, rowGroup: number, columns: readonly string[], batchSize = 65536): Promise<Uint8Array[]> {
    const read = {
      kind: 'read',
      source,
      rowGroup,
      columns: [...columns],
      batchSize,
      ...(this.verifyCrc ? {} : { verifyCrc: false }),
      ...(await this.s3Of(source)),
    } as const;
    return (await this.submit(read, { source, rowGroup, columns })).ipc;
  }

  /**
   * Decodes one row group's projected columns. Flat columns of local files come back as Sluice
   * columns from the direct decoder (parquet/); the others as Arrow IPC buffers, as
   * `readRowGroup` returns them. `derived` columns are computed on dictionary entries where the
   * direct decoder can; for each one it cannot, the result holds its raw input instead (the IPC
   * form always holds the raw inputs).
   *
   * With `pack`, a worker that has every feature's output and the label lays rows
   * [cuts[i], cuts[i+1]) out as batch arrays itself and returns those `packs` (and no columns),
   * in slots of `pack.arena` while it lends them; otherwise `packs` is null. With `pack.permute` (a
   * shuffled window of this one row group) pack i holds its permutation's rows cuts[i] to cuts[i+1].
   *
   * With `range` (page boundaries from `pageStarts`, flat columns), the direct decoder's
   * columns and the packs hold only those rows (`cuts` count from its first); the IPC buffers,
   * if any, still hold the whole row group.
   */
  async readRowGroupColumns(
    source: string,
    rowGroup: number,
    columns: readonly string[],
    types: ReadonlyMap<string, ColumnType>,
    batchSize = 65536,
    derived: readonly DerivedRequest[] = [],
    pack?: PackShape & PackRead & { readonly arena?: PackArena },
    range?: RowRange,
  ): Promise<{ columns: Map<string, Column>; ipc: Uint8Array[]; packs: Pack[] | null }> {
    const inputs = new Set([...columns, ...derived.map((d) => d.input)]);
    const arena = pack?.arena;
    // One slot per pack, while the arena has slots to lend.
    const slots = arena?.lend(pack!.cuts.length - 1) ?? [];
    // Slots holding a returned pack; the others go back when the read ends, however it ends (a
    // failure, columns instead of packs, a pack that did not fit).
    const used = new Set<number>();
    const from = [columns.join('\0'), types, derived, pack?.layout, pack?.outputs, pack?.label, batchSize];
    let spec = this.specs.find((x) => x.from.every((v, k) => v === from[k]));
    if (spec === undefined) {
      spec = {
        id: nextSpecId++,
        from,
        body: {
          columns: [...columns],
          batchSize,
          types: [...types].filter(([n]) => inputs.has(n)),
          derived: derived.map((d) => ({ name: d.name, input: d.input, ops: d.ops })),
          ...(this.kernels !== null && derived.length > 0 ? { kernels: this.kernels } : {}),
          ...(pack !== undefined ? { pack: { layout: pack.layout, outputs: pack.outputs, label: pack.label } } : {}),
          ...(this.verifyCrc ? {} : { verifyCrc: false }),
        },
      };
      this.specs.push(spec);
      if (this.specs.length > SPECS_KEPT) this.specs.shift();
    }
    try {
      const s3 = isS3Url(source) ? await this.s3Of(source) : {};
      const { reply, ipc } = await this.submit(
        {
          kind: 'read',
          source,
          rowGroup,
          spec: spec.id,
          ...s3,
          ...(pack !== undefined ? readPackFields(pack, slots) : {}),
          ...(range !== undefined ? { range } : {}),
        },
        { source, rowGroup, columns: [...inputs] },
        spec,
      );
      if (reply.kind === 'done') return { columns: new Map(reply.columns), ipc, packs: null };
      const packs =
        arena === undefined
          ? reply.packs
          : reply.packs.map((p, i): Pack => {
              const slot = p.slot;
              if (slot >= 0) used.add(slot);
              // A pack that outgrew the slot lent for it (list features): later slots hold such packs.
              // By size: the pack's arrays came back over another object of the slot's memory
              // (postMessage makes a new SharedArrayBuffer object), so packInSlot cannot tell here.
              const lent = slots[i];
              const bytes = packBytes(p);
              if (lent !== undefined && bytes > lent[1].byteLength) arena.grow(bytes);
              const release = slot < 0 ? NO_RELEASE : releaseOnce(arena, slot);
              const { slot: _slot, ...pack } = p;
              const held: Pack = { ...pack, release };
              // Dropped without release (its batch never released), the pack's slot is let go.
              if (slot >= 0) arena.hold(slot, held);
              return held;
            });
      return { columns: new Map(), ipc: [], packs };
    } finally {
      for (const [id] of slots) if (!used.has(id)) arena!.give(id);
    }
  }

  /**
   * The ids of chunks `chunks` of a shuffled window, placed by a decode thread (`placeChunkIds`,
   * batch/window-ids.ts): the plan's arrays are shared memory, so nothing is copied to send it.
   * `source` names the window's file in an error.
   */
  async placeIds(plan: IdsPlan, chunks: readonly number[], source: string): Promise<BigInt64Array[]> {
    const { reply } = await this.submit({ kind: 'place', plan, chunks }, { source, placing: true });
    return reply.values;
  }

  /**
   * Places keys `task.keys` of a shuffled window whose reads came as columns, in a decode thread
   * (`placeKeyIds`, batch/window-ids.ts): the reads' arrays of those keys are moved there
   * (`transfer`), the rest is shared memory. `source` names the window's file in an error.
   */
  async placeKeys(task: KeysTask, transfer: readonly ArrayBuffer[], source: string): Promise<void> {
    await this.submit({ kind: 'placeKeys', task }, { source, placing: true }, undefined, transfer);
  }

  /** `{ s3 }` for an s3:// source (its credentials and endpoint), else nothing. */
  private async s3Of(source: string): Promise<{ s3?: S3Access }> {
    if (!isS3Url(source)) return {};
    // Loaded on the first s3:// source, as the decode worker loads its S3 reader.
    this.s3 ??= import('./s3/access.js').then((m) => m.resolveS3Access());
    return { s3: await this.s3 };
  }

  /** Stops every worker; pending work is rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new InputError('decoder closed');
    for (const t of this.queue.splice(0)) t.pending.reject(err);
    await Promise.all(
      this.slots.splice(0).map(async (s) => {
        // A worker with nothing in hand is kept warm for the next pool; one still decoding (a run
        // cancelled mid-read) is ended, as is one that never started or had a task fail.
        if (s.busy.size === 0 && s.started && !s.failed) {
          s.detach();
          park(s.worker, s.env);
          return;
        }
        for (const p of s.busy.values()) p.reject(err);
        s.busy.clear();
        s.detach();
        await s.worker.terminate();
      }),
    );
  }

  /** Queues `msg` for the next free worker; resolves with its last reply (a `kind` request's). */
  private submit<K extends keyof LastReply>(
    msg: Request & { kind: K },
    what: Pending['what'],
    spec?: ReadSpec,
    transfer?: readonly ArrayBuffer[],
  ): Promise<Finished<LastReply[K]>> {
    if (this.closed) return Promise.reject(new InputError('decoder closed'));
    return new Promise<Finished>((resolve, reject) => {
      this.queue.push({
        msg,
        ...(spec !== undefined ? { spec } : {}),
        ...(transfer !== undefined ? { transfer } : {}),
        pending: { resolve, reject, chunks: [], what },
      });
      this.pump();
    }) as Promise<Finished<LastReply[K]>>;
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => s.busy.size === 0);
      if (slot === undefined && this.slots.length < this.size) slot = this.spawn();
      if (slot === undefined) return;
      const task = this.queue.shift()!;
      const id = this.nextId++;
      slot.busy.set(id, task.pending);
      slot.worker.ref();
      if (task.spec !== undefined && !slot.specs.has(task.spec.id)) {
        slot.specs.add(task.spec.id);
        slot.worker.postMessage({ id: 0, kind: 'spec', spec: task.spec.id, ...task.spec.body } satisfies DecodeRequest);
      }
      slot.worker.postMessage({ id, ...task.msg } as DecodeRequest, task.transfer as ArrayBuffer[] | undefined);
    }
  }

  private spawn(): Slot {
    const env = startEnv();
    const warm = takeIdle(env);
    const worker = warm?.worker ?? new Worker(WORKER_URL, { execArgv: workerExecArgv() });
    const slot: Slot = { worker, busy: new Map(), specs: new Set(), started: warm?.started ?? false, detach: () => undefined, failed: false, env };
    const onMessage = (m: DecodeReply): void => {
      if (m.kind === 'started') {
        slot.started = true;
        return;
      }
      const p = slot.busy.get(m.id);
      if (p === undefined) return;
      if (m.kind === 'batch') {
        p.chunks.push(m.ipc);
        return;
      }
      slot.busy.delete(m.id);
      if (m.kind === 'error') {
        slot.failed = true;
        p.reject(describeFailure(p.what, m));
        // parquet-wasm trapped in it: its wasm instance is unusable. The next task gets a fresh worker.
        if (m.broken === true) retire();
      } else p.resolve({ reply: m, ipc: p.chunks });
      if (slot.busy.size === 0) worker.unref();
      this.pump();
    };
    /** Takes this worker out of the pool and ends it (what it still holds is failed first by the caller). */
    const retire = (): void => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      slot.detach();
      void worker.terminate();
    };
    // An uncaught error in the worker (a wasm panic on corrupt pages) ends it: fail what it was
    // doing with the file and row group, and let the next task start a fresh worker.
    const fail = (reason: string): void => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      // A worker that dies before it has loaded its modules never saw the data: that is a broken
      // installation (a missing build output, say), not a corrupt file.
      const err = slot.started
        ? null
        : new SluiceError(`the Parquet decode worker (${fileURLToPath(WORKER_URL)}) could not start: ${reason.replace(/^Error: /, '')}`);
      for (const p of slot.busy.values()) p.reject(err ?? crashFailure(p.what, reason));
      slot.busy.clear();
      if (!this.closed) this.pump();
    };
    const onError = (e: unknown): void => fail(String(e instanceof Error ? e.message : e));
    const onExit = (code: number): void => {
      if (slot.busy.size > 0) fail(`decoder exited with code ${code}`);
      else {
        // Ended with nothing in hand: never hand it another task.
        const i = this.slots.indexOf(slot);
        if (i >= 0) this.slots.splice(i, 1);
      }
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    slot.detach = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    worker.unref();
    this.slots.push(slot);
    return slot;
  }
}

/** The release of a pack in fresh memory: no slot to give back. */
const NO_RELEASE = (): void => undefined;

/** A worker's error reply as the user reads it: its sentence, with the file, row group and column; a library's words only as the cause. */
function describeFailure(what: Pending['what'], m: ErrorReply): InputError {
  // A refusal of a row group's metadata (parquet/check.ts, checked when the row group is first
  // read) names the row group itself: it is not named twice.
  const named = what.rowGroup !== undefined && new RegExp(`: row group ${what.rowGroup}[,:] `).test(m.error);
  const where = {
    file: what.source,
    ...(what.rowGroup !== undefined && !named ? { rowGroup: what.rowGroup } : {}),
    ...(m.column !== undefined ? { column: m.column } : {}),
  };
  let msg = m.error.replace(/^Error: /, '');
  if (/No such file|ENOENT|Unable to open/i.test(msg)) msg = 'cannot open: no such file or not readable';
  return new InputError(msg, where, m.detail !== undefined ? { cause: new Error(m.detail) } : undefined);
}

/** A worker that died mid-task (a trap parquet-wasm did not turn into an error): what it was reading, never the trap's text. */
function crashFailure(what: Pending['what'], reason: string): SluiceError {
  // No file data is read there: the thread ran out of memory, say.
  if (what.placing === true)
    return new SluiceError(`a decoder stopped while placing the ids of a shuffled window of ${what.source}: ${reason.replace(/^Error: /, '')}`);
  const where = what.rowGroup === undefined ? { file: what.source } : { file: what.source, rowGroup: what.rowGroup };
  const cols = what.columns ?? [];
  const which = cols.length === 1 ? `column ${cols[0]}` : cols.length > 1 ? `one of the columns ${cols.join(', ')}` : 'the file';
  return new InputError(`cannot decode ${which}: the decoder stopped on bytes that do not add up (damaged or truncated data)`, where, {
    cause: new Error(reason),
  });
}
