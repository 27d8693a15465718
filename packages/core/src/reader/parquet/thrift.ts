/**
 * A TCompactProtocol writer for the raw thrift objects hyparquet's reader gives: the decode worker
 * writes a repaired footer with it (check.ts: a `dictionary_page_offset` of 0, which parquet-wasm
 * reads as "the dictionary starts at byte 0" and panics on), and tests write other writers'
 * layouts. hyparquet-writer has such a writer, but its package exports do not include it.
 */
/** A raw thrift struct as hyparquet's deserializer gives it. */
export type Thrift = { [key: string]: unknown };

/** Appends bytes to a growing buffer. */
class Out {
  bytes: number[] = [];
  byte(b: number): void {
    this.bytes.push(b & 0xff);
  }
  varint(x: bigint): void {
    let v = BigInt.asUintN(64, x);
    while (v >= 0x80n) {
      this.byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.byte(Number(v));
  }
  zigzag(x: bigint): void {
    this.varint(x >= 0n ? x << 1n : (-x << 1n) - 1n);
  }
  raw(b: Uint8Array): void {
    for (const x of b) this.bytes.push(x);
  }
  /** A long-form field header: the type, then the id as a zigzag varint. */
  longHeader(type: number, id: number): void {
    this.byte(type);
    this.zigzag(BigInt(id));
  }
}

const typeOf = (v: unknown): number =>
  typeof v === 'boolean' ? (v ? 1 : 2) : typeof v === 'number' ? 5 : typeof v === 'bigint' ? 6 : v instanceof Uint8Array ? 8 : Array.isArray(v) ? 9 : 12;

function element(o: Out, type: number, v: unknown): void {
  if (type === 5) o.zigzag(BigInt(v as number));
  else if (type === 6) o.zigzag(v as bigint);
  else if (type === 8) {
    o.varint(BigInt((v as Uint8Array).length));
    o.raw(v as Uint8Array);
  } else if (type === 9) {
    const list = v as unknown[];
    const t = list.length === 0 ? 12 : typeOf(list[0]);
    const et = t === 1 || t === 2 ? 1 : t;
    if (list.length < 15) o.byte((list.length << 4) | et);
    else {
      o.byte(0xf0 | et);
      o.varint(BigInt(list.length));
    }
    for (const x of list) {
      if (et === 1) o.byte(x ? 1 : 2);
      else element(o, et, x);
    }
  } else if (type === 12) struct(o, v as Thrift);
}

function struct(o: Out, s: Thrift): void {
  const ids = Object.keys(s)
    .filter((k) => s[k] !== undefined)
    .map((k) => Number(k.slice(6)))
    .sort((a, b) => a - b);
  let last = 0;
  for (const id of ids) {
    const v = s[`field_${id}`];
    const t = typeOf(v);
    if (id > last && id - last <= 15) o.byte(((id - last) << 4) | t);
    else o.longHeader(t, id);
    last = id;
    element(o, t, v);
  }
  o.byte(0);
}

/**
 * A thrift struct in TCompactProtocol, from the raw objects hyparquet's deserializer gives
 * (`field_N` keys; numbers are i32, bigints i64, Uint8Arrays binary, arrays lists, objects structs).
 *
 * @example
 * const bytes = encodeThrift({ field_1: 3, field_2: 10n }); // deserializeTCompactProtocol gives it back
 */
export function encodeThrift(s: Thrift): Uint8Array {
  const o = new Out();
  struct(o, s);
  return Uint8Array.from(o.bytes);
}

/**
 * A long-form field header (type, then the id as a zigzag varint): unlike the short form, it does
 * not depend on the field before it, so a field's bytes can be moved behind it (footer-scan.ts).
 */
export function longFieldHeader(type: number, id: number): number[] {
  const o = new Out();
  o.longHeader(type, id);
  return o.bytes;
}
