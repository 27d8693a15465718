/** `sluice reproduce`: rerun a paper's table on a simulated backend, which provides the reproduction. */
import { int, UsageError, type Values } from '../args.js';

/** Which simulator package owns each `sluice reproduce` target. */
const REPRODUCTIONS: Record<string, string> = { 'piper-table4': 'fpga-sim', presto: 'smartssd-sim' };

export async function cmdReproduce(values: Values, target: string | undefined): Promise<number> {
  const backend = target === undefined ? undefined : REPRODUCTIONS[target];
  if (backend === undefined)
    throw new UsageError(`reproduce takes one of ${Object.keys(REPRODUCTIONS).join(', ')}${target === undefined ? '' : `, got "${target}"`}`);
  // Loaded at run time so that core never imports a backend package.
  let pkg: { reproductions?: Record<string, (o: { rows?: number; json?: boolean }) => Promise<string>> };
  try {
    pkg = (await import(`@sluice/backend-${backend}`)) as typeof pkg;
  } catch (e) {
    throw new UsageError(`reproduce ${target} needs the package @sluice/backend-${backend} (${(e as Error).message})`);
  }
  const run = pkg.reproductions?.[target!];
  if (run === undefined) throw new UsageError(`@sluice/backend-${backend} has no reproduction "${target}"`);
  const rows = values.rows === undefined ? undefined : int(values, 'rows');
  process.stdout.write((await run({ ...(rows !== undefined ? { rows } : {}), json: !!values.json })) + '\n');
  return 0;
}
