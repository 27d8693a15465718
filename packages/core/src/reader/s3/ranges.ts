/** A byte range [start, end) of an object. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

/**
 * Merges ranges closer than `gap` bytes into one request, then cuts any longer than `maxPart` into
 * parts of at most that size. Reading a gap costs less than a request's round trip (a few hundred
 * KiB at typical object-store bandwidth); cutting a long range lets its parts travel in parallel.
 *
 * @example
 * coalesce([{ start: 0, end: 10 }, { start: 20, end: 30 }], 100, 1 << 20); // [{ start: 0, end: 30 }]
 */
export function coalesce(ranges: readonly ByteRange[], gap: number, maxPart: number): ByteRange[] {
  const sorted = ranges.filter((r) => r.end > r.start).sort((a, b) => a.start - b.start);
  const merged: Array<{ start: number; end: number }> = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && r.start <= last.end + gap) last.end = Math.max(last.end, r.end);
    else merged.push({ start: r.start, end: r.end });
  }
  const out: ByteRange[] = [];
  for (const m of merged) for (let s = m.start; s < m.end; s += maxPart) out.push({ start: s, end: Math.min(m.end, s + maxPart) });
  return out;
}

/**
 * Runs `task` on each item with at most `limit` in flight; resolves with the results in order,
 * or rejects with the first failure (the others still running are left to finish).
 *
 * @example
 * const bodies = await inFlight(ranges, 4, (r) => s3.get(bucket, key, r));
 */
export async function inFlight<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await task(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/**
 * A synchronous positional reader over fetched pieces of an object (the direct decoder's ReadAt):
 * a read inside one piece is a view of it, one across adjacent pieces is copied together. A read
 * of bytes that were not fetched throws (the caller fetched the wrong ranges: a bug, not bad data).
 *
 * @example
 * const readAt = piecesReader([{ start: 100, bytes }]);
 * readAt(120, 16); // bytes 20..36 of the piece
 */
export function piecesReader(pieces: ReadonlyArray<{ readonly start: number; readonly bytes: Uint8Array }>): (offset: number, length: number) => Uint8Array {
  const sorted = [...pieces].sort((a, b) => a.start - b.start);
  return (offset: number, length: number): Uint8Array => {
    const end = offset + length;
    let i = sorted.findIndex((p) => p.start <= offset && offset < p.start + p.bytes.length);
    if (i < 0) throw new Error(`bytes ${offset}-${end} of the object were not fetched`);
    const first = sorted[i]!;
    if (end <= first.start + first.bytes.length) return first.bytes.subarray(offset - first.start, end - first.start);
    const out = new Uint8Array(length);
    let at = 0;
    for (let pos = offset; pos < end; i++) {
      const p = sorted[i];
      if (p === undefined || p.start > pos) throw new Error(`bytes ${pos}-${end} of the object were not fetched`);
      const piece = p.bytes.subarray(pos - p.start, Math.min(p.bytes.length, end - p.start));
      out.set(piece, at);
      at += piece.length;
      pos += piece.length;
    }
    return out;
  };
}
