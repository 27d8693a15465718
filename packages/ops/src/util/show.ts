/**
 * A value as an error message quotes it: JSON, except what JSON would misreport (NaN and
 * ±Infinity become null, -0 becomes 0, a bigint throws, undefined vanishes), cut to 60 characters.
 *
 * @example
 * show(Infinity); // 'Infinity'  (JSON.stringify gives 'null')
 */
export function show(v: unknown): string {
  if (typeof v === 'bigint') return `${v}`;
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  let s: string | undefined;
  try {
    s = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}` : typeof x === 'number' && !Number.isFinite(x) ? String(x) : x));
  } catch {
    s = undefined;
  }
  if (s === undefined) return String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
