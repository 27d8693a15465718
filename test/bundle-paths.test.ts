/**
 * The bundled CLI (packages/core/dist/bundle, built by scripts/bundle.js) names no file by the
 * absolute path it was built at: each module's URL is computed from where the bundle lies, so a
 * dist/ moved or installed elsewhere runs its own decode worker and finds its own assets. (With
 * pinned paths, a copy kept for an A/B started the checkout's current worker: bench/README.md,
 * "Copied builds read the checkout's decode worker".)
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUNDLE = join(ROOT, 'packages', 'core', 'dist', 'bundle');

describe('the bundled CLI', () => {
  it('names no absolute path of the folder it was built in', (ctx) => {
    if (!existsSync(BUNDLE)) {
      // npm install builds it (prepare): under CI it must be there.
      if (process.env.CI) expect.fail(`no bundle at ${BUNDLE}: run npm run build`);
      ctx.skip();
    }
    const files = [...readdirSync(BUNDLE), ...readdirSync(join(BUNDLE, 'chunks')).map((f) => join('chunks', f))].filter((f) => f.endsWith('.js'));
    expect(files.length).toBeGreaterThan(2);
    const built = pathToFileURL(ROOT).href;
    for (const f of files) expect(readFileSync(join(BUNDLE, f), 'utf8').includes(built), `${f} names ${built}`).toBe(false);
    // Its modules' URLs come from the bundle's own location.
    expect(readFileSync(join(BUNDLE, 'decode-worker.js'), 'utf8')).toContain('__sluiceDist');
  });
});
