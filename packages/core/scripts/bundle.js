/**
 * Bundles the built CLI (dist/cli/main.js, its lazily imported commands and the in-repo backend
 * packages) and the decode worker (dist/reader/decode-worker.js) into dist/bundle/, which
 * bin/sluice.js loads: a few large modules start faster than the ~200 small ones tsc emits
 * (bench/README.md, "Bundled CLI"). Run by `npm run build` after tsc; the library entry points
 * (dist/index.js, ...) stay unbundled.
 *
 * What the bundle must keep as the unbundled build has it:
 * - Every `import.meta.url` still names the module's own file under dist/, so the URLs built from
 *   it (assets, package.json, worker scripts, createRequire) find the same files. It is computed
 *   from the bundle's own location, so a dist/ moved or installed elsewhere finds its own files.
 * - One copy of each module: the backends are bundled with core (their `@sluice/core` imports
 *   resolve to the same dist files), and the registry imports them from the bundle by name.
 * - Packages with native or wasm parts, or that find files beside themselves, stay external.
 */
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const CORE = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(CORE, 'dist');
const OUT = join(DIST, 'bundle');
const PACKAGES = dirname(CORE);
const ROOT = dirname(PACKAGES);

// Native addons, wasm read from beside the package, worker scripts run by path (piscina), lazily
// loaded heavy servers (prom-client, ioredis, undici), packages core requires at run time, and
// picomatch, which tinyglobby's fdir requires at run time (one copy, not two).
const EXTERNAL = [
  'parquet-wasm',
  'msgpackr',
  'ioredis',
  'prom-client',
  'piscina',
  'zstddec',
  'zstd-napi',
  'koffi',
  'commander',
  'undici',
  'webgpu',
  '@duckdb/*',
  'picomatch',
];

/** Names NAME of the packages/backend-NAME folders: the backends the registry finds in the bundle. */
const BACKENDS = readdirSync(PACKAGES)
  .filter((d) => d.startsWith('backend-'))
  .map((d) => d.slice('backend-'.length))
  .sort();

/** `text` with `from` replaced exactly once; a source that changed shape fails the build. */
function replaceOnce(text, from, to, file) {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`bundle: expected one ${JSON.stringify(from)} in ${file}`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/**
 * Reads each bundled module of our own packages, pinning its `import.meta.url` to the module's
 * dist file; the registry gets an import of each in-repo backend that esbuild can follow, and the
 * decoder pool the bundled worker.
 */
const ownModules = {
  name: 'sluice-own-modules',
  setup(build) {
    build.onLoad({ filter: /[\\/]packages[\\/][^\\/]+[\\/]dist[\\/].*\.js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      const file = args.path;
      if (file === join(DIST, 'backend', 'registry.js')) {
        const cases = BACKENDS.map((b) => `case ${JSON.stringify(b)}: return import(${JSON.stringify(`@sluice/backend-${b}`)});`).join(' ');
        text = replaceOnce(text, 'await import(`@sluice/backend-${name}`)', 'await importBundledBackend(name)', file);
        text += `\nfunction importBundledBackend(name) { switch (name) { ${cases} default: return import(\`@sluice/backend-\${name}\`); } }\n`;
      }
      if (file === join(DIST, 'reader', 'decoder-pool.js')) {
        text = replaceOnce(text, "'../../dist/reader/decode-worker.js'", "'../../dist/bundle/decode-worker.js'", file);
      }
      // Relative to the bundle's own dist/ (the banner's __sluiceDist), not the absolute path of
      // the build: a dist/ run from elsewhere (an installed copy, a build kept for an A/B) must
      // find its own files, its own decode worker included.
      if (text.includes('import.meta.url'))
        text = text.replaceAll('import.meta.url', `new URL(${JSON.stringify(relative(DIST, file).split(sep).join('/'))}, __sluiceDist).href`);
      return { contents: text, loader: 'js', resolveDir: dirname(file) };
    });
  },
};

/** rxjs's `node` export is its CommonJS build; its ES module build bundles smaller. */
const rxjsEsm = {
  name: 'rxjs-esm',
  setup(build) {
    build.onResolve({ filter: /^rxjs$/ }, () => ({ path: join(dirname(fileURLToPath(import.meta.resolve('rxjs/package.json'))), 'dist/esm/index.js') }));
  },
};

const COMMON = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outdir: OUT,
  sourcemap: 'linked',
  logLevel: 'warning',
  legalComments: 'none',
  absWorkingDir: ROOT,
  metafile: true,
  // CommonJS packages inlined in an ES module call require() for Node's built-ins. __sluiceDist:
  // the dist/ folder this output lies in (outputs are dist/bundle/*.js and dist/bundle/chunks/*.js).
  banner: {
    js: "import { createRequire as __sluiceRequire } from 'node:module'; const require = __sluiceRequire(import.meta.url); const __sluiceDist = new URL(/\\/bundle\\/chunks\\/[^/]*$/.test(import.meta.url) ? '../../' : '../', import.meta.url);",
  },
};

rmSync(OUT, { recursive: true, force: true });
const cli = await esbuild.build({
  ...COMMON,
  entryPoints: { main: join(DIST, 'cli', 'main.js') },
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  external: EXTERNAL,
  plugins: [ownModules, rxjsEsm],
});
// The reader kernels a backend gives the decode worker import @sluice/ops from dist: the worker
// imports the same copy.
const worker = await esbuild.build({
  ...COMMON,
  entryPoints: { 'decode-worker': join(DIST, 'reader', 'decode-worker.js') },
  external: [...EXTERNAL, '@sluice/ops', '@sluice/ops/*'],
  plugins: [ownModules],
});
// Which modules each output holds (paths from the repository root): bench/startup.ts names the
// heavy dependencies a command loaded from it.
const outputs = { ...cli.metafile.outputs, ...worker.metafile.outputs };
const meta = Object.fromEntries(
  Object.entries(outputs)
    .filter(([out]) => out.endsWith('.js'))
    .map(([out, o]) => [out, Object.keys(o.inputs)]),
);
writeFileSync(join(OUT, 'modules.json'), `${JSON.stringify(meta)}\n`);
