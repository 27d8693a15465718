/**
 * PIPER cost model (Yuan et al., "PIPER: A Flexible and Network-Attached Accelerator for
 * Recommender-System Data Preprocessing", /work/shared/papers/piper-fpga.txt). Pure arithmetic over
 * work counts; nothing here touches data. Every constant cites the paper section or table.
 */
import type { Column } from '@sluice/core/internal';

/** Device parameters of an Alveo-U55c-like PIPER board. */
export const PIPER = {
  /** §4.1.2: "the achieved kernel frequency of PIPER for the different pipelines is 200MHz". */
  clockHz: 200e6,
  /** §4.2.3: with 7 MiniPipes "the frequency downgraded to 135MHz". */
  clockHzDerated: 135e6,
  /** §4.2.3: throughput "scales linearly when increasing the number of MiniPipes to 4" (at 200 MHz). */
  fullClockMaxPipes: 4,
  /** §4.2.3: "7 is the maximum number of dynamic regions possible". */
  maxMiniPipes: 7,
  /** §3.3 / §3.4: MiniPipe granularity and datapath "data width is set to 64 bytes". */
  widthBytes: 64,
  /** §3.3: HBM "12 GBps per channel, operating at a 200 MHz clock and a 64-byte wide memory port". */
  hbmChannelBps: 12e9,
  /** §4.1.2: U55c has 32 HBM channels (so each of up to 7 MiniPipes gets its own in and out channel). */
  hbmChannels: 32,
  /** §4.2.4: host memory over PCIe DMA, "the reading speed can reach 14GB/s and the writing 12GB/s". */
  hostReadBps: 14e9,
  hostWriteBps: 12e9,
  /** §4.2.4: "for RDMA access, the maximum achieved throughput is about 11GB/s". */
  rdmaBps: 11e9,
  /** §4.1.2: U55c "43MB SRAM" — the on-chip memory vocabulary tables compete for. */
  onChipBytes: 43e6,
  /** §3.4 VocabGen: "value-index pairs"; a 32-bit value and a 32-bit index per entry. */
  vocabEntryBytes: 8,
  /** §3.4 Neg2Zero, Logarithm, Hex2Int, Modulus: "an II of one cycle". */
  iiStateless: 1,
  /** §3.4 VocabGen: "on-chip memory offering an II of two cycles ... off-chip memory ... approximately six cycles". */
  iiVocabGenOnChip: 2,
  iiVocabGenOffChip: 6,
  /** §3.4 VocabMap: "approximately six cycles when the table is stored in off-chip memory or one cycle when stored in on-chip memory". */
  iiVocabMapOnChip: 1,
  iiVocabMapOffChip: 6,
  /** Table 5 caption: PIPER static power 17 W. */
  staticW: 17,
  /** Table 5, D-I rows: 24 W (P-I, stateless), 25 W (P-II, 8K on-chip vocab), 26 W (P-III, 512K off-chip vocab), minus the 17 W static. */
  dynamicW: { stateless: 7, vocabOnChip: 8, vocabOffChip: 9 },
  /**
   * §3.5: "PIPER can complete the transition of pipelines within milliseconds" (Coyote partial
   * reconfiguration). The paper gives only the order of magnitude; we charge 5 ms per region.
   */
  reconfigMsPerRegion: 5,
} as const;

/**
 * NVMe SSD read bandwidth for the storage-attached mode: PIPER gives none, so we use the link a U.2
 * NVMe drive sits on (PreSto §IV-B: SmartSSDs are "NVMe U.2" devices), PCIe 3.0 ×4 =
 * 4 lanes × 8 GT/s × 128/130 / 8 bits = 3.94 GB/s.
 */
export const NVME_GEN3_X4_BPS = (4 * 8e9 * 128) / 130 / 8;

/** PreSto §V-C: average electricity price $0.0733 per kWh (used for the $ figure). */
export const USD_PER_KWH = 0.0733;

export type Deployment = 'local' | 'host' | 'remote' | 'storage';
export const DEPLOYMENTS: readonly Deployment[] = ['local', 'host', 'remote', 'storage'];

/** Where the MiniPipes read from and write to in each deployment (PIPER §3.1–§3.2, Figure 3). */
export interface Links {
  readonly inName: string;
  readonly outName: string;
  readonly inBps: number;
  readonly outBps: number;
  /** Whether all MiniPipes share the input link (PCIe, network, SSD) or each has its own (HBM channels). */
  readonly shared: boolean;
}

/** The input and output links of a deployment; `ssdBps` only matters for `storage`. */
export function linksOf(mode: Deployment, ssdBps = NVME_GEN3_X4_BPS): Links {
  switch (mode) {
    case 'local':
      return { inName: 'hbm', outName: 'hbm', inBps: PIPER.hbmChannelBps, outBps: PIPER.hbmChannelBps, shared: false };
    case 'host':
      return { inName: 'pcie', outName: 'pcie', inBps: PIPER.hostReadBps, outBps: PIPER.hostWriteBps, shared: true };
    case 'remote':
      // Figure 3d: data arrives over RDMA and results leave over the (full-duplex) network.
      return { inName: 'rdma', outName: 'rdma', inBps: PIPER.rdmaBps, outBps: PIPER.rdmaBps, shared: true };
    case 'storage':
      // Figure 3c: computational storage; results go "through the network layer to the target machine".
      return { inName: 'ssd', outName: 'rdma', inBps: ssdBps, outBps: PIPER.rdmaBps, shared: true };
  }
}

/** Kernel clock for `pipes` concurrent MiniPipes (§4.2.3: 200 MHz up to 4, 135 MHz at 7). */
export function clockFor(pipes: number): number {
  return pipes <= PIPER.fullClockMaxPipes ? PIPER.clockHz : PIPER.clockHzDerated;
}

/**
 * Beats per second one MiniPipe's input stream delivers: one 64-byte beat per clock, unless the
 * source link (its share of it, when shared) is slower.
 */
export function beatRate(pipes: number, links: Links): number {
  const perPipe = links.shared ? links.inBps / pipes : links.inBps;
  return Math.min(clockFor(pipes), perPipe / PIPER.widthBytes);
}

/**
 * Seconds one pipeline stage takes for `bytes` of input at initiation interval `ii` (cycles per
 * 64-byte beat), with the stream delivering `rate` beats/s. The stage is charged `ii` stream slots
 * per beat: the stall cycles of a multi-cycle II are not overlapped with link transfers (the input
 * stream is throttled to the stage rather than buffered ahead). With the clock as the limit this is
 * the textbook bytes / (width × clock / II).
 */
export function stageSeconds(bytes: number, ii: number, rate: number): number {
  return (Math.ceil(bytes / PIPER.widthBytes) * ii) / rate;
}

/** Pass of a vocabulary op: building the table (fit) or mapping through it (run). */
export type VocabPass = 'gen' | 'map';

/** II of an op; vocab ops depend on the pass and on where the tables live. */
export function initiationInterval(op: string, pass: VocabPass, onChip: boolean): number {
  if (op !== 'vocab') return PIPER.iiStateless;
  if (pass === 'gen') return onChip ? PIPER.iiVocabGenOnChip : PIPER.iiVocabGenOffChip;
  return onChip ? PIPER.iiVocabMapOnChip : PIPER.iiVocabMapOffChip;
}

/**
 * Whether a plan's vocabulary tables fit on chip. §3.4: "II of the overall dataflow is influenced
 * by the memory type used for vocabulary table" — one memory type for the dataflow, so all tables
 * are on chip only when together they fit in the SRAM.
 */
export function tablesOnChip(tableEntries: readonly number[]): boolean {
  const bytes = tableEntries.reduce((a, n) => a + n * PIPER.vocabEntryBytes, 0);
  return bytes <= PIPER.onChipBytes;
}

/**
 * Bytes a column occupies on the device datapath. Numbers take their width, except that int64
 * values that all fit in 32 bits travel as 32-bit words (PIPER's Hex2Int turns 8 hex digits into a
 * 32-bit integer, §3.4); strings travel as their characters (PIPER stores the hex features as
 * aligned fixed-width binary, §4.1.1, so no offsets); lists add a 32-bit length per row. Validity is
 * not streamed (PIPER's binary data has no nulls).
 */
export function deviceBytes(c: Column): number {
  switch (c.type) {
    case 'utf8':
      return c.offsets[c.offsets.length - 1]! - c.offsets[0]!;
    case 'list':
      return 4 * (c.offsets.length - 1) + deviceBytes(c.child);
    case 'int64':
      return (fitsIn32(c.values) ? 4 : 8) * c.values.length;
    default:
      return c.values.byteLength;
  }
}

/** True when every value is in [-2^31, 2^32): it has a 32-bit (signed or unsigned) form. */
function fitsIn32(v: BigInt64Array): boolean {
  const w = new Int32Array(v.buffer, v.byteOffset, v.length * 2);
  for (let i = 0; i < v.length; i++) {
    const hi = w[2 * i + 1]!;
    if (hi !== 0 && !(hi === -1 && w[2 * i]! < 0)) return false;
  }
  return true;
}

/**
 * Longest-processing-time assignment of feature times to `pipes` MiniPipes (features are
 * independent columns, so any feature may go to any MiniPipe); returns the makespan.
 */
export function makespan(times: readonly number[], pipes: number): number {
  const load = new Float64Array(Math.max(1, pipes));
  for (const t of [...times].sort((a, b) => b - a)) {
    let k = 0;
    for (let j = 1; j < load.length; j++) if (load[j]! < load[k]!) k = j;
    load[k]! += t;
  }
  return Math.max(0, ...load);
}

/** Board power for `pipes` MiniPipes running a dataflow of the given kind (Table 5). */
export function powerWatts(pipes: number, kind: keyof typeof PIPER.dynamicW): number {
  // Table 5 is measured with one pipeline; each further MiniPipe adds its own dynamic power.
  return PIPER.staticW + pipes * PIPER.dynamicW[kind];
}
