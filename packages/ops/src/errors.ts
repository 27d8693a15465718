/**
 * Errors a user sees. Each names what and where (file, row group, row, feature, op) so the CLI
 * can print one clear line; `cause` keeps the underlying error for --debug.
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

/** Base class of every error Sluice raises on purpose. */
export class SluiceError extends Error {
  override name = 'SluiceError';
  constructor(message: string, readonly where: ErrorWhere = {}, options?: { cause?: unknown }) {
    super(formatWhere(where) + message, options);
  }
}

/** A plan that cannot run: unknown op, missing column, wrong type, bad parameter. */
export class PlanError extends SluiceError {
  override name = 'PlanError';
}

/** Unreadable, truncated or corrupt input. */
export class InputError extends SluiceError {
  override name = 'InputError';
}

/** Bad data met while running an op (invalid hex, boxCox of a non-positive value). */
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
