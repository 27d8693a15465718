/**
 * Benchmark reports as pictures: the JSON the benchmarks print with `--json` (bench/*.ts, and
 * `sluice bench`) turned into one self-contained HTML file — uPlot and the page script inlined,
 * the raw results embedded beside the charts drawn from them, the machine and the date.
 * `npm run bench -- --report FILE` (bench/all.ts) and `sluice bench --report FILE` write it.
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { asset, fillTemplate, jsonForScript, scriptText, uplot } from '../util/assets.js';

/**
 * One benchmark's result as its `--json` printed it; `bench` names which ("kernels", "e2e",
 * "transport", "sluice" …). A result of a kind without a chart of its own is plotted by the
 * general rule: each list of records, labelled by their text fields, one chart per number field.
 *
 * @example
 * const doc: BenchDoc = JSON.parse(execFileSync('npx', ['tsx', 'bench/kernels.ts', '--json'], { encoding: 'utf8' }));
 */
export interface BenchDoc {
  bench?: string;
  [field: string]: unknown;
}

/**
 * A chart of the report: bars (a value per category and series) or lines (a value per x and
 * series). Its numbers are taken from the embedded results unchanged, or by the formula `derived`
 * states (e.g. rows ÷ median seconds).
 *
 * @example
 * const c: ChartSpec = { kind: 'bars', title: 'kernels', unit: 'M values/s', categories: ['log'], series: [{ label: 'NumPy', values: [812] }], source: 'kernels.kernels[].numpyMps' };
 */
export interface ChartSpec {
  kind: 'bars' | 'lines';
  title: string;
  unit: string;
  /** Bars: one per category. Lines: unused (empty). */
  categories: string[];
  /** Lines: the x values (seconds). Bars: unused. */
  x?: number[];
  series: { label: string; values: (number | null)[] }[];
  /** Where in the embedded results the values come from. */
  source: string;
  /** How values were computed from the raw numbers, when they were not copied. */
  derived?: string;
}

/** The most charts the general rule draws for one result (a list with many number fields). */
const MAX_GENERIC = 8;

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/**
 * The charts of one result. Kernels: M values/s per op for the TypeScript reference, Sluice's fast
 * kernels and NumPy. End to end: rows/s per contender (Sluice, DuckDB, Polars …) and workload.
 * Transports: GB/s per transport, memcpy among them. `sluice bench`: rows/s over the run and time
 * per stage. Anything else: the general rule (see `BenchDoc`).
 *
 * @example
 * for (const c of chartsFor({ bench: 'transport', results: [{ transport: 'memcpy', gbPerSecond: 9.1 }] })) console.log(c.title);
 */
export function chartsFor(doc: BenchDoc, name = doc.bench ?? 'result'): ChartSpec[] {
  switch (doc.bench) {
    case 'kernels':
      return kernelCharts(doc);
    case 'e2e':
      return e2eCharts(doc);
    case 'transport':
      return transportCharts(doc);
    case 'sluice':
      return sluiceBenchCharts(doc);
    default:
      return genericCharts(doc, name);
  }
}

function kernelCharts(doc: BenchDoc): ChartSpec[] {
  const ks = (Array.isArray(doc.kernels) ? doc.kernels : []).filter(isRec);
  if (ks.length === 0) return genericCharts(doc, 'kernels');
  return [
    {
      kind: 'bars',
      title: 'Kernels vs NumPy: throughput on one core',
      unit: 'M values/s',
      categories: ks.map((k) => String(k.op)),
      series: [
        { label: 'TypeScript reference', values: ks.map((k) => num(k.refMps)) },
        { label: 'Sluice fast kernel', values: ks.map((k) => num(k.fastMps)) },
        { label: 'NumPy', values: ks.map((k) => num(k.numpyMps)) },
      ],
      source: 'kernels[].refMps, fastMps, numpyMps',
    },
  ];
}

function e2eCharts(doc: BenchDoc): ChartSpec[] {
  const ws = (Array.isArray(doc.workloads) ? doc.workloads : []).filter(isRec);
  if (ws.length === 0) return genericCharts(doc, 'e2e');
  return ws.map((w) => {
    const ms = (Array.isArray(w.measurements) ? w.measurements : []).filter(isRec);
    return {
      kind: 'bars',
      title: `End to end, ${String(w.preset)}: ${Number(w.rows).toLocaleString('en-US')} rows to ready batches`,
      unit: 'rows/s',
      categories: ms.map((m) => String(m.name)),
      series: [{ label: 'rows/s (median run)', values: ms.map((m) => perSecond(m.rows, m.median)) }],
      source: `workloads[preset=${String(w.preset)}].measurements[]`,
      derived: 'rows ÷ median seconds',
    };
  });
}

function transportCharts(doc: BenchDoc): ChartSpec[] {
  const rs = (Array.isArray(doc.results) ? doc.results : []).filter(isRec);
  if (rs.length === 0) return genericCharts(doc, 'transport');
  return [
    {
      kind: 'bars',
      title: `Transports vs memcpy (best memcpy ${fixed(doc.memcpyGbPerSecond)} GB/s)`,
      unit: 'GB/s',
      categories: rs.map((r) => String(r.transport)),
      series: [{ label: 'GB/s (median run)', values: rs.map((r) => num(r.gbPerSecond)) }],
      source: 'results[].gbPerSecond',
    },
  ];
}

function sluiceBenchCharts(doc: BenchDoc): ChartSpec[] {
  const out: ChartSpec[] = [];
  const tl = isRec(doc.timeline) ? doc.timeline : null;
  if (tl && Array.isArray(tl.seconds) && Array.isArray(tl.rowsPerSecond)) {
    out.push({
      kind: 'lines',
      title: `sluice bench (${String(doc.backend)}): rows/s over the run`,
      unit: 'rows/s',
      categories: [],
      x: tl.seconds.map((v) => num(v) ?? 0),
      series: [{ label: 'rows/s', values: tl.rowsPerSecond.map(num) }],
      source: 'timeline.seconds, timeline.rowsPerSecond',
    });
  }
  const st = isRec(doc.stages) ? doc.stages : {};
  const stages: [string, string][] = [
    ['decode (waiting for chunks)', 'sourceWaitMs'],
    ['preprocess', 'preprocessMs'],
    ['batch assembly', 'batchMs'],
    ['waiting for the consumer', 'consumerWaitMs'],
  ];
  out.push({
    kind: 'bars',
    title: 'sluice bench: time per stage',
    unit: 'ms',
    categories: stages.map(([label]) => label),
    series: [{ label: 'ms', values: stages.map(([, k]) => num(st[k])) }],
    source: 'stages',
  });
  const totals = isRec(doc.reportTotals) ? Object.entries(doc.reportTotals).filter(([, v]) => num(v) !== null) : [];
  const modelled = totals.find(([k]) => k === 'modelledMs');
  if (modelled) {
    out.push({
      kind: 'bars',
      title: 'Backend: measured vs modelled time',
      unit: 'ms',
      categories: ['measured preprocess', 'modelled (cost model)'],
      series: [{ label: 'ms', values: [num(st.preprocessMs), num(modelled[1])] }],
      source: 'stages.preprocessMs, reportTotals.modelledMs',
    });
  }
  return out;
}

/** The general rule: every list of records in `doc` (depth ≤ 3), one bar chart per number field. */
function genericCharts(doc: BenchDoc, name: string): ChartSpec[] {
  const out: ChartSpec[] = [];
  const walk = (v: unknown, path: string, depth: number): void => {
    if (out.length >= MAX_GENERIC || depth > 3) return;
    if (Array.isArray(v)) {
      const recs = v.filter(isRec);
      if (recs.length > 0 && recs.length === v.length) {
        const labels = recs.map((r) =>
          Object.values(r)
            .filter((x) => typeof x === 'string')
            .join(' · '),
        );
        const fields = [...new Set(recs.flatMap((r) => Object.keys(r).filter((k) => num(r[k]) !== null)))];
        for (const f of fields) {
          if (out.length >= MAX_GENERIC) break;
          out.push({
            kind: 'bars',
            title: `${name}: ${f}`,
            unit: f,
            categories: labels.map((l, i) => l || `#${i}`),
            series: [{ label: f, values: recs.map((r) => num(r[f])) }],
            source: `${path}[].${f}`,
          });
        }
        for (const r of recs) for (const [k, x] of Object.entries(r)) if (typeof x === 'object') walk(x, `${path}[].${k}`, depth + 1);
      }
      return;
    }
    if (isRec(v)) for (const [k, x] of Object.entries(v)) walk(x, path === '' ? k : `${path}.${k}`, depth + 1);
  };
  walk(doc, '', 0);
  return out;
}

const perSecond = (rows: unknown, seconds: unknown): number | null => {
  const r = num(rows);
  const s = num(seconds);
  return r === null || s === null || s <= 0 ? null : r / s;
};
const fixed = (v: unknown): string => (num(v) === null ? '?' : num(v)!.toFixed(2));

/**
 * Results from a file's text: one JSON document, or JSON lines (what `--json` prints; lines that
 * are not JSON, such as progress, are skipped). Text with no JSON object is an error naming `file`.
 *
 * @example
 * const docs = parseBenchOutput(readFileSync('kernels.json', 'utf8'), 'kernels.json');
 */
export function parseBenchOutput(text: string, file: string): BenchDoc[] {
  const whole = tryJson(text.trim());
  if (isRec(whole)) return [whole];
  if (Array.isArray(whole)) return whole.filter(isRec);
  const docs = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('{'))
    .map(tryJson)
    .filter(isRec);
  if (docs.length === 0) throw new Error(`${file}: no benchmark result in it (expected the JSON a bench prints with --json)`);
  return docs;
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The machine writing the report: Node, platform, CPU model and count, memory, load. */
export function reportMachine(): Record<string, string | number> {
  const c = cpus();
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memGB: +(totalmem() / 2 ** 30).toFixed(1),
    loadavg1: +loadavg()[0]!.toFixed(2),
  };
}

/**
 * The report's HTML: for each result its charts (`chartsFor`) and its raw JSON, with the machine
 * and the date. Everything is in the file: it opens without a network or a server.
 *
 * @example
 * writeFileSync('bench-report.html', renderReport(docs, { title: 'Sluice benchmarks' }));
 */
export function renderReport(docs: readonly BenchDoc[], o: { title?: string; date?: Date; machine?: Record<string, string | number> } = {}): string {
  const data = {
    title: o.title ?? 'Sluice benchmark report',
    date: (o.date ?? new Date()).toISOString(),
    machine: o.machine ?? reportMachine(),
    results: docs.map((doc, i) => ({ name: doc.bench ?? `result ${i + 1}`, doc, charts: chartsFor(doc) })),
  };
  const u = uplot();
  return fillTemplate(asset('report.html'), {
    TITLE: data.title.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`),
    UPLOT_CSS: u.css,
    UPLOT_JS: scriptText(u.js, 'uPlot'),
    DATA_JSON: jsonForScript(data),
    APP_JS: scriptText(asset('report.js'), 'report.js'),
  });
}
