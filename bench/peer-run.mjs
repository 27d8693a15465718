/**
 * A peer of realistic.ts (DuckDB or Polars) running one prepared job in a plain `node` process,
 * with nothing else loaded: no tsx, no Sluice. The parent builds the job (duckdb-sql.ts,
 * polars.ts) and writes it to a JSON file; the query's text is all this process gets.
 *
 *   node bench/peer-run.mjs JOB.json            one run, then exit: the whole process is timed
 *   node bench/peer-run.mjs --serve JOB.json    runs on request (lib.ts childContenders' protocol)
 *   node bench/peer-run.mjs --checksum JOB.json one run, then per output column its sum and non-null count
 *
 * A job is {engine: 'duckdb', name, file, threads, setup: [sql], select: sql} or
 * {engine: 'polars', name, dir, file, query: {steps: [[expr json]], select: [expr json]}};
 * Polars takes its thread count from POLARS_MAX_THREADS, which the parent sets.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const argv = process.argv.slice(2);
const mode = argv[0] === '--serve' || argv[0] === '--checksum' ? argv.shift() : '--once';
const job = JSON.parse(readFileSync(argv[0], 'utf8'));

/** Prepares the engine; returns run() → rows, and checksums() of the last run's output. */
async function engine() {
  if (job.engine === 'duckdb') {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    await con.run(`SET threads = ${job.threads}`);
    for (const s of job.setup) await con.run(s);
    return {
      async run() {
        await con.run(`CREATE TABLE __out AS ${job.select}`);
        return Number((await con.runAndReadAll('SELECT count(*) FROM __out')).getRows()[0][0]);
      },
      async after() {
        await con.run('DROP TABLE IF EXISTS __out');
      },
      async checksums() {
        const cols = (await con.runAndReadAll('DESCRIBE __out')).getRows().map((r) => [String(r[0]), String(r[1])]);
        const q = (c) => `"${c.replace(/"/g, '""')}"`;
        const parts = cols.flatMap(([c, t]) => [`sum(${t.endsWith('[]') ? `list_sum(${q(c)}::DOUBLE[])` : `${q(c)}::DOUBLE`})`, `count(${q(c)})`]);
        const row = (await con.runAndReadAll(`SELECT ${parts.join(', ')} FROM __out`)).getRows()[0];
        return Object.fromEntries(cols.map(([c], i) => [c, { sum: Number(row[2 * i] ?? 0), count: Number(row[2 * i + 1]) }]));
      },
    };
  }
  const pl = createRequire(join(job.dir, 'package.json'))('nodejs-polars');
  const de = (j) => pl.Expr.deserialize(Buffer.from(JSON.stringify(j)), 'json');
  let out = null;
  return {
    async run() {
      let lf = pl.scanParquet(job.file);
      for (const step of job.query.steps) lf = lf.withColumns(step.map(de));
      // No options to collect(): passing any turns off every optimization it does not list.
      out = await lf.select(job.query.select.map(de)).collect();
      return out.height;
    },
    async after() {
      out = null;
    },
    async checksums() {
      const sums = {};
      for (const c of out.columns) {
        const s = out.getColumn(c);
        const e = /^(DataType\()?List/.test(String(s.dtype)) ? pl.col(c).cast(pl.List(pl.Float64)).lst.sum() : pl.col(c);
        const sum = out.select(e.cast(pl.Float64).sum().alias('s')).getColumn('s').get(0);
        sums[c] = { sum: Number(sum ?? 0), count: s.len() - s.nullCount() };
      }
      return sums;
    },
  };
}

const e = await engine();
if (mode !== '--serve') {
  const rows = await e.run();
  const result = mode === '--checksum' ? { rows, checksums: await e.checksums() } : { rows };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
const REPLY = '\u0001sluice-bench ';
const say = (o) => process.stdout.write(`${REPLY}${JSON.stringify(o)}\n`);
say({ ready: [job.name] });
for await (const line of createInterface({ input: process.stdin })) {
  if (line !== '0') {
    say({ error: `no contender ${JSON.stringify(line)}` });
    continue;
  }
  try {
    globalThis.gc?.();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const rows = await e.run();
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    await e.after();
    say({ rows, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 });
  } catch (err) {
    say({ error: err?.stack ?? String(err) });
  }
}
