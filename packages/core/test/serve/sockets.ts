// Test clients that misbehave at the socket level, for the serve limit and soak tests.
import { connect, type Socket } from 'node:net';

/**
 * A connection to `url` that never sends a byte: `open` resolves once it is connected, `closed`
 * when the server closes it, with how long that took and what the server sent before.
 */
export function silent(url: string): { socket: Socket; open: Promise<void>; closed: Promise<{ ms: number; got: string }> } {
  const u = new URL(url);
  const t0 = performance.now();
  const socket = connect(Number(u.port), u.hostname);
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  socket.on('error', () => undefined);
  return {
    socket,
    open: new Promise((r) => socket.once('connect', () => r())),
    closed: new Promise((r) => socket.once('close', () => r({ ms: performance.now() - t0, got }))),
  };
}
