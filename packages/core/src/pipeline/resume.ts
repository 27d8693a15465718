/**
 * Resuming a run: the small JSON state of where the consumer stands, the fingerprint that ties it
 * to one plan and data set, and where a resumed run starts.
 */
import { createHash } from 'node:crypto';
import { PlanError, show, type Plan } from '@sluice/ops';
import type { Batch } from '../batch/index.js';
import type { Dataset } from '../reader/dataset.js';
import { START, type Cursor } from '../stream/source.js';

/**
 * Where an interrupted run stands: small JSON, never buffered data. Passing it back as
 * `pipeline(plan, { resume })` yields exactly the batches the interrupted run had yet to yield.
 *
 * @example
 * const p = pipeline(plan, { input });
 * for await (const b of p) { train(b); if (stopping) { saved = p.state(); break; } }
 * for await (const b of pipeline(plan, { input, resume: saved! })) train(b);
 */
export interface IteratorState {
  readonly version: 1;
  readonly epoch: number;
  readonly window: number;
  readonly offset: number;
  /** Batches emitted so far (the next batch's seq). */
  readonly seq: number;
  /** Shuffle seed, or null without shuffle. */
  readonly seed: number | null;
  /** Fingerprint of the plan and file list; a state from another plan or data set is refused. */
  readonly fingerprint: string;
}

/** Fingerprint of what decides a run's batches: the features, batching, shuffle, shard, epochs, label, and the files' row groups. */
export function fingerprint(plan: Plan, dataset: Dataset): string {
  const h = createHash('sha256');
  h.update(JSON.stringify(plan.spec.features));
  h.update(JSON.stringify([plan.batchSize, plan.dropLast, plan.shuffle, plan.shard, plan.epochs, plan.label]));
  for (const f of dataset.files) h.update(`${f.source}:${f.rowGroups.join(',')}`);
  return h.digest('hex').slice(0, 16);
}

/** Where a run starts and its first batch's seq: the beginning, or the position `resume` saved (refused when its fingerprint is not `fp`). */
export function resumeStart(resume: IteratorState | undefined, fp: string): { start: Cursor; firstSeq: number } {
  if (resume === undefined) return { start: START, firstSeq: 0 };
  const malformed = stateProblem(resume);
  if (malformed !== null) throw new PlanError(`resume state is not one pipeline.state() returned: ${malformed}`);
  if (resume.fingerprint !== fp) throw new PlanError('resume state is from another plan or data set (fingerprint differs)');
  return { start: { epoch: resume.epoch, window: resume.window, offset: resume.offset }, firstSeq: resume.seq };
}

/** The state once the consumer has taken batch `b`: resuming from it yields the batches after `b`. */
export function stateAfter(s: IteratorState, b: Batch): IteratorState {
  return { ...s, epoch: b.end.epoch, window: b.end.window, offset: b.end.offset, seq: b.seq + 1 };
}

/** What is wrong with a resume state's shape (a hand-edited or truncated file, say), or null. */
function stateProblem(s: IteratorState): string | null {
  if (s.version !== 1) return `version must be 1, got ${show(s.version)}`;
  for (const k of ['epoch', 'window', 'offset', 'seq'] as const)
    if (!Number.isSafeInteger(s[k]) || s[k] < 0) return `${k} must be a non-negative integer, got ${show(s[k])}`;
  if (s.seed !== null && !Number.isInteger(s.seed)) return `seed must be an integer or null, got ${show(s.seed)}`;
  if (typeof s.fingerprint !== 'string') return `fingerprint must be a string, got ${show(s.fingerprint)}`;
  return null;
}
