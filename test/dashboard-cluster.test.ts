// The dashboard's cluster view in a real browser against a real job: a redis-server, two
// `sluice worker` processes of the built bin, a trainer reading through one of them, and headless
// Chromium on that worker's /dashboard. The panel must list both workers, and its split counts must
// be what `sluice job status NAME --json` prints for the same state: once while the trainer is
// paused mid-job, and once the job is done.
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSluice, tempDir } from '../packages/core/test/helpers.js';
import { createClient } from '@sluice/client';
import { dataset, plan, startWorker, submit, type WorkerProc } from '../packages/core/test/cluster/cluster.js';
import { RedisServer, redisMissing } from '../packages/core/test/cluster/redis.js';
import { CI, collectErrors, launchBrowser, noBrowser } from './browser.js';

// redisMissing() throws under CI=true, so CI never passes with this skipped.
const missing = redisMissing() ?? (noBrowser !== null && !CI ? noBrowser : null);
if (missing !== null) console.warn(`skipping the dashboard cluster test: ${missing}`);

const TOKEN = 'cluster-dash-token';
const JOB = 'dash';

/** What the panel shows of a status, and what the test compares: everything but the clocks. */
interface Shown {
  heading: string;
  tiles: Record<string, string>;
  /** id, url, state, batches made, batches served: by worker id. */
  workers: string[][];
}

interface Status {
  job: string;
  epoch: number;
  splits: { total: number; done: number; leased: number; pending: number; dead: number };
  reclaims: number;
  slowestSplit: { id: string; seconds: number } | null;
  workers: Array<{ id: string; url: string; state: string; batchesMade: number; batchesServed: number }>;
}

/** A trainer through `url` with the token: the seqs it read, from `from` on, `stopAt` of them at most. */
async function train(url: string, from: number, stopAt = Infinity): Promise<number[]> {
  const c = createClient(url, { token: TOKEN, retries: 8, retryDelayMs: 100 });
  const got: number[] = [];
  try {
    for await (const b of c.batches({ start: from, prefetch: 2 })) {
      got.push(b.seq);
      b.release?.();
      if (got.length >= stopAt) break;
    }
  } finally {
    await c.close();
  }
  return got;
}

/** The panel's text for status `s`, as docs/dashboard.md describes it (independent of the page's code). */
function expected(s: Status): Shown {
  return {
    heading: `· job ${s.job} · epoch ${s.epoch}`,
    tiles: {
      'cluster-done': `${s.splits.done} / ${s.splits.total}`,
      'cluster-leased': String(s.splits.leased),
      'cluster-pending': String(s.splits.pending),
      'cluster-dead': String(s.splits.dead),
      'cluster-reclaims': String(s.reclaims),
      'cluster-slowest': s.slowestSplit === null ? '—' : `${s.slowestSplit.id} (${s.slowestSplit.seconds.toFixed(1)} s)`,
    },
    workers: s.workers.map((w) => [w.id, w.url, w.state, String(w.batchesMade), String(w.batchesServed)]).sort((a, b) => a[0]!.localeCompare(b[0]!)),
  };
}

describe.skipIf(missing !== null)(`the dashboard's cluster view in Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let server: RedisServer;
  let workers: WorkerProc[] = [];
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    expect(noBrowser, 'CI=true needs Chromium').toBeNull();
    server = await RedisServer.start();
    const redis = server.client();
    try {
      // 48 batches in 12 splits of 4, over two epochs.
      await submit(redis, JOB, plan(), await dataset(tempDir('sluice-dash-cluster-')), 4);
    } finally {
      redis.disconnect();
    }
    // Few batches held each, so that both workers make splits and the counts move while the test watches.
    const extra = ['--token', TOKEN, '--max-held', '8'];
    const started = Promise.all([startWorker(server.url, JOB, extra), startWorker(server.url, JOB, extra)]);
    const launched = launchBrowser();
    [workers, { close: closeBrowser }] = await Promise.all([started, launched]);
    const { browser } = await launched;
    page = await browser.newPage();
    errors = collectErrors(page);
  }, 120_000);

  afterAll(async () => {
    await closeBrowser?.();
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await server?.stop();
  });

  const status = async (): Promise<Status> => {
    const r = await runSluice(['job', 'status', JOB, '--redis', server.url, '--json']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    return JSON.parse(r.stdout) as Status;
  };

  const shown = (): Promise<Shown> =>
    page.evaluate(() => {
      const text = (sel: string): string => document.querySelector(sel)?.textContent ?? '';
      const tiles: Record<string, string> = {};
      for (const id of ['cluster-done', 'cluster-leased', 'cluster-pending', 'cluster-dead', 'cluster-reclaims', 'cluster-slowest'])
        tiles[id] = text(`#${id} .v`);
      const rows = Array.from(document.querySelectorAll('#cluster-workers tr'))
        .slice(1)
        .map((tr) => Array.from(tr.children, (c) => c.textContent ?? ''));
      return {
        heading: text('#cluster-job'),
        tiles,
        // Columns: worker, url, state, last seen, made, served, rows/s: the clocks are left out.
        workers: rows.map((r) => [r[0]!, r[1]!, r[2]!, r[4]!, r[5]!]).sort((a, b) => a[0]!.localeCompare(b[0]!)),
      };
    });

  const polls = (): Promise<number> => page.evaluate(() => (window as unknown as { sluiceDashboard: { polls: number } }).sluiceDashboard.polls);

  /**
   * The panel against `sluice job status` without a race: a status, then two polls of the page
   * (the second one begins after the status was read), then a status again. While nothing
   * delivers, the counts only move one way (workers lease and make until they hold enough), so
   * two equal statuses around the page's read mean the page read that state too. Retries until
   * they are equal.
   */
  async function compareStable(): Promise<Status> {
    const t0 = Date.now();
    for (;;) {
      const before = await status();
      const p0 = await polls();
      await page.waitForFunction(
        (n: number) => (window as unknown as { sluiceDashboard: { polls: number } }).sluiceDashboard.polls >= n,
        { timeout: 10_000 },
        p0 + 2,
      );
      const onPage = await shown();
      const after = await status();
      if (JSON.stringify(expected(before)) === JSON.stringify(expected(after))) {
        expect(onPage).toEqual(expected(after));
        return after;
      }
      if (Date.now() - t0 > 30_000)
        throw new Error(`the job's status did not settle: ${JSON.stringify(expected(before))} then ${JSON.stringify(expected(after))}`);
    }
  }

  it('lists both workers, and its split counts match `sluice job status --json` mid-job and at the end', async () => {
    const [a, b] = workers as [WorkerProc, WorkerProc];
    const r = await page.goto(`${a.url}/dashboard?token=${TOKEN}&interval=300`);
    expect(r?.status()).toBe(200);
    await page.waitForFunction(() => !(document.getElementById('cluster') as HTMLElement).hidden, { timeout: 10_000 });

    // A trainer that pauses after 20 of the 48 batches: splits done, others leased or pending.
    const first = await train(a.url, 0, 20);
    expect(first).toEqual([...Array(20).keys()]);
    const mid = await compareStable();
    expect(mid.splits.done).toBeGreaterThanOrEqual(5);
    expect(mid.splits.done).toBeLessThan(12);
    expect(mid.workers.map((w) => w.id).sort()).toEqual([a.id, b.id].sort());
    expect(mid.workers.map((w) => w.state)).toEqual(['active', 'active']);

    // The rest of the job (batches the paused trainer prefetched are made again for it).
    const rest = await train(a.url, 20);
    expect(rest).toEqual([...Array(28).keys()].map((i) => i + 20));
    const end = await compareStable();
    expect(end.splits).toEqual({ total: 12, done: 12, leased: 0, pending: 0, dead: 0 });
    expect(end.epoch).toBe(1); // epochs count from 0: the last one once all splits are done
    // Both made batches: the split counts are the whole job's, not the page's own worker's.
    for (const w of end.workers) expect(w.batchesMade, w.id).toBeGreaterThan(0);
    expect(errors).toEqual([]);
    console.log(`dashboard cluster view: mid-job ${JSON.stringify(mid.splits)}, at the end ${JSON.stringify(end.splits)}`);
  }, 120_000);
});
