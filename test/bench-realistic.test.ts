// bench/realistic.ts cannot rot: its --quick mode runs end to end on tiny files (every contender,
// the writers' files and their page census, the ratios), and the Polars peer's strict hex parse
// rejects a bad digit as Sluice's hex2int does (where nodejs-polars is installed; bench/polars.ts).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { ensurePolars, loadPolars, polarsQuery } from '../bench/polars.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'sluice-realistic-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('bench/realistic.ts --quick', () => {
  it('prints every contender for each writer, the page census and the ratios', { timeout: 600_000 }, () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/realistic.ts', '--quick', '--only', 'rm1', '--writers', 'duckdb,arrow', '--no-install'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, SLUICE_CACHE_DIR: join(tmp, 'cache') },
    });
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.status).toBe(0);
    const out = r.stdout;
    const polarsSkipped = /Polars skipped: /.test(r.stderr);
    const table = out.slice(out.indexOf('RM1 — 20,000 rows'));
    const lines = table.split('\n');
    expect(lines[1]).toMatch(/^contender\s+duckdb median s\s+duckdb rows\/s\s+arrow median s\s+arrow rows\/s$/);
    const contenders = [
      'sluice shuffled',
      'sluice unshuffled',
      'duckdb',
      'polars',
      'sluice shuffled, in-process',
      'sluice unshuffled, in-process',
      'duckdb, in-process',
      'polars, in-process',
    ];
    for (const c of contenders) {
      const row = lines.find((l) => l.startsWith(`${c}  `));
      if (polarsSkipped && c.startsWith('polars')) {
        expect(row).toBeUndefined();
        continue;
      }
      // Two writers, each a median in seconds and a rate.
      expect(row, c).toMatch(/^[a-z, -]+?\s+\d+\.\d{3}\s+\S+\s+\d+\.\d{3}\s+\S+$/);
    }
    // RM1 with realistic ids (its own cache file): DuckDB writes the five columns of 1M+ ids PLAIN,
    // and the Arrow writer's chunks mix dictionary and PLAIN pages.
    expect(out).toMatch(
      /rm1 × duckdb: rm1-r20000-s42-g5000-ids-realistic-duckdb\.parquet, [\d.]+ MB, 1 row groups; 40 column chunks: 35 dictionary, 5 PLAIN, /,
    );
    expect(out).toMatch(
      /rm1 × arrow: rm1-r20000-s42-g5000-ids-realistic-arrow-d2048\.parquet, [\d.]+ MB, 4 row groups; 160 column chunks: \d+ dictionary, \d+ PLAIN, [1-9]\d* mixed/,
    );
    if (!polarsSkipped) expect(out).toMatch(/Polars = DuckDB: yes: 40 input columns/);
    for (const k of ['sluice shuffled vs duckdb', 'sluice shuffled / unshuffled rate', 'in-process: shuffled / unshuffled rate'])
      expect(table).toMatch(new RegExp(`\\n${k.replace('/', '\\/')}\\s+(≥ [\\d.]+\\s+)?\\d+\\.\\d\\d× `));
  });
});

const polars = ensurePolars(false);
describe.skipIf(!('dir' in polars))('the Polars peer (bench/polars.ts, peer-run.mjs)', () => {
  const dir = 'dir' in polars ? polars.dir : '';
  const plan = {
    batchSize: 2,
    features: [{ name: 'C1', input: 'C1', kind: 'sparse' as const, ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 100 }] }],
  };
  const run = async (values: string[], hash: boolean) => {
    const file = join(tmp, `hex-${values.length}-${values[0]}.parquet`);
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    await con.run(`COPY (SELECT unnest([${values.map((v) => `'${v}'`).join(',')}]) AS C1) TO '${file}' (FORMAT parquet)`);
    con.closeSync();
    const job = join(tmp, `job-${values.length}-${values[0]}.json`);
    const query = polarsQuery(loadPolars(dir), plan, new Map([['C1', { kind: 'utf8' as const }]]), { hash });
    writeFileSync(job, JSON.stringify({ engine: 'polars', name: 'polars', dir, file, query }));
    return spawnSync(process.execPath, ['bench/peer-run.mjs', '--checksum', job], { cwd: ROOT, encoding: 'utf8' });
  };

  it('parses 1 to 16 hex digits, either case, 16 wrapping to negative int64', async () => {
    const r = await run(['ff', '0000000A', 'ffffffffffffffff', '7fffffffffffffff'], false);
    expect(r.status).toBe(0);
    const sums = JSON.parse(r.stdout.trim()) as { rows: number; checksums: { C1: { sum: number; count: number } } };
    expect(sums.rows).toBe(4);
    // 255 + 10 - 1 + (2^63 - 1), as a float64 sum.
    expect(sums.checksums.C1).toEqual({ sum: 255 + 10 - 1 + 2 ** 63, count: 4 });
  });

  it('rejects a bad digit rather than reading it as null', async () => {
    const r = await run(['00ff', '12g4'], true);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/invalid `hex` encoding/);
  });
});
