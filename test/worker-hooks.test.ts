// Sluice's own worker threads start without the parent's module hooks (core util/worker-argv.ts):
// a training script run by tsx otherwise loads tsx's hooks in every decode worker and pool thread
// (~190 ms each on the development VM). This spawns node with an --import hook that reports the
// thread it runs in, has the child write a Parquet file (the writer's worker), read it through a
// pipeline (a decode worker) on the cpu backend (a pool thread), and counts where the hook ran.
// It runs the build (packages/*/dist), as a user's script does: `npm run build` first.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { workerExecArgv } from '@sluice/core/internal';
import { tempDir } from '../packages/core/test/helpers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = tempDir('sluice-hooks-');
// Both kinds of preload, as tsx has: --require (CommonJS, runs in eval workers too) and --import.
const hook = join(dir, 'hook.mjs');
const hookCjs = join(dir, 'hook.cjs');
const script = join(dir, 'script.mjs');

beforeAll(() => {
  writeFileSync(hook, "import { threadId } from 'node:worker_threads';\nprocess.stderr.write(`HOOK ${threadId}\\n`);\n");
  writeFileSync(hookCjs, "process.stderr.write(`HOOK ${require('node:worker_threads').threadId}\\n`);\n");
  const core = pathToFileURL(join(ROOT, 'packages/core/dist/index.js')).href;
  const gen = pathToFileURL(join(ROOT, 'packages/core/dist/gen/index.js')).href;
  const cpu = pathToFileURL(join(ROOT, 'packages/backend-cpu/dist/index.js')).href;
  writeFileSync(
    script,
    `import ${JSON.stringify(cpu)};
import { pipeline } from ${JSON.stringify(core)};
import { generateDataset, getPreset } from ${JSON.stringify(gen)};
const out = ${JSON.stringify(join(dir, 'rm1.parquet'))};
await generateDataset({ preset: 'rm1', rows: 3000, out, seed: 1, rowGroupSize: 1000 });
let rows = 0;
const plan = { ...getPreset('rm1').defaultPlan(), batchSize: 500 };
for await (const b of pipeline(plan, { input: out, decoders: 1, backend: { name: 'cpu', workers: 1, pushdown: false } })) rows += b.rows;
process.stdout.write('rows ' + rows + '\\n');
`,
  );
});

/** Runs the script under the hook; the threads the hook ran in, and the script's output. */
function run(env: Record<string, string> = {}): { threads: number[]; stdout: string; stderr: string; status: number | null } {
  const r = spawnSync(process.execPath, ['--require', hookCjs, '--import', pathToFileURL(hook).href, script], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const threads = [...new Set([...r.stderr.matchAll(/^HOOK (\d+)$/gm)].map((m) => Number(m[1])))].sort((a, b) => a - b);
  return { threads, stdout: r.stdout, stderr: r.stderr, status: r.status };
}

describe("worker threads and the parent's module hooks", () => {
  it('the hook runs in the main thread only: not in the Parquet writer, decode or pool threads', () => {
    const r = run();
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('rows 3000\n');
    expect(r.threads).toEqual([0]);
  });

  it('SLUICE_WORKER_HOOKS=inherit keeps the hook in every thread (so the test above can fail)', () => {
    const r = run({ SLUICE_WORKER_HOOKS: 'inherit' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('rows 3000\n');
    // Main, the writer's worker, a decode worker and a pool thread at least.
    expect(r.threads.length).toBeGreaterThanOrEqual(4);
  });

  it('the same script given as `node --input-type=module -e` starts its workers too', () => {
    // Its execArgv holds --input-type, -e and the code; a worker that inherited them failed to
    // start ("--input-type can only be used with string input").
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', readFileSync(script, 'utf8')], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('rows 3000\n');
  });
});

describe('workerExecArgv', () => {
  const none = {};
  it('inherits when the parent has no hooks', () => {
    expect(workerExecArgv([], none)).toBeUndefined();
    expect(workerExecArgv(['--inspect=0', '--cpu-prof'], none)).toBeUndefined();
  });

  it('drops tsx-style hooks, in either spelling, and keeps worker-safe flags', () => {
    expect(workerExecArgv(['--require', '/x/preflight.cjs', '--import', 'file:///x/loader.mjs'], none)).toEqual([]);
    expect(
      workerExecArgv(
        ['-r', 'a.cjs', '--import=b.mjs', '--loader', 'c.mjs', '--experimental-loader=d.mjs', '--enable-source-maps', '--cpu-prof-dir=/tmp/p'],
        none,
      ),
    ).toEqual(['--enable-source-maps', '--cpu-prof-dir=/tmp/p']);
  });

  it("drops the parent's -e/-p code and its --input-type", () => {
    // process.execArgv of `node --input-type=module -e CODE`.
    expect(workerExecArgv(['--input-type=module', '-e', 'await import("x")'], none)).toEqual([]);
    expect(workerExecArgv(['--input-type', 'module', '--enable-source-maps', '--print', '1'], none)).toEqual(['--enable-source-maps']);
  });

  it('inherits (hooks and all) when a flag a worker may refuse would be left, or when asked to', () => {
    // new Worker throws ERR_WORKER_INVALID_EXEC_ARGV on --max-old-space-size in an explicit execArgv.
    expect(workerExecArgv(['--import', 'tsx', '--max-old-space-size=4096'], none)).toBeUndefined();
    expect(workerExecArgv(['--import', 'tsx', '--conditions', 'dev'], none)).toBeUndefined();
    expect(workerExecArgv(['--import', 'tsx'], { SLUICE_WORKER_HOOKS: 'inherit' })).toBeUndefined();
  });
});
