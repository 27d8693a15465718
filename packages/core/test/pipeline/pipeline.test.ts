import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { lastValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendNames, fit, pipeline, registerBackend, type Batch, type PlanSpec } from '@sluice/core';
import { createBackend } from '@sluice/core/internal';
import { tempDir, writeSmall } from '../helpers.js';

const dir = tempDir();
const N = 2000;
const file = writeSmall(join(dir, 'small.parquet'), N, 128);

const basePlan = (over: Partial<PlanSpec> = {}): PlanSpec => ({
  batchSize: 64,
  label: 'label',
  features: [
    { name: 'id', input: 'id', kind: 'dense' },
    { name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
    { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 1000 }] },
  ],
  ...over,
});

/** Row ids of a batch (the `id` dense column). */
const ids = (b: Batch): number[] => Array.from({ length: b.rows }, (_, r) => b.dense.data[r * b.dense.dim]!);

async function collect(p: AsyncIterable<Batch>, limit = Infinity): Promise<Batch[]> {
  const out: Batch[] = [];
  for await (const b of p) {
    out.push(b);
    if (out.length >= limit) break;
  }
  return out;
}

describe('pipeline', () => {
  it('streams every row once, in file order, with the batch layout of ARCHITECTURE.md', async () => {
    const batches = await collect(pipeline(basePlan(), { input: file }));
    expect(batches.map((b) => b.seq)).toEqual(batches.map((_, i) => i));
    expect(batches.flatMap(ids)).toEqual(Array.from({ length: N }, (_, i) => i));
    const b = batches[0]!;
    expect(b.rows).toBe(64);
    expect(b.dense.dim).toBe(2);
    expect(b.dense.names).toEqual(['id', 'I1']);
    expect(b.dense.data.length).toBe(64 * 2);
    expect(b.sparse.keys).toEqual(['C1']);
    expect(b.sparse.lengths.length).toBe(64);
    // C1 is null every 11th row: an empty list there, one id elsewhere.
    expect(Array.from(b.sparse.lengths.subarray(0, 12))).toEqual([0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    expect(b.sparse.values.length).toBe(b.sparse.offsets[1]);
    expect(Array.from(b.labels!.subarray(0, 4))).toEqual([0, 1, 0, 1]);
    // Last batch is short: 2000 = 31 * 64 + 16.
    expect(batches.at(-1)!.rows).toBe(16);
    for (const v of b.sparse.values) expect(v >= 0n && v < 1000n).toBe(true);
  });

  it('drops the short last batch with dropLast', async () => {
    const batches = await collect(pipeline(basePlan({ dropLast: true }), { input: file }));
    expect(batches.length).toBe(31);
    expect(batches.every((b) => b.rows === 64)).toBe(true);
  });

  it('is also an Observable', async () => {
    const first = await lastValueFrom(pipeline(basePlan(), { input: file }).observable().pipe(take(3), toArray()));
    expect(first.flatMap(ids)).toEqual(Array.from({ length: 192 }, (_, i) => i));
  });

  it('shuffles deterministically by seed, whatever the decoder count, and differently per epoch', async () => {
    const plan = basePlan({ shuffle: { seed: 7, bufferRows: 300 }, epochs: 2 });
    const a = (await collect(pipeline(plan, { input: file }))).map(ids);
    const b = (await collect(pipeline(plan, { input: file, decoders: 2 }))).map(ids);
    expect(b).toEqual(a);
    const epoch0 = a.slice(0, 32).flat();
    const epoch1 = a.slice(32).flat();
    expect([...epoch0].sort((x, y) => x - y)).toEqual(Array.from({ length: N }, (_, i) => i));
    expect([...epoch1].sort((x, y) => x - y)).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(epoch0).not.toEqual(epoch1);
    expect(epoch0.slice(0, 100)).not.toEqual(Array.from({ length: 100 }, (_, i) => i));
    const other = (await collect(pipeline(basePlan({ shuffle: { seed: 8, bufferRows: 300 } }), { input: file }))).flatMap(ids);
    expect(other).not.toEqual(epoch0);
  });

  it('shards row groups across ranks: disjoint, and together every row', async () => {
    const seen: number[][] = [];
    for (let rank = 0; rank < 3; rank++) {
      seen.push((await collect(pipeline(basePlan({ shard: { rank, worldSize: 3 }, shuffle: { seed: 1, bufferRows: 0 } }), { input: file }))).flatMap(ids));
    }
    const all = seen.flat().sort((x, y) => x - y);
    expect(all).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(seen.every((s) => s.length > 0)).toBe(true);
  });

  for (const shuffle of [false, true]) {
    it(`resumes from state() exactly where it stopped (shuffle ${shuffle ? 'on' : 'off'})`, async () => {
      const plan = basePlan({ epochs: 2, ...(shuffle ? { shuffle: { seed: 3, bufferRows: 500 } } : {}) });
      const full = await collect(pipeline(plan, { input: file }));
      expect(full.length).toBe(64);
      for (const k of [0, 1, 5, 31, 32, 33, 63]) {
        const p = pipeline(plan, { input: file });
        const head = await collect(p, k);
        const state = p.state();
        if (k > 0) {
          expect(state).not.toBeNull();
          // Small JSON: positions and seeds only.
          expect(JSON.stringify(state).length).toBeLessThan(300);
        }
        const rest = await collect(pipeline(plan, { input: file, ...(state ? { resume: JSON.parse(JSON.stringify(state)) } : {}) }));
        const joined = [...head, ...rest];
        expect(joined.map((b) => b.seq)).toEqual(full.map((b) => b.seq));
        expect(joined.map(ids)).toEqual(full.map(ids));
        expect(joined.map((b) => Array.from(b.sparse.values))).toEqual(full.map((b) => Array.from(b.sparse.values)));
      }
    });
  }

  it('refuses a resume state from another plan', async () => {
    const p = pipeline(basePlan(), { input: file });
    await collect(p, 2);
    const other = pipeline(basePlan({ batchSize: 32 }), { input: file, resume: p.state()! });
    await expect(collect(other)).rejects.toThrow(/another plan or data set/);
  });

  it('keeps at most `prefetch` batches ready for a slow consumer, however many workers', async () => {
    // 4 workers: a prefetch set below the backend's concurrency is kept as given (it used to be
    // raised to the concurrency, so on a 16-core machine 15 batches waited).
    const p = pipeline(basePlan({ prefetch: 2, batchSize: 16, backend: { name: 'cpu', workers: 4 } }), { input: file });
    let n = 0;
    for await (const _ of p) {
      await new Promise((r) => setTimeout(r, 2));
      if (++n === 40) break;
    }
    expect(p.metrics().maxBuffered).toBeLessThanOrEqual(2);
    expect(p.metrics().maxBuffered).toBeGreaterThan(0);
  });

  it('stops promptly on abort and rejects with the reason', async () => {
    const ac = new AbortController();
    const p = pipeline(basePlan({ batchSize: 16 }), { input: file, signal: ac.signal });
    let n = 0;
    await expect(
      (async () => {
        for await (const _ of p) if (++n === 3) ac.abort(new Error('stop now'));
      })(),
    ).rejects.toThrow('stop now');
    expect(n).toBe(3);
  });

  it('reads many files through a glob, in sorted order', async () => {
    const d = tempDir();
    writeSmall(join(d, 'part-1.parquet'), 100, 50);
    writeSmall(join(d, 'part-0.parquet'), 100, 50);
    const batches = await collect(pipeline(basePlan({ batchSize: 50 }), { input: join(d, 'part-*.parquet') }));
    expect(batches.length).toBe(4);
    expect(batches.flatMap(ids)).toEqual([...Array.from({ length: 100 }, (_, i) => i), ...Array.from({ length: 100 }, (_, i) => i)]);
  });
});

describe('backend cost reports', () => {
  it('sums numeric report fields over the run and keeps the backend summary', async () => {
    // A backend that wraps the reference one and reports one made-up counter per chunk.
    if (!backendNames().includes('counting')) {
      registerBackend('counting', async (plan, _spec, state) => {
        const inner = await createBackend(plan, { name: 'reference' }, state);
        let chunks = 0;
        return {
          name: 'counting',
          capabilities: inner.capabilities,
          concurrency: 1,
          async run(columns, locate) {
            const r = await inner.run(columns, locate);
            chunks++;
            return { columns: r.columns, report: { ...r.report, kernels: 3, note: 'not a number' } };
          },
          summary: () => ({ chunks, label: 'counting' }),
          dispose: () => inner.dispose(),
        };
      });
    }
    const p = pipeline(basePlan({ backend: { name: 'counting' } }), { input: file });
    const batches = await collect(p);
    const m = p.metrics();
    expect(batches.length).toBe(32);
    expect(m.reportTotals).toEqual({ kernels: 3 * (m.backendSummary!.chunks as number) });
    expect(m.backendSummary!.chunks).toBeGreaterThanOrEqual(32);
    expect(m.backendSummary!.label).toBe('counting');
  });
});

describe('pipeline errors name what and where', () => {
  it('a missing input column names the feature and the column', async () => {
    const plan = basePlan();
    plan.features.push({ name: 'X', input: 'nope', kind: 'dense' });
    await expect(collect(pipeline(plan, { input: file }))).rejects.toThrow(/feature X: input column "nope" is not in/);
  });

  it('a wrong input type names the feature, op and types', async () => {
    const plan = basePlan({ features: [{ name: 'bad', input: 'I1', kind: 'sparse', ops: [{ op: 'hex2int' }] }] });
    await expect(collect(pipeline(plan, { input: file }))).rejects.toThrow(/feature bad, op hex2int \(#1\): .*int32/);
  });

  it('invalid hex names the file, row group, row, column, feature and op, after the good batches', async () => {
    const d = tempDir();
    const f = join(d, 'badhex.parquet');
    const { writeParquet, str, i32 } = await import('../helpers.js');
    writeParquet(f, { id: i32(Array.from({ length: 300 }, (_, i) => i)), C1: str(Array.from({ length: 300 }, (_, i) => (i === 250 ? 'zz12' : 'abc'))) }, 100);
    const plan: PlanSpec = {
      batchSize: 50,
      features: [
        { name: 'id', input: 'id', kind: 'dense' },
        { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }] },
      ],
    };
    const got: Batch[] = [];
    const err = await (async () => {
      for await (const b of pipeline(plan, { input: f })) got.push(b);
    })().catch((e: Error) => e);
    expect(String(err)).toMatch(/file .*badhex\.parquet, row group 2, row 250, column C1, feature C1, op hex2int \(#1\): .*"zz12"/);
    // The five batches before the bad chunk (rows 250-299) were delivered.
    expect(got.flatMap(ids)).toEqual(Array.from({ length: 250 }, (_, i) => i));
  });

  it('a truncated file is refused with its name', async () => {
    const d = tempDir();
    const f = join(d, 'trunc.parquet');
    writeFileSync(f, readFileSync(file).subarray(0, 3000));
    await expect(collect(pipeline(basePlan(), { input: f }))).rejects.toThrow(/trunc\.parquet: not a readable Parquet file/);
  });

  it('a corrupt data page fails with file and row group, without crashing the process', async () => {
    const d = tempDir();
    const f = join(d, 'corrupt.parquet');
    copyFileSync(file, f);
    const bytes = readFileSync(f);
    // Scribble over the middle of the data pages, leaving the footer intact.
    bytes.fill(0xab, 2000, Math.min(bytes.length - 4000, 9000));
    writeFileSync(f, bytes);
    const err = await collect(pipeline(basePlan(), { input: f })).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err)).toMatch(/corrupt\.parquet, row group \d+/);
    // The process (and later reads) still work.
    expect((await collect(pipeline(basePlan(), { input: file }))).length).toBe(32);
  });

  it('a decode worker that cannot start is reported as that, not as a corrupt file', () => {
    // A copy of the build without its decode worker: the worker script is missing.
    const root = join(tempDir(), 'core');
    cpSync(fileURLToPath(new URL('../../dist', import.meta.url)), join(root, 'dist'), { recursive: true });
    rmSync(join(root, 'dist/reader/decode-worker.js'));
    symlinkSync(fileURLToPath(new URL('../../../../node_modules', import.meta.url)), join(root, 'node_modules'), 'dir');
    const script = `const core = await import(${JSON.stringify(pathToFileURL(join(root, 'dist/index.js')).href)});
      try { for await (const b of core.pipeline(${JSON.stringify(basePlan())}, { input: ${JSON.stringify(file)} })) {} console.log('no error'); }
      catch (e) { console.log(e.name + ': ' + e.message); }`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out).toMatch(/^SluiceError: the Parquet decode worker \(.*decode-worker\.js\) could not start: Cannot find module/);
    expect(out).not.toMatch(/corrupt/);
  });

  it('a decoders option out of range is refused before any thread starts', () => {
    for (const d of [0, 1.5, 257, -1])
      expect(() => pipeline(basePlan(), { input: file, decoders: d })).toThrow(`decoders must be an integer from 1 to 256, got ${d}`);
  });

  it('options are checked when the pipeline is made: an unknown one, or one of the wrong kind, is named', () => {
    const made = (options: unknown): string => {
      try {
        pipeline(basePlan(), options as never);
        return 'accepted';
      } catch (e) {
        return `${(e as Error).name}: ${(e as Error).message}`;
      }
    };
    expect(made({ input: file, inptu: 'x' })).toMatch(/^PlanError: unknown option "inptu" \(options: input, resume, fitState, backend, /);
    expect(made({ input: file, batchSize: 1024 })).toBe('PlanError: unknown option "batchSize": it is a plan field (set it in the plan)');
    expect(made({ input: file, workers: 4 })).toBe('PlanError: unknown option "workers": it is a backend option (backend: { name: "cpu", workers: ... })');
    expect(made(null)).toBe('PlanError: pipeline options must be an object, got null');
    expect(made({ input: [] })).toBe('PlanError: input must be a path, glob or URL, or a non-empty list of them, got []');
    expect(made({ input: 42 })).toBe('PlanError: input must be a path, glob or URL, or a non-empty list of them, got 42');
    expect(made({ input: file, backend: { workers: 2 } })).toMatch(/^PlanError: backend must be a backend name or an object with a "name"/);
    expect(made({ input: file, signal: 'x' })).toBe('PlanError: signal must be an AbortSignal (AbortController.signal), got "x"');
    expect(made({ input: file, verifyCrc: 'no' })).toBe('PlanError: verifyCrc must be true or false, got "no"');
    expect(made({ input: file, pack: 'yes' })).toBe('PlanError: pack must be true or false, got "yes"');
    expect(made({ input: file, prefetch: 0 })).toBe('PlanError: prefetch must be an integer from 1 to 1048576, got 0');
    expect(made({ input: file, fitState: 7 })).toBe('PlanError: fitState must be a fit state file, its parsed JSON, or a Map, got 7');
    expect(made({ input: file, resume: 'state.json' })).toBe('PlanError: resume must be a state that pipeline.state() returned, got "state.json"');
    // An option left undefined is an option not given (spreading `{ ...opts, resume: undefined }`).
    expect(made({ input: file, resume: undefined, backend: 'cpu', signal: new AbortController().signal })).toBe('accepted');
  });

  it("fit()'s options are checked the same way", async () => {
    await expect(fit(basePlan(), { input: 42 } as never)).rejects.toThrow('input must be a path, glob or URL, or a non-empty list of them, got 42');
    await expect(fit(basePlan(), { input: file, onProgres: () => {} } as never)).rejects.toThrow('unknown option "onProgres" (options: input, onProgress)');
    await expect(fit(basePlan(), null as never)).rejects.toThrow('fit options must be an object, got null');
    // No options: the plan's input, or the error that says where an input goes.
    await expect(fit(basePlan())).rejects.toThrow('no input: pass { input } to pipeline() or set "input" in the plan');
    expect((await fit(basePlan(), { input: file })).rows).toBe(N);
  });

  it('a malformed resume state is named as that, not as another plan', async () => {
    const p = pipeline(basePlan(), { input: file });
    await collect(p, 2);
    const good = p.state()!;
    await expect(collect(pipeline(basePlan(), { input: file, resume: { foo: 1 } as never }))).rejects.toThrow(
      'resume state is not one pipeline.state() returned: version must be 1, got undefined',
    );
    await expect(collect(pipeline(basePlan(), { input: file, resume: { ...good, offset: -3 } }))).rejects.toThrow(
      'resume state is not one pipeline.state() returned: offset must be a non-negative integer, got -3',
    );
    // The state itself still resumes.
    expect((await collect(pipeline(basePlan(), { input: file, resume: good }))).length).toBeGreaterThan(0);
  });

  it('a file named twice in other words is read once', async () => {
    const once = await collect(pipeline(basePlan(), { input: file }));
    const rel = relative(process.cwd(), file);
    const link = join(dir, 'small-link.parquet');
    symlinkSync(file, link);
    const twice = await collect(pipeline(basePlan(), { input: [file, `./${rel}`, link, join(dir, 'small*.parquet')] }));
    expect(twice.reduce((a, b) => a + b.rows, 0)).toBe(N);
    expect(twice.map(ids)).toEqual(once.map(ids));
  });

  it('a fit state file that is not JSON is named with the place of its first mistake', async () => {
    const bad = join(dir, 'state.json');
    writeFileSync(bad, '{\n  "features": {},\n}\n');
    await expect(pipeline(basePlan(), { input: file, fitState: bad }).info()).rejects.toThrow(
      `fit state ${bad} is not valid JSON at line 3, column 1: expected a property name in double quotes (a trailing comma?)`,
    );
    await expect(pipeline(basePlan(), { input: file, fitState: file }).info()).rejects.toThrow(`fit state ${file} is a Parquet file, not JSON`);
    await expect(pipeline(basePlan(), { input: file, fitState: join(dir, 'none.json') }).info()).rejects.toThrow(
      `cannot read fit state ${join(dir, 'none.json')}: no such file`,
    );
  });

  it('a missing file or empty glob is named', async () => {
    await expect(collect(pipeline(basePlan(), { input: join(dir, 'nope.parquet') }))).rejects.toThrow(/nope\.parquet: cannot open: no such file/);
    await expect(collect(pipeline(basePlan(), { input: join(dir, 'zz-*.parquet') }))).rejects.toThrow(/no files match/);
  });
});

describe('http(s) sources', () => {
  let server: Server;
  let url = '';
  const ranges: string[] = [];
  beforeAll(async () => {
    const body = readFileSync(file);
    server = createServer((req, res) => {
      const range = req.headers.range;
      // Other paths: a server without range requests, a file that is not Parquet, and a 404.
      if (req.url === '/no-ranges.parquet') {
        res.writeHead(200, { 'content-length': body.length });
        res.end(body);
        return;
      }
      if (req.url === '/notes.txt') {
        res.writeHead(206, { 'content-range': 'bytes 0-3/5', 'content-length': 4 });
        res.end('hell');
        return;
      }
      if (req.url !== '/small.parquet') {
        res.writeHead(404, 'Not Found');
        res.end();
        return;
      }
      if (req.method === 'HEAD') {
        res.writeHead(200, { 'content-length': body.length, 'accept-ranges': 'bytes' });
        res.end();
        return;
      }
      if (range) {
        ranges.push(range);
        // bytes=a-b, bytes=a- and the suffix form bytes=-n (the footer read).
        const m = /bytes=(\d*)-(\d*)/.exec(range)!;
        const suffix = m[1] === '';
        const start = suffix ? Math.max(0, body.length - Number(m[2])) : Number(m[1]);
        const end = !suffix && m[2] ? Math.min(Number(m[2]), body.length - 1) : body.length - 1;
        res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
        res.end(body.subarray(start, end + 1));
        return;
      }
      res.writeHead(200, { 'content-length': body.length });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/small.parquet`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('reads a URL with range requests and yields the same batches as the local file', async () => {
    const local = (await collect(pipeline(basePlan(), { input: file }))).flatMap(ids);
    const remote = (await collect(pipeline(basePlan(), { input: url }))).flatMap(ids);
    expect(remote).toEqual(local);
    expect(ranges.length).toBeGreaterThan(1);
    // The scheme is case-insensitive in the decode worker too, as where inputs are resolved.
    const upper = (await collect(pipeline(basePlan(), { input: url.replace(/^http/, 'HTTP') }))).flatMap(ids);
    expect(upper).toEqual(local);
  });

  it('a URL that cannot be read is named with the reason, not as corrupt data', async () => {
    const at = (path: string): string => url.replace('/small.parquet', path);
    await expect(collect(pipeline(basePlan(), { input: at('/gone.parquet') }))).rejects.toThrow(
      /file http:\/\/.*\/gone\.parquet: cannot read: HTTP 404 Not Found/,
    );
    await expect(collect(pipeline(basePlan(), { input: at('/no-ranges.parquet') }))).rejects.toThrow(
      /no-ranges\.parquet: cannot read: the server ignores HTTP range requests/,
    );
    await expect(collect(pipeline(basePlan(), { input: at('/notes.txt') }))).rejects.toThrow(/notes\.txt: cannot read: not a Parquet file/);
    // A port nothing listens on.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(collect(pipeline(basePlan(), { input: `http://127.0.0.1:${port}/x.parquet` }))).rejects.toThrow(
      /x\.parquet: cannot read: cannot reach it \(ECONNREFUSED\)/,
    );
  });
});
