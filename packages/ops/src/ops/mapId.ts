import type { Column, ColumnType } from '../column.js';
import { asInteger, int64FromWords, mapElements, wordsOf } from './elementwise.js';
import { type Int64Value, bigToWords, int64Value, parseInt64 } from './int64.js';
import { Int64Index } from './int64map.js';
import { checkKeys, int64Param, integerElement, withElement } from './params.js';
import { type OpDef, OpPlanError } from './types.js';
import { show } from '../util/show.js';

export interface MapIdParams {
  /** [from, to] pairs with distinct `from`s, in the order given. */
  readonly mapping: ReadonlyArray<readonly [Int64Value, Int64Value]>;
  readonly default: Int64Value;
}

/** A built mapping: the index of the `from` ids and the `to` words per index id. */
export interface MapIdTable {
  readonly index: Int64Index;
  readonly to: Uint32Array;
}

/** Builds the lookup table of a mapping (once per params object, see tableOf). */
export function mapIdTable(mapping: MapIdParams['mapping']): MapIdTable {
  const from = new Uint32Array(2 * mapping.length);
  const to = new Uint32Array(2 * mapping.length);
  mapping.forEach(([f, t], k) => {
    from.set(bigToWords(BigInt(f)), 2 * k);
    to.set(bigToWords(BigInt(t)), 2 * k);
  });
  return { index: Int64Index.from(from), to };
}

/** out[i] = mapped id of x[i], or (defLo, defHi) when unmapped; nulls get 0. */
export function mapIdWords(words: Uint32Array, valid: Uint8Array | null, table: MapIdTable, defLo: number, defHi: number, out: Uint32Array): void {
  const { index, to } = table;
  for (let i = 0; i < words.length >>> 1; i++) {
    if (valid !== null && valid[i] === 0) continue;
    const e = index.get(words[2 * i]!, words[2 * i + 1]!);
    out[2 * i] = e < 0 ? defLo : to[2 * e]!;
    out[2 * i + 1] = e < 0 ? defHi : to[2 * e + 1]!;
  }
}

// Params stay plain JSON (they may be cloned to workers); each params object builds its table once.
const tables = new WeakMap<MapIdParams, MapIdTable>();
function tableOf(p: MapIdParams): MapIdTable {
  let t = tables.get(p);
  if (t === undefined) tables.set(p, (t = mapIdTable(p.mapping)));
  return t;
}

function id(v: unknown, what: string): Int64Value {
  const b = parseInt64(v);
  if (b === undefined) throw new OpPlanError(`"mapping" ${what} must be an int64 (safe integer or decimal string), got ${show(v)}`);
  return int64Value(b);
}

/**
 * mapId {mapping, default = 0}: integer scalar or list → int64; ids found in `mapping` are replaced,
 * others become `default`; nulls stay null. `mapping` is an object {"from": to} or a list of
 * [from, to] pairs; ids are numbers or decimal strings. A repeated `from` is rejected.
 */
export const mapIdOp: OpDef<MapIdParams> = {
  name: 'mapId',
  input: 'integer scalar or list',
  stateful: false,
  validate(params) {
    checkKeys(params, ['mapping', 'default']);
    const raw = params.mapping;
    if (raw === undefined) throw new OpPlanError('missing required param "mapping"');
    let pairs: Array<[unknown, unknown]>;
    if (Array.isArray(raw)) {
      pairs = raw.map((p: unknown, k) => {
        if (!Array.isArray(p) || p.length !== 2) throw new OpPlanError(`"mapping"[${k}] must be a [from, to] pair, got ${show(p)}`);
        return [p[0], p[1]];
      });
    } else if (typeof raw === 'object' && raw !== null) {
      pairs = Object.entries(raw);
    } else {
      throw new OpPlanError(`"mapping" must be an object {"from": to} or a list of [from, to] pairs, got ${show(raw)}`);
    }
    const seen = new Set<bigint>();
    const mapping = pairs.map(([f, t]): [Int64Value, Int64Value] => {
      const from = id(f, 'key');
      const b = BigInt(from);
      if (seen.has(b)) throw new OpPlanError(`"mapping" maps ${from} more than once`);
      seen.add(b);
      return [from, id(t, `value for ${from}`)];
    });
    return { mapping, default: int64Value(int64Param(params, 'default', { default: 0n })) };
  },
  outputType(t: ColumnType) {
    integerElement(t);
    return withElement(t, 'int64');
  },
  apply(input: Column, params) {
    const table = tableOf(params);
    const [defLo, defHi] = bigToWords(BigInt(params.default));
    return mapElements('mapId', input, (col) => {
      const c = asInteger('mapId', col);
      const out = new Uint32Array(c.values.length * 2);
      mapIdWords(wordsOf(c), c.valid, table, defLo, defHi, out);
      return int64FromWords(out, c.valid);
    });
  },
};
