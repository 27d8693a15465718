/**
 * @sluice/client stays light: a trainer process that imports the built client and creates a client
 * loads no Parquet decoder, no RxJS, no metrics library and nothing of @sluice/core. A child `node`
 * records every module it loads (a node:module `load` hook, plus the CommonJS cache at exit); the
 * same recorder over the built @sluice/core shows it does see those modules (the control).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { importRecorder } from '../bench/module-recorder.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLIENT = pathToFileURL(join(ROOT, 'packages', 'client', 'dist', 'index.js')).href;
const CORE = pathToFileURL(join(ROOT, 'packages', 'core', 'dist', 'index.js')).href;
const dir = mkdtempSync(join(tmpdir(), 'sluice-client-imports-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What the client must not load, by a pattern of the loaded files' URLs (packages resolve to their real paths). */
const FORBIDDEN: ReadonlyArray<readonly [string, RegExp]> = [
  ['parquet-wasm', /\/node_modules\/parquet-wasm\//],
  ['hyparquet', /\/node_modules\/hyparquet[^/]*\//],
  ['zstddec', /\/node_modules\/zstddec\//],
  ['prom-client', /\/node_modules\/prom-client\//],
  ['rxjs', /\/node_modules\/rxjs\//],
  ['@sluice/core', /\/(packages\/core|node_modules\/@sluice\/core)\//],
];

let runs = 0;

/**
 * Runs a child that starts the recorder, imports `modules` in order, and calls createClient from
 * the built client; resolves to the URLs of every module it loaded.
 */
function loadedBy(modules: readonly string[]): Promise<string[]> {
  const { preload, out } = importRecorder(dir, `loaded-${runs++}`);
  const script = `
for (const m of ${JSON.stringify(modules)}) await import(m);
const { createClient } = await import(${JSON.stringify(CLIENT)});
const client = createClient('http://127.0.0.1:9', { token: 't' });
if (typeof client.batches !== 'function') throw new Error('createClient returned no client');
`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', preload, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`child failed: ${stderr || err.message}`));
      else
        resolve([
          ...new Set(
            readFileSync(out, 'utf8')
              .split('\n')
              .filter((u) => u !== ''),
          ),
        ]);
    });
  });
}

const forbiddenIn = (urls: readonly string[]): string[] => FORBIDDEN.filter(([, re]) => urls.some((u) => re.test(u))).map(([name]) => name);

describe('@sluice/client imports', () => {
  it('creating a client loads none of the reader, RxJS, prom-client or @sluice/core', async () => {
    const urls = await loadedBy([]);
    // The recorder saw the client itself, so an empty list below is not a recorder that saw nothing.
    expect(urls).toContain(CLIENT);
    expect(forbiddenIn(urls)).toEqual([]);
  });

  it('control: the same recorder sees them when the script also imports @sluice/core', async () => {
    const urls = await loadedBy([CORE]);
    expect(urls).toContain(CORE);
    expect(forbiddenIn(urls)).toEqual(expect.arrayContaining(['rxjs', '@sluice/core']));
  });
});
