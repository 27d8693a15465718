/**
 * s3:// inputs against a real S3-compatible store (OpenStack Swift with s3api on loopback,
 * ./swift.ts): the same batches as local copies of the same files through pipeline(), `sluice
 * run`, `bench` and `serve`; one clear line for each refusal; identical batches through a
 * connection that fails part way; and a changed object never read with a stale footer. Skips with
 * the reason where Swift cannot start, except under CI=true.
 */
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@sluice/client';
import { pipeline } from '@sluice/core';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { DecoderPool } from '@sluice/core/internal';
import { schemaOf } from '../../src/reader/dataset.js';
import { runSluice, tempDir, type SluiceRun } from '../helpers.js';
import { faultyProxy } from './faulty-proxy.js';
import { startSwift, type Swift } from './swift.js';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const BIN = join(ROOT, 'packages', 'core', 'bin', 'sluice.js');
const dir = tempDir('sluice-s3-test-');
const local = join(dir, 'local');
const planFile = join(dir, 'plan.json');

const swift = await startSwift();
const skip = typeof swift === 'string' ? swift : null;
if (skip !== null) console.warn(`s3 tests skipped: ${skip}`);
const store = swift as Swift;

/** Runs `sluice ...args` with the store's environment plus `env`; never rejects. */
const sluice = (args: readonly string[], env: Record<string, string> = {}): Promise<SluiceRun> =>
  runSluice(args, { ...store.env, ...env, SLUICE_CACHE_DIR: join(dir, 'cache') });

/** A typed array's bytes, hashed. */
const sha = (a: ArrayBufferView): string =>
  createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex');

/**
 * What a batch holds, each array as the hash of its bytes: a difference still names the batch and
 * the array, and comparing 33,000 rows as plain arrays took most of this suite's time.
 */
const content = (b: { rows: number; dense: { data: Float32Array }; sparse: { lengths: Int32Array; values: BigInt64Array }; labels: Float32Array | null }) => ({
  rows: b.rows,
  dense: sha(b.dense.data),
  lengths: sha(b.sparse.lengths),
  values: sha(b.sparse.values),
  labels: b.labels === null ? null : sha(b.labels),
});

async function batchesOf(input: string | string[]): Promise<ReturnType<typeof content>[]> {
  const out: ReturnType<typeof content>[] = [];
  for await (const b of pipeline(planFile, { input })) out.push(content(b));
  return out;
}

/** Saved process.env values, restored after the suite (pipeline() in this process reads them). */
const saved: Record<string, string | undefined> = {};
function setEnv(env: Record<string, string>): void {
  for (const [k, v] of Object.entries(env)) {
    if (!(k in saved)) saved[k] = process.env[k];
    process.env[k] = v;
  }
}

describe.skipIf(skip !== null)(`s3:// inputs against OpenStack Swift on loopback${skip !== null ? ` (skipped: ${skip})` : ''}`, () => {
  let localTrain: string[];

  beforeAll(async () => {
    mkdirSync(local, { recursive: true });
    const plan = getPreset('rm1').defaultPlan();
    writeFileSync(planFile, JSON.stringify({ ...plan, batchSize: 4096, backend: 'cpu' }));
    const localFiles: string[] = [];
    for (const [i, rows] of [20_000, 13_000].entries()) {
      const out = join(local, 'train', `part-${i}.parquet`);
      await generateDataset({ preset: 'rm1', rows, out, seed: 100 + i, rowGroupSize: 6000 });
      localFiles.push(out);
    }
    localTrain = localFiles;
    await store.createBucket('data');
    await store.createBucket('empty');
    for (const [i, f] of localFiles.entries()) await store.put('data', `train/part-${i}.parquet`, readFileSync(f));
    await store.put('data', 'notes/readme.txt', new TextEncoder().encode('not parquet'));
    // A key that needs percent-encoding in the signed path: space, plus, parentheses.
    await store.put('data', 'odd keys/part 1+(x).parquet', readFileSync(localFiles[1]!));
    setEnv(store.env);
  }, 120_000);

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await store.stop();
  });

  it('pipeline() on a prefix, a glob, a prefix without its slash and a single object gives the local files’ batches', async () => {
    const want = await batchesOf(localTrain);
    expect(want.length).toBeGreaterThan(5);
    expect(await batchesOf('s3://data/train/')).toEqual(want);
    expect(await batchesOf('s3://data/train/part-*.parquet')).toEqual(want);
    expect(await batchesOf('s3://data/train')).toEqual(want);
    const one = await batchesOf(localTrain[1]!);
    expect(await batchesOf('s3://data/train/part-1.parquet')).toEqual(one);
    expect(await batchesOf('s3://data/odd keys/part 1+(x).parquet')).toEqual(one);
    expect(await batchesOf('s3://data/odd keys/*.parquet')).toEqual(one);
  });

  it('sluice run on an s3:// prefix writes the same bytes as on the local copies', async () => {
    const a = join(dir, 'run-s3.parquet');
    const b = join(dir, 'run-local.parquet');
    const r1 = await sluice(['run', '--plan', planFile, '--input', 's3://data/train/', '--output', a, '--quiet']);
    expect(r1.status, r1.stderr).toBe(0);
    const r2 = await sluice(['run', '--plan', planFile, '--input', ...localTrain, '--output', b, '--quiet']);
    expect(r2.status, r2.stderr).toBe(0);
    expect(Buffer.compare(readFileSync(a), readFileSync(b))).toBe(0);
    // Through parquet-wasm instead of Sluice's decoder (what columns it cannot read take): the
    // object as a Blob whose slices are fetched as signed, checked ranged GETs (s3/object.ts).
    const c = join(dir, 'run-s3-wasm.parquet');
    const r3 = await sluice(['run', '--plan', planFile, '--input', 's3://data/train/', '--output', c, '--quiet'], { SLUICE_DIRECT_DECODE: '0' });
    expect(r3.status, r3.stderr).toBe(0);
    expect(Buffer.compare(readFileSync(c), readFileSync(b))).toBe(0);
  });

  it('sluice bench on an s3:// prefix counts the same rows, batches and bytes as on the local copies', async () => {
    const run = async (...input: string[]): Promise<{ rows: number; batches: number; bytes: number }> => {
      const r = await sluice(['bench', '--plan', planFile, '--input', ...input, '--json']);
      expect(r.status, r.stderr).toBe(0);
      const j = JSON.parse(r.stdout) as { rows: number; batches: number; mbPerSecond: number; seconds: number };
      return { rows: j.rows, batches: j.batches, bytes: Math.round(j.mbPerSecond * 1e6 * j.seconds) };
    };
    const s3 = await run('s3://data/train/');
    expect(s3).toEqual(await run(...localTrain));
    expect(s3.rows).toBe(33_000);
  });

  it('sluice serve on an s3:// prefix serves the same batches as on the local copies', async () => {
    const serve = async (...input: string[]): Promise<ReturnType<typeof content>[]> => {
      const child = spawn(process.execPath, [BIN, 'serve', '--plan', planFile, '--input', ...input, '--port', '0'], {
        cwd: ROOT,
        env: { ...process.env, ...store.env, SLUICE_CACHE_DIR: join(dir, 'cache') },
      });
      try {
        let err = '';
        child.stderr.setEncoding('utf8');
        const url = await new Promise<string>((resolve, reject) => {
          child.stderr.on('data', (d: string) => {
            err += d;
            const m = /at (http:\/\/\S+)\/v1\/batches/.exec(err);
            if (m !== null) resolve(m[1]!);
          });
          child.once('exit', (c) => reject(new Error(`serve exited ${c}: ${err}`)));
        });
        const client = createClient(url);
        const out: ReturnType<typeof content>[] = [];
        try {
          for await (const b of client.batches()) out.push(content(b));
        } finally {
          await client.close();
        }
        return out;
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      }
    };
    const s3 = await serve('s3://data/train/');
    expect(s3.length).toBeGreaterThan(5);
    expect(s3).toEqual(await serve(...localTrain));
  });

  /** The one line a refused input gives: exit 1, nothing else on stderr. */
  const refused = async (input: string, env: Record<string, string> = {}): Promise<string> => {
    const r = await sluice(['bench', '--plan', planFile, '--input', input], env);
    expect(r.status, r.stderr).toBe(1);
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    return lines[0]!;
  };

  it('a wrong secret, a missing key, a missing bucket and an empty prefix each give one line naming them and what the store said', async () => {
    expect(await refused('s3://data/train/', { AWS_SECRET_ACCESS_KEY: 'not-the-secret' })).toBe(
      'sluice bench: file s3://data/train/: the secret key does not match the access key id (403 SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided. Check your key and signing method.); credentials from the environment',
    );
    expect(await refused('s3://data/train/part-9.parquet')).toBe(
      'sluice bench: file s3://data/train/part-9.parquet: no such object (404 NoSuchKey: The specified key does not exist.)',
    );
    expect(await refused('s3://no-such-bucket/train/')).toBe(
      'sluice bench: file s3://no-such-bucket/train/: no such bucket "no-such-bucket" (404 NoSuchBucket: The specified bucket does not exist.)',
    );
    expect(await refused('s3://empty/train/')).toBe(
      'sluice bench: file s3://empty/train/: the prefix holds no .parquet objects (ListObjectsV2 listed nothing)',
    );
    expect(await refused('s3://data/notes/')).toBe(
      'sluice bench: file s3://data/notes/: the prefix holds no .parquet objects (1 object, none ending in .parquet)',
    );
    expect(await refused('s3://data/notes/readme.txt')).toBe('sluice bench: file s3://data/notes/readme.txt: not a Parquet file (it does not start with PAR1)');
    expect(
      await refused('s3://data/train/', { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', HOME: dir, AWS_SHARED_CREDENTIALS_FILE: '', AWS_CONFIG_FILE: '' }),
    ).toBe(
      `sluice bench: no S3 credentials found: looked in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ${dir}/.aws/credentials (no such file) and ${dir}/.aws/config (no such file)`,
    );
  });

  it('a 503 and a stream cut part way are retried, and the batches are the same', async () => {
    const want = await batchesOf(localTrain);
    const proxy = await faultyProxy(store.endpoint, { fail503: 2, cut: 2 });
    try {
      setEnv({ AWS_ENDPOINT_URL: proxy.endpoint });
      expect(await batchesOf('s3://data/train/')).toEqual(want);
      // The faults really happened: each broke a column-chunk read that was then tried again.
      expect(proxy.seen.failed503).toBe(2);
      expect(proxy.seen.cut).toBe(2);
    } finally {
      setEnv({ AWS_ENDPOINT_URL: store.endpoint });
      await proxy.close();
    }
  });

  it('a store that keeps failing is named with what it said and how many tries were made', async () => {
    const proxy = await faultyProxy(store.endpoint, { fail503: 1000, cut: 0 });
    try {
      const r = await sluice(['bench', '--plan', planFile, '--input', 's3://data/train/part-0.parquet'], { AWS_ENDPOINT_URL: proxy.endpoint });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr.trim()).toMatch(
        /^sluice bench: file s3:\/\/data\/train\/part-0\.parquet, row group \d+: the store is throttling requests \(503 SlowDown: Please reduce your request rate\.\) after 6 tries$/,
      );
    } finally {
      await proxy.close();
    }
  });

  it('an object replaced after its footer was read is refused, not decoded with the old footer', async () => {
    await store.put('data', 'changing/x.parquet', readFileSync(localTrain[0]!));
    const pool = new DecoderPool(1);
    try {
      const meta = await pool.open('s3://data/changing/x.parquet');
      expect(meta.rowGroups.length).toBeGreaterThan(1);
      await store.put('data', 'changing/x.parquet', readFileSync(localTrain[1]!));
      // Row group 0 lies far from the object's end, outside the tail fetched with the footer.
      await expect(pool.readRowGroupColumns('s3://data/changing/x.parquet', 0, ['I1'], schemaOf(meta).types)).rejects.toThrow(
        /^file s3:\/\/data\/changing\/x\.parquet, row group 0: the object changed while it was read \(ETag "[0-9a-f]+" became "[0-9a-f]+"\): start the run again$/,
      );
      // Opened again, it is read as it is now.
      const again = await pool.open('s3://data/changing/x.parquet');
      expect(again.numRows).toBe(13_000);
    } finally {
      await pool.close();
    }
  });
});
