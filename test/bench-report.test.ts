// Bench reports: the charts drawn from benchmark results (real --json outputs in
// test/fixtures/bench/), the general rule for results without a chart of their own, reading
// JSON lines, and the report opened in headless Chromium, whose plotted values (read back from
// uPlot) must equal the raw numbers the file embeds. `sluice bench --report` is run for real.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPreset } from '@sluice/core/gen';
import { generateDataset } from '@sluice/core/gen';
import { chartsFor, parseBenchOutput, renderReport, type BenchDoc } from '@sluice/core/internal';
import { runSluice, tempDir } from '../packages/core/test/helpers.js';
import { CI, collectErrors, launchBrowser, noBrowser } from './browser.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/bench/', import.meta.url));
const load = (name: string): BenchDoc => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as BenchDoc;
const kernels = load('kernels.json');
const transport = load('transport.json');
const e2e = load('e2e.json');
type Rec = Record<string, unknown>;
const recs = (v: unknown): Rec[] => v as Rec[];

describe('report charts', () => {
  it('plot kernels vs NumPy, transports vs memcpy and each end-to-end workload from their own fields', () => {
    const [k] = chartsFor(kernels);
    expect(k!.categories).toEqual(recs(kernels.kernels).map((r) => r.op));
    expect(k!.series.map((s) => s.label)).toEqual(['TypeScript reference', 'Sluice fast kernel', 'NumPy']);
    expect(k!.series[2]!.values).toEqual(recs(kernels.kernels).map((r) => r.numpyMps));
    const [t] = chartsFor(transport);
    expect(t!.categories.filter((c) => c.startsWith('memcpy')).length).toBeGreaterThan(0);
    expect(t!.series[0]!.values).toEqual(recs(transport.results).map((r) => r.gbPerSecond));
    const w = chartsFor(e2e);
    expect(w.map((c) => c.title)).toEqual(recs(e2e.workloads).map((x) => expect.stringContaining(String(x.preset))));
    expect(w[0]!.categories).toContain('duckdb plan (bsearch)');
  });

  it('plot a result of an unknown kind by the general rule: records labelled by their text, a chart per number field', () => {
    const doc = {
      bench: 'realistic',
      results: [
        { writer: 'pyarrow', shuffle: 'none', engine: 'sluice', rowsPerSec: 1000, seconds: 2 },
        { writer: 'pyarrow', shuffle: 'none', engine: 'duckdb', rowsPerSec: 800, seconds: 2.5 },
        { writer: 'duckdb', shuffle: 'window', engine: 'polars', rowsPerSec: 600, seconds: null },
      ],
    };
    const charts = chartsFor(doc);
    expect(charts.map((c) => c.title)).toEqual(['realistic: rowsPerSec', 'realistic: seconds']);
    expect(charts[0]!.categories).toEqual(['pyarrow · none · sluice', 'pyarrow · none · duckdb', 'duckdb · window · polars']);
    expect(charts[1]!.series[0]!.values).toEqual([2, 2.5, null]);
  });

  it('reads JSON lines among progress lines, and names a file with no result', () => {
    const text = `progress 1/2\n${JSON.stringify({ bench: 'a', x: 1 })}\nnoise\n${JSON.stringify({ bench: 'b', y: 2 })}\n`;
    expect(parseBenchOutput(text, 'out.txt').map((d) => d.bench)).toEqual(['a', 'b']);
    expect(() => parseBenchOutput('nothing here', 'bench/x.ts --json')).toThrow('bench/x.ts --json: no benchmark result in it');
  });

  it('embeds the raw results, the machine and the date, and nothing can end its script early', () => {
    const html = renderReport([{ bench: 'odd', items: [{ name: '</script><b>', v: 1 }] }], { date: new Date('2026-01-02T03:04:05Z') });
    expect(html).not.toMatch(/\{\{[A-Z_]+\}\}/);
    expect(html.match(/<\/script>/g)!.length).toBe(3);
    const json = /<script type="application\/json" id="bench-data">(.*?)<\/script>/s.exec(html)![1]!;
    const data = JSON.parse(json) as { date: string; machine: Rec; results: { doc: BenchDoc }[] };
    expect(data.date).toBe('2026-01-02T03:04:05.000Z');
    expect(data.machine.cpus).toBeGreaterThan(0);
    expect(data.results[0]!.doc).toEqual({ bench: 'odd', items: [{ name: '</script><b>', v: 1 }] });
  });
});

interface Drawn {
  result: string;
  spec: { kind: string; categories: string[]; series: unknown[] };
  data: (number | null)[][];
}

describe.skipIf(noBrowser !== null && !CI)('the report in Chromium', () => {
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  const dir = tempDir('sluice-report-test-');

  beforeAll(async () => {
    expect(noBrowser, 'CI=true needs Chromium').toBeNull();
    ({ browser, close: closeBrowser } = await launchBrowser());
  });
  afterAll(async () => {
    await closeBrowser?.();
  });

  /** Opens a report file; resolves to its embedded results and every chart's data as uPlot holds it. */
  async function open(file: string, page: Page): Promise<{ raw: { name: string; doc: BenchDoc }[]; drawn: Drawn[] }> {
    await page.setViewport({ width: 1400, height: 900 });
    await page.goto(pathToFileURL(file).href);
    const raw = await page.$eval('#bench-data', (e) => (JSON.parse(e.textContent!) as { results: { name: string; doc: BenchDoc }[] }).results);
    const drawn = await page.evaluate(() =>
      (window as unknown as { sluiceReport: { charts: { result: string; spec: Drawn['spec']; u: { data: Drawn['data'] } }[] } }).sluiceReport.charts.map(
        (c) => ({
          result: c.result,
          spec: c.spec,
          data: c.u.data,
        }),
      ),
    );
    return { raw, drawn };
  }

  /** Bar `j` of category `i` as drawn: series j+1 at x = i * (series + 1) + j (report.js). */
  const bar = (d: Drawn, i: number, j: number): number | null => {
    const k = d.spec.series.length;
    const x = i * (k + 1) + j;
    expect(d.data[0]![x]).toBe(x);
    return d.data[j + 1]![x] ?? null;
  };

  it('plots exactly the raw numbers it embeds: kernels vs NumPy, transports vs memcpy, Sluice vs DuckDB', async () => {
    const file = join(dir, 'report.html');
    writeFileSync(file, renderReport([kernels, transport, e2e]));
    const page = await browser.newPage();
    const errors = collectErrors(page);
    const { raw, drawn } = await open(file, page);
    expect(raw.map((r) => r.name)).toEqual(['kernels', 'transport', 'e2e']);
    // Kernels: one group per op; reference, fast and NumPy M values/s as embedded.
    const kd = drawn.find((d) => d.result === 'kernels')!;
    recs(raw[0]!.doc.kernels).forEach((k, i) => {
      expect(bar(kd, i, 0)).toBe(k.refMps);
      expect(bar(kd, i, 1)).toBe(k.fastMps);
      expect(bar(kd, i, 2)).toBe(k.numpyMps);
    });
    // Transports: GB/s of each, memcpy among them.
    const td = drawn.find((d) => d.result === 'transport')!;
    recs(raw[1]!.doc.results).forEach((r, i) => expect(bar(td, i, 0)).toBe(r.gbPerSecond));
    // End to end: rows ÷ median seconds of each contender, per workload.
    const ed = drawn.filter((d) => d.result === 'e2e');
    recs(raw[2]!.doc.workloads).forEach((w, wi) => {
      recs(w.measurements).forEach((m, i) => expect(bar(ed[wi]!, i, 0)).toBeCloseTo((m.rows as number) / (m.median as number), 6));
    });
    expect(drawn.length).toBe(2 + recs(raw[2]!.doc.workloads).length);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('`sluice bench --report` writes a report of the run that plots its timeline and stages as measured', async () => {
    const data = join(dir, 'rm1.parquet');
    await generateDataset({ preset: 'rm1', rows: 20_000, out: data, seed: 5, rowGroupSize: 2_000 });
    const planFile = join(dir, 'plan.json');
    writeFileSync(planFile, JSON.stringify({ ...getPreset('rm1').defaultPlan(), batchSize: 512, epochs: 3 }));
    const file = join(dir, 'sluice-bench.html');
    const r = await runSluice(['bench', '--plan', planFile, '--input', data, '--workers', '1', '--report', file, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as { rows: number; stages: Record<string, number>; timeline: { seconds: number[]; rowsPerSecond: number[] } };
    expect(result.rows).toBe(60_000);
    const page = await browser.newPage();
    const errors = collectErrors(page);
    const { raw, drawn } = await open(file, page);
    // The embedded result is the run's own, as --json printed it.
    expect(raw[0]!.doc).toEqual(result);
    const stages = drawn.find((d) => d.spec.kind === 'bars')!;
    ['sourceWaitMs', 'preprocessMs', 'batchMs', 'consumerWaitMs'].forEach((k, i) => expect(bar(stages, i, 0)).toBe(result.stages[k]));
    const line = drawn.find((d) => d.spec.kind === 'lines')!;
    expect(result.timeline.seconds.length).toBeGreaterThan(0);
    expect(line.data[0]).toEqual(result.timeline.seconds);
    expect(line.data[1]).toEqual(result.timeline.rowsPerSecond);
    expect(errors).toEqual([]);
    await page.close();
  });
});
