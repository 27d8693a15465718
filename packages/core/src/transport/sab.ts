import { Endpoint, type Frame, type Wire, type WireSink } from './engine.js';
import { FrameParser, encodeFrame } from './frames.js';
import { TransportError } from './types.js';

// Ring control words (Int32): bytes written and bytes read so far (both wrap at 2^32), and a
// "gone" flag set when either end leaves.
const HEAD = 0, TAIL = 1, GONE = 2;
const CTRL_BYTES = 16;

/** One end of a shared-memory channel: plain data that `postMessage` can hand to a worker. */
export interface SabPort {
  readonly tx: SharedArrayBuffer;
  readonly rx: SharedArrayBuffer;
}

type WaitAsync = (a: Int32Array, i: number, v: number) => { async: false; value: string } | { async: true; value: Promise<string> };
const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;

function ring(capacity: number): SharedArrayBuffer {
  return new SharedArrayBuffer(CTRL_BYTES + capacity);
}

/**
 * Two ends of a channel over two single-producer single-consumer byte rings in SharedArrayBuffers
 * (one per direction). Pass one end to a worker with `postMessage` and open each with `sabQueuePair`.
 *
 * @example
 * const [mine, theirs] = sabChannel();
 * new Worker(url, { workerData: theirs });
 * const qp = sabQueuePair(mine);
 */
export function sabChannel(capacity = 8 << 20): [SabPort, SabPort] {
  if (!Number.isInteger(Math.log2(capacity)) || capacity < 4096 || capacity > 1 << 30) {
    throw new TransportError(`ring capacity must be a power of two from 4096 to 2^30 bytes, got ${capacity}`);
  }
  if (waitAsync === undefined) throw new TransportError('this runtime has no Atomics.waitAsync (Node 16 or later is needed)');
  const ab = ring(capacity);
  const ba = ring(capacity);
  return [{ tx: ab, rx: ba }, { tx: ba, rx: ab }];
}

/** Marks both rings of a port gone, as a supervisor does when the worker holding it exits. */
export function abandonSabPort(port: SabPort): void {
  for (const sab of [port.tx, port.rx]) {
    const c = new Int32Array(sab, 0, 4);
    Atomics.store(c, GONE, 1);
    Atomics.notify(c, HEAD);
    Atomics.notify(c, TAIL);
  }
}

class SabWire implements Wire {
  private readonly txCtrl: Int32Array;
  private readonly txData: Uint8Array;
  private readonly rxCtrl: Int32Array;
  private readonly rxData: Uint8Array;
  private readonly mask: number;
  private readonly out: Uint8Array[] = [];
  /** Bytes of out[0] already written. */
  private outAt = 0;
  private writing = false;
  private sink: WireSink | null = null;
  private done = false;
  private closing = false;
  /**
   * A pending Atomics.waitAsync does not keep Node's event loop alive; without this an idle
   * endpoint (e.g. a worker waiting for batches) would let its thread exit under it.
   */
  private keepAlive: ReturnType<typeof setInterval> | null = setInterval(() => undefined, 1 << 30);

  constructor(private readonly port: SabPort) {
    this.txCtrl = new Int32Array(port.tx, 0, 4);
    this.rxCtrl = new Int32Array(port.rx, 0, 4);
    this.txData = new Uint8Array(port.tx, CTRL_BYTES);
    this.rxData = new Uint8Array(port.rx, CTRL_BYTES);
    this.mask = this.txData.byteLength - 1;
  }

  start(sink: WireSink): void {
    this.sink = sink;
    void this.readLoop();
  }

  send(f: Frame): void {
    if (this.done || this.closing) return;
    this.out.push(...encodeFrame(f));
    if (!this.writing) void this.writeLoop();
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
      if (Atomics.load(c, GONE) === 1) { this.out.length = 0; break; }
      const head = Atomics.load(c, HEAD);
      const tail = Atomics.load(c, TAIL);
      const free = cap - ((head - tail) | 0);
      if (free === 0) {
        const w = waitAsync!(c, TAIL, tail);
        if (w.async) await w.value;
        continue;
      }
      const piece = this.out[0]!;
      const at = head & this.mask;
      const n = Math.min(free, piece.byteLength - this.outAt, cap - at);
      this.txData.set(piece.subarray(this.outAt, this.outAt + n), at);
      this.outAt += n;
      if (this.outAt === piece.byteLength) { this.out.shift(); this.outAt = 0; }
      Atomics.store(c, HEAD, (head + n) | 0);
      Atomics.notify(c, HEAD);
    }
    this.writing = false;
    if (this.closing) this.finish();
  }

  private async readLoop(): Promise<void> {
    const c = this.rxCtrl;
    const cap = this.rxData.byteLength;
    const parser = new FrameParser(this.sink!);
    for (;;) {
      const head = Atomics.load(c, HEAD);
      const tail = Atomics.load(c, TAIL);
      const avail = (head - tail) | 0;
      if (avail === 0) {
        if (Atomics.load(c, GONE) === 1 || this.done) {
          if (!this.done) { this.done = true; abandonSabPort(this.port); }
          this.release();
          this.sink!.lost(new TransportError('the peer went away'));
          return;
        }
        const w = waitAsync!(c, HEAD, head);
        if (w.async) await w.value;
        continue;
      }
      const at = tail & (cap - 1);
      const n = Math.min(avail, cap - at);
      parser.push(this.rxData.subarray(at, at + n));
      Atomics.store(c, TAIL, (tail + n) | 0);
      Atomics.notify(c, TAIL);
    }
  }
}

/** Opens one end of a `sabChannel` (in this thread). */
export function sabQueuePair(port: SabPort): Endpoint {
  return new Endpoint(new SabWire(port));
}
