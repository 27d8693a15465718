import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources; the CLI tests spawn the built bin instead.
    alias: {
      // Before '@sluice/core', which would otherwise match its subpath as a prefix.
      '@sluice/core/exec': fileURLToPath(new URL('./packages/core/src/exec.ts', import.meta.url)),
      '@sluice/core': fileURLToPath(new URL('./packages/core/src/index.ts', import.meta.url)),
      '@sluice/backend-cpu': fileURLToPath(new URL('./packages/backend-cpu/src/index.ts', import.meta.url)),
      '@sluice/backend-webgpu': fileURLToPath(new URL('./packages/backend-webgpu/src/index.ts', import.meta.url)),
      '@sluice/backend-fpga-sim': fileURLToPath(new URL('./packages/backend-fpga-sim/src/index.ts', import.meta.url)),
      '@sluice/backend-smartssd-sim': fileURLToPath(new URL('./packages/backend-smartssd-sim/src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
