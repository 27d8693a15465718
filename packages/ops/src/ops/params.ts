/**
 * Parameter validation and input type checks shared by the ops. Every failure is an OpPlanError
 * whose message is the reason alone, naming the param or the expected and actual type.
 */

import { isIntegerType, typeName, type ColumnType, type NumericType, type PrimitiveType } from '../column.js';
import { parseInt64 } from './int64.js';
import { OpPlanError } from './types.js';
import { show } from '../util/show.js';

type Params = Record<string, unknown>;

/** Rejects params other than `allowed` (the plan loader strips `op`; a stray `op` is tolerated). */
export function checkKeys(params: Params, allowed: readonly string[]): void {
  for (const k of Object.keys(params)) {
    if (k === 'op' || allowed.includes(k)) continue;
    const known = allowed.length === 0 ? 'it takes no params' : `expected ${allowed.map((a) => `"${a}"`).join(', ')}`;
    throw new OpPlanError(`unknown param "${k}" (${known})`);
  }
}

interface NumberRule {
  /** Value when the param is absent; without it the param is required. */
  default?: number;
  integer?: boolean;
  min?: number;
  max?: number;
  /** Exclusive bounds. */
  above?: number;
  below?: number;
}

/** A finite number param, checked against `rule`. */
export function numberParam(params: Params, name: string, rule: NumberRule = {}): number {
  const v = params[name];
  if (v === undefined) {
    if (rule.default !== undefined) return rule.default;
    throw new OpPlanError(`missing required param "${name}"`);
  }
  const kind = rule.integer ? 'an integer' : 'a finite number';
  if (typeof v !== 'number' || !Number.isFinite(v) || (rule.integer && !Number.isSafeInteger(v))) {
    throw new OpPlanError(`"${name}" must be ${kind}, got ${show(v)}`);
  }
  if (rule.min !== undefined && v < rule.min) throw new OpPlanError(`"${name}" must be >= ${rule.min}, got ${v}`);
  if (rule.max !== undefined && v > rule.max) throw new OpPlanError(`"${name}" must be <= ${rule.max}, got ${v}`);
  if (rule.above !== undefined && !(v > rule.above)) throw new OpPlanError(`"${name}" must be > ${rule.above}, got ${v}`);
  if (rule.below !== undefined && !(v < rule.below)) throw new OpPlanError(`"${name}" must be < ${rule.below}, got ${v}`);
  return v;
}

/** A boolean param. */
export function boolParam(params: Params, name: string, dflt: boolean): boolean {
  const v = params[name];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new OpPlanError(`"${name}" must be true or false, got ${show(v)}`);
  return v;
}

/** An int64 param given as a safe-integer number or a decimal string; `min` is inclusive. */
export function int64Param(params: Params, name: string, opts: { default?: bigint; min?: bigint } = {}): bigint {
  const v = params[name];
  if (v === undefined) {
    if (opts.default !== undefined) return opts.default;
    throw new OpPlanError(`missing required param "${name}"`);
  }
  const b = parseInt64(v);
  if (b === undefined) {
    throw new OpPlanError(`"${name}" must be an int64: a safe integer or a decimal string (beyond 2^53), got ${show(v)}`);
  }
  if (opts.min !== undefined && b < opts.min) throw new OpPlanError(`"${name}" must be >= ${opts.min}, got ${show(v)}`);
  return b;
}

// ---- input types ----------------------------------------------------------------------------

/** The hint that fixes a wrong input type, if there is an obvious one. */
function hint(el: string, want: 'numeric' | 'integer'): string {
  if (el === 'utf8') return '; add {"op":"hex2int"} first';
  if (want === 'integer' && (el === 'float32' || el === 'float64')) return '; add {"op":"cast","to":"int64"} first';
  return '';
}

/** The element type of a numeric scalar or list type, or an OpPlanError naming both types. */
export function numericElement(t: ColumnType): NumericType {
  const el = t.kind === 'list' ? t.child : t.kind;
  if (el === 'fixed' || el === 'utf8') {
    throw new OpPlanError(`needs a numeric scalar or list input, got ${typeName(t)}${hint(el, 'numeric')}`);
  }
  return el;
}

/** The element type of an integer scalar or list type, or an OpPlanError naming both types. */
export function integerElement(t: ColumnType): 'int32' | 'int64' {
  const el = t.kind === 'list' ? t.child : t.kind;
  if (el === 'fixed' || !isIntegerType(el)) {
    throw new OpPlanError(`needs an integer scalar or list input, got ${typeName(t)}${hint(el, 'integer')}`);
  }
  return el;
}

/** The same shape as `t` (scalar or list) with element type `el`. */
export const withElement = (t: ColumnType, el: PrimitiveType): ColumnType => (t.kind === 'list' ? { kind: 'list', child: el } : { kind: el });

/** Thrown by `apply` when handed a column its type rule would have rejected (an executor bug). */
export function badColumn(op: string, type: string): Error {
  return new TypeError(`${op}: unexpected input column of type ${type}`);
}
