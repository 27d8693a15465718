/** Coalescing ranged reads, the reader over fetched pieces, the in-flight limit, and s3:// parsing. */
import { describe, expect, it } from 'vitest';
import { coalesce, inFlight, piecesReader } from '../../src/reader/s3/ranges.js';
import { InputError } from '@sluice/ops';
import { parseS3Url } from '../../src/reader/s3/url.js';
import { xmlAll, xmlText } from '../../src/reader/s3/errors.js';

describe('coalesce', () => {
  it('merges ranges closer than the gap, keeps far ones apart, and cuts long ones into parts', () => {
    expect(
      coalesce(
        [
          { start: 50, end: 60 },
          { start: 0, end: 10 },
          { start: 15, end: 20 },
          { start: 200, end: 210 },
        ],
        10,
        1000,
      ),
    ).toEqual([
      { start: 0, end: 20 },
      { start: 50, end: 60 },
      { start: 200, end: 210 },
    ]);
    expect(coalesce([{ start: 0, end: 25 }], 0, 10)).toEqual([
      { start: 0, end: 10 },
      { start: 10, end: 20 },
      { start: 20, end: 25 },
    ]);
    expect(coalesce([{ start: 5, end: 5 }], 0, 10)).toEqual([]);
  });
});

describe('piecesReader', () => {
  const bytes = Uint8Array.from({ length: 100 }, (_, i) => i);
  const read = piecesReader([
    { start: 110, bytes: bytes.subarray(10, 20) },
    { start: 100, bytes: bytes.subarray(0, 10) },
    { start: 150, bytes: bytes.subarray(50, 60) },
  ]);
  it('returns a view inside one piece and a copy across adjacent pieces', () => {
    expect(Array.from(read(102, 3))).toEqual([2, 3, 4]);
    expect(Array.from(read(108, 4))).toEqual([8, 9, 10, 11]);
  });
  it('refuses bytes that were not fetched', () => {
    expect(() => read(118, 4)).toThrow('bytes 120-122 of the object were not fetched');
    expect(() => read(90, 4)).toThrow('bytes 90-94 of the object were not fetched');
  });
});

describe('inFlight', () => {
  it('keeps at most the limit running and returns results in order', async () => {
    let running = 0;
    let most = 0;
    const out = await inFlight([5, 1, 4, 2, 3], 2, async (ms) => {
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
      return ms * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30]);
    expect(most).toBe(2);
  });
});

describe('s3:// locations and S3 XML', () => {
  it('splits bucket and key and refuses a missing bucket', () => {
    expect(parseS3Url('s3://b/a/b c%2B.parquet')).toEqual({ bucket: 'b', key: 'a/b c%2B.parquet' });
    expect(parseS3Url('s3://b')).toEqual({ bucket: 'b', key: '' });
    for (const bad of ['s3:///k', 's3://', 's3:']) {
      expect(() => parseS3Url(bad)).toThrow(InputError);
      expect(() => parseS3Url(bad)).toThrow(`${bad} names no bucket: expected s3://bucket/key (or s3://bucket/prefix/)`);
    }
  });
  it('reads escaped element text', () => {
    expect(xmlAll('<Contents><Key>a&amp;b&#x20;&lt;c&gt;&#33;</Key></Contents><Contents><Key>d</Key></Contents>', 'Key')).toEqual(['a&b <c>!', 'd']);
    expect(xmlText('&unknown;')).toBe('&unknown;');
  });
});
