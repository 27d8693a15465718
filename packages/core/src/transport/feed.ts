/**
 * A batch feed that survives dropped connections: `serveFeed` (the loader's end) resumes the
 * pipeline where the trainer's hello says it left off; `connectFeed` (the trainer's end) dials
 * again and asks for that.
 */
import type { IteratorState } from '../pipeline/pipeline.js';
import type { Batch } from '../batch/index.js';
import { decodeHello, encodeHello } from './batch-codec.js';
import { fromTransport, sendError, toTransport, type FromTransportOptions, type ToTransportOptions, type TransportFeed } from './stages.js';
import { PeerClosedError, PeerLostError, TransportError, cutShort, type QueuePair } from './types.js';

// A trainer feed that outlives its connections. The trainer dials (connectFeed) and opens each
// connection with a hello naming where it wants the batches to start: the pipeline state after
// the last batch it took, which every batch carries (toTransport). The sender (serveFeed) runs
// its source from there. A dropped connection loses only batches in flight, which the trainer
// never took, so after it dials again it gets each batch exactly once, in order.

/** Room for a hello: a resume state is ~200 bytes of JSON. */
const HELLO_BYTES = 64 << 10;

export interface ServeFeedOptions extends ToTransportOptions {
  /** How long to wait for the trainer to connect again after a connection was lost (default 60 s). */
  reconnectWithinMs?: number;
  /**
   * How long a new connection has to say where to start (default 10 s; `connectFeed` says it at
   * once). One that stays silent (say, a plain `fromTransport`) is told so and dropped.
   */
  helloWithinMs?: number;
}

export interface ServeFeedResult {
  /** Batches and bytes the last connection delivered. */
  batches: number;
  bytes: number;
  /** Connections the trainer made (1 + its reconnections). */
  connections: number;
  /** True when the stream went to its end; false when the trainer closed the feed before. */
  complete: boolean;
}

/**
 * Serves one trainer a feed that survives dropped connections. For each connection from
 * `listener` (e.g. `listenTcp`), it reads the trainer's hello, then sends `source(resume)` with
 * `toTransport`: `resume` is where the trainer left off (undefined: from the beginning), so
 * `source` is typically `(resume) => pipeline(plan, { input, resume })`. When a connection is lost
 * mid-stream, it waits up to `reconnectWithinMs` for the trainer to connect again.
 *
 * Resolves when the stream was delivered to its end, or when the trainer closed the feed on purpose
 * (`complete: false`). Rejects when `source` fails (the trainer is told why first), when the
 * trainer does not come back in time (PeerLostError), or on `signal`.
 *
 * @example
 * const l = await listenTcp({ port: 7000, host: '0.0.0.0' });
 * await serveFeed(l, (resume) => pipeline(plan, { input, resume }));
 */
export async function serveFeed(
  listener: { accept(signal?: AbortSignal): Promise<QueuePair> },
  source: (resume: IteratorState | undefined) => AsyncIterable<Batch>,
  options: ServeFeedOptions = {},
): Promise<ServeFeedResult> {
  const within = options.reconnectWithinMs ?? 60_000;
  if (!Number.isFinite(within) || within < 0) throw new TransportError(`reconnectWithinMs must be a non-negative number, got ${within}`);
  const helloWithin = options.helloWithinMs ?? 10_000;
  if (!Number.isFinite(helloWithin) || helloWithin <= 0) throw new TransportError(`helloWithinMs must be a positive number, got ${helloWithin}`);
  const greet = (qp: QueuePair): Promise<Greeted | null> => greetWithin(qp, helloWithin, options.signal);
  let connections = 0;
  let lost: PeerLostError | null = null;
  // A trainer that connected (and said hello) while the previous connection was still streaming.
  let newer: Greeted | null = null;
  for (;;) {
    let conn: Greeted;
    if (newer !== null) {
      conn = newer;
      newer = null;
    } else {
      let qp: QueuePair;
      try {
        qp = await listener.accept(lost === null ? options.signal : anySignal(options.signal, AbortSignal.timeout(within)));
      } catch (e) {
        if (lost !== null && options.signal?.aborted !== true)
          throw new PeerLostError(`the trainer went away (${lost.message}) and did not connect again within ${within} ms`, {}, { cause: lost });
        throw e;
      }
      const g = await greet(qp);
      if (g === null) continue;
      conn = g;
    }
    connections++;
    const { qp } = conn;
    // A trainer dials again only when it has lost its connection, even if this end has not
    // noticed yet (a half-open TCP connection): a new trainer connection replaces this one.
    // Other clients are told they are not one and dropped, without disturbing this stream.
    const watch = new AbortController();
    const watching = anySignal(options.signal, watch.signal);
    const replaced = (async () => {
      while (!watch.signal.aborted) {
        // Stopping the watch stops the accept, not a greeting under way: a trainer that has
        // connected gets its answer either way.
        const g = await greet(await listener.accept(watching));
        if (g !== null) {
          newer = g;
          qp.close();
          return;
        }
      }
    })().catch(() => undefined);
    const stopWatching = async (): Promise<void> => {
      watch.abort();
      await replaced;
    };
    try {
      const r = await toTransport(
        qp,
        lazySource(() => source(conn.resume ?? undefined)),
        options,
      );
      await stopWatching();
      // A trainer that came in as the stream ended has nothing left to get.
      (newer as Greeted | null)?.qp.close();
      return { ...r, connections, complete: true };
    } catch (e) {
      await stopWatching();
      if (newer !== null) continue;
      if (e instanceof PeerLostError) {
        lost = e;
        continue;
      }
      // The trainer closed the feed on purpose (not the source failing, which it was told about).
      if (e instanceof TransportError && qp.ended instanceof PeerClosedError) return { batches: 0, bytes: 0, connections, complete: false };
      throw e;
    } finally {
      qp.close();
    }
  }
}

/** A connection whose trainer said where to start. */
interface Greeted {
  qp: QueuePair;
  resume: IteratorState | null;
}

/**
 * Reads a new connection's hello. Null for one that is lost before it, says nothing within
 * `ms`, or is not a feed trainer (another client, a port scanner): such a peer is told why and
 * dropped. Throws only on `signal`.
 */
async function greetWithin(qp: QueuePair, ms: number, signal: AbortSignal | undefined): Promise<Greeted | null> {
  try {
    return { qp, resume: await readHello(qp, anySignal(signal, AbortSignal.timeout(ms))) };
  } catch (e) {
    if (signal?.aborted === true) {
      qp.close();
      throw e;
    }
    if (e instanceof TransportError && !(e instanceof PeerLostError)) await refuse(qp, e.message);
    else if ((e as Error).name === 'TimeoutError') await refuse(qp, `it said nothing within ${ms} ms (a trainer connects with connectFeed)`);
    qp.close();
    return null;
  }
}

const anySignal = (a: AbortSignal | undefined, b: AbortSignal): AbortSignal => (a === undefined ? b : AbortSignal.any([a, b]));

/** The trainer's hello: where its batches should start. */
async function readHello(qp: QueuePair, signal: AbortSignal | undefined): Promise<IteratorState | null> {
  const mr = qp.registerMemory(HELLO_BYTES);
  qp.postRecv(0, mr);
  for (;;) {
    const c = await qp.cq.next(signal);
    if (c.opcode !== 'recv') continue;
    if (c.status !== 'success') throw cutShort(qp.ended, 'the trainer went away before saying where to start');
    qp.deregisterMemory(mr);
    return decodeHello(c.data!);
  }
}

/** Tells a peer that is not a feed trainer why it is dropped (as a sender's failure), if it listens within a second. */
async function refuse(qp: QueuePair, message: string): Promise<void> {
  // Gone, or not listening: dropped all the same.
  await sendError(qp, `not a feed connection: ${message}`, AbortSignal.timeout(1000)).catch(() => undefined);
}

/**
 * `make()`'s batches, made on first use (so that a source that throws at once reaches the
 * trainer as its failure), with `make()`'s resume states when it is a pipeline.
 */
function lazySource(make: () => AsyncIterable<Batch>): AsyncIterable<Batch> & { state(): IteratorState | null } {
  let made: AsyncIterable<Batch> | null = null;
  return {
    [Symbol.asyncIterator]: () => (made = make())[Symbol.asyncIterator](),
    state: () => {
      const s = (made as { state?: () => IteratorState | null } | null)?.state;
      return typeof s === 'function' ? s.call(made) : null;
    },
  };
}

export interface ConnectFeedOptions extends FromTransportOptions {
  /** Start after this state (a checkpoint's `feed.state()`) instead of at the beginning. */
  resume?: IteratorState;
  /** Connections lost in a row, with no batch between, before the feed gives up (default 10). */
  reconnects?: number;
}

/**
 * The trainer's end of a `serveFeed`: yields the feed's batches, in order and each once, across
 * dropped connections. `connect` opens a connection (e.g. `() => connectTcp({ host, port })`,
 * which itself retries with back-off while the sender is unreachable); after a lost one, the
 * feed calls it again and asks the sender to resume after the last batch this loop took.
 * `state()` is that position, for checkpoints. A sender that fails, or closes the feed on
 * purpose, ends the loop with its reason.
 *
 * @example
 * const feed = connectFeed(() => connectTcp({ host: 'loader', port: 7000 }), { resume: saved });
 * for await (const b of feed) { train(b); if (b.seq % 100 === 0) save(model, feed.state()); }
 */
export function connectFeed(connect: () => Promise<QueuePair>, options: ConnectFeedOptions = {}): TransportFeed {
  const reconnects = options.reconnects ?? 10;
  if (!Number.isInteger(reconnects) || reconnects < 0) throw new TransportError(`reconnects must be a non-negative integer, got ${reconnects}`);
  let state: IteratorState | null = options.resume ?? null;
  async function* run(): AsyncGenerator<Batch, void, undefined> {
    // The seq of the next batch this loop must see (null: whatever the sender starts with).
    let next: number | null = state?.seq ?? null;
    let drops = 0;
    for (;;) {
      if (next !== null && state === null) {
        throw new TransportError(`cannot resume after batch ${next - 1}: the sender's batches carry no resume state (serve a pipeline)`);
      }
      const qp = await connect();
      try {
        const feed = fromTransport(qp, options);
        qp.postSend(0, encodeHello(state));
        for await (const b of feed) {
          if (next !== null && b.seq !== next) throw new TransportError(`the sender sent batch ${b.seq} where the feed expected batch ${next}`);
          next = b.seq + 1;
          state = feed.state();
          drops = 0;
          yield b;
        }
        return;
      } catch (e) {
        if (!(e instanceof PeerLostError) || ++drops > reconnects) throw e;
      } finally {
        qp.close();
      }
    }
  }
  return Object.assign(run(), { state: () => state });
}
