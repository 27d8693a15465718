/**
 * The bearer-token check every authenticated route shares (the API, `/metrics`, the dashboard):
 * one comparison in constant time, so the answer's timing tells nothing about the token.
 */
import { timingSafeEqual } from 'node:crypto';

/**
 * A check of a request's credentials against `token` (null: no token, everything passes).
 * `header(value)` takes an `Authorization` header; `query(value)` takes the bare token a browser
 * put in a page's URL (`/dashboard?token=…`).
 *
 * @example
 * const auth = tokenCheck('secret');
 * auth.header(req.headers.authorization); // true for "Bearer secret"
 */
export interface TokenCheck {
  readonly required: boolean;
  header(value: string | undefined): boolean;
  query(value: string | null | undefined): boolean;
}

/** The check for `token` (undefined: no token). */
export function tokenCheck(token: string | undefined): TokenCheck {
  if (token === undefined) return { required: false, header: () => true, query: () => true };
  const expected = Buffer.from(`Bearer ${token}`);
  const same = (got: Buffer): boolean => got.length === expected.length && timingSafeEqual(got, expected);
  return {
    required: true,
    header: (value) => same(Buffer.from(value ?? '')),
    query: (value) => value != null && same(Buffer.from(`Bearer ${value}`)),
  };
}
