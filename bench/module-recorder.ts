/**
 * A recorder of the modules a child `node` loads: ESM `load` hooks that append each module's URL
 * to a file, plus the CommonJS cache listed at exit (CommonJS modules required by other CommonJS
 * modules bypass the ESM hooks). Start the child with `--import <preload>`. Used by
 * bench/startup.ts and test/client-imports.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Writes the hooks and the preload into `dir`; `out` is the file the child appends URLs to.
 *
 * @example
 * const { preload, out } = importRecorder(dir);
 * spawnSync(process.execPath, ['--import', preload, 'script.mjs']); // then read `out`
 */
export function importRecorder(dir: string, name = 'loaded'): { preload: string; out: string } {
  const out = join(dir, `${name}.txt`);
  writeFileSync(out, '');
  writeFileSync(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
let out = '';
export function initialize(data) { out = data.out; }
export async function load(url, context, next) { appendFileSync(out, url + '\\n'); return next(url, context); }
`,
  );
  writeFileSync(
    join(dir, `${name}-preload.mjs`),
    `import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';
const out = ${JSON.stringify(out)};
register(new URL('./hooks.mjs', import.meta.url), { data: { out } });
const cache = createRequire(import.meta.url).cache;
process.on('exit', () => appendFileSync(out, Object.keys(cache).map((f) => pathToFileURL(f).href + '\\n').join('')));
`,
  );
  return { preload: pathToFileURL(join(dir, `${name}-preload.mjs`)).href, out };
}
