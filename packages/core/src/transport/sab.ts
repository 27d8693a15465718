import { memcpyInto } from '../util/copy.js';
import { Endpoint, gather, type Frame, type Wire, type WireSink } from './engine.js';
import { FrameParser, encodeFrame } from './frames.js';
import { PeerLostError, TransportError } from './types.js';

// Ring control words (Int32): bytes written and bytes read so far (both wrap at 2^32), a "gone"
// flag set when either end leaves, and for each side a flag "I may be asleep" plus a doorbell
// counter it sleeps on. A side wakes the other (Atomics.notify, which costs a system call and
// often a context switch on the other thread) only when that flag is set, so a busy peer is never
// woken for nothing. The doorbell, rung after every change a sleeper waits for (data, room, gone),
// means no wake-up is lost between a sleeper's last look and its wait.
const HEAD = 0,
  TAIL = 1,
  GONE = 2,
  R_SLEEP = 3,
  R_BELL = 4,
  W_SLEEP = 5,
  W_BELL = 6;
const CTRL_BYTES = 64;
/** Alignment of regions in a heap: whole cache lines, and any typed array can view them. */
const ALIGN = 64;
const roundUp = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

/**
 * One end of a shared-memory channel: plain data that `postMessage` can hand to a worker.
 * `tx`/`rx` are the frame rings; `heap` holds the memory this end registers, and the peer, which
 * has it as its `peerHeap`, writes a send straight into the posted receive there (one copy).
 */
export interface SabPort {
  readonly tx: SharedArrayBuffer;
  readonly rx: SharedArrayBuffer;
  readonly heap: SharedArrayBuffer;
  readonly peerHeap: SharedArrayBuffer;
}

type WaitAsync = (a: Int32Array, i: number, v: number) => { async: false; value: string } | { async: true; value: Promise<string> };
const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;

function newRing(capacity: number): SharedArrayBuffer {
  return new SharedArrayBuffer(CTRL_BYTES + capacity);
}

/**
 * Two ends of a channel over two single-producer single-consumer byte rings in SharedArrayBuffers
 * (one per direction), plus a shared heap per end for the memory it registers. Pass one end to a
 * worker with `postMessage` and open each with `sabQueuePair`.
 *
 * A receive posted in the heap tells the peer its address, and the peer copies a send's gather
 * list straight there: the ring then carries only the 32-byte frame header, so a message is copied
 * once, not into the ring and out again. Memory registered beyond `heapBytes` (or given as a
 * buffer) is private; sends into it, and one-sided writes, travel through the ring (two copies).
 * The heap is address space: the OS commits its pages only when they are first used. The default
 * (128 MiB per end) holds fromTransport's default receive buffers (4 x 16 MiB) twice over.
 *
 * @example
 * const [mine, theirs] = sabChannel();
 * new Worker(url, { workerData: theirs });
 * const qp = sabQueuePair(mine);
 */
export function sabChannel(capacity = 8 << 20, heapBytes = 128 << 20): [SabPort, SabPort] {
  if (!Number.isInteger(Math.log2(capacity)) || capacity < 4096 || capacity > 1 << 30) {
    throw new TransportError(`ring capacity must be a power of two from 4096 to 2^30 bytes, got ${capacity}`);
  }
  if (!Number.isInteger(heapBytes) || heapBytes < 0 || heapBytes > 2 ** 32 - ALIGN || heapBytes % ALIGN !== 0) {
    throw new TransportError(`heap size must be a multiple of ${ALIGN} bytes below 4 GiB, got ${heapBytes}`);
  }
  if (waitAsync === undefined) throw new TransportError('this runtime has no Atomics.waitAsync (Node 16 or later is needed)');
  const ab = newRing(capacity);
  const ba = newRing(capacity);
  const ha = new SharedArrayBuffer(heapBytes);
  const hb = new SharedArrayBuffer(heapBytes);
  return [
    { tx: ab, rx: ba, heap: ha, peerHeap: hb },
    { tx: ba, rx: ab, heap: hb, peerHeap: ha },
  ];
}

/** Marks both rings of a port gone, as a supervisor does when the worker holding it exits. */
export function abandonSabPort(port: SabPort): void {
  for (const sab of [port.tx, port.rx]) {
    const c = new Int32Array(sab, 0, CTRL_BYTES / 4);
    Atomics.store(c, GONE, 1);
    ring(c, R_BELL);
    ring(c, W_BELL);
  }
}

function ring(c: Int32Array, bell: number): void {
  Atomics.add(c, bell, 1);
  Atomics.notify(c, bell);
}

/**
 * Waits until `ready()` holds or the doorbell rings: announces the sleep, looks once more, then
 * sleeps on the bell as it was before that look.
 */
async function sleep(c: Int32Array, flag: number, bell: number, ready: () => boolean): Promise<void> {
  const b = Atomics.load(c, bell);
  Atomics.store(c, flag, 1);
  if (!ready()) {
    const w = waitAsync!(c, bell, b);
    if (w.async) await w.value;
  }
  Atomics.store(c, flag, 0);
}

class SabWire implements Wire {
  private readonly txCtrl: Int32Array;
  private readonly txData: Uint8Array;
  private readonly rxCtrl: Int32Array;
  private readonly rxData: Uint8Array;
  private readonly mask: number;
  /** Where this end's registered memory lives (the peer writes sends into it). */
  private readonly heap: Uint8Array;
  /** The peer's heap, where this end places its sends. */
  private readonly peerHeap: Uint8Array;
  /** Free ranges of `heap` [at, end), sorted, never adjacent. */
  private readonly holes: Array<{ at: number; end: number }>;
  private readonly out: Uint8Array[] = [];
  /** Bytes of out[0] already written. */
  private outAt = 0;
  private writing = false;
  private sink: WireSink | null = null;
  private parser: FrameParser | null = null;
  private parsing = false;
  private done = false;
  private closing = false;
  /**
   * A pending Atomics.waitAsync does not keep Node's event loop alive; without this an idle
   * endpoint (e.g. a worker waiting for batches) would let its thread exit under it.
   */
  private keepAlive: ReturnType<typeof setInterval> | null = setInterval(() => undefined, 1 << 30);

  constructor(private readonly port: SabPort) {
    this.txCtrl = new Int32Array(port.tx, 0, CTRL_BYTES / 4);
    this.rxCtrl = new Int32Array(port.rx, 0, CTRL_BYTES / 4);
    this.txData = new Uint8Array(port.tx, CTRL_BYTES);
    this.rxData = new Uint8Array(port.rx, CTRL_BYTES);
    this.mask = this.txData.byteLength - 1;
    this.heap = new Uint8Array(port.heap);
    this.peerHeap = new Uint8Array(port.peerHeap);
    this.holes = this.heap.byteLength > 0 ? [{ at: 0, end: this.heap.byteLength }] : [];
  }

  start(sink: WireSink): void {
    this.sink = sink;
    void this.readLoop();
  }

  alloc(bytes: number): Uint8Array | null {
    // Once the connection is going, the peer may still be writing into receives flushed here.
    if (this.done || this.closing) return null;
    const size = roundUp(bytes);
    const i = this.holes.findIndex((h) => h.end - h.at >= size);
    if (i < 0) return null;
    const h = this.holes[i]!;
    const at = h.at;
    h.at += size;
    if (h.at === h.end) this.holes.splice(i, 1);
    return this.heap.subarray(at, at + bytes);
  }

  free(bytes: Uint8Array): void {
    if (bytes.buffer !== this.heap.buffer || this.done || this.closing) return;
    const at = bytes.byteOffset;
    const end = at + roundUp(bytes.byteLength);
    let i = this.holes.findIndex((h) => h.at > at);
    if (i < 0) i = this.holes.length;
    this.holes.splice(i, 0, { at, end });
    // Merge with the neighbours it touches.
    const next = this.holes[i + 1];
    if (next !== undefined && next.at === end) {
      this.holes[i]!.end = next.end;
      this.holes.splice(i + 1, 1);
    }
    const prev = this.holes[i - 1];
    if (prev !== undefined && prev.end === at) {
      prev.end = this.holes[i]!.end;
      this.holes.splice(i, 1);
    }
  }

  send(f: Frame): void {
    if (this.done || this.closing) return;
    let placedAt = -1;
    if (f.type === 'credit' && f.buffer !== undefined && f.buffer.buffer === this.heap.buffer) {
      // The peer can reach this receive: name its address so the send lands there directly.
      f = { type: 'credit', length: f.length, addr: f.buffer.byteOffset };
    } else if (f.type === 'send' && f.addr !== undefined) {
      // The credit named a receive in the peer's heap (it stays the peer's until this send's
      // header reaches it, so nothing there reads these bytes yet): copy the message once, into
      // place. The header published after it with an Atomics store makes the bytes visible.
      let bytes = 0;
      for (const d of f.data) bytes += d.byteLength;
      if (f.addr + bytes <= this.peerHeap.byteLength) {
        gather(f.data, this.peerHeap.subarray(f.addr, f.addr + bytes));
        placedAt = f.addr;
      }
    }
    this.out.push(...encodeFrame(f, placedAt));
    if (!this.writing) void this.writeLoop();
    if (placedAt >= 0) this.poll();
  }

  close(): void {
    this.closing = true;
    if (!this.writing) this.finish();
  }

  abort(): void {
    this.out.length = 0;
    this.finish();
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.release();
    abandonSabPort(this.port);
  }

  private release(): void {
    if (this.keepAlive !== null) clearInterval(this.keepAlive);
    this.keepAlive = null;
  }

  private async writeLoop(): Promise<void> {
    this.writing = true;
    const c = this.txCtrl;
    const cap = this.txData.byteLength;
    while (this.out.length > 0 && !this.done) {
      if (Atomics.load(c, GONE) === 1) {
        this.out.length = 0;
        break;
      }
      const head = Atomics.load(c, HEAD);
      const tail = Atomics.load(c, TAIL);
      const free = cap - ((head - tail) | 0);
      if (free === 0) {
        await sleep(c, W_SLEEP, W_BELL, () => Atomics.load(c, TAIL) !== tail || Atomics.load(c, GONE) === 1);
        continue;
      }
      const piece = this.out[0]!;
      const at = head & this.mask;
      const n = Math.min(free, piece.byteLength - this.outAt, cap - at);
      memcpyInto(this.txData, at, piece.subarray(this.outAt, this.outAt + n));
      this.outAt += n;
      if (this.outAt === piece.byteLength) {
        this.out.shift();
        this.outAt = 0;
      }
      Atomics.store(c, HEAD, (head + n) | 0);
      if (Atomics.load(c, R_SLEEP) === 1) ring(c, R_BELL);
    }
    this.writing = false;
    if (this.closing) this.finish();
  }

  private async readLoop(): Promise<void> {
    const c = this.rxCtrl;
    const heap = this.heap.buffer;
    this.parser = new FrameParser(this.sink!, (dst, addr) => dst.buffer === heap && dst.byteOffset === addr);
    for (;;) {
      this.poll();
      const head = Atomics.load(c, HEAD);
      if (head !== Atomics.load(c, TAIL)) continue;
      if (Atomics.load(c, GONE) === 1 || this.done) {
        if (!this.done) {
          this.done = true;
          abandonSabPort(this.port);
        }
        this.release();
        this.sink!.lost(new PeerLostError('the peer went away'));
        return;
      }
      await sleep(c, R_SLEEP, R_BELL, () => Atomics.load(c, HEAD) !== head || Atomics.load(c, GONE) === 1);
    }
  }

  /**
   * Hands the sink every frame the receive ring holds now. The read loop calls it when woken, and
   * a send calls it right after its copy, so credits and acknowledgements that arrived during the
   * copy are taken at once, without a turn of the event loop. Not re-entered: a frame's handler
   * that sends (and so polls) leaves the rest to the poll already running.
   */
  private poll(): void {
    const parser = this.parser;
    if (this.parsing || parser === null) return;
    this.parsing = true;
    const c = this.rxCtrl;
    const cap = this.rxData.byteLength;
    try {
      for (;;) {
        const tail = Atomics.load(c, TAIL);
        const avail = (Atomics.load(c, HEAD) - tail) | 0;
        if (avail === 0) return;
        const at = tail & (cap - 1);
        const n = Math.min(avail, cap - at);
        parser.push(this.rxData.subarray(at, at + n));
        Atomics.store(c, TAIL, (tail + n) | 0);
        if (Atomics.load(c, W_SLEEP) === 1) ring(c, W_BELL);
      }
    } finally {
      this.parsing = false;
    }
  }
}

/**
 * Opens one end of a `sabChannel` (in this thread).
 *
 * @example
 * // in the worker that was given `theirs`:
 * const qp = sabQueuePair(workerData as SabPort);
 */
export function sabQueuePair(port: SabPort): Endpoint {
  return new Endpoint(new SabWire(port));
}
