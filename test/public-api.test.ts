// The public API reads as documented: every name `@sluice/core` and `@sluice/client` export has a
// TSDoc summary and an `@example`, found on its declaration (re-exports followed); so do the
// subpath entries (`/gen`, `/serve`, `/transport`, `/lookahead`) and their main names. And the
// curated core barrel keeps internals out: names that once leaked from it must stay in
// `@sluice/core/internal`.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = (path: string): string => join(ROOT, 'packages', path);

/** Entries whose every export is documented. */
const ENTRIES: Record<string, string> = {
  '@sluice/core': src('core/src/index.ts'),
  '@sluice/client': src('client/src/index.ts'),
};

/** Subpath entries: the file itself and these main exports are documented. */
const SUBPATHS: Record<string, { file: string; names: readonly string[] }> = {
  '@sluice/core/gen': { file: src('core/src/gen/index.ts'), names: ['generateDataset', 'getPreset'] },
  '@sluice/core/serve': { file: src('core/src/serve/index.ts'), names: ['createBatchServer'] },
  '@sluice/core/cluster': { file: src('core/src/cluster/index.ts'), names: ['buildJob', 'submitJob', 'startWorker', 'clusterStatus'] },
  '@sluice/core/transport': { file: src('core/src/transport/index.ts'), names: ['serveFeed', 'connectFeed', 'inProcessPair', 'sabQueuePair', 'tcpQueuePair'] },
  '@sluice/core/lookahead': { file: src('core/src/lookahead/index.ts'), names: ['LookaheadCache', 'lookahead'] },
};

/** Internals that the core barrel used to export; they belong to `@sluice/core/internal`. */
const NOT_PUBLIC = ['DecoderPool', 'mergePacks', 'packRows', 'PROBE_HOPELESS', 'calibrationCachePath', 'readChunks', 'openDataset', 'createBackend'];

interface Documented {
  readonly name: string;
  readonly summary: string;
  readonly hasExample: boolean;
}

/** Exports by entry name, and each subpath entry file's own leading comment. */
const exportsOf = new Map<string, Documented[]>();
const entryDocs = new Map<string, Documented>();

/** The names among `docs` that lack a summary or an example, with what each lacks. */
function undocumented(docs: readonly Documented[]): string[] {
  return docs
    .filter((d) => d.summary === '' || !d.hasExample)
    .map((d) => `${d.name} (${[d.summary === '' ? 'no summary' : '', d.hasExample ? '' : 'no @example'].filter(Boolean).join(', ')})`);
}

beforeAll(() => {
  // tsconfig.test.json maps every @sluice/* specifier to its source, so re-exports resolve to
  // the declarations (and their comments) rather than to built .d.ts files.
  const configPath = join(ROOT, 'tsconfig.test.json');
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, configPath);
  const files = { ...ENTRIES, ...Object.fromEntries(Object.entries(SUBPATHS).map(([k, v]) => [k, v.file])) };
  const program = ts.createProgram(Object.values(files), { ...options, noEmit: true });
  const checker = program.getTypeChecker();
  for (const [entry, file] of Object.entries(files)) {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!source || !module) throw new Error(`cannot load ${file}`);
    exportsOf.set(
      entry,
      checker.getExportsOfModule(module).map((s) => {
        const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
        return {
          name: s.getName(),
          summary: ts.displayPartsToString(target.getDocumentationComment(checker)).trim(),
          hasExample: target.getJsDocTags(checker).some((t) => t.name === 'example' && ts.displayPartsToString(t.text).trim() !== ''),
        };
      }),
    );
    // The file's first comment, a /** */ block: its text before the first tag, and an @example with code.
    const first = ts.getLeadingCommentRanges(source.text, 0)?.[0];
    const text = first && source.text.startsWith('/**', first.pos) ? source.text.slice(first.pos + 3, first.end - 2).replace(/^\s*\* ?/gm, '') : '';
    entryDocs.set(entry, { name: `${entry} (entry file)`, summary: text.split(/^@/m)[0]!.trim(), hasExample: /^@example\s*\n\s*\S/m.test(text) });
  }
}, 120_000);

describe('public API documentation', () => {
  for (const entry of Object.keys(ENTRIES)) {
    it(`every export of ${entry} has a TSDoc summary and an @example`, () => {
      const all = exportsOf.get(entry)!;
      expect(all.length).toBeGreaterThan(0);
      expect(undocumented(all), `exports of ${entry} without TSDoc`).toEqual([]);
    });
  }

  for (const [entry, { names }] of Object.entries(SUBPATHS)) {
    it(`${entry}: the entry file and its main exports have a TSDoc summary and an @example`, () => {
      const all = exportsOf.get(entry)!;
      expect(
        names.filter((n) => !all.some((d) => d.name === n)),
        `not exported by ${entry}`,
      ).toEqual([]);
      expect(undocumented([entryDocs.get(entry)!, ...all.filter((d) => names.includes(d.name))])).toEqual([]);
    });
  }

  it('the @sluice/core barrel does not export internals that used to leak', () => {
    const names = new Set(exportsOf.get('@sluice/core')!.map((e) => e.name));
    expect(NOT_PUBLIC.filter((n) => names.has(n))).toEqual([]);
  });
});
