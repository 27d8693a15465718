import { webgpuUnavailable } from '../src/index.js';

/**
 * Why this machine's tests of the WebGPU backend cannot run (no adapter, Dawn not loadable), or
 * null when they can. A test skips itself with the reason; under CI=true there is none to give:
 * .ci/run installs Mesa's llvmpipe, so a missing adapter is a broken CI machine and fails the run
 * rather than passing it with these tests left out.
 */
export async function adapterSkip(suite: string): Promise<string | null> {
  const why = await webgpuUnavailable();
  if (why === null) return null;
  if (process.env.CI === 'true') throw new Error(`${suite}: no WebGPU adapter under CI=true (.ci/run installs Mesa's llvmpipe): ${why}`);
  console.warn(`${suite} skipped: ${why}`);
  return why;
}
