/**
 * The live dashboard: `GET /dashboard`, one self-contained page (uPlot and the page's script
 * inlined), and `GET /v1/metrics.json`, the snapshot it polls. Any Node HTTP server mounts both with
 * one call in its request handler — `sluice serve` does, and so can a cluster worker — under the
 * server's own token (docs/dashboard.md).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PipelineMetrics } from '../pipeline/metrics.js';
import { asset, fillTemplate, scriptText, uplot } from '../util/assets.js';
import { tokenCheck } from './auth.js';

/**
 * What the dashboard shows and who may see it.
 *
 * @example
 * const dash = createDashboard({ token, title: 'worker w1', backend: 'cpu', batchSize: 4096, metrics: () => runs.metrics(), cluster: true });
 */
export interface DashboardOptions {
  /** The server's bearer token; the page takes it once as `?token=` (see docs/dashboard.md). */
  token?: string;
  /** Shown as the page's heading. */
  title: string;
  /** The backend the pipeline runs on. */
  backend: string;
  batchSize: number;
  /** The pipeline's counters now (a `Pipeline`'s `metrics()`, or several runs summed). */
  metrics(): PipelineMetrics;
  /** More counters of the host (batches served, connections …), shown as a table. */
  counters?(): Record<string, number>;
  /** True on a cluster worker: the page then asks `GET /v1/cluster` (answered by the host) for the cluster panel. */
  cluster?: boolean;
}

/**
 * The JSON of `GET /v1/metrics.json`: the pipeline's cumulative counters at `time`; the page
 * turns two of them into rates.
 *
 * @example
 * const s: DashboardSnapshot = await (await fetch(`${url}/v1/metrics.json`, { headers })).json();
 * console.log(s.pipeline.rows, s.memory.rss);
 */
export interface DashboardSnapshot {
  /** Wall-clock time of the snapshot, ms since the epoch. */
  time: number;
  /** When the dashboard was created, ms since the epoch. */
  startedAt: number;
  title: string;
  backend: string;
  batchSize: number;
  pipeline: PipelineMetrics;
  /** `process.memoryUsage()` of the server, bytes. */
  memory: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
  counters: Record<string, number>;
  /** The path of the cluster status when the host has one, else null. */
  cluster: string | null;
}

/**
 * A mounted dashboard: `handle` answers its two paths and resolves true, or resolves false for any
 * other request, which the host then answers itself.
 *
 * @example
 * if (await dash.handle(req, res)) return;
 */
export interface Dashboard {
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** The snapshot `/v1/metrics.json` answers now. */
  snapshot(): DashboardSnapshot;
}

/** The dashboard page's path. */
export const DASHBOARD_PATH = '/dashboard';
/** The snapshot's path, under /v1 with the rest of the API. */
export const METRICS_JSON_PATH = '/v1/metrics.json';
/** The cluster status a worker answers, which the page reads when the snapshot names it. */
export const CLUSTER_PATH = '/v1/cluster';

/**
 * The dashboard over `o.metrics()`. Mount it in a server's request handler before the server's own
 * routes: `if (await dash.handle(req, res)) return;`. With a token, the page needs `?token=` (or an
 * `Authorization` header) and the snapshot an `Authorization` header, as /v1 does.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { createDashboard } from '@sluice/core/serve';
 * const dash = createDashboard({ token: 'secret', title: 'my loader', backend: 'cpu', batchSize: 4096, metrics: () => p.metrics() });
 * createServer(async (req, res) => {
 *   if (await dash.handle(req, res)) return;
 *   res.writeHead(404).end();
 * }).listen(8080); // open http://127.0.0.1:8080/dashboard?token=secret
 */
export function createDashboard(o: DashboardOptions): Dashboard {
  const auth = tokenCheck(o.token);
  const startedAt = Date.now();
  const snapshot = (): DashboardSnapshot => {
    const mem = process.memoryUsage();
    return {
      time: Date.now(),
      startedAt,
      title: o.title,
      backend: o.backend,
      batchSize: o.batchSize,
      pipeline: o.metrics(),
      memory: { rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, external: mem.external, arrayBuffers: mem.arrayBuffers },
      counters: o.counters?.() ?? {},
      cluster: o.cluster === true ? CLUSTER_PATH : null,
    };
  };
  return {
    snapshot,
    async handle(req, res) {
      const target = req.url ?? '/';
      const q = target.indexOf('?');
      const path = q === -1 ? target : target.slice(0, q);
      if (path !== DASHBOARD_PATH && path !== METRICS_JSON_PATH) return false;
      if (req.method !== 'GET') {
        res.writeHead(405, { allow: 'GET', 'content-type': 'application/json' }).end(JSON.stringify({ error: `method ${req.method} not allowed` }));
        return true;
      }
      if (path === METRICS_JSON_PATH) {
        if (!auth.header(req.headers.authorization)) {
          res
            .writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' })
            .end(JSON.stringify({ error: 'missing or wrong bearer token' }));
          return true;
        }
        const body = JSON.stringify(snapshot());
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' }).end(body);
        return true;
      }
      const given = new URLSearchParams(q === -1 ? '' : target.slice(q + 1)).get('token');
      if (!auth.query(given) && !(auth.required && auth.header(req.headers.authorization))) {
        res
          .writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
          .end(`missing or wrong token: open ${DASHBOARD_PATH}?token=TOKEN (the server's --token), or send Authorization: Bearer TOKEN\n`);
        return true;
      }
      const nonce = randomBytes(16).toString('base64');
      const body = page(o.title, nonce);
      res
        .writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          'cache-control': 'no-store',
          // The token is in this page's URL: no Referer carries it anywhere, and only this page's own scripts run.
          'referrer-policy': 'no-referrer',
          'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
          'x-content-type-options': 'nosniff',
        })
        .end(body);
      return true;
    },
  };
}

/** The page: the template with uPlot, the page script and the title filled in. */
function page(title: string, nonce: string): string {
  const u = uplot();
  return fillTemplate(asset('dashboard.html'), {
    NONCE: nonce,
    TITLE: escapeHtml(title),
    UPLOT_CSS: u.css,
    UPLOT_JS: scriptText(u.js, 'uPlot'),
    APP_JS: scriptText(asset('dashboard.js'), 'dashboard.js'),
  });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
