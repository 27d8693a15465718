/**
 * Gives `target` the `release()` of Sluice's reusable memory (`Batch.release`,
 * `StepHints.release`): not enumerable, so the object stays plain data to JSON.stringify, spread
 * and deep-equality checks, and idempotent: `giveBack` runs on the first call only.
 */
export function defineRelease<T extends object>(target: T, giveBack: () => void): T {
  let released = false;
  Object.defineProperty(target, 'release', {
    value: (): void => {
      if (released) return;
      released = true;
      giveBack();
    },
  });
  return target;
}
