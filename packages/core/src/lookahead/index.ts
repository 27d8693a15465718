/**
 * `@sluice/core/lookahead`: the BAGPIPE-style lookahead embedding cache and the stream operator that feeds it hints.
 *
 * @example
 * import { lookahead } from '@sluice/core/lookahead';
 * batches$.pipe(lookahead({ window: 200 })).subscribe(({ batch, hints }) => train(batch, hints));
 */
export { LookaheadCache, LookaheadSummary, type CacheBudget, type IdArray, type LookaheadOptions, type StepHints, type TableHints } from './cache.js';
export { lookahead, lookaheadBy, batchIds, type HintedBatch, type LookaheadOperatorOptions } from './operator.js';
