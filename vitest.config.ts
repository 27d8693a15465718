import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string): string => fileURLToPath(new URL(`./packages/${path}`, import.meta.url));

// Tests run against the TypeScript sources; the CLI tests spawn the built bin instead.
// Each entry matches one package entry point exactly, so a subpath never falls to its parent.
const ENTRIES: Record<string, string> = {
  '@sluice/ops': 'ops/src/index.ts',
  '@sluice/ops/errors': 'ops/src/errors.ts',
  '@sluice/ops/release': 'ops/src/util/release.ts',
  '@sluice/client': 'client/src/index.ts',
  '@sluice/client/arrow': 'client/src/arrow-ipc.ts',
  '@sluice/core': 'core/src/index.ts',
  '@sluice/core/internal': 'core/src/internal.ts',
  '@sluice/core/gen': 'core/src/gen/index.ts',
  '@sluice/core/serve': 'core/src/serve/index.ts',
  '@sluice/core/transport': 'core/src/transport/index.ts',
  '@sluice/core/lookahead': 'core/src/lookahead/index.ts',
  '@sluice/backend-cpu': 'backend-cpu/src/index.ts',
  '@sluice/backend-webgpu': 'backend-webgpu/src/index.ts',
  '@sluice/backend-fpga-sim': 'backend-fpga-sim/src/index.ts',
  '@sluice/backend-smartssd-sim': 'backend-smartssd-sim/src/index.ts',
};

export default defineConfig({
  resolve: {
    alias: Object.entries(ENTRIES).map(([name, path]) => ({ find: new RegExp(`^${name}$`), replacement: src(path) })),
  },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
