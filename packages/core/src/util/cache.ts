import { createHash } from 'node:crypto';
import { homedir, cpus } from 'node:os';
import { join } from 'node:path';

/**
 * Sluice's cache folder: `$SLUICE_CACHE_DIR`, else `$XDG_CACHE_HOME/sluice`, else `~/.cache/sluice`.
 * Only the path: writers create it when they write.
 */
export function cacheRoot(): string {
  return process.env.SLUICE_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sluice');
}

/**
 * A short key for "this machine and runtime" (CPU model, core count, Node version): measured costs
 * cached under it are not reused on other hardware or after a Node upgrade.
 */
export function machineKey(): string {
  return createHash('sha256')
    .update(`${cpus()[0]?.model ?? '?'}|${cpus().length}|${process.version}`)
    .digest('hex')
    .slice(0, 10);
}
