// The bench report's script (inlined by packages/core/src/report/report.ts; plain browser
// JavaScript). It reads the embedded results and chart specs (#bench-data) and draws each chart
// with uPlot. Grouped bars: category i, series j sits at x = i * (series + 1) + j, so each bar has
// an x of its own and the gap between groups is one empty slot.
(() => {
  'use strict';
  const data = JSON.parse(document.getElementById('bench-data').textContent);
  const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
  const drawn = [];
  // Read by the browser test (test/bench-report-browser.test.ts): each chart's spec and uPlot instance.
  window.sluiceReport = { data, charts: drawn };

  const el = (tag, props = {}, ...kids) => {
    const e = document.createElement(tag);
    Object.assign(e, props);
    e.append(...kids);
    return e;
  };
  const fmt = (v) =>
    v == null || !Number.isFinite(v)
      ? '—'
      : Math.abs(v) >= 1e6
        ? `${(v / 1e6).toFixed(2)} M`
        : Math.abs(v) >= 1e4
          ? `${(v / 1e3).toFixed(1)} k`
          : String(+v.toPrecision(4));

  document.getElementById('meta').textContent = `${new Date(data.date).toUTCString()} · ${Object.entries(data.machine)
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ')}`;

  function barChart(spec, box) {
    const k = spec.series.length;
    const n = spec.categories.length;
    const slots = n * (k + 1);
    const x = Array.from({ length: slots }, (_, i) => i);
    const ys = spec.series.map((s, j) => x.map((xi) => (xi % (k + 1) === j ? s.values[Math.floor(xi / (k + 1))] : null)));
    const centers = spec.categories.map((_, i) => i * (k + 1) + (k - 1) / 2);
    const width = Math.max(400, box.clientWidth || 600);
    const all = spec.series.flatMap((s) => s.values).filter((v) => v != null && v > 0);
    // Values spanning orders of magnitude (in-process vs HTTP transports) get a log scale, so the small bars stay visible.
    const log = all.length > 1 && Math.max(...all) / Math.min(...all) > 50;
    const floor = log ? 10 ** Math.floor(Math.log10(Math.min(...all))) : 0;
    const short = (c) => (c.length > 28 ? `${c.slice(0, 27)}…` : c);
    // Slanted labels when they would not fit side by side.
    const slant = n * Math.max(...spec.categories.map((c) => short(c).length)) * 7 > width * 0.8;
    const opts = {
      width,
      height: 300 + (slant ? 90 : 0),
      scales: {
        x: { time: false, range: [-1, slots + 1] },
        y: log ? { distr: 3, range: (u, min, max) => [floor, max * 1.5] } : { range: (u, min, max) => [0, max > 0 ? max * 1.08 : 1] },
      },
      series: [
        { label: 'category', value: (u, v) => (v == null ? '' : (spec.categories[Math.floor(v / (k + 1))] ?? '')) },
        ...spec.series.map((s, j) => ({
          label: s.label,
          fill: PALETTE[j % PALETTE.length],
          stroke: PALETTE[j % PALETTE.length],
          width: 0,
          paths: uPlot.paths.bars({ size: [0.9, 60], align: 0 }),
          fillTo: () => floor,
          points: { show: false },
          value: (u, v) => fmt(v),
        })),
      ],
      axes: [
        { splits: () => centers, values: () => spec.categories.map(short), rotate: slant ? -35 : 0, size: slant ? 150 : 40, grid: { show: false }, gap: 4 },
        { label: log ? `${spec.unit} (log scale)` : spec.unit, values: (u, t) => t.map(fmt), size: 70 },
      ],
      legend: { live: false },
    };
    return new uPlot(opts, [x, ...ys], box);
  }

  function lineChart(spec, box) {
    const opts = {
      width: Math.max(400, box.clientWidth || 600),
      height: 280,
      scales: { x: { time: false } },
      legend: { live: false },
      series: [
        { label: 'seconds' },
        ...spec.series.map((s, j) => ({ label: s.label, stroke: PALETTE[j % PALETTE.length], width: 2, value: (u, v) => fmt(v) })),
      ],
      axes: [{ label: 'seconds' }, { label: spec.unit, values: (u, t) => t.map(fmt), size: 70 }],
    };
    return new uPlot(opts, [spec.x, ...spec.series.map((s) => s.values)], box);
  }

  function valuesTable(spec) {
    if (spec.kind !== 'bars') return el('span');
    const head = el('tr', {}, el('th', { textContent: '' }), ...spec.series.map((s) => el('th', { textContent: s.label })));
    const rows = spec.categories.map((c, i) =>
      el('tr', {}, el('td', { textContent: c }), ...spec.series.map((s) => el('td', { className: 'n', textContent: fmt(s.values[i]) }))),
    );
    return el('details', {}, el('summary', { textContent: 'values' }), el('table', {}, head, ...rows));
  }

  const root = document.getElementById('results');
  for (const r of data.results) {
    const charts = el('div', { className: 'charts' });
    const section = el('section', { className: 'result' }, el('h2', { textContent: r.name }), charts);
    root.append(section);
    // Every chart's box first, then the charts: a box's width depends on how many share the grid row.
    const boxes = r.charts.map((spec) => {
      const box = el('div');
      const src = `from ${spec.source}${spec.derived ? ` (${spec.derived})` : ''}`;
      charts.append(
        el('div', { className: 'chart' }, el('h3', { textContent: spec.title }), box, el('div', { className: 'src', textContent: src }), valuesTable(spec)),
      );
      return box;
    });
    r.charts.forEach((spec, i) => {
      const u = spec.kind === 'lines' ? lineChart(spec, boxes[i]) : barChart(spec, boxes[i]);
      drawn.push({ result: r.name, spec, u });
    });
    section.append(el('details', {}, el('summary', { textContent: 'raw results (JSON)' }), el('pre', { textContent: JSON.stringify(r.doc, null, 2) })));
  }
})();
