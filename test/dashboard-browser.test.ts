// The live dashboard in a real browser (headless Chromium): `sluice serve`'s /dashboard loads with
// the token and is refused without it, shows non-zero rows/s within seconds of a client pulling
// batches, keeps updating as batches flow, and logs no console errors; the cluster panel stays
// hidden on `sluice serve` and, on a host that has /v1/cluster, lists its workers and split counts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipeline, type PlanSpec } from '@sluice/core';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { createBatchServer, createDashboard, type BatchServer } from '@sluice/core/serve';
import { tempDir } from '../packages/core/test/helpers.js';
import { CI, collectErrors, launchBrowser, noBrowser } from './browser.js';

if (noBrowser !== null && !CI) console.warn(`skipping the dashboard browser tests: ${noBrowser}`);

const TOKEN = 'dash-sekret';
const dir = tempDir('sluice-dashboard-test-');
const data = join(dir, 'rm1.parquet');
// Many epochs of a small file: the run does not end while the test watches.
const plan: PlanSpec = { ...getPreset('rm1').defaultPlan(), batchSize: 256, epochs: 200, backend: { name: 'reference' } };

interface DashState {
  polls: number;
  rowsPerSec: number;
  snapshot: { pipeline: { rows: number; batches: number } } | null;
  series: Record<string, number[]>;
  charts: Record<string, { data: number[][] }>;
}

describe.skipIf(noBrowser !== null && !CI)('the dashboard in Chromium', () => {
  let srv: BatchServer;
  let url = '';
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let pulling = true;
  let pulled: Promise<void>;

  beforeAll(async () => {
    expect(noBrowser, 'CI=true needs Chromium').toBeNull();
    await generateDataset({ preset: 'rm1', rows: 20_000, out: data, seed: 11, rowGroupSize: 2_000 });
    srv = await createBatchServer(plan, { input: data }, { token: TOKEN });
    url = await srv.listen(0);
    // A trainer pulling batches at a steady pace, as long as the test runs.
    pulled = (async () => {
      for (let seq = 0; pulling; seq++) {
        const r = await fetch(`${url}/v1/batches/${seq}`, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'application/msgpack' } });
        await r.arrayBuffer();
        await new Promise((res) => setTimeout(res, 10));
      }
    })();
    ({ browser, close: closeBrowser } = await launchBrowser());
  });

  afterAll(async () => {
    pulling = false;
    await pulled;
    await closeBrowser?.();
    await srv?.close();
  });

  const state = (page: Page): Promise<DashState> => page.evaluate(() => (window as unknown as { sluiceDashboard: DashState }).sluiceDashboard);

  it('loads with the token, shows non-zero rows/s within seconds, updates as batches flow, and logs no errors', async () => {
    const page = await browser.newPage();
    const errors = collectErrors(page);
    const t0 = performance.now();
    const r = await page.goto(`${url}/dashboard?token=${TOKEN}&interval=500`);
    expect(r?.status()).toBe(200);
    // The token is kept by the page's script, not left in the address bar.
    expect(await page.evaluate(() => location.search)).toBe('?interval=500');
    await page.waitForFunction(() => (window as unknown as { sluiceDashboard: DashState }).sluiceDashboard.rowsPerSec > 0, { timeout: 10_000 });
    const firstSeconds = (performance.now() - t0) / 1000;
    expect(firstSeconds).toBeLessThan(10);
    const a = await state(page);
    const tile = await page.$eval('#tile-rows-per-sec .v', (e) => e.textContent);
    expect(tile).not.toBe('0');
    // The throughput chart plots the rates the page computed.
    expect(a.charts.throughput!.data[1]).toEqual(a.series.rows);
    await new Promise((res) => setTimeout(res, 2_000));
    const b = await state(page);
    expect(b.polls).toBeGreaterThan(a.polls);
    expect(b.snapshot!.pipeline.rows).toBeGreaterThan(a.snapshot!.pipeline.rows);
    expect(b.series.rows!.length).toBeGreaterThan(a.series.rows!.length);
    expect(b.series.rows!.filter((v) => v > 0).length).toBeGreaterThan(1);
    // The page's counters are the server's pipeline runs', which made at least the batches pulled.
    // The trainer keeps pulling, so compare with what the server had made before the page asked:
    // the page polls one request after another, so the second poll completed after reading
    // `polls` was sent after `made` was read.
    const made = srv.store.made;
    const polls = (await state(page)).polls;
    await page.waitForFunction((n) => (window as unknown as { sluiceDashboard: DashState }).sluiceDashboard.polls >= n + 2, { timeout: 10_000 }, polls);
    expect((await state(page)).snapshot!.pipeline.batches).toBeGreaterThanOrEqual(made - 8);
    // `sluice serve` has no cluster: the panel stays hidden and /v1/cluster is never asked.
    expect(await page.$eval('#cluster', (e) => (e as HTMLElement).hidden)).toBe(true);
    expect(errors).toEqual([]);
    console.log(`dashboard: first non-zero rows/s after ${firstSeconds.toFixed(1)} s; ${b.polls} polls, latest ${Math.round(b.rowsPerSec)} rows/s`);
    await page.close();
  });

  it('is refused without the token, or with a wrong one', async () => {
    const page = await browser.newPage();
    for (const target of ['/dashboard', '/dashboard?token=wrong', `/dashboard?token=${TOKEN}x`]) {
      const r = await page.goto(`${url}${target}`);
      expect(r?.status(), target).toBe(401);
      expect(await page.evaluate(() => document.body.innerText)).toMatch(/missing or wrong token/);
      expect(await page.evaluate(() => typeof (window as unknown as { sluiceDashboard?: unknown }).sluiceDashboard)).toBe('undefined');
    }
    await page.close();
  });

  it('shows the cluster panel where the host answers /v1/cluster', async () => {
    // A host that mounts the dashboard with one call, as `sluice worker` does, and answers the
    // cluster status of the contract in docs/dashboard.md (here a fixed two-worker job).
    const p = pipeline(plan, { input: data });
    const cluster = {
      job: 'job-7',
      epoch: 1,
      workers: [
        { id: 'w1', url: 'http://10.0.0.1:8080', state: 'active', lastSeenMs: Date.now(), batchesMade: 120, batchesServed: 118, rowsPerSec: 51234 },
        { id: 'w2', url: 'http://10.0.0.2:8080', state: 'draining', lastSeenMs: Date.now() - 3000, batchesMade: 90, batchesServed: 90, rowsPerSec: 40100 },
      ],
      splits: { total: 40, done: 17, leased: 2, pending: 20, dead: 1 },
      reclaims: 3,
      slowestSplit: { id: 'rm1.parquet#4', seconds: 2.5 },
    };
    const dash = createDashboard({ token: TOKEN, title: 'worker w1', backend: 'reference', batchSize: 256, metrics: () => p.metrics(), cluster: true });
    const host: Server = createServer((req, res) => {
      void dash.handle(req, res).then((done) => {
        if (done) return;
        if (req.url === '/v1/cluster' && req.headers.authorization === `Bearer ${TOKEN}`)
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(cluster));
        else res.writeHead(404).end();
      });
    });
    await new Promise<void>((res) => host.listen(0, '127.0.0.1', res));
    const page = await browser.newPage();
    const errors = collectErrors(page);
    try {
      const r = await page.goto(`http://127.0.0.1:${(host.address() as AddressInfo).port}/dashboard?token=${TOKEN}&interval=300`);
      expect(r?.status()).toBe(200);
      await page.waitForFunction(() => !(document.getElementById('cluster') as HTMLElement).hidden, { timeout: 10_000 });
      const rows = await page.$$eval('#cluster-workers tr', (trs) => trs.slice(1).map((tr) => Array.from(tr.children, (c) => c.textContent)));
      expect(rows.map((r) => r[0])).toEqual(['w1', 'w2']);
      expect(rows.map((r) => r[2])).toEqual(['active', 'draining']);
      expect(rows.map((r) => r[4])).toEqual(['120', '90']);
      const tile = (id: string): Promise<string | null> => page.$eval(`#${id} .v`, (e) => e.textContent);
      expect(await tile('cluster-done')).toBe('17 / 40');
      expect(await tile('cluster-leased')).toBe('2');
      expect(await tile('cluster-pending')).toBe('20');
      expect(await tile('cluster-dead')).toBe('1');
      expect(await tile('cluster-reclaims')).toBe('3');
      expect(await tile('cluster-slowest')).toBe('rm1.parquet#4 (2.5 s)');
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await new Promise<void>((res) => {
        host.close(() => res());
        host.closeAllConnections();
      });
    }
  });
});
