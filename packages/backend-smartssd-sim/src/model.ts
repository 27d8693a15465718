/**
 * PreSto cost model (Lee et al., "PreSto: An In-Storage Data Preprocessing System for Training
 * Recommendation Models", ISCA 2024, /work/shared/papers/presto-isca24.txt), and the disaggregated
 * CPU baseline it is compared with. Pure arithmetic over work counts; every constant cites its
 * source, and the few the paper does not give are marked as our assumptions.
 */
import type { Column } from '@sluice/core/internal';

export const PRESTO = {
  /** Table II: "Decode, Bucketize, SigridHash, and Log units are synthesized with an operating frequency of 223MHz". */
  clockHz: 223e6,
  /** §IV-B: "the NVMe's 25 Watts power envelope"; §VI-B: "25 Watts TDP per each SmartSSD card". */
  deviceW: 25,
  /**
   * SSD → FPGA peer-to-peer bandwidth. PreSto gives none; a SmartSSD is an NVMe U.2 device (§IV-B),
   * i.e. PCIe 3.0 ×4: 4 lanes × 8 GT/s × 128/130 / 8 = 3.94 GB/s (our assumption: the P2P path runs at link rate).
   */
  p2pBps: (4 * 8e9 * 128) / 130 / 8,
  /**
   * Hardwired Parquet decoder throughput, bytes per cycle. Not in the paper (§VI-A only says decoding
   * "is less parallelizable"); we assume one 8-byte word per cycle.
   */
  decoderBytesPerCycle: 8,
  /**
   * FPGA-attached DRAM bandwidth that all per-feature units share (§IV-C: units are "directly connected
   * to the off-chip-memory interface"). Not in the paper; the SmartSSD's KU15P has one 64-bit DDR4-2400
   * channel: 2400e6 × 8 B = 19.2 GB/s (vendor data sheet, our assumption).
   */
  dramBps: 19.2e9,
  /** §V-B: the PoC's nodes "communicate over a network using 10 Gbps Ethernet". */
  networkGbps: 10,
  /** §V-C: OpEx over "a period of 3 years" at "$0.0733/kWh". */
  years: 3,
  usdPerKWh: 0.0733,
} as const;

/**
 * CPU baseline and prices. PreSto's CPU nodes are two-socket Intel Xeon Gold 6242 (§V-B, 32 cores);
 * it takes prices "from the respective company website" without listing them (§V-C), so these are
 * our assumptions: Intel's list price for the Xeon Gold 6242 ($2,529, 16 cores, 150 W TDP) per core,
 * and a SmartSSD street price of $2,000.
 */
export const PRICES = {
  cpuCoreW: 150 / 16,
  cpuCoreUsd: 2529 / 16,
  smartSsdUsd: 2000,
} as const;

/**
 * Training throughput to feed (samples/s) for `a100s` GPUs. PreSto sizes for "a single multi-GPU
 * server node containing 8 A100 GPUs" (Figure 14) without stating its rate; we take BAGPIPE
 * (SOSP'23) §5.3's "128 A100 GPUs processing up to 1.6 Million samples per second", i.e. 12,500
 * samples/s per A100.
 */
export const SAMPLES_PER_SEC_PER_A100 = 1.6e6 / 128;
export const DEFAULT_A100S = 8;

/**
 * Cycles a unit spends per value of an op. Bucketize searches its m borders (PreSto Algorithm 1)
 * with a binary search that reads one border per cycle from on-chip memory: ceil(log2(m + 1))
 * cycles. SigridHash and Log are pipelined, one value per cycle (§IV-C), and we model the other ops
 * (fillNull, neg2zero, firstX, hex2int, …) the same way.
 */
export function cyclesPerValue(op: string, params: unknown): number {
  if (op === 'bucketize') {
    const borders = (params as { borders: readonly number[] }).borders.length;
    return Math.max(1, Math.ceil(Math.log2(borders + 1)));
  }
  return 1;
}

/**
 * PLAIN-encoded Parquet size of a column, the bytes the decoder reads: fixed-width values,
 * 4-byte length prefix per string, a list's child values (levels are ignored).
 */
export function parquetPlainBytes(c: Column): number {
  switch (c.type) {
    case 'utf8':
      return 4 * (c.offsets.length - 1) + (c.offsets[c.offsets.length - 1]! - c.offsets[0]!);
    case 'list':
      return parquetPlainBytes(c.child);
    default:
      return c.values.byteLength;
  }
}

/** Bytes of train-ready tensors: values plus, for lists, int32 lengths (the KJT layout). */
export function tensorBytes(c: Column): number {
  switch (c.type) {
    case 'utf8':
      return c.offsets.byteLength + (c.offsets[c.offsets.length - 1]! - c.offsets[0]!);
    case 'list':
      return 4 * (c.offsets.length - 1) + tensorBytes(c.child);
    default:
      return c.values.byteLength;
  }
}

/** One SmartSSD worker's modelled time for one mini-batch, per step (PreSto Figure 12's breakdown). */
export interface DeviceSplit {
  p2pSeconds: number;
  decodeSeconds: number;
  opsSeconds: number;
  networkSeconds: number;
}

/** Steps of one mini-batch run back to back by one worker, as in PreSto Figure 12. */
export function deviceSeconds(s: DeviceSplit): number {
  return s.p2pSeconds + s.decodeSeconds + s.opsSeconds + s.networkSeconds;
}

/**
 * Modelled device time of one chunk: P2P read, decode, the units (one per feature, running
 * concurrently; a feature's ops are pipelined so its slowest op sets its time; all units share the
 * FPGA DRAM), and the tensors sent to the trainer.
 */
export function deviceSplit(encodedBytes: number, featureCycles: readonly number[], dramBytes: number, outBytes: number, networkGbps: number): DeviceSplit {
  const unitSeconds = Math.max(0, ...featureCycles) / PRESTO.clockHz;
  return {
    p2pSeconds: encodedBytes / PRESTO.p2pBps,
    decodeSeconds: encodedBytes / (PRESTO.decoderBytesPerCycle * PRESTO.clockHz),
    opsSeconds: Math.max(unitSeconds, dramBytes / PRESTO.dramBps),
    networkSeconds: outBytes / ((networkGbps * 1e9) / 8),
  };
}

/** Devices or cores needed to sustain `target` samples/s at `perUnit` samples/s each (PreSto §IV-B step 2: T / P, rounded up). */
export function unitsNeeded(target: number, perUnit: number): number {
  if (!(perUnit > 0)) return Infinity;
  return Math.ceil(target / perUnit - 1e-9);
}

/** PreSto §V-C cost: CapEx + Power × Duration × Electricity, in dollars. */
export function tcoUsd(capexUsd: number, watts: number, years: number = PRESTO.years): number {
  const hours = years * 365 * 24;
  return capexUsd + (watts / 1000) * hours * PRESTO.usdPerKWh;
}

/** Provisioning of PreSto vs the disaggregated CPU pool for a target throughput. */
export interface Provisioning {
  targetSamplesPerSec: number;
  devices: number;
  cores: number;
  /** T / P before rounding up (for comparing models whose rounded counts tie). */
  devicesExact: number;
  coresExact: number;
  devicesW: number;
  coresW: number;
  /** Energy efficiency (throughput per watt) of PreSto over Disagg at the same throughput. */
  energyRatio: number;
  devicesUsd: number;
  coresUsd: number;
  /** Cost efficiency (throughput × duration per TCO dollar) of PreSto over Disagg. */
  costRatio: number;
}

/** Sizes both systems for `target` samples/s from the per-device and per-core rates. */
export function provision(target: number, perDevice: number, perCore: number): Provisioning {
  const devices = unitsNeeded(target, perDevice);
  const cores = unitsNeeded(target, perCore);
  const devicesW = devices * PRESTO.deviceW;
  const coresW = cores * PRICES.cpuCoreW;
  const devicesUsd = tcoUsd(devices * PRICES.smartSsdUsd, devicesW);
  const coresUsd = tcoUsd(cores * PRICES.cpuCoreUsd, coresW);
  return {
    targetSamplesPerSec: target,
    devices,
    cores,
    devicesExact: target / perDevice,
    coresExact: target / perCore,
    devicesW,
    coresW,
    energyRatio: coresW / devicesW,
    devicesUsd,
    coresUsd,
    costRatio: coresUsd / devicesUsd,
  };
}
