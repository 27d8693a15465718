/**
 * The pictures in the docs, taken in headless Chromium from real runs:
 *
 *   npx tsx bench/screenshots.ts dashboard OUT.png          `sluice serve` on fpga-sim, a client pulling batches
 *   npx tsx bench/screenshots.ts report REPORT.html OUT.png  a bench report written earlier
 *
 * docs/dashboard.png, docs/bench-report.png and bench/report.png were made this way (bench/README.md).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { getPreset } from '@sluice/core/gen';
import { collectErrors, launchBrowser, noBrowser } from '../test/browser.js';
import { benchCacheDir, cachedDataset, log } from './lib.js';

const [what, ...rest] = process.argv.slice(2);
if (noBrowser !== null) {
  log(`cannot run: ${noBrowser}`);
  process.exit(2);
}
const WIDTH = 1400;

async function dashboard(out: string): Promise<void> {
  const data = await cachedDataset({ preset: 'rm1', rows: 200_000 });
  const planFile = join(benchCacheDir(), 'screenshot-plan.json');
  writeFileSync(planFile, JSON.stringify({ ...getPreset('rm1').defaultPlan(), batchSize: 1024, epochs: 20, backend: { name: 'fpga-sim' } }));
  const bin = fileURLToPath(new URL('../packages/core/bin/sluice.js', import.meta.url));
  const child = spawn(process.execPath, [bin, 'serve', '--plan', planFile, '--input', data.path, '--port', '0', '--token', 'screenshot'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      const m = / at (http:\/\/[^/\s]+)\/v1\/batches/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`sluice serve exited (${code}): ${err}`)));
  });
  let pulling = true;
  const headers = { authorization: 'Bearer screenshot', accept: 'application/msgpack' };
  // A trainer that takes a batch every 30 ms: the run waits on it part of the time.
  const pulled = (async () => {
    for (let seq = 0; pulling; seq++) {
      await (await fetch(`${url}/v1/batches/${seq}`, { headers })).arrayBuffer();
      await new Promise((r) => setTimeout(r, 30));
    }
  })();
  const { browser, close } = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors = collectErrors(page);
    await page.setViewport({ width: WIDTH, height: 900 });
    await page.goto(`${url}/dashboard?token=screenshot`);
    await new Promise((r) => setTimeout(r, 20_000));
    await page.screenshot({ path: out, fullPage: true });
    if (errors.length > 0) throw new Error(errors.join('; '));
  } finally {
    pulling = false;
    await pulled;
    await close();
    child.kill('SIGTERM');
  }
}

async function report(html: string, out: string): Promise<void> {
  const { browser, close } = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors = collectErrors(page);
    await page.setViewport({ width: WIDTH, height: 900 });
    await page.goto(pathToFileURL(html).href);
    await page.screenshot({ path: out, fullPage: true });
    if (errors.length > 0) throw new Error(errors.join('; '));
  } finally {
    await close();
  }
}

if (what === 'dashboard' && rest.length === 1) await dashboard(rest[0]!);
else if (what === 'report' && rest.length === 2) await report(rest[0]!, rest[1]!);
else {
  log('usage: npx tsx bench/screenshots.ts dashboard OUT.png | report REPORT.html OUT.png');
  process.exit(2);
}
log(`wrote ${rest.at(-1)}`);
