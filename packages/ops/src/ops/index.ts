/**
 * The operator registry (OPS.md) and the reference kernels. Every backend must match these.
 * `OPS` maps an op name, as written in a plan, to its definition.
 */

import { boxCoxOp } from './boxCox.js';
import { bucketizeOp } from './bucketize.js';
import { castOp } from './cast.js';
import { clampOp } from './clamp.js';
import { crossOp } from './cross.js';
import { fillNullOp } from './fillNull.js';
import { firstXOp } from './firstX.js';
import { hex2intOp } from './hex2int.js';
import { logOp } from './log.js';
import { logitOp } from './logit.js';
import { mapIdOp } from './mapId.js';
import { modulusOp } from './modulus.js';
import { neg2zeroOp } from './neg2zero.js';
import { ngramOp } from './ngram.js';
import { oneHotOp } from './oneHot.js';
import { sigridHashOp } from './sigridHash.js';
import type { OpDef, StatefulOpDef } from './types.js';
import { vocabOp } from './vocab.js';

const ALL: readonly OpDef[] = [
  fillNullOp,
  castOp,
  neg2zeroOp,
  clampOp,
  logOp,
  logitOp,
  boxCoxOp,
  oneHotOp,
  bucketizeOp,
  sigridHashOp,
  firstXOp,
  ngramOp,
  crossOp,
  mapIdOp,
  hex2intOp,
  modulusOp,
  vocabOp,
];

/** Every op by its plan name. */
export const OPS: ReadonlyMap<string, OpDef> = new Map(ALL.map((d) => [d.name, d]));

/** Narrows an op definition to a stateful one (fit pass and state (de)serialization). */
export const isStatefulOp = (d: OpDef): d is StatefulOpDef<unknown, unknown, unknown> => d.stateful;

export * from './types.js';
export * from './boxCox.js';
export * from './bucketize.js';
export * from './cast.js';
export * from './clamp.js';
export * from './cross.js';
export * from './fillNull.js';
export * from './firstX.js';
export * from './hex2int.js';
export * from './log.js';
export * from './logit.js';
export * from './mapId.js';
export * from './modulus.js';
export * from './neg2zero.js';
export * from './ngram.js';
export * from './oneHot.js';
export * from './sigridHash.js';
export * from './vocab.js';
export { twangMix64, hash128To64, sigridHashWords, sigridHash, mixLists } from './hash.js';
export { FloorMod64, type Int64Value, parseInt64, int64Value, bigToWords, wordsToBig, widenInt32, cmp64 } from './int64.js';
export { Int64Index } from './int64map.js';
export { mapElements, listRowOf, asList, type NumberArray } from './elementwise.js';
