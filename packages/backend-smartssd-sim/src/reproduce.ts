import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DecoderPool, openInput, readChunks, runFeature, type Column } from '@sluice/core/internal';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { InputError, loadPlan, pipeline, type PlanSpec } from '@sluice/core';
import './register.js';
import { DEFAULT_A100S, PRESTO, provision, SAMPLES_PER_SEC_PER_A100, type Provisioning } from './model.js';

/** PreSto's reported figures, printed beside ours (never used by the model). */
export const PRESTO_PAPER = {
  /** §III-A, Figure 4 / §VI-B, Figure 14: RM5 needs 367 CPU cores, and at most 9 SmartSSDs, for 8 A100s. */
  rm5Cores: 367,
  maxDevices: 9,
  /** §VI-A: 9.6× average reduction in end-to-end preprocessing time (single worker). */
  speedup: 9.6,
  /** §VI-B: 4.3× average cost-efficiency and 11.3× average energy-efficiency. */
  costRatio: 4.3,
  energyRatio: 11.3,
} as const;

export interface PrestoRow extends Provisioning {
  model: string;
  /** Measured: rows/s one CPU core sustains (decode + kernels, plus raw data in and tensors out at the network rate). */
  cpuRowsPerSecPerCore: number;
  cpuDecodeSeconds: number;
  cpuKernelSeconds: number;
  /** Modelled: rows/s one SmartSSD sustains. */
  deviceRowsPerSec: number;
  /** deviceRowsPerSec / cpuRowsPerSecPerCore (PreSto Figure 12's single-worker comparison). */
  speedup: number;
  split: { p2pMs: number; decodeMs: number; opsMs: number; networkOutMs: number };
}

export interface PrestoOptions {
  /** Rows generated per data set (default 2,048). */
  rows?: number;
  /** Target training throughput, samples/s (default 8 A100s × 12,500). */
  targetSamplesPerSec?: number;
  networkGbps?: number;
  /** Called as each step starts, with what it does (`sluice reproduce` prints it on stderr). */
  onProgress?: (step: string) => void;
  /** Folder to make the generated data's temporary folder in (default: the system's). */
  tmpDir?: string;
}

/** Timed runs of each feature's kernels and of the Parquet decode; the best of each counts (the report says so). */
const KERNEL_REPS = 5;
const DECODE_REPS = 2;

/** Measures one core: Parquet decode time and each feature's kernel time (best of `reps`), cached across plans that share a feature. */
class CpuMeter {
  private readonly featureCache = new Map<string, number>();
  private readonly decodeCache = new Map<string, { seconds: number; chunks: Array<ReadonlyMap<string, Column>> }>();

  async load(plan: PlanSpec, input: string): Promise<{ seconds: number; chunks: Array<ReadonlyMap<string, Column>> }> {
    const hit = this.decodeCache.get(input);
    if (hit) return hit;
    const pool = new DecoderPool(1);
    try {
      const { dataset, plan: typed } = await openInput(loadPlan(plan), input, pool);
      const columns = new Map(dataset.schema);
      let best = Infinity;
      let chunks: Array<ReadonlyMap<string, Column>> = [];
      for (let rep = 0; rep < DECODE_REPS; rep++) {
        const got: Array<ReadonlyMap<string, Column>> = [];
        const t0 = performance.now();
        for await (const c of readChunks(dataset, pool, { columns, chunkRows: 65536, shuffle: null, shard: { rank: 0, worldSize: 1 }, epochs: 1 }))
          got.push(c.columns);
        best = Math.min(best, (performance.now() - t0) / 1000);
        chunks = got;
      }
      void typed;
      const r = { seconds: best, chunks };
      this.decodeCache.set(input, r);
      return r;
    } finally {
      await pool.close();
    }
  }

  /** Seconds of core's reference kernels for every feature of the plan over the chunks. */
  async kernels(plan: PlanSpec, input: string, reps = KERNEL_REPS): Promise<number> {
    const { chunks } = await this.load(plan, input);
    const pool = new DecoderPool(1);
    let typed;
    try {
      typed = (await openInput(loadPlan(plan), input, pool)).plan;
    } finally {
      await pool.close();
    }
    let total = 0;
    for (const f of typed.features) {
      const key = JSON.stringify([input, f.input, f.ops.map((o) => [o.op, o.params])], (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
      let s = this.featureCache.get(key);
      if (s === undefined) {
        s = Infinity;
        // One untimed run first so that the JIT has compiled the kernels.
        for (let rep = -1; rep < reps; rep++) {
          const t0 = performance.now();
          for (const cols of chunks) runFeature(f, cols.get(f.input)!, new Map(), new Map(), new Map());
          if (rep >= 0) s = Math.min(s, (performance.now() - t0) / 1000);
        }
        this.featureCache.set(key, s);
      }
      total += s;
    }
    return total;
  }
}

/**
 * PreSto's provisioning study (§VI-B, Figures 14–15) on RM1–RM5: per-core CPU rate measured here
 * with core's kernels, per-SmartSSD rate from the model on the same data, and the devices and
 * cores needed for the target throughput, with energy and cost ratios.
 */
export async function reproducePresto(
  opts: PrestoOptions = {},
): Promise<{ rows: PrestoRow[]; generatedRows: number; targetSamplesPerSec: number; networkGbps: number }> {
  const rows = opts.rows ?? 2048;
  if (!Number.isSafeInteger(rows) || rows < 1) throw new InputError(`--rows must be a positive integer, got ${rows}`);
  const target = opts.targetSamplesPerSec ?? DEFAULT_A100S * SAMPLES_PER_SEC_PER_A100;
  const networkGbps = opts.networkGbps ?? PRESTO.networkGbps;
  const step = opts.onProgress ?? ((): void => undefined);
  const dir = mkdtempSync(join(opts.tmpDir ?? tmpdir(), 'sluice-presto-'));
  try {
    const files = { rm1: join(dir, 'rm1.parquet'), production: join(dir, 'rm2-5.parquet') };
    step(`generating ${rows.toLocaleString('en-US')} rm1 rows`);
    await generateDataset({ preset: 'rm1', rows, out: files.rm1 });
    // RM2–RM5 share one data shape (504 dense + 42 lists); only their plans differ.
    step(`generating ${rows.toLocaleString('en-US')} rows of RM2–RM5's shape (504 dense + 42 list columns)`);
    await generateDataset({ preset: 'rm2', rows, out: files.production });
    const meter = new CpuMeter();
    const out: PrestoRow[] = [];
    const models = ['rm1', 'rm2', 'rm3', 'rm4', 'rm5'];
    for (const [i, model] of models.entries()) {
      const input = model === 'rm1' ? files.rm1 : files.production;
      const plan: PlanSpec = { ...getPreset(model).defaultPlan(), backend: { name: 'smartssd-sim', networkGbps, targetSamplesPerSec: target } };
      const name = `${model.toUpperCase()} (${i + 1}/${models.length})`;
      step(`${name}: modelling the SmartSSD on smartssd-sim`);
      const p = pipeline(plan, { input });
      for await (const b of p) void b;
      const r = p.metrics().reportTotals;
      const deviceRowsPerSec = rows / ((r.modelledMs ?? 0) / 1000);
      step(`${name}: measuring one CPU core (decode, then each feature's kernels)`);
      const decode = (await meter.load(plan, input)).seconds;
      const kernels = await meter.kernels(plan, input);
      const network = (r.disaggNetworkBytes ?? 0) / ((networkGbps * 1e9) / 8);
      const cpuRowsPerSecPerCore = rows / (decode + kernels + network);
      out.push({
        model: model.toUpperCase(),
        cpuRowsPerSecPerCore,
        cpuDecodeSeconds: decode,
        cpuKernelSeconds: kernels,
        deviceRowsPerSec,
        speedup: deviceRowsPerSec / cpuRowsPerSecPerCore,
        split: { p2pMs: r.p2pMs ?? 0, decodeMs: r.decodeMs ?? 0, opsMs: r.opsMs ?? 0, networkOutMs: r.networkOutMs ?? 0 },
        ...provision(target, deviceRowsPerSec, cpuRowsPerSecPerCore),
      });
    }
    return { rows: out, generatedRows: rows, targetSamplesPerSec: target, networkGbps };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** `sluice reproduce presto`: the table and the comparison with the paper, or JSON. */
export async function prestoCommand(opts: PrestoOptions & { json?: boolean }): Promise<string> {
  const r = await reproducePresto(opts);
  const rm5 = r.rows.find((x) => x.model === 'RM5')!;
  const mostCores = r.rows.reduce((a, b) => (b.coresExact > a.coresExact ? b : a));
  const avg = {
    speedup: mean(r.rows.map((x) => x.speedup)),
    energyRatio: mean(r.rows.map((x) => x.energyRatio)),
    costRatio: mean(r.rows.map((x) => x.costRatio)),
  };
  const trends = {
    rm5NeedsMostCores: mostCores === rm5,
    /** RM2–RM5, the production-scale models (RM1 needs about one of either). */
    devicesFewerThanCores: r.rows.filter((x) => x.model !== 'RM1').every((x) => x.devices < x.cores),
  };
  if (opts.json) return JSON.stringify({ ...r, averages: avg, trends, paper: PRESTO_PAPER }, null, 2);
  const n = (v: number, d = 0): string => v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const head = ['model', 'CPU rows/s/core', 'SmartSSD rows/s', 'speedup', 'cores (T/P)', 'SmartSSDs (T/P)', 'energy×', 'cost×'];
  const body = r.rows.map((x) => [
    x.model,
    n(x.cpuRowsPerSecPerCore),
    n(x.deviceRowsPerSec),
    `${n(x.speedup, 1)}×`,
    `${n(x.cores)} (${n(x.coresExact, 2)})`,
    `${n(x.devices)} (${n(x.devicesExact, 2)})`,
    `${n(x.energyRatio, 1)}×`,
    `${n(x.costRatio, 1)}×`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    `PreSto provisioning (RM1–RM5, ${n(r.generatedRows)} generated rows each) for ${n(r.targetSamplesPerSec)} samples/s`,
    `T = ${DEFAULT_A100S} A100s × ${n(SAMPLES_PER_SEC_PER_A100)} samples/s (BAGPIPE §5.3: 128 A100s train 1.6M samples/s; PreSto does not state its T)`,
    `CPU: measured on this machine, one core, core's reference kernels (best of ${KERNEL_REPS} per feature) + Parquet decode (best of ${DECODE_REPS}), plus raw data in and tensors out over ${r.networkGbps} Gbps`,
    `SmartSSD: modelled per mini-batch as P2P + decode + units (one per feature, 223 MHz) + tensors out over ${r.networkGbps} Gbps`,
    '',
    fmt(head),
    ...body.map(fmt),
    '',
    `average speedup (1 SmartSSD vs 1 core): ${n(avg.speedup, 1)}× (paper: ${PRESTO_PAPER.speedup}×)`,
    `average energy-efficiency ratio: ${n(avg.energyRatio, 1)}× (paper: ${PRESTO_PAPER.energyRatio}×)`,
    `average cost-efficiency ratio: ${n(avg.costRatio, 1)}× (paper: ${PRESTO_PAPER.costRatio}×)`,
    `RM5: ${n(rm5.cores)} cores and ${n(rm5.devices)} SmartSSDs (paper: ${PRESTO_PAPER.rm5Cores} cores, ${PRESTO_PAPER.maxDevices} SmartSSDs)`,
    `trends: RM5 needs the most CPU cores (by T/P): ${trends.rm5NeedsMostCores ? 'yes' : 'NO'}; RM2–RM5 need fewer SmartSSDs than cores: ${trends.devicesFewerThanCores ? 'yes' : 'NO'} (RM5: ${n(rm5.cores / rm5.devices, 1)} cores per SmartSSD; paper: ${n(PRESTO_PAPER.rm5Cores / PRESTO_PAPER.maxDevices, 1)})`,
    '',
    "Why the numbers differ from the paper: (1) the CPU baseline is core's TypeScript kernels on this",
    "machine, not TorchArrow on a Xeon Gold 6242; PreSto's 367 cores for 8 A100s imply ~270 rows/s per",
    'core for RM5, far below the rate measured here, so far fewer cores are needed and the energy and',
    'cost ratios shrink (they scale with cores / SmartSSDs); (2) the SmartSSD decoder width, P2P and DRAM',
    'bandwidths and the prices are our assumptions (PreSto gives none; see docs/smartssd-sim.md), and',
    'at 10 Gbps sending the tensors to the trainer dominates the modelled device time, so RM2–RM5 differ',
    'little on the device; (3) T comes from BAGPIPE, not PreSto.',
  ].join('\n');
}
