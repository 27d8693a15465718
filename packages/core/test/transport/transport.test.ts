// One suite, three transports: in-process, SharedArrayBuffer rings, TCP. Every test states a
// rule of the queue-pair contract and checks it on each implementation alike.
import { afterEach, describe, expect, it } from 'vitest';
import {
  Endpoint,
  TransportError,
  connectTcp,
  decodeBatchMessage,
  encodeBatch,
  fromTransport,
  inProcessPair,
  listenTcp,
  sabChannel,
  sabQueuePair,
  toTransport,
  type Completion,
  type CompletionQueue,
} from '@sluice/core/transport';
import { type Batch } from '@sluice/core';

interface Pair {
  a: Endpoint;
  b: Endpoint;
  cleanup(): Promise<void>;
}

const IMPLS: Array<[string, () => Promise<Pair>]> = [
  [
    'in-process',
    async () => {
      const [a, b] = inProcessPair();
      return { a, b, cleanup: async () => undefined };
    },
  ],
  // Receives in the shared heap: a send is copied once, straight into the posted receive.
  [
    'shared memory',
    async () => {
      const [pa, pb] = sabChannel(1 << 12);
      return { a: sabQueuePair(pa), b: sabQueuePair(pb), cleanup: async () => undefined };
    },
  ],
  // No heap: every message goes through a small ring, wraps around it, and the writer waits for room.
  [
    'shared-memory ring only',
    async () => {
      const [pa, pb] = sabChannel(1 << 12, 0);
      return { a: sabQueuePair(pa), b: sabQueuePair(pb), cleanup: async () => undefined };
    },
  ],
  [
    'tcp',
    async () => {
      const l = await listenTcp({ port: 0 });
      const [a, b] = await Promise.all([connectTcp({ port: l.port }), l.accept()]);
      return { a, b, cleanup: () => l.close() };
    },
  ],
];

async function take(cq: CompletionQueue, n: number): Promise<Completion[]> {
  const out: Completion[] = [];
  while (out.length < n) out.push(await cq.next(AbortSignal.timeout(5000)));
  return out;
}

/** Lets queued frames move (a few turns of the event loop and the network). */
const settle = (ms = 30): Promise<void> => new Promise((r) => setTimeout(r, ms));

const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const payload = (c: Completion): number[] => {
  const all: number[] = [];
  for (const d of c.data ?? []) all.push(...d);
  return all;
};

function batch(seq: number, rows: number): Batch {
  const dim = 3;
  const keys = ['c1', 'c2'];
  const lengths = Int32Array.from({ length: keys.length * rows }, (_, i) => (i + seq) % 3);
  const offsets = new Int32Array(keys.length + 1);
  for (let k = 0; k < keys.length; k++) offsets[k + 1] = offsets[k]! + lengths.subarray(k * rows, (k + 1) * rows).reduce((a, x) => a + x, 0);
  return {
    seq,
    epoch: 0,
    rows,
    dense: {
      names: ['a', 'b', 'c'],
      features: [
        { name: 'a', offset: 0, width: 1, vector: false },
        { name: 'b', offset: 1, width: 2, vector: true },
      ],
      dim,
      data: Float32Array.from({ length: rows * dim }, (_, i) => i * 0.5 + seq),
    },
    sparse: { keys, lengths, offsets, values: BigInt64Array.from({ length: offsets[keys.length]! }, (_, i) => BigInt(i) * 1_000_000_007n - BigInt(seq)) },
    labels: Float32Array.from({ length: rows }, (_, i) => (i + seq) % 2),
    end: { epoch: 0, window: 0, offset: (seq + 1) * rows },
  };
}

async function* batches(n: number, rows: number): AsyncGenerator<Batch> {
  for (let s = 0; s < n; s++) yield batch(s, rows);
}

describe.each(IMPLS)('transport: %s', (_name, open) => {
  let pair: Pair;
  afterEach(async () => {
    pair.a.close();
    pair.b.close();
    await pair.cleanup();
  });

  it('delivers a gather list into the posted receive, with its immediate, and completes both sides', async () => {
    pair = await open();
    const { a, b } = pair;
    const mr = b.registerMemory(64);
    b.postRecv(10, mr, 8, 16);
    a.postSend(1, [bytes(1, 2), bytes(3), bytes(4, 5, 6)], { imm: 0xdeadbeef });
    const [r] = await take(b.cq, 1);
    expect(r).toMatchObject({ wrId: 10, opcode: 'recv', status: 'success', byteLength: 6, imm: 0xdeadbeef });
    expect(payload(r!)).toEqual([1, 2, 3, 4, 5, 6]);
    const [s] = await take(a.cq, 1);
    expect(s).toMatchObject({ wrId: 1, opcode: 'send', status: 'success', byteLength: 6 });
  });

  it('never overruns the receiver: sends beyond the posted receives wait for credit, in order', async () => {
    pair = await open();
    const { a, b } = pair;
    const mr = b.registerMemory(5 * 8);
    b.postRecv(0, mr, 0, 8);
    b.postRecv(1, mr, 8, 8);
    for (let i = 0; i < 5; i++) a.postSend(100 + i, bytes(i, i, i));
    const first = await take(b.cq, 2);
    await settle();
    expect(first.map((c) => [c.wrId, payload(c)[0]])).toEqual([
      [0, 0],
      [1, 1],
    ]);
    expect(b.cq.poll()).toEqual([]); // the third send had no credit
    expect(a.credits).toBe(0);
    expect(a.queuedSends).toBe(3);
    expect((await take(a.cq, 2)).map((c) => c.wrId)).toEqual([100, 101]);
    for (let i = 2; i < 5; i++) b.postRecv(i, mr, i * 8, 8);
    const rest = await take(b.cq, 3);
    expect(rest.map((c) => [c.wrId, payload(c)[0]])).toEqual([
      [2, 2],
      [3, 3],
      [4, 4],
    ]);
    expect((await take(a.cq, 3)).map((c) => c.wrId)).toEqual([102, 103, 104]);
    expect(a.queuedSends).toBe(0);
  });

  it('fails a send bigger than the receive it would use, and keeps the credit for the next', async () => {
    pair = await open();
    const { a, b } = pair;
    const mr = b.registerMemory(4);
    b.postRecv(7, mr);
    await settle();
    a.postSend(1, new Uint8Array(8));
    const [e] = await take(a.cq, 1);
    expect(e).toMatchObject({ wrId: 1, status: 'length-error', byteLength: 0 });
    expect(a.credits).toBe(1);
    a.postSend(2, bytes(9, 8, 7));
    expect(payload((await take(b.cq, 1))[0]!)).toEqual([9, 8, 7]);
  });

  it('completes out of posting order: a write overtakes a send waiting for credit', async () => {
    pair = await open();
    const { a, b } = pair;
    const target = b.registerMemory(16, { remoteWrite: true });
    a.postSend(1, bytes(42)); // no receive posted yet: waits
    a.postWrite(2, [bytes(1, 2), bytes(3, 4)], { key: target.key, offset: 4 });
    a.postWrite(3, bytes(1), { key: target.key + 99, offset: 0 }); // no such region
    a.postWrite(4, bytes(1, 2), { key: target.key, offset: 15 }); // past the end
    const early = await take(a.cq, 3);
    expect(early.map((c) => [c.wrId, c.opcode, c.status])).toEqual([
      [2, 'write', 'success'],
      [3, 'write', 'remote-access-error'],
      [4, 'write', 'remote-access-error'],
    ]);
    expect([...target.bytes]).toEqual([0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(a.queuedSends).toBe(1);
    b.postRecv(5, b.registerMemory(8));
    expect((await take(a.cq, 1))[0]).toMatchObject({ wrId: 1, opcode: 'send', status: 'success' });
    expect(payload((await take(b.cq, 1))[0]!)).toEqual([42]);
  });

  it('a write with an immediate consumes a posted receive and announces itself there', async () => {
    pair = await open();
    const { a, b } = pair;
    const target = b.registerMemory(8, { remoteWrite: true });
    b.postRecv(3, b.registerMemory(0));
    a.postWrite(9, bytes(5, 6), { key: target.key, offset: 2 }, { imm: 77 });
    expect((await take(b.cq, 1))[0]).toMatchObject({ wrId: 3, opcode: 'write-imm', status: 'success', byteLength: 2, imm: 77 });
    expect([...target.bytes.subarray(2, 4)]).toEqual([5, 6]);
    expect((await take(a.cq, 1))[0]).toMatchObject({ wrId: 9, opcode: 'write', status: 'success' });
  });

  it('when the peer goes away, unfinished work on the survivor completes flushed and new work is refused', async () => {
    pair = await open();
    const { a, b } = pair;
    const mr = b.registerMemory(8);
    b.postRecv(0, mr);
    for (let i = 1; i <= 3; i++) a.postSend(i, bytes(i));
    a.postRecv(50, a.registerMemory(8));
    expect((await take(b.cq, 1))[0]!.wrId).toBe(0);
    expect((await take(a.cq, 1))[0]).toMatchObject({ wrId: 1, status: 'success' });
    b.abandon(); // no goodbye: a crash
    const flushed = await take(a.cq, 3);
    expect(flushed.map((c) => [c.wrId, c.opcode, c.status])).toEqual([
      [2, 'send', 'flushed'],
      [3, 'send', 'flushed'],
      [50, 'recv', 'flushed'],
    ]);
    expect(a.state).toBe('error');
    expect(() => a.postSend(4, bytes(4))).toThrow(TransportError);
    await expect(a.cq.next()).rejects.toThrow(/went away/);
  });

  it("a graceful close flushes the peer's posted receives", async () => {
    pair = await open();
    const { a, b } = pair;
    b.postRecv(1, b.registerMemory(8));
    await settle();
    a.close();
    expect((await take(b.cq, 1))[0]).toMatchObject({ wrId: 1, opcode: 'recv', status: 'flushed' });
    expect(b.state).toBe('error');
    expect(() => a.postRecv(2, a.registerMemory(1))).toThrow(/closed/);
  });

  it('rejects receives outside their region and regions of another queue pair', async () => {
    pair = await open();
    const { a, b } = pair;
    const mr = b.registerMemory(8);
    expect(() => b.postRecv(1, mr, 4, 8)).toThrow(/outside region/);
    expect(() => b.postRecv(1, a.registerMemory(8))).toThrow(/not registered/);
  });

  it('toTransport / fromTransport carry pipeline batches intact and end cleanly', async () => {
    pair = await open();
    const { a, b } = pair;
    const sending = toTransport(a, batches(7, 50), { window: 2 });
    const got: Batch[] = [];
    for await (const x of fromTransport(b, { slots: 2, maxBatchBytes: 8192, copy: true })) got.push(x);
    expect(await sending).toMatchObject({ batches: 7 });
    expect(got.map((x) => x.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    for (const x of got) {
      const want = batch(x.seq, 50);
      expect(x.rows).toBe(50);
      expect([...x.dense.data]).toEqual([...want.dense.data]);
      expect([...x.sparse.lengths]).toEqual([...want.sparse.lengths]);
      expect([...x.sparse.offsets]).toEqual([...want.sparse.offsets]);
      expect([...x.sparse.values]).toEqual([...want.sparse.values]);
      expect([...x.labels!]).toEqual([...want.labels!]);
      expect(x.dense.features).toEqual(want.dense.features);
      expect(x.end).toEqual(want.end);
    }
  });

  it('toTransport releases each batch once the peer has its own copy (not in-process), unless told not to', async () => {
    for (const keep of [false, true]) {
      pair = await open();
      const { a, b } = pair;
      let released = 0;
      async function* counted(): AsyncGenerator<Batch> {
        for (let s = 0; s < 5; s++) {
          const x = batch(s, 20);
          // A release that checks the peer has the batch already: the receiver below counts it first.
          Object.defineProperty(x, 'release', {
            value: () => {
              expect(got).toBeGreaterThan(0);
              released++;
            },
          });
          yield x;
        }
      }
      let got = 0;
      const sending = toTransport(a, counted(), { window: 2, ...(keep ? { release: false } : {}) });
      for await (const _ of fromTransport(b, { slots: 2, maxBatchBytes: 4096 })) got++;
      await sending;
      expect(got).toBe(5);
      expect(released).toBe(keep || a.sharesBuffers ? 0 : 5);
      if (!keep) {
        a.close();
        b.close();
        await pair.cleanup();
      }
    }
  });

  it("a batch larger than the trainer's buffers fails the sender with a clear error", async () => {
    pair = await open();
    const { a, b } = pair;
    const recv = (async () => {
      for await (const _ of fromTransport(b, { slots: 1, maxBatchBytes: 1024 })) {
        /* none */
      }
    })();
    await expect(toTransport(a, batches(1, 500))).rejects.toThrow(/batch 0 is larger than the receive buffers/);
    a.close();
    // Closed on purpose, not lost: a reconnecting feed would not dial again.
    await expect(recv).rejects.toThrow(/sender closed the connection before the end of the stream/);
  });

  it('fromTransport fails when the sender dies mid-stream, naming the last batch it got', async () => {
    pair = await open();
    const { a, b } = pair;
    async function* dying(): AsyncGenerator<Batch> {
      yield batch(0, 10);
      yield batch(1, 10);
      await settle();
      a.abandon();
    }
    const sending = toTransport(a, dying()).catch((e: unknown) => e);
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const x of fromTransport(b, { maxBatchBytes: 4096 })) seen.push(x.seq);
      })(),
    ).rejects.toThrow(/last batch received: 1/);
    expect(seen).toEqual([0, 1]);
    expect(await sending).toBeInstanceOf(Error);
  });
});

describe('transport: batch messages', () => {
  /** A message as a receive buffer holds it: one piece. */
  const wire = (b: Batch): Uint8Array[] => [
    Buffer.concat(encodeBatch(b, { version: 1, fingerprint: 'f,"names":[]}', seed: null, epoch: 0, window: 0, offset: b.end.offset, seq: b.seq + 1 })),
  ];
  const decoded = (b: Batch): Batch => {
    const m = decodeBatchMessage(wire(b), true);
    if (m.kind !== 'batch') throw new Error(`not a batch: ${m.kind}`);
    expect(m.resume).toMatchObject({ fingerprint: 'f,"names":[]}', seq: b.seq + 1 });
    return m.batch;
  };
  const same = (x: Batch, y: Batch): void => {
    expect({
      ...x,
      dense: { ...x.dense, data: [...x.dense.data] },
      sparse: { ...x.sparse, lengths: [...x.sparse.lengths], offsets: [...x.sparse.offsets], values: [...x.sparse.values] },
      labels: [...x.labels!],
    }).toEqual({
      ...y,
      dense: { ...y.dense, data: [...y.dense.data] },
      sparse: { ...y.sparse, lengths: [...y.sparse.lengths], offsets: [...y.sparse.offsets], values: [...y.sparse.values] },
      labels: [...y.labels!],
    });
  };

  it("parses a stream's layout once: later batches share its names, features and keys, and a new layout is read afresh", () => {
    const a = [batch(0, 5), batch(1, 7), batch(2, 3)];
    const other = batch(3, 4);
    const b: Batch = { ...other, sparse: { ...other.sparse, keys: ['x', 'y'] }, dense: { ...other.dense, names: ['p', 'q', 'r'] } };
    const got = [...a, b, batch(4, 6)].map(decoded);
    [...a, b, batch(4, 6)].forEach((x, i) => same(got[i]!, x));
    expect(got[1]!.dense.names).toBe(got[0]!.dense.names);
    expect(got[2]!.sparse.keys).toBe(got[0]!.sparse.keys);
    expect(got[2]!.dense.features).toBe(got[0]!.dense.features);
    expect(got[3]!.sparse.keys).toEqual(['x', 'y']);
    expect(got[3]!.dense.names).toEqual(['p', 'q', 'r']);
    expect(got[4]!.sparse.keys).toEqual(['c1', 'c2']);
  });
});

describe('transport: in-process hand-off', () => {
  it("gives the trainer the sender's own arrays (zero copy)", async () => {
    const [a, b] = inProcessPair();
    const sent = batch(3, 20);
    async function* one(): AsyncGenerator<Batch> {
      yield sent;
    }
    const sending = toTransport(a, one());
    for await (const x of fromTransport(b, { slots: 1, maxBatchBytes: 4096 })) {
      expect(x.dense.data.buffer).toBe(sent.dense.data.buffer);
      expect(x.sparse.values.buffer).toBe(sent.sparse.values.buffer);
    }
    await sending;
  });
});

describe('transport: tcp', () => {
  it('messages several reads long arrive intact both ways, and a later read does not touch an earlier message', async () => {
    const l = await listenTcp({ port: 0 });
    // a connects: it reads into one buffer it reuses (1 MiB); b was accepted and reads Node's chunks.
    const [a, b] = await Promise.all([connectTcp({ port: l.port }), l.accept()]);
    const N = 3 << 20;
    const msg = (seed: number): Uint8Array => Uint8Array.from({ length: N }, (_, i) => (i * 31 + seed * 7) & 255);
    try {
      for (const [from, to] of [
        [b, a],
        [a, b],
      ] as const) {
        const mr = to.registerMemory(2 * N);
        to.postRecv(1, mr, 0, N);
        to.postRecv(2, mr, N, N);
        await settle();
        const one = msg(1);
        const two = msg(2);
        from.postSend(1, [one.subarray(0, 5), one.subarray(5)]);
        from.postSend(2, two);
        const got = await take(to.cq, 2);
        expect(got.map((c) => [c.wrId, c.byteLength])).toEqual([
          [1, N],
          [2, N],
        ]);
        expect(Buffer.compare(mr.bytes.subarray(0, N), one)).toBe(0);
        expect(Buffer.compare(mr.bytes.subarray(N), two)).toBe(0);
        await take(from.cq, 2);
      }
    } finally {
      a.close();
      b.close();
      await l.close();
    }
  });
});

describe('transport: shared memory', () => {
  it('copies a send once, into the receive posted in the shared heap: the ring carries only its header', async () => {
    const [pa, pb] = sabChannel(1 << 12);
    const a = sabQueuePair(pa);
    const b = sabQueuePair(pb);
    const mr = b.registerMemory(1 << 16);
    expect(mr.bytes.buffer).toBe(pb.heap);
    b.postRecv(1, mr, 64, 40_000);
    const big = Uint8Array.from({ length: 40_000 }, (_, i) => (i * 31) % 251); // ten times the ring
    await settle();
    a.postSend(1, [big.subarray(0, 123), big.subarray(123)]);
    const [r] = await take(b.cq, 1);
    expect(r).toMatchObject({ wrId: 1, status: 'success', byteLength: 40_000 });
    expect(r!.data![0]!.buffer).toBe(pb.heap);
    expect(r!.data![0]!.byteOffset).toBe(mr.bytes.byteOffset + 64);
    expect(Buffer.compare(r!.data![0]!, big)).toBe(0);
    const written = Atomics.load(new Int32Array(pa.tx, 0, 1), 0);
    expect(written).toBe(32); // one frame header, no payload
    a.close();
    b.close();
  });

  it('a send takes the credits that arrived while it copied, without waiting for a turn of the event loop', async () => {
    const [pa, pb] = sabChannel(1 << 12);
    const a = sabQueuePair(pa);
    const b = sabQueuePair(pb);
    const mr = b.registerMemory(3 * 64);
    b.postRecv(1, mr, 0, 64);
    b.postRecv(2, mr, 64, 64);
    await settle();
    expect(a.credits).toBe(2);
    // A third receive: its credit is in a's ring now, and a's reader has not run since.
    b.postRecv(3, mr, 128, 64);
    for (let i = 1; i <= 3; i++) a.postSend(i, bytes(i, i, i));
    expect(a.queuedSends).toBe(0);
    const got = await take(b.cq, 3);
    expect(got.map((c) => [c.wrId, payload(c)])).toEqual([
      [1, [1, 1, 1]],
      [2, [2, 2, 2]],
      [3, [3, 3, 3]],
    ]);
    a.close();
    b.close();
  });

  it('hands out heap memory once, takes it back on deregistration, and falls back to private memory when it is full', () => {
    const [pa] = sabChannel(1 << 12, 4096);
    const a = sabQueuePair(pa);
    const x = a.registerMemory(1000);
    const y = a.registerMemory(2000);
    expect(x.bytes.buffer).toBe(pa.heap);
    expect(y.bytes.buffer).toBe(pa.heap);
    expect(y.bytes.byteOffset % 64).toBe(0);
    const z = a.registerMemory(2000); // 1024 + 2048 used: no room left
    expect(z.bytes.buffer).not.toBe(pa.heap);
    a.deregisterMemory(x);
    a.deregisterMemory(y);
    const w = a.registerMemory(4096);
    expect(w.bytes.buffer).toBe(pa.heap);
    expect(w.bytes.byteOffset).toBe(0);
    a.close();
    expect(a.registerMemory(64).bytes.buffer).not.toBe(pa.heap); // the peer may still write into what it had
  });
});
