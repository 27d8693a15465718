/** `sluice reproduce`: rerun a paper's table on a simulated backend, which provides the reproduction. */
import { mkdtempSync } from 'node:fs';
import { freemem, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { positiveInt, UsageError, type Values } from '../args.js';
import { onInterrupt, removeTree } from '../interrupt.js';
import {
  REPRODUCTIONS,
  formatBytes,
  formatSeconds,
  isReproduction,
  reproductionBytes,
  reproductionSeconds,
  type Reproduction,
  type ReproductionName,
} from '../reproductions.js';

/** What a simulator package exports for `sluice reproduce`. */
type ReproductionRun = (o: { rows?: number; json?: boolean; onProgress?: (step: string) => void; tmpDir?: string }) => Promise<string>;

/**
 * Memory this process may still use: the system's available memory (MemAvailable, which counts
 * reclaimable cache), and within a container's limit what is left of it.
 *
 * @example
 * const { available, total } = availableMemory(); // bytes
 */
export function availableMemory(): { available: number; total: number } {
  let total = totalmem();
  let available = freemem();
  // A cgroup limit (a container): 0, undefined or more than the machine means none.
  const limit = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory?.();
  if (limit !== undefined && limit > 0 && limit < total) {
    total = limit;
    available = Math.min(available, limit - process.memoryUsage.rss());
  }
  return { available, total };
}

/**
 * Refuses `rows` when the run's estimated peak memory is more than the machine has available:
 * such a run would swap for a long time or be killed, after minutes of work, with nothing shown.
 *
 * @example
 * checkFits('presto', REPRODUCTIONS.presto, 100_000, { available: 2e9, total: 4e9 }); // throws: "... use --rows 73,000 or fewer"
 */
export function checkFits(name: ReproductionName, r: Reproduction, rows: number, mem = availableMemory()): void {
  const need = reproductionBytes(r, rows);
  if (need <= mem.available) return;
  const most = Math.floor((mem.available - r.baseBytes) / r.bytesPerRow);
  // Rounded down to two significant digits: a size to type, not a promise to the byte.
  const unit = most < 100 ? 1 : 10 ** (Math.floor(Math.log10(most)) - 1);
  const round = Math.floor(most / unit) * unit;
  throw new UsageError(
    `${name} --rows ${rows.toLocaleString('en-US')} would need about ${formatBytes(need)} of memory ` +
      `(${formatBytes(r.baseBytes)} + ${formatBytes(r.bytesPerRow * 1000)} per 1,000 rows; docs/cli.md#reproduce), ` +
      `but ${formatBytes(mem.available)} of this machine's ${formatBytes(mem.total)} is available: ` +
      (round > 0 ? `use --rows ${round.toLocaleString('en-US')} or fewer` : 'free some memory first'),
  );
}

export async function cmdReproduce(values: Values, target: string | undefined): Promise<number> {
  if (target === undefined || !isReproduction(target))
    throw new UsageError(`reproduce takes one of ${Object.keys(REPRODUCTIONS).join(', ')}${target === undefined ? '' : `, got "${target}"`}`);
  const r: Reproduction = REPRODUCTIONS[target];
  // The CLI passes its own default, so that --help states the size that runs.
  const rows = positiveInt(values, 'rows') ?? r.defaultRows;
  checkFits(target, r, rows);
  // Loaded at run time so that core never imports a backend package.
  let pkg: { reproductions?: Record<string, ReproductionRun> };
  try {
    pkg = (await import(`@sluice/backend-${r.backend}`)) as typeof pkg;
  } catch (e) {
    throw new UsageError(`reproduce ${target} needs the package @sluice/backend-${r.backend} (${(e as Error).message})`);
  }
  const run = pkg.reproductions?.[target];
  if (run === undefined) throw new UsageError(`@sluice/backend-${r.backend} has no reproduction "${target}"`);

  const t0 = performance.now();
  const say = (step: string): void => {
    if (!values.quiet) process.stderr.write(`reproduce ${target} [${((performance.now() - t0) / 1000).toFixed(1)} s]: ${step}\n`);
  };
  say(
    `${rows.toLocaleString('en-US')} rows; expect about ${formatSeconds(reproductionSeconds(r, rows))} and ${formatBytes(reproductionBytes(r, rows))} (on a 2-core VM)`,
  );
  // The generated data goes in a folder of our own, which Ctrl-C removes too.
  const dir = mkdtempSync(join(tmpdir(), 'sluice-reproduce-'));
  const remove = (): void => removeTree(dir);
  const watching = onInterrupt(remove);
  let text: string;
  try {
    text = await run({ rows, json: !!values.json, onProgress: say, tmpDir: dir });
  } finally {
    watching();
    remove();
  }
  say('done');
  process.stdout.write(text + '\n');
  return 0;
}
