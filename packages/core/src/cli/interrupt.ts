/**
 * Cleaning up when SIGINT (Ctrl-C) or SIGTERM stops a command. Node's default for those signals
 * ends the process at once, skipping every `finally`, so a file being written would stay behind
 * half-written. While a command has something to clean up, this module handles the two signals:
 * it runs the clean-ups, then raises the same signal again with Node's default in place, so the
 * process still ends the way the signal asks (a shell or supervisor sees "killed by SIGINT").
 */
import { mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const cleanups = new Set<() => void>();

function onSignal(signal: NodeJS.Signals): void {
  for (const s of SIGNALS) process.off(s, onSignal);
  for (const c of cleanups) {
    try {
      c();
    } catch {
      // Best effort: the process is stopping and has no one to report to.
    }
  }
  cleanups.clear();
  process.kill(process.pid, signal);
}

/**
 * Runs `cleanup` (synchronously) if SIGINT or SIGTERM arrives before the returned function is
 * called; that function unregisters it.
 *
 * @example
 * const done = onInterrupt(() => rmSync(workDir, { recursive: true, force: true }));
 * try { await work(workDir); } finally { done(); rmSync(workDir, { recursive: true, force: true }); }
 */
export function onInterrupt(cleanup: () => void): () => void {
  if (cleanups.size === 0) for (const s of SIGNALS) process.on(s, onSignal);
  cleanups.add(cleanup);
  return () => {
    if (!cleanups.delete(cleanup)) return;
    if (cleanups.size === 0) for (const s of SIGNALS) process.off(s, onSignal);
  };
}

/**
 * Removes a folder and all it holds, also while another thread is creating a file in it (a
 * writer's encoder thread opens its file whenever it gets there): the folder's last rmdir then
 * fails ENOTEMPTY, and a second pass takes the newcomer. Once the folder is gone, nothing can be
 * created in it.
 *
 * @example
 * onInterrupt(() => removeTree(workDir));
 */
export function removeTree(dir: string): void {
  for (let pass = 1; ; pass++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOTEMPTY' || pass === 3) throw e;
    }
  }
}

/**
 * Removes the files next to `target` whose names start with `<target's name>.partial-<this pid>`:
 * this process's temporary for `target`, and any temporary a writer made from that name
 * (ParquetFileWriter writes `<its path>.<pid>.<random>.partial` and renames it when closed).
 *
 * @example
 * onInterrupt(() => removePartials('/data/cache/demo.parquet'));
 */
export function removePartials(target: string): void {
  const dir = dirname(target);
  const prefix = `${basename(target)}.partial-${process.pid}`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(prefix)) rmSync(join(dir, name), { force: true, recursive: true });
}

/** A file written under a temporary name and renamed into place when complete. */
export interface PartialFile {
  /**
   * Where to write: `<target>.partial-<pid>`. A writer may add to the name for its own temporary
   * (ParquetFileWriter: `<target>.partial-<pid>.<pid>.<random>.partial`), which removePartials finds.
   */
  readonly path: string;
  /** Renames the finished file to the target (replacing an older one) and stops watching for signals. */
  commit(): void;
  /** Removes what was written (the writer's own temporaries too) and stops watching for signals. */
  discard(): void;
}

/**
 * Writes `target` without ever leaving half of it: readers see the old file or the new one, a
 * failure calls discard(), and SIGINT or SIGTERM removes the partial file before the process ends.
 *
 * @example
 * const out = partialFile('out.parquet');
 * try { await write(out.path); out.commit(); } catch (e) { out.discard(); throw e; }
 */
export function partialFile(target: string): PartialFile {
  const path = `${target}.partial-${process.pid}`;
  // An output may name folders that do not exist yet (`--output runs/7/out.parquet`): made here,
  // for every writer alike (checkOutputPath has checked that they can be).
  mkdirSync(dirname(target), { recursive: true });
  // Sweeping twice: a writer's rename of its own temporary to `path` may land between the two.
  const sweep = (): void => {
    removePartials(target);
    removePartials(target);
  };
  const done = onInterrupt(sweep);
  return {
    path,
    commit() {
      renameSync(path, target);
      done();
    },
    discard() {
      done();
      sweep();
    },
  };
}
