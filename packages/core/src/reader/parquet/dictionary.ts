/** Dictionary pages: read once per column chunk, into reused scratch memory. */
import { copyBytes, type Column, type PrimitiveType } from '@sluice/ops';
import { newArray, plainFixed, type Dict } from './values.js';

export type { Dict } from './values.js';

/**
 * Scratch for the current column chunk's dictionary: the page's bytes and its strings' starts and
 * lengths. A Dict lives for its chunk only (a derived column's `dictColumn` copies it out right
 * after), and chunks are decoded one at a time per thread, so the arrays are reused across chunks
 * rather than made per chunk, as garbage for the decode worker's GC.
 */
let dictPage = new Uint8Array(0);
let dictStarts = new Int32Array(0);
let dictLens = new Int32Array(0);

/** A copy of a decompressed dictionary page in the scratch, safe from the next page's decompression. */
export function keepDictPage(page: Uint8Array): Uint8Array {
  if (dictPage.length < page.length) dictPage = new Uint8Array(Math.max(page.length, 2 * dictPage.length));
  dictPage.set(page);
  return dictPage.subarray(0, page.length);
}

/** The `n` entries of a decompressed dictionary page (PLAIN-encoded); strings as ranges of the page. */
export function readDict(page: Uint8Array, type: PrimitiveType, n: number): Dict {
  if (type !== 'utf8') return { type, values: plainFixed(page, 0, type, n), starts: null, lens: null, data: null, size: n };
  if (dictStarts.length < n) {
    dictStarts = new Int32Array(Math.max(n, 2 * dictStarts.length));
    dictLens = new Int32Array(dictStarts.length);
  }
  const starts = dictStarts;
  const lens = dictLens;
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  let p = 0;
  for (let i = 0; i < n; i++) {
    if (p + 4 > page.length) throw new Error('dictionary page ends inside a string length');
    const len = view.getUint32(p, true);
    starts[i] = p + 4;
    lens[i] = len;
    p += 4 + len;
    if (p > page.length) throw new Error('dictionary string runs past the page');
  }
  return { type, values: null, starts, lens, data: page, size: n };
}

/** The dictionary as a column with one extra null slot at the end. */
export function dictColumn(d: Dict): Column {
  const n = d.size;
  const valid = new Uint8Array(n + 1).fill(1);
  valid[n] = 0;
  if (d.type !== 'utf8') {
    const values = newArray(d.type, n + 1);
    (values as Int32Array).set(d.values as Int32Array);
    return { type: d.type, values, valid } as Column;
  }
  const offsets = new Int32Array(n + 2);
  let total = 0;
  for (let i = 0; i < n; i++) total += d.lens![i]!;
  const data = new Uint8Array(total);
  const src = d.data!;
  let end = 0;
  for (let i = 0; i < n; i++) {
    offsets[i] = end;
    const s = d.starts![i]!;
    const len = d.lens![i]!;
    copyBytes(src, s, s + len, data, end);
    end += len;
  }
  offsets[n] = end;
  offsets[n + 1] = end;
  return { type: 'utf8', offsets, data, valid };
}
