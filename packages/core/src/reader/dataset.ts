import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { glob, isDynamicPattern } from 'tinyglobby';
import { InputError, typeName, type ColumnType } from '@sluice/ops';
import { DecoderPool, type FileMeta } from './decoder-pool.js';
import { isUrl, urlProblem } from '../util/url.js';
import { isS3Url } from './s3/url.js';

/** One row group of one file: the unit of reading, sharding and shuffling. */
export interface Unit {
  readonly file: number;
  readonly rowGroup: number;
  readonly rows: number;
  /** Row of the file where this row group starts. */
  readonly firstRow: number;
}

/** The files behind a pipeline, their row groups, and the schema the plan is checked against. */
export interface Dataset {
  readonly files: readonly FileMeta[];
  readonly units: readonly Unit[];
  readonly totalRows: number;
  /** Column types of the first file; other files must agree on the columns a plan reads. */
  readonly schema: ReadonlyMap<string, ColumnType>;
  /** Columns of the first file whose types Sluice cannot read, with the type. */
  readonly unsupported: ReadonlyMap<string, string>;
}

export { isUrl } from '../util/url.js';

/**
 * Expands paths, globs and URLs (s3:// ones listed: s3/list.ts) into a sorted, de-duplicated list of sources. A pattern that
 * matches nothing, or a path that does not exist, is an error naming it. One string is one
 * pattern (not a list of one-character patterns, the first of which, "/", is the whole disk).
 */
export async function resolveInputs(patterns: string | readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of typeof patterns === 'string' ? [patterns] : patterns) {
    if (isS3Url(p)) {
      // Loaded on the first s3:// input: local-only runs never load the S3 client and its libraries.
      const { resolveS3Input } = await import('./s3/list.js');
      out.push(...(await resolveS3Input(p)));
      continue;
    }
    if (isUrl(p)) {
      const problem = await urlProblem(p);
      if (problem !== null) throw new InputError(`cannot read: ${problem}`, { file: p });
      out.push(p);
      continue;
    }
    if (isDynamicPattern(p)) {
      const found = (await glob(p, { absolute: false, onlyFiles: true, expandDirectories: false })).sort();
      if (found.length === 0) throw new InputError(`no files match ${p}`);
      out.push(...found);
      continue;
    }
    const st = await stat(p).catch(() => null);
    if (st === null) throw new InputError('cannot open: no such file', { file: p });
    if (st.isDirectory()) {
      const found = (await glob('**/*.parquet', { cwd: p, absolute: false, onlyFiles: true })).sort().map((f) => `${p.replace(/\/$/, '')}/${f}`);
      if (found.length === 0) throw new InputError('directory holds no .parquet files', { file: p });
      out.push(...found);
    } else out.push(p);
  }
  return distinctFiles(out);
}

/**
 * The sources without repeats, each kept where it is first named: a local file named twice, by
 * the same words or others (`a.parquet` and `./a.parquet`, a link, a folder and a glob that both
 * hold it), is read once, not twice into the epoch.
 */
async function distinctFiles(sources: readonly string[]): Promise<string[]> {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const s of sources) {
    const key = isUrl(s) || isS3Url(s) ? s : await realpath(s).catch(() => resolve(s));
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(s);
  }
  return out;
}

/** Schema of a file as Sluice column types; unsupported columns are left out (and named if used). */
export function schemaOf(meta: FileMeta): { types: Map<string, ColumnType>; unsupported: Map<string, string> } {
  return { types: new Map(meta.types), unsupported: new Map(meta.unsupported) };
}

/** Opens every source's footer and lists its row groups (files with zero rows contribute none). */
export async function openDataset(patterns: string | readonly string[], pool: DecoderPool): Promise<Dataset> {
  const sources = await resolveInputs(patterns);
  if (sources.length === 0) throw new InputError('no input files given');
  const files = await Promise.all(sources.map((s) => pool.open(s)));
  const units: Unit[] = [];
  files.forEach((meta, file) => {
    let firstRow = 0;
    meta.rowGroups.forEach((rows, rowGroup) => {
      if (rows > 0) units.push({ file, rowGroup, rows, firstRow });
      firstRow += rows;
    });
  });
  const { types, unsupported } = schemaOf(files[0]!);
  return { files, units, totalRows: units.reduce((a, u) => a + u.rows, 0), schema: types, unsupported };
}

/**
 * Checks that every file has each column a plan reads, with a supported type that agrees with the
 * first file's. Reading a missing column would otherwise crash the decoder.
 */
export function checkColumns(ds: Dataset, columns: readonly string[]): void {
  const first = schemaOf(ds.files[0]!);
  for (const meta of ds.files) {
    const { types, unsupported } = meta === ds.files[0] ? first : schemaOf(meta);
    for (const c of columns) {
      const t = types.get(c);
      if (t === undefined) {
        const why = unsupported.has(c) ? `has unsupported type ${unsupported.get(c)}` : 'is missing';
        throw new InputError(`column "${c}" ${why}`, { file: meta.source });
      }
      const t0 = first.types.get(c)!;
      if (typeName(t0) !== typeName(t)) {
        throw new InputError(`column "${c}" is ${typeName(t)} here but ${typeName(t0)} in ${ds.files[0]!.source}`, { file: meta.source });
      }
    }
  }
}
