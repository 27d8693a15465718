// `ids: 'realistic'` (`sluice gen --ids realistic`): the large hex id columns spread as Criteo's do
// (BAGPIPE §2.3), enough distinct values per row group that DuckDB gives up its dictionary, while
// every other column stays the default data, value for value.
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { generateBatches } from '../../src/gen/generate.js';
import { getPreset, REALISTIC_LARGE_VOCAB, withIds } from '../../src/gen/presets.js';
import type { HexColumnSpec } from '../../src/gen/spec.js';

/** DuckDB's default row group: its Parquet writer keeps a dictionary for at most a fifth of it. */
const DUCKDB_ROWS = 122_880;
const DUCKDB_DICTIONARY_LIMIT = DUCKDB_ROWS / 5;

const hexColumns = getPreset('rm1').columns.filter((c): c is HexColumnSpec => c.kind === 'hex');
const large = hexColumns.filter((c) => c.vocab >= REALISTIC_LARGE_VOCAB).map((c) => c.name);

function table(ids: 'skewed' | 'realistic', rows: number, seed = 42): arrow.Table {
  return new arrow.Table([...generateBatches('rm1', rows, { seed, ids, slabRows: 16_384 })]);
}

function distinct(t: arrow.Table, column: string, rows = t.numRows): number {
  const seen = new Set<string>();
  const v = t.getChild(column)!;
  for (let r = 0; r < rows; r++) {
    const s = v.get(r) as string | null;
    if (s !== null) seen.add(s);
  }
  return seen.size;
}

describe('realistic ids', () => {
  const skewed = table('skewed', DUCKDB_ROWS);
  const realistic = table('realistic', DUCKDB_ROWS);

  it('the columns of 1M+ ids have more distinct values per DuckDB row group than its dictionary limit; skewed ones do not', () => {
    expect(large).toEqual(['C3', 'C4', 'C12', 'C16', 'C21']);
    for (const c of large) {
      const r = distinct(realistic, c);
      expect(r, c).toBeGreaterThan(1.5 * DUCKDB_DICTIONARY_LIMIT);
      expect(r, c).toBeLessThan(0.6 * DUCKDB_ROWS);
      expect(distinct(skewed, c), c).toBeLessThan(DUCKDB_DICTIONARY_LIMIT);
    }
  });

  it('a 16,384-row batch holds about BAGPIPE’s ~65,000 unique ids over the 26 columns (skewed: about half)', () => {
    const sum = (t: arrow.Table): number => hexColumns.reduce((n, c) => n + distinct(t, c.name, 16_384), 0);
    const r = sum(realistic);
    expect(r).toBeGreaterThan(55_000);
    expect(r).toBeLessThan(75_000);
    expect(sum(skewed)).toBeLessThan(45_000);
  });

  it('every other column is the default data, value for value', () => {
    for (const f of skewed.schema.fields) {
      if (large.includes(f.name)) continue;
      expect(JSON.stringify(realistic.getChild(f.name)!.toJSON()), f.name).toBe(JSON.stringify(skewed.getChild(f.name)!.toJSON()));
    }
  });

  it('is deterministic for a seed, and another seed gives other ids', () => {
    const again = table('realistic', 5_000);
    const other = table('realistic', 5_000, 43);
    for (const c of large) {
      expect(JSON.stringify(again.getChild(c)!.toJSON()), c).toBe(JSON.stringify(realistic.getChild(c)!.slice(0, 5_000).toJSON()));
      expect(JSON.stringify(other.getChild(c)!.toJSON()), c).not.toBe(JSON.stringify(again.getChild(c)!.toJSON()));
    }
  });

  it('says so in the schema metadata; the default data carries no such key', () => {
    expect(realistic.schema.metadata.get('sluice.ids')).toBe('realistic');
    expect(skewed.schema.metadata.has('sluice.ids')).toBe(false);
  });

  it('leaves the preset itself alone for skewed, and refuses a preset without hex columns', () => {
    const rm1 = getPreset('rm1');
    expect(withIds(rm1, 'skewed')).toBe(rm1);
    expect(withIds(rm1, 'realistic').defaultPlan()).toEqual(rm1.defaultPlan());
    expect(() => withIds(getPreset('rm5'), 'realistic')).toThrow(/preset "rm5" has none/);
  });
});
