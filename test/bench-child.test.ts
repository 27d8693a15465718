// bench/lib.ts's contender children (e2e.ts runs each Sluice mode in a process of its own): the
// parent's proxies get the child's own timings and results, its errors, and its death.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { childContenders } from '../bench/lib.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/bench-child.ts', import.meta.url));
const NODE_ARGS = ['--import', 'tsx'];
const start = (names: string[], env: Record<string, string> = {}) =>
  childContenders(names, FIXTURE, [], { env: { ...process.env, ...env }, nodeArgs: NODE_ARGS });

describe('childContenders', () => {
  it('runs each contender in the child and reports its own time, CPU and results', async () => {
    const kid = start(['sleep', 'boom'], { FIXTURE_SAY: 'a stray line on stdout' });
    try {
      const [sleep] = kid.contenders;
      expect(sleep!.name).toBe('sleep');
      await sleep!.setup!();
      for (let i = 0; i < 2; i++) {
        const r = await sleep!.run();
        expect(r.rows).toBe(3);
        expect(r.seconds).toBeGreaterThanOrEqual(0.018);
        expect(r.seconds).toBeLessThan(5);
        expect(r.cpuSeconds).toBeGreaterThanOrEqual(0);
        expect(r.extra?.pid).not.toBe(process.pid);
      }
    } finally {
      await kid.close();
    }
  });

  it("passes a contender's error on, naming it, and keeps serving", async () => {
    const kid = start(['sleep', 'boom']);
    try {
      const [sleep, boom] = kid.contenders;
      await boom!.setup!();
      await expect(boom!.run()).rejects.toThrow(/boom \(child process\): Error: boom at row 7/);
      expect((await sleep!.run()).rows).toBe(3);
    } finally {
      await kid.close();
    }
  });

  it('refuses a child that serves other contenders', async () => {
    const kid = start(['sleep', 'other']);
    try {
      await expect(kid.contenders[0]!.setup!()).rejects.toThrow(/serves \["sleep","boom"\], expected \["sleep","other"\]/);
    } finally {
      await kid.close();
    }
  });

  it('fails the run a child died in, and every later one', async () => {
    const kid = start(['sleep', 'boom'], { FIXTURE_EXIT: '3' });
    const [sleep] = kid.contenders;
    await sleep!.setup!();
    await expect(sleep!.run()).rejects.toThrow(/exited with 3/);
    await expect(sleep!.run()).rejects.toThrow(/exited with 3/);
    await kid.close();
  });
});
