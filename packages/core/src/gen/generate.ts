/**
 * The synthetic data generator (`sluice gen`): preset columns → Arrow record batches built straight
 * from typed arrays (no per-value JS objects) → ZSTD Parquet through the streaming writer.
 *
 * Determinism: every column draws from its own xoshiro128** stream keyed by (seed, column index)
 * and consumes it row by row, so the values depend only on the seed, the preset and the row index —
 * not on the slab size, the row-group size or how many rows are generated (a shorter file is a
 * prefix of a longer one).
 */
import * as arrow from 'apache-arrow';
import { ParquetFileWriter, type ParquetCompression } from '../output/parquet-write.js';
import { getPreset, withIds, type IdCardinality, type Preset } from './presets.js';
import { listSalt2, type ColumnSpec, type DenseColumnSpec, type HexColumnSpec, type IdListColumnSpec, type LabelColumnSpec } from './spec.js';
import { LogNormalTable, mix32, Rng, SkewedIdSampler } from '../util/rng.js';

const INT32_MAX = 2147483647;

/** The Arrow schema of a preset's data (label float32; dense int32/float32; hex utf8; lists LIST<INT64>). */
export function presetArrowSchema(preset: string | Preset, metadata: Record<string, string> = {}): arrow.Schema {
  const p = typeof preset === 'string' ? getPreset(preset) : preset;
  const fields = p.columns.map((c) => new arrow.Field(c.name, arrowType(c), c.kind !== 'label'));
  return new arrow.Schema(fields, new Map(Object.entries({ 'sluice.preset': p.name, ...metadata })));
}

function arrowType(c: ColumnSpec): arrow.DataType {
  switch (c.kind) {
    case 'label':
      return new arrow.Float32();
    case 'dense':
      return c.type === 'int32' ? new arrow.Int32() : new arrow.Float32();
    case 'hex':
      return new arrow.Utf8();
    case 'idList':
      return new arrow.List(new arrow.Field('item', new arrow.Int64(), false));
  }
}

/** Estimated Arrow bytes per row of a preset (for slab sizing). */
export function estimatedRowBytes(preset: Preset): number {
  let b = 0;
  for (const c of preset.columns) {
    if (c.kind === 'label' || c.kind === 'dense') b += 4.125;
    else if (c.kind === 'hex') b += 12.125;
    else b += 4.125 + 8 * c.meanLength;
  }
  return b;
}

/** Rows per generated slab: ~64 MiB of Arrow data, between 1,024 and 65,536 rows, a multiple of 1,024. */
export function defaultSlabRows(preset: Preset): number {
  const rows = Math.floor((64 * 1024 * 1024) / estimatedRowBytes(preset) / 1024) * 1024;
  return Math.max(1024, Math.min(65536, rows));
}

interface ColumnGen {
  next(n: number): arrow.Data;
}

function validity(n: number): Uint8Array {
  return new Uint8Array((n + 7) >>> 3);
}

class LabelGen implements ColumnGen {
  constructor(
    private readonly col: LabelColumnSpec,
    private readonly rng: Rng,
  ) {}
  next(n: number): arrow.Data {
    const v = new Float32Array(n);
    const p = this.col.positiveRate;
    for (let i = 0; i < n; i++) v[i] = this.rng.next() < p ? 1 : 0;
    return arrow.makeData({ type: new arrow.Float32(), length: n, nullCount: 0, data: v });
  }
}

class DenseGen implements ColumnGen {
  private readonly table: LogNormalTable;
  constructor(
    private readonly col: DenseColumnSpec,
    private readonly rng: Rng,
  ) {
    this.table = new LogNormalTable(col.mu, col.sigma);
  }
  next(n: number): arrow.Data {
    const { nullRate, negRate } = this.col;
    const values = this.col.type === 'int32' ? new Int32Array(n) : new Float32Array(n);
    const bits = validity(n);
    const { rng, table } = this;
    const pNeg = nullRate + negRate;
    const pMinus1 = nullRate + negRate * 0.7;
    const scale = 1 / (1 - pNeg);
    let nulls = 0;
    for (let i = 0; i < n; i++) {
      // One uniform decides null / negative / value, and is rescaled into the value's quantile.
      const u = rng.next();
      if (u < nullRate) {
        nulls++;
        continue;
      }
      bits[i >>> 3] |= 1 << (i & 7);
      if (u < pNeg) {
        values[i] = u < pMinus1 ? -1 : -2;
        continue;
      }
      const x = Math.floor(table.at((u - pNeg) * scale));
      values[i] = x > INT32_MAX ? INT32_MAX : x;
    }
    const common = { length: n, nullCount: nulls, nullBitmap: bits };
    return values instanceof Int32Array
      ? arrow.makeData({ type: new arrow.Int32(), data: values, ...common })
      : arrow.makeData({ type: new arrow.Float32(), data: values, ...common });
  }
}

/** HEX_PAIRS[b] holds the two lowercase hex chars of byte b, in memory order for a native Uint16Array. */
const HEX_PAIRS: Uint16Array = (() => {
  const t = new Uint16Array(256);
  const bytes = new Uint8Array(t.buffer);
  const digits = '0123456789abcdef';
  for (let b = 0; b < 256; b++) {
    bytes[2 * b] = digits.charCodeAt(b >>> 4);
    bytes[2 * b + 1] = digits.charCodeAt(b & 15);
  }
  return t;
})();

class HexGen implements ColumnGen {
  private readonly sampler: SkewedIdSampler;
  constructor(
    private readonly col: HexColumnSpec,
    private readonly rng: Rng,
  ) {
    this.sampler = new SkewedIdSampler(col.vocab, col.hotFraction, col.hotMass);
  }
  next(n: number): arrow.Data {
    const { nullRate, salt } = this.col;
    const rng = this.rng;
    const sampler = this.sampler;
    const offsets = new Int32Array(n + 1);
    const data = new Uint8Array(n * 8);
    const pairs = new Uint16Array(data.buffer);
    const bits = validity(n);
    let nulls = 0;
    let pos = 0;
    const scale = 1 / (1 - nullRate);
    for (let i = 0; i < n; i++) {
      const u = rng.next53();
      if (u < nullRate) {
        nulls++;
      } else {
        bits[i >>> 3] |= 1 << (i & 7);
        const id = mix32((sampler.fromUniform((u - nullRate) * scale) + salt) >>> 0);
        const q = pos >>> 1;
        pairs[q] = HEX_PAIRS[id >>> 24];
        pairs[q + 1] = HEX_PAIRS[(id >>> 16) & 255];
        pairs[q + 2] = HEX_PAIRS[(id >>> 8) & 255];
        pairs[q + 3] = HEX_PAIRS[id & 255];
        pos += 8;
      }
      offsets[i + 1] = pos;
    }
    return arrow.makeData({
      type: new arrow.Utf8(),
      length: n,
      nullCount: nulls,
      nullBitmap: bits,
      valueOffsets: offsets,
      data: data.subarray(0, pos),
    });
  }
}

class IdListGen implements ColumnGen {
  private readonly sampler: SkewedIdSampler;
  /** Exponential scale λ with E[1 + floor(Exp(λ))] = meanLength. */
  private readonly lambda: number;
  private readonly salt2: number;
  private readonly childType = new arrow.Int64();
  private readonly listType: arrow.List<arrow.Int64>;
  constructor(
    private readonly col: IdListColumnSpec,
    private readonly rng: Rng,
  ) {
    this.sampler = new SkewedIdSampler(col.vocab, col.hotFraction, col.hotMass);
    this.lambda = col.meanLength > 1 ? 1 / Math.log(col.meanLength / (col.meanLength - 1)) : 0;
    this.salt2 = listSalt2(col.salt);
    this.listType = new arrow.List(new arrow.Field('item', this.childType, false));
  }
  next(n: number): arrow.Data {
    const { nullRate, salt, maxLength } = this.col;
    const { rng, sampler, lambda, salt2 } = this;
    const offsets = new Int32Array(n + 1);
    const bits = validity(n);
    let words = new Uint32Array(Math.max(16, Math.ceil(n * this.col.meanLength * 1.25)) * 2);
    let nulls = 0;
    let len = 0;
    for (let i = 0; i < n; i++) {
      if (rng.next() < nullRate) {
        nulls++;
        offsets[i + 1] = len;
        continue;
      }
      bits[i >>> 3] |= 1 << (i & 7);
      let k = lambda > 0 ? 1 + Math.floor(-Math.log(1 - rng.next()) * lambda) : 1;
      if (k > maxLength) k = maxLength;
      if ((len + k) * 2 > words.length) {
        const grown = new Uint32Array(Math.max(words.length * 2, (len + k) * 2));
        grown.set(words);
        words = grown;
      }
      for (let j = 0; j < k; j++) {
        const r = sampler.sample(rng);
        const w = (len + j) * 2;
        words[w] = mix32((r + salt) >>> 0); // low word: a bijection of the rank → distinct ids
        words[w + 1] = mix32(r ^ salt2) & 0x7fffffff; // high word: non-negative int64
      }
      len += k;
      offsets[i + 1] = len;
    }
    const child = arrow.makeData({ type: this.childType, length: len, nullCount: 0, data: new BigInt64Array(words.buffer, 0, len) });
    return arrow.makeData({ type: this.listType, length: n, nullCount: nulls, nullBitmap: bits, valueOffsets: offsets, child });
  }
}

function columnGen(c: ColumnSpec, rng: Rng): ColumnGen {
  switch (c.kind) {
    case 'label':
      return new LabelGen(c, rng);
    case 'dense':
      return new DenseGen(c, rng);
    case 'hex':
      return new HexGen(c, rng);
    case 'idList':
      return new IdListGen(c, rng);
  }
}

export interface GenerateBatchesOptions {
  /** Default 42. */
  seed?: number;
  /** Rows per batch (default `defaultSlabRows(preset)`); does not change the values. */
  slabRows?: number;
  /** How concentrated the hex id columns are (default 'skewed'; see {@link withIds}). */
  ids?: IdCardinality;
}

/** Yields `rows` rows of a preset's synthetic data as Arrow record batches of `slabRows` rows (arguments are checked eagerly). */
export function generateBatches(preset: string | Preset, rows: number, opts: GenerateBatchesOptions = {}): Generator<arrow.RecordBatch> {
  const p = withIds(typeof preset === 'string' ? getPreset(preset) : preset, opts.ids ?? 'skewed');
  const seed = opts.seed ?? 42;
  const slab = opts.slabRows ?? defaultSlabRows(p);
  if (!Number.isSafeInteger(rows) || rows < 0) throw new Error(`rows must be a non-negative integer, got ${rows}`);
  if (!Number.isInteger(slab) || slab < 1) throw new Error(`slabRows must be a positive integer, got ${slab}`);
  if (!Number.isSafeInteger(seed)) throw new Error(`seed must be an integer, got ${seed}`);
  return batchesOf(p, rows, seed, slab);
}

/** The file metadata that says how the data was generated; `sluice.ids` only where it is not the default, so default files keep their bytes. */
function genMetadata(p: Preset, seed: number): Record<string, string> {
  return { 'sluice.seed': String(seed), ...(p.idCardinality !== undefined ? { 'sluice.ids': p.idCardinality } : {}) };
}

function* batchesOf(p: Preset, rows: number, seed: number, slab: number): Generator<arrow.RecordBatch> {
  const schema = presetArrowSchema(p, genMetadata(p, seed));
  const gens = p.columns.map((c, i) => columnGen(c, new Rng(seed, i + 1)));
  const structType = new arrow.Struct(schema.fields);
  for (let done = 0; done < rows;) {
    const n = Math.min(slab, rows - done);
    const children = gens.map((g) => g.next(n));
    yield new arrow.RecordBatch(schema, arrow.makeData({ type: structType, length: n, nullCount: 0, children }));
    done += n;
  }
}

/** What {@link generateDataset} writes: which preset, how many rows, where, and how. */
export interface GenerateOptions {
  /** Preset name (see `presetNames()`) or a Preset object. */
  preset: string | Preset;
  rows: number;
  /** Output Parquet path (parent folders are created). */
  out: string;
  /** Default 42. */
  seed?: number;
  /** Default 100_000. */
  rowGroupSize?: number;
  /** Default 'zstd'. */
  compression?: ParquetCompression;
  /** Parquet min/max statistics (default 'none'; see ParquetWriteOptions.statistics). */
  statistics?: 'page' | 'chunk' | 'none';
  /** Rows generated per slab (default: ~64 MiB of Arrow data, at most 65,536). */
  slabRows?: number;
  /** How concentrated the hex id columns are (default 'skewed'; `sluice gen --ids`). */
  ids?: IdCardinality;
  /** Called after every slab has been handed to the writer, with the rows written so far. */
  onProgress?: (rowsDone: number, totalRows: number) => void;
}

/** What {@link generateDataset} wrote. */
export interface GenerateResult {
  rows: number;
  /** File size in bytes. */
  bytes: number;
  path: string;
  seconds: number;
  rowGroups: number;
}

/**
 * Generates `rows` rows of a preset's synthetic data into one ZSTD Parquet file, streaming slab by slab.
 *
 * @example
 * const { path, bytes } = await generateDataset({ preset: 'rm1', rows: 100_000, out: 'data/rm1.parquet', seed: 7 });
 */
export async function generateDataset(opts: GenerateOptions): Promise<GenerateResult> {
  const t0 = performance.now();
  const p = withIds(typeof opts.preset === 'string' ? getPreset(opts.preset) : opts.preset, opts.ids ?? 'skewed');
  const seed = opts.seed ?? 42;
  const batches = generateBatches(p, opts.rows, { seed, ...(opts.slabRows !== undefined ? { slabRows: opts.slabRows } : {}) });
  const writer = await ParquetFileWriter.open(opts.out, {
    compression: opts.compression ?? 'zstd',
    rowGroupSize: opts.rowGroupSize ?? 100_000,
    // No min/max statistics: encoding is faster without them, and nothing reads them for this data.
    statistics: opts.statistics ?? 'none',
    metadata: { 'sluice.preset': p.name, ...genMetadata(p, seed) },
  });
  let rows = 0;
  try {
    if (opts.rows === 0) await writer.write(new arrow.Table(presetArrowSchema(p, genMetadata(p, seed))));
    for (const batch of batches) {
      await writer.write(batch);
      rows += batch.numRows;
      opts.onProgress?.(rows, opts.rows);
    }
  } catch (e) {
    await writer.abort();
    throw e;
  }
  const res = await writer.close();
  return { rows: res.rows, bytes: res.bytes, path: res.path, seconds: (performance.now() - t0) / 1000, rowGroups: res.rowGroups };
}
