/**
 * Reading from S3: RM1 (1M rows by default) from an S3-compatible store on loopback (OpenStack
 * Swift with s3api, started here as the tests start it: packages/core/test/s3/swift.ts), beside
 * the same file read locally, and beside a plain loop of the same ranged GETs against the same
 * server — the store's own limit on this machine (Swift's proxy is Python and costs CPU here).
 *
 * Contenders, interleaved, best of --reps:
 *  - `local read`: Sluice's decoders reading the plan's columns of every row group of the local file;
 *  - `s3 read`: the same over `s3://bench/rm1.parquet` (footer, then per row group the coalesced
 *    ranged GETs, `SLUICE_S3_CONCURRENCY` in flight per decoder), decoded;
 *  - `plain GETs`: the same ranges, signed with aws4fetch and fetched with the same number in
 *    flight (decoders × per-read concurrency), bodies read and dropped: no decoding, no Sluice;
 *  - `pipeline local` / `pipeline s3`: the whole RM1 plan to ready batches, for context.
 * Bytes/s counts the ranged bytes (the same for all three reads). Target: s3 read ≥ 0.8× plain GETs.
 *
 *   npm run bench:s3 [-- --rows 1000000 --reps 3 --decoders 2 --json]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AwsClient } from 'aws4fetch';
import { parquetMetadata } from 'hyparquet';
import { pipeline } from '@sluice/core';
import { getPreset } from '@sluice/core/gen';
import { DecoderPool, fetchRowGroup, openDataset, openS3Object, readChunks, resolveS3Access, rowGroupRanges, s3Concurrency } from '@sluice/core/internal';
import { startSwift, SWIFT_KEY_ID, SWIFT_SECRET } from '../packages/core/test/s3/swift.js';
import { best, cachedDataset, collectGarbage, emitJson, fmtInt, fmtMB, fmtRatio, fmtSeconds, intArg, log, machine, median, printTable } from './lib.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    reps: { type: 'string', default: '3' },
    decoders: { type: 'string', default: '2' },
    json: { type: 'boolean' },
  },
});
const ROWS = intArg(values.rows, 1_000_000, 'rows');
const REPS = intArg(values.reps, 3, 'reps');
const DECODERS = intArg(values.decoders, 2, 'decoders');
const TARGET = 0.8;

const swift = await startSwift();
if (typeof swift === 'string') {
  log(`bench:s3 needs Swift with s3api on loopback: ${swift}`);
  process.exit(1);
}

try {
  const ds = await cachedDataset({ preset: 'rm1', rows: ROWS });
  const bytes = readFileSync(ds.path);
  log(`uploading ${fmtMB(bytes.length)} to ${swift.endpoint}/bench/rm1.parquet …`);
  await swift.createBucket('bench');
  await swift.put('bench', 'rm1.parquet', bytes);
  for (const [k, v] of Object.entries(swift.env)) process.env[k] = v;
  const S3 = 's3://bench/rm1.parquet';

  const plan = getPreset('rm1').defaultPlan();
  const columns = [...new Set([...plan.features.map((f) => f.input).filter((c): c is string => typeof c === 'string'), ...(plan.label ? [plan.label] : [])])];
  const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const wanted = new Set(columns);
  const perGroup = md.row_groups.map((_, i) => rowGroupRanges(md, i, wanted));
  const ranges = perGroup.flat();
  const rangedBytes = ranges.reduce((a, r) => a + r.end - r.start, 0);
  const inFlight = DECODERS * s3Concurrency();
  log(
    `${fmtInt(md.row_groups.length)} row groups, ${columns.length} columns: ${fmtInt(ranges.length)} ranged GETs, ${fmtMB(rangedBytes)}; ${inFlight} in flight at most`,
  );

  /** `DECODERS` lanes, each taking the next row group as a decoder does and running `rg` on it. */
  const lanes = async (rg: (i: number) => Promise<void>): Promise<void> => {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < perGroup.length) await rg(next++);
    };
    await Promise.all(Array.from({ length: DECODERS }, lane));
  };
  const access = await resolveS3Access();
  /** Sluice's S3 read without the decoding: footer, then each row group's coalesced ranges (s3/object.ts), as decoders fetch them. */
  const s3Fetch = async (): Promise<number> => {
    const o = await openS3Object(S3, access, true);
    let got = 0;
    await lanes(async (i) => {
      const readAt = await fetchRowGroup(o, i, wanted);
      for (const r of perGroup[i]!) got += readAt(r.start, r.end - r.start).length;
    });
    if (got !== rangedBytes) throw new Error(`s3 fetch read ${got} bytes, expected ${rangedBytes}`);
    return ROWS;
  };

  const read = async (input: string): Promise<number> => {
    const pool = new DecoderPool(DECODERS);
    try {
      const d = await openDataset([input], pool);
      let rows = 0;
      const types = new Map(columns.map((c) => [c, d.schema.get(c)!] as const));
      for await (const c of readChunks(d, pool, {
        columns: types,
        chunkRows: plan.batchSize ?? 8192,
        shuffle: null,
        shard: { rank: 0, worldSize: 1 },
        epochs: 1,
      }))
        rows += c.rows;
      return rows;
    } finally {
      await pool.close();
    }
  };
  const aws = new AwsClient({ accessKeyId: SWIFT_KEY_ID, secretAccessKey: SWIFT_SECRET, service: 's3', region: 'us-east-1', retries: 0 });
  /** The same GETs with the same parallelism, signed with aws4fetch and fetched: nothing of Sluice. */
  const plainGets = async (): Promise<number> => {
    // The footer GET Sluice sends when it opens the object (s3/object.ts: the last 256 KiB).
    const tail = await aws.fetch(`${swift.endpoint}/bench/rm1.parquet`, { headers: { range: `bytes=-${256 << 10}` } });
    if (tail.status !== 206) throw new Error(`plain GET answered ${tail.status}`);
    await tail.arrayBuffer();
    let got = 0;
    await lanes(async (i) => {
      const rs = perGroup[i]!;
      let next = 0;
      const one = async (): Promise<void> => {
        while (next < rs.length) {
          const r = rs[next++]!;
          const res = await aws.fetch(`${swift.endpoint}/bench/rm1.parquet`, { headers: { range: `bytes=${r.start}-${r.end - 1}` } });
          if (res.status !== 206) throw new Error(`plain GET answered ${res.status}`);
          // Read before adding: `got += await …` would add to a stale `got`.
          const n = (await res.arrayBuffer()).byteLength;
          got += n;
        }
      };
      await Promise.all(Array.from({ length: Math.min(s3Concurrency(), rs.length) }, one));
    });
    if (got !== rangedBytes) throw new Error(`plain GETs read ${got} bytes, expected ${rangedBytes}`);
    return ROWS;
  };
  const run = async (input: string): Promise<number> => {
    let rows = 0;
    for await (const b of pipeline(plan, { input })) {
      rows += b.rows;
      b.release?.();
    }
    return rows;
  };

  const contenders: Array<{ name: string; bytes: boolean; fn: () => Promise<number> }> = [
    { name: 'local read', bytes: true, fn: () => read(ds.path) },
    { name: 's3 read', bytes: true, fn: () => read(S3) },
    { name: 's3 fetch', bytes: true, fn: s3Fetch },
    { name: 'plain GETs', bytes: true, fn: plainGets },
    { name: 'pipeline local', bytes: false, fn: () => run(ds.path) },
    { name: 'pipeline s3', bytes: false, fn: () => run(S3) },
  ];
  const times = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  // One untimed round warms the decoders, the store's caches and the connection pool.
  for (const c of contenders) await c.fn();
  // The two I/O-only contenders take well under a second: each repetition runs them IO_REPS
  // times, alternating, so that the host's noise falls on both alike.
  const IO_REPS = 3;
  const byName = new Map(contenders.map((c) => [c.name, c]));
  const io = Array.from({ length: IO_REPS }, () => ['s3 fetch', 'plain GETs']).flat();
  const schedule = ['local read', 's3 read', ...io, 'pipeline local', 'pipeline s3'];
  for (let rep = 0; rep < REPS; rep++) {
    for (const name of schedule) {
      const c = byName.get(name)!;
      collectGarbage();
      const t0 = performance.now();
      const rows = await c.fn();
      const s = (performance.now() - t0) / 1000;
      if (rows !== ROWS) throw new Error(`${c.name} produced ${rows} rows, expected ${ROWS}`);
      times.get(c.name)!.push(s);
      log(`rep ${rep + 1}/${REPS} ${c.name}: ${fmtSeconds(s)} s`);
    }
  }
  const sec = (name: string): number => best(times.get(name)!);
  const ratio = sec('plain GETs') / sec('s3 fetch');
  const mid = (name: string): number => median(times.get(name)!);
  const medianRatio = mid('plain GETs') / mid('s3 fetch');
  const rows = contenders.map((c) => [
    c.name,
    fmtSeconds(sec(c.name)),
    fmtSeconds(mid(c.name)),
    c.bytes ? `${fmtMB(rangedBytes / sec(c.name))}/s` : '',
    `${fmtInt(Math.round(ROWS / sec(c.name)))}`,
  ]);
  if (values.json) {
    emitJson({
      bench: 's3',
      machine: machine(),
      rows: ROWS,
      decoders: DECODERS,
      inFlight,
      rangedGets: ranges.length,
      rangedBytes,
      seconds: Object.fromEntries(contenders.map((c) => [c.name, sec(c.name)])),
      s3FetchVsPlainGets: ratio,
      s3FetchVsPlainGetsMedian: medianRatio,
      medianSeconds: Object.fromEntries(contenders.map((c) => [c.name, mid(c.name)])),
      s3ReadVsPlainGets: sec('plain GETs') / sec('s3 read'),
      s3ReadVsLocalRead: sec('local read') / sec('s3 read'),
      pipelineS3VsLocal: sec('pipeline local') / sec('pipeline s3'),
      target: TARGET,
      pass: ratio >= TARGET,
    });
  } else {
    printTable(
      `RM1 ${fmtInt(ROWS)} rows, ${DECODERS} decoders, best of ${REPS}`,
      ['contender', 'best s', 'median s', 'ranged bytes/s (best)', 'rows/s (best)'],
      rows,
    );
    console.log(
      `s3 fetch vs plain GETs (bytes/s): ${fmtRatio(ratio)} best, ${fmtRatio(medianRatio)} median (target ≥ ${TARGET}× on best: ${ratio >= TARGET ? 'met' : 'NOT met'})`,
    );
    console.log(
      `with decoding: s3 read vs plain GETs ${fmtRatio(sec('plain GETs') / sec('s3 read'))}, s3 read vs local read ${fmtRatio(sec('local read') / sec('s3 read'))}`,
    );
    console.log(`pipeline s3 vs pipeline local: ${fmtRatio(sec('pipeline local') / sec('pipeline s3'))}`);
  }
  if (ratio < TARGET) process.exitCode = 1;
} finally {
  await swift.stop();
}
