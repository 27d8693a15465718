import { describe, expect, it } from 'vitest';
import type { Column } from '../src/column.js';
import { OPS } from '../src/ops/index.js';
import { OpPlanError } from '../src/ops/types.js';
import { type VocabAccumulator, type VocabParams, type VocabState, vocabOp } from '../src/ops/vocab.js';
import { EXTREME_I64, type Row, col, ctx, list, randLists, randScalars, rng, rows, run } from './helpers.js';

function fit(params: Record<string, unknown>, chunks: Column[]): { p: VocabParams; state: VocabState } {
  const p = vocabOp.validate(params);
  const acc: VocabAccumulator = vocabOp.createAccumulator(p);
  for (const c of chunks) vocabOp.observe(acc, c, p);
  return { p, state: vocabOp.finish(acc, p) };
}

/** The obvious vocab: counts in a Map (insertion order = first appearance), then dense ids. */
function refVocab(values: Row[], minCount: number): Map<bigint, bigint> {
  const counts = new Map<bigint, number>();
  for (const v of values.flat()) if (v !== null) counts.set(BigInt(v as number | bigint), (counts.get(BigInt(v as number | bigint)) ?? 0) + 1);
  const ids = new Map<bigint, bigint>();
  for (const [k, c] of counts) if (c >= minCount) ids.set(k, BigInt(ids.size + 1));
  return ids;
}

describe('vocab', () => {
  it('is registered as stateful', () => {
    expect(OPS.get('vocab')).toBe(vocabOp);
    expect(vocabOp.stateful).toBe(true);
  });

  it('numbers keys by first appearance; rare and unseen → oov; null → null', () => {
    const { state } = fit({ minCount: 2 }, [col('int64', [5, 7, 5, null, 9]), list('int32', [[7, 9, 3], null, [11]])]);
    expect(Array.from(state.keys)).toEqual([5n, 7n, 9n]);
    expect(Array.from(state.counts)).toEqual([2, 2, 2]);
    const out = run('vocab', { minCount: 2, oov: -1 }, col('int32', [9, 5, 3, null, 7, 100]), ctx({ state }));
    expect(rows(out)).toEqual([3n, 1n, -1n, null, 2n, -1n]);
  });

  it('matches the obvious implementation over random chunks', () => {
    const r = rng(40);
    for (const minCount of [1, 2, 3]) {
      const chunks: Column[] = [];
      const seen: Row[] = [];
      for (let k = 0; k < 6; k++) {
        const t = r.pick(['int32', 'int64'] as const);
        // Small ranges so keys repeat; extremes so the int64 table sees both words.
        const xs = randScalars(r, t, 200).map((x) => (x === null ? null : r.chance(0.7) ? BigInt(r.int(60)) : t === 'int64' ? r.pick(EXTREME_I64) : x));
        const data = xs.map((x) => (x === null ? null : t === 'int32' ? Number(BigInt.asIntN(32, BigInt(x))) : x));
        if (r.chance(0.5)) {
          chunks.push(col(t, data));
          seen.push(...data);
        } else {
          const ls = randLists(r, t, 40).map((l) => l && l.map((x) => (x === null ? null : t === 'int32' ? r.int(60) : BigInt(r.int(60)))));
          chunks.push(list(t, ls));
          seen.push(...ls.filter((l) => l !== null));
        }
      }
      const { state } = fit({ minCount }, chunks);
      const ref = refVocab(seen, minCount);
      expect(Array.from(state.keys)).toEqual([...ref.keys()]);
      for (const c of chunks) {
        const out = run('vocab', { minCount, oov: 0 }, c, ctx({ state }));
        const exp = rows(c).map((v) =>
          v === null ? null : Array.isArray(v) ? v.map((x) => (x === null ? null : (ref.get(BigInt(x)) ?? 0n))) : (ref.get(BigInt(v)) ?? 0n),
        );
        expect(rows(out)).toEqual(exp);
      }
    }
  });

  it('JSON round trip (keys beyond 2^53 stay exact)', () => {
    const { state } = fit({}, [col('int64', [-(2n ** 63n), 2n ** 63n - 1n, 3n, 2n ** 53n + 1n, 3n])]);
    const json = vocabOp.stateToJSON(state);
    expect(json).toEqual({ keys: ['-9223372036854775808', '9223372036854775807', '3', '9007199254740993'], counts: [1, 1, 2, 1] });
    const back = vocabOp.stateFromJSON(JSON.parse(JSON.stringify(json)));
    expect(Array.from(back.keys)).toEqual(Array.from(state.keys));
    expect(Array.from(back.counts)).toEqual(Array.from(state.counts));
    expect(rows(run('vocab', {}, col('int64', [3n, 2n ** 53n + 1n, 4n]), ctx({ state: back })))).toEqual([3n, 4n, 0n]);
    // A structured clone (what a worker receives) still works.
    expect(rows(run('vocab', {}, col('int64', [3n]), ctx({ state: structuredClone(state) })))).toEqual([3n]);
  });

  it('stateFromJSON validates', () => {
    expect(() => vocabOp.stateFromJSON(null)).toThrow('vocab state must be');
    expect(() => vocabOp.stateFromJSON({ keys: ['1'], counts: [] })).toThrow('1 keys but 0 counts');
    expect(() => vocabOp.stateFromJSON({ keys: ['x'], counts: [1] })).toThrow('keys[0] is not an int64');
    expect(() => vocabOp.stateFromJSON({ keys: ['9223372036854775808'], counts: [1] })).toThrow('keys[0]');
    expect(() => vocabOp.stateFromJSON({ keys: ['1', '1'], counts: [1, 1] })).toThrow('repeats key 1');
    expect(() => vocabOp.stateFromJSON({ keys: ['1'], counts: [0] })).toThrow('counts[0] must be a positive integer');
  });

  it('apply without fitted state is a plan error', () => {
    const p = vocabOp.validate({});
    expect(() => vocabOp.apply(col('int64', [1]), p, ctx())).toThrow(OpPlanError);
    expect(() => vocabOp.apply(col('int64', [1]), p, ctx())).toThrow('vocab has no fitted state; run `sluice fit` first');
  });
});
