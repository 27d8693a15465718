/**
 * Errors a user sees. Each names what and where (file, row group, row, feature, op) so the CLI
 * can print one clear line; `cause` keeps the underlying error for --debug.
 */

/**
 * Where an error happened; each field set is printed before the message ("file a.parquet, row 12: …").
 *
 * @example
 * throw new DataError('invalid hex "zz"', { file: 'train.parquet', row: 12, feature: 'C1', op: 'hex2int' });
 */
export interface ErrorWhere {
  file?: string;
  rowGroup?: number;
  /** Row within the file (0-based). */
  row?: number;
  column?: string;
  feature?: string;
  op?: string;
}

/**
 * Base class of every error Sluice raises on purpose: its message names what went wrong and where.
 *
 * @example
 * try { for await (const b of pipeline('plan.json', { input: 'x.parquet' })) use(b); }
 * catch (e) { if (e instanceof SluiceError) console.error(e.message, e.where); else throw e; }
 */
export class SluiceError extends Error {
  override name = 'SluiceError';
  constructor(
    message: string,
    readonly where: ErrorWhere = {},
    options?: { cause?: unknown },
  ) {
    super(formatWhere(where) + message, options);
  }
}

/**
 * A plan that cannot run: unknown op, missing column, wrong type, bad parameter.
 *
 * @example
 * loadPlan({ features: [{ name: 'x', input: 'x', kind: 'dense', ops: [{ op: 'nope' }] }] }); // throws PlanError
 */
export class PlanError extends SluiceError {
  override name = 'PlanError';
}

/**
 * Unreadable, truncated or corrupt input.
 *
 * @example
 * try { await fit('plan.json', 'truncated.parquet'); } catch (e) { if (e instanceof InputError) console.error(e.where.file); }
 */
export class InputError extends SluiceError {
  override name = 'InputError';
}

/**
 * Bad data met while running an op (invalid hex, boxCox of a non-positive value).
 *
 * @example
 * try { for await (const b of p) use(b); } catch (e) { if (e instanceof DataError) console.error(e.where.row, e.where.op); }
 */
export class DataError extends SluiceError {
  override name = 'DataError';
}

function formatWhere(w: ErrorWhere): string {
  const parts: string[] = [];
  if (w.file !== undefined) parts.push(`file ${w.file}`);
  if (w.rowGroup !== undefined) parts.push(`row group ${w.rowGroup}`);
  if (w.row !== undefined) parts.push(`row ${w.row}`);
  if (w.column !== undefined) parts.push(`column ${w.column}`);
  if (w.feature !== undefined) parts.push(`feature ${w.feature}`);
  if (w.op !== undefined) parts.push(`op ${w.op}`);
  return parts.length ? parts.join(', ') + ': ' : '';
}
