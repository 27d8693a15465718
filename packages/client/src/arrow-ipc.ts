/**
 * `@sluice/client/arrow`: the client's reader for the Arrow IPC bodies `sluice serve` sends. A
 * subpath of its own, so that `@sluice/client` loads apache-arrow only when a batch is read as Arrow.
 *
 * @example
 * import { tableFromArrowStream } from '@sluice/client/arrow';
 * const table = tableFromArrowStream(new Uint8Array(await (await fetch(url)).arrayBuffer()));
 */
import { Data, Message, MessageHeader, RecordBatch, Schema, Struct, Table, Type, makeData, tableFromIPC, type DataType, type Field } from 'apache-arrow';

/**
 * Decodes an Arrow IPC stream into an apache-arrow Table, as `tableFromIPC` does, faster for the
 * bodies `sluice serve` sends: one schema message, then uncompressed record batches of
 * fixed-width numbers, lists and structs (no dictionaries), every buffer aligned to its element
 * size. Columns are views into `body` (no copy), and the schema is decoded once and reused while
 * the server sends the same schema bytes.
 *
 * The result is the Table `tableFromIPC(body)` returns, built the same way (the same Data, the
 * same RecordBatch and Table constructors): only the IPC reading around it is narrower.
 * apache-arrow's generic reader is slow in a fresh thread until its many small functions are
 * optimised (bench/README.md, transport.ts, "Warm-up"); this path has a few short loops. Anything
 * else (dictionaries, compression, other types, a misaligned buffer, a malformed stream) goes to
 * `tableFromIPC` itself, so every valid stream decodes.
 *
 * @example
 * const body = new Uint8Array(await (await fetch(`${url}/v1/batches/0`)).arrayBuffer());
 * console.log(tableFromArrowStream(body).numRows);
 */
export function tableFromArrowStream(body: Uint8Array): Table {
  let t: Table | null;
  try {
    t = fastTable(body);
  } catch {
    t = null; // a malformed stream: apache-arrow's reader gives its own error
  }
  return t ?? tableFromIPC(body);
}

/** The schema message last seen (its flatbuffer bytes) and what it decoded to. */
let lastSchema: { bytes: Uint8Array; schema: Schema } | null = null;

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function schemaOf(meta: Uint8Array): Schema | null {
  if (lastSchema !== null && sameBytes(lastSchema.bytes, meta)) return lastSchema.schema;
  const m = Message.decode(meta);
  if (m.headerType !== MessageHeader.Schema || m.bodyLength !== 0) return null;
  const schema = m.header() as Schema;
  if (schema.dictionaries.size > 0 || !schema.fields.every((f) => supported(f.type))) return null;
  // A copy (not `meta.slice()`, a view on a Buffer): the body's memory may hold a later body.
  lastSchema = { bytes: new Uint8Array(meta), schema };
  return schema;
}

function supported(t: DataType): boolean {
  switch (t.typeId) {
    case Type.Int:
    case Type.Float:
      return true;
    case Type.List:
    case Type.Struct:
      return t.children.every((c: Field) => supported(c.type));
    default:
      return false;
  }
}

/** The Table, or null where the stream is not one this reader handles (the caller falls back). */
function fastTable(body: Uint8Array): Table | null {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let at = 0;
  /** The next message's flatbuffer bytes and where its body starts, or null at the end of the stream. */
  const next = (): { meta: Uint8Array; bodyAt: number } | null | undefined => {
    if (at + 4 > body.byteLength) return null;
    let len = view.getInt32(at, true);
    at += 4;
    if (len === -1) {
      if (at + 4 > body.byteLength) return null;
      len = view.getInt32(at, true);
      at += 4;
    }
    if (len === 0) return null;
    if (len < 0 || at + len > body.byteLength) return undefined;
    const meta = body.subarray(at, at + len);
    at += len;
    return { meta, bodyAt: at };
  };

  const first = next();
  if (!first) return null;
  const schema = schemaOf(first.meta);
  if (schema === null) return null;
  const batches: RecordBatch[] = [];
  for (;;) {
    const m = next();
    if (m === null) break;
    if (m === undefined) return null;
    const header = readRecordBatch(new DataView(m.meta.buffer, m.meta.byteOffset, m.meta.byteLength));
    if (header === null || m.bodyAt % 8 !== 0 || m.bodyAt + header.bodyLength > body.byteLength) return null;
    // A plain Uint8Array (not a Buffer) over the message body, as apache-arrow's reader has.
    const loader = new Loader(new Uint8Array(body.buffer, body.byteOffset + m.bodyAt, header.bodyLength), header);
    const children: Data[] = [];
    for (const f of schema.fields) {
      const d = loader.visit(f.type);
      if (d === null) return null;
      children.push(d);
    }
    if (loader.nodesUsed * 2 !== header.nodes.length || loader.buffersUsed * 2 !== header.buffers.length) return null;
    // The message metadata apache-arrow's reader passes: none here (readRecordBatch falls back when there is some).
    batches.push(new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: header.length, children }), new Map<string, string>()));
    at = m.bodyAt + header.bodyLength;
  }
  // A stream without batches: apache-arrow's own reader says what that is.
  return batches.length === 0 ? null : new Table(batches);
}

/** A record batch message: its row count and body length, field nodes as [length, nullCount] pairs and buffers as [offset, length] pairs. */
interface RecordBatchHeader {
  readonly bodyLength: number;
  readonly length: number;
  readonly nodes: readonly number[];
  readonly buffers: readonly number[];
}

/**
 * Reads a RecordBatch Message flatbuffer (Arrow's Message.fbs / Schema.fbs) straight into numbers:
 * apache-arrow's Message.decode makes an object and two BigInts per node and per buffer. Null
 * (the caller falls back) for anything else: another header type, custom metadata, compression,
 * variadic buffer counts, values past 2^53, or offsets outside the bytes.
 */
function readRecordBatch(v: DataView): RecordBatchHeader | null {
  const n = v.byteLength;
  const u32 = (p: number): number => (p >= 0 && p + 4 <= n ? v.getUint32(p, true) : NaN);
  const i64 = (p: number): number => {
    if (p < 0 || p + 8 > n) return NaN;
    const hi = v.getInt32(p + 4, true);
    return hi < 0 || hi >= 1 << 21 ? NaN : hi * 2 ** 32 + v.getUint32(p, true);
  };
  /** Where field `i` of the table at `t` is, or 0 when absent (NaN: malformed). */
  const field = (t: number, i: number): number => {
    if (t < 0 || t + 4 > n) return NaN;
    const vt = t - v.getInt32(t, true);
    if (vt < 0 || vt + 4 > n) return NaN;
    const vtSize = v.getUint16(vt, true);
    if (4 + 2 * i + 2 > vtSize) return 0;
    if (vt + 4 + 2 * i + 2 > n) return NaN;
    const o = v.getUint16(vt + 4 + 2 * i, true);
    return o === 0 ? 0 : t + o;
  };
  const ref = (p: number): number => p + u32(p); // a uoffset to a table or vector
  const msg = u32(0);
  // Message: 0 version, 1 header_type, 2 header, 3 bodyLength, 4 custom_metadata.
  const typeAt = field(msg, 1);
  if (!(typeAt > 0) || typeAt + 1 > n || v.getUint8(typeAt) !== MessageHeader.RecordBatch || field(msg, 4) !== 0) return null;
  const headerAt = field(msg, 2);
  const bodyAt = field(msg, 3);
  if (!(headerAt > 0) || Number.isNaN(bodyAt)) return null;
  const bodyLength = bodyAt === 0 ? 0 : i64(bodyAt);
  const rb = ref(headerAt);
  // RecordBatch: 0 length, 1 nodes [FieldNode], 2 buffers [Buffer], 3 compression, 4 variadicBufferCounts.
  const lengthAt = field(rb, 0);
  if (Number.isNaN(lengthAt) || field(rb, 3) !== 0 || field(rb, 4) !== 0) return null;
  const length = lengthAt === 0 ? 0 : i64(lengthAt);
  /** A vector of 16-byte structs of two int64s, flattened. */
  const pairs = (at: number): number[] | null => {
    if (Number.isNaN(at)) return null;
    if (at === 0) return [];
    const vec = ref(at);
    const count = u32(vec);
    if (!(vec + 4 + 16 * count <= n)) return null;
    const out = new Array<number>(2 * count);
    for (let k = 0; k < 2 * count; k++) out[k] = i64(vec + 4 + 8 * k);
    return out.some(Number.isNaN) ? null : out;
  };
  const nodes = pairs(field(rb, 1));
  const buffers = pairs(field(rb, 2));
  if (nodes === null || buffers === null || Number.isNaN(bodyLength) || Number.isNaN(length)) return null;
  return { bodyLength, length, nodes, buffers };
}

/** apache-arrow's VectorLoader for the types `supported` allows: the same buffers in the same order, as views. */
class Loader {
  nodesUsed = 0;
  buffersUsed = 0;
  constructor(
    private readonly body: Uint8Array,
    private readonly header: RecordBatchHeader,
  ) {}

  private bytes(): Uint8Array | null {
    const b = this.header.buffers;
    const i = 2 * this.buffersUsed++;
    if (i + 1 >= b.length) return null;
    const offset = b[i]!;
    const length = b[i + 1]!;
    if (offset + length > this.body.byteLength) return null;
    return this.body.subarray(offset, offset + length);
  }

  /** The bytes as a typed array over the body, or null when they are not aligned for it. */
  private typed<T>(C: { new (b: ArrayBufferLike, o: number, n: number): T; BYTES_PER_ELEMENT: number }): T | null {
    const u = this.bytes();
    if (u === null || u.byteOffset % C.BYTES_PER_ELEMENT !== 0) return null;
    return new C(u.buffer, u.byteOffset, Math.floor(u.byteLength / C.BYTES_PER_ELEMENT));
  }

  visit(type: DataType): Data | null {
    const i = 2 * this.nodesUsed++;
    if (i + 1 >= this.header.nodes.length) return null;
    const length = this.header.nodes[i]!;
    const nullCount = this.header.nodes[i + 1]!;
    // The validity buffer is always there; apache-arrow reads it only when something is null (an
    // empty one otherwise: here an empty view of the body, as a fresh \`new Uint8Array(0)\` is an
    // on-heap array whose \`.buffer\` V8 must materialise when apache-arrow views it again).
    const validity = this.bytes();
    if (validity === null) return null;
    const nullBitmap = nullCount > 0 ? validity : validity.subarray(0, 0);
    // The Data that apache-arrow's makeData builds for these props, without its visitor dispatch.
    switch (type.typeId) {
      case Type.Int:
      case Type.Float: {
        const data = this.typed((type as DataType<Type.Int | Type.Float>).ArrayType as unknown as Int32ArrayConstructor);
        return data === null ? null : new Data(type, 0, length, nullCount, [undefined, data, nullBitmap] as never);
      }
      case Type.List: {
        const valueOffsets = this.typed(Int32Array);
        if (valueOffsets === null) return null;
        const child = this.visit(type.children[0]!.type as DataType);
        return child === null ? null : new Data(type, 0, length, nullCount, [valueOffsets, undefined, nullBitmap] as never, [child]);
      }
      case Type.Struct: {
        const children: Data[] = [];
        for (const f of type.children as Field[]) {
          const c = this.visit(f.type);
          if (c === null) return null;
          children.push(c);
        }
        return new Data(type, 0, length, nullCount, [undefined, undefined, nullBitmap] as never, children);
      }
      default:
        return null;
    }
  }
}
