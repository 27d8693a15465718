/**
 * `Spill`: the disk shelf. Made batch bodies are appended to segment files, so that a batch is made
 * once and then served from disk (the OS page cache, which is not the process's memory) however
 * many clients ask for it and in whatever order, instead of being re-made when it falls out of a
 * memory cache. The disk it takes is bounded: past `maxBytes` the oldest segment is dropped whole.
 */
import { randomBytes } from 'node:crypto';
import { open as openFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { SluiceError } from '@sluice/ops';
import type { Body, Shelf } from './shelf.js';

interface Segment {
  readonly fh: FileHandle;
  /** Bytes written. */
  size: number;
  /** Bodies taken and not released: the file stays open until they are. */
  pins: number;
  /** Dropped: its keys are gone, and the file closes once unpinned. */
  dead: boolean;
  readonly keys: string[];
}

interface Entry {
  readonly seg: Segment;
  readonly offset: number;
  readonly length: number;
}

/** Bytes a stream reads from the file at a time: big enough for few reads per body, small beside one. */
const STREAM_CHUNK = 256 * 1024;

/**
 * Encoded bodies in segment files in `dir`, at most about `maxBytes` of them (plus the segment
 * being written). Each segment file is unlinked as soon as it is opened: the space is the
 * process's only while it runs, and a crash (even SIGKILL) leaves no file behind.
 *
 * @example
 * const spill = await Spill.open(os.tmpdir(), 4 * 2 ** 30);
 * await spill.put('7:msgpack', bytes);
 * const body = spill.take('7:msgpack')!; body.stream().pipe(res).on('close', body.release);
 */
export class Spill implements Shelf {
  private readonly index = new Map<string, Entry>();
  private readonly segments: Segment[] = [];
  /** Segments whose file is open: those in `segments`, and dropped ones still pinned. */
  private readonly open = new Set<Segment>();
  private total = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private count = 0;
  private readonly prefix = `sluice-spill-${process.pid}-${randomBytes(4).toString('hex')}`;
  evicted = 0;

  private constructor(
    readonly dir: string,
    readonly maxBytes: number,
    private readonly segmentBytes: number,
  ) {}

  /**
   * A spill in `dir` holding about `maxBytes`; its first segment is opened at once, so that a
   * folder it cannot write in is one clear error now rather than at the first batch.
   */
  static async open(dir: string, maxBytes: number): Promise<Spill> {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new RangeError(`spill size must be a positive number of bytes, got ${maxBytes}`);
    // Eight segments or more per budget, so that dropping the oldest frees an eighth at a time.
    const segmentBytes = Math.min(64 * 2 ** 20, Math.max(2 ** 20, Math.floor(maxBytes / 8)));
    const s = new Spill(dir, maxBytes, segmentBytes);
    await s.newSegment();
    return s;
  }

  get entries(): number {
    return this.index.size;
  }
  get bytes(): number {
    return this.total;
  }

  has(key: string): boolean {
    return this.index.has(key);
  }

  /** Appends `body` under `key` (nothing if the key is there); resolves once it can be read back. */
  put(key: string, body: Uint8Array): Promise<void> {
    const p = this.chain.then(() => this.write(key, body));
    this.chain = p.catch(() => undefined);
    return p;
  }

  take(key: string): Body | null {
    const e = this.index.get(key);
    if (e === undefined) return null;
    const { seg, offset, length } = e;
    seg.pins++;
    let released = false;
    return {
      size: length,
      memory: null,
      read: async () => {
        const buf = new Uint8Array(length);
        for (let done = 0; done < length;) {
          const { bytesRead } = await seg.fh.read(buf, done, length - done, offset + done);
          if (bytesRead === 0) throw new SluiceError(`the spill file in ${this.dir} is shorter than written (${key})`);
          done += bytesRead;
        }
        return buf;
      },
      stream: (): Readable => rangeStream(seg.fh, offset, length),
      release: () => {
        if (released) return;
        released = true;
        seg.pins--;
        if (seg.dead && seg.pins === 0) void this.closeFile(seg);
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
    this.index.clear();
    this.segments.length = 0;
    await Promise.all([...this.open].map((s) => this.closeFile(s)));
    this.total = 0;
  }

  private closeFile(seg: Segment): Promise<void> {
    if (!this.open.delete(seg)) return Promise.resolve();
    return seg.fh.close().catch(() => undefined);
  }

  private async write(key: string, body: Uint8Array): Promise<void> {
    if (this.closed) throw new SluiceError('the spill is closed');
    if (this.index.has(key)) return;
    let seg = this.segments[this.segments.length - 1]!;
    if (seg.size > 0 && seg.size + body.byteLength > this.segmentBytes) seg = await this.newSegment();
    const at = seg.size;
    for (let done = 0; done < body.byteLength;) {
      const { bytesWritten } = await seg.fh.write(body, done, body.byteLength - done, at + done);
      done += bytesWritten;
    }
    seg.size += body.byteLength;
    this.total += body.byteLength;
    this.index.set(key, { seg, offset: at, length: body.byteLength });
    seg.keys.push(key);
    // The oldest segments go whole; the one being written stays.
    while (this.total > this.maxBytes && this.segments.length > 1) this.drop(this.segments.shift()!);
  }

  private drop(seg: Segment): void {
    for (const k of seg.keys) {
      if (this.index.get(k)?.seg !== seg) continue;
      this.index.delete(k);
      this.evicted++;
    }
    this.total -= seg.size;
    seg.dead = true;
    if (seg.pins === 0) void this.closeFile(seg);
  }

  private async newSegment(): Promise<Segment> {
    const path = join(this.dir, `${this.prefix}-${this.count++}`);
    let fh: FileHandle | null = null;
    try {
      fh = await openFile(path, 'wx+', 0o600);
      await unlink(path);
    } catch (e) {
      await fh?.close().catch(() => undefined);
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw new SluiceError(
        `cannot write the spill in ${this.dir} (${code}): choose another folder (spillDir, --spill-dir) or turn it off (--spill-size 0, spillBytes: 0)`,
        {},
        { cause: e },
      );
    }
    const seg: Segment = { fh, size: 0, pins: 0, dead: false, keys: [] };
    this.segments.push(seg);
    this.open.add(seg);
    return seg;
  }
}

/**
 * Bytes [offset, offset + length) of the file as a stream, read chunk by chunk as the consumer
 * drains. Not `FileHandle.createReadStream`: destroying one of those (a client gone mid-body)
 * closes the handle, which every other body in the segment reads through.
 */
function rangeStream(fh: FileHandle, offset: number, length: number): Readable {
  let pos = 0;
  return new Readable({
    highWaterMark: STREAM_CHUNK,
    read(this: Readable) {
      if (pos >= length) {
        this.push(null);
        return;
      }
      const n = Math.min(STREAM_CHUNK, length - pos);
      const buf = Buffer.allocUnsafe(n);
      fh.read(buf, 0, n, offset + pos).then(
        ({ bytesRead }) => {
          if (bytesRead === 0) {
            this.destroy(new SluiceError('the spill file is shorter than written'));
            return;
          }
          pos += bytesRead;
          this.push(bytesRead < n ? buf.subarray(0, bytesRead) : buf);
        },
        (e: unknown) => this.destroy(e as Error),
      );
    },
  });
}
