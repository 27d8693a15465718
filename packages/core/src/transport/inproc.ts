import { Endpoint, type Frame, type Wire, type WireSink } from './engine.js';
import { PeerLostError } from './types.js';

class InProcessWire implements Wire {
  peer: InProcessWire | null = null;
  private sink: WireSink | null = null;
  private open = true;

  start(sink: WireSink): void {
    this.sink = sink;
  }

  send(f: Frame): void {
    const peer = this.peer;
    if (!this.open || peer === null) return;
    // A microtask keeps delivery asynchronous and in order, as on a real link; buffers are handed over as they are.
    queueMicrotask(() => {
      if (peer.open) peer.sink!.frame(f);
    });
  }

  close(): void {
    // Frames already queued (the goodbye included) still arrive: the peer's `open` is untouched.
    this.open = false;
  }

  abort(): void {
    this.open = false;
    const peer = this.peer;
    if (peer?.open)
      queueMicrotask(() => {
        if (peer.open) {
          peer.open = false;
          peer.sink!.lost(new PeerLostError('the peer went away'));
        }
      });
  }
}

/**
 * Two connected queue pairs in one process. A message is handed over without copying: the
 * receiver's completion carries the sender's own buffers (so a sender must not change a buffer it
 * has sent), while credits and completions follow the same rules as every other transport.
 *
 * @example
 * const [a, b] = inProcessPair();
 * b.postRecv(1, b.registerMemory(4096));
 * a.postSend(1, new Uint8Array([1, 2, 3]));
 */
export function inProcessPair(): [Endpoint, Endpoint] {
  const wa = new InProcessWire();
  const wb = new InProcessWire();
  wa.peer = wb;
  wb.peer = wa;
  return [new Endpoint(wa, true), new Endpoint(wb, true)];
}
