// The public API reads as documented: every name `@sluice/core` and `@sluice/client` export has a
// TSDoc summary and an `@example`, found on its declaration (re-exports followed). And the curated
// core barrel keeps internals out: names that once leaked from it must stay in
// `@sluice/core/internal`.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRIES = {
  '@sluice/core': join(ROOT, 'packages/core/src/index.ts'),
  '@sluice/client': join(ROOT, 'packages/client/src/index.ts'),
} as const;

/** Internals that the core barrel used to export; they belong to `@sluice/core/internal`. */
const NOT_PUBLIC = ['DecoderPool', 'mergePacks', 'packRows', 'PROBE_HOPELESS', 'calibrationCachePath', 'readChunks', 'openDataset', 'createBackend'];

interface Exported {
  readonly name: string;
  readonly summary: string;
  readonly hasExample: boolean;
}

const exportsOf = new Map<string, Exported[]>();

beforeAll(() => {
  // tsconfig.test.json maps every @sluice/* specifier to its source, so re-exports resolve to
  // the declarations (and their comments) rather than to built .d.ts files.
  const configPath = join(ROOT, 'tsconfig.test.json');
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, configPath);
  const program = ts.createProgram(Object.values(ENTRIES), { ...options, noEmit: true });
  const checker = program.getTypeChecker();
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`cannot load ${file}`);
    exportsOf.set(entry, checker.getExportsOfModule(module).map((s) => {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      return {
        name: s.getName(),
        summary: ts.displayPartsToString(target.getDocumentationComment(checker)).trim(),
        hasExample: target.getJsDocTags(checker).some((t) => t.name === 'example' && ts.displayPartsToString(t.text).trim() !== ''),
      };
    }));
  }
}, 120_000);

describe('public API documentation', () => {
  for (const entry of Object.keys(ENTRIES)) {
    it(`every export of ${entry} has a TSDoc summary and an @example`, () => {
      const all = exportsOf.get(entry)!;
      expect(all.length).toBeGreaterThan(0);
      const missing = all
        .filter((e) => e.summary === '' || !e.hasExample)
        .map((e) => `${e.name} (${[e.summary === '' ? 'no summary' : '', e.hasExample ? '' : 'no @example'].filter(Boolean).join(', ')})`);
      expect(missing, `exports of ${entry} without TSDoc`).toEqual([]);
    });
  }

  it('the @sluice/core barrel does not export internals that used to leak', () => {
    const names = new Set(exportsOf.get('@sluice/core')!.map((e) => e.name));
    expect(NOT_PUBLIC.filter((n) => names.has(n))).toEqual([]);
  });
});
