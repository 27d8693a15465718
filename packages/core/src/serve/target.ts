/**
 * Reading a request target (`/v1/batches/12?x=y`) into the route it names. Malformed input is the
 * client's mistake: every way it can be wrong is a `TargetError` with one line saying what, which
 * the server answers 400 — never the decoder's own text, never a 500.
 */

/** A request target the server cannot read: the message is the 400 answer's `error`. */
export class TargetError extends Error {
  override name = 'TargetError';
}

/** What a request target names. */
export type Route =
  | { readonly kind: 'healthz' }
  | { readonly kind: 'metrics' }
  | { readonly kind: 'info' }
  | { readonly kind: 'batch'; readonly seq: number }
  /** Under /v1/ but no such resource (answered after authorization, so it reveals nothing). */
  | { readonly kind: 'unknown-v1'; readonly path: string }
  | { readonly kind: 'unknown'; readonly path: string };

/** The largest seq accepted: a safe integer, so that seq + 1 still is. */
const MAX_SEQ = Number.MAX_SAFE_INTEGER - 1;

/**
 * The route a request target names. Each path segment is percent-decoded on its own (so `%2F`
 * never splits a segment); a malformed escape (`%`, `%ZZ`, `%E0%A4%A`, or bytes that are not
 * UTF-8) is a `TargetError` naming the segment, as is a batch seq that is not a non-negative integer.
 *
 * @example
 * parseTarget('/v1/batches/7?x=1'); // { kind: 'batch', seq: 7 }
 * parseTarget('/v1/batches/%ZZ');   // throws TargetError: malformed percent-escape in "%ZZ"
 */
export function parseTarget(target: string): Route {
  const q = target.indexOf('?');
  const raw = q === -1 ? target : target.slice(0, q);
  if (!raw.startsWith('/')) throw new TargetError(`the request target must be a path starting with "/", got ${quote(raw)}`);
  const segments = raw.slice(1).split('/').map(decodeSegment);
  const path = '/' + segments.join('/');
  if (segments.length === 1 && segments[0] === 'healthz') return { kind: 'healthz' };
  if (segments.length === 1 && segments[0] === 'metrics') return { kind: 'metrics' };
  if (segments[0] !== 'v1' || segments.length < 2) return { kind: 'unknown', path };
  if (segments.length === 2 && segments[1] === 'info') return { kind: 'info' };
  if (segments.length === 3 && segments[1] === 'batches') return { kind: 'batch', seq: parseSeq(segments[2]!) };
  return { kind: 'unknown-v1', path };
}

/** A segment with its percent-escapes decoded as UTF-8, or a TargetError saying which escape is malformed. */
function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    // decodeURIComponent says only "URI malformed"; find the escape that is wrong.
    const bad = /%(?![0-9A-Fa-f]{2})/.exec(segment);
    const why = bad ? `"${segment.slice(bad.index, bad.index + 3)}" is not "%" and two hex digits` : 'the escaped bytes are not UTF-8';
    throw new TargetError(`malformed percent-escape in ${quote(segment)}: ${why}`);
  }
}

/** A batch seq: decimal digits, no sign, no leading zero, at most MAX_SEQ. */
function parseSeq(text: string): number {
  const seq = Number(text);
  if (!/^(0|[1-9][0-9]*)$/.test(text)) throw new TargetError(`batch seq must be a non-negative integer, got ${quote(text)}`);
  if (seq > MAX_SEQ) throw new TargetError(`batch seq must be a non-negative integer of at most ${MAX_SEQ}, got ${quote(text)}`);
  return seq;
}

/** `s` quoted for a one-line message: JSON escapes, cut to 64 characters. */
function quote(s: string): string {
  const cut = s.length > 64 ? `${s.slice(0, 64)}…` : s;
  return JSON.stringify(cut);
}
