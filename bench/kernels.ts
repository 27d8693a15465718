/**
 * Kernel throughput, one core: core's reference TypeScript kernel vs the CPU backend's fast
 * (WebAssembly SIMD) kernel vs NumPy doing the same work on the same data in the same run.
 *
 *   npx tsx bench/kernels.ts [--rows N] [--reps K] [--rounds R] [--json]
 *
 * Data: seeded Criteo-like columns from the rm1 preset's generator (dense I1: int32 with ~10% nulls
 * and some negatives; categorical C1: 8-char hex ids, Zipf-like), carried through the default plan
 * (fillNull 0 → neg2zero → log; fillNull → bucketize with the plan's 1024 borders; hex2int →
 * sigridHash max 500000; PIPER's modulus 512K). Each kernel is timed alone (its output allocation
 * included, as in NumPy), best of K runs, reference and fast runs interleaved. NumPy runs in a
 * python3 child process on the same values, passed through temp files (bench/numpy_kernels.py);
 * without python3 or numpy the NumPy column is skipped with a notice.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Column, Int32Column, Int64Column, OpContext, Utf8Column } from '@sluice/core/internal';
import type { Preset } from '@sluice/core/gen';
import { OPS, columnFromVector, concatColumns } from '@sluice/core/internal';
import { generateBatches, getPreset } from '@sluice/core/gen';
import { FAST_OPS, fastKernelsAvailable, fastKernelsError } from '../packages/backend-cpu/src/kernels/index.js';
import { collectGarbage, emitJson, log, machine, printTable } from './lib.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const argValue = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ROWS = argValue('--rows', 2_000_000);
const REPS = argValue('--reps', 5);
const ROUNDS = argValue('--rounds', 3);
const CTX: OpContext = { features: new Map(), featureTypes: new Map(), column: 'x' };

// ---- data -------------------------------------------------------------------------------------

function criteoColumns(rows: number): { dense: Int32Column; hex: Utf8Column; borders: number[] } {
  const preset = getPreset('rm1');
  const dense = preset.columns.find((c) => c.name === 'I1')!;
  const hex = preset.columns.find((c) => c.name === 'C1')!;
  const sub: Preset = { ...preset, columns: [dense, hex] };
  const d: Column[] = [];
  const h: Column[] = [];
  for (const batch of generateBatches(sub, rows, { seed: 42 })) {
    d.push(columnFromVector(batch.getChild('I1')!, { kind: 'int32' }));
    h.push(columnFromVector(batch.getChild('C1')!, { kind: 'utf8' }));
  }
  const plan = preset.defaultPlan();
  const b1 = plan.features.find((f) => f.input === 'I1' && (f.ops ?? []).some((o) => o.op === 'bucketize'))!;
  const borders = b1.ops!.find((o) => o.op === 'bucketize')!.borders as number[];
  return { dense: concatColumns(d) as Int32Column, hex: concatColumns(h) as Utf8Column, borders };
}

const ref = (op: string, input: Column, params: Record<string, unknown>): Column => {
  const def = OPS.get(op)!;
  return def.apply(input, def.validate(params), CTX);
};

// ---- cases ------------------------------------------------------------------------------------

type Raw = Int32Array | Float32Array | Float64Array | BigInt64Array | Uint8Array;

interface Case {
  name: string;
  op: string;
  params: Record<string, unknown>;
  input: Column;
  values: number;
  /** The NumPy side: arrays by name (x, valid, chars) with their dtypes. */
  numpy: Record<string, { data: Raw; dtype: string; bool?: boolean }>;
  /** Compare NumPy's output with the reference output. */
  compare: boolean;
  /** How NumPy evaluates the op when it has a choice (log: 'float64' = the same computation as Sluice's). */
  numpyMode?: string;
  /** A context row: NumPy does not produce the same output, so it is not a like-for-like peer. */
  context?: boolean;
}

function buildCases(rows: number): Case[] {
  log(`generating ${rows.toLocaleString('en-US')} Criteo-like rows (rm1 I1, C1) ...`);
  const { dense, hex, borders } = criteoColumns(rows);
  const filled = ref('fillNull', dense, { value: 0 }) as Int32Column;
  const positive = ref('neg2zero', filled, {}) as Int32Column;
  const ids = ref('hex2int', hex, {}) as Int64Column;
  const n = dense.values.length;
  const validOf = (c: { valid: Uint8Array | null }) => ({ data: c.valid ?? new Uint8Array(n).fill(1), dtype: 'uint8', bool: true });

  // Fixed-width 8-byte ids for NumPy's vectorized parse (every generated id has 8 chars; nulls → "00000000").
  const chars = new Uint8Array(8 * n).fill(0x30);
  for (let i = 0; i < n; i++) {
    const s = hex.offsets[i]!;
    const len = hex.offsets[i + 1]! - s;
    if (len === 8) chars.set(hex.data.subarray(s, s + 8), 8 * i);
    else if (len !== 0) throw new Error(`C1 row ${i} has ${len} chars; the NumPy peer assumes 8`);
  }
  const f32 = { type: 'float32', values: Float32Array.from(positive.values), valid: null } as Column;

  return [
    {
      name: 'fillNull',
      op: 'fillNull',
      params: { value: 0 },
      input: dense,
      values: n,
      numpy: { x: { data: dense.values, dtype: 'int32' }, valid: validOf(dense) },
      compare: true,
    },
    { name: 'neg2zero', op: 'neg2zero', params: {}, input: filled, values: n, numpy: { x: { data: filled.values, dtype: 'int32' } }, compare: true },
    // log is ln(x + 1) evaluated in float64 and stored as float32 (core ops/log.ts), so NumPy does
    // the same: np.log1p on int32 already computes in float64; float32 input is widened first.
    {
      name: 'log (int32 in)',
      op: 'log',
      params: { offset: 1 },
      input: positive,
      values: n,
      numpy: { x: { data: positive.values, dtype: 'int32' } },
      numpyMode: 'float64',
      compare: true,
    },
    {
      name: 'log (float32 in)',
      op: 'log',
      params: { offset: 1 },
      input: f32,
      values: n,
      numpy: { x: { data: (f32 as { values: Float32Array }).values, dtype: 'float32' } },
      numpyMode: 'float64',
      compare: true,
    },
    // For context: NumPy's float32 log1p (SIMD float32 math) is faster but does a different
    // computation; the "numpy ≠ ref" column counts the values it rounds differently.
    {
      name: 'log (float32 in; NumPy float32 math, not the same output)',
      op: 'log',
      params: { offset: 1 },
      input: f32,
      values: n,
      numpy: { x: { data: (f32 as { values: Float32Array }).values, dtype: 'float32' } },
      context: true,
      compare: true,
    },
    {
      name: 'clamp',
      op: 'clamp',
      params: { min: 0, max: 1000 },
      input: dense,
      values: n,
      numpy: { x: { data: dense.values, dtype: 'int32' }, valid: validOf(dense) },
      compare: true,
    },
    {
      name: `bucketize (${borders.length} borders)`,
      op: 'bucketize',
      params: { borders },
      input: filled,
      values: n,
      numpy: { x: { data: filled.values, dtype: 'int32' } },
      compare: true,
    },
    {
      name: 'hex2int',
      op: 'hex2int',
      params: {},
      input: hex,
      values: n,
      numpy: { chars: { data: chars, dtype: 'uint8' }, valid: validOf(hex) },
      compare: true,
    },
    {
      name: 'sigridHash (max 500000)',
      op: 'sigridHash',
      params: { salt: 0, max: 500000 },
      input: ids,
      values: n,
      numpy: { x: { data: ids.values, dtype: 'int64' }, valid: validOf(ids) },
      compare: true,
    },
    {
      name: 'modulus (int64, m 524288)',
      op: 'modulus',
      params: { m: 524288 },
      input: ids,
      values: n,
      numpy: { x: { data: ids.values, dtype: 'int64' }, valid: validOf(ids) },
      compare: true,
    },
    {
      name: 'modulus (int32, m 1000)',
      op: 'modulus',
      params: { m: 1000 },
      input: dense,
      values: n,
      numpy: { x: { data: dense.values, dtype: 'int32' }, valid: validOf(dense) },
      compare: true,
    },
  ];
}

// ---- timing -----------------------------------------------------------------------------------

const bytesOf = (a: Raw): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

function sameBits(a: Column, b: Column): boolean {
  if (a.type !== b.type) return false;
  if ((a.valid === null) !== (b.valid === null)) return false;
  if (a.valid && b.valid && Buffer.compare(a.valid, b.valid) !== 0) return false;
  if (a.type === 'list' || b.type === 'list' || a.type === 'utf8' || a.type === 'fixed') return false;
  return Buffer.compare(bytesOf(a.values as Raw), bytesOf((b as typeof a).values as Raw)) === 0;
}

interface Row {
  name: string;
  values: number;
  refSeconds: number;
  fastSeconds: number | null;
  numpySeconds: number | null;
  exact: boolean | null;
  numpyMismatches: number | null;
  /** NumPy computes something else here (see Case.context). */
  context: boolean;
}

function timeCases(cases: readonly Case[]): Row[] {
  return cases.map((c) => {
    const def = OPS.get(c.op)!;
    const params = def.validate(c.params);
    const fast = FAST_OPS.get(c.op);
    let refBest = Infinity;
    let fastBest = Infinity;
    let refOut: Column | undefined;
    let fastOut: Column | undefined;
    // One untimed warm-up each (JIT, lookup tables), then interleaved timed runs. Before each
    // run the previous output of that kernel is dropped and collected (untimed), as NumPy's loop
    // frees each result at once: its memory is then free for the next output to reuse, instead of
    // every run's output being fresh pages whose faults the VM makes dear (bench/README.md).
    for (let r = -1; r < REPS; r++) {
      refOut = undefined;
      collectGarbage();
      let t = performance.now();
      refOut = def.apply(c.input, params, CTX);
      if (r >= 0) refBest = Math.min(refBest, performance.now() - t);
      if (fast) {
        fastOut = undefined;
        collectGarbage();
        t = performance.now();
        fastOut = fast(c.input, params, CTX);
        if (r >= 0) fastBest = Math.min(fastBest, performance.now() - t);
      }
    }
    const handled = fastOut !== undefined;
    log(`  ${c.name}: ref ${(c.values / refBest / 1e3).toFixed(1)} M/s${handled ? `, fast ${(c.values / fastBest / 1e3).toFixed(1)} M/s` : ''}`);
    return {
      name: c.name,
      values: c.values,
      refSeconds: refBest / 1e3,
      fastSeconds: handled ? fastBest / 1e3 : null,
      numpySeconds: null,
      exact: handled ? sameBits(fastOut!, refOut!) : null,
      numpyMismatches: null,
      context: c.context ?? false,
    };
  });
}

/**
 * Writes the NumPy peer's inputs (the same data) and manifest once; `run` then runs
 * bench/numpy_kernels.py over them and keeps each op's best time in `rows` (or says why it cannot).
 */
function numpyPeer(cases: readonly Case[]): { run: (rows: Row[]) => string | undefined; close: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-kernels-'));
  const close = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    const manifest = {
      reps: REPS,
      ops: cases.map((c, k) => {
        const inputs: Record<string, unknown> = {};
        for (const [name, a] of Object.entries(c.numpy)) {
          const path = join(dir, `${k}-${name}.bin`);
          writeFileSync(path, bytesOf(a.data));
          inputs[name] = { path, dtype: a.dtype, bool: a.bool ?? false };
        }
        const entry: Record<string, unknown> = { name: c.name, op: c.op, params: c.params, inputs, mode: c.numpyMode ?? null };
        if (c.compare) {
          const out = ref(c.op, c.input, c.params) as { values: Raw; type: string };
          const path = join(dir, `${k}-expect.bin`);
          writeFileSync(path, bytesOf(out.values));
          entry.expect = { path, dtype: out.type };
        }
        return entry;
      }),
    };
    const mpath = join(dir, 'manifest.json');
    writeFileSync(mpath, JSON.stringify(manifest));
    const script = fileURLToPath(new URL('./numpy_kernels.py', import.meta.url));
    const run = (rows: Row[]): string | undefined => {
      log('running the NumPy peer ...');
      const res = spawnSync('python3', [script, mpath], { encoding: 'utf8', maxBuffer: 1 << 24 });
      if (res.error) return `python3 not runnable (${res.error.message})`;
      if (res.status !== 0) return `the NumPy peer failed: ${res.stderr.trim().split('\n').slice(-1)[0]}`;
      const out = JSON.parse(res.stdout) as { numpy: string; ops: Record<string, { seconds: number; mismatches: number | null }> };
      for (const r of rows) {
        const o = out.ops[r.name];
        if (o) {
          r.numpySeconds = Math.min(r.numpySeconds ?? Infinity, o.seconds);
          r.numpyMismatches = o.mismatches;
        }
      }
      log(`numpy ${out.numpy}`);
      return undefined;
    };
    return { run, close };
  } catch (e) {
    close();
    throw e;
  }
}

/** Keeps in `rows` the better of its times and `again`'s (a later round of the same cases). */
function keepBest(rows: Row[], again: readonly Row[]): void {
  rows.forEach((r, i) => {
    const a = again[i]!;
    r.refSeconds = Math.min(r.refSeconds, a.refSeconds);
    if (r.fastSeconds !== null && a.fastSeconds !== null) r.fastSeconds = Math.min(r.fastSeconds, a.fastSeconds);
    if (r.exact !== null && a.exact !== null) r.exact = r.exact && a.exact;
  });
}

// ---- main -------------------------------------------------------------------------------------

if (!fastKernelsAvailable())
  log(`note: fast kernels unavailable (${fastKernelsError()}); run \`npm run build:wasm\` in packages/backend-cpu. Only the reference is timed.`);
const cases = buildCases(ROWS);
// Rounds alternate the TypeScript side and the NumPy side, and each keeps its best over all
// rounds, so that a slow or fast spell of the host (bench/README.md, "A noisy host") does not
// fall on one side only, as it could when each side ran once, one after the other.
const peer = numpyPeer(cases);
let rows: Row[] = [];
let numpySkipped: string | undefined;
try {
  for (let k = 0; k < ROUNDS; k++) {
    log(`round ${k + 1}/${ROUNDS}: timing ${cases.length} kernels, best of ${REPS} ...`);
    const timed = timeCases(cases);
    if (k === 0) rows = timed;
    else keepBest(rows, timed);
    numpySkipped ??= peer.run(rows);
  }
} finally {
  peer.close();
}
if (numpySkipped) log(`notice: NumPy column skipped: ${numpySkipped}`);

const mps = (values: number, s: number | null): string => (s === null ? '—' : (values / s / 1e6).toFixed(1));
if (json) {
  emitJson({
    bench: 'kernels',
    machine: machine(),
    rows: ROWS,
    reps: REPS,
    rounds: ROUNDS,
    numpySkipped: numpySkipped ?? null,
    kernels: rows.map((r) => ({
      op: r.name,
      values: r.values,
      refMps: r.values / r.refSeconds / 1e6,
      fastMps: r.fastSeconds === null ? null : r.values / r.fastSeconds / 1e6,
      numpyMps: r.numpySeconds === null ? null : r.values / r.numpySeconds / 1e6,
      fastOverNumpy: r.fastSeconds === null || r.numpySeconds === null ? null : r.numpySeconds / r.fastSeconds,
      fastOverRef: r.fastSeconds === null ? null : r.refSeconds / r.fastSeconds,
      fastExact: r.exact,
      numpyMismatches: r.numpyMismatches,
      sameComputation: !r.context,
    })),
  });
} else {
  printTable(
    `Kernel throughput, one core, M values/s (${ROWS.toLocaleString('en-US')} values, best of ${REPS} runs in each of ${ROUNDS} rounds, TypeScript and NumPy alternating)`,
    ['op', 'ref M/s', 'fast M/s', 'numpy M/s', 'fast/ref', 'fast/numpy', 'fast exact', 'numpy ≠ ref'],
    rows.map((r) => [
      r.name,
      mps(r.values, r.refSeconds),
      mps(r.values, r.fastSeconds),
      mps(r.values, r.numpySeconds),
      r.fastSeconds === null ? '—' : `${(r.refSeconds / r.fastSeconds).toFixed(2)}×`,
      r.fastSeconds === null || r.numpySeconds === null ? '—' : `${(r.numpySeconds / r.fastSeconds).toFixed(2)}×`,
      r.exact === null ? '—' : r.exact ? 'yes' : 'NO',
      r.numpyMismatches === null ? '—' : r.numpyMismatches.toLocaleString('en-US'),
    ]),
  );
  if (rows.some((r) => r.context)) {
    process.stdout.write(
      '\nRows marked "not the same output" are context: NumPy computes a different function there (float32\nlog1p rounds differently from ln evaluated in float64), so they are not like-for-like peers.\n',
    );
  }
  process.stdout.write(`\nmachine: ${JSON.stringify(machine())}\n`);
}
