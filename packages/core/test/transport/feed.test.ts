// A trainer feed over TCP that outlives its connections (serveFeed / connectFeed): dropped
// connections on either side, a checkpoint and a later resume, a sender whose data fails, and a
// trainer that never comes back. The reference is the same pipeline read locally in one go.
import { createHash } from 'node:crypto';
import { createServer, connect as dial, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  Endpoint,
  PeerLostError,
  connectFeed,
  decodeBatchMessage,
  connectTcp,
  fromTransport,
  listenTcp,
  serveFeed,
  toTransport,
  type QueuePair,
  type TcpListener,
} from '@sluice/core/transport';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { pipeline, type Batch, type IteratorState, type PlanSpec } from '@sluice/core';
import { tempDir } from '../helpers.js';

const dir = tempDir('sluice-feed-');
let input = '';
// 3,000 rows in row groups of 700, batches of 200: 15 batches, several spanning row groups.
const plan: PlanSpec = { ...getPreset('rm1').defaultPlan(), batchSize: 200 };
const want: string[] = [];

/** Every array of a batch, and its place in the stream. */
function digest(b: Batch): string {
  const h = createHash('sha1').update(`${b.seq} ${b.rows} ${JSON.stringify(b.end)}`);
  for (const a of [b.dense.data, b.sparse.lengths, b.sparse.offsets, b.sparse.values, b.labels!])
    h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return h.digest('hex');
}

beforeAll(async () => {
  input = (await generateDataset({ preset: 'rm1', rows: 3000, rowGroupSize: 700, out: join(dir, 'rm1.parquet'), seed: 3 })).path;
  for await (const b of pipeline(plan, { input })) want.push(digest(b));
  expect(want.length).toBe(15);
});

let listener: TcpListener | null = null;
afterEach(async () => {
  await listener?.close();
  listener = null;
});

/** A listener whose accepted queue pairs the test can reach (to drop one). */
async function listen(): Promise<{ accept(signal?: AbortSignal): Promise<QueuePair>; port: number; accepted: Endpoint[] }> {
  const l = await listenTcp({ port: 0 });
  listener = l;
  const accepted: Endpoint[] = [];
  return {
    port: l.port,
    accepted,
    accept: async (signal) => {
      const qp = await l.accept(signal);
      accepted.push(qp);
      return qp;
    },
  };
}

/**
 * A TCP relay to `port`. `cut()` destroys every relayed connection at once, as a network failure
 * does: both ends see the connection drop without a goodbye.
 */
async function relay(port: number): Promise<{ port: number; cut(): void; close(): Promise<void> }> {
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((down) => {
    const up = dial({ port });
    down.pipe(up).pipe(down);
    for (const s of [down, up]) s.on('error', () => undefined);
    pairs.add([down, up]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  relays.push(server);
  return {
    port: (server.address() as { port: number }).port,
    cut: () => {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      pairs.clear();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
const relays: Server[] = [];
afterEach(() => {
  for (const r of relays.splice(0)) r.close();
});

const source = (resume: IteratorState | undefined): AsyncIterable<Batch> => pipeline(plan, { input, ...(resume ? { resume } : {}) });

describe('feed across dropped connections', () => {
  it('a trainer whose connection drops twice gets every batch once, in order, the same as a local run', async () => {
    const l = await listen();
    const net = await relay(l.port);
    const serving = serveFeed(l, source);
    let dials = 0;
    const feed = connectFeed(
      () => {
        dials++;
        return connectTcp({ port: net.port });
      },
      { maxBatchBytes: 1 << 20 },
    );
    const got: string[] = [];
    for await (const b of feed) {
      got.push(digest(b));
      // The network fails while batches are in flight.
      if (b.seq === 3 || b.seq === 9) net.cut();
    }
    expect(got).toEqual(want);
    expect(dials).toBe(3);
    expect(await serving).toMatchObject({ connections: 3, complete: true });
    expect(feed.state()).toMatchObject({ seq: 15 });
  });

  it('a drop the sender notices first is survived the same way', async () => {
    const l = await listen();
    const net = await relay(l.port);
    let cut = false;
    const serving = serveFeed(l, (resume) => {
      const p = pipeline(plan, { input, ...(resume ? { resume } : {}) });
      // The pipeline's batches and resume states; the network fails as the sender takes batch 6.
      return {
        state: () => p.state(),
        async *[Symbol.asyncIterator]() {
          for await (const b of p) {
            if (b.seq === 6 && !cut) {
              cut = true;
              net.cut();
            }
            yield b;
          }
        },
      };
    });
    const got: string[] = [];
    for await (const b of connectFeed(() => connectTcp({ port: net.port }), { maxBatchBytes: 1 << 20 })) got.push(digest(b));
    expect(got).toEqual(want);
    expect(await serving).toMatchObject({ connections: 2, complete: true });
  });

  it('a checkpointed state resumes later, with a new sender, exactly where the trainer stopped', async () => {
    let l = await listen();
    let serving = serveFeed(l, source);
    const feed = connectFeed(() => connectTcp({ port: l.port }), { maxBatchBytes: 1 << 20 });
    const got: string[] = [];
    let saved: IteratorState | null = null;
    for await (const b of feed) {
      got.push(digest(b));
      if (b.seq === 5) {
        saved = feed.state();
        break;
      }
    }
    expect(saved).toMatchObject({ version: 1, seq: 6 });
    // The trainer closed the feed on purpose: the sender stops without an error.
    expect(await serving).toMatchObject({ complete: false, connections: 1 });
    await listener!.close();
    l = await listen();
    serving = serveFeed(l, source);
    for await (const b of connectFeed(() => connectTcp({ port: l.port }), { maxBatchBytes: 1 << 20, resume: saved! })) got.push(digest(b));
    expect(got).toEqual(want);
    expect(await serving).toMatchObject({ complete: true });
    // The same state resumes a local pipeline identically.
    const local: string[] = [];
    for await (const b of pipeline(plan, { input, resume: saved! })) local.push(digest(b));
    expect(local).toEqual(want.slice(6));
  });

  it("fromTransport gives the sender pipeline's state after each batch", async () => {
    const l = await listen();
    const [a, b] = await Promise.all([connectTcp({ port: l.port }), l.accept()]);
    const p = pipeline(plan, { input });
    const sending = toTransport(a, p);
    const feed = fromTransport(b, { maxBatchBytes: 1 << 20 });
    expect(feed.state()).toBeNull();
    const states: Array<IteratorState | null> = [];
    for await (const _ of feed) states.push(feed.state());
    await sending;
    expect(states.map((s) => s!.seq)).toEqual(want.map((_, i) => i + 1));
    expect(states.at(-1)).toEqual(p.state());
    a.close();
    b.close();
  });

  it('a sender whose data fails tells the trainer why, after the good batches', async () => {
    const l = await listen();
    const serving = serveFeed(l, (resume) => ({
      async *[Symbol.asyncIterator]() {
        for await (const b of source(resume)) {
          yield b;
          if (b.seq === 2) throw new Error('row group 1 of rm1.parquet is unreadable');
        }
      },
    }));
    const got: number[] = [];
    const err = await (async () => {
      for await (const b of connectFeed(() => connectTcp({ port: l.port }), { maxBatchBytes: 1 << 20 })) got.push(b.seq);
    })().catch((e: Error) => e);
    expect(String(err)).toMatch(/the sender failed \(last batch received: 2\): row group 1 of rm1\.parquet is unreadable/);
    expect(got).toEqual([0, 1, 2]);
    await expect(serving).rejects.toThrow(/unreadable/);
  });

  it('a resume state from another plan fails both ends with the reason', async () => {
    const l = await listen();
    const serving = serveFeed(l, source);
    const other = { version: 1 as const, epoch: 0, window: 0, offset: 400, seq: 2, seed: null, fingerprint: 'not-this-plan' };
    const err = await (async () => {
      for await (const _ of connectFeed(() => connectTcp({ port: l.port }), { resume: other })) {
        /* none */
      }
    })().catch((e: Error) => e);
    expect(String(err)).toMatch(/the sender failed \(last batch received: none\): .*fingerprint differs/);
    await expect(serving).rejects.toThrow(/fingerprint differs/);
  });

  it('without resume states in the batches, a dropped trainer is told it cannot resume', async () => {
    const l = await listen();
    const net = await relay(l.port);
    // A plain generator of the pipeline's batches: no state() to put in them.
    void serveFeed(
      l,
      () =>
        (async function* () {
          yield* pipeline(plan, { input });
        })(),
      { reconnectWithinMs: 2000 },
    ).catch(() => undefined);
    const got: number[] = [];
    const err = await (async () => {
      for await (const b of connectFeed(() => connectTcp({ port: net.port }), { maxBatchBytes: 1 << 20 })) {
        got.push(b.seq);
        if (b.seq === 4) net.cut();
      }
    })().catch((e: Error) => e);
    // Batches that had fully arrived before the cut are still taken (how many depends on the reads' timing).
    const last = got[got.length - 1]!;
    expect(last).toBeGreaterThanOrEqual(4);
    expect(got).toEqual([...Array(last + 1).keys()]);
    expect(String(err)).toMatch(new RegExp(`cannot resume after batch ${last}: the sender's batches carry no resume state`));
  });

  it('a trainer that does not come back fails the sender after reconnectWithinMs', async () => {
    const l = await listen();
    const net = await relay(l.port);
    const serving = serveFeed(l, source, { reconnectWithinMs: 300 });
    // A trainer that gives up at the first drop (reconnects: 0), which comes after batch 0.
    const trainer = (async () => {
      for await (const b of connectFeed(() => connectTcp({ port: net.port }), { maxBatchBytes: 1 << 20, reconnects: 0 })) if (b.seq === 0) net.cut();
    })();
    await expect(trainer).rejects.toBeInstanceOf(PeerLostError);
    const err = await serving.catch((e: Error) => e);
    expect(err).toBeInstanceOf(PeerLostError);
    expect(String(err)).toMatch(/did not connect again within 300 ms/);
  });

  it('a connection that is not a feed trainer is told so and dropped; the trainer after it is served', async () => {
    const l = await listen();
    const serving = serveFeed(l, source);
    // A client that speaks the transport but sends something other than a hello.
    const stray = await connectTcp({ port: l.port });
    stray.postRecv(1, stray.registerMemory(4096));
    stray.postSend(2, new TextEncoder().encode('GET / HTTP/1.1'));
    let reply = await stray.cq.next(AbortSignal.timeout(5000));
    while (reply.opcode !== 'recv') reply = await stray.cq.next(AbortSignal.timeout(5000));
    const m = decodeBatchMessage(reply.data!, true);
    expect(m).toEqual({ kind: 'error', message: expect.stringMatching(/not a feed connection: not a Sluice batch message \(bad magic\)/) });
    stray.close();
    const got: string[] = [];
    const strays: unknown[] = [];
    for await (const b of connectFeed(() => connectTcp({ port: l.port }), { maxBatchBytes: 1 << 20 })) {
      got.push(digest(b));
      // Two more stray clients while the trainer streams: one that says nothing and leaves, one
      // that sends garbage. Neither disturbs the stream.
      if (b.seq === 3) strays.push(connectTcp({ port: l.port }).then((q) => q.abandon()));
      // The loop waits for this one's answer, so the stream is still going when it comes.
      if (b.seq === 5) {
        strays.push(
          await connectTcp({ port: l.port }).then(async (q) => {
            q.postRecv(1, q.registerMemory(4096));
            q.postSend(2, new Uint8Array(64).fill(7));
            let c = await q.cq.next(AbortSignal.timeout(5000));
            while (c.opcode !== 'recv') c = await q.cq.next(AbortSignal.timeout(5000));
            q.close();
            return decodeBatchMessage(c.data!, true).kind;
          }),
        );
      }
    }
    expect(got).toEqual(want);
    expect(await serving).toMatchObject({ connections: 1, complete: true });
    expect(await Promise.all(strays)).toEqual([undefined, 'error']);
  });

  it('a plain fromTransport trainer, which says no hello, is told to use connectFeed', async () => {
    const l = await listen();
    void serveFeed(l, source, { helloWithinMs: 200 }).catch(() => undefined);
    const err = await (async () => {
      for await (const _ of fromTransport(await connectTcp({ port: l.port }), { maxBatchBytes: 1 << 20 })) {
        /* none */
      }
    })().catch((e: Error) => e);
    expect(String(err)).toMatch(
      /the sender failed \(last batch received: none\): not a feed connection: it said nothing within 200 ms \(a trainer connects with connectFeed\)/,
    );
  });
});
