/**
 * A cluster job: its spec (plan, inputs, seed, epochs, batch size), its split table, and the
 * idempotent submit that puts the spec and one stream entry per split into Redis.
 */
import { basename, resolve } from 'node:path';
import { PlanError, SluiceError, loadPlan, readJsonFile, type PlanSpec } from '@sluice/ops';
import type { Redis } from 'ioredis';
import { pipeline, type PipelineInfo } from '../pipeline/pipeline.js';
import { fingerprint } from '../pipeline/resume.js';
import { epochWindows } from '../stream/source.js';
import { isUrl } from '../util/url.js';
import { checkJobName, jobKeys } from './keys.js';

/**
 * One split: a run of whole batches of one window (a row group, or a shuffle window) of one
 * epoch. Batches never cross windows in a job (docs/cluster.md#determinism), so a split's batches
 * are a function of the split alone, and any worker makes the same ones.
 *
 * @example
 * const s = job.splits[3]; // batches s.firstSeq … s.firstSeq + s.batches - 1
 */
export interface Split {
  readonly index: number;
  readonly epoch: number;
  readonly window: number;
  /** First row of the split within its window (a multiple of the batch size). */
  readonly offset: number;
  readonly firstSeq: number;
  readonly batches: number;
  /** Where its rows come from, for messages: file and row group(s). */
  readonly where: string;
}

/**
 * What a job is: submitted once, read by every worker.
 *
 * @example
 * const job = await loadJob(redis, 'ctr');
 * console.log(job.batches, job.splits.length);
 */
export interface JobSpec {
  readonly name: string;
  /** The plan with the job's seed, epochs and batch size written in. */
  readonly plan: PlanSpec;
  /** The input files, resolved at submit (every worker must see the same ones). */
  readonly input: string[];
  /** Fitted state for stateful ops (the JSON `sluice fit` writes), inline so that every machine has it. */
  readonly fitState?: object;
  /** Fingerprint of plan and files (pipeline/resume.ts): a worker whose files differ refuses to start. */
  readonly fingerprint: string;
  /** Batches in the whole job, all epochs. */
  readonly batches: number;
  readonly splits: readonly Split[];
}

/**
 * What `submitJob` takes: the job's name, plan, inputs, and the overrides of the plan.
 *
 * @example
 * await submitJob(redis, { name: 'ctr', plan: 'plan.json', input: ['day1.parquet'], seed: 7, epochs: 2, splitBatches: 16 });
 */
export interface JobRequest {
  readonly name: string;
  readonly plan: PlanSpec | string;
  readonly input: string | string[];
  /** Shuffle seed (turns shuffling on with the plan's buffer size, or row-group order only without one). */
  readonly seed?: number;
  readonly epochs?: number;
  readonly batchSize?: number;
  /** Most batches in one split (default 16): smaller splits spread work finer and lose less to a kill. */
  readonly splitBatches?: number;
  /** A path to `sluice fit` output, or its parsed JSON. */
  readonly fitState?: string | object;
}

/** The plan spec with the request's overrides written in. */
function jobPlan(req: JobRequest): PlanSpec {
  const base = loadPlan(req.plan).spec;
  const spec: PlanSpec = { ...base };
  if (req.batchSize !== undefined) spec.batchSize = req.batchSize;
  if (req.epochs !== undefined) spec.epochs = req.epochs;
  if (req.seed !== undefined) spec.shuffle = { ...(typeof base.shuffle === 'object' ? base.shuffle : {}), seed: req.seed };
  delete spec.input;
  loadPlan(spec); // a bad override fails here, naming it
  return spec;
}

/**
 * The job's splits: each epoch's windows in order, cut into runs of at most `maxBatches` batches.
 *
 * @example
 * const splits = planSplits(await pipeline(plan, { input }).info(), 16);
 */
export function planSplits(info: PipelineInfo, maxBatches: number): Split[] {
  const p = info.plan;
  const B = p.batchSize;
  const splits: Split[] = [];
  let seq = 0;
  for (let epoch = 0; epoch < p.epochs; epoch++) {
    const windows = epochWindows(info.dataset, epoch, { shuffle: p.shuffle, shard: p.shard });
    windows.forEach((w, wi) => {
      const batches = p.dropLast ? Math.floor(w.rows / B) : Math.ceil(w.rows / B);
      const files = new Set(w.units.map((u) => basename(info.dataset.files[u.file]!.source)));
      const groups = w.units.map((u) => u.rowGroup).join(',');
      const where = `${[...files].join(', ')} row group${w.units.length > 1 ? 's' : ''} ${groups}`;
      for (let k = 0; k < batches; k += maxBatches) {
        const n = Math.min(maxBatches, batches - k);
        splits.push({ index: splits.length, epoch, window: wi, offset: k * B, firstSeq: seq, batches: n, where });
        seq += n;
      }
    });
  }
  return splits;
}

/**
 * The split that makes batch `seq` (the job's splits are in seq order).
 *
 * @example
 * const s = splitOf(job, 1234); // s.firstSeq <= 1234 < s.firstSeq + s.batches
 */
export function splitOf(job: JobSpec, seq: number): Split {
  const s = job.splits;
  let lo = 0;
  let hi = s.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (s[mid]!.firstSeq <= seq) lo = mid;
    else hi = mid - 1;
  }
  return s[lo]!;
}

/**
 * A split named for messages: index, epoch, batches and where its rows are.
 *
 * @example
 * describeSplit(job.splits[3]); // 'split 3 (epoch 0, batches 48-63, day1.parquet row group 3)'
 */
export function describeSplit(s: Split): string {
  return `split ${s.index} (epoch ${s.epoch}, batches ${s.firstSeq}-${s.firstSeq + s.batches - 1}, ${s.where})`;
}

/**
 * Builds a job spec: opens the inputs, checks the plan against them and lays out the splits.
 *
 * @example
 * const job = await buildJob({ name: 'ctr', plan: 'plan.json', input: 'day1/*.parquet', seed: 7, splitBatches: 16 });
 * console.log(job.batches, job.splits.length);
 */
export async function buildJob(req: JobRequest): Promise<JobSpec> {
  const name = checkJobName(req.name);
  const splitBatches = req.splitBatches ?? 16;
  if (!Number.isSafeInteger(splitBatches) || splitBatches < 1) throw new RangeError(`splitBatches must be a positive integer, got ${splitBatches}`);
  const plan = jobPlan(req);
  let fitState: object | undefined;
  if (typeof req.fitState === 'string') {
    fitState = readJsonFile(req.fitState, 'fit state') as object;
  } else if (req.fitState !== undefined) fitState = req.fitState;
  const info = await pipeline(plan, { input: req.input, ...(fitState ? { fitState } : {}) }).info();
  const splits = planSplits(info, splitBatches);
  const batches = splits.reduce((a, s) => a + s.batches, 0);
  if (batches === 0) throw new PlanError(`job ${name}: the input makes no batch of ${info.plan.batchSize} rows`);
  // Local files by absolute path: globs and relative paths list them relative to this process's
  // folder, which a worker started in another folder would not find. The fingerprint is over the
  // names the workers open, as theirs is.
  const files = info.dataset.files.map((f) => (isUrl(f.source) ? f : { ...f, source: resolve(f.source) }));
  return {
    name,
    plan,
    input: files.map((f) => f.source),
    ...(fitState ? { fitState } : {}),
    fingerprint: fingerprint(loadPlan(plan), { ...info.dataset, files }),
    batches,
    splits,
  };
}

/**
 * Submits a job once: the spec and the split stream with its consumer group, in one transaction.
 * Submitting the same job again changes nothing (`created: false`); a different job under a name
 * in use is refused.
 *
 * @example
 * const { created } = await submitJob(redis, await buildJob({ name: 'ctr', plan, input }));
 */
export async function submitJob(redis: Redis, job: JobSpec): Promise<{ created: boolean }> {
  const k = jobKeys(job.name);
  const text = JSON.stringify(job);
  for (let attempt = 0; attempt < 5; attempt++) {
    await redis.watch(k.spec);
    const old = await redis.get(k.spec);
    if (old !== null) {
      await redis.unwatch();
      const prev = JSON.parse(old) as JobSpec;
      if (prev.fingerprint !== job.fingerprint || prev.batches !== job.batches || prev.splits.length !== job.splits.length) {
        throw new SluiceError(`job ${job.name} exists with another plan, input or split size: choose another name (or delete its keys sluice:{${job.name}}:*)`);
      }
      return { created: false };
    }
    const m = redis.multi();
    m.set(k.spec, text);
    m.del(k.splits, k.state, k.owner, k.attempts, k.errors, k.delivered, k.deliveredCount, k.counters, k.failed, k.dead);
    m.xgroup('CREATE', k.splits, k.group, '0', 'MKSTREAM');
    for (const s of job.splits) m.xadd(k.splits, `${s.index + 1}-0`, 'split', String(s.index));
    const done = await m.exec();
    if (done !== null) return { created: true };
  }
  throw new SluiceError(`job ${job.name}: another submit kept changing it; try again`);
}

/**
 * Reads job `name`'s spec; a job never submitted is one clear error.
 *
 * @example
 * const job = await loadJob(redis, 'ctr');
 */
export async function loadJob(redis: Redis, name: string): Promise<JobSpec> {
  const text = await redis.get(jobKeys(checkJobName(name)).spec);
  if (text === null) throw new SluiceError(`no job named ${name} in this Redis (submit it first: sluice job submit ${name} …)`);
  return JSON.parse(text) as JobSpec;
}
