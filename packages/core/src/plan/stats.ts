/**
 * Column statistics from Parquet footers, for the optimizer (RECom §5: work the data cannot need
 * is not done). Only the footer is read: per row group and column chunk, the null count and the
 * min / max the writer recorded. A statistic that any row group lacks is unknown for the column.
 */
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import { isUrl } from '../util/url.js';

/** What the footers of all files say about one top-level column. */
export interface ColumnStats {
  /** Null values over all row groups, or null when some row group does not say. */
  readonly nulls: number | null;
  /** Smallest and largest non-null value as numbers rounded outward (int64 beyond 2^53 widened), or null when unknown or not numeric. */
  readonly min: number | null;
  readonly max: number | null;
}

/** Numeric statistic as a number; bigints round outward so the range stays a bound. */
function num(v: unknown, dir: 'down' | 'up'): number | null {
  if (typeof v === 'number') return Number.isNaN(v) ? null : v;
  if (typeof v === 'bigint') {
    const n = Number(v);
    if (BigInt(n) === v) return n;
    // Number() rounds to nearest; step one float64 away so the bound still holds.
    return dir === 'down' ? (BigInt(n) > v ? n - Math.max(1, Math.abs(n) * 2 ** -52) : n) : BigInt(n) < v ? n + Math.max(1, Math.abs(n) * 2 ** -52) : n;
  }
  return null;
}

/**
 * Reads the footer statistics of `columns` from local Parquet files (URLs are skipped: their
 * columns get no entry, so nothing is assumed about them).
 *
 * @example
 * const stats = await readColumnStats(['train.parquet'], ['I1', 'C1']);
 * stats.get('I1'); // { nulls: 0, min: -2, max: 15321 }
 */
export async function readColumnStats(sources: readonly string[], columns: readonly string[]): Promise<Map<string, ColumnStats>> {
  const acc = new Map<string, { nulls: number | null; min: number | null; max: number | null }>();
  for (const c of columns) acc.set(c, { nulls: 0, min: Infinity, max: -Infinity });
  if (sources.length === 0 || sources.some(isUrl)) return new Map();
  for (const source of sources) {
    const md = await parquetMetadataAsync(await asyncBufferFromFile(source));
    for (const rg of md.row_groups) {
      if (Number(rg.num_rows) === 0) continue;
      for (const [name, a] of acc) {
        // Only flat columns: a list's leaf statistics count element nulls, not row nulls.
        const chunk = rg.columns.find((c) => c.meta_data?.path_in_schema.length === 1 && c.meta_data.path_in_schema[0] === name);
        const s = chunk?.meta_data?.statistics;
        const nulls = s?.null_count;
        a.nulls = a.nulls === null || nulls === undefined ? null : a.nulls + Number(nulls);
        const lo = num(s?.min_value ?? s?.min, 'down');
        const hi = num(s?.max_value ?? s?.max, 'up');
        // A chunk of only nulls has no min / max and adds no values.
        const allNull = nulls !== undefined && Number(nulls) === Number(chunk?.meta_data?.num_values ?? -1);
        if (allNull) continue;
        a.min = lo === null || a.min === null ? null : Math.min(a.min, lo);
        a.max = hi === null || a.max === null ? null : Math.max(a.max, hi);
      }
    }
  }
  const out = new Map<string, ColumnStats>();
  for (const [name, a] of acc) {
    const known = a.min !== null && a.max !== null && Number.isFinite(a.min) && Number.isFinite(a.max);
    out.set(name, { nulls: a.nulls, min: known ? a.min : null, max: known ? a.max : null });
  }
  return out;
}
