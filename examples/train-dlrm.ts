// A small DLRM-style model in plain TypeScript: one embedding bag (sum) per sparse key over
// hashed ids, concatenated with the dense features, into a logistic output. Trained by SGD on the
// batches of `pipeline(plan)`, fed locally, over HTTP (`sluice serve` + the typed client) or over
// the TCP transport (toTransport / fromTransport). Loss is printed per step.
//
//   npx tsx examples/train-dlrm.ts [--via local|http|tcp] [--input data.parquet] [--epochs 2]
import { parseArgs } from 'node:util';
import { connectFeed, connectTcp, listenTcp, serveFeed } from '@sluice/core/transport';
import { createBatchServer } from '@sluice/core/serve';
import { createClient } from '@sluice/client';
import { demoDataset, getPreset } from '@sluice/core/gen';
import { pipeline, type PlanSpec } from '@sluice/core';

const VIAS = ['local', 'http', 'tcp'];

/** A bad command line: one line saying what is wrong, exit 2 (no stack trace). */
function usageError(message: string): never {
  process.stderr.write(`train-dlrm: ${message} (usage: npx tsx examples/train-dlrm.ts [--via local|http|tcp] [--input F] [--epochs N])\n`);
  process.exit(2);
}

/** The options, checked before anything is generated or started. */
function options(): { via: string; input: string | undefined; epochs: number } {
  let values: { via: string; input?: string; epochs: string };
  try {
    ({ values } = parseArgs({ options: { via: { type: 'string', default: 'local' }, input: { type: 'string' }, epochs: { type: 'string', default: '2' } } }));
  } catch (e) {
    // parseArgs's own text suggests quoting with `--`, which is not the fix here: name the option instead.
    const what = /'([^' ]+)/.exec((e as Error).message)?.[1] ?? '';
    const code = (e as { code?: string }).code;
    usageError(
      code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE'
        ? `${what} needs a value`
        : code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL'
          ? `unexpected argument "${what}"`
          : `unknown option ${what}`,
    );
  }
  if (!VIAS.includes(values.via)) usageError(`--via must be local, http or tcp, got "${values.via}"`);
  const epochs = /^\d+$/.test(values.epochs) ? Number(values.epochs) : 0;
  if (epochs < 1) usageError(`--epochs must be an integer of at least 1, got "${values.epochs}"`);
  return { via: values.via, input: values.input, epochs };
}

const values = options();
const input = values.input ?? (await demoDataset());
const plan: PlanSpec = {
  ...getPreset('rm1').defaultPlan(),
  batchSize: 2048,
  epochs: values.epochs,
  shuffle: { seed: 1, bufferRows: 50_000 },
  backend: { name: 'reference' },
};

/** What every feed gives the model: the same arrays whichever way they came. */
interface Step {
  seq: number;
  rows: number;
  dim: number;
  dense: Float32Array;
  keys: number;
  lengths: Int32Array;
  values: BigInt64Array;
  labels: Float32Array;
}

const EMB = 4; // embedding width
const BUCKETS = 1 << 14; // hashed rows per table
const lr = 0.005;
let tables: Float32Array[] = [];
let wDense: Float32Array | null = null;
const wEmb = new Float32Array(0);
let wE: Float32Array = wEmb;
let bias = 0;

function train(s: Step): number {
  const { rows: B, dim: D, keys: K } = s;
  if (wDense === null) {
    wDense = new Float32Array(D);
    tables = Array.from({ length: K }, (_, k) => Float32Array.from({ length: BUCKETS * EMB }, (_, i) => Math.sin(i * 12.9898 + k) * 0.01));
    wE = new Float32Array(K * EMB).fill(0.01);
  }
  // Start of each (key, row) list in `values`.
  const start = new Int32Array(K * B + 1);
  for (let i = 0; i < K * B; i++) start[i + 1] = start[i]! + s.lengths[i]!;
  const bag = new Float32Array(K * EMB);
  let loss = 0;
  for (let r = 0; r < B; r++) {
    bag.fill(0);
    let z = bias;
    for (let j = 0; j < D; j++) z += wDense[j]! * s.dense[r * D + j]!;
    for (let k = 0; k < K; k++) {
      for (let v = start[k * B + r]!; v < start[k * B + r + 1]!; v++) {
        const row = Number(BigInt.asUintN(32, s.values[v]!) % BigInt(BUCKETS)) * EMB;
        for (let e = 0; e < EMB; e++) bag[k * EMB + e]! += tables[k]![row + e]!;
      }
      for (let e = 0; e < EMB; e++) z += wE[k * EMB + e]! * bag[k * EMB + e]!;
    }
    const p = 1 / (1 + Math.exp(-z));
    const y = s.labels[r]!;
    loss -= y * Math.log(p + 1e-7) + (1 - y) * Math.log(1 - p + 1e-7);
    const g = (p - y) * lr;
    bias -= g;
    for (let j = 0; j < D; j++) wDense[j]! -= g * s.dense[r * D + j]!;
    for (let k = 0; k < K; k++) {
      for (let v = start[k * B + r]!; v < start[k * B + r + 1]!; v++) {
        const row = Number(BigInt.asUintN(32, s.values[v]!) % BigInt(BUCKETS)) * EMB;
        for (let e = 0; e < EMB; e++) tables[k]![row + e]! -= g * wE[k * EMB + e]!;
      }
      for (let e = 0; e < EMB; e++) wE[k * EMB + e]! -= g * bag[k * EMB + e]!;
    }
  }
  return loss / B;
}

async function* feed(): AsyncGenerator<Step> {
  if (values.via === 'local') {
    for await (const b of pipeline(plan, { input })) {
      yield {
        seq: b.seq,
        rows: b.rows,
        dim: b.dense.dim,
        dense: b.dense.data,
        keys: b.sparse.keys.length,
        lengths: b.sparse.lengths,
        values: b.sparse.values,
        labels: b.labels!,
      };
      // The step that used it is done: let the pipeline reuse its memory.
      b.release?.();
    }
  } else if (values.via === 'http') {
    const server = await createBatchServer(plan, { input }, { token: 'example' });
    const client = createClient(await server.listen(0), { token: 'example' });
    try {
      for await (const b of client.batches()) {
        yield {
          seq: b.seq,
          rows: b.rows,
          dim: b.dense.dim,
          dense: b.dense.data,
          keys: b.sparse.keys.length,
          lengths: b.sparse.lengths,
          values: b.sparse.values,
          labels: b.labels!,
        };
        // As above: the client may read a later batch into this one's memory.
        b.release?.();
      }
    } finally {
      await client.close();
      await server.close();
    }
  } else if (values.via === 'tcp') {
    // The data host serves a feed that survives dropped connections: the trainer dials again and
    // the host resumes after the last batch the trainer took (each batch arrives once, in order).
    const listener = await listenTcp({ port: 0 });
    const sender = serveFeed(listener, (resume) => pipeline(plan, { input, resume }));
    const feed = connectFeed(() => connectTcp({ port: listener.port }));
    for await (const b of feed)
      yield {
        seq: b.seq,
        rows: b.rows,
        dim: b.dense.dim,
        dense: b.dense.data,
        keys: b.sparse.keys.length,
        lengths: b.sparse.lengths,
        values: b.sparse.values,
        labels: b.labels!,
      };
    await sender;
    await listener.close();
  }
}

let first = NaN;
let last = NaN;
for await (const s of feed()) {
  last = train(s);
  if (Number.isNaN(first)) first = last;
  console.log(`step ${s.seq}  loss ${last.toFixed(4)}`);
}
console.log(`fed via ${values.via}: loss ${first.toFixed(4)} -> ${last.toFixed(4)}`);
