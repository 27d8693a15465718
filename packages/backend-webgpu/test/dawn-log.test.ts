// Dawn's limit-clamping warnings are written by native code to fd 2, so the filter works on the
// file descriptor (src/dawn-log.ts). These tests need no GPU. To see what really reached fd 2, a
// child process (tsx, on the sources) writes to fd 2 with fs.writeSync, as native code would, and
// the test reads the child's stderr.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { canFilterDawnLog, dropLimitClampWarnings } from '../src/dawn-log.js';

const UNIFORM = 'Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 1000000 to 16 to fit dynamic offset allocation limit.\n';
const STORAGE = 'Warning: maxDynamicStorageBuffersPerPipelineLayout artificially reduced from 500000 to 16 to fit dynamic offset allocation limit.\n';
const TSX = fileURLToPath(new URL('../../../node_modules/tsx/dist/cli.mjs', import.meta.url));
const DAWN_LOG = fileURLToPath(new URL('../src/dawn-log.ts', import.meta.url));

describe('dropLimitClampWarnings', () => {
  it("drops exactly Dawn's two limit-clamping lines and keeps every other line", () => {
    const other = 'Error: vkCreateDevice failed with VK_ERROR_OUT_OF_HOST_MEMORY\n';
    expect(dropLimitClampWarnings(UNIFORM + other + STORAGE)).toBe(other);
    expect(dropLimitClampWarnings(UNIFORM.trimEnd())).toBe('');
    // Another Dawn warning is not ours to hide.
    const near = 'Warning: maxBindGroups artificially reduced from 8 to 4.\n';
    expect(dropLimitClampWarnings(near)).toBe(near);
  });
});

describe('withoutLimitClampWarnings', () => {
  it('keeps the warnings off fd 2 and passes everything else written there on', (ctx) => {
    if (process.platform !== 'linux') ctx.skip();
    // koffi is an optional dependency; under CI it must have loaded, or this test proves nothing.
    if (!canFilterDawnLog()) {
      if (process.env.CI === 'true') expect.fail('koffi did not load: is it installed (optional dependency)?');
      ctx.skip();
    }
    const code = `
      import { writeSync } from 'node:fs';
      import { withoutLimitClampWarnings } from ${JSON.stringify(DAWN_LOG)};
      writeSync(2, 'before\\n');
      const r = withoutLimitClampWarnings(() => {
        writeSync(2, ${JSON.stringify(UNIFORM)});
        writeSync(2, 'a real error\\n');
        writeSync(2, ${JSON.stringify(STORAGE)});
        return 42;
      });
      writeSync(2, 'after ' + r + '\\n');
      try { withoutLimitClampWarnings(() => { throw new Error('thrown inside'); }); } catch (e) { writeSync(2, e.message + '\\n'); }
      writeSync(2, 'restored\\n');
    `;
    const child = spawnSync(process.execPath, [TSX, '--eval', code], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    expect(child.stderr).toBe('before\na real error\nafter 42\nthrown inside\nrestored\n');
  });
});
