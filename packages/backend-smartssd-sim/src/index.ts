/**
 * @sluice/backend-smartssd-sim — importing it registers `smartssd-sim`: a PreSto-style SmartSSD
 * that computes real outputs with core's kernels and models P2P, decode, unit and network time,
 * plus provisioning, energy and TCO against the disaggregated CPU baseline.
 *
 * @example
 * import '@sluice/backend-smartssd-sim';
 * import { pipeline } from '@sluice/core';
 * const p = pipeline(plan, { input: 'train.parquet', backend: { name: 'smartssd-sim', networkGbps: 25 } });
 * for await (const b of p) train(b);
 * console.log(p.metrics().backendSummary);
 */
import './register.js';
import { prestoCommand } from './reproduce.js';

export {
  smartSsdSimBackend,
  parseSmartSsdOptions,
  provisionFromTotals,
  disaggPerCoreSeconds,
  type SmartSsdSimBackend,
  type SmartSsdSimOptions,
  type SmartSsdTotals,
} from './backend.js';
export * from './model.js';
export { reproducePresto, prestoCommand, PRESTO_PAPER, type PrestoRow, type PrestoOptions } from './reproduce.js';

/** The `sluice reproduce` targets this package provides. */
export const reproductions: Readonly<
  Record<string, (opts: { rows?: number; json?: boolean; onProgress?: (step: string) => void; tmpDir?: string }) => Promise<string>>
> = {
  presto: prestoCommand,
};
