// Files other writers made: every preset's data rewritten by DuckDB (high-cardinality strings
// PLAIN from the first page) and by an Arrow writer whose column chunks switch from dictionary to
// PLAIN pages part way. On each, and on Sluice's own file, the batches with pushdown (op chains
// computed in the decode threads) must be bit-identical to `pushdown: false` (the pipeline runs
// every op), shuffled and unshuffled; and the reader must really compute them (no fallback).
// RM1 with realistic ids (`sluice gen --ids realistic`) at DuckDB's own row-group size shows
// which of its columns DuckDB writes PLAIN, as the realistic benchmark's files have them, and
// must give the same batches with pushdown as without.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { pipeline, type Batch, type PlanSpec } from '@sluice/core';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { str, tempDir, writeParquet } from '../../packages/core/test/helpers.js';
import { SMALL_PRESETS, presetRowGroupSize, writePresetFile } from '../../packages/core/test/presets.js';
import { chunkShape, pageEncodings, writeArrowMixed, writeDuckdb } from '../../packages/core/test/writers.js';
import { expectSameBatches } from '../batches.js';

const dir = tempDir('sluice-writers-');
const WRITERS = ['sluice', 'duckdb', 'arrow-mixed'] as const;
type Writer = (typeof WRITERS)[number];
const SHUFFLES: Array<{ seed: number; bufferRows: number } | null> = [null, { seed: 5, bufferRows: 500 }];

const presets = SMALL_PRESETS;
const files = new Map<string, string>();
const key = (preset: string, writer: Writer): string => `${preset}/${writer}`;

beforeAll(async () => {
  for (const p of presets) {
    const src = await writePresetFile(dir, p);
    files.set(key(p, 'sluice'), src);
    files.set(key(p, 'duckdb'), await writeDuckdb(src, join(dir, `${p}-duckdb.parquet`)));
    files.set(key(p, 'arrow-mixed'), writeArrowMixed(src, join(dir, `${p}-mixed.parquet`), { rowGroupRows: presetRowGroupSize(p) }));
  }
}, 300_000);

/** Every batch of `plan` on `input` with the cpu backend, and the run's pushdown metrics. */
async function run(
  plan: PlanSpec,
  input: string,
  pushdown: boolean,
): Promise<{ batches: Batch[]; pushdown: ReturnType<ReturnType<typeof pipeline>['metrics']>['pushdown'] }> {
  const r = pipeline({ ...plan, backend: { name: 'cpu', workers: 2, pushdown } }, { input });
  const batches: Batch[] = [];
  for await (const b of r) batches.push(b);
  return { batches, pushdown: r.metrics().pushdown };
}

describe('files from other writers', () => {
  it('have the page shapes the tests rely on (checked with the reader’s own page headers)', () => {
    const shapes = (preset: string, writer: Writer): Set<string> => {
      const enc = pageEncodings(files.get(key(preset, writer))!);
      return new Set([...enc[0]!.keys()].map((c) => chunkShape(enc, c)));
    };
    // DuckDB: some hex id columns of RM1 PLAIN in at least one row group; RM5's id lists PLAIN.
    expect([...shapes('rm1', 'duckdb')].some((s) => s === 'plain' || s === 'varies')).toBe(true);
    expect(shapes('rm5', 'duckdb').has('plain')).toBe(true);
    // Arrow with a small dictionary limit: chunks that start with a dictionary and end PLAIN.
    expect(shapes('rm1', 'arrow-mixed').has('mixed')).toBe(true);
    expect(shapes('rm5', 'arrow-mixed').has('mixed')).toBe(true);
    // Sluice's own generator writes dictionary pages only.
    expect([...shapes('rm1', 'sluice')]).toEqual(['dictionary']);
  });

  describe.each(WRITERS)('written by %s', (writer) => {
    it.for(presets.flatMap((preset) => SHUFFLES.map((shuffle) => ({ preset, shuffle }))))(
      '$preset (shuffle $shuffle): batches with pushdown are identical to pushdown: false, all computed in the reader',
      { timeout: 120_000 },
      async ({ preset, shuffle }) => {
        const plan: PlanSpec = { ...getPreset(preset).defaultPlan(), ...(shuffle !== null ? { shuffle } : {}) };
        const input = files.get(key(preset, writer))!;
        const want = await run(plan, input, false);
        const got = await run(plan, input, true);
        expect(want.pushdown).toBeNull();
        expectSameBatches(got.batches, want.batches);
        if (shuffle === null) expect(got.pushdown).not.toBeNull();
        // Wherever the reader was asked to compute a feature, it did: no chunk fell back to the pipeline.
        if (got.pushdown !== null) {
          expect(got.pushdown.computedInReader).toBeGreaterThan(0);
          expect(got.pushdown.computedInPipeline).toBe(0);
        }
      },
    );
  });
});

describe('RM1 with realistic ids (sluice gen --ids realistic), rewritten by DuckDB with its defaults', () => {
  // One full DuckDB row group (122,880 rows): its dictionary limit is a fifth of that.
  const ROWS = 122_880;
  const LARGE = ['C3', 'C4', 'C12', 'C16', 'C21'];
  const paths = { realistic: '', skewed: '' };

  beforeAll(async () => {
    for (const ids of ['realistic', 'skewed'] as const) {
      const src = join(dir, `rm1-ids-${ids}.parquet`);
      await generateDataset({ preset: 'rm1', rows: ROWS, out: src, seed: 11, rowGroupSize: 30_000, ids });
      paths[ids] = await writeDuckdb(src, join(dir, `rm1-ids-${ids}-duckdb.parquet`));
    }
  }, 120_000);

  it('has the columns of 1M+ ids PLAIN and the rest dictionary-encoded; with skewed ids every column keeps its dictionary', () => {
    const shape = (file: string): Record<string, string> => {
      const enc = pageEncodings(file);
      expect(enc.length).toBe(1);
      return Object.fromEntries([...enc[0]!.keys()].filter((c) => /^C\d+$/.test(c)).map((c) => [c, chunkShape(enc, c)]));
    };
    const realistic = shape(paths.realistic);
    for (const [c, s] of Object.entries(realistic)) expect(s, c).toBe(LARGE.includes(c) ? 'plain' : 'dictionary');
    expect(new Set(Object.values(shape(paths.skewed)))).toEqual(new Set(['dictionary']));
  });

  // A full-size DuckDB row group, its 1M+ id columns PLAIN: one row group for two decoders, which
  // share it by columns. This case took 111 s a setting when first written, and was left out; the
  // pipelines take ~1 s each. vitest's element-by-element comparison of the batches was the rest
  // (expectSameBatches compares bytes first now: the suite above went from 140 s to 42 s).
  it.for([
    ['unshuffled', null],
    ['shuffled (bufferRows 100000)', { seed: 5, bufferRows: 100_000 }],
  ] as const)('%s: batches with pushdown are identical to pushdown: false', { timeout: 120_000 }, async ([, shuffle]) => {
    const plan: PlanSpec = { ...getPreset('rm1').defaultPlan(), ...(shuffle !== null ? { shuffle } : {}) };
    const want = await run(plan, paths.realistic, false);
    const got = await run(plan, paths.realistic, true);
    expect(want.batches.reduce((a, b) => a + b.rows, 0)).toBe(ROWS);
    expectSameBatches(got.batches, want.batches);
    expect(got.pushdown?.computedInReader).toBeGreaterThan(0);
    expect(got.pushdown?.computedInPipeline).toBe(0);
  });
});

describe('a value the ops reject on a PLAIN page', () => {
  // Distinct ids, so DuckDB writes them PLAIN and Arrow's small dictionary overflows to PLAIN.
  const N = 900;
  const plan: PlanSpec = {
    batchSize: 100,
    features: [{ name: 'h', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 3, max: 1000 }] }],
  };
  const errorOf = (input: string, pushdown: boolean): Promise<string> =>
    run(plan, input, pushdown).then(
      () => 'no error',
      (e: Error) => e.message,
    );
  const cases: Array<[string, string, RegExp]> = [
    ['a bad digit', 'x1f', /invalid hex "x1f"/],
    ['too many digits', '1'.repeat(17), /invalid hex "1{17}"/],
  ];

  it.for(cases)('%s fails with the same one-line error with and without pushdown, on every writer', async ([, bad, words]) => {
    const src = writeParquet(
      join(dir, `bad-${bad.length}.parquet`),
      { C1: str(Array.from({ length: N }, (_, i) => (i === 777 ? bad : (i * 2654435761).toString(16)))) },
      300,
    );
    const duck = await writeDuckdb(src, join(dir, `bad-${bad.length}-duckdb.parquet`));
    const mixed = writeArrowMixed(src, join(dir, `bad-${bad.length}-mixed.parquet`), { rowGroupRows: 300 });
    expect(chunkShape(pageEncodings(duck), 'C1')).toBe('plain');
    expect(pageEncodings(mixed)[2]!.get('C1')).toContain('PLAIN');
    for (const f of [duck, mixed]) {
      const want = await errorOf(f, false);
      expect(want).toMatch(words);
      expect(want).toMatch(/row 777, column C1, feature h, op hex2int \(#1\)/);
      expect(want).not.toContain('\n');
      expect(await errorOf(f, true)).toBe(want);
    }
  });

  it('an empty string is null on a PLAIN page, as in the ops', async () => {
    const src = writeParquet(
      join(dir, 'empty.parquet'),
      { C1: str(Array.from({ length: N }, (_, i) => (i % 97 === 5 ? '' : i % 89 === 3 ? null : (i * 2654435761).toString(16)))) },
      300,
    );
    const withFill: PlanSpec = {
      ...plan,
      features: [{ ...plan.features[0]!, ops: [{ op: 'hex2int' }, { op: 'fillNull', value: 12345 }, { op: 'modulus', m: 100000 }] }],
    };
    for (const f of [
      await writeDuckdb(src, join(dir, 'empty-duckdb.parquet')),
      writeArrowMixed(src, join(dir, 'empty-mixed.parquet'), { rowGroupRows: 300 }),
    ]) {
      const want = await run(withFill, f, false);
      const got = await run(withFill, f, true);
      expectSameBatches(got.batches, want.batches);
      expect(got.pushdown!.computedInPipeline).toBe(0);
      const nulls = Array.from({ length: N }, (_, i) => i).filter((i) => i % 97 === 5 || i % 89 === 3).length;
      expect(got.batches.flatMap((b) => [...b.sparse.values]).filter((v) => Number(v) === 12345).length).toBe(nulls);
    }
  });
});
