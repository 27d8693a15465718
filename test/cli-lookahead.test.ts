/**
 * `sluice lookahead` end to end: spawns the built CLI (`npm run build` first) on small Parquet files
 * and checks its figures against LookaheadCache run in-process over ids parsed here independently.
 */
import { join } from 'node:path';
import { Float32, Int64 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { LookaheadCache, LookaheadSummary, type CacheBudget } from '../packages/core/src/lookahead/cache.js';
import { i32, runSluice, str, tempDir, vec, writeParquet, type SluiceRun } from '../packages/core/test/helpers.js';

const dir = tempDir('sluice-lookahead-cli-');

const sluice = (args: readonly string[]): Promise<SluiceRun> => runSluice(args, { SLUICE_CACHE_DIR: join(dir, 'cache') });

/** Seeded small-range ids so that batches share ids; every 7th hex value is null. */
const N = 203;
const r = (i: number, k: number): number => (Math.imul(i + 1, 2654435761 + k) >>> 0) % (k === 0 ? 23 : 31);
const hex = Array.from({ length: N }, (_, i) => (i % 7 === 3 ? null : (r(i, 0) * 0x10000001).toString(16)));
const big = Array.from({ length: N }, (_, i) => BigInt(r(i, 1)) * (1n << 40n) - 3n);
const small = Array.from({ length: N }, (_, i) => r(i, 2) - 10);
const file = writeParquet(
  join(dir, 'ids.parquet'),
  {
    C1: str(hex),
    C2: vec(new Int64(), big),
    C3: i32(small),
    F: vec(
      new Float32(),
      small.map((x) => x / 2),
    ),
  },
  50,
);
const badHex = writeParquet(join(dir, 'bad.parquet'), { C1: str(['a1', 'zz', 'ff']) });

/** The hints over ids computed here: batches of `size` rows, nulls dropped, hex parsed with BigInt. */
function expected(size: number, window: number | undefined, budget?: CacheBudget): { summary: LookaheadSummary; window: number } {
  const batches: BigInt64Array[][] = [];
  for (let at = 0; at < N; at += size) {
    const rows = Array.from({ length: Math.min(size, N - at) }, (_, j) => at + j);
    batches.push([
      BigInt64Array.from(rows.filter((i) => hex[i] !== null).map((i) => BigInt(`0x${hex[i]}`))),
      BigInt64Array.from(rows.map((i) => big[i]!)),
      BigInt64Array.from(rows.map((i) => BigInt(small[i]!))),
    ]);
  }
  const la = new LookaheadCache({ tables: 3, ...(window !== undefined ? { window } : {}), ...(budget ? { cacheBudget: budget } : {}) });
  const summary = new LookaheadSummary(3, budget);
  for (const b of batches) {
    const h = la.push(b);
    if (h) summary.add(h);
  }
  for (const h of la.drain()) summary.add(h);
  return { summary, window: la.window! };
}

const lines = (s: string): string[] => s.split('\n').filter((l) => l !== '');

describe('sluice lookahead', () => {
  it('--json reports samples/s and the same hits, sizes and counts as LookaheadCache over the ids', async () => {
    const res = await sluice(['lookahead', '--input', file, '--columns', 'C1,C2,C3', '--batch-size', '16', '--window', '3', '--json']);
    expect(res.status, res.stderr).toBe(0);
    const j = JSON.parse(res.stdout) as Record<string, unknown> & {
      cacheSize: { mean: number; peak: number; series: Array<{ step: number; cacheSize: number }> };
    };
    const { summary } = expected(16, 3);
    expect(j.rows).toBe(N);
    expect(j.batches).toBe(Math.ceil(N / 16));
    expect(j.window).toBe(3);
    expect(j.windowFrom).toBe('window');
    expect(j.hitRatio).toBeCloseTo(summary.hitRatio, 12);
    expect(j.uniqueLookups).toBe(summary.unique);
    expect(j.prefetched).toBe(summary.prefetched);
    expect(j.evicted).toBe(summary.evicted);
    expect(j.cacheSize.peak).toBe(summary.peakCacheSize);
    expect(j.cacheSize.mean).toBeCloseTo(summary.meanCacheSize, 9);
    expect(j.cacheSize.series).toEqual(summary.series(8));
    for (const k of ['samplesPerSecond', 'inputSamplesPerSecond', 'endToEndSamplesPerSecond']) {
      expect(typeof j[k]).toBe('number');
      expect(Number.isFinite(j[k] as number) && (j[k] as number) > 0, k).toBe(true);
    }
    // The hint figure excludes reading, so it is at least the end-to-end one.
    expect(j.samplesPerSecond as number).toBeGreaterThanOrEqual(j.endToEndSamplesPerSecond as number);
  });

  it('chooses L from a cache budget in ids or bytes', async () => {
    const ids = await sluice(['lookahead', '--input', file, '--columns', 'C1,C2,C3', '--batch-size', '16', '--cache-budget', '60', '--json']);
    expect(ids.status, ids.stderr).toBe(0);
    const j = JSON.parse(ids.stdout) as { window: number; windowFrom: string; hitRatio: number; budget: { overBudgetSteps: number; peakUse: number } };
    const want = expected(16, undefined, { ids: 60 });
    expect(j.windowFrom).toBe('cache-budget');
    expect(j.window).toBe(want.window);
    expect(j.window).toBeGreaterThan(0);
    expect(j.hitRatio).toBeCloseTo(want.summary.hitRatio, 12);
    expect(j.budget.overBudgetSteps).toBe(want.summary.overBudgetSteps);
    expect(j.budget.peakUse).toBe(want.summary.peakBudgetUse);
    const bytes = await sluice([
      'lookahead',
      '--input',
      file,
      '--columns',
      'C1,C2,C3',
      '--batch-size',
      '16',
      '--cache-budget',
      '3.75KiB',
      '--bytes-per-id',
      '64',
      '--window',
      '2',
      '--json',
    ]);
    expect(bytes.status, bytes.stderr).toBe(0);
    expect((JSON.parse(bytes.stdout) as { window: number }).window).toBe(expected(16, 2, { bytes: 3840, bytesPerId: 64 }).window);
  });

  it('prints a table with samples/s, hit ratio and cache size over time', async () => {
    const res = await sluice(['lookahead', '--input', file, '--columns', 'C3', '--batch-size', '10', '--window', '2']);
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/hints: samples\/s\s+[\d,]+ \(/);
    expect(res.stdout).toMatch(/read \+ hex2int: samples\/s\s+[\d,]+/);
    expect(res.stdout).toMatch(/hit ratio \(distinct ids\)\s+0\.\d{4}/);
    expect(res.stdout).toMatch(/step\s+cache size \(ids\)\s+hit ratio/);
    // Eight points of the series, first and last step included.
    const series = lines(res.stdout.slice(res.stdout.indexOf('step  ')));
    expect(series).toHaveLength(2 + 8);
    expect(series[2]).toMatch(/^0\s/);
    expect(series[9]).toMatch(new RegExp(`^${Math.ceil(N / 10) - 1}\\s`));
  });

  /** A data error: exit 1, one line, no stack. */
  function expectDataError(res: SluiceRun, ...parts: Array<string | RegExp>): void {
    expect(res.status, res.stderr).toBe(1);
    expect(res.stdout).toBe('');
    const ls = lines(res.stderr);
    expect(ls, res.stderr).toHaveLength(1);
    expect(ls[0]!.startsWith('sluice lookahead: ')).toBe(true);
    expect(ls[0]).not.toMatch(/unexpected error/);
    for (const p of parts) expect(ls[0]).toMatch(p);
  }

  it('names a missing file, a missing column, a wrong type and invalid hex', async () => {
    const base = ['lookahead', '--batch-size', '8', '--window', '2'];
    expectDataError(await sluice([...base, '--input', join(dir, 'nope.parquet'), '--columns', 'C1']), /nope\.parquet/, /no such file/);
    expectDataError(await sluice([...base, '--input', file, '--columns', 'C1,C9']), /column "C9" is missing/);
    expectDataError(await sluice([...base, '--input', file, '--columns', 'F']), /column "F" is float32: lookahead needs integer ids or hex strings/);
    expectDataError(await sluice([...base, '--input', badHex, '--columns', 'C1']), /invalid hex "zz"/, /row 1/);
  });

  it('rejects bad numbers and missing options as usage errors (exit 2)', async () => {
    const run = (...extra: string[]): Promise<SluiceRun> => sluice(['lookahead', '--input', file, '--columns', 'C1', ...extra]);
    const cases: Array<[string[], RegExp]> = [
      [['--batch-size', '0', '--window', '2'], /--batch-size must be an integer >= 1, got "0"/],
      [['--batch-size', '8k', '--window', '2'], /--batch-size must be an integer >= 1, got "8k"/],
      [['--window', '2'], /--batch-size is required/],
      [['--batch-size', '8'], /--window is required/],
      [['--batch-size', '8', '--window', '1.5'], /--window must be an integer >= 0, got "1.5"/],
      [['--batch-size', '8', '--cache-budget', '0'], /--cache-budget must be at least 1 id/],
      [['--batch-size', '8', '--cache-budget', '10MB'], /give --bytes-per-id/],
      [['--batch-size', '8', '--cache-budget', 'lots'], /--cache-budget takes a number of ids or a size/],
      [['--batch-size', '8', '--window', '2', '--bytes-per-id', '4'], /--bytes-per-id goes with a --cache-budget in bytes/],
    ];
    for (const [extra, msg] of cases) {
      const res = await run(...extra);
      expect(res.status, `${extra.join(' ')}: ${res.stderr}`).toBe(2);
      expect(res.stderr).toMatch(msg);
    }
    const noCols = await sluice(['lookahead', '--input', file, '--batch-size', '8', '--window', '2']);
    expect(noCols.status).toBe(2);
    expect(noCols.stderr).toMatch(/--columns is required/);
    const dup = await sluice(['lookahead', '--input', file, '--columns', 'C1,C1', '--batch-size', '8', '--window', '2']);
    expect(dup.stderr).toMatch(/--columns names "C1" twice/);
  });

  it('is listed in --help', async () => {
    const res = await sluice(['--help']);
    expect(res.stdout).toContain('lookahead --input F --columns C1,...,Cn --batch-size B --window L');
  });
});
