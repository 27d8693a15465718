/**
 * The layer lint (.dependency-cruiser.cjs) bites: dependency-cruiser runs with the repository's
 * config over small fixture trees laid out like the repository, one clean, one with an import cycle
 * added, one with a file breaking each of the other rules, and reports exactly what was planted.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const made: string[] = [];

afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

type Files = Record<string, string>;

/** A tree that keeps every rule: each layer imports the one below, gen imports within gen, cli imports all. */
const CLEAN: Files = {
  'packages/ops/src/index.ts': 'export const ops = 1;\n',
  'packages/client/src/index.ts': "import { ops } from '@sluice/ops';\nexport const client = ops;\n",
  'packages/core/src/util/u.ts': "import { ops } from '@sluice/ops';\nexport const u = ops;\n",
  'packages/core/src/batch/b.ts': "import { u } from '../util/u.js';\nexport const b = u;\n",
  'packages/core/src/reader/r.ts': "import { b } from '../batch/b.js';\nexport const r = b;\n",
  'packages/core/src/plan/p.ts': "import { r } from '../reader/r.js';\nexport const p = r;\n",
  'packages/core/src/stream/s.ts': "import { p } from '../plan/p.js';\nexport const s = p;\n",
  'packages/core/src/pipeline/pl.ts': "import { s } from '../stream/s.js';\nexport const pl = s;\n",
  'packages/core/src/gen/g.ts': "import { g2 } from './g2.js';\nimport { u } from '../util/u.js';\nexport const g = g2 + u;\n",
  'packages/core/src/gen/g2.ts': 'export const g2 = 2;\n',
  'packages/core/src/serve/sv.ts': "import { pl } from '../pipeline/pl.js';\nexport const sv = pl;\n",
  'packages/core/src/cluster/c.ts': "import { sv } from '../serve/sv.js';\nexport const c = sv;\n",
  'packages/core/src/cli/main.ts':
    "import { sv } from '../serve/sv.js';\nimport { g } from '../gen/g.js';\nimport { c } from '../cluster/c.js';\nexport const main = sv + g + c;\n",
  'packages/core/src/index.ts': "export { pl } from './pipeline/pl.js';\n",
  'packages/backend-cpu/src/index.ts': "import { pl } from '@sluice/core';\nexport const cpu = pl;\n",
};

/** The clean tree with u.ts and u2.ts importing each other (within one folder, so only the cycle is wrong). */
const CYCLE: Files = {
  ...CLEAN,
  'packages/core/src/util/u.ts': "import { ops } from '@sluice/ops';\nimport { u2 } from './u2.js';\nexport const u = ops + u2;\n",
  'packages/core/src/util/u2.ts': "import type { u } from './u.js';\nexport const u2 = 2;\nexport type U = typeof u;\n",
};

/** The clean tree plus one file breaking each other rule: [rule, from, to]. */
const BROKEN: ReadonlyArray<readonly [string, string, string]> = [
  ['ops-is-the-bottom', 'packages/ops/src/bad.ts', 'packages/core/src/index.ts'],
  ['client-stays-light', 'packages/client/src/bad.ts', 'packages/core/src/index.ts'],
  ['core-imports-no-backend', 'packages/core/src/pipeline/bad.ts', 'packages/backend-cpu/src/index.ts'],
  ['core-layer-batch', 'packages/core/src/batch/bad.ts', 'packages/core/src/stream/s.ts'],
  ['core-layer-output-plan-backend', 'packages/core/src/plan/bad.ts', 'packages/core/src/gen/g2.ts'],
  ['core-edges-apart', 'packages/core/src/gen/bad.ts', 'packages/core/src/serve/sv.ts'],
  ['core-edges-apart', 'packages/core/src/serve/bad2.ts', 'packages/core/src/cluster/c.ts'],
  ['core-cluster-over-serve', 'packages/core/src/cluster/bad.ts', 'packages/core/src/gen/g2.ts'],
  ['core-cli-on-top', 'packages/core/src/index2.ts', 'packages/core/src/cli/main.ts'],
];
const SPECIFIER: Record<string, string> = {
  'packages/core/src/index.ts': '@sluice/core',
  'packages/backend-cpu/src/index.ts': '@sluice/backend-cpu',
};

function brokenTree(): Files {
  const files: Files = { ...CLEAN };
  for (const [, from, to] of BROKEN) {
    // A package by name, else a relative import from `from`'s folder: up to the root, then down to `to`.
    const rel =
      SPECIFIER[to] ??
      `${dirname(from)
        .split('/')
        .map(() => '..')
        .join('/')}/${to.replace(/\.ts$/, '.js')}`;
    files[from] = `import * as m from '${rel}';\nexport const bad = m;\n`;
  }
  // The client must not load server-side npm packages either.
  files['packages/client/src/rx.ts'] = "import { of } from 'rxjs';\nexport const rx = of(1);\n";
  return files;
}

/** One reported violation (a cycle as its first step). */
interface Violation {
  rule: string;
  from: string;
  to: string;
}

/** The violations in depcruise's default `err` output: "error RULE: FROM → TO" (a cycle goes on over the next lines). */
const parse = (out: string): Violation[] => [...out.matchAll(/^\s*error ([\w-]+): (\S+) →\s*(\S+)/gm)].map((m) => ({ rule: m[1]!, from: m[2]!, to: m[3]! }));

/**
 * Lays `files` out in a fresh folder (with the repository's node_modules) and runs depcruise there
 * as `npm run lint` does; its exit status is the number of errors.
 */
function cruise(files: Files): Promise<{ status: number; violations: Violation[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-layers-'));
  made.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const paths = Object.fromEntries([
    ['@sluice/ops', ['./packages/ops/src/index.ts']],
    ['@sluice/core', ['./packages/core/src/index.ts']],
    ['@sluice/backend-cpu', ['./packages/backend-cpu/src/index.ts']],
  ]);
  writeFileSync(join(dir, 'tsconfig.test.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', paths } }));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [DEPCRUISE, 'packages', '--config', CONFIG], { cwd: dir, encoding: 'utf8' }, (err, stdout, stderr) => {
      const status = err === null ? 0 : (err as { code?: unknown }).code;
      if (typeof status !== 'number' || !/dependency violations|no dependency violations/.test(stdout))
        reject(new Error(`depcruise did not run: ${stderr || String(err)}`));
      else resolve({ status, violations: parse(stdout) });
    });
  });
}

const names = (vs: readonly Violation[]): string[] => [...new Set(vs.map((v) => v.rule))].sort();

describe('layer lint (.dependency-cruiser.cjs)', () => {
  it('passes a tree that keeps the layers, fails the same tree with a cycle added, and names each broken rule', async () => {
    const [clean, cycle, broken] = await Promise.all([cruise(CLEAN), cruise(CYCLE), cruise(brokenTree())]);

    expect(clean.violations).toEqual([]);
    expect(clean.status).toBe(0);

    expect(names(cycle.violations)).toEqual(['no-circular']);
    const pair = ['packages/core/src/util/u.ts', 'packages/core/src/util/u2.ts'];
    for (const v of cycle.violations) expect([v.from, v.to].sort()).toEqual(pair);
    expect(cycle.status).toBe(cycle.violations.length);

    for (const [rule, from, to] of BROKEN) expect(broken.violations, rule).toContainEqual({ rule, from, to });
    expect(broken.violations).toContainEqual({
      rule: 'client-stays-light',
      from: 'packages/client/src/rx.ts',
      to: expect.stringMatching(/node_modules\/rxjs\//),
    });
    expect(names(broken.violations)).not.toContain('no-circular');
    expect(broken.status).toBe(broken.violations.length);
  });
});
