// The dashboard over HTTP (the browser tests are in test/dashboard-browser.test.ts): the token
// rules of /dashboard and /v1/metrics.json, the page's headers, and a snapshot whose counters are
// the server's own after a client has read every batch; the pipeline metrics on /metrics.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanSpec } from '@sluice/core';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { createBatchServer, type BatchServer, type DashboardSnapshot } from '@sluice/core/serve';
import { tempDir } from '../helpers.js';

const dir = tempDir('sluice-dashboard-http-');
const data = join(dir, 'rm1.parquet');
// 1000 rows in batches of 128: 8 batches.
const plan: PlanSpec = { ...getPreset('rm1').defaultPlan(), batchSize: 128, backend: { name: 'reference' } };
const TOKEN = 'sekret';
let srv: BatchServer;
let open: BatchServer;
let url = '';
let openUrl = '';
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  await generateDataset({ preset: 'rm1', rows: 1000, out: data, seed: 7, rowGroupSize: 300 });
  srv = await createBatchServer(plan, { input: data }, { token: TOKEN });
  url = await srv.listen(0);
  open = await createBatchServer(plan, { input: data });
  openUrl = await open.listen(0);
});

afterAll(async () => {
  await srv?.close();
  await open?.close();
});

describe('/dashboard and /v1/metrics.json', () => {
  it('refuse a request without the token, or with a wrong one', async () => {
    for (const [path, headers] of [
      ['/dashboard', {}],
      ['/dashboard?token=wrong', {}],
      ['/dashboard', { authorization: 'Bearer wrong' }],
      ['/v1/metrics.json', {}],
      // The snapshot takes the token only as a header, as the rest of /v1 does.
      [`/v1/metrics.json?token=${TOKEN}`, {}],
    ] as const) {
      const r = await fetch(`${url}${path}`, { headers });
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
      await r.arrayBuffer();
    }
    const r = await fetch(`${url}/dashboard`);
    expect(await r.text()).toBe("missing or wrong token: open /dashboard?token=TOKEN (the server's --token), or send Authorization: Bearer TOKEN\n");
  });

  it('serve the page with the token in its URL or a header: self-contained, no-store, no referrer, only its own scripts', async () => {
    for (const [path, headers] of [
      [`/dashboard?token=${TOKEN}`, {}],
      ['/dashboard', auth],
    ] as const) {
      const r = await fetch(`${url}${path}`, { headers });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('referrer-policy')).toBe('no-referrer');
      const html = await r.text();
      const nonce = /script-src 'nonce-([^']+)'/.exec(r.headers.get('content-security-policy')!)![1];
      const scripts = [...html.matchAll(/<script nonce="([^"]+)">/g)].map((m) => m[1]);
      expect(scripts).toEqual([nonce, nonce]);
      expect(html).toContain('uPlot');
      expect(html).not.toMatch(/\{\{[A-Z_]+\}\}/);
      expect(html).not.toMatch(/<script[^>]+src=/);
    }
    const post = await fetch(`${url}/dashboard?token=${TOKEN}`, { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it("answer a snapshot whose counters are the server's after a client read every batch", async () => {
    for (let seq = 0; seq < 8; seq++) {
      const r = await fetch(`${url}/v1/batches/${seq}`, { headers: { ...auth, accept: 'application/msgpack' } });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    }
    const r = await fetch(`${url}/v1/metrics.json`, { headers: auth });
    expect(r.status).toBe(200);
    const s = (await r.json()) as DashboardSnapshot;
    expect(s.pipeline.rows).toBe(1000);
    expect(s.pipeline.batches).toBe(8);
    expect(s.counters['batches served']).toBe(8);
    expect(s.counters['distinct batches made']).toBe(8);
    expect(s.backend).toBe('reference');
    expect(s.batchSize).toBe(128);
    expect(s.cluster).toBeNull();
    expect(s.memory.rss).toBeGreaterThan(0);
    expect(Math.abs(s.time - Date.now())).toBeLessThan(60_000);
    // The same counters in Prometheus text, next to the server's own.
    const text = await (await fetch(`${url}/metrics`, { headers: auth })).text();
    expect(text).toMatch(/^sluice_pipeline_rows_total 1000$/m);
    expect(text).toMatch(/^sluice_batches_served_total\{format="msgpack"\} 8$/m);
  });

  it('are open on a server without a token', async () => {
    expect((await fetch(`${openUrl}/dashboard`)).status).toBe(200);
    expect((await fetch(`${openUrl}/v1/metrics.json`)).status).toBe(200);
  });
});
