/**
 * End-to-end tests of the `sluice` command line: each test spawns `node packages/core/bin/sluice.js`
 * (the compiled dist/, so `npm run build` first) and checks exit codes, stdout, stderr and files.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { copyFileSync, existsSync, mkdirSync, openAsBlob, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Float32, Int32, Vector, tableFromIPC, type Table } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPlan, type PlanSpec } from '@sluice/ops';
import { DEMO_ROWS } from '../packages/core/src/gen/demo.js';
import { checkFits } from '../packages/core/src/cli/commands/reproduce.js';
import { REPRODUCTIONS } from '../packages/core/src/cli/reproductions.js';
import { i32, str, tempDir, vec, writeParquet } from '../packages/core/test/helpers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages', 'core', 'bin', 'sluice.js');
const PRESETS = ['rm1', 'rm2', 'rm3', 'rm4', 'rm5', 'piper-d1', 'rap-plan0', 'rap-plan1', 'rap-plan2', 'rap-plan3'];

const dir = tempDir('sluice-cli-test-');
const cacheDir = join(dir, 'cache');

interface Result {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs `sluice ...args` from the repository root with its own cache dir; never rejects. */
function sluice(args: readonly string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: ROOT,
        env: { ...process.env, SLUICE_CACHE_DIR: cacheDir, ...env },
        maxBuffer: 256 * 1024 * 1024,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : (err as { code?: unknown }).code;
        // Progress lines appear only when a command runs longer than a few seconds (a loaded
        // machine): they depend on timing, so the assertions below never see them.
        const quiet = stderr
          .split('\n')
          .filter((l) => !/^[a-z]+( \S+)?: [\d,]+\/[\d,]+ \w+( \d+%)?, [\d,]+ \w+\/s$/.test(l))
          .join('\n');
        resolve({ status: typeof code === 'number' ? code : -1, stdout, stderr: quiet });
      },
    );
  });
}

const lines = (s: string): string[] => s.split('\n').filter((l) => l !== '');
const path = (name: string): string => join(dir, name);

function writePlan(name: string, plan: PlanSpec | string): string {
  const p = path(name);
  writeFileSync(p, typeof plan === 'string' ? plan : JSON.stringify(plan));
  return p;
}

/** A user error: exit 1, nothing on stdout, exactly one stderr line, no stack trace. */
function expectOneLineError(r: Result, command: string, ...patterns: Array<string | RegExp>): string {
  expect(r.status, r.stderr).toBe(1);
  expect(r.stdout).toBe('');
  const ls = lines(r.stderr);
  expect(ls, r.stderr).toHaveLength(1);
  expect(ls.some((l) => /^\s+at /.test(l))).toBe(false);
  const line = ls[0]!;
  expect(line.startsWith(`sluice ${command}: `)).toBe(true);
  expect(line).not.toMatch(/unexpected error/);
  for (const p of patterns) {
    if (typeof p === 'string') expect(line).toContain(p);
    else expect(line).toMatch(p);
  }
  return line;
}

/** A usage error: exit 2, stderr names the problem and points at --help. */
function expectUsageError(r: Result, ...patterns: Array<string | RegExp>): void {
  expect(r.status, r.stderr).toBe(2);
  for (const p of patterns) {
    if (typeof p === 'string') expect(r.stderr).toContain(p);
    else expect(r.stderr).toMatch(p);
  }
}

// ---- reading Parquet back -----------------------------------------------------------------------

function readTable(file: string): Table {
  return tableFromIPC(pw.readParquet(readFileSync(file)).intoIPCStream());
}

/** Column `name` as JS values: lists as arrays, int64 as bigint, null as null. */
function values(t: Table, name: string): unknown[] {
  const v = t.getChild(name);
  if (v === null) throw new Error(`no column ${name} (have ${t.schema.fields.map((f) => f.name).join(', ')})`);
  return Array.from({ length: t.numRows }, (_, i) => {
    const x: unknown = v.get(i);
    return x instanceof Vector ? Array.from(x as Vector) : x;
  });
}

/** Name → Arrow type name of every column, e.g. { I1: 'Float32', C1: 'List<Int64>' }. */
const typesOf = (t: Table): Record<string, string> => Object.fromEntries(t.schema.fields.map((f) => [f.name, String(f.type)]));

/** Every column's values as comparable JSON. */
const contents = (t: Table): string =>
  JSON.stringify(Object.fromEntries(t.schema.fields.map((f) => [f.name, values(t, f.name)])), (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));

async function rowGroupRows(file: string): Promise<number[]> {
  const f = await pw.ParquetFile.fromFile(await openAsBlob(file));
  return f
    .metadata()
    .rowGroups()
    .map((g) => g.numRows());
}

/** Files in `dir` left behind by a run writing `name` (the output or its temporary). */
const leftovers = (name: string): string[] => readdirSync(dir).filter((f) => f.startsWith(name));

// ---- fixtures -----------------------------------------------------------------------------------

/** sigridHash(i, salt 0, max 100) for i = 0..15: TorchArrow's golden vector (OPS.md). */
const SIGRID_GOLDEN_0_15 = [6, 60, 54, 54, 9, 4, 91, 11, 67, 79, 2, 25, 92, 98, 83, 66];

const N = 50;
const rowsIdx = Array.from({ length: N }, (_, i) => i);
/** I1: null every 5th row, negative below 10. */
const I1 = rowsIdx.map((i) => (i % 5 === 0 ? null : i - 10));
/** cat: 0..5 (4 and 5 are out of range for numClasses 4), null at i % 9 == 4. */
const CAT = rowsIdx.map((i) => (i % 9 === 4 ? null : i % 6));
/** C1: hex of i % 16 in either case and with leading zeros; null at i % 7 == 3, empty at i % 13 == 0. */
const C1 = rowsIdx.map((i) => {
  if (i % 7 === 3) return null;
  if (i % 13 === 0) return '';
  const h = (i % 16).toString(16);
  return i % 2 === 0 ? h : `0${h.toUpperCase()}`;
});
const LABEL = rowsIdx.map((i) => (i % 3 === 0 ? 1 : 0));

const mixPlan: PlanSpec = {
  batchSize: 8,
  label: 'label',
  features: [
    { name: 'id', input: 'id', kind: 'dense' },
    { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'sigridHash', salt: 0, max: 100 }] },
    { name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'neg2zero' }, { op: 'log', offset: 1 }] },
    {
      name: 'cat',
      input: 'cat',
      kind: 'dense',
      ops: [
        { op: 'fillNull', value: 0 },
        { op: 'oneHot', numClasses: 4 },
      ],
    },
    { name: 'C1raw', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }] },
  ],
};

let mixFile = '';
let mixPlanFile = '';
/** 10 rows in row groups of 3; C1 of row 7 (row group 2) is the invalid hex "12g4". */
let badHexFile = '';
/** Like mix, but C1 is int32. */
let intC1File = '';
let rm1File = '';
let rm1PlanFile = '';

beforeAll(async () => {
  mkdirSync(cacheDir, { recursive: true });
  mixFile = writeParquet(
    path('mix.parquet'),
    {
      label: vec(new Float32(), LABEL),
      id: i32(rowsIdx),
      I1: i32(I1),
      cat: vec(new Int32(), CAT),
      C1: str(C1),
    },
    7,
  );
  mixPlanFile = writePlan('mix-plan.json', mixPlan);
  const n = 10;
  badHexFile = writeParquet(
    path('badhex.parquet'),
    {
      label: vec(
        new Float32(),
        Array.from({ length: n }, (_, i) => i % 2),
      ),
      id: i32(Array.from({ length: n }, (_, i) => i)),
      I1: i32(Array.from({ length: n }, (_, i) => i)),
      cat: i32(Array.from({ length: n }, (_, i) => i % 4)),
      C1: str(Array.from({ length: n }, (_, i) => (i === 7 ? '12g4' : i.toString(16)))),
    },
    3,
  );
  intC1File = writeParquet(path('int-c1.parquet'), {
    label: vec(new Float32(), [0, 1]),
    id: i32([0, 1]),
    I1: i32([1, 2]),
    cat: i32([0, 1]),
    C1: i32([5, 6]),
  });
  rm1File = path('rm1.parquet');
  const gen = await sluice(['gen', '--preset', 'rm1', '--rows', '3000', '--row-group-size', '1000', '--seed', '5', '--out', rm1File, '--quiet']);
  expect(gen.status, gen.stderr).toBe(0);
  const plan = await sluice(['plan', '--preset', 'rm1']);
  expect(plan.status, plan.stderr).toBe(0);
  rm1PlanFile = writePlan('rm1-plan.json', plan.stdout);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

// ---- tests --------------------------------------------------------------------------------------

describe('sluice usage', () => {
  it('--help prints the usage and exits 0', async () => {
    const r = await sluice(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('usage: sluice <command>');
    for (const cmd of ['demo', 'plan', 'gen', 'fit', 'run', 'bench']) expect(r.stdout).toMatch(new RegExp(`^  ${cmd} `, 'm'));
    expect((await sluice(['help'])).status).toBe(0);
    const sub = await sluice(['run', '--help']);
    expect(sub.status).toBe(0);
    expect(sub.stdout).toContain('usage: sluice');
  });

  it('each command has its own --help page, and --version prints the package version', async () => {
    const commands = ['demo', 'plan', 'gen', 'fit', 'run', 'bench', 'reproduce', 'serve', 'lookahead', 'explain', 'worker', 'job'];
    const pages = await Promise.all(commands.map((c) => sluice([c, '--help'])));
    pages.forEach((r, k) => {
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: sluice ${commands[k]}\\b`));
      expect(r.stdout).toContain('-h, --help');
    });
    expect(pages[commands.indexOf('run')]!.stdout).toMatch(/^\s+-o, --output O\.parquet\s/m);
    expect(pages[0]!.stdout).toContain(`default ${DEMO_ROWS.toLocaleString('en-US')}`);
    expect((await sluice(['help', 'gen'])).stdout).toBe((await sluice(['gen', '--help'])).stdout);
    const version = (JSON.parse(readFileSync(join(ROOT, 'packages', 'core', 'package.json'), 'utf8')) as { version: string }).version;
    const v = await sluice(['--version']);
    expect(v.status).toBe(0);
    expect(v.stdout).toBe(`sluice ${version}\n`);
  });

  it('no arguments: usage, exit 2', async () => {
    const r = await sluice([]);
    expect(r.status).toBe(2);
    expect(r.stdout + r.stderr).toContain('usage: sluice <command>');
  });

  it('an unknown command exits 2 naming it', async () => {
    expectUsageError(await sluice(['frobnicate']), 'unknown command "frobnicate"', '--help');
  });

  it('an unknown option exits 2 naming it', async () => {
    expectUsageError(await sluice(['plan', '--presett', 'rm1']), '--presett');
  });

  it('a missing required flag exits 2 naming the flag', async () => {
    const cases: Array<[string[], string]> = [
      [['plan'], '--preset is required'],
      // Issue 32 made gen and fit say --output, as run does (--out still works: see below).
      [['gen', '--preset', 'rm1', '--rows', '10'], '--output is required'],
      [['gen', '--preset', 'rm1', '--out', path('never.parquet')], '--rows is required'],
      [['run', '--plan', mixPlanFile, '--input', mixFile], '--output is required'],
      [['run', '--plan', mixPlanFile, '--output', path('never.parquet')], '--input is required'],
      [['run', '--input', mixFile, '--output', path('never.parquet')], '--plan is required'],
      [['fit', '--plan', mixPlanFile, '--input', mixFile], '--output is required'],
      [['bench', '--plan', mixPlanFile], '--input is required'],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => expectUsageError(r, cases[k]![1]));
    expect(existsSync(path('never.parquet'))).toBe(false);
  });

  it('a bad number exits 2 naming the flag', async () => {
    expectUsageError(
      await sluice(['gen', '--preset', 'rm1', '--rows', 'many', '--out', path('never.parquet')]),
      '--rows must be an integer of at least 1, got "many"',
    );
    expectUsageError(
      await sluice(['gen', '--preset', 'rm1', '--rows', '0', '--out', path('never.parquet')]),
      '--rows must be an integer of at least 1, got "0"',
    );
    expectUsageError(await sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', path('never.parquet'), '--workers', 'x']), '--workers');
    expect(existsSync(path('never.parquet'))).toBe(false);
  });
});

describe('sluice plan', () => {
  it('--preset rm1 prints JSON that loadPlan accepts', async () => {
    const r = await sluice(['plan', '--preset', 'rm1']);
    expect(r.status).toBe(0);
    const spec = JSON.parse(r.stdout) as PlanSpec;
    const plan = loadPlan(spec);
    expect(plan.label).toBe('label');
    expect(plan.features.some((f) => f.kind === 'dense')).toBe(true);
    expect(plan.features.some((f) => f.kind === 'sparse')).toBe(true);
    expect(plan.features.some((f) => f.ops.some((o) => o.op === 'hex2int'))).toBe(true);
  });

  it('works for every preset', async () => {
    const results = await Promise.all(PRESETS.map((p) => sluice(['plan', '--preset', p])));
    results.forEach((r, k) => {
      expect(r.status, `${PRESETS[k]}: ${r.stderr}`).toBe(0);
      const plan = loadPlan(JSON.parse(r.stdout) as unknown);
      expect(plan.features.length, PRESETS[k]).toBeGreaterThan(0);
    });
  });

  it('an unknown preset exits 2 listing the valid names', async () => {
    const r = await sluice(['plan', '--preset', 'rm9']);
    expectUsageError(r, 'unknown preset "rm9"');
    for (const p of PRESETS) expect(r.stderr).toContain(p);
    expect(r.stdout).toBe('');
  });
});

describe('sluice gen', () => {
  it('writes the rows in row groups of the given size', async () => {
    expect(statSync(rm1File).size).toBeGreaterThan(0);
    expect(await rowGroupRows(rm1File)).toEqual([1000, 1000, 1000]);
    const t = readTable(rm1File);
    expect(t.numRows).toBe(3000);
    const types = typesOf(t);
    expect(types.label).toBe('Float32');
    // Every input the rm1 plan reads is there.
    for (const f of loadPlan(rm1PlanFile).features) expect(types[f.input], f.input).toBeDefined();
  });

  it('is deterministic by seed: the same seed gives identical data, another seed different data', async () => {
    const again = path('rm1-again.parquet');
    const other = path('rm1-seed6.parquet');
    const [a, b] = await Promise.all([
      sluice(['gen', '--preset', 'rm1', '--rows', '3000', '--row-group-size', '1000', '--seed', '5', '--out', again, '--quiet']),
      sluice(['gen', '--preset', 'rm1', '--rows', '3000', '--row-group-size', '1000', '--seed', '6', '--out', other, '--quiet']),
    ]);
    expect(a.status, a.stderr).toBe(0);
    expect(b.status, b.stderr).toBe(0);
    expect(a.stdout).toMatch(/wrote 3000 rows to /);
    const base = readTable(rm1File);
    const same = readTable(again);
    const diff = readTable(other);
    expect(same.schema.fields.map((f) => f.name)).toEqual(base.schema.fields.map((f) => f.name));
    expect(contents(same)).toBe(contents(base));
    expect(diff.numRows).toBe(3000);
    expect(contents(diff)).not.toBe(contents(base));
    const sameColumns = base.schema.fields.filter((f) => JSON.stringify(values(base, f.name)) === JSON.stringify(values(diff, f.name)));
    expect(sameColumns.length).toBeLessThan(base.schema.fields.length / 2);
  });

  it('--ids realistic changes only the large id columns; a bad mode or a preset without hex columns exits 2', async () => {
    const file = path('rm1-realistic.parquet');
    const r = await sluice([
      'gen',
      '--preset',
      'rm1',
      '--rows',
      '3000',
      '--row-group-size',
      '1000',
      '--seed',
      '5',
      '--ids',
      'realistic',
      '--out',
      file,
      '--quiet',
    ]);
    expect(r.status, r.stderr).toBe(0);
    const [base, real] = [readTable(rm1File), readTable(file)];
    expect(JSON.stringify(values(real, 'C1'))).toBe(JSON.stringify(values(base, 'C1')));
    expect(JSON.stringify(values(real, 'C3'))).not.toBe(JSON.stringify(values(base, 'C3')));
    const never = path('never.parquet');
    expectUsageError(
      await sluice(['gen', '--preset', 'rm1', '--rows', '10', '--ids', 'uniform', '--out', never]),
      '--ids must be skewed or realistic, got "uniform"',
    );
    expectUsageError(await sluice(['gen', '--preset', 'rm5', '--rows', '10', '--ids', 'realistic', '--out', never]), 'preset "rm5" has none');
    expect(existsSync(never)).toBe(false);
  });

  it('an unknown preset exits 2 listing the valid names', async () => {
    const r = await sluice(['gen', '--preset', 'rm0', '--rows', '10', '--out', path('never.parquet')]);
    expectUsageError(r, 'unknown preset "rm0"', 'rap-plan3');
    expect(existsSync(path('never.parquet'))).toBe(false);
  });
});

describe('sluice serve', () => {
  it('a port in use is one line naming the address, not an unexpected error', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    try {
      const r = await sluice(['serve', '--plan', mixPlanFile, '--input', mixFile, '--port', String(port)]);
      expectOneLineError(r, 'serve', `cannot listen on 127.0.0.1:${port}: the port is in use`);
    } finally {
      await new Promise<void>((r) => taken.close(() => r()));
    }
  });

  it('an empty --token or SLUICE_TOKEN is a usage error naming which, for serve and worker alike', async () => {
    const serve = ['serve', '--plan', mixPlanFile, '--input', mixFile, '--port', '0'];
    const worker = ['worker', '--redis', 'redis://127.0.0.1:9', '--job', 'j'];
    const [flag, env, wFlag, wEnv] = await Promise.all([
      sluice([...serve, '--token', '']),
      sluice(serve, { SLUICE_TOKEN: '' }),
      sluice([...worker, '--token', '']),
      sluice(worker, { SLUICE_TOKEN: '' }),
    ]);
    const expectUsageLine = (r: Result, command: string, line: string): void => {
      expect(r.status, r.stderr).toBe(2);
      expect(lines(r.stderr)).toEqual([`sluice ${command}: ${line}`, `(see sluice ${command} --help)`]);
    };
    expectUsageLine(
      flag,
      'serve',
      '--token is empty (an unset shell variable in --token "$SLUICE_TOKEN"?): give a token, or leave --token out to serve without one',
    );
    expectUsageLine(env, 'serve', 'SLUICE_TOKEN is set but empty: give it a token, or unset it to serve without one');
    expectUsageLine(
      wFlag,
      'worker',
      '--token is empty (an unset shell variable in --token "$SLUICE_TOKEN"?): give a token, or leave --token out to serve without one',
    );
    expectUsageLine(wEnv, 'worker', 'SLUICE_TOKEN is set but empty: give it a token, or unset it to serve without one');
  });

  it('warns when it serves beyond this machine without a token, and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN, 'serve', '--plan', mixPlanFile, '--input', mixFile, '--port', '0', '--host', '0.0.0.0'], {
      cwd: ROOT,
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'SLUICE_TOKEN')),
    });
    let err = '';
    child.stderr.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (d: string) => {
        err += d;
        if (/^serving .*\n/m.test(err)) resolve();
      });
      child.once('exit', (c) => reject(new Error(`exited ${c}: ${err}`)));
    });
    child.kill('SIGTERM');
    expect(await new Promise((r) => child.once('exit', r))).toBe(0);
    expect(lines(err)[0]).toMatch(/^warning: serving on 0\.0\.0\.0 without --token \(or SLUICE_TOKEN\): anyone who can reach port (\d+) can read the data$/);
    // The port it got, not the 0 it was asked for.
    expect(lines(err)[0]!.match(/port (\d+)/)![1]).toBe(lines(err)[1]!.match(/:(\d+)\/v1/)![1]);
    expect(lines(err)[1]).toMatch(/^serving 7 batches of 8 rows at http:\/\/0\.0\.0\.0:\d+\/v1\/batches\/\{seq\}$/);
  });
});

describe('sluice run', () => {
  it('input with no rows gives an output with the same columns and no rows', async () => {
    const empty = writeParquet(path('empty.parquet'), { label: vec(new Float32(), []), id: i32([]), I1: i32([]), cat: vec(new Int32(), []), C1: str([]) });
    const out = path('empty-out.parquet');
    const r = await sluice(['run', '--plan', mixPlanFile, '--input', empty, '--output', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/wrote 0 rows x 5 features \+ label to /);
    const t = readTable(out);
    expect(t.numRows).toBe(0);
    expect(typesOf(t)).toEqual({ id: 'Float32', I1: 'Float32', cat: 'List<Float32>', C1: 'List<Int64>', C1raw: 'List<Int64>', label: 'Float32' });
  });

  it('a backend package registers with the CLI it runs in: each writes the same file as --backend reference', async () => {
    // A second copy of core (a bundle beside dist/) would leave these names unknown to the CLI.
    const ref = await sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', path('ref-out.parquet'), '--backend', 'reference']);
    expect(ref.status, ref.stderr).toBe(0);
    for (const b of ['fpga-sim', 'smartssd-sim']) {
      const r = await sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', path(`${b}-out.parquet`), '--backend', b]);
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(path(`${b}-out.parquet`))).toEqual(readFileSync(path('ref-out.parquet')));
    }
  });

  it('writes one column per feature plus the label, in input row order, with the reference values', async () => {
    const out = path('mix-out.parquet');
    const r = await sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/wrote 50 rows x 5 features \+ label to /);
    const t = readTable(out);
    expect(t.numRows).toBe(N);
    const types = typesOf(t);
    expect(Object.keys(types).sort()).toEqual(['C1', 'C1raw', 'I1', 'cat', 'id', 'label']);
    expect(types).toEqual({ id: 'Float32', I1: 'Float32', cat: 'List<Float32>', C1: 'List<Int64>', C1raw: 'List<Int64>', label: 'Float32' });

    // Input row order (row groups of 7, batches of 8).
    expect(values(t, 'id')).toEqual(rowsIdx);
    expect(values(t, 'label')).toEqual(LABEL);
    // fillNull 0, neg2zero, log1p, as float32.
    const i1 = values(t, 'I1') as number[];
    I1.forEach((x, i) => expect(i1[i]).toBeCloseTo(Math.fround(Math.log1p(Math.max(0, x ?? 0))), 6));
    expect(i1[0]).toBe(0);
    expect(i1[11]).toBe(Math.fround(Math.log(2)));
    // oneHot(4): null → class 0 (fillNull ran first), 4 and 5 → all zeros.
    const cat = values(t, 'cat') as number[][];
    CAT.forEach((c, i) => {
      const k = c ?? 0;
      expect(cat[i], `row ${i}`).toEqual([0, 1, 2, 3].map((j) => (j === k ? 1 : 0)));
    });
    // Sparse: hex (either case, leading zeros) → int64; null or empty → empty list.
    const raw = values(t, 'C1raw') as bigint[][];
    const hashed = values(t, 'C1') as bigint[][];
    C1.forEach((h, i) => {
      if (h === null || h === '') {
        expect(raw[i], `row ${i}`).toEqual([]);
        expect(hashed[i], `row ${i}`).toEqual([]);
      } else {
        expect(raw[i], `row ${i}`).toEqual([BigInt(i % 16)]);
        expect(hashed[i], `row ${i}`).toEqual([BigInt(SIGRID_GOLDEN_0_15[i % 16]!)]);
      }
    });
    expect(hashed[3]).toEqual([]); // null
    expect(hashed[13]).toEqual([]); // empty string
    expect(leftovers('mix-out.parquet')).toEqual(['mix-out.parquet']);
  });

  it('runs the rm1 preset plan over generated data, keeping every row in order', async () => {
    const out = path('rm1-out.parquet');
    const r = await sluice(['run', '--plan', rm1PlanFile, '--input', rm1File, '--output', out, '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    const t = readTable(out);
    const input = readTable(rm1File);
    expect(t.numRows).toBe(3000);
    const plan = loadPlan(rm1PlanFile);
    expect(t.numCols).toBe(plan.features.length + 1);
    expect(values(t, 'label')).toEqual(values(input, 'label'));
    const types = typesOf(t);
    for (const f of plan.features) expect(types[f.name], f.name).toBe(f.kind === 'dense' ? 'Float32' : 'List<Int64>');
    // A dense feature with fillNull 0, neg2zero, log 1 matches log1p of the input.
    const dense = plan.features.find((f) => f.kind === 'dense' && f.ops.map((o) => o.op).join() === 'fillNull,neg2zero,log')!;
    expect(dense).toBeDefined();
    const xs = values(input, dense.input) as Array<number | null>;
    const ys = values(t, dense.name) as number[];
    for (let i = 0; i < 3000; i += 97) expect(ys[i]).toBeCloseTo(Math.fround(Math.log1p(Math.max(0, xs[i] ?? 0))), 5);
    // A sparse hex feature: an empty list exactly where the input is null or empty.
    const hex = plan.features.find((f) => f.kind === 'sparse' && f.ops[0]?.op === 'hex2int')!;
    const hs = values(input, hex.input) as Array<string | null>;
    const ids = values(t, hex.name) as bigint[][];
    hs.forEach((h, i) => expect(ids[i]!.length, `row ${i}`).toBe(h === null || h === '' ? 0 : 1));
  });

  it('keeps input order across several files', async () => {
    const out = path('two-files.parquet');
    const r = await sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--input', badHexFile, '--output', path('x.parquet')]);
    // badhex.parquet has an invalid hex: the error names that file, not the first one.
    expectOneLineError(r, 'run', `file ${badHexFile}`, 'row 7');
    const plan: PlanSpec = { ...mixPlan, features: mixPlan.features.filter((f) => f.input !== 'C1') };
    const r2 = await sluice(['run', '--plan', writePlan('no-c1.json', plan), '--input', mixFile, '--input', badHexFile, '--output', out]);
    expect(r2.status, r2.stderr).toBe(0);
    expect(values(readTable(out), 'id')).toEqual([...rowsIdx, ...Array.from({ length: 10 }, (_, i) => i)]);
  });

  it('does not silently drop a feature named like the label column', async () => {
    const plan: PlanSpec = {
      label: 'label',
      features: [
        { name: 'label', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 7 }] },
        { name: 'id', input: 'id', kind: 'dense' },
      ],
    };
    const out = path('label-clash.parquet');
    const r = await sluice(['run', '--plan', writePlan('label-clash.json', plan), '--input', mixFile, '--output', out]);
    if (r.status === 0) {
      // If accepted, both the feature's values and the label must be in the output.
      const t = readTable(out);
      const cols = t.schema.fields.map((f) => values(t, f.name));
      expect(cols).toContainEqual(I1.map((x) => x ?? 7));
      expect(cols).toContainEqual(LABEL);
    } else {
      expectOneLineError(r, 'run', 'label');
    }
  });
});

describe('sluice fit and run --state', () => {
  const vocabPlan: PlanSpec = {
    batchSize: 3,
    label: 'label',
    features: [
      { name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab' }] },
      { name: 'n', input: 'n', kind: 'sparse', ops: [{ op: 'vocab', oov: 0, minCount: 2 }] },
    ],
  };
  let vocabFile = '';
  let vocabPlanFile = '';
  beforeAll(() => {
    vocabFile = writeParquet(
      path('vocab.parquet'),
      {
        label: vec(new Float32(), [1, 0, 1, 0, 1, 0, 1, 0]),
        C1: str(['0c', 'a', null, '0C', 'ff', 'a', '03', 'ff']),
        n: i32([30, 10, 30, 20, 10, 40, null, 30]),
      },
      3,
    );
    vocabPlanFile = writePlan('vocab-plan.json', vocabPlan);
  });

  it('numbers ids 1, 2, … in order of first appearance; unseen or too rare → oov', async () => {
    const state = path('vocab-state.json');
    const fit = await sluice(['fit', '--plan', vocabPlanFile, '--input', vocabFile, '--out', state, '--quiet']);
    expect(fit.status, fit.stderr).toBe(0);
    expect(fit.stdout).toMatch(/fitted 2 stateful op\(s\) over 8 rows/);
    expect(JSON.parse(readFileSync(state, 'utf8'))).toMatchObject({ version: 1 });
    expect(readdirSync(dir).filter((f) => f.startsWith('vocab-state.json'))).toEqual(['vocab-state.json']);

    const out = path('vocab-out.parquet');
    const run = await sluice(['run', '--plan', vocabPlanFile, '--input', vocabFile, '--output', out, '--state', state]);
    expect(run.status, run.stderr).toBe(0);
    const t = readTable(out);
    // 0c → 1, a → 2, null → [], 0C (= 0c) → 1, ff → 3, a → 2, 03 → 4, ff → 3.
    expect(values(t, 'C1')).toEqual([[1n], [2n], [], [1n], [3n], [2n], [4n], [3n]]);
    // minCount 2: 30 (×3) → 1, 10 (×2) → 2; 20 and 40 (once each) → oov 0; null → [].
    expect(values(t, 'n')).toEqual([[1n], [2n], [1n], [0n], [2n], [0n], [], [1n]]);
  });

  it('run without --state fails with exit 1 and one line mentioning `sluice fit`', async () => {
    const out = path('vocab-nostate.parquet');
    const r = await sluice(['run', '--plan', vocabPlanFile, '--input', vocabFile, '--output', out]);
    expectOneLineError(r, 'run', 'sluice fit', 'feature C1', 'op vocab (#2)');
    expect(leftovers('vocab-nostate.parquet')).toEqual([]);
  });

  it('a state file of another plan, a missing one or a non-state file fails with one line', async () => {
    const otherState = path('other-state.json');
    const otherPlan = writePlan('other-vocab-plan.json', { ...vocabPlan, features: [vocabPlan.features[0]!] });
    expect((await sluice(['fit', '--plan', otherPlan, '--input', vocabFile, '--out', otherState, '--quiet'])).status).toBe(0);
    const withState = (state: string): string[] => ['run', '--plan', vocabPlanFile, '--input', vocabFile, '--output', path('v2.parquet'), '--state', state];
    const [other, missing, notState] = await Promise.all([otherState, path('no-state.json'), vocabPlanFile].map((st) => sluice(withState(st))));
    expectOneLineError(other!, 'run', 'feature n', 'sluice fit');
    expectOneLineError(missing!, 'run', path('no-state.json'));
    expectOneLineError(notState!, 'run', 'is not a Sluice fit state');
    expect(leftovers('v2.parquet')).toEqual([]);
  });
});

describe('sluice errors', () => {
  it('a truncated Parquet file: one line naming the file', async () => {
    const bytes = readFileSync(mixFile);
    const truncated = path('truncated.parquet');
    writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
    expectOneLineError(
      await sluice(['run', '--plan', mixPlanFile, '--input', truncated, '--output', path('t.parquet')]),
      'run',
      `file ${truncated}`,
      'Parquet',
    );
    const notParquet = path('not-parquet.parquet');
    writeFileSync(notParquet, 'id,I1\n1,2\n');
    expectOneLineError(await sluice(['bench', '--plan', mixPlanFile, '--input', notParquet]), 'bench', `file ${notParquet}`);
    expectOneLineError(
      await sluice(['run', '--plan', mixPlanFile, '--input', path('absent.parquet'), '--output', path('t.parquet')]),
      'run',
      path('absent.parquet'),
    );
    expect(leftovers('t.parquet')).toEqual([]);
  });

  it('a missing column: one line naming the feature and the column', async () => {
    const plan = writePlan('missing-col.json', { features: [{ name: 'I13', input: 'I13_raw', kind: 'dense' }] });
    expectOneLineError(await sluice(['run', '--plan', plan, '--input', mixFile, '--output', path('m.parquet')]), 'run', 'feature I13', '"I13_raw"', mixFile);
    const noLabel = writePlan('missing-label.json', { label: 'click', features: [{ name: 'id', input: 'id', kind: 'dense' }] });
    expectOneLineError(await sluice(['run', '--plan', noLabel, '--input', mixFile, '--output', path('m.parquet')]), 'run', 'label column "click"');
  });

  it('a wrong input type: one line naming feature, op and types', async () => {
    expectOneLineError(
      await sluice(['run', '--plan', mixPlanFile, '--input', intC1File, '--output', path('w.parquet')]),
      'run',
      'feature C1, op hex2int (#1)',
      'utf8',
      'got int32',
    );
    // Files that disagree on a column's type: names the odd file and the column.
    expectOneLineError(
      await sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--input', intC1File, '--output', path('w.parquet')]),
      'run',
      `file ${intC1File}`,
      '"C1"',
      'int32',
    );
    expect(leftovers('w.parquet')).toEqual([]);
  });

  it('invalid hex: one line naming file, row, column, feature and op', async () => {
    const line = expectOneLineError(await sluice(['run', '--plan', mixPlanFile, '--input', badHexFile, '--output', path('h.parquet')]), 'run');
    expect(line).toContain(`file ${badHexFile}`);
    expect(line).toMatch(/\brow group 2\b/);
    expect(line).toMatch(/\brow 7\b/);
    expect(line).toContain('column C1');
    expect(line).toContain('feature C1');
    expect(line).toContain('op hex2int (#1)');
    expect(line).toContain('"12g4"');
    // `fit` reports it the same way and writes no state file.
    const vocabOnC1 = writePlan('vocab-c1.json', { features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab' }] }] });
    const fit = await sluice(['fit', '--plan', vocabOnC1, '--input', badHexFile, '--out', path('h-state.json'), '--quiet']);
    expectOneLineError(fit, 'fit', `file ${badHexFile}`, 'row 7', 'column C1', 'feature C1', 'op hex2int (#1)');
    expect(leftovers('h-state.json')).toEqual([]);
    expect(leftovers('h.parquet')).toEqual([]);
  });

  it('invalid plan JSON, an unknown op, a bad param, an unreadable plan: one line each', async () => {
    const badJson = writePlan('bad.json', '{"features": [');
    const unknownOp = writePlan('unknown-op.json', {
      features: [{ name: 'I1', input: 'I1', kind: 'dense', ops: [{ op: 'fillNull', value: 0 }, { op: 'log1p' }] }],
    });
    const badParam = writePlan('bad-param.json', {
      features: [
        {
          name: 'B',
          input: 'I1',
          kind: 'sparse',
          ops: [
            { op: 'fillNull', value: 0 },
            { op: 'bucketize', borders: [5, 1] },
          ],
        },
      ],
    });
    const noPlan = path('no-plan.json');
    const run = (plan: string): string[] => ['run', '--plan', plan, '--input', mixFile, '--output', path('p.parquet')];
    const cases: Array<[string[], string, string[]]> = [
      [run(badJson), 'run', ['not valid JSON']],
      [run(unknownOp), 'run', ['feature I1, op log1p (#2): unknown op']],
      [['bench', '--plan', unknownOp, '--input', mixFile], 'bench', ['feature I1, op log1p (#2): unknown op']],
      [['fit', '--plan', unknownOp, '--input', mixFile, '--out', path('p.json')], 'fit', ['feature I1, op log1p (#2): unknown op']],
      [run(badParam), 'run', ['feature B, op bucketize (#2)', 'non-decreasing']],
      [run(noPlan), 'run', [noPlan]],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => expectOneLineError(r, cases[k]![1], ...cases[k]![2]));
    expect(leftovers('p.parquet')).toEqual([]);
    expect(existsSync(path('p.json'))).toBe(false);
  });

  it('--debug prints the stack trace', async () => {
    const r = await sluice(['run', '--plan', mixPlanFile, '--input', badHexFile, '--output', path('d.parquet'), '--debug']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('invalid hex');
    expect(lines(r.stderr).filter((l) => l.startsWith('    at ')).length).toBeGreaterThan(0);
    const plan = await sluice(['run', '--plan', writePlan('bad2.json', '{"features": '), '--input', mixFile, '--output', path('d.parquet'), '--debug']);
    expect(plan.status).toBe(1);
    expect(plan.stderr).toMatch(/^\s+at /m);
    // The CLI runs bundled: its frames are mapped back to the TypeScript sources.
    expect(plan.stderr).toMatch(/^\s+at .*packages\/(ops|core)\/src\/[\w/.-]+\.ts:\d+:\d+\)$/m);
    expect(leftovers('d.parquet')).toEqual([]);
  });

  it('a run that fails midway leaves no output file and keeps an existing one', async () => {
    // Batches of 2 over rows 0..9: several batches are written before row 7 fails.
    const plan = writePlan('small-batches.json', { ...mixPlan, batchSize: 2 });
    const fresh = await sluice(['run', '--plan', plan, '--input', badHexFile, '--output', path('fail-fresh.parquet')]);
    expectOneLineError(fresh, 'run', 'invalid hex');
    expect(leftovers('fail-fresh.parquet')).toEqual([]);
    const keep = path('fail-keep.parquet');
    writeFileSync(keep, 'previous output');
    expectOneLineError(await sluice(['run', '--plan', plan, '--input', badHexFile, '--output', keep]), 'run', 'invalid hex');
    expect(readFileSync(keep, 'utf8')).toBe('previous output');
    expect(leftovers('fail-keep.parquet')).toEqual(['fail-keep.parquet']);
  });
});

describe('sluice bench', () => {
  it('--json reports rows/s and every row of the file', async () => {
    const r = await sluice(['bench', '--plan', rm1PlanFile, '--input', rm1File, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout) as {
      backend: string;
      rows: number;
      batches: number;
      seconds: number;
      rowsPerSecond: number;
      stages: object;
      peakRssMB: number;
    };
    expect(j.rows).toBe(3000);
    expect(j.rowsPerSecond).toBeGreaterThan(0);
    expect(Number.isFinite(j.rowsPerSecond)).toBe(true);
    expect(j.batches).toBeGreaterThanOrEqual(1);
    expect(j.backend).toBe('cpu');
    expect(j.peakRssMB).toBeGreaterThan(0);
    expect(j.stages).toMatchObject({ sourceWaitMs: expect.any(Number), preprocessMs: expect.any(Number) });
  });

  it('prints a table without --json', async () => {
    const r = await sluice(['bench', '--plan', mixPlanFile, '--input', mixFile]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^rows\s+50$/m);
    expect(r.stdout).toMatch(/^batches\s+7$/m); // 50 rows in batches of 8
    expect(r.stdout).toMatch(/^rows\/s\s+[\d,]+$/m);
  });

  it('the default plans of other presets run on their generated data', async () => {
    const presets = ['rm2', 'piper-d1', 'rap-plan3'];
    await Promise.all(
      presets.map(async (p) => {
        const data = path(`${p}.parquet`);
        const [gen, plan] = await Promise.all([sluice(['gen', '--preset', p, '--rows', '100', '--out', data, '--quiet']), sluice(['plan', '--preset', p])]);
        expect(gen.status, gen.stderr).toBe(0);
        expect(plan.status, plan.stderr).toBe(0);
        const b = await sluice(['bench', '--plan', writePlan(`${p}-plan.json`, plan.stdout), '--input', data, '--json']);
        expect(b.status, `${p}: ${b.stderr}`).toBe(0);
        expect((JSON.parse(b.stdout) as { rows: number }).rows, p).toBe(100);
      }),
    );
  });
});

describe('sluice demo', () => {
  it('a cache folder it cannot make is one line saying which and why', async () => {
    const inTheWay = path('a-file');
    writeFileSync(inTheWay, 'not a folder');
    const r = await sluice(['demo', '--rows', '5000', '--quiet'], { SLUICE_CACHE_DIR: join(inTheWay, 'cache') });
    expectOneLineError(
      r,
      'demo',
      `cannot use ${join(inTheWay, 'cache')} as the cache folder (set SLUICE_CACHE_DIR to another): a file is in the way of the folder`,
    );
  });

  it('generates a cached data set once and prints the summary table', async () => {
    // Without --quiet, which silences the generating and cached lines (checked below).
    const first = await sluice(['demo', '--rows', '5000']);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain('Sluice demo: RM1 preset');
    expect(first.stdout).toMatch(/^rows\s+5,000$/m);
    expect(first.stdout).toMatch(/^rows\/s\s+[\d,]+$/m);
    expect(first.stdout).toMatch(/^label positive rate\s+0\.\d+$/m);
    expect(first.stderr).toMatch(/^generating 5,000 RM1 rows/m);
    const cached = readdirSync(cacheDir);
    expect(cached).toEqual(['demo-rm1-5000-s42.parquet']);

    const second = await sluice(['demo', '--rows', '5000']);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stderr).toContain(`using cached ${join(cacheDir, 'demo-rm1-5000-s42.parquet')}`);
    expect(second.stderr).not.toMatch(/generating/);
    expect(second.stdout).toMatch(/^rows\s+5,000$/m);
    // Same data, same summary figures (timings aside).
    const figures = (s: string): string[] => lines(s).filter((l) => /^(rows|label positive rate|sparse ids per row|dense matrix of batch 0)\s/.test(l));
    expect(figures(second.stdout)).toEqual(figures(first.stdout));
    expect(readdirSync(cacheDir)).toEqual(cached);
  });
});

// ---- issue 32: the CLI as a careful tool --------------------------------------------------------

interface Child {
  readonly child: ChildProcess;
  /** stderr so far. */
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `sluice ...args` as a child process, to signal it while it works. */
function start(args: readonly string[], env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, SLUICE_CACHE_DIR: cacheDir, ...env } });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr: () => err, exited };
}

/** Polls every 10 ms until `cond()` holds; fails if the child ends first. */
async function until(c: Child, what: string, cond: () => boolean, ms = 60_000): Promise<void> {
  let ended = false;
  void c.exited.then(() => (ended = true));
  const t0 = Date.now();
  while (!cond()) {
    if (ended) throw new Error(`the command ended before ${what}: ${c.stderr()}`);
    if (Date.now() - t0 > ms) throw new Error(`no ${what} after ${ms} ms: ${c.stderr()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Runs any program from the repository root; never rejects. */
function exec(file: string, args: readonly string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: opts.cwd ?? ROOT, env: { ...process.env, SLUICE_CACHE_DIR: cacheDir, ...opts.env }, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : (err as { code?: unknown }).code;
        resolve({ status: typeof code === 'number' ? code : -1, stdout, stderr });
      },
    );
  });
}

describe('the CLI as a careful tool (issue 32)', () => {
  /** Three copies of mix.parquet in a folder of their own. */
  let multi = '';
  let copies: string[] = [];
  /** 100,000 RM1 rows: a run over them takes seconds, time enough to interrupt it. */
  let bigFile = '';

  beforeAll(async () => {
    multi = path('multi');
    mkdirSync(multi);
    copies = ['a', 'b', 'c'].map((x) => join(multi, `${x}.parquet`));
    for (const c of copies) copyFileSync(mixFile, c);
    bigFile = path('big.parquet');
    const gen = await sluice(['gen', '--preset', 'rm1', '--rows', '100000', '--output', bigFile, '--quiet']);
    expect(gen.status, gen.stderr).toBe(0);
  });

  it('a mistyped option or command is one line with the nearest name, then where help is', async () => {
    const cases: Array<[string[], string, string]> = [
      [['run', '--inptu', 'x.parquet'], 'sluice run: unknown option --inptu (did you mean --input?)', 'run '],
      [['bench', '--plna', 'p.json'], 'sluice bench: unknown option --plna (did you mean --plan?)', 'bench '],
      [['rnu'], 'sluice: unknown command "rnu" (did you mean run?)', ''],
      [['help', 'bnech'], 'sluice: unknown command "bnech" (did you mean bench?)', ''],
      // Options belong to their commands: plan takes no --rows.
      [['plan', '--preset', 'rm1', '--rows', '5'], 'sluice plan: unknown option --rows', 'plan '],
      [['run', '--workers'], 'sluice run: --workers needs a value', 'run '],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => {
      const [args, first, cmd] = cases[k]!;
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      // No usage dump, no library text: the line, and where help is.
      expect(lines(r.stderr), args.join(' ')).toEqual([first, `(see sluice ${cmd}--help)`]);
    });
  });

  it('--version answers after a command too, and help pages list the options of their command only', async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'packages', 'core', 'package.json'), 'utf8')) as { version: string }).version;
    expect((await sluice(['run', '--version'])).stdout).toBe(`sluice ${version}\n`);
    const [plan, run] = await Promise.all([sluice(['plan', '--help']), sluice(['run', '--help'])]);
    expect(plan.stdout).not.toContain('--input');
    expect(run.stdout).toMatch(/^\s+-i, --input F\.\.\.\s/m);
    expect(run.stdout).toMatch(/^\s+-w, --workers N\s/m);
  });

  it('gen, fit and run all write to --output (-o); the older --out still works', async () => {
    const [long, short, old] = ['gen-long', 'gen-short', 'gen-old'].map((x) => path(`${x}.parquet`));
    const gens = await Promise.all(
      [
        ['--output', long],
        ['-o', short],
        ['--out', old],
      ].map((o) => sluice(['gen', '--preset', 'rm1', '--rows', '300', '--seed', '3', ...o, '--quiet'])),
    );
    gens.forEach((g) => expect(g.status, g.stderr).toBe(0));
    expect(contents(readTable(short))).toBe(contents(readTable(long)));
    expect(contents(readTable(old))).toBe(contents(readTable(long)));

    const vocab = writePlan('vocab-c1-out.json', { features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab' }] }] });
    const [s1, s2] = [path('state-o.json'), path('state-out.json')];
    const fits = await Promise.all([
      sluice(['fit', '--plan', vocab, '--input', mixFile, '-o', s1, '--quiet']),
      sluice(['fit', '--plan', vocab, '--input', mixFile, '--out', s2, '--quiet']),
    ]);
    fits.forEach((f) => expect(f.status, f.stderr).toBe(0));
    expect(readFileSync(s2, 'utf8')).toBe(readFileSync(s1, 'utf8'));

    expectUsageError(
      await sluice(['gen', '--preset', 'rm1', '--rows', '5', '--out', path('g1.parquet'), '--output', path('g2.parquet')]),
      '--out and --output are the same option',
    );
    expect(leftovers('g1.parquet')).toEqual([]);
    expect(leftovers('g2.parquet')).toEqual([]);
    const [overview, genPage, fitPage] = await Promise.all([sluice(['--help']), sluice(['gen', '--help']), sluice(['fit', '--help'])]);
    expect(overview.stdout).not.toMatch(/--out\b(?!put)/);
    expect(genPage.stdout).toMatch(/^\s+-o, --output F\s/m);
    expect(fitPage.stdout).toMatch(/^\s+-o, --output STATE\s/m);
  });

  it('an unquoted glob after --input, expanded by a real shell, reads every file', async () => {
    const sh = await exec('/bin/sh', ['-c', `"${process.execPath}" "${BIN}" bench --plan "${mixPlanFile}" --input *.parquet --json`], { cwd: multi });
    expect(sh.status, sh.stderr).toBe(0);
    expect((JSON.parse(sh.stdout) as { rows: number }).rows).toBe(3 * N);
    const out = path('multi-out.parquet');
    const r = await sluice(['run', '--plan', mixPlanFile, '--input', ...copies, '--output', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(values(readTable(out), 'id')).toEqual([...rowsIdx, ...rowsIdx, ...rowsIdx]);
  });

  it('an argument that is not after --input is refused, saying what to do: never skipped', async () => {
    const [a, b] = copies as [string, string];
    const r = await sluice(['bench', '--plan', mixPlanFile, `--input=${a}`, b, '--json']);
    expectUsageError(r, `sluice bench: unexpected argument "${b}": to read several files, list them all right after --input (--input a.parquet b.parquet)`);
    expect(r.stdout).toBe('');
    expectUsageError(
      await sluice(['bench', '--plan', mixPlanFile, '--input', a, '--json', 'w', 'x', 'y', 'z']),
      'unexpected arguments "w", "x", "y" and 1 more',
    );
    expectUsageError(await sluice(['run', '--plan', mixPlanFile, '--output', path('stray.parquet'), '--input', a, '-q', b]), `unexpected argument "${b}"`);
    expect(leftovers('stray.parquet')).toEqual([]);
    expectUsageError(await sluice(['plan', '--preset', 'rm1', 'extra']), 'sluice plan: unexpected argument "extra"\n');
    expectUsageError(await sluice(['reproduce', 'presto', 'piper-table4']), 'sluice reproduce: unexpected argument "piper-table4"\n');
  });

  it('run and fit refuse an output that is one of their inputs, under any name, and leave it as it was', async () => {
    const own = path('own');
    mkdirSync(own);
    const self = join(own, 'self.parquet');
    copyFileSync(mixFile, self);
    const link = join(own, 'link.parquet');
    symlinkSync(self, link);
    const before = readFileSync(self);
    const planBefore = readFileSync(mixPlanFile);
    const rel = relative(ROOT, self);
    const run = (input: string, output: string): string[] => ['run', '--plan', mixPlanFile, '--input', input, '--output', output];
    const cases: Array<[string[], string]> = [
      [run(self, self), `sluice run: --output ${self} is also an input: writing it would destroy what this command reads`],
      [run(rel, self), `is also an input (${rel})`],
      [run(self, link), `--output ${link} is also an input (${self})`],
      [run(join(own, '*.parquet'), self), 'is also an input'],
      [run(own, self), 'is also an input'],
      [run(mixFile, mixPlanFile), `--output ${mixPlanFile} is the plan file`],
      [['fit', '--plan', mixPlanFile, '--input', self, '--output', self], 'sluice fit: --output'],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => expectUsageError(r, cases[k]![1]));
    expect(readFileSync(self).equals(before)).toBe(true);
    expect(readFileSync(mixPlanFile).equals(planBefore)).toBe(true);
    expect(readdirSync(own).sort()).toEqual(['link.parquet', 'self.parquet']);
    // A new output beside its inputs is fine.
    const beside = join(own, 'out.parquet');
    const ok = await sluice(run(self, beside));
    expect(ok.status, ok.stderr).toBe(0);
  });

  it('Ctrl-C (SIGINT) during run leaves no partial file, and the process ends by the signal', async () => {
    const out = path('sigint-out.parquet');
    const run = start(['run', '--plan', rm1PlanFile, '--input', bigFile, '--output', out]);
    await until(run, 'a partial file', () => leftovers('sigint-out.parquet').some((f) => f.includes('.partial')));
    run.child.kill('SIGINT');
    expect(await run.exited).toEqual({ code: null, signal: 'SIGINT' });
    expect(leftovers('sigint-out.parquet')).toEqual([]);
  });

  it('SIGTERM during gen removes the half-written file; an existing output stays as it was', async () => {
    const out = path('sigterm-gen.parquet');
    writeFileSync(out, 'previous output');
    const gen = start(['gen', '--preset', 'rm1', '--rows', '5000000', '--output', out]);
    // Wait for data in it: the writer has flushed a row group.
    const partialBytes = (): number =>
      leftovers('sigterm-gen.parquet')
        .filter((f) => f.includes('.partial'))
        .reduce((a, f) => a + statSync(path(f)).size, 0);
    await until(gen, 'data in the partial file', () => partialBytes() > 0);
    gen.child.kill('SIGTERM');
    expect(await gen.exited).toEqual({ code: null, signal: 'SIGTERM' });
    expect(leftovers('sigterm-gen.parquet')).toEqual(['sigterm-gen.parquet']);
    expect(readFileSync(out, 'utf8')).toBe('previous output');
  });

  it('SIGINT while demo generates its data leaves no partial file in the cache', async () => {
    const cache = path('demo-cache-sigint');
    mkdirSync(cache);
    const demo = start(['demo', '--rows', '3000000'], { SLUICE_CACHE_DIR: cache });
    await until(demo, 'a partial cache file', () => readdirSync(cache).some((f) => f.includes('.partial')));
    demo.child.kill('SIGINT');
    expect((await demo.exited).signal).toBe('SIGINT');
    expect(readdirSync(cache)).toEqual([]);
  });

  it('a plan or state file that does not exist is one line naming it and saying so (not ENOENT)', async () => {
    const nope = path('nope-plan.json');
    const nostate = path('nope-state.json');
    const cases: Array<[string[], string, string]> = [
      [['run', '--plan', nope, '--input', mixFile, '--output', path('np.parquet')], 'run', `plan file ${nope} does not exist`],
      [['bench', '--plan', nope, '--input', mixFile], 'bench', `plan file ${nope} does not exist`],
      [['fit', '--plan', nope, '--input', mixFile, '--output', path('np.json')], 'fit', `plan file ${nope} does not exist`],
      [['serve', '--plan', nope, '--input', mixFile, '--port', '0'], 'serve', `plan file ${nope} does not exist`],
      [['explain', '--plan', nope], 'explain', `plan file ${nope} does not exist`],
      [['run', '--plan', dir, '--input', mixFile, '--output', path('np.parquet')], 'run', `plan file ${dir} is a folder, not a file`],
      [['run', '--plan', mixPlanFile, '--input', mixFile, '--output', path('np.parquet'), '--state', nostate], 'run', `state file ${nostate} does not exist`],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => {
      const line = expectOneLineError(r, cases[k]![1], cases[k]![2]);
      expect(line).not.toMatch(/ENOENT|EISDIR/);
    });
    expect(leftovers('np.')).toEqual([]);
  });

  it('--workers 0 is a usage error (exit 2) wherever --workers is taken', async () => {
    const results = await Promise.all([
      sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', path('w0.parquet'), '--workers', '0']),
      sluice(['bench', '--plan', mixPlanFile, '--input', mixFile, '--workers', '0']),
      sluice(['serve', '--plan', mixPlanFile, '--input', mixFile, '--port', '0', '--workers', '0']),
      sluice(['bench', '--plan', mixPlanFile, '--input', mixFile, '-w', '-1']),
    ]);
    results.slice(0, 3).forEach((r) => expectUsageError(r, '--workers must be an integer of at least 1, got "0"'));
    expectUsageError(results[3]!, '--workers must be an integer of at least 1, got "-1"');
    expect(leftovers('w0.parquet')).toEqual([]);
  });

  it('examples/train-dlrm.ts --via foo: one line, exit 2, no stack trace, before any data is made', async () => {
    const cache = path('dlrm-cache');
    mkdirSync(cache);
    const r = await exec(process.execPath, ['--import', 'tsx', 'examples/train-dlrm.ts', '--via', 'foo'], { env: { SLUICE_CACHE_DIR: cache } });
    expect(r.status, r.stderr).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^train-dlrm: --via must be local, http or tcp, got "foo"/);
    expect(readdirSync(cache)).toEqual([]);
  });
});

describe('sluice reproduce (issue 32)', () => {
  it('--help states each target’s default size, time and memory', async () => {
    const r = await sluice(['reproduce', '--help']);
    expect(r.status).toBe(0);
    for (const [name, x] of Object.entries(REPRODUCTIONS)) {
      expect(r.stdout).toMatch(
        new RegExp(`^  ${name}: ${x.defaultRows.toLocaleString('en-US')} rows by default: about \\d+(\\.\\d)? (s|min), up to [\\d.]+ (MB|GB)`, 'm'),
      );
    }
  });

  it('shows its progress on stderr, step by step with the time so far; --quiet silences it', async () => {
    const r = await sluice(['reproduce', 'piper-table4', '--rows', '2000']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^PIPER Table 4 /);
    const steps = lines(r.stderr);
    for (const l of steps) expect(l).toMatch(/^reproduce piper-table4 \[\d+\.\d s\]: /);
    expect(steps[0]).toMatch(/: 2,000 rows; expect about \d+ s and \d+ MB/);
    expect(steps.some((l) => l.endsWith(': generating 2,000 piper-d1 rows'))).toBe(true);
    expect(steps.some((l) => l.includes('P-III (3/3)'))).toBe(true);
    expect(steps.at(-1)).toMatch(/: done$/);
    const quiet = await sluice(['reproduce', 'piper-table4', '--rows', '2000', '--quiet', '--json']);
    expect(quiet.status, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');
    expect(JSON.parse(quiet.stdout)).toHaveLength(8);
  });

  it('refuses a size that would not fit in memory, at once and with the size that would', async () => {
    const tmp = path('reproduce-tmp');
    mkdirSync(tmp);
    const t0 = performance.now();
    const r = await sluice(['reproduce', 'presto', '--rows', '1000000000000'], { TMPDIR: tmp });
    expectUsageError(r);
    const first = lines(r.stderr)[0]!;
    expect(first).toMatch(
      /^sluice reproduce: presto --rows 1,000,000,000,000 would need about [\d,]+ GB of memory \(600 MB \+ 19 MB per 1,000 rows; docs\/cli\.md#reproduce\), but [\d.]+ (GB|MB) of this machine's [\d.]+ GB is available: use --rows [\d,]+ or fewer$/,
    );
    expect(performance.now() - t0).toBeLessThan(20_000);
    expect(readdirSync(tmp)).toEqual([]);
    expectUsageError(await sluice(['reproduce', 'presto', '--rows', '0']), '--rows must be an integer of at least 1, got "0"');
  });

  it('the memory check: fixed + per-row bytes against what is available, suggesting a size that fits', () => {
    const presto = REPRODUCTIONS.presto;
    const mem = { available: 2e9, total: 4e9 };
    expect(() => checkFits('presto', presto, presto.defaultRows, mem)).not.toThrow();
    // 600 MB + 19 KB × 100,000 = 2.5 GB > 2 GB; (2e9 − 600e6) / 19,000 = 73,684 → 73,000.
    expect(() => checkFits('presto', presto, 100_000, mem)).toThrow(/would need about 2\.5 GB .* use --rows 73,000 or fewer$/);
    expect(() => checkFits('presto', presto, 73_000, mem)).not.toThrow();
    expect(() => checkFits('presto', presto, 1000, { available: 0.5e9, total: 1e9 })).toThrow(/free some memory first$/);
  });

  it('Ctrl-C removes the data it generated', async () => {
    const tmp = path('reproduce-sigint');
    mkdirSync(tmp);
    const r = start(['reproduce', 'presto'], { TMPDIR: tmp });
    await until(r, 'generated data', () => /generating/.test(r.stderr()) && readdirSync(tmp).length > 0);
    r.child.kill('SIGINT');
    expect((await r.exited).signal).toBe('SIGINT');
    expect(readdirSync(tmp)).toEqual([]);
  });
});

describe('a careless command line is one line naming the option, before any work (new-user audit)', () => {
  /** A usage error: exit 2, nothing on stdout, `sluice COMMAND: LINE` and then where help is, nothing else. */
  function expectUsageLine(r: Result, command: string, line: string): void {
    expect(r.status, r.stderr).toBe(2);
    expect(r.stdout).toBe('');
    expect(lines(r.stderr)).toEqual([`sluice ${command}: ${line}`, `(see sluice ${command} --help)`]);
  }

  it('an --output or --report that cannot be written: a folder, a pipe, a path under a file, /proc', async () => {
    const folder = path('out-folder');
    mkdirSync(folder);
    // A pipe, not /dev/null: were the check missing, the finished file would be renamed over it.
    const fifo = path('out-fifo');
    execFileSync('mkfifo', [fifo]);
    const underFile = join(mixFile, 'o.parquet');
    // Over badhex.parquet, run and bench would fail on its invalid hex: the output is checked first.
    const run = (output: string): string[] => ['run', '--plan', mixPlanFile, '--input', badHexFile, '--output', output];
    const cases: Array<[string[], string, string]> = [
      [run(folder), 'run', `--output ${folder} is a folder, not a file`],
      [['gen', '--preset', 'rm1', '--rows', '10', '--output', folder], 'gen', `--output ${folder} is a folder, not a file`],
      [['fit', '--plan', mixPlanFile, '--input', mixFile, '--output', folder], 'fit', `--output ${folder} is a folder, not a file`],
      [['bench', '--plan', mixPlanFile, '--input', badHexFile, '--report', folder], 'bench', `--report ${folder} is a folder, not a file`],
      [run(fifo), 'run', `--output ${fifo} is not a regular file (a device, pipe or socket): give a file path`],
      [run(underFile), 'run', `cannot write --output ${underFile}: ${mixFile} is a file, not a folder`],
    ];
    if (existsSync('/proc/self')) cases.push([run('/proc/o.parquet'), 'run', 'cannot write --output /proc/o.parquet: /proc does not take new files']);
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => expectUsageLine(r, cases[k]![1], cases[k]![2]));
    expect(readdirSync(folder)).toEqual([]);
    expect(statSync(fifo).isFIFO()).toBe(true);
    // The check's probe file is gone.
    expect(readdirSync(dir).filter((f) => f.includes('sluice-check'))).toEqual([]);
  });

  it('folders of an output path that do not exist yet are created, for run, fit and bench --report alike', async () => {
    const base = path('made');
    const vocab = writePlan('vocab-made.json', { features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab' }] }] });
    const results = await Promise.all([
      sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', join(base, 'run', 'o.parquet')]),
      sluice(['fit', '--plan', vocab, '--input', mixFile, '--output', join(base, 'fit', 'state.json'), '--quiet']),
      sluice(['bench', '--plan', mixPlanFile, '--input', mixFile, '--json', '--report', join(base, 'bench', 'r.html')]),
    ]);
    results.forEach((r) => expect(r.status, r.stderr).toBe(0));
    expect(readdirSync(base).sort()).toEqual(['bench', 'fit', 'run']);
    expect(readdirSync(join(base, 'run'))).toEqual(['o.parquet']);
    expect(readdirSync(join(base, 'fit'))).toEqual(['state.json']);
    expect(readdirSync(join(base, 'bench'))).toEqual(['r.html']);
  });

  it('an option without its value, followed by another option, names the option that lacks it', async () => {
    const out = path('novalue.parquet');
    const cases: Array<[string[], string, string]> = [
      [['run', '--plan', mixPlanFile, '--input', '--output', out], 'run', '--input needs a value'],
      [['run', '--plan', '--input', mixFile, '--output', out], 'run', '--plan needs a value'],
      [['run', '--plan', mixPlanFile, '--input', mixFile, '--output', out, '--workers', '--quiet'], 'run', '--workers needs a value'],
      [['run', '--plan', mixPlanFile, '--input', mixFile, '-o', '-q'], 'run', '--output needs a value'],
      [['run', '--plan', mixPlanFile, '--input', '--output=x.parquet'], 'run', '--input needs a value'],
      [['gen', '--preset', 'rm1', '--rows', '--output', out], 'gen', '--rows needs a value'],
      [['gen', '--preset', 'rm1', '--rows', '5', '--out', '--quiet'], 'gen', '--out needs a value'],
      [['bench', '--plan', mixPlanFile, '--input', mixFile, '--report', '--json'], 'bench', '--report needs a value'],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => expectUsageLine(r, cases[k]![1], cases[k]![2]));
    expect(leftovers('novalue.parquet')).toEqual([]);
    // A value that only starts with a dash is still the value, and is judged as one.
    expectUsageLine(
      await sluice(['bench', '--plan', mixPlanFile, '--input', mixFile, '-w', '-1']),
      'bench',
      '--workers must be an integer of at least 1, got "-1"',
    );
  });

  it('without --input, a command reads the plan\'s "input"; --input overrides it; the output is still never an input', async () => {
    const inline = JSON.stringify({ ...mixPlan, input: mixFile });
    const [planIn, given] = [path('plan-input.parquet'), path('plan-input-given.parquet')];
    const [run, runGiven, bench, none] = await Promise.all([
      sluice(['run', '--plan', inline, '--output', planIn, '--quiet']),
      sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', given, '--quiet']),
      // --input overrides the plan's: the plan names a file that does not exist.
      sluice(['bench', '--plan', JSON.stringify({ ...mixPlan, input: path('absent.parquet') }), '--input', mixFile, '--json']),
      sluice(['run', '--plan', mixPlanFile, '--output', path('plan-input-none.parquet')]),
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(runGiven.status, runGiven.stderr).toBe(0);
    expect(contents(readTable(planIn))).toBe(contents(readTable(given)));
    expect(bench.status, bench.stderr).toBe(0);
    expect((JSON.parse(bench.stdout) as { rows: number }).rows).toBe(N);
    expectUsageLine(none, 'run', '--input is required (the plan has no "input")');

    const vocab = { features: [{ name: 'C1', input: 'C1', kind: 'sparse', ops: [{ op: 'hex2int' }, { op: 'vocab' }] }], input: mixFile };
    const state = path('plan-input-state.json');
    const fit = await sluice(['fit', '--plan', JSON.stringify(vocab), '--output', state, '--quiet']);
    expect(fit.status, fit.stderr).toBe(0);
    expect(existsSync(state)).toBe(true);

    // The plan's input is the output: refused before anything is read, the file left as it was.
    const self = path('plan-input-self.parquet');
    copyFileSync(mixFile, self);
    const before = readFileSync(self);
    const selfPlan = JSON.stringify({ ...mixPlan, input: self });
    const refused = await Promise.all([
      sluice(['run', '--plan', selfPlan, '--output', self]),
      sluice(['fit', '--plan', selfPlan, '--output', self]),
      sluice(['bench', '--plan', selfPlan, '--report', self]),
    ]);
    expectUsageLine(refused[0]!, 'run', `--output ${self} is also an input: writing it would destroy what this command reads; choose another output`);
    expectUsageLine(refused[1]!, 'fit', `--output ${self} is also an input: writing it would destroy what this command reads; choose another output`);
    expectUsageLine(refused[2]!, 'bench', `--report ${self} is also an input: writing it would destroy what this command reads; choose another output`);
    expect(readFileSync(self).equals(before)).toBe(true);
  });

  it('gen takes plain decimal integers within bounds, and says which flag is wrong in one wording', async () => {
    const out = path('gen-number.parquet');
    const gen = (...extra: string[]): string[] => ['gen', '--preset', 'rm1', '--rows', '100', '--output', out, ...extra];
    const cases: Array<[string[], string]> = [
      [gen('--row-group-size', '0'), '--row-group-size must be an integer of at least 1, got "0"'],
      [gen('--row-group-size', '1.5'), '--row-group-size must be an integer of at least 1, got "1.5"'],
      [gen('--rows', '1e20'), '--rows must be an integer of at least 1, got "1e20"'],
      [gen('--rows', '0x10'), '--rows must be an integer of at least 1, got "0x10"'],
      [gen('--rows', '1e3'), '--rows must be an integer of at least 1, got "1e3"'],
      [gen('--rows', '-5'), '--rows must be an integer of at least 1, got "-5"'],
      [gen('--rows', '0'), '--rows must be an integer of at least 1, got "0"'],
      [gen('--rows', ' 7'), '--rows must be an integer of at least 1, got " 7"'],
      [gen('--rows', '100000000000000000000'), `--rows must be at most ${Number.MAX_SAFE_INTEGER}, got "100000000000000000000"`],
      [gen('--seed', '-1'), '--seed must be an integer of at least 0, got "-1"'],
      [gen('--seed', '0x2a'), '--seed must be an integer of at least 0, got "0x2a"'],
      [['serve', '--plan', mixPlanFile, '--input', mixFile, '--port', '70000'], '--port must be at most 65535, got "70000"'],
      // Seconds past Node's longest timer (2^31 - 1 ms) made every response be cut off after 1 ms.
      [
        ['serve', '--plan', mixPlanFile, '--input', mixFile, '--port', '0', '--send-timeout', '3000000'],
        '--send-timeout must be at most 2147483, got "3000000"',
      ],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    results.forEach((r, k) => expectUsageLine(r, cases[k]![0][0]!, cases[k]![1]));
    expect(leftovers('gen-number.parquet')).toEqual([]);
    const ok = await sluice(gen('--rows', '16', '--row-group-size', '5', '--seed', '0', '--quiet'));
    expect(ok.status, ok.stderr).toBe(0);
    expect(await rowGroupRows(out)).toEqual([5, 5, 5, 1]);
  });

  it('--backend and --workers are checked before any work (demo generates nothing), as usage errors', async () => {
    const cache = path('demo-cache-backend');
    mkdirSync(cache);
    const demo = await sluice(['demo', '--backend', 'nope'], { SLUICE_CACHE_DIR: cache });
    expect(demo.stderr).toMatch(/^sluice demo: --backend "nope" is not a backend here \(available: [^)]*\bcpu\b[^)]*\)\n\(see sluice demo --help\)\n$/);
    expect(demo.status).toBe(2);
    expect(readdirSync(cache)).toEqual([]);
    const out = path('backend-nope.parquet');
    const results = await Promise.all([
      sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', out, '--backend', 'nope']),
      sluice(['bench', '--plan', mixPlanFile, '--input', mixFile, '--backend', 'cpu,nope']),
      sluice(['explain', '--plan', mixPlanFile, '--backend', 'nope']),
      sluice(['run', '--plan', mixPlanFile, '--input', mixFile, '--output', out, '--workers', '99999']),
      sluice(['bench', '--plan', mixPlanFile, '--input', mixFile, '-w', '257']),
    ]);
    expect(results[0]!.stderr).toMatch(/^sluice run: --backend "nope" is not a backend here \(available: /);
    expect(results[1]!.stderr).toMatch(/^sluice bench: --backend "nope" \(in "cpu,nope"\) is not a backend here \(available: /);
    expect(results[2]!.stderr).toMatch(/^sluice explain: --backend "nope" is not a backend here/);
    results.slice(0, 3).forEach((r) => {
      expect(r.status, r.stderr).toBe(2);
      expect(lines(r.stderr)).toHaveLength(2);
    });
    expectUsageLine(results[3]!, 'run', '--workers must be at most 256, got "99999"');
    expectUsageLine(results[4]!, 'bench', '--workers must be at most 256, got "257"');
    expect(leftovers('backend-nope.parquet')).toEqual([]);
  });

  it('demo --quiet prints nothing on stderr, neither the generating line nor the cached one', async () => {
    const cache = path('demo-cache-quiet');
    mkdirSync(cache);
    for (const round of ['generates', 'uses the cache']) {
      const r = await sluice(['demo', '--rows', '5000', '--seed', '8', '--quiet'], { SLUICE_CACHE_DIR: cache });
      expect(r.status, `${round}: ${r.stderr}`).toBe(0);
      expect(r.stderr, round).toBe('');
      expect(r.stdout).toContain('Sluice demo: RM1 preset');
    }
  });

  it('worker and job refuse a --redis (or SLUICE_REDIS) that is no redis:// URL before connecting', async () => {
    const results = await Promise.all([
      sluice(['worker', '--redis', 'notaurl', '--job', 'j']),
      sluice(['worker', '--job', 'j'], { SLUICE_REDIS: 'http://:secret@cache:6379' }),
      sluice(['job', 'status', 'j', '--redis', 'redis://']),
    ]);
    expectUsageLine(results[0]!, 'worker', '--redis must be a redis:// or rediss:// URL (redis://[:password@]host:port), got "notaurl"');
    expectUsageLine(results[1]!, 'worker', 'SLUICE_REDIS must be a redis:// or rediss:// URL (redis://[:password@]host:port), got "http://***@cache:6379"');
    expectUsageLine(results[2]!, 'job', '--redis must be a redis:// or rediss:// URL (redis://[:password@]host:port), got "redis://"');
  });

  it('an empty --input is refused naming --input; the overview lists s3:// inputs and serve --workers', async () => {
    const results = await Promise.all([
      sluice(['run', '--plan', mixPlanFile, '--input', '', '--output', path('empty-input.parquet')]),
      sluice(['bench', '--plan', mixPlanFile, '--input', mixFile, '']),
      sluice(['lookahead', '--input', '', '--columns', 'C1', '--batch-size', '8', '--window', '2']),
      sluice(['explain', '--plan', mixPlanFile, '--input', '']),
    ]);
    const line = '--input has an empty path (""): give a file, glob, folder or URL';
    expectUsageLine(results[0]!, 'run', line);
    expectUsageLine(results[1]!, 'bench', line);
    expectUsageLine(results[2]!, 'lookahead', line);
    expectUsageLine(results[3]!, 'explain', line);
    expect(leftovers('empty-input.parquet')).toEqual([]);

    const [overview, run] = await Promise.all([sluice(['--help']), sluice(['run', '--help'])]);
    expect(overview.stdout).toContain('--input takes paths, globs, folders, http(s) URLs or s3:// objects, prefixes and globs');
    expect(overview.stdout).toMatch(/^ {2}serve .*\[--workers N\]/m);
    expect(run.stdout).toMatch(/^\s+-i, --input F\.\.\.\s+Parquet input: .*s3:\/\//m);
  });

  it('an s3:// input without a bucket is one line naming it, not an "unexpected error"', async () => {
    const env = { AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's', AWS_ENDPOINT_URL: 'http://127.0.0.1:9' };
    const [bench, serve] = await Promise.all([
      sluice(['bench', '--plan', mixPlanFile, '--input', 's3://'], env),
      sluice(['serve', '--plan', mixPlanFile, '--input', 's3:///train/', '--port', '0'], env),
    ]);
    expectOneLineError(bench, 'bench', 's3:// names no bucket: expected s3://bucket/key (or s3://bucket/prefix/)');
    expectOneLineError(serve, 'serve', 's3:///train/ names no bucket: expected s3://bucket/key (or s3://bucket/prefix/)');
  });
});
