// A cpu backend worker thread loads its modules afresh, so what src/worker.ts imports decides how
// long every pool (and every backend auto starts while it calibrates) takes to come up. Any
// '@sluice/core' entry brings the Parquet reader, Apache Arrow and RxJS; '@sluice/ops' is the
// plan-execution layer alone (docs/architecture.md). This follows the worker's relative imports
// and fails on any import of a core entry that would reach runtime:
// under verbatimModuleSyntax only `import type` is erased (`import { type X }` still loads it).
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const IMPORT = /\b(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]|\bimport\s*['"]([^'"]+)['"]/g;

/** The worker's source files, and the imports of the full entry that load it at run time. */
function scan(entry: string): { files: string[]; loadsFullCore: string[] } {
  const seen = new Set<string>();
  const loadsFullCore: string[] = [];
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    // Comments out first: doc examples name modules too.
    const text = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|[^:])\/\/.*$/gm, '$1');
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[4] ?? m[5]!;
      const typeOnly = m[2] !== undefined;
      if ((spec === '@sluice/core' || spec.startsWith('@sluice/core/')) && !typeOnly)
        loadsFullCore.push(`${relative(SRC, file)}: ${m[0].replace(/\s+/g, ' ')}`);
      if (spec.startsWith('.')) todo.push(join(dirname(file), spec.replace(/\.js$/, '.ts')));
    }
  }
  return { files: [...seen].map((f) => relative(SRC, f)).sort(), loadsFullCore };
}

describe('cpu worker thread imports', () => {
  it('reach core only through @sluice/ops', () => {
    const { files, loadsFullCore } = scan(join(SRC, 'worker.ts'));
    // The scan does follow the worker into its kernels (else it would pass for nothing).
    expect(files).toContain('kernels/index.ts');
    expect(files).toContain('kernels/bucketize.ts');
    expect(loadsFullCore).toEqual([]);
  });

  it('tells a runtime import of the full entry from a type-only one', () => {
    const dir = fileURLToPath(new URL('../src/', import.meta.url));
    // backend.ts runs in the main thread and may use the full entry: the scan must see that.
    expect(scan(join(dir, 'backend.ts')).loadsFullCore.length).toBeGreaterThan(0);
  });
});
