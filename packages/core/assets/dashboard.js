// The dashboard page's script (served inlined by packages/core/src/serve/dashboard.ts; plain
// browser JavaScript, no build step). It polls /v1/metrics.json, turns consecutive snapshots of
// cumulative counters into rates, and draws them with uPlot (the global `uPlot`).
(() => {
  'use strict';
  const params = new URLSearchParams(location.search);
  // The token comes once in the page's URL; it is kept in this closure for the page's requests and
  // taken out of the address bar, so it is not left in the history or on a screenshot.
  const token = params.get('token');
  const interval = Math.min(60000, Math.max(100, Number(params.get('interval')) || 1000));
  if (token !== null) {
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', location.pathname + (rest ? `?${rest}` : ''));
  }
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  /** Points kept per series: 10 minutes at one poll a second. */
  const KEEP = 600;
  const names = ['t', 'rows', 'batches', 'decode', 'preprocess', 'batch', 'consumer', 'buffered', 'rss', 'heap', 'measured', 'modelled'];
  const series = Object.fromEntries(names.map((n) => [n, []]));
  const state = { polls: 0, snapshot: null, cluster: null, charts: {}, series, rowsPerSec: 0, batchesPerSec: 0 };
  // Read by the browser tests (test/dashboard-browser.test.ts) and handy in the console.
  window.sluiceDashboard = state;

  const $ = (id) => document.getElementById(id);
  const fmt = (v, digits = 0) =>
    v == null || !Number.isFinite(v)
      ? '—'
      : Math.abs(v) >= 1e9
        ? `${(v / 1e9).toFixed(2)} G`
        : Math.abs(v) >= 1e6
          ? `${(v / 1e6).toFixed(2)} M`
          : Math.abs(v) >= 1e4
            ? `${(v / 1e3).toFixed(1)} k`
            : v.toFixed(digits);
  const axisFmt = (_, ticks) => ticks.map((v) => fmt(v, 1));
  const MB = 2 ** 20;

  function chart(id, defs, axes) {
    const el = $(id);
    const opts = {
      width: Math.max(300, el.clientWidth || 520),
      height: 220,
      series: [{}, ...defs.map((d) => ({ label: d.label, stroke: d.color, width: 2, scale: d.scale ?? 'y', points: { show: false } }))],
      axes: [{}, ...axes.map((a, i) => ({ scale: a.scale, label: a.label, values: axisFmt, size: 60, side: i === 0 ? 3 : 1, grid: { show: i === 0 } }))],
      scales: { x: { time: true } },
      legend: { live: true },
    };
    const u = new uPlot(opts, [[], ...defs.map(() => [])], el);
    u.keys = defs.map((d) => d.key);
    return u;
  }

  const charts = state.charts;
  charts.throughput = chart(
    'chart-throughput',
    [
      { key: 'rows', label: 'rows/s', color: '#2563eb', scale: 'rows' },
      { key: 'batches', label: 'batches/s', color: '#db2777', scale: 'batches' },
    ],
    [
      { scale: 'rows', label: 'rows/s' },
      { scale: 'batches', label: 'batches/s' },
    ],
  );
  charts.stages = chart(
    'chart-stages',
    [
      { key: 'decode', label: 'decode (waiting for chunks) %', color: '#0891b2' },
      { key: 'preprocess', label: 'preprocess %', color: '#7c3aed' },
      { key: 'batch', label: 'batch assembly %', color: '#ea580c' },
      { key: 'consumer', label: 'waiting for the consumer %', color: '#65a30d' },
    ],
    [{ scale: 'y', label: '% of wall time' }],
  );
  charts.memory = chart(
    'chart-memory',
    [
      { key: 'buffered', label: 'batches buffered', color: '#0f766e', scale: 'depth' },
      { key: 'rss', label: 'RSS MiB', color: '#b91c1c', scale: 'mem' },
      { key: 'heap', label: 'JS heap MiB', color: '#f59e0b', scale: 'mem' },
    ],
    [
      { scale: 'depth', label: 'batches' },
      { scale: 'mem', label: 'MiB' },
    ],
  );
  charts.cost = chart(
    'chart-cost',
    [
      { key: 'measured', label: 'measured backend ms/s', color: '#2563eb', scale: 'measured' },
      { key: 'modelled', label: 'modelled ms/s (simulators)', color: '#dc2626', scale: 'modelled' },
    ],
    // Two axes: a simulated device is often orders of magnitude faster than the code that simulates it.
    [
      { scale: 'measured', label: 'measured ms/s' },
      { scale: 'modelled', label: 'modelled ms/s' },
    ],
  );
  window.addEventListener('resize', () => {
    for (const u of Object.values(charts)) u.setSize({ width: Math.max(300, u.root.parentElement.clientWidth), height: 220 });
  });

  function push(name, v) {
    const a = series[name];
    a.push(v);
    if (a.length > KEEP) a.shift();
  }

  /** Appends the rates between two snapshots (counters only go up; a drop counts as 0). */
  function addSample(prev, s) {
    const dt = (s.time - prev.time) / 1000;
    if (dt <= 0) return;
    const p = s.pipeline;
    const q = prev.pipeline;
    const rate = (a, b) => Math.max(0, a - b) / dt;
    const share = (a, b) => (rate(a, b) / 1000) * 100;
    state.rowsPerSec = rate(p.rows, q.rows);
    state.batchesPerSec = rate(p.batches, q.batches);
    push('t', s.time / 1000);
    push('rows', state.rowsPerSec);
    push('batches', state.batchesPerSec);
    push('decode', share(p.sourceWaitMs, q.sourceWaitMs));
    push('preprocess', share(p.preprocessMs, q.preprocessMs));
    push('batch', share(p.batchMs, q.batchMs));
    push('consumer', share(p.consumerWaitMs, q.consumerWaitMs));
    push('buffered', p.buffered);
    push('rss', s.memory.rss / MB);
    push('heap', s.memory.heapUsed / MB);
    push('measured', rate(p.preprocessMs, q.preprocessMs));
    const modelled = p.reportTotals.modelledMs;
    push('modelled', modelled === undefined ? null : rate(modelled, q.reportTotals.modelledMs ?? 0));
    for (const u of Object.values(charts)) u.setData([series.t, ...u.keys.map((k) => series[k])]);
  }

  function tiles(el, items) {
    el.replaceChildren(
      ...items.map(([k, v, id]) => {
        const d = document.createElement('div');
        d.className = 'tile';
        if (id) d.id = id;
        const vv = document.createElement('div');
        vv.className = 'v';
        vv.textContent = v;
        const kk = document.createElement('div');
        kk.className = 'k';
        kk.textContent = k;
        d.append(vv, kk);
        return d;
      }),
    );
  }

  function table(el, head, rows) {
    const tr = (cells, tag) => {
      const r = document.createElement('tr');
      for (const c of cells) {
        const cell = document.createElement(tag);
        const text = typeof c === 'object' && c !== null ? c : { text: c };
        cell.textContent = typeof text.text === 'number' ? fmt(text.text, Number.isInteger(text.text) ? 0 : 2) : String(text.text);
        if (typeof text.text === 'number') cell.className = 'n';
        if (text.cls) cell.classList.add(text.cls);
        r.append(cell);
      }
      return r;
    };
    el.replaceChildren(tr(head, 'th'), ...rows.map((r) => tr(r, 'td')));
  }

  function render(s) {
    const p = s.pipeline;
    $('backend').textContent = `backend ${s.backend} · batches of ${s.batchSize}`;
    tiles($('tiles'), [
      ['rows/s', fmt(state.rowsPerSec), 'tile-rows-per-sec'],
      ['batches/s', fmt(state.batchesPerSec, 1), 'tile-batches-per-sec'],
      ['rows made', fmt(p.rows), 'tile-rows'],
      ['batches made', fmt(p.batches), 'tile-batches'],
      ['prefetch buffered (max)', `${p.buffered} (${p.maxBuffered})`],
      ['RSS', `${fmt(s.memory.rss / MB)} MiB`],
      ['up', `${Math.round((s.time - s.startedAt) / 1000)} s`],
    ]);
    // One row per report field: the run's sum beside the last chunk's value; then the backend's own summary.
    const last = p.lastReport ?? {};
    const fields = [...new Set(['wallMs', ...Object.keys(p.reportTotals), ...Object.keys(last)])].filter(
      (k) => typeof last[k] === 'number' || k in p.reportTotals,
    );
    const total = (k) => (k === 'wallMs' ? p.preprocessMs : k === 'bytesIn' ? p.bytesIn : k === 'bytesOut' ? p.bytesOut : (p.reportTotals[k] ?? '—'));
    table(
      $('cost-table'),
      ['report field', { text: 'run total', cls: 'n' }, { text: 'last chunk', cls: 'n' }],
      [
        ...fields.map((k) => [k === 'wallMs' ? 'wallMs (measured)' : k, total(k), typeof last[k] === 'number' ? last[k] : '—']),
        ...Object.entries(p.backendSummary ?? {}).map(([k, v]) => [k, v, '']),
      ],
    );
    const counters = Object.entries(s.counters);
    $('counters').hidden = counters.length === 0;
    table($('counters-table'), ['counter', { text: 'value', cls: 'n' }], counters);
  }

  function renderCluster(c) {
    $('cluster').hidden = false;
    $('cluster-job').textContent = `· job ${c.job} · epoch ${c.epoch}`;
    tiles($('cluster-tiles'), [
      ['splits done', `${c.splits.done} / ${c.splits.total}`, 'cluster-done'],
      ['leased', String(c.splits.leased), 'cluster-leased'],
      ['pending', String(c.splits.pending), 'cluster-pending'],
      ['dead', String(c.splits.dead), 'cluster-dead'],
      ['reclaims', String(c.reclaims), 'cluster-reclaims'],
      ['slowest split', c.slowestSplit ? `${c.slowestSplit.id} (${c.slowestSplit.seconds.toFixed(1)} s)` : '—', 'cluster-slowest'],
    ]);
    table(
      $('cluster-workers'),
      [
        'worker',
        'url',
        'state',
        { text: 'last seen, s ago', cls: 'n' },
        { text: 'batches made', cls: 'n' },
        { text: 'batches served', cls: 'n' },
        { text: 'rows/s', cls: 'n' },
      ],
      c.workers.map((w) => [
        w.id,
        w.url,
        { text: w.state, cls: `state-${w.state}` },
        Math.max(0, (Date.now() - w.lastSeenMs) / 1000),
        w.batchesMade,
        w.batchesServed,
        w.rowsPerSec,
      ]),
    );
  }

  async function getJson(path) {
    const r = await fetch(path, { headers, cache: 'no-store' });
    if (r.status === 401) throw new Error('the server refused the token (401): open the page as /dashboard?token=TOKEN');
    if (!r.ok) return null;
    return r.json();
  }

  async function poll() {
    try {
      const s = await getJson('/v1/metrics.json');
      if (s === null) throw new Error('no metrics at /v1/metrics.json');
      if (state.snapshot !== null) addSample(state.snapshot, s);
      state.snapshot = s;
      render(s);
      if (s.cluster) {
        const c = await getJson(s.cluster);
        state.cluster = c;
        if (c === null) $('cluster').hidden = true;
        else renderCluster(c);
      }
      state.polls++;
      $('status').textContent = `updated ${new Date(s.time).toLocaleTimeString()} · every ${interval / 1000} s`;
    } catch (e) {
      // Shown on the page, not thrown: a server restarting is expected, and the page keeps trying.
      $('status').textContent = `cannot read the server: ${e.message}`;
    }
    setTimeout(poll, interval);
  }
  poll();
})();
