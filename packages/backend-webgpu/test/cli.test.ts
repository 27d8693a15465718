// `sluice run --backend webgpu` through the built CLI: same output file as `--backend cpu`, and a
// clear error (exit 1, the apt packages named) when Vulkan has no driver to offer. Spawns the
// compiled bin, so `npm run build` first (npm test does).
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { tempDir } from '../../core/test/helpers.js';
import { adapterSkip } from './adapter.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BIN = join(ROOT, 'packages', 'core', 'bin', 'sluice.js');
const dir = tempDir('sluice-webgpu-cli-');

function sluice(args: readonly string[], env: Record<string, string> = {}, unset: readonly string[] = []): Promise<{ status: number; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const k of unset) delete childEnv[k];
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv, encoding: 'utf8' }, (err, _stdout, stderr) => {
      const code = err === null ? 0 : (err as { code?: unknown }).code;
      resolve({ status: typeof code === 'number' ? code : -1, stderr });
    });
  });
}

let skip: string | null = null;
const input = join(dir, 'piper.parquet');
const plan = join(dir, 'plan.json');
beforeAll(async () => {
  skip = await adapterSkip('webgpu CLI tests');
  await generateDataset({ preset: 'piper-d1', rows: 3000, out: input, seed: 5, rowGroupSize: 1000 });
  writeFileSync(plan, JSON.stringify({ ...getPreset('piper-d1').defaultPlan(), batchSize: 700 }));
}, 120_000);

describe('sluice run --backend webgpu', () => {
  it('writes the same output file as --backend cpu', async (ctx) => {
    if (skip) ctx.skip();
    const cpu = await sluice(['run', '--plan', plan, '--input', input, '--output', join(dir, 'cpu.parquet'), '--backend', 'cpu', '--workers', '1']);
    const gpu = await sluice(['run', '--plan', plan, '--input', input, '--output', join(dir, 'gpu.parquet'), '--backend', 'webgpu']);
    expect(cpu.status, cpu.stderr).toBe(0);
    expect(gpu.status, gpu.stderr).toBe(0);
    expect(readFileSync(join(dir, 'gpu.parquet')).equals(readFileSync(join(dir, 'cpu.parquet')))).toBe(true);
  });

  it("prints none of Dawn's internal limit warnings, with or without --quiet", async (ctx) => {
    // Dawn prints them from native code on llvmpipe and AMD drivers, not on every GPU: where it
    // does not, this test passes trivially.
    if (skip) ctx.skip();
    const runs = [
      ['run', '--plan', plan, '--input', input, '--output', join(dir, 'quiet.parquet'), '--backend', 'webgpu', '--quiet'],
      ['run', '--plan', plan, '--input', input, '--output', join(dir, 'loud.parquet'), '--backend', 'webgpu'],
      ['bench', '--plan', plan, '--input', input, '--backend', 'webgpu', '--quiet'],
    ];
    for (const args of runs) {
      const r = await sluice(args);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr, args.join(' ')).not.toMatch(/artificially reduced|maxDynamic\w+PerPipelineLayout/);
    }
  });

  it('without a Vulkan driver: exit 1 and a message naming the apt packages, no crash', async (ctx) => {
    // Dawn uses Vulkan on Linux only; elsewhere the variable hides nothing.
    if (process.platform !== 'linux') ctx.skip();
    // A driver list that names no file hides every Vulkan driver from Dawn, GPU or llvmpipe. The
    // loader reads VK_DRIVER_FILES before the older VK_ICD_FILENAMES, and adds VK_ADD_DRIVER_FILES
    // to either. On a GPU machine whose environment sets VK_DRIVER_FILES (the H100 machine where
    // this suite ran) the driver stayed visible and the CLI exited 0.
    const none = join(dir, 'no-such-icd.json');
    const r = await sluice(
      ['run', '--plan', plan, '--input', input, '--output', join(dir, 'none.parquet'), '--backend', 'webgpu'],
      { VK_DRIVER_FILES: none, VK_ICD_FILENAMES: none },
      ['VK_ADD_DRIVER_FILES'],
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/sluice run: backend webgpu: .*(no WebGPU adapter|failed to load).*mesa-vulkan-drivers/);
  });
});
