import { createHash } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultSlabRows, generateBatches, generateDataset, presetArrowSchema, type GenerateResult } from '../../src/gen/generate.js';
import { getPreset } from '../../src/gen/presets.js';
import { rawIdOfRank, type HexColumnSpec } from '../../src/gen/spec.js';
import { numericStats, readBack, tempDir, type ReadBack } from './util.js';

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');

describe('generateDataset rm1', () => {
  const ROWS = 250_000;
  let res: GenerateResult;
  let back: ReadBack;
  const progress: Array<[number, number]> = [];

  beforeAll(async () => {
    res = await generateDataset({ preset: 'rm1', rows: ROWS, out: join(dir, 'rm1.parquet'), onProgress: (d, t) => progress.push([d, t]) });
    back = await readBack(res.path);
  });

  it('returns rows, bytes, path and seconds, and reports progress', () => {
    expect(res.rows).toBe(ROWS);
    expect(res.path).toBe(join(dir, 'rm1.parquet'));
    expect(res.bytes).toBe(statSync(res.path).size);
    expect(res.seconds).toBeGreaterThan(0);
    expect(progress.at(-1)).toEqual([ROWS, ROWS]);
    expect(progress.every(([d], i) => i === 0 || d > progress[i - 1]![0])).toBe(true);
  });

  it('has the RM1 schema, the row count, ZSTD and 100k-row row groups', () => {
    const fields = back.table.schema.fields;
    expect(fields.map((f) => f.name)).toEqual([
      'label',
      ...Array.from({ length: 13 }, (_, i) => `I${i + 1}`),
      ...Array.from({ length: 26 }, (_, i) => `C${i + 1}`),
    ]);
    expect(String(fields[0]!.type)).toBe('Float32');
    expect(fields.slice(1, 14).every((f) => String(f.type) === 'Int32' && f.nullable)).toBe(true);
    expect(fields.slice(14).every((f) => String(f.type) === 'Utf8' && f.nullable)).toBe(true);
    expect(back.rows).toBe(ROWS);
    expect(back.table.numRows).toBe(ROWS);
    expect(back.rowGroups).toEqual([100_000, 100_000, 50_000]);
    expect(new Set(back.compression)).toEqual(new Set(['ZSTD']));
  });

  it('dense columns: ~10% nulls, some negatives, heavy-tailed counts', () => {
    for (let i = 1; i <= 13; i++) {
      const { nulls, values } = numericStats(back.table.getChild(`I${i}`)!);
      expect(nulls / ROWS).toBeGreaterThan(0.09);
      expect(nulls / ROWS).toBeLessThan(0.11);
      const neg = values.filter((v) => v < 0);
      expect(neg.length / ROWS).toBeGreaterThan(0.005);
      expect(neg.every((v) => v === -1 || v === -2)).toBe(true);
      const sorted = values.filter((v) => v >= 0).sort((a, b) => a - b);
      const median = sorted[sorted.length >> 1]!;
      expect(sorted.at(-1)!).toBeGreaterThan(20 * Math.max(median, 1)); // heavy tail
    }
  });

  it('label: float32 0/1 with ~25% positives', () => {
    const { nulls, values } = numericStats(back.table.getChild('label')!);
    expect(nulls).toBe(0);
    expect(values.every((v) => v === 0 || v === 1)).toBe(true);
    expect(values.reduce((a, b) => a + b, 0) / ROWS).toBeCloseTo(0.256, 2);
  });

  it('sparse columns: valid 8-char lowercase hex, a few % nulls, generator ids', () => {
    for (let i = 1; i <= 26; i++) {
      const v = back.table.getChild(`C${i}`)!;
      const spec = getPreset('rm1').columns.find((c) => c.name === `C${i}`) as HexColumnSpec;
      expect(v.nullCount / ROWS).toBeGreaterThan(spec.nullRate - 0.005);
      expect(v.nullCount / ROWS).toBeLessThan(spec.nullRate + 0.005);
      if (i > 3) continue;
      let ok = true;
      for (let r = 0; r < ROWS; r++) {
        const s = v.get(r) as string | null;
        if (s !== null) ok &&= /^[0-9a-f]{8}$/.test(s);
      }
      expect(ok, `C${i}`).toBe(true);
    }
    // The most frequent id of a column is rank 0 of its sampler.
    const c1 = getPreset('rm1').columns.find((c) => c.name === 'C1') as HexColumnSpec;
    const counts = new Map<string, number>();
    const v = back.table.getChild('C1')!;
    for (let r = 0; r < ROWS; r++) {
      const s = v.get(r) as string | null;
      if (s !== null) counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    const top = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
    expect(top).toBe(rawIdOfRank(c1, 0).toString(16).padStart(8, '0'));
    expect(counts.size).toBeLessThanOrEqual(c1.vocab);
  });

  it('ids are skewed: the top 0.1% of ids carry most accesses (BAGPIPE)', () => {
    const spec = getPreset('rm1').columns.find((c) => c.name === 'C3') as HexColumnSpec; // 10,131,227 ids
    const v = back.table.getChild('C3')!;
    const counts = new Map<string, number>();
    let total = 0;
    for (let r = 0; r < ROWS; r++) {
      const s = v.get(r) as string | null;
      if (s === null) continue;
      total++;
      counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    const top = Math.ceil(spec.vocab * 0.001);
    const sorted = [...counts.values()].sort((a, b) => b - a);
    const share = sorted.slice(0, top).reduce((a, b) => a + b, 0) / total;
    expect(share).toBeGreaterThan(0.85);
    expect(sorted[0]! / total).toBeGreaterThan(0.02); // one very hot id
  });
});

describe('determinism', () => {
  it('same seed gives the same bytes and values whatever the row-group and slab sizes; other seeds differ', async () => {
    const a = await generateDataset({ preset: 'rm1', rows: 30_000, out: join(dir, 'a.parquet'), seed: 5 });
    const b = await generateDataset({ preset: 'rm1', rows: 30_000, out: join(dir, 'b.parquet'), seed: 5 });
    const c = await generateDataset({ preset: 'rm1', rows: 30_000, out: join(dir, 'c.parquet'), seed: 5, rowGroupSize: 7_000, slabRows: 4_096 });
    const d = await generateDataset({ preset: 'rm1', rows: 30_000, out: join(dir, 'd.parquet'), seed: 6 });
    expect(sha(a.path)).toBe(sha(b.path));
    const [ta, tc, td] = [(await readBack(a.path)).table, await readBack(c.path), (await readBack(d.path)).table];
    expect(tc.rowGroups).toEqual([7000, 7000, 7000, 7000, 2000]);
    for (const name of ['label', 'I1', 'I13', 'C1', 'C26']) {
      expect(JSON.stringify(tc.table.getChild(name)!.toJSON()), name).toBe(JSON.stringify(ta.getChild(name)!.toJSON()));
      expect(JSON.stringify(td.getChild(name)!.toJSON())).not.toBe(JSON.stringify(ta.getChild(name)!.toJSON()));
    }
    expect(JSON.stringify(tc.table.getChild('C7')!.toJSON())).toBe(JSON.stringify(ta.getChild('C7')!.toJSON()));
  });

  it('a shorter file is a prefix of a longer one', () => {
    const short = new arrow.Table([...generateBatches('rap-plan2', 1_000, { seed: 3 })]);
    const long = new arrow.Table([...generateBatches('rap-plan2', 3_000, { seed: 3, slabRows: 1_024 })]);
    for (const name of ['I1', 'I26', 'C1', 'C52']) {
      expect(JSON.stringify(long.getChild(name)!.slice(0, 1_000).toJSON()), name).toBe(JSON.stringify(short.getChild(name)!.toJSON()));
    }
  });
});

describe('other presets', () => {
  it('rm2: LIST<INT64> ids, average length ~20, non-negative, skewed; 504 dense', async () => {
    const res = await generateDataset({ preset: 'rm2', rows: 6_000, out: join(dir, 'rm2.parquet'), rowGroupSize: 4_000 });
    const back = await readBack(res.path, ['label', 'I1', 'I504', 'C1', 'C42']);
    expect(back.rowGroups).toEqual([4_000, 2_000]);
    expect(presetArrowSchema('rm2').fields.length).toBe(1 + 504 + 42);
    for (const name of ['C1', 'C42']) {
      const v = back.table.getChild(name)!;
      expect(String(v.type)).toBe('List<Int64>');
      let n = 0;
      let total = 0;
      let allNonNeg = true;
      const counts = new Map<bigint, number>();
      for (let r = 0; r < v.length; r++) {
        const list = v.get(r) as arrow.Vector | null;
        if (list === null) continue;
        n++;
        total += list.length;
        for (const id of list.toArray() as BigInt64Array) {
          allNonNeg &&= id >= 0n;
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
      }
      expect(allNonNeg).toBe(true);
      expect(total / n).toBeGreaterThan(19);
      expect(total / n).toBeLessThan(21);
      expect(v.nullCount / v.length).toBeLessThan(0.03);
      const top = [...counts.values()]
        .sort((a, b) => b - a)
        .slice(0, 100)
        .reduce((a, b) => a + b, 0);
      expect(top / total).toBeGreaterThan(0.3);
    }
    const i504 = numericStats(back.table.getChild('I504')!);
    expect(i504.nulls / 6_000).toBeGreaterThan(0.08);
  });

  it('piper-d1: nullable float32 dense, hex sparse', async () => {
    const res = await generateDataset({ preset: 'piper-d1', rows: 5_000, out: join(dir, 'piper.parquet') });
    const back = await readBack(res.path);
    expect(back.table.schema.fields.filter((f) => /^I\d+$/.test(f.name)).every((f) => String(f.type) === 'Float32' && f.nullable)).toBe(true);
    const { nulls, values } = numericStats(back.table.getChild('I5')!);
    expect(nulls).toBeGreaterThan(300);
    expect(values.some((x) => x < 0)).toBe(true);
    expect(String(back.table.getChild('C26')!.type)).toBe('Utf8');
  });

  it('rap-plan3: 52 dense int32 + 104 hex columns', async () => {
    const res = await generateDataset({ preset: 'rap-plan3', rows: 2_000, out: join(dir, 'rap3.parquet') });
    const back = await readBack(res.path);
    expect(back.table.schema.fields.length).toBe(1 + 52 + 104);
    expect(back.rows).toBe(2_000);
  });

  it('zero rows: a valid file with the schema', async () => {
    const res = await generateDataset({ preset: 'rm1', rows: 0, out: join(dir, 'empty.parquet') });
    expect(res.rows).toBe(0);
    const back = await readBack(res.path);
    expect(back.rows).toBe(0);
  });

  it('rejects bad arguments', async () => {
    await expect(generateDataset({ preset: 'nope', rows: 10, out: join(dir, 'x.parquet') })).rejects.toThrow(/unknown preset "nope"/);
    await expect(generateDataset({ preset: 'rm1', rows: -1, out: join(dir, 'x.parquet') })).rejects.toThrow(/rows/);
  });

  it('sizes slabs by row width', () => {
    expect(defaultSlabRows(getPreset('rm1'))).toBe(65536);
    const rm5 = defaultSlabRows(getPreset('rm5'));
    expect(rm5).toBeLessThan(16384);
    expect(rm5 % 1024).toBe(0);
  });
});
