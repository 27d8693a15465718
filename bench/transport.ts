/**
 * Transport throughput: real RM1 batches of 8192 rows sent to a receiver in another thread over
 * the SharedArrayBuffer ring, TCP and HTTP (loopback), and in-process, in GB/s of the bytes that
 * cross (batch arrays for the transports; the real response bodies for HTTP), side by side with a
 * plain memcpy of the same batch bytes in the same run (ARCHITECTURE.md: a figure is a ratio
 * against a peer measured alongside). Each transport runs `--reps` times; the table gives the
 * median and the spread. memcpy is the best of its runs (TypedArray.set, Buffer.copy, and the
 * native memcpy of Buffer#fill that the shared-memory transport copies with), so the ratios are
 * against the fastest copy this machine managed, never a slow one. The receiving side of each row
 * is one long-lived worker, as a trainer is, and the row first makes `--settle` untimed runs; each
 * run then moves `--warmup` batches untimed before its clock starts. So the clock sees the steady
 * stream a trainer sees, not the first touch of fresh buffers (page faults) or code still being
 * optimised: on 2 vCPUs V8's compiler threads take a core from the copying threads for 1-4 ms at a
 * time, and a fresh isolate keeps compiling the receive path for its first ~2,000 batches
 * (bench/README.md, "Settling"). A run's clock stops when the receiver has
 * every batch and has said so, so it also holds the end of the stream (end message, its ack, the
 * worker's reply: 1-4 ms on the development VM); 300 timed batches (1.3 GB) keep that a few percent
 * of the run, where the former 60 made it about a quarter of the shared-memory rows' time.
 *
 *   npm run bench:transport [-- --batches 300 --warmup 64 --settle 3 --reps 5 --json]
 */
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createBatchServer } from '@sluice/core/serve';
import { encodeBatch, fromTransport, inProcessPair, listenTcp, sabChannel, sabQueuePair, toTransport } from '@sluice/core/transport';
import { getPreset } from '@sluice/core/gen';
import { pipeline, type Batch } from '@sluice/core';
import { cachedDataset, emitJson, fmtRatio, log, machine, median, printTable } from './lib.js';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '300' },
    reps: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '64' },
    settle: { type: 'string', default: '3' },
    json: { type: 'boolean' },
  },
});
const N = Number(values.batches);
const REPS = Number(values.reps);
const WARM = Number(values.warmup);
const SETTLE = Number(values.settle);
const ROWS = 8192;
// The receiver thread's modules: the transports, and the HTTP client beside them.
const CORE = new URL('../packages/core/dist/transport/index.js', import.meta.url).href;
const CLIENT = new URL('../packages/client/dist/index.js', import.meta.url).href;

const ds = await cachedDataset({ preset: 'rm1', rows: ROWS * 4, seed: 1 });
const plan = { ...getPreset('rm1').defaultPlan(), batchSize: ROWS, backend: { name: 'reference' } };
const source: Batch[] = [];
for await (const b of pipeline(plan, { input: ds.path })) source.push(b);
const batchBytes = (b: Batch): number =>
  b.dense.data.byteLength + b.sparse.lengths.byteLength + b.sparse.offsets.byteLength + b.sparse.values.byteLength + (b.labels?.byteLength ?? 0);
const perBatch = batchBytes(source[0]!);
let total = 0;
for (let i = 0; i < N; i++) total += batchBytes(source[i % source.length]!);
log(`${N} RM1 batches of ${ROWS} rows, ${(perBatch / 1e6).toFixed(2)} MB each`);

/** WARM untimed batches, then `start()`, then the N timed ones. */
async function* stream(start: () => void = () => undefined): AsyncGenerator<Batch> {
  for (let i = 0; i < WARM + N; i++) {
    if (i === WARM) start();
    yield source[i % source.length]!;
  }
}

/**
 * A receiving thread for one row of the table: one worker for all of that row's runs, settling
 * runs included, as a trainer is one long-lived thread (bench/README.md, "Settling"). `body` is
 * the async body of one run: it sees `core`, the run's `data` (a channel end, a port, a URL) and
 * `ready()`, to call once set up, and returns the run's result.
 */
class Receiver<T> {
  private readonly w: Worker;
  private readonly loaded: Promise<void>;
  private failed: Error | null = null;
  /** How to fail the message awaited now, if the thread dies first. */
  private waiters: Array<(e: Error) => void> = [];

  constructor(body: string) {
    const code = `const { parentPort } = require('node:worker_threads');
      Promise.all([import(${JSON.stringify(CORE)}), import(${JSON.stringify(CLIENT)})]).then(([transport, client]) => {
        const core = { ...transport, ...client };
        const run = async (data, ready) => { ${body} };
        parentPort.on('message', (data) => { run(data, () => parentPort.postMessage('ready')).then((r) => parentPort.postMessage({ r }), (e) => { throw e; }); });
        parentPort.postMessage('loaded');
      });`;
    this.w = new Worker(code, { eval: true });
    this.loaded = new Promise<void>((resolve) => this.w.once('message', () => resolve()));
    const fail = (e: Error): void => {
      this.failed = e;
      for (const x of this.waiters.splice(0)) x(e);
    };
    this.w.once('error', fail);
    this.w.once('exit', (c) => fail(new Error(`receiver thread exited (${c})`)));
  }

  /** Starts a run with `data`: `ready` once the thread has set it up (so set-up is not timed), `done` with its result. */
  run(data: unknown): { ready: Promise<void>; done: Promise<T> } {
    const next = (): Promise<'ready' | { r: T }> =>
      new Promise((ok, fail) => {
        if (this.failed) {
          fail(this.failed);
          return;
        }
        this.waiters.push(fail);
        this.w.once('message', (m: 'ready' | { r: T }) => {
          this.waiters.shift();
          ok(m);
        });
      });
    const ready = this.loaded.then(async () => {
      const r = next();
      this.w.postMessage(data);
      if ((await r) !== 'ready') throw new Error('receiver finished before it was ready');
    });
    const done = ready.then(async () => ((await next()) as { r: T }).r);
    done.catch(() => undefined);
    return { ready, done };
  }

  async close(): Promise<void> {
    this.w.removeAllListeners('exit');
    await this.w.terminate();
  }
}

/** The trainer's loop in the worker, with `slots` receive buffers posted (see bench/README.md). */
const receive = (slots: number): string => `ready(); let bytes = 0; let n = 0;
  for await (const b of core.fromTransport(qp, { maxBatchBytes: 8 << 20, slots: ${slots} })) { bytes += b.dense.data.byteLength + b.sparse.lengths.byteLength + b.sparse.offsets.byteLength + b.sparse.values.byteLength + (b.labels ? b.labels.byteLength : 0); n++; }
  qp.close(); return { bytes, n };`;
const RECEIVE = receive(4);

interface Result {
  transport: string;
  bytes: number;
  seconds: number[];
}
const results: Result[] = [];
/**
 * Runs `run` REPS times; each run's clock starts when it calls `start` (after its set-up) and stops
 * when it resolves, unless it resolves to the seconds it timed itself.
 */
async function measure(transport: string, bytes: number, run: (start: () => void) => Promise<number | void>, settle = 0): Promise<void> {
  const r: Result = { transport, bytes, seconds: [] };
  for (let k = 0; k < settle; k++) await run(() => undefined);
  for (let k = 0; k < REPS; k++) {
    let t0 = performance.now();
    const own = await run(() => {
      t0 = performance.now();
    });
    r.seconds.push(typeof own === 'number' ? own : (performance.now() - t0) / 1000);
  }
  results.push(r);
  log(`  ${transport}: ${r.seconds.map((x) => (bytes / x / 1e9).toFixed(2)).join(' ')} GB/s`);
}

const TURNS_ROW = 'context: Buffer#fill into 2 shared buffers in turn';

// memcpy: gather-copy each batch's arrays (the same segments a transport sends) into one buffer,
// once per batch; the best of REPS runs each of TypedArray.set and Buffer.copy.
const segments = source.map((b) => encodeBatch(b));
const dst = new Uint8Array(perBatch + 4096);
const dstBuf = Buffer.from(dst.buffer, dst.byteOffset, dst.byteLength);
const segBufs = segments.map((l) => l.map((seg) => Buffer.from(seg.buffer, seg.byteOffset, seg.byteLength)));
await measure('memcpy, TypedArray.set', total, async () => {
  for (let i = 0; i < N; i++) {
    let o = 0;
    for (const seg of segments[i % segments.length]!) {
      dst.set(seg, o);
      o += seg.byteLength;
    }
  }
});
await measure('memcpy, Buffer.copy', total, async () => {
  for (let i = 0; i < N; i++) {
    let o = 0;
    for (const seg of segBufs[i % segBufs.length]!) o += seg.copy(dstBuf, o);
  }
});
/** Batch `i`'s segments into `d`, each as one native memcpy (Buffer#fill), as the ring copies. */
const fillBatch = (d: Buffer, i: number): void => {
  let o = 0;
  for (const seg of segBufs[i % segBufs.length]!) {
    d.fill(seg, o, o + seg.byteLength);
    o += seg.byteLength;
  }
};
await measure('memcpy, Buffer#fill (native)', total, async () => {
  for (let i = 0; i < N; i++) fillBatch(dstBuf, i);
});

// Context, not a peer of the ratios: the same native copy, but into two shared destinations in
// turn, as the ring's two receive slots are written. It separates what the transport costs from
// what a copy whose destination footprint doubles costs on this machine's cache.
const turns = [0, 1].map(() => Buffer.from(new SharedArrayBuffer(perBatch + 4096)));
await measure(TURNS_ROW, total, async () => {
  for (let i = 0; i < N; i++) fillBatch(turns[i & 1]!, i);
});

// Context too: the same copies into the same two shared buffers, but each after a 50 µs sleep, and
// only the copies timed. A thread of the ring copies between waits (the sender for a credit, the
// receiver for a doorbell), not back to back, and on a shared VM a copy that follows a pause runs
// slower than one that follows a copy (bench/README.md). 50 µs is about the sender's median wait.
const NAP_ROW = 'context: the same, 50 µs asleep before each copy (copies timed)';
const nap = new Int32Array(new SharedArrayBuffer(4));
await measure(NAP_ROW, total, async () => {
  let copying = 0;
  for (let i = 0; i < N; i++) {
    Atomics.wait(nap, 0, 0, 0.05);
    const t = performance.now();
    fillBatch(turns[i & 1]!, i);
    copying += performance.now() - t;
  }
  return copying / 1000;
});

await measure(
  'in-process',
  total,
  async (start) => {
    const [a, b] = inProcessPair();
    const recv = (async () => {
      let n = 0;
      for await (const _ of fromTransport(b, { maxBatchBytes: 8 << 20 })) n++;
      return n;
    })();
    await toTransport(a, stream(start));
    if ((await recv) !== WARM + N) throw new Error('in-process: lost batches');
  },
  SETTLE,
);

// Shared memory: a trainer double-buffers (2 receive slots: one batch being trained on, the next
// landing), which is the criterion's row; with 4 slots (fromTransport's default) the copies'
// destinations rotate over 17 MB more memory, beyond what the L3 cache keeps (bench/README.md).
for (const slots of [2, 4]) {
  const trainer = new Receiver<{ n: number }>(`const qp = core.sabQueuePair(data); ${receive(slots)}`);
  await measure(
    `SharedArrayBuffer ring (worker, ${slots} receive slots)`,
    total,
    async (start) => {
      const [mine, theirs] = sabChannel(16 << 20);
      const qp = sabQueuePair(mine);
      const recv = trainer.run(theirs);
      await recv.ready;
      await toTransport(qp, stream(start));
      if ((await recv.done).n !== WARM + N) throw new Error('sab: lost batches');
      qp.close();
    },
    SETTLE,
  );
  await trainer.close();
}

const tcpTrainer = new Receiver<{ n: number }>(`const qp = await core.connectTcp({ port: data }); ${RECEIVE}`);
await measure(
  'TCP loopback (worker)',
  total,
  async (start) => {
    const l = await listenTcp({ port: 0 });
    const recv = tcpTrainer.run(l.port);
    const qp = await l.accept();
    await recv.ready;
    await toTransport(qp, stream(start));
    if ((await recv.done).n !== WARM + N) throw new Error('tcp: lost batches');
    qp.close();
    await l.close();
  },
  SETTLE,
);
await tcpTrainer.close();

// HTTP: the server holds the 4 distinct batches (warmed once); a client in a worker fetches and
// decodes N of them. Throughput counts the bytes of the response bodies themselves.
const srv = await createBatchServer(plan, { input: ds.path }, { cacheBatches: 8, prefetch: 0 });
const url = await srv.listen(0);
const bodyBytes = { 'application/msgpack': 0, 'application/vnd.apache.arrow.stream': 0 };
for (const accept of ['application/msgpack', 'application/vnd.apache.arrow.stream'] as const) {
  const sizes: number[] = [];
  for (let s = 0; s < source.length; s++)
    sizes.push(await fetch(`${url}/v1/batches/${s}`, { headers: { accept } }).then(async (r) => (await r.arrayBuffer()).byteLength));
  for (let i = 0; i < N; i++) bodyBytes[accept] += sizes[i % sizes.length]!;
  log(`  ${accept} body: ${(sizes[0]! / 1e6).toFixed(2)} MB`);
}
/**
 * The typed client in a worker asks for N batches with `depth` requests in flight: depth 2 is how
 * `client.batches()` reads (its default prefetch), depth 1 one request at a time. msgpack bodies
 * are decoded to typed arrays, Arrow bodies to an apache-arrow Table (columns are views).
 */
const httpTrainer = new Receiver<{ n: number }>(`const c = core.createClient(data.url);
    const get = data.arrow ? (s) => c.arrow(s) : (s) => c.batch(s);
    const rows = (b) => (data.arrow ? b.numRows : b.rows);
    for (let i = 0; i < data.warm; i++) await get(i % data.k);
    ready();
    const ahead = []; let next = 0; let n = 0;
    while (n < data.n) {
      while (ahead.length < data.depth && next < data.n) ahead.push(get(next++ % data.k));
      const b = await ahead.shift();
      if (rows(b) !== ${ROWS}) throw new Error('short batch');
      // Done with it, as a training loop is after its step.
      b.release?.();
      n++;
    }
    await c.close(); return { n };`);
async function http(format: 'msgpack' | 'arrow', depth: number, start: () => void): Promise<void> {
  const w = httpTrainer.run({ url, n: N, k: source.length, warm: Math.max(WARM, 1), depth, arrow: format === 'arrow' });
  await w.ready;
  start();
  if ((await w.done).n !== N) throw new Error('http: lost batches');
}
const MSGPACK_BYTES = bodyBytes['application/msgpack'];
const ARROW_BYTES = bodyBytes['application/vnd.apache.arrow.stream'];
await measure('HTTP loopback, msgpack (worker client, prefetch 2)', MSGPACK_BYTES, (start) => http('msgpack', 2, start), SETTLE);
// The default body: an Arrow IPC stream.
await measure('HTTP loopback, Arrow (worker client, prefetch 2)', ARROW_BYTES, (start) => http('arrow', 2, start), SETTLE);
await measure('HTTP loopback, msgpack (one request at a time)', MSGPACK_BYTES, (start) => http('msgpack', 1, start), SETTLE);
await measure('HTTP loopback, Arrow (one request at a time)', ARROW_BYTES, (start) => http('arrow', 1, start), SETTLE);
await httpTrainer.close();
await srv.close();

const gbps = (r: Result, seconds: number): number => r.bytes / seconds / 1e9;
const summary = results.map((r) => {
  const rates = r.seconds.map((x) => gbps(r, x));
  return { transport: r.transport, bytes: r.bytes, seconds: r.seconds, median: median(rates), min: Math.min(...rates), max: Math.max(...rates) };
});
// The peer of every ratio: the fastest memcpy of the run.
const memcpy = Math.max(...summary.filter((r) => r.transport.startsWith('memcpy')).map((r) => r.max));
const rows = summary.map((r) => [r.transport, r.median.toFixed(2), `${r.min.toFixed(2)}–${r.max.toFixed(2)}`, fmtRatio(r.median / memcpy)]);
if (values.json)
  emitJson({
    bench: 'transport',
    batches: N,
    reps: REPS,
    warmup: WARM,
    settle: SETTLE,
    rowsPerBatch: ROWS,
    bytesPerBatch: perBatch,
    memcpyGbPerSecond: memcpy,
    results: summary.map((r) => ({ ...r, gbPerSecond: r.median, vsMemcpy: r.median / memcpy })),
    machine: machine(),
  });
else
  printTable(
    `Transport throughput: ${N} RM1 batches of ${ROWS} rows (${(perBatch / 1e6).toFixed(2)} MB each), median of ${REPS} runs; vs the best memcpy (${memcpy.toFixed(2)} GB/s)`,
    ['transport', 'GB/s', 'min–max', 'vs memcpy'],
    rows,
  );
