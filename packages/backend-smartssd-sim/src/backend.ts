import { columnLength, elementCount, traceExecution, type Column, type PlanState, type RowLocator } from '@sluice/core/internal';
import { PlanError, type Backend, type BackendSpec, type TypedPlan } from '@sluice/core';
import {
  cyclesPerValue,
  DEFAULT_A100S,
  deviceSeconds,
  deviceSplit,
  parquetPlainBytes,
  PRESTO,
  provision,
  SAMPLES_PER_SEC_PER_A100,
  tensorBytes,
  type DeviceSplit,
  type Provisioning,
} from './model.js';

/** Options of the `smartssd-sim` backend (the plan's `backend` object). */
export interface SmartSsdSimOptions {
  /** Network between storage, CPU pool and trainer, Gbit/s (default 10, PreSto §V-B). */
  networkGbps: number;
  /** Training throughput to provision for, samples/s (default 8 A100s: 100,000). */
  targetSamplesPerSec: number;
}

/** Work and modelled time accumulated over a run. */
export interface SmartSsdTotals extends DeviceSplit {
  rows: number;
  chunks: number;
  encodedBytes: number;
  outBytes: number;
  /** Measured seconds core's kernels took on this thread: the disaggregated baseline's per-core compute. */
  cpuSeconds: number;
}

/** A smartssd-sim backend, with access to its totals. */
export interface SmartSsdSimBackend extends Backend {
  readonly options: SmartSsdSimOptions;
  totals(): SmartSsdTotals;
}

/** Validates the plan's backend options, naming the bad one. */
export function parseSmartSsdOptions(spec: BackendSpec): SmartSsdSimOptions {
  const known = new Set(['name', 'networkGbps', 'targetSamplesPerSec']);
  for (const k of Object.keys(spec))
    if (!known.has(k)) throw new PlanError(`backend ${spec.name}: unknown option "${k}" (known: networkGbps, targetSamplesPerSec)`);
  const positive = (k: string, dflt: number): number => {
    const v = spec[k] ?? dflt;
    if (typeof v !== 'number' || !Number.isFinite(v) || !(v > 0))
      throw new PlanError(`backend ${spec.name}: ${k} must be a positive number, got ${JSON.stringify(spec[k])}`);
    return v;
  };
  return {
    networkGbps: positive('networkGbps', PRESTO.networkGbps),
    targetSamplesPerSec: positive('targetSamplesPerSec', DEFAULT_A100S * SAMPLES_PER_SEC_PER_A100),
  };
}

/** Per-core rate of the disaggregated CPU baseline: measured compute plus raw data in and tensors out over the network. */
export function disaggPerCoreSeconds(t: SmartSsdTotals, networkGbps: number): number {
  return t.cpuSeconds + (t.encodedBytes + t.outBytes) / ((networkGbps * 1e9) / 8);
}

/** Provisioning from a run's totals. */
export function provisionFromTotals(t: SmartSsdTotals, o: SmartSsdSimOptions): Provisioning {
  return provision(o.targetSamplesPerSec, t.rows / deviceSeconds(t), t.rows / disaggPerCoreSeconds(t, o.networkGbps));
}

/** Builds the smartssd-sim backend: real outputs from core's kernels, PreSto-modelled device costs. */
export function smartSsdSimBackend(plan: TypedPlan, spec: BackendSpec, state: PlanState): SmartSsdSimBackend {
  const options = parseSmartSsdOptions(spec);
  const t: SmartSsdTotals = {
    rows: 0,
    chunks: 0,
    encodedBytes: 0,
    outBytes: 0,
    cpuSeconds: 0,
    p2pSeconds: 0,
    decodeSeconds: 0,
    opsSeconds: 0,
    networkSeconds: 0,
  };
  return {
    name: spec.name,
    capabilities: { ops: 'all', timing: 'modelled' },
    concurrency: 1,
    options,
    async run(columns: ReadonlyMap<string, Column>, locate: RowLocator) {
      const cycles = new Map<string, number>();
      let dramBytes = 0;
      const t0 = performance.now();
      const out = traceExecution(plan, columns, state, locate, ({ feature, index, input }) => {
        const o = feature.ops[index]!;
        cycles.set(feature.name, Math.max(cycles.get(feature.name) ?? 0, elementCount(input) * cyclesPerValue(o.op, o.params)));
        dramBytes += tensorBytes(input);
      });
      const wallMs = performance.now() - t0;
      let encoded = 0;
      for (const name of new Set(plan.features.map((f) => f.input))) {
        const c = columns.get(name);
        if (c) encoded += parquetPlainBytes(c);
      }
      let outBytes = 0;
      for (const c of out.values()) outBytes += tensorBytes(c);
      const split = deviceSplit(encoded, [...cycles.values()], dramBytes + outBytes, outBytes, options.networkGbps);
      const rows = columnLength(out.values().next().value ?? columns.values().next().value!);
      t.rows += rows;
      t.chunks++;
      t.encodedBytes += encoded;
      t.outBytes += outBytes;
      t.cpuSeconds += wallMs / 1000;
      t.p2pSeconds += split.p2pSeconds;
      t.decodeSeconds += split.decodeSeconds;
      t.opsSeconds += split.opsSeconds;
      t.networkSeconds += split.networkSeconds;
      const modelled = deviceSeconds(split);
      const disaggNet = (encoded + outBytes) / ((options.networkGbps * 1e9) / 8);
      return {
        columns: out,
        report: {
          wallMs,
          bytesIn: encoded,
          bytesOut: outBytes,
          modelledMs: modelled * 1000,
          p2pMs: split.p2pSeconds * 1000,
          decodeMs: split.decodeSeconds * 1000,
          opsMs: split.opsSeconds * 1000,
          networkOutMs: split.networkSeconds * 1000,
          p2pBytes: encoded,
          networkOutBytes: outBytes,
          energyJ: PRESTO.deviceW * modelled,
          disaggNetworkBytes: encoded + outBytes,
          disaggNetworkMs: disaggNet * 1000,
        },
      };
    },
    totals() {
      return { ...t };
    },
    summary() {
      const dev = deviceSeconds(t);
      const perCore = disaggPerCoreSeconds(t, options.networkGbps);
      const p = provisionFromTotals(t, options);
      return {
        'smartssd-sim model': `PreSto SmartSSD: P2P ${(PRESTO.p2pBps / 1e9).toFixed(2)} GB/s, decoder + units at ${PRESTO.clockHz / 1e6} MHz, ${PRESTO.deviceW} W; network ${options.networkGbps} Gbps`,
        'modelled device seconds': dev,
        'modelled rows/s per SmartSSD': dev > 0 ? t.rows / dev : 0,
        'modelled P2P ms': t.p2pSeconds * 1000,
        'modelled decode ms': t.decodeSeconds * 1000,
        'modelled ops ms': t.opsSeconds * 1000,
        'modelled network out ms': t.networkSeconds * 1000,
        'modelled energy J (1 device)': PRESTO.deviceW * dev,
        'measured CPU kernel s (1 core, this run)': t.cpuSeconds,
        'disagg rows/s per core (measured kernels + network)': perCore > 0 ? t.rows / perCore : 0,
        'target samples/s': p.targetSamplesPerSec,
        'SmartSSDs needed': p.devices,
        'CPU cores needed': p.cores,
        'energy-efficiency ratio (PreSto/Disagg)': p.energyRatio,
        'TCO 3y $ SmartSSDs': p.devicesUsd,
        'TCO 3y $ CPU cores': p.coresUsd,
        'cost-efficiency ratio (PreSto/Disagg)': p.costRatio,
      };
    },
    async dispose() {},
  };
}
