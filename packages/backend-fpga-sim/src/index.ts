/**
 * @sluice/backend-fpga-sim — importing it registers `fpga-sim`: a PIPER-style FPGA (Alveo U55c)
 * that computes real outputs with core's kernels and models time, link bytes, energy and cost.
 *
 * @example
 * import '@sluice/backend-fpga-sim';
 * import { pipeline } from '@sluice/core';
 * const p = pipeline(plan, { input: 'train.parquet', backend: { name: 'fpga-sim', deployment: 'host', miniPipes: 4 } });
 * for await (const b of p) train(b);
 * console.log(p.metrics().backendSummary);
 */
import './register.js';
import { piperTable4Command } from './reproduce.js';

export { fpgaSimBackend, parseFpgaOptions, type FpgaSimBackend, type FpgaSimOptions, type FpgaSimTotals } from './backend.js';
export * from './model.js';
export { reproduceTable4, piperTable4Command, PIPER_D1_ROWS, PIPER_TABLE4_SECONDS, type Table4Row, type ReproduceOptions } from './reproduce.js';

/** The `sluice reproduce` targets this package provides. */
export const reproductions: Readonly<
  Record<string, (opts: { rows?: number; json?: boolean; onProgress?: (step: string) => void; tmpDir?: string }) => Promise<string>>
> = {
  'piper-table4': piperTable4Command,
};
