/**
 * Why a column chunk is not read, sorted by what the caller does about it: a `Refusal` is
 * reported (damaged bytes, a failed checksum, a value Sluice cannot hold exactly), an
 * `Unsupported` shape goes to the general reader (parquet-wasm), which may read it.
 */

/** A column chunk that must not be read: the message names the page and what does not add up. */
export class Refusal extends Error {
  override name = 'Refusal';
  constructor(
    readonly column: string,
    message: string,
  ) {
    super(message);
  }
}

/** A shape this decoder does not read (an encoding, a split that is not at a page boundary): the general reader gets it. */
export class Unsupported extends Error {
  override name = 'Unsupported';
}

/** Where a page lies: its number in the chunk (0 is the first, a dictionary page included) and its byte offset in the file. */
export interface PagePlace {
  page: number;
  at: number;
}

/**
 * `e`, thrown while decoding page `place` of column `column`, as what the caller should see: a
 * Refusal naming the page (any decoding error: the bytes do not add up), or `e` itself when it is
 * already a Refusal or says the shape is not this decoder's (Unsupported, or `keep`).
 */
export function located(e: unknown, column: string, place: PagePlace | null, keep?: (e: unknown) => boolean): unknown {
  if (e instanceof Refusal || e instanceof Unsupported || keep?.(e) === true) return e;
  const raw = e instanceof Error ? e.message : String(e);
  // Decoders prefix their messages with the column; the Refusal carries it.
  const what = raw.replace(/^column \S+: /, '');
  return new Refusal(column, place === null ? what : `page ${place.page} (at byte ${place.at}): ${what}`);
}
