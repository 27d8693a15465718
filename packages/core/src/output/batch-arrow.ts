import { Field, Float32, Int64, List, Table, makeData, makeVector, type Vector } from 'apache-arrow';
import type { Batch } from '../batch/index.js';

/**
 * A batch as an Arrow table with one column per feature, in plan order of the layout: dense
 * features as float32 (a oneHot feature as list<float32>), sparse features as list<int64>, and the
 * label as float32. This is what `sluice run` writes and what HTTP serving sends as Arrow.
 */
export function batchToArrow(b: Batch, labelName: string | null): Table {
  const cols: Record<string, Vector> = {};
  const rows = b.rows;
  const D = b.dense.dim;
  for (const f of b.dense.features) {
    if (!f.vector) {
      const v = new Float32Array(rows);
      for (let r = 0; r < rows; r++) v[r] = b.dense.data[r * D + f.offset]!;
      cols[f.name] = makeVector(v);
    } else {
      const child = new Float32Array(rows * f.width);
      for (let r = 0; r < rows; r++) child.set(b.dense.data.subarray(r * D + f.offset, r * D + f.offset + f.width), r * f.width);
      const valueOffsets = Int32Array.from({ length: rows + 1 }, (_, r) => r * f.width);
      const childData = makeData({ type: new Float32(), length: child.length, data: child });
      cols[f.name] = makeVector(
        makeData({ type: new List(new Field('item', new Float32(), false)), length: rows, valueOffsets, child: childData, nullCount: 0 }),
      );
    }
  }
  b.sparse.keys.forEach((key, k) => {
    const valueOffsets = new Int32Array(rows + 1);
    for (let r = 0; r < rows; r++) valueOffsets[r + 1] = valueOffsets[r]! + b.sparse.lengths[k * rows + r]!;
    const values = b.sparse.values.slice(b.sparse.offsets[k]!, b.sparse.offsets[k + 1]!);
    const childData = makeData({ type: new Int64(), length: values.length, data: values });
    cols[key] = makeVector(makeData({ type: new List(new Field('item', new Int64(), false)), length: rows, valueOffsets, child: childData, nullCount: 0 }));
  });
  if (labelName !== null && b.labels !== null) cols[labelName] = makeVector(b.labels);
  return new Table(cols);
}
