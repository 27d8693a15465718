/**
 * Measured calibration of `backend: "auto"`: what each candidate placement really costs on this
 * plan, this machine and the real pipeline path (see docs/optimizer.md, "Measured calibration").
 *
 * The op cost model (placement/cost.ts) predicts one op at a time on synthetic columns; it cannot see
 * what the real path does around the ops: the cpu path's pushdown into the Parquet decoder (op
 * chains run once per dictionary entry in the decode workers), the webgpu backend's optimizer
 * (shared sub-chains, fused stages, one upload and dispatch per stage), decode time, or that a
 * software GPU (llvmpipe) computes on the same cores as everything else. So auto does not trust
 * it alone: it runs the first batches of the real data through every candidate placement — each
 * backend alone with its own defaults (pushdown for cpu, optimizer for webgpu), each other backend
 * with the per-value features pushed into the reader, and the model's mixed placement if it
 * proposes one — and keeps the cheapest. Like the op model, measurements are cached per plan,
 * candidate and machine, so only the first run pays for them.
 *
 * A candidate is measured by running it over the first row groups of the data (at least two,
 * and at least four batches' worth), so that reading, decoding, ops and batch assembly overlap as
 * in a real run, and its time is split into a fixed part (`fixedMs`: optimizer, backend and
 * worker start, pipeline fill) and a steady part per batch (`perBatchMs`, from the first batch to
 * the end); a run of `n` batches is predicted as `fixedMs + n * perBatchMs`.
 */
import { createHash, type Hash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendSpec, ColumnType, TypedPlan } from '@sluice/ops';
import { pushdownExtent, readerCanCompute } from '../plan/pushdown.js';
import type { Dataset } from '../reader/dataset.js';
import { cacheRoot, machineKey } from '../util/cache.js';
import type { Placement } from './cost.js';

/** A placement auto can run: a label (cache key, report) and the backend spec that runs it. */
export interface Candidate {
  /** `cpu`, `webgpu`, `webgpu+pushdown` (reader computes per-value features), `mixed`. */
  readonly label: string;
  readonly spec: BackendSpec;
}

/** What a candidate cost on the real path (best of the probe rounds). */
export interface Measurement {
  /** Milliseconds a run pays once: optimizer, backend and worker start, filling the pipeline. */
  readonly fixedMs: number;
  /** Milliseconds per full batch in steady state: reading, decoding, ops, batch assembly. */
  readonly perBatchMs: number;
}

/** Bump when what a measurement means changes: older cache entries are then ignored. */
const VERSION = 3;

const typeKey = (t: ColumnType): string => (t.kind === 'list' ? `list<${t.child}>` : t.kind === 'fixed' ? `fixed${t.size}` : t.kind);

/**
 * Feeds a JSON-like value to a hash. Arrays of numbers (bucketize borders: RM5 has 42 × 4096) go
 * in as float64 bytes, which is much cheaper than stringifying them.
 */
function hashValue(h: Hash, v: unknown): void {
  if (Array.isArray(v)) {
    if (v.length > 0 && v.every((x) => typeof x === 'number')) {
      const f = Float64Array.from(v as number[]);
      h.update(`#${f.length}:`).update(new Uint8Array(f.buffer));
      return;
    }
    h.update('[');
    for (const x of v) {
      hashValue(h, x);
      h.update(',');
    }
    h.update(']');
  } else if (typeof v === 'object' && v !== null) {
    h.update('{');
    for (const [k, x] of Object.entries(v)) {
      h.update(JSON.stringify(k)).update(':');
      hashValue(h, x);
      h.update(',');
    }
    h.update('}');
  } else {
    h.update(typeof v === 'bigint' ? `${v}n` : String(JSON.stringify(v)));
  }
}

const planKeys = new WeakMap<object, string>();

/**
 * The plan part of the cache key: features as written with their input types, batch size,
 * label, and whether the run shuffles (a shuffled run cannot push down).
 */
export function planKey(plan: TypedPlan): string {
  const known = planKeys.get(plan);
  if (known !== undefined) return known;
  const h = createHash('sha256');
  hashValue(h, [VERSION, plan.features.map((f, i) => [plan.spec.features[i], typeKey(f.inputType)]), plan.batchSize, plan.label, plan.shuffle !== null]);
  const key = h.digest('hex').slice(0, 16);
  planKeys.set(plan, key);
  return key;
}

/** Where a plan's measurements on this machine are cached (one file, an entry per candidate). */
export function calibrationCachePath(plan: TypedPlan): string {
  return join(cacheRoot(), `placement-${planKey(plan)}-${machineKey()}.json`);
}

const isMeasurement = (x: unknown): x is Measurement =>
  typeof x === 'object' && x !== null && Number.isFinite((x as Measurement).fixedMs) && Number.isFinite((x as Measurement).perBatchMs);

/** Cached measurements of a plan's candidates on this machine, by candidate label. */
export function readMeasurements(plan: TypedPlan): Record<string, Measurement> {
  try {
    const raw = JSON.parse(readFileSync(calibrationCachePath(plan), 'utf8')) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(raw).filter((e): e is [string, Measurement] => isMeasurement(e[1])));
  } catch {
    return {};
  }
}

/** Adds measurements to a plan's cache entry (a read-only cache only costs a new measurement). */
export function writeMeasurements(plan: TypedPlan, measured: Readonly<Record<string, Measurement>>): void {
  const p = calibrationCachePath(plan);
  try {
    mkdirSync(join(p, '..'), { recursive: true });
    const tmp = `${p}.tmp-${process.pid}`;
    writeFileSync(tmp, JSON.stringify({ ...readMeasurements(plan), ...measured }));
    renameSync(tmp, p);
  } catch {
    /* ignore */
  }
}

/**
 * The placements worth measuring: every backend the model could calibrate, alone with its own
 * defaults; every backend but cpu with the reader computing the per-value features (`+pushdown`)
 * when pushdown applies and leaves it something to do (when it leaves nothing, that is the cpu
 * path); and the model's placement when it mixes backends.
 *
 * @param pushdown whether the run can push down (no shuffle, local files) and, if so, whether
 *   features are left for the backend afterwards.
 */
export function candidatePlacements(
  backends: readonly string[],
  model: Placement,
  pushdown: { possible: boolean; leavesWork: boolean },
  extra: Readonly<Record<string, unknown>> = {},
): Candidate[] {
  const out: Candidate[] = [];
  const withCpu = (name: string): BackendSpec => ({ name, ...(name === 'cpu' && extra.workers !== undefined ? { workers: extra.workers } : {}) });
  for (const b of backends) {
    out.push({ label: b, spec: withCpu(b) });
    if (b !== 'cpu' && pushdown.possible && (pushdown.leavesWork || !backends.includes('cpu')))
      out.push({ label: `${b}+pushdown`, spec: { ...withCpu(b), pushdown: true } });
  }
  if (new Set(model.byFeature.values()).size > 1) {
    out.push({
      label: 'mixed',
      spec: { name: 'auto', placement: Object.fromEntries(model.byFeature), ...(extra.workers !== undefined ? { workers: extra.workers } : {}) },
    });
  }
  return out;
}

/**
 * The candidates auto measures for a run of `plan` over the files of `dataset`, with the auto
 * spec's other options `extra` (`pushdown: false` rules the reader out, as in the run), and the
 * candidate the cost model alone picks: the choice while nothing is measured. The pipeline and
 * `sluice explain` both take them from here, so explain lists what a run would measure.
 */
export function runCandidates(
  backends: readonly string[],
  model: Placement,
  plan: TypedPlan,
  dataset: Pick<Dataset, 'files'>,
  extra: Readonly<Record<string, unknown>> = {},
): { candidates: Candidate[]; modelChoice: Candidate } {
  const pd = extra.pushdown === false || !readerCanCompute(dataset, plan) ? 'none' : pushdownExtent(plan);
  const candidates = candidatePlacements(backends, model, { possible: pd !== 'none', leavesWork: pd === 'some' }, extra);
  const names = [...new Set(model.byFeature.values())];
  const modelChoice = candidates.find((c) => c.label === (names.length > 1 ? 'mixed' : names[0]))!;
  return { candidates, modelChoice };
}

/** Predicted milliseconds of a run of `batches` batches (may be fractional) from a measurement. */
export function predictRun(m: Measurement, batches: number): number {
  return m.fixedMs + batches * m.perBatchMs;
}

/**
 * The measured candidate with the least predicted run time, or null when none is measured. Ties
 * go to the earlier candidate (single backends come first).
 */
export function chooseMeasured(candidates: readonly Candidate[], measured: Readonly<Record<string, Measurement>>, batches: number): Candidate | null {
  let best: Candidate | null = null;
  let bestMs = Infinity;
  for (const c of candidates) {
    const m = measured[c.label];
    if (m === undefined) continue;
    const ms = predictRun(m, batches);
    if (ms < bestMs) {
      best = c;
      bestMs = ms;
    }
  }
  return best;
}

/** Probe rounds at most; a round runs every candidate still in the race once. */
export const PROBE_ROUNDS = 5;
/** No further round starts once the probes have taken this long (ms). */
export const PROBE_BUDGET_MS = 20_000;
/**
 * After the first round, a candidate whose steady part alone (per-batch time × batches) is this
 * many times the best candidate's whole predicted run is not probed again. Its fixed part is left
 * out, so the one-off costs of a first run (GPU device, shader compiles) cannot drop it; only a
 * candidate that loses by a wide margin on every batch does, which spares a first `auto` run a
 * second probe of an answer already clear (docs/optimizer.md, "Measured calibration").
 */
export const PROBE_HOPELESS = 3;
/** After two rounds, a candidate predicted this much slower than the best drops out… */
export const PROBE_DROP = 1.5;
/** …and after three, one this much slower. */
export const PROBE_KEEP = 1.15;

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 === 1 ? s[h]! : (s[h - 1]! + s[h]!) / 2;
};

/**
 * A candidate's estimate from its probes: the best of one or two (the first run of a process
 * pays one-off costs such as the GPU device and shader compiles, which a real run pays once), the
 * median of three or more (the machine is shared: a probe that ran alone is as rare as one that
 * ran beside a benchmark, and the median is what a run can expect).
 */
function estimate(xs: readonly Measurement[]): Measurement {
  if (xs.length <= 2) return { fixedMs: Math.min(...xs.map((x) => x.fixedMs)), perBatchMs: Math.min(...xs.map((x) => x.perBatchMs)) };
  return { fixedMs: median(xs.map((x) => x.fixedMs)), perBatchMs: median(xs.map((x) => x.perBatchMs)) };
}

/**
 * Measures candidates by running them (`probe`) round-robin, interleaved so that load from other
 * processes hits them alike. Every candidate runs twice, unless its first run's steady part alone
 * is `PROBE_HOPELESS` times the best one's whole run; a third round runs those within
 * `PROBE_DROP` of the best, and further rounds (up to `PROBE_ROUNDS`) those within `PROBE_KEEP`,
 * while more than one is left: close calls get more samples. No round starts after `budgetMs`
 * of probing (large row groups of wide data make each probe long). A candidate whose probe fails
 * is left out (the real run reports the error, if it has it too).
 */
export async function measureCandidates(
  candidates: readonly Candidate[],
  batches: number,
  probe: (c: Candidate) => Promise<Measurement>,
  budgetMs = PROBE_BUDGET_MS,
): Promise<Record<string, Measurement>> {
  const samples = new Map<string, Measurement[]>();
  let live = [...candidates];
  const t0 = performance.now();
  const ms = (c: Candidate): number => predictRun(estimate(samples.get(c.label)!), batches);
  for (let round = 0; round < PROBE_ROUNDS && live.length > 0; round++) {
    // Repeats only while they are cheap: a long probe is less noisy, and first use must end.
    if (round > 0 && performance.now() - t0 > budgetMs) break;
    if (round >= 1) {
      const top = Math.min(...live.map(ms));
      // Round 2 looks at the steady part alone (PROBE_HOPELESS), later rounds at the whole run.
      live = live.filter(
        round === 1
          ? (c) => estimate(samples.get(c.label)!).perBatchMs * batches <= top * PROBE_HOPELESS
          : (c) => ms(c) <= top * (round === 2 ? PROBE_DROP : PROBE_KEEP),
      );
      if (live.length < 2) break;
    }
    const next: Candidate[] = [];
    for (const c of live) {
      try {
        const m = await probe(c);
        (samples.get(c.label) ?? samples.set(c.label, []).get(c.label)!).push(m);
        next.push(c);
      } catch {
        samples.delete(c.label);
      }
    }
    live = next;
  }
  return Object.fromEntries([...samples].map(([k, xs]) => [k, estimate(xs)]));
}

/** A probe stops once it has run this long past its first batch (ms). */
export const PROBE_STEADY_MS = 1500;

/**
 * The prefix of `dataset` a probe reads: its first row groups, at least two and at least four
 * batches' worth, so that reading, decoding, ops and batch assembly overlap as in a real run.
 */
export function probePrefix(dataset: Dataset, batchSize: number): Dataset {
  const { units } = dataset;
  let n = 0;
  let rows = 0;
  while (n < units.length && (n < 2 || rows < 4 * batchSize)) rows += units[n++]!.rows;
  return { ...dataset, units: units.slice(0, n), totalRows: rows };
}

/** When, in ms since a probe started, it had finished how many rows. */
export interface ProbePoint {
  readonly ms: number;
  readonly rows: number;
}

/**
 * A probe's time as fixed + per row: the per-row part from the first batch to the last (rows
 * counted as the preprocess stage finished them: a packed reader hands over whole row groups),
 * the fixed part (setup, worker start, pipeline fill) what is left of the first batch's time.
 * `setupMs` is the probe run's own setup time, for a probe whose rows all arrived at once.
 */
export function fitProbe(first: ProbePoint, last: ProbePoint, setupMs: number, batchSize: number): Measurement {
  // One arrival only (the whole prefix at once): no slope to fit; all but the setup is per row.
  const perRow = last.rows > first.rows ? (last.ms - first.ms) / (last.rows - first.rows) : Math.max(0, last.ms - setupMs) / last.rows;
  return { fixedMs: Math.max(0, first.ms - perRow * first.rows), perBatchMs: perRow * batchSize };
}
