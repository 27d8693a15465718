import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DecoderPool, idleDecoders, prestartDecoders } from '../../src/reader/decoder-pool.js';
import { openDataset } from '@sluice/core/internal';
import { pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { tempDir, writeSmall } from '../helpers.js';

const plan: PlanSpec = {
  batchSize: 100,
  label: 'label',
  features: [
    { name: 'id', input: 'id', kind: 'dense' },
    { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 1000 }] },
  ],
};

async function ids(input: string): Promise<number[]> {
  const out: number[] = [];
  for await (const b of pipeline(plan, { input }) as AsyncIterable<Batch>) for (let r = 0; r < b.rows; r++) out.push(b.dense.data[r * b.dense.dim]!);
  return out;
}

describe('decode workers kept warm between pools', () => {
  it('a closed pool leaves its idle workers for the next one, which reuses them', async () => {
    const f = writeSmall(join(tempDir(), 'a.parquet'), 500, 100);
    const a = new DecoderPool(2);
    await Promise.all([a.open(f), a.readRowGroup(f, 0, ['id']), a.readRowGroup(f, 1, ['id'])]);
    const before = idleDecoders();
    await a.close();
    expect(idleDecoders()).toBe(before + 2);
    const b = new DecoderPool(1);
    const meta = await b.open(f);
    expect(meta.rowGroups).toEqual([100, 100, 100, 100, 100]);
    await b.readRowGroup(f, 2, ['id']);
    expect(idleDecoders()).toBe(before + 1); // one of them is working for b now
    await b.close();
    expect(idleDecoders()).toBe(before + 2);
  });

  it('a parked worker serves only a pool whose decoder settings (SLUICE_ZSTD, …) are those it started with', async () => {
    const f = writeSmall(join(tempDir(), 'env.parquet'), 200, 100);
    // At least one worker with this process's settings parked.
    const a = new DecoderPool(1);
    await a.readRowGroup(f, 0, ['id']);
    await a.close();
    const before = idleDecoders();
    expect(before).toBeGreaterThan(0);
    process.env.SLUICE_ZSTD = 'wasm';
    try {
      const b = new DecoderPool(1);
      await b.readRowGroup(f, 0, ['id']);
      // Every parked worker read the old settings as it started: b started its own.
      expect(idleDecoders()).toBe(before);
      await b.close();
      expect(idleDecoders()).toBe(before + 1);
    } finally {
      delete process.env.SLUICE_ZSTD;
    }
    const c = new DecoderPool(1);
    await c.readRowGroup(f, 1, ['id']);
    expect(idleDecoders()).toBe(before); // one started with the old settings, not b's
    await c.close();
  });

  it('prestartDecoders parks started workers for the next pools, and tops up only to the number asked', async () => {
    const f = writeSmall(join(tempDir(), 'p.parquet'), 300, 100);
    const before = idleDecoders();
    prestartDecoders(before + 2);
    expect(idleDecoders()).toBe(before + 2);
    prestartDecoders(before + 1); // already that many idle: starts none
    expect(idleDecoders()).toBe(before + 2);
    const a = new DecoderPool(2);
    await Promise.all([a.open(f), a.readRowGroup(f, 0, ['id']), a.readRowGroup(f, 1, ['id'])]);
    expect(idleDecoders()).toBe(before); // both taken, no third started
    await a.close();
    expect(idleDecoders()).toBe(before + 2);
    // A prestarted worker reads like any other: the rows come back in order.
    expect(await ids(f)).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });

  it('SLUICE_DECODER_IDLE_MS sets how long a parked worker waits; a bad value warns and the default applies', async () => {
    const f = writeSmall(join(tempDir(), 'idle.parquet'), 200, 100);
    const saved = process.env.SLUICE_DECODER_IDLE_MS;
    try {
      process.env.SLUICE_DECODER_IDLE_MS = '50';
      const a = new DecoderPool(1);
      await a.readRowGroup(f, 0, ['id']);
      const before = idleDecoders();
      await a.close();
      expect(idleDecoders()).toBe(before + 1);
      await new Promise((r) => setTimeout(r, 400));
      // Ours ended after 50 ms (others parked by earlier tests may end too, never join).
      expect(idleDecoders()).toBeLessThanOrEqual(before);

      process.env.SLUICE_DECODER_IDLE_MS = 'soon';
      const warned = new Promise<Error>((resolve) => process.once('warning', resolve));
      const b = new DecoderPool(1);
      await b.readRowGroup(f, 1, ['id']);
      const before2 = idleDecoders();
      await b.close();
      expect((await warned).message).toMatch(/SLUICE_DECODER_IDLE_MS must be a number of milliseconds >= 0, got "soon"; using 10000/);
      expect(idleDecoders()).toBe(before2 + 1); // parked for the default 10 s
    } finally {
      if (saved === undefined) delete process.env.SLUICE_DECODER_IDLE_MS;
      else process.env.SLUICE_DECODER_IDLE_MS = saved;
    }
  });

  it('a reused worker forgets the files it had open: a file rewritten in place is read afresh', async () => {
    const dir = tempDir();
    const f = join(dir, 'same.parquet');
    writeSmall(f, 300, 100);
    const first = await ids(f);
    expect(first).toHaveLength(300);
    expect(idleDecoders()).toBeGreaterThan(0);
    writeSmall(f, 700, 250); // other rows and row groups at the same path
    const second = await ids(f);
    expect(second).toEqual(Array.from({ length: 700 }, (_, i) => i));
  });

  it('remembers a footer while the file is unchanged, and reads it again once it changes', async () => {
    const f = join(tempDir(), 'footer.parquet');
    writeSmall(f, 400, 100);
    const a = new DecoderPool(1);
    const m1 = await a.open(f);
    const m2 = await new DecoderPool(1).open(f);
    expect(m2, 'the same footer, not read again').toBe(m1);
    await new Promise((r) => setTimeout(r, 20));
    writeSmall(f, 450, 150);
    const m3 = await a.open(f);
    expect(m3).not.toBe(m1);
    expect(m3.rowGroups).toEqual([150, 150, 150]);
    await a.close();
  });

  it('a pool closed in the middle of a read ends that worker instead of parking it', async () => {
    const f = writeSmall(join(tempDir(), 'b.parquet'), 2000, 1000);
    const before = idleDecoders();
    const p = new DecoderPool(1);
    const read = expect(p.readRowGroup(f, 0, ['id', 'C1'])).rejects.toThrow(/decoder closed/);
    await p.close();
    await read;
    expect(idleDecoders()).toBeLessThanOrEqual(before);
  });
});

describe('openDataset', () => {
  it('takes one path as a string, as it takes a list', async () => {
    // A string used to be iterated as one-character patterns: "/" globbed the whole disk.
    const f = writeSmall(join(tempDir(), 'one.parquet'), 300, 100);
    const pool = new DecoderPool(1);
    try {
      const one = await openDataset(f, pool);
      const list = await openDataset([f], pool);
      expect(one.totalRows).toBe(300);
      expect(one.files.map((x) => x.source)).toEqual(list.files.map((x) => x.source));
    } finally {
      await pool.close();
    }
  });
});
