/**
 * The `sluice reproduce` targets: which simulator package provides each, the size the CLI runs by
 * default, and what a run costs in memory and time. Plain data, no imports: the help text
 * (usage.ts) is built from it, so `sluice reproduce --help` states the numbers the size check uses.
 */

/** One reproduction's defaults and cost model: peak memory and time as fixed + per row. */
export interface Reproduction {
  /** The simulator whose package (`@sluice/backend-NAME`) provides it. */
  readonly backend: string;
  /** What it reruns, for the help page. */
  readonly what: string;
  /** Rows of synthetic data the CLI generates when --rows is not given. */
  readonly defaultRows: number;
  /** Peak resident memory: fixed part and bytes per generated row. */
  readonly baseBytes: number;
  readonly bytesPerRow: number;
  /** Wall time: fixed part and milliseconds per generated row. */
  readonly baseSeconds: number;
  readonly msPerRow: number;
}

/**
 * Peak RSS (`/usr/bin/time`) and wall time of `sluice reproduce` at several sizes on the 2-core
 * development VM; the runs and the fit are in docs/cli.md#reproduce. Memory is a line over the
 * larger runs, which lies above every smaller one; presto keeps every decoded chunk of RM2–RM5's
 * 546 columns in memory to time the kernels on them, piper-table4 streams.
 */
export const REPRODUCTIONS = {
  'piper-table4': {
    backend: 'fpga-sim',
    what: 'PIPER Table 4 on fpga-sim',
    defaultRows: 20_000,
    baseBytes: 300e6,
    bytesPerRow: 200,
    baseSeconds: 2,
    msPerRow: 0.06,
  },
  presto: {
    backend: 'smartssd-sim',
    what: "PreSto's CPU-vs-SmartSSD provisioning (RM1–RM5) on smartssd-sim",
    defaultRows: 2048,
    baseBytes: 600e6,
    bytesPerRow: 19_000,
    baseSeconds: 10,
    msPerRow: 2.4,
  },
} as const satisfies Record<string, Reproduction>;

export type ReproductionName = keyof typeof REPRODUCTIONS;

export const isReproduction = (name: string): name is ReproductionName => Object.hasOwn(REPRODUCTIONS, name);

/**
 * Estimated peak memory of a run over `rows` rows, in bytes.
 *
 * @example
 * reproductionBytes(REPRODUCTIONS.presto, 100_000); // 2.5e9
 */
export const reproductionBytes = (r: Reproduction, rows: number): number => r.baseBytes + r.bytesPerRow * rows;

/**
 * Estimated wall time of a run over `rows` rows, in seconds.
 *
 * @example
 * reproductionSeconds(REPRODUCTIONS.presto, 2048); // about 15
 */
export const reproductionSeconds = (r: Reproduction, rows: number): number => r.baseSeconds + (r.msPerRow * rows) / 1000;

/**
 * A whole number with thousands separators, "20,000". Not toLocaleString: its first call loads
 * ICU's data, about 15 ms that `sluice --help` would pay for building this text.
 *
 * @example
 * formatCount(1234567); // "1,234,567"
 */
export const formatCount = (n: number): string => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/**
 * A byte count for people.
 *
 * @example
 * formatBytes(1.23e9); // "1.2 GB"; formatBytes(3.5e8) is "350 MB"
 */
export function formatBytes(bytes: number): string {
  if (bytes >= 100e9) return `${formatCount(bytes / 1e9)} GB`;
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.round(bytes / 1e6)} MB`;
}

/**
 * A duration for people.
 *
 * @example
 * formatSeconds(270); // "4.5 min"; 40 is "40 s", 7560 is "2.1 h"
 */
export function formatSeconds(s: number): string {
  return s < 90 ? `${Math.round(s)} s` : s < 5400 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`;
}
