import { columnLength, stateKey, traceExecution, type Column, type PlanState, type RowLocator } from '@sluice/core/internal';
import { PlanError, type Backend, type BackendSpec, type TypedPlan } from '@sluice/core';
import {
  beatRate,
  clockFor,
  DEPLOYMENTS,
  deviceBytes,
  initiationInterval,
  linksOf,
  makespan,
  PIPER,
  powerWatts,
  stageSeconds,
  tablesOnChip,
  USD_PER_KWH,
  type Deployment,
  type Links,
} from './model.js';

/** Options of the `fpga-sim` backend (the plan's `backend` object). */
export interface FpgaSimOptions {
  /** Where data comes from and results go (PIPER Figure 3): default `remote` (network-attached over RDMA). */
  deployment: Deployment;
  /** Concurrent MiniPipes in dynamic regions, 1..7 (PIPER §4.2.3); default 1. */
  miniPipes: number;
  /** SSD read bandwidth in GB/s for `storage` (default: PCIe 3.0 ×4 NVMe, 3.94). */
  ssdGBps?: number;
}

/** Everything the model has accumulated over a run: work counts and modelled seconds. */
export interface FpgaSimTotals {
  rows: number;
  chunks: number;
  /** Modelled end-to-end seconds (streamed: max of compute and output link per chunk, plus reconfiguration). */
  modelledSeconds: number;
  computeSeconds: number;
  inLinkBytes: number;
  outLinkBytes: number;
  reconfigSeconds: number;
  /** Modelled seconds of the fit pass (VocabGen) over the same rows, for plans with vocab ops. */
  fitPassSeconds: number;
  /** Each op run alone over all the features that use it, by Table-4 style name (e.g. `vocabMap`, `vocabGen`). */
  opSeconds: Record<string, number>;
  /** Device bytes into each op kind. */
  opBytes: Record<string, number>;
}

/** An fpga-sim backend, with access to its model totals. */
export interface FpgaSimBackend extends Backend {
  readonly options: FpgaSimOptions;
  readonly links: Links;
  /** Whether the plan's vocabulary tables are on chip. */
  readonly vocabOnChip: boolean;
  /** Table entries per vocab op, in plan order. */
  readonly tableEntries: readonly number[];
  totals(): FpgaSimTotals;
}

/** The dynamic region currently loaded with which plan, per process (one simulated board). */
let loadedFingerprint: string | null = null;

/** Validates the plan's backend options, naming the bad one. */
export function parseFpgaOptions(spec: BackendSpec): FpgaSimOptions {
  const known = new Set(['name', 'deployment', 'miniPipes', 'ssdGBps']);
  for (const k of Object.keys(spec))
    if (!known.has(k)) throw new PlanError(`backend ${spec.name}: unknown option "${k}" (known: deployment, miniPipes, ssdGBps)`);
  const deployment = (spec.deployment ?? 'remote') as Deployment;
  if (!DEPLOYMENTS.includes(deployment))
    throw new PlanError(`backend ${spec.name}: deployment must be one of ${DEPLOYMENTS.join(', ')}, got ${JSON.stringify(spec.deployment)}`);
  const miniPipes = spec.miniPipes ?? 1;
  if (typeof miniPipes !== 'number' || !Number.isInteger(miniPipes) || miniPipes < 1 || miniPipes > PIPER.maxMiniPipes) {
    throw new PlanError(
      `backend ${spec.name}: miniPipes must be an integer from 1 to ${PIPER.maxMiniPipes} (PIPER's dynamic regions), got ${JSON.stringify(spec.miniPipes)}`,
    );
  }
  const ssd = spec.ssdGBps;
  if (ssd !== undefined && (typeof ssd !== 'number' || !(ssd > 0) || !Number.isFinite(ssd)))
    throw new PlanError(`backend ${spec.name}: ssdGBps must be a positive number, got ${JSON.stringify(ssd)}`);
  return { deployment, miniPipes, ...(ssd !== undefined ? { ssdGBps: ssd } : {}) };
}

/** Entries of each vocab op's table: the upstream Modulus range when there is one (PIPER §3.4), else the fitted vocabulary. */
function vocabTables(plan: TypedPlan, state: PlanState): Array<{ feature: string; index: number; entries: number }> {
  const out: Array<{ feature: string; index: number; entries: number }> = [];
  for (const f of plan.features) {
    f.ops.forEach((o, index) => {
      if (o.op !== 'vocab') return;
      const prev = index > 0 ? f.ops[index - 1]! : undefined;
      const fitted = (state.get(stateKey(f.name, index)) as { keys?: ArrayLike<unknown> } | undefined)?.keys?.length ?? 0;
      const entries = prev?.op === 'modulus' ? Number((prev.params as { m: bigint | number }).m) : fitted;
      out.push({ feature: f.name, index, entries });
    });
  }
  return out;
}

/** The name Table 4 uses for an op kind. */
const opKey = (op: string, pass?: 'gen' | 'map'): string => (op === 'vocab' ? (pass === 'gen' ? 'vocabGen' : 'vocabMap') : op);

/** Builds the fpga-sim backend for a plan: real outputs from core's kernels, PIPER-modelled costs. */
export function fpgaSimBackend(plan: TypedPlan, spec: BackendSpec, state: PlanState): FpgaSimBackend {
  const options = parseFpgaOptions(spec);
  const pipes = options.miniPipes;
  const links = linksOf(options.deployment, options.ssdGBps !== undefined ? options.ssdGBps * 1e9 : undefined);
  const rate = beatRate(pipes, links);
  const tables = vocabTables(plan, state);
  const onChip = tablesOnChip(tables.map((t) => t.entries));
  const kind = tables.length === 0 ? 'stateless' : onChip ? 'vocabOnChip' : 'vocabOffChip';
  const watts = powerWatts(pipes, kind);
  // Partial reconfiguration when this board last ran another plan (or nothing).
  const fingerprint = JSON.stringify({ pipes, ops: plan.features.map((f) => f.ops.map((o) => [o.op, o.params])) }, (_k, v: unknown) =>
    typeof v === 'bigint' ? String(v) : v,
  );
  let pendingReconfig = loadedFingerprint === fingerprint ? 0 : (pipes * PIPER.reconfigMsPerRegion) / 1000;
  loadedFingerprint = fingerprint;

  const t: FpgaSimTotals = {
    rows: 0,
    chunks: 0,
    modelledSeconds: 0,
    computeSeconds: 0,
    inLinkBytes: 0,
    outLinkBytes: 0,
    reconfigSeconds: 0,
    fitPassSeconds: 0,
    opSeconds: {},
    opBytes: {},
  };
  const add = (rec: Record<string, number>, k: string, v: number): void => {
    rec[k] = (rec[k] ?? 0) + v;
  };

  return {
    name: spec.name,
    capabilities: { ops: 'all', timing: 'modelled' },
    concurrency: 1,
    options,
    links,
    vocabOnChip: onChip,
    tableEntries: tables.map((x) => x.entries),
    async run(columns: ReadonlyMap<string, Column>, locate: RowLocator) {
      const t0 = performance.now();
      const chunkOps: Record<string, number> = {};
      // Per feature: the slowest stage of its run pass and of its fit pass (stages are pipelined).
      const runStage = new Map<string, number>();
      const fitStage = new Map<string, number>();
      const fitDone = new Set<string>();
      const out = traceExecution(plan, columns, state, locate, ({ feature, index, input }) => {
        const op = feature.ops[index]!.op;
        const bytes = deviceBytes(input);
        const s = stageSeconds(bytes, initiationInterval(op, 'map', onChip), rate);
        runStage.set(feature.name, Math.max(runStage.get(feature.name) ?? 0, s));
        add(t.opSeconds, opKey(op, 'map'), s);
        add(chunkOps, `op ${opKey(op, 'map')} ms`, s * 1000);
        add(t.opBytes, opKey(op, 'map'), bytes);
        if (op === 'vocab') {
          const g = stageSeconds(bytes, initiationInterval(op, 'gen', onChip), rate);
          add(t.opSeconds, 'vocabGen', g);
          add(chunkOps, 'op vocabGen ms', g * 1000);
          fitStage.set(feature.name, Math.max(fitStage.get(feature.name) ?? 0, g));
          fitDone.add(feature.name);
        } else if (feature.ops.some((o) => o.op === 'vocab') && !fitDone.has(feature.name)) {
          fitStage.set(feature.name, Math.max(fitStage.get(feature.name) ?? 0, s));
        }
      });
      let inBytes = 0;
      for (const name of new Set(plan.features.map((f) => f.input))) {
        const c = columns.get(name);
        if (c) inBytes += deviceBytes(c);
      }
      let outBytes = 0;
      const featureTimes: number[] = [];
      for (const f of plan.features) {
        const c = out.get(f.name)!;
        outBytes += deviceBytes(c);
        // A feature without ops still streams its column through the MiniPipe.
        featureTimes.push(runStage.get(f.name) ?? stageSeconds(deviceBytes(c), 1, rate));
      }
      const compute = makespan(featureTimes, pipes);
      const outLink = outBytes / links.outBps;
      const reconfig = pendingReconfig;
      pendingReconfig = 0;
      const modelled = Math.max(compute, outLink) + reconfig;
      const fitPass = makespan([...fitStage.values()], pipes);
      const rows = columnLength(out.values().next().value ?? columns.values().next().value!);
      t.rows += rows;
      t.chunks++;
      t.modelledSeconds += modelled;
      t.computeSeconds += compute;
      t.inLinkBytes += inBytes;
      t.outLinkBytes += outBytes;
      t.reconfigSeconds += reconfig;
      t.fitPassSeconds += fitPass;
      const wallMs = performance.now() - t0;
      return {
        columns: out,
        report: {
          wallMs,
          bytesIn: inBytes,
          bytesOut: outBytes,
          modelledMs: modelled * 1000,
          computeMs: compute * 1000,
          [`${links.inName}InBytes`]: inBytes,
          [`${links.inName}InMs`]: (inBytes / links.inBps) * 1000,
          [`${links.outName}OutBytes`]: outBytes,
          [`${links.outName}OutMs`]: outLink * 1000,
          reconfigMs: reconfig * 1000,
          fitPassModelledMs: fitPass * 1000,
          energyJ: watts * modelled,
          // Each op kind alone over this chunk (PIPER Table 4's view), summed by the pipeline metrics.
          ...chunkOps,
        },
      };
    },
    totals() {
      return { ...t, opSeconds: { ...t.opSeconds }, opBytes: { ...t.opBytes } };
    },
    summary() {
      const energyJ = watts * t.modelledSeconds;
      return {
        'fpga-sim model': `PIPER, ${options.deployment} (${links.inName} in, ${links.outName} out), ${pipes} MiniPipe(s) at ${clockFor(pipes) / 1e6} MHz`,
        'modelled seconds': t.modelledSeconds,
        'modelled rows/s': t.modelledSeconds > 0 ? t.rows / t.modelledSeconds : 0,
        'modelled ops (compute) ms': t.computeSeconds * 1000,
        [`modelled ${links.inName} in ms (${(links.inBps / 1e9).toFixed(1)} GB/s)`]: (t.inLinkBytes / links.inBps) * 1000,
        [`modelled ${links.outName} out ms (${(links.outBps / 1e9).toFixed(1)} GB/s)`]: (t.outLinkBytes / links.outBps) * 1000,
        'modelled reconfiguration ms': t.reconfigSeconds * 1000,
        ...(tables.length > 0 ? { 'vocab tables': onChip ? 'on-chip' : 'off-chip (HBM)', 'modelled fit pass (VocabGen) ms': t.fitPassSeconds * 1000 } : {}),
        'modelled power W': watts,
        'modelled energy J': energyJ,
        'modelled electricity $': (energyJ / 3.6e6) * USD_PER_KWH,
      };
    },
    async dispose() {},
  };
}
