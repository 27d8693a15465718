/**
 * Checks on a command's output path, made before anything runs: an output the command cannot
 * write (a folder, a path under a file, a folder that takes no new files) would otherwise fail
 * with the system's error code, and only once the work is done; and an output that is one of the
 * command's own inputs (`sluice run --input x.parquet --output x.parquet`, or a glob over the
 * folder the output sits in that matches last run's output) would destroy what it reads.
 */
import { closeSync, openSync, statSync, unlinkSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isUrl } from '../util/url.js';
import { resolveInputs } from '../reader/dataset.js';
import { UsageError } from './args.js';

/** The system's reason for not creating a file in `dir`, in words (never the bare error code). */
function reason(e: unknown, dir: string): string {
  switch ((e as NodeJS.ErrnoException).code) {
    case 'EACCES':
    case 'EPERM':
      return `permission denied in ${dir}`;
    case 'EROFS':
      return `${dir} is on a read-only file system`;
    case 'ENOSPC':
    case 'EDQUOT':
      return `no space left in ${dir}`;
    case 'ENOTDIR':
      return `${dir} is not a folder`;
    // /proc, /sys and the like exist but take no new files.
    case 'ENOENT':
      return `${dir} does not take new files`;
    default:
      return `cannot create a file in ${dir}`;
  }
}

/** stat, or null where nothing is there (or a file stands where a folder should). */
function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw e;
  }
}

/**
 * Throws a UsageError, naming `flag` and the path, when the command could not write `output`: it
 * is a folder or some other non-file (`/dev/null`: renaming the finished file over it would
 * replace the device), a file stands where a folder of its path should be, or the folder it
 * would go in takes no new file. Missing folders are fine (the writer creates them), so the test
 * is made in the nearest folder that exists: a file is created there and removed at once, the
 * only test that also holds for root (who passes every permission check) and for /proc or a
 * read-only mount. Cheap: a few stats and one empty file.
 *
 * @example
 * checkOutputPath('--output', 'out.parquet'); // before the command reads anything
 */
export function checkOutputPath(flag: string, output: string): void {
  const cannot = (why: string): never => {
    throw new UsageError(`cannot write ${flag} ${output}: ${why}`);
  };
  let existing: Stats | null;
  try {
    existing = statOrNull(output);
  } catch (e) {
    return cannot(reason(e, dirname(output)));
  }
  if (existing?.isDirectory()) throw new UsageError(`${flag} ${output} is a folder, not a file`);
  if (existing !== null && !existing.isFile()) throw new UsageError(`${flag} ${output} is not a regular file (a device, pipe or socket): give a file path`);
  // The nearest folder of the path that exists: where the file, or its first missing folder, goes.
  // The path as given, not resolved, so that the message names what the user wrote.
  let dir = dirname(output);
  let found: Stats | null = null;
  for (;;) {
    try {
      found = statOrNull(dir);
    } catch (e) {
      return cannot(reason(e, dir));
    }
    if (found !== null || dirname(dir) === dir) break;
    dir = dirname(dir);
  }
  if (found === null) return cannot(`no folder of its path exists`);
  if (!found.isDirectory()) return cannot(`${dir} is a file, not a folder`);
  const probe = join(dir, `.${basename(output)}.sluice-check-${process.pid}`);
  try {
    closeSync(openSync(probe, 'wx'));
  } catch (e) {
    // Left by an earlier process of this pid: the folder took that file, so it takes ours.
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return;
    return cannot(reason(e, dir));
  }
  unlinkSync(probe);
}

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
export async function refuseOverwritingInputs(output: string, reads: CommandReads, flag = '--output'): Promise<void> {
  const out = await stat(output).catch(() => null);
  if (out === null) return;
  // The same file is the same device and inode, whatever the path that reached it.
  const same = async (p: string): Promise<boolean> => {
    const s = await stat(p).catch(() => null);
    return s !== null && s.dev === out.dev && s.ino === out.ino;
  };
  const refuse = (what: string): never => {
    throw new UsageError(`${flag} ${output} is ${what}: writing it would destroy what this command reads; choose another output`);
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
