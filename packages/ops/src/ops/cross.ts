import type { Column, ColumnType } from '../column.js';
import { asInteger, asList, int64FromWords, wordsOf } from './elementwise.js';
import { hash128To64, mixLists } from './hash.js';
import { FloorMod64, type Int64Value, int64Value } from './int64.js';
import { checkKeys, int64Param, integerElement } from './params.js';
import { type OpDef, OpPlanError } from './types.js';
import { show } from '../util/show.js';

export interface CrossParams {
  /** Features whose output columns are crossed with this op's input, in operand order. */
  readonly inputs: readonly string[];
  readonly max: Int64Value;
}

/** Lists of ids in mixed form: offsets from 0 and twang_mix64 words per element (see mixLists). */
export interface MixedLists {
  readonly offsets: Int32Array;
  readonly mixed: Uint32Array;
}

/**
 * Feature cross of several operands with the same row count: per row, every tuple of the Cartesian
 * product of the operands' lists in row-major order (first operand slowest), hashed by the combine
 * chain from h = 0, then floor-mod max. Prefix hashes are shared: level k hashes each prefix with
 * each element of operand k, so a tuple costs one hash_128_to_64 per operand at most.
 */
export function crossMixed(operands: readonly MixedLists[], max: bigint): { offsets: Int32Array; words: Uint32Array } {
  const rows = operands[0]!.offsets.length - 1;
  const out = new Int32Array(rows + 1);
  let widest = 1;
  for (let i = 0; i < rows; i++) {
    let p = 1;
    for (const o of operands) p *= o.offsets[i + 1]! - o.offsets[i]!;
    if (out[i]! + p > 0x7fffffff) throw new RangeError('cross: output has more than 2^31 - 1 elements in one chunk');
    out[i + 1] = out[i]! + p;
    if (p > widest) widest = p;
  }
  const words = new Uint32Array(2 * out[rows]!);
  const mod = new FloorMod64(max);
  // Two scratch levels of prefix hashes, ping-ponged; a row's last level goes straight to `words`.
  let cur = new Uint32Array(2 * widest);
  let next = new Uint32Array(2 * widest);
  const last = operands.length - 1;
  for (let i = 0; i < rows; i++) {
    if (out[i + 1] === out[i]) continue;
    cur[0] = 0;
    cur[1] = 0;
    let count = 1;
    for (let k = 0; k <= last; k++) {
      const { offsets, mixed } = operands[k]!;
      const start = offsets[i]!;
      const end = offsets[i + 1]!;
      const dst = k === last ? words : next;
      let t = k === last ? 2 * out[i]! : 0;
      for (let p = 0; p < 2 * count; p += 2) {
        for (let e = start; e < end; e++, t += 2) hash128To64(cur[p]!, cur[p + 1]!, mixed[2 * e]!, mixed[2 * e + 1]!, dst, t);
      }
      count *= end - start;
      [cur, next] = [next, cur];
    }
    for (let t = 2 * out[i]!; t < 2 * out[i + 1]!; t += 2) mod.apply(words[t]!, words[t + 1]!, words, t);
  }
  return { offsets: out, words };
}

function operandType(name: string, t: ColumnType | undefined): void {
  if (t === undefined) throw new OpPlanError(`"inputs" names "${name}", which is not a feature defined before this one`);
  try {
    integerElement(t);
  } catch (e) {
    if (e instanceof OpPlanError) throw new OpPlanError(`"inputs" feature "${name}" ${e.message}`);
    throw e;
  }
}

/**
 * cross {inputs, max}: crosses this op's input with the outputs of the named features (defined
 * earlier in the plan; integer scalars or lists). A scalar is a list of one; a null, and a null
 * element, count as nothing, so a row where any operand is empty crosses to an empty list. Output:
 * list<int64> in [0, max), never null.
 */
export const crossOp: OpDef<CrossParams> = {
  name: 'cross',
  input: 'integer list or scalar',
  stateful: false,
  validate(params) {
    checkKeys(params, ['inputs', 'max']);
    const inputs = params.inputs;
    if (inputs === undefined) throw new OpPlanError('missing required param "inputs"');
    if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((s) => typeof s === 'string' && s !== '')) {
      throw new OpPlanError(`"inputs" must be a non-empty list of feature names, got ${show(inputs)}`);
    }
    return { inputs: [...(inputs as string[])], max: int64Value(int64Param(params, 'max', { min: 1n })) };
  },
  outputType(t: ColumnType, { inputs }, ctx) {
    integerElement(t);
    for (const name of inputs) operandType(name, ctx.featureTypes.get(name));
    return { kind: 'list', child: 'int64' };
  },
  apply(input: Column, { inputs, max }, ctx) {
    const cols = [
      input,
      ...inputs.map((name) => {
        const c = ctx.features.get(name);
        if (c === undefined) throw new Error(`cross: feature "${name}" has not been computed`);
        return c;
      }),
    ];
    const operands = cols.map((c) => {
      const list = asList('cross', c);
      const child = asInteger('cross', list.child);
      return mixLists(list.offsets, wordsOf(child), child.valid);
    });
    const rows = operands[0]!.offsets.length;
    if (operands.some((o) => o.offsets.length !== rows)) throw new Error('cross: operands have different row counts');
    const r = crossMixed(operands, BigInt(max));
    return { type: 'list', offsets: r.offsets, child: int64FromWords(r.words, null), valid: null };
  },
};
