import type { Column, Utf8Column } from '@sluice/core/internal';
import { utf8FromStrings } from '@sluice/core/internal';
import { beforeAll, expect, it } from 'vitest';
import { tuning } from '../../src/kernels/shared.js';
import { OpDataError, Rand, checkOp, describeFast, errorsOf, listOf } from './helpers.js';

beforeAll(() => {
  tuning.minElements = 0;
  tuning.minElementsCheap = 0;
});

const HEX = '0123456789abcdefABCDEF';

/** Random valid hex strings of 1 to 16 digits, some null or empty. */
function hexStrings(n: number, r: Rand): (string | null)[] {
  return Array.from({ length: n }, () => {
    const k = r.next();
    if (k < 0.05) return null;
    if (k < 0.08) return '';
    const len = r.next() < 0.6 ? 8 : 1 + r.int(16);
    let s = '';
    for (let j = 0; j < len; j++) s += HEX[r.int(HEX.length)];
    return s;
  });
}

/** The same strings, placed at a nonzero offset inside a larger data buffer (offsets[0] != 0). */
function shifted(c: Utf8Column): Utf8Column {
  const pad = 37;
  const data = new Uint8Array(c.data.length + pad + 5).fill(0x7a);
  data.set(c.data, pad);
  return { type: 'utf8', offsets: c.offsets.map((o) => o + pad), data, valid: c.valid };
}

describeFast('fast hex2int matches the reference bit for bit', () => {
  it('1 to 16 digits, either case, 16-digit wrap to negative, nulls and empty strings', () => {
    const r = new Rand(31);
    const edges = [
      '0',
      'f',
      'F',
      '7fffffffffffffff',
      '8000000000000000',
      'ffffffffffffffff',
      'FFFFFFFFFFFFFFFF',
      '0000000000000000',
      '00000000000000001',
      'deadBEEF',
      '1',
      '10',
      '123456789abcdef0',
    ];
    const fixed = utf8FromStrings([...edges.filter((s) => s.length <= 16), null, '', 'a']);
    expect(checkOp('hex2int', fixed, {})).toBe(true);
    for (const n of [0, 1, 5, 64, 1000, 16384, 16385, 40000]) {
      const c = utf8FromStrings(hexStrings(n, r));
      expect(checkOp('hex2int', c, {})).toBe(true);
      expect(checkOp('hex2int', shifted(c), {})).toBe(true);
    }
    const noNulls = utf8FromStrings(Array.from({ length: 5000 }, (_, i) => i.toString(16)));
    expect(checkOp('hex2int', noNulls, {})).toBe(true);
    expect(checkOp('hex2int', listOf(utf8FromStrings(hexStrings(30000, r)), r), {})).toBe(true);
  });

  it('invalid input throws the reference OpDataError (same message and row), scalars and lists', () => {
    const r = new Rand(32);
    for (const bad of ['g', '0x12', '12 ', ' 12', '-1', '+1', '12345678901234567', 'é', '1.5', '\u0000', 'G', '/', ':', '@', '`']) {
      for (const at of [0, 3, 999, 16384, 20000]) {
        const strings = hexStrings(20001, r);
        strings[at] = bad;
        const inputs: Column[] = [utf8FromStrings(strings)];
        inputs.push(listOf(inputs[0] as Utf8Column, r));
        for (const input of inputs) {
          const [got, want] = errorsOf('hex2int', input);
          expect(want).toBeInstanceOf(OpDataError);
          expect(got).toBeInstanceOf(OpDataError);
          expect((got as OpDataError).message).toBe((want as OpDataError).message);
          expect((got as OpDataError).row).toBe((want as OpDataError).row);
        }
      }
    }
  });

  it('every byte value in every digit position is classified like the reference', () => {
    const strings: string[] = [];
    const data: number[] = [];
    const offsets = [0];
    for (let b = 0; b < 256; b++) {
      for (const len of [1, 8, 16]) {
        for (let pos = 0; pos < len; pos += 3) {
          for (let j = 0; j < len; j++) data.push(j === pos ? b : 0x30 + (j % 10));
          offsets.push(data.length);
          strings.push('');
        }
      }
    }
    const all: Utf8Column = { type: 'utf8', offsets: Int32Array.from(offsets), data: Uint8Array.from(data), valid: null };
    // Row by row: each row alone either parses identically or throws the same error.
    for (let i = 0; i < offsets.length - 1; i++) {
      const one: Utf8Column = { type: 'utf8', offsets: all.offsets.subarray(i, i + 2), data: all.data, valid: null };
      const [got, want] = errorsOf('hex2int', one);
      if (want === undefined) expect(checkOp('hex2int', one, {})).toBe(true);
      else expect((got as OpDataError).message).toBe((want as OpDataError).message);
    }
  });

  it('long strings in null rows are not errors (the reference decides; no huge scratch)', () => {
    const r = new Rand(33);
    const strings = hexStrings(3000, r);
    strings[10] = 'x'.repeat(100_000);
    strings[2000] = '0123456789abcdef0';
    const c = utf8FromStrings(strings);
    const valid = new Uint8Array(3000).fill(1);
    valid[10] = 0;
    valid[2000] = 0;
    expect(checkOp('hex2int', { ...c, valid }, {})).toBe(true);
    const [got, want] = errorsOf('hex2int', c);
    expect((got as OpDataError).row).toBe((want as OpDataError).row);
  });
});
