/**
 * Where the next row comes from: epoch, window (a run of row groups in this epoch's order), and
 * row offset within the window. This is all a resumed run needs besides the plan and the files.
 *
 * @example
 * for await (const b of pipeline('plan.json', { input: 'train.parquet' })) {
 *   const next: Cursor = b.end; // where the row after this batch is
 *   console.log(`epoch ${next.epoch}, window ${next.window}, offset ${next.offset}`);
 * }
 */
export interface Cursor {
  readonly epoch: number;
  readonly window: number;
  readonly offset: number;
}

/** The cursor of a run's first row. */
export const START: Cursor = { epoch: 0, window: 0, offset: 0 };
