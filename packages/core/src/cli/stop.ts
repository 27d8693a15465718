/**
 * How a long-running command (`sluice serve`, `sluice worker`) learns it should stop: SIGINT or
 * SIGTERM resolves a promise instead of ending the process, so the command closes its server (and
 * hands its leases back) first.
 */

/**
 * Resolves at the first SIGINT or SIGTERM, then stops listening for them. Call it before saying
 * "serving", which a supervisor may answer with a signal at once.
 *
 * @example
 * const stopped = untilStopped();
 * const s = await start();
 * await stopped;
 * await s.close();
 */
export function untilStopped(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
