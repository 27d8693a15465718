// Pushdown under shuffle: the decode threads compute the per-value features before the shuffle
// permutes the rows. For a given seed the batch sequence must stay exactly what it was before
// (when shuffled reads never pushed down): the same permutation, windows, chunk cuts, cursors,
// error locations and epoch ends. Checked against `pushdown: false` (the raw-column path, which
// is unchanged) and against digests of the batches recorded before the change
// (shuffle-golden.json; SLUICE_RECORD_GOLDEN=1 rewrites it).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { fit, pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { DecoderPool, type PipelineMetrics } from '@sluice/core/internal';
import { getPreset } from '@sluice/core/gen';
import { Table, tableToIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { i32, str, tempDir, writeParquet } from '../helpers.js';
import { SMALL_PRESETS, writePresetFile } from '../presets.js';

const dir = tempDir('sluice-shuffle-pd-');
const GOLDEN = fileURLToPath(new URL('./shuffle-golden.json', import.meta.url));
const record = process.env.SLUICE_RECORD_GOLDEN === '1';
const golden: Record<string, string> = !record && existsSync(GOLDEN) ? (JSON.parse(readFileSync(GOLDEN, 'utf8')) as Record<string, string>) : {};
const recorded: Record<string, string> = {};

const presets = SMALL_PRESETS;
const files = new Map<string, string>();

/** A digest of every batch: its place in the sequence, its end cursor and every array, bit for bit. */
function digest(batches: readonly Batch[]): string {
  const h = createHash('sha256');
  const bytes = (a: ArrayBufferView | null): void => {
    h.update(a === null ? 'null' : new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  };
  for (const b of batches) {
    h.update(JSON.stringify([b.seq, b.epoch, b.rows, b.end, b.dense.names, b.sparse.keys]));
    bytes(b.dense.data);
    bytes(b.sparse.lengths);
    bytes(b.sparse.offsets);
    bytes(b.sparse.values);
    bytes(b.labels);
  }
  return h.digest('hex');
}

/** Copies of a batch's arrays (a released batch's memory may be reused). */
const keep = (b: Batch): Batch => ({
  ...b,
  dense: { ...b.dense, data: b.dense.data.slice() },
  sparse: { ...b.sparse, lengths: b.sparse.lengths.slice(), offsets: b.sparse.offsets.slice(), values: b.sparse.values.slice() },
  labels: b.labels?.slice() ?? null,
});

type Backend = { name: 'cpu'; workers: number; pushdown: boolean };
const cpu = (pushdown: boolean): Backend => ({ name: 'cpu', workers: 2, pushdown });

/** Every batch of a run, released as a trainer would (so packs are laid out in reused memory). */
async function run(
  plan: PlanSpec,
  input: string,
  opts: { resume?: unknown; limit?: number } = {},
): Promise<{ batches: Batch[]; state: unknown; metrics: PipelineMetrics }> {
  const p = pipeline(plan, { input, ...(opts.resume !== undefined ? { resume: opts.resume as never } : {}) });
  const batches: Batch[] = [];
  for await (const b of p) {
    batches.push(keep(b));
    b.release?.();
    if (batches.length >= (opts.limit ?? Infinity)) break;
  }
  return { batches, state: JSON.parse(JSON.stringify(p.state())) as unknown, metrics: p.metrics() };
}

function expectGolden(key: string, d: string): void {
  recorded[key] = d;
  if (record) return;
  expect(golden[key], `golden digest ${key} (SLUICE_RECORD_GOLDEN=1 records them)`).toBeDefined();
  expect(d, key).toBe(golden[key]);
}

// Windows of several row groups (merged and permuted on the main thread), and windows of one row
// group each (permuted by the decoder that reads it).
const SHUFFLE = { seed: 42, bufferRows: 1000 };
const SHUFFLE_RG = { seed: 42, bufferRows: 100 };
const SHUFFLES = [
  ['unshuffled', null],
  ['shuffled', SHUFFLE],
  ['shuffled-rg', SHUFFLE_RG],
] as const;
const planOf = (preset: string, over: Partial<PlanSpec>): PlanSpec => ({ ...getPreset(preset).defaultPlan(), batchSize: 256, ...over });

beforeAll(async () => {
  for (const p of presets) {
    files.set(p, await writePresetFile(dir, p));
  }
}, 300_000);

describe('pushdown under shuffle', () => {
  it.for(presets)('%s: the same batches with pushdown on and off, shuffled (2 epochs) and unshuffled, as before', async (preset) => {
    const f = files.get(preset)!;
    for (const [name, shuffle] of SHUFFLES) {
      const plan = (pushdown: boolean): PlanSpec => planOf(preset, { shuffle: shuffle ?? false, epochs: shuffle ? 2 : 1, backend: cpu(pushdown) });
      const key = `${preset}/${name}`;
      const off = (await run(plan(false), f)).batches;
      expectGolden(key, digest(off));
      // Recording runs on the code before the change: only the digests count.
      if (record) continue;
      // Windows of several row groups, laid out by 2 decoders: they place the ids (batch/window-ids.ts).
      const placing = vi.spyOn(DecoderPool.prototype, 'placeIds');
      const reading = vi.spyOn(DecoderPool.prototype, 'readRowGroupColumns');
      const { batches: on, metrics } = await run(plan(true), f);
      if (name === 'shuffled' && preset.startsWith('rm')) {
        expect(placing, `${preset}: ids placed by the decoders`).toHaveBeenCalled();
        // And the dense rows: each read given its place in the window's chunks came back without them.
        const placed = reading.mock.calls.flatMap((c, i) =>
          c[6]?.densePlace !== undefined ? [reading.mock.results[i]!.value as ReturnType<DecoderPool['readRowGroupColumns']>] : [],
        );
        expect(placed.length, `${preset}: reads given a densePlace`).toBeGreaterThan(0);
        for (const r of await Promise.all(placed)) expect(r.packs?.[0]?.densePlaced, `${preset}: dense rows placed by the decoder`).toBe(true);
      }
      reading.mockRestore();
      if (shuffle === null) expect(placing).not.toHaveBeenCalled();
      placing.mockRestore();
      expect(on.length).toBe(off.length);
      // The reader computed the pushed-down features (all of them for the RM presets, which
      // are then laid out as batches without the backend; rap-plan2/3 leave oneHot, ngram and
      // mapId features to it, whose raw inputs the shuffle permutes the same way).
      expect(metrics.pushdown?.computedInReader, `${preset}: features computed in the reader`).toBeGreaterThan(0);
      expect(metrics.pushdown?.computedInPipeline).toBe(0);
      if (preset.startsWith('rm')) expect(metrics.packedChunks).toBeGreaterThan(0);
      expect(digest(on), key).toBe(digest(off));
    }
  });

  it.for(['rm1', 'rm5', 'rap-plan2'])('%s: shards (rank 1 of 2) the same with pushdown on and off', async (preset) => {
    const f = files.get(preset)!;
    const plan = (pushdown: boolean): PlanSpec => planOf(preset, { shuffle: SHUFFLE, shard: { rank: 1, worldSize: 2 }, backend: cpu(pushdown) });
    const off = digest((await run(plan(false), f)).batches);
    expectGolden(`${preset}/shard1of2`, off);
    expect(digest((await run(plan(true), f)).batches)).toBe(off);
  });

  it.for([
    ['rm1', SHUFFLE],
    ['rm1', SHUFFLE_RG],
    ['rap-plan3', SHUFFLE],
  ] as const)('%s: resumes from state() mid-window and mid-epoch to the same batches (%o)', async ([preset, shuffle]) => {
    const f = files.get(preset)!;
    const plan = planOf(preset, { shuffle, epochs: 2, backend: cpu(true) });
    const full = (await run(plan, f)).batches;
    expect(digest(full)).toBe(digest((await run(planOf(preset, { shuffle, epochs: 2, backend: cpu(false) }), f)).batches));
    const perEpoch = full.filter((b) => b.epoch === 0).length;
    // 1: inside the first window; 5: a later window, mid-window; perEpoch: the start of epoch 1.
    for (const k of [1, 5, perEpoch, perEpoch + 2]) {
      const head = await run(plan, f, { limit: k });
      const cursor = (head.state as { epoch: number; window: number; offset: number }) ?? null;
      expect(cursor, `state after ${k} batches`).not.toBeNull();
      // The first resume points lie inside a window (256 rows into one of 1400, say).
      if (k < perEpoch) expect(cursor.offset, `offset after ${k} batches`).toBeGreaterThan(0);
      const rest = (await run(plan, f, { resume: head.state })).batches;
      expect(digest([...head.batches, ...rest]), `resumed after ${k} batches at ${JSON.stringify(cursor)}`).toBe(digest(full));
    }
  });

  it.for([500, 200])('reports a value the ops reject with the same words and row, shuffled (bufferRows %i), as without pushdown', async (bufferRows) => {
    // Row 777 (row group 2, row 177) is not hex; the shuffle puts it mid-window.
    const f = writeParquet(
      join(dir, 'badhex.parquet'),
      { C1: str(Array.from({ length: 900 }, (_, i) => (i === 777 ? 'xyz' : ((i * 2654435761) % 65536).toString(16)))) },
      300,
    );
    const plan = (pushdown: boolean): PlanSpec => ({
      batchSize: 100,
      shuffle: { seed: 9, bufferRows },
      backend: cpu(pushdown),
      features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 1000 }] }],
    });
    const outcome = async (pushdown: boolean): Promise<{ error: string; before: string }> => {
      const got: Batch[] = [];
      try {
        for await (const b of pipeline(plan(pushdown), { input: f })) got.push(keep(b));
        return { error: 'no error', before: digest(got) };
      } catch (e) {
        return { error: (e as Error).message, before: digest(got) };
      }
    };
    const off = await outcome(false);
    expect(off.error).toMatch(/row group 2, row 777, column C1, feature C1, op hex2int \(#1\)/);
    const on = await outcome(true);
    expect(on.error).toBe(off.error);
    // The batches before the failing one came out as they did.
    expect(on.before).toBe(off.before);
  });

  it('keeps vocab and cross features on the backend, their raw inputs permuted as the computed columns', async () => {
    const f = files.get('rm1')!;
    const plan = (pushdown: boolean): PlanSpec => ({
      batchSize: 256,
      label: 'label',
      shuffle: SHUFFLE,
      epochs: 2,
      backend: cpu(pushdown),
      features: [
        { name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
        { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 5000 }] },
        { name: 'C2', input: 'C2', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab', oov: 0, minCount: 2 }] },
        {
          name: 'X',
          input: 'I2',
          kind: 'sparse',
          ops: [
            { op: 'fillNull', value: 0 },
            { op: 'modulus', m: 7 },
            { op: 'cross', inputs: ['C1'], max: 4096 },
          ],
        },
        { name: 'C3', input: 'C3', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'modulus', m: 1000 }] },
      ],
    });
    const fitState = (await fit(plan(false), { input: f })).state;
    const collectWith = async (pushdown: boolean): Promise<{ batches: Batch[]; metrics: PipelineMetrics }> => {
      const p = pipeline(plan(pushdown), { input: f, fitState });
      const batches: Batch[] = [];
      for await (const b of p) batches.push(keep(b));
      return { batches, metrics: p.metrics() };
    };
    const off = digest((await collectWith(false)).batches);
    const { batches, metrics } = await collectWith(true);
    expect(digest(batches)).toBe(off);
    // I1 and C3 from the reader; C1 (crossed by name), C2 (vocab) and X on the backend.
    expect(metrics.pushdown?.derived).toBe(2);
    expect(metrics.pushdown?.computedInPipeline).toBe(0);
  });

  it('computes on this thread the features of row groups the reader leaves raw (PLAIN pages), with the same batches', async () => {
    // Without a dictionary the reader may leave C1 raw; the window's derived column is then
    // computed here before the permutation, and the batches are still those of pushdown off.
    const n = 2000;
    const table = new Table({
      label: i32(Array.from({ length: n }, (_, i) => i % 2)),
      C1: str(Array.from({ length: n }, (_, i) => (i % 13 === 0 ? null : ((i * 2654435761) % 4294967296).toString(16)))),
      I1: i32(Array.from({ length: n }, (_, i) => (i * 7919) % 1000)),
    });
    const props = new pw.WriterPropertiesBuilder().setDictionaryEnabled(false).setMaxRowGroupSize(600).build();
    const f = join(dir, 'plain.parquet');
    writeFileSync(f, pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(table, 'stream')), props));
    const plan = (pushdown: boolean): PlanSpec => ({
      batchSize: 128,
      label: 'label',
      shuffle: { seed: 4, bufferRows: 1000 },
      epochs: 2,
      backend: cpu(pushdown),
      features: [
        { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 5000 }] },
        { name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'log', offset: 1 }] },
      ],
    });
    const off = digest((await run(plan(false), f)).batches);
    const { batches, metrics } = await run(plan(true), f);
    expect(digest(batches)).toBe(off);
    expect(metrics.packedChunks).toBeGreaterThan(0);
  });

  it('keeps the golden digests file in step (records it with SLUICE_RECORD_GOLDEN=1)', () => {
    if (record) {
      const all = { ...(existsSync(GOLDEN) ? (JSON.parse(readFileSync(GOLDEN, 'utf8')) as Record<string, string>) : {}), ...recorded };
      writeFileSync(GOLDEN, JSON.stringify(all, Object.keys(all).sort(), 2) + '\n');
    } else expect(Object.keys(golden).length).toBeGreaterThan(0);
  });
});
