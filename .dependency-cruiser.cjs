/**
 * Layer lint (`npx depcruise packages --config .dependency-cruiser.cjs`, part of `npm run lint`).
 *
 * The packages, bottom up: @sluice/ops (columns, kernels, plans) ← @sluice/client (trainer side)
 * and @sluice/core ← the backends. Inside core, folders are layers, bottom up:
 *
 *   util → batch → reader → output, plan, backend → stream → placement → pipeline
 *        → edges: lookahead, serve, transport, gen, report, cluster, cli
 *
 * A folder imports only folders at or below its own level; of the edges, cluster imports serve
 * (its workers answer the same HTTP protocol) and cli imports them all; nothing imports in a cycle. Type-only imports count: a reader follows them just the same.
 */

/** Core's layers, bottom up; folders on one line share a level. */
const CORE_LEVELS = [
  ['util'],
  ['batch'],
  ['reader'],
  ['output', 'plan', 'backend'],
  ['stream'],
  ['placement'],
  ['pipeline'],
  ['lookahead', 'serve', 'transport', 'gen', 'report', 'cluster', 'cli'],
];

const CORE = '^packages/core/src/';
const folders = (names) => `${CORE}(${names.join('|')})/`;

/** One rule per level: its folders may not import any folder above it. */
const layerRules = CORE_LEVELS.slice(0, -1).map((level, i) => ({
  name: `core-layer-${level.join('-')}`,
  comment: `core's ${level.join(', ')} (level ${i} of util → batch → reader → output/plan/backend → stream → placement → pipeline → edges) may import only folders at or below it`,
  severity: 'error',
  from: { path: folders(level) },
  to: { path: folders(CORE_LEVELS.slice(i + 1).flat()) },
}));

/** Where a workspace package's files are, whether resolved to its sources or through node_modules. */
const pkg = (names) => `(^|/)(packages|node_modules/@sluice)/(${names})/`;
const BACKENDS = 'backend-[^/]+';
/** The npm packages the trainer-side client must not need. */
const SERVER_SIDE_NPM = '(^|/)node_modules/(rxjs|parquet-wasm|hyparquet[^/]*|hysnappy|zstddec|prom-client)/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'an import cycle: the files in it cannot be read (or tested) bottom up',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'ops-is-the-bottom',
      comment: '@sluice/ops is the bottom layer (backend worker threads load it): it imports no other Sluice package',
      severity: 'error',
      from: { path: '^packages/ops/' },
      to: { path: pkg(`core|client|${BACKENDS}`) },
    },
    {
      name: 'client-stays-light',
      comment: '@sluice/client runs in the trainer: no @sluice/core, no backend, no Parquet decoder, RxJS or metrics server',
      severity: 'error',
      from: { path: '^packages/client/' },
      to: { path: `${pkg(`core|${BACKENDS}`)}|${SERVER_SIDE_NPM}` },
    },
    {
      name: 'core-imports-no-backend',
      comment: 'backends register themselves with core (backend/registry.ts loads them by name at run time): core never imports one',
      severity: 'error',
      from: { path: '^packages/core/' },
      to: { path: pkg(BACKENDS) },
    },
    ...layerRules,
    {
      name: 'core-edges-apart',
      comment: 'lookahead, serve, transport, gen and report build on the layers below, not on each other (only cli uses them all)',
      severity: 'error',
      from: { path: `${CORE}(lookahead|serve|transport|gen|report)/` },
      to: { path: folders(['lookahead', 'serve', 'transport', 'gen', 'report', 'cluster', 'cli']), pathNot: `${CORE}$1/` },
    },
    {
      name: 'core-cluster-over-serve',
      comment: 'cluster builds on serve (the same HTTP protocol) and the layers below, not on the other edges',
      severity: 'error',
      from: { path: `${CORE}cluster/` },
      to: { path: folders(['lookahead', 'transport', 'gen', 'report', 'cli']) },
    },
    {
      name: 'core-cli-on-top',
      comment: 'cli is the top: nothing else in core imports it (the public entries included)',
      severity: 'error',
      from: { path: CORE, pathNot: folders(['cli']) },
      to: { path: folders(['cli']) },
    },
  ],
  options: {
    // The workspace packages resolve to their sources (tsconfig.test.json's paths), so an import of
    // @sluice/ops from core is an edge to packages/ops/src and cycles across packages show too.
    tsConfig: { fileName: 'tsconfig.test.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    // Build outputs of the packages (not npm packages' own dist/ folders, which the rules must see).
    exclude: { path: '^packages/[^/]+/(dist|build|assembly)/' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.cts', '.js', '.cjs', '.mjs'],
    },
  },
};
