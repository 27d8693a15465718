import type { Column, ColumnType } from '../column.js';
import { asInteger, asList, int64FromWords, wordsOf } from './elementwise.js';
import { hash128To64, mixLists } from './hash.js';
import { checkKeys, integerElement, numberParam } from './params.js';
import type { OpDef } from './types.js';

export interface NgramParams {
  readonly n: number;
}

/**
 * Hashes of every window of n consecutive ids of each list, given the lists' twang_mix64 values
 * (see mixLists): h = 0, then h = hash_128_to_64(h, mix(id)) over the window. Unbounded int64.
 * Each list of length len yields max(0, len − n + 1) hashes.
 */
export function ngramMixed(offsets: Int32Array, mixed: Uint32Array, n: number): { offsets: Int32Array; words: Uint32Array } {
  const rows = offsets.length - 1;
  const out = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) out[i + 1] = out[i]! + Math.max(0, offsets[i + 1]! - offsets[i]! - n + 1);
  const words = new Uint32Array(2 * out[rows]!);
  for (let i = 0, k = 0; i < rows; i++) {
    for (let s = offsets[i]!, last = offsets[i + 1]! - n; s <= last; s++, k += 2) {
      // words[k..k+1] starts at 0 (fresh array) and accumulates the fold in place.
      for (let j = s; j < s + n; j++) hash128To64(words[k]!, words[k + 1]!, mixed[2 * j]!, mixed[2 * j + 1]!, words, k);
    }
  }
  return { offsets: out, words };
}

/**
 * ngram {n >= 1}: integer list (a scalar is a list of one, a null a null list) → list<int64> of
 * hashed n-grams of consecutive ids, via the sigridHash combine chain (n = 1 equals sigridHash with
 * salt 0 before its modulo). Null elements are dropped before windows are formed; a null list
 * stays null.
 */
export const ngramOp: OpDef<NgramParams> = {
  name: 'ngram',
  input: 'integer list or scalar',
  stateful: false,
  validate(params) {
    checkKeys(params, ['n']);
    return { n: numberParam(params, 'n', { integer: true, min: 1, max: 0x7fffffff }) };
  },
  outputType(t: ColumnType) {
    integerElement(t);
    return { kind: 'list', child: 'int64' };
  },
  apply(input: Column, { n }) {
    const list = asList('ngram', input);
    const child = asInteger('ngram', list.child);
    const mixed = mixLists(list.offsets, wordsOf(child), child.valid);
    const r = ngramMixed(mixed.offsets, mixed.mixed, n);
    return { type: 'list', offsets: r.offsets, child: int64FromWords(r.words, null), valid: list.valid };
  },
};
