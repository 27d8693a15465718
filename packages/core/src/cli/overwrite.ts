/**
 * Refusing an output that is one of the command's own inputs. `sluice run --input x.parquet
 * --output x.parquet` would replace the data with its preprocessed columns, and a glob over a
 * folder the output sits in can match last run's output. Checked before anything runs.
 */
import { stat } from 'node:fs/promises';
import { isUrl } from '../util/url.js';
import { resolveInputs } from '../reader/dataset.js';
import { UsageError } from './args.js';

/** What a command reads besides its output: the data (paths, globs, folders, URLs), and its plan and state files. */
export interface CommandReads {
  readonly inputs?: readonly string[];
  readonly plan?: string;
  readonly state?: string;
}

/**
 * Throws a UsageError when `output` is, under any name (a relative path, a symbolic or hard link),
 * one of the files the command reads. An output that does not exist yet is no one's input.
 *
 * @example
 * await refuseOverwritingInputs('out.parquet', { inputs: ['data/*.parquet'], plan: 'plan.json' });
 */
export async function refuseOverwritingInputs(output: string, reads: CommandReads): Promise<void> {
  const out = await stat(output).catch(() => null);
  if (out === null) return;
  // The same file is the same device and inode, whatever the path that reached it.
  const same = async (p: string): Promise<boolean> => {
    const s = await stat(p).catch(() => null);
    return s !== null && s.dev === out.dev && s.ino === out.ino;
  };
  const refuse = (what: string): never => {
    throw new UsageError(`--output ${output} is ${what}: writing it would destroy what this command reads; choose another output`);
  };
  if (reads.plan !== undefined && !reads.plan.trimStart().startsWith('{') && (await same(reads.plan))) refuse('the plan file');
  if (reads.state !== undefined && (await same(reads.state))) refuse('the state file');
  // A URL is never the local output: leaving them out spares resolveInputs' request to each.
  const local = (reads.inputs ?? []).filter((p) => !isUrl(p));
  if (local.length === 0) return;
  for (const f of await resolveInputs(local)) {
    if (await same(f)) refuse(f === output ? 'also an input' : `also an input (${f})`);
  }
}
