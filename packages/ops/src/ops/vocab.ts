import { int64ToNumber, int64Words, type Column, type ColumnType } from '../column.js';
import { asInteger, int64FromWords, mapElements, wordsOf } from './elementwise.js';
import { type Int64Value, bigToWords, int64Value, parseInt64, wordsToBig } from './int64.js';
import { Int64Index } from './int64map.js';
import { badColumn, checkKeys, int64Param, integerElement, numberParam, withElement } from './params.js';
import { OpPlanError, type StatefulOpDef } from './types.js';
import { show } from '../util/show.js';

export interface VocabParams {
  /** Id of unseen and rare keys. */
  readonly oov: Int64Value;
  /** Keys seen fewer times than this in the fit pass map to oov. */
  readonly minCount: number;
}

/** Fit-pass accumulator: every key seen, in order of first appearance, and its count. */
export interface VocabAccumulator {
  readonly index: Int64Index;
  counts: Float64Array;
}

/**
 * Fitted vocabulary: key k (in order of first appearance among kept keys) has id k + 1. Plain
 * typed arrays, so it can be structured-cloned to workers; lookups build an index on first use.
 */
export interface VocabState {
  readonly keys: BigInt64Array;
  readonly counts: Float64Array;
}

/** JSON form: keys as decimal strings, counts alongside. */
export interface VocabStateJSON {
  keys: string[];
  counts: number[];
}

/** Counts every non-null int64 (given as words) into the accumulator. */
export function vocabObserveWords(acc: VocabAccumulator, words: Uint32Array, valid: Uint8Array | null): void {
  for (let i = 0; i < words.length >>> 1; i++) {
    if (valid !== null && valid[i] === 0) continue;
    const id = acc.index.add(words[2 * i]!, words[2 * i + 1]!);
    if (id === acc.counts.length) {
      const grown = new Float64Array(acc.counts.length * 2);
      grown.set(acc.counts);
      acc.counts = grown;
    }
    acc.counts[id]!++;
  }
}

/** The state of an accumulator: keys with count >= minCount, keeping their order of first appearance. */
export function vocabFinish(acc: VocabAccumulator, minCount: number): VocabState {
  const all = acc.index.keys();
  let kept = 0;
  for (let e = 0; e < acc.index.size; e++) if (acc.counts[e]! >= minCount) kept++;
  const keys = new BigInt64Array(kept);
  const kw = int64Words(keys);
  const counts = new Float64Array(kept);
  for (let e = 0, k = 0; e < acc.index.size; e++) {
    if (acc.counts[e]! < minCount) continue;
    kw[2 * k] = all[2 * e]!;
    kw[2 * k + 1] = all[2 * e + 1]!;
    counts[k++] = acc.counts[e]!;
  }
  return { keys, counts };
}

/** out[i] = id of x[i] in the index plus one, or (oovLo, oovHi) when absent; nulls get 0. */
export function vocabMapWords(words: Uint32Array, valid: Uint8Array | null, index: Int64Index, oovLo: number, oovHi: number, out: Uint32Array): void {
  for (let i = 0; i < words.length >>> 1; i++) {
    if (valid !== null && valid[i] === 0) continue;
    const e = index.get(words[2 * i]!, words[2 * i + 1]!);
    out[2 * i] = e < 0 ? oovLo : e + 1;
    out[2 * i + 1] = e < 0 ? oovHi : 0;
  }
}

const indexes = new WeakMap<VocabState, Int64Index>();
function indexOf(s: VocabState): Int64Index {
  let ix = indexes.get(s);
  if (ix === undefined) indexes.set(s, (ix = Int64Index.from(int64Words(s.keys))));
  return ix;
}

function isVocabState(s: unknown): s is VocabState {
  return typeof s === 'object' && s !== null && (s as VocabState).keys instanceof BigInt64Array && (s as VocabState).counts instanceof Float64Array;
}

/**
 * vocab {oov = 0, minCount = 1} (PIPER VocabGen + VocabMap), stateful: `sluice fit` numbers the
 * keys 1, 2, … in order of first appearance, keeping only keys seen at least minCount times (the
 * kept keys are numbered densely, in their order of first appearance); `run` maps with that table.
 * Integer scalar or list → int64; unseen or rare → oov; null → null.
 */
export const vocabOp: StatefulOpDef<VocabParams, VocabAccumulator, VocabState> = {
  name: 'vocab',
  input: 'integer scalar or list',
  stateful: true,
  validate(params) {
    checkKeys(params, ['oov', 'minCount']);
    return {
      oov: int64Value(int64Param(params, 'oov', { default: 0n })),
      minCount: numberParam(params, 'minCount', { default: 1, integer: true, min: 1 }),
    };
  },
  outputType(t: ColumnType) {
    integerElement(t);
    return withElement(t, 'int64');
  },
  apply(input: Column, { oov }, ctx) {
    if (ctx.state === undefined) throw new OpPlanError('vocab has no fitted state; run `sluice fit` first');
    if (!isVocabState(ctx.state)) throw new TypeError('vocab: fitted state has the wrong shape');
    const index = indexOf(ctx.state);
    const [oovLo, oovHi] = bigToWords(BigInt(oov));
    return mapElements('vocab', input, (col) => {
      const c = asInteger('vocab', col);
      const out = new Uint32Array(c.values.length * 2);
      vocabMapWords(wordsOf(c), c.valid, index, oovLo, oovHi, out);
      return int64FromWords(out, c.valid);
    });
  },
  createAccumulator() {
    return { index: new Int64Index(1024), counts: new Float64Array(1024) };
  },
  observe(acc, input) {
    if (input.type === 'fixed') throw badColumn('vocab', input.type);
    // A list's keys are its child's non-null elements; null lists have none.
    const c = asInteger('vocab', input.type === 'list' ? input.child : input);
    vocabObserveWords(acc, wordsOf(c), c.valid);
  },
  finish(acc, { minCount }) {
    return vocabFinish(acc, minCount);
  },
  stateToJSON(state): VocabStateJSON {
    const w = int64Words(state.keys);
    const keys = new Array<string>(state.keys.length);
    for (let k = 0; k < keys.length; k++) {
      const v = int64ToNumber(w[2 * k]!, w[2 * k + 1]!);
      keys[k] = Number.isSafeInteger(v) ? String(v) : wordsToBig(w[2 * k]!, w[2 * k + 1]!).toString();
    }
    return { keys, counts: Array.from(state.counts) };
  },
  stateFromJSON(json) {
    const j = json as Partial<VocabStateJSON> | null;
    if (typeof j !== 'object' || j === null || !Array.isArray(j.keys) || !Array.isArray(j.counts)) {
      throw new Error('vocab state must be {"keys": [...], "counts": [...]}');
    }
    if (j.keys.length !== j.counts.length) throw new Error(`vocab state has ${j.keys.length} keys but ${j.counts.length} counts`);
    const keys = new BigInt64Array(j.keys.length);
    const kw = int64Words(keys);
    const counts = new Float64Array(j.counts.length);
    const seen = new Int64Index(j.keys.length);
    j.keys.forEach((s: unknown, k) => {
      const b = parseInt64(s);
      if (b === undefined) throw new Error(`vocab state keys[${k}] is not an int64 decimal string: ${JSON.stringify(s)}`);
      const [lo, hi] = bigToWords(b);
      if (seen.add(lo, hi) !== k) throw new Error(`vocab state repeats key ${b}`);
      kw[2 * k] = lo;
      kw[2 * k + 1] = hi;
      const c = j.counts![k];
      if (!Number.isSafeInteger(c) || (c as number) < 1) throw new Error(`vocab state counts[${k}] must be a positive integer, got ${show(c)}`);
      counts[k] = c as number;
    });
    const state = { keys, counts };
    indexes.set(state, seen);
    return state;
  },
};
