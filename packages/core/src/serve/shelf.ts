/**
 * Where made batch bodies wait to be sent: the `Shelf` contract, and `MemoryShelf`, the in-memory
 * one (a byte- and count-bounded LRU). The disk one is serve/spill.ts.
 */
import { Readable } from 'node:stream';

/**
 * One body taken from a shelf, pinned: it stays readable until `release()`, even if the shelf
 * evicts its key meanwhile.
 *
 * @example
 * const body = shelf.take('7:msgpack');
 * if (body) try { res.end(body.memory ?? (await body.read())); } finally { body.release(); }
 */
export interface Body {
  readonly size: number;
  /** The bytes, when the shelf holds them in memory (send them as they are); null when on disk. */
  readonly memory: Uint8Array | null;
  /** The bytes read into a buffer of their own (offset 0, so 8-aligned). */
  read(): Promise<Uint8Array>;
  /** The bytes as a stream read as the socket drains, so that a slow reader holds no whole body. */
  stream(): Readable;
  /** Done with the body: the shelf may now free it. Repeated calls do nothing. */
  release(): void;
}

/**
 * A bounded store of encoded bodies by key. `put` may evict older keys (never the one it puts);
 * `take` pins what it returns.
 *
 * @example
 * await shelf.put('7:msgpack', bytes);
 * shelf.take('7:msgpack')?.release();
 */
export interface Shelf {
  has(key: string): boolean;
  put(key: string, body: Uint8Array): Promise<void>;
  take(key: string): Body | null;
  /** Bodies held. */
  readonly entries: number;
  /** Bytes held. */
  readonly bytes: number;
  /** Bodies evicted so far. */
  readonly evicted: number;
  close(): Promise<void>;
}

/**
 * Bodies in memory, least recently used first out: at most `maxEntries` and `maxBytes` (the
 * newest body is kept even when it alone is larger). A body sent to a slow reader stays referenced
 * by its socket until written, on top of these bounds.
 *
 * @example
 * const shelf = new MemoryShelf(64, 256 * 2 ** 20);
 */
export class MemoryShelf implements Shelf {
  private readonly map = new Map<string, Uint8Array>();
  private held = 0;
  evicted = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  get entries(): number {
    return this.map.size;
  }
  get bytes(): number {
    return this.held;
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    const old = this.map.get(key);
    if (old !== undefined) {
      this.map.delete(key);
      this.held -= old.byteLength;
    }
    this.map.set(key, body);
    this.held += body.byteLength;
    while (this.map.size > 1 && (this.map.size > this.maxEntries || this.held > this.maxBytes)) {
      const [k, v] = this.map.entries().next().value!;
      this.map.delete(k);
      this.held -= v.byteLength;
      this.evicted++;
    }
  }

  take(key: string): Body | null {
    const b = this.map.get(key);
    if (b === undefined) return null;
    this.map.delete(key);
    this.map.set(key, b);
    return {
      size: b.byteLength,
      memory: b,
      read: async () => b.slice(),
      stream: () => Readable.from([Buffer.from(b.buffer, b.byteOffset, b.byteLength)], { objectMode: false }),
      release: () => undefined,
    };
  }

  async close(): Promise<void> {
    this.map.clear();
    this.held = 0;
  }
}
