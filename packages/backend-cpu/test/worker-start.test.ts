// How the pool's workers start (src/worker-entry.cts). Both tests run the build in a child process.
//
// A cpu backend disposed while its workers are still loading must not take the process down.
// Piscina loads a worker file with require(); on Node 20.19+ require() of an ES module, cut short by
// the worker's termination, aborted the whole process ("FATAL ERROR: v8::Module::IsGraphAsync …")
// whenever the workers inherited flags such as --conditions (vitest's) — a pipeline that stopped
// after a few batches on a many-core machine was enough. The workers now load a CommonJS entry
// (src/worker-entry.cts) that imports the worker asynchronously. The first test runs a child
// with --conditions, creating 60 pools of 15 workers and disposing each 0–400 ms later; with the
// ES module as the pool's file it aborted in each of 4 runs on the development VM (2 vCPUs).
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir, writeSmall } from '../../core/test/helpers.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const dir = tempDir('sluice-cpu-dispose-');
const file = writeSmall(join(dir, 'small.parquet'), 1000, 500);
const ROUNDS = 60;
const WORKERS = 15;

describe('cpu backend workers starting', () => {
  it('a pool disposed while its workers load does not abort the process', () => {
    const core = pathToFileURL(join(ROOT, 'packages/core/dist/internal.js')).href;
    const cpu = pathToFileURL(join(ROOT, 'packages/backend-cpu/dist/index.js')).href;
    const script = join(dir, 'dispose.mjs');
    writeFileSync(
      script,
      `import { createCpuBackend } from ${JSON.stringify(cpu)};
import { DecoderPool, loadPlan, openDataset, typeCheckPlan } from ${JSON.stringify(core)};
const pool = new DecoderPool(1);
const ds = await openDataset([${JSON.stringify(file)}], pool);
await pool.close();
// 60 features, so that each worker spends a while compiling the plan as it starts.
const features = Array.from({ length: 60 }, (_, i) => ({ name: 'C' + i, input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: i, max: 1000 }] }));
const plan = typeCheckPlan(loadPlan({ batchSize: 100, features }), ds.schema);
let seed = 7;
for (let i = 0; i < ${ROUNDS}; i++) {
  const b = createCpuBackend(plan, { name: 'cpu', workers: ${WORKERS} }, new Map());
  seed = (seed * 1103515245 + 12345) % 2147483648;
  await new Promise((r) => setTimeout(r, (seed >> 8) % 400));
  await b.dispose();
}
process.stdout.write('disposed ' + ${ROUNDS} + '\\n');
`,
    );
    const r = spawnSync(process.execPath, ['--conditions', 'development', script], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).not.toMatch(/FATAL ERROR/);
    expect(r.stdout).toContain(`disposed ${ROUNDS}`);
    expect(r.status).toBe(0);
  }, 150_000);

  it('a worker whose code cannot load fails the run with the reason, not a hang', () => {
    // A copy of the build without dist/worker.js. Before the CommonJS entry, the pool replaced
    // the failing workers forever and the run never ended.
    const root = join(tempDir('sluice-cpu-nobuild-'), 'backend-cpu');
    cpSync(join(ROOT, 'packages/backend-cpu/dist'), join(root, 'dist'), { recursive: true });
    rmSync(join(root, 'dist/worker.js'));
    writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    const core = pathToFileURL(join(ROOT, 'packages/core/dist/index.js')).href;
    // Registered under another name: a plan naming 'cpu' would load the real package over it.
    const script = `const { createCpuBackend } = await import(${JSON.stringify(pathToFileURL(join(root, 'dist/index.js')).href)});
      const { pipeline, registerBackend } = await import(${JSON.stringify(core)});
      registerBackend('cpu-copy', createCpuBackend);
      const plan = { batchSize: 100, features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }] }], backend: { name: 'cpu-copy', workers: 1, pushdown: false } };
      try { for await (const b of pipeline(plan, { input: ${JSON.stringify(file)} })) {} console.log('no error'); }
      catch (e) { console.log(e.name + ': ' + e.message); }`;
    const path = join(root, 'run.mjs');
    writeFileSync(path, script);
    const r = spawnSync(process.execPath, [path], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^SluiceError: .*cpu worker failed to start: the cpu worker could not load its code: Cannot find module .*worker\.js/);
  });
});
