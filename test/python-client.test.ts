/**
 * The Python client's own tests (clients/python/tests), run by `npm test`: pytest starts real
 * `sluice serve` processes with this Node, fetches batches with the `sluice` package, and compares
 * them with `sluice run`'s output; examples/train_torch.py trains against one.
 *
 * The interpreter is named, not looked up on PATH: Debian's python3-torch, -numpy and -msgpack
 * install into /usr/bin/python3, and the first `python3` on PATH may be another one without them.
 * `SLUICE_PYTHON` picks another. Without numpy or pytest the test skips with the reason; without
 * torch, pytest skips the torch tests and says so. Under CI=true, either is a failure instead.
 */
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PYTHON = process.env.SLUICE_PYTHON ?? '/usr/bin/python3';
const CI = process.env.CI === 'true';
const INSTALL = 'apt-get install python3-numpy python3-pytest python3-msgpack python3-torch';

/** Why the Python tests cannot run here (no interpreter, no numpy or pytest), or null. */
function missing(modules: string): string | null {
  try {
    execFileSync(PYTHON, ['-c', `import ${modules}`], { stdio: 'pipe' });
    return null;
  } catch (e) {
    const err = e as { code?: string; stderr?: Buffer };
    const why = err.code === 'ENOENT' ? 'not found' : (err.stderr?.toString().trim().split('\n').pop() ?? 'failed');
    return `${PYTHON} -c "import ${modules}": ${why} (${INSTALL}, or set SLUICE_PYTHON)`;
  }
}

const noPython = missing('numpy, pytest');
if (noPython !== null && !CI) console.warn(`skipping the Python client tests: ${noPython}`);

describe('the Python client (clients/python)', () => {
  // In CI a missing module is a failure, never a skip: the suite must not pass untested.
  it.runIf(CI)('has numpy, pytest, msgpack and torch under CI=true', () => {
    expect(missing('numpy, pytest, msgpack, torch')).toBeNull();
  });

  it.skipIf(noPython !== null && !CI)(
    'passes its pytest suite against real sluice serve processes',
    async () => {
      const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
        const p = spawn(PYTHON, ['-m', 'pytest', 'clients/python/tests', '-q', '-rs', '-p', 'no:cacheprovider', '-p', 'no:warnings'], {
          cwd: ROOT,
          env: { ...process.env, NODE: process.execPath, PYTHONDONTWRITEBYTECODE: '1' },
        });
        let output = '';
        p.stdout.on('data', (d: Buffer) => (output += d.toString()));
        p.stderr.on('data', (d: Buffer) => (output += d.toString()));
        p.on('error', reject);
        p.on('close', (c) => resolve({ code: c, output }));
      });
      // The summary (passed, skipped and why) is worth seeing in every run, not only a failing one.
      console.log(
        output
          .split('\n')
          .filter((l) => /^(SKIPPED|FAILED|ERROR) |\d+ (passed|failed)/.test(l))
          .join('\n'),
      );
      expect(code, output.slice(-8000)).toBe(0);
      expect(output).toMatch(/\d+ passed/);
      if (CI) expect(output, 'no test may skip under CI=true except for missing hardware').not.toMatch(/SKIPPED \[\d+\] (?!.*pin_memory needs CUDA)/);
    },
    600_000,
  );
});
