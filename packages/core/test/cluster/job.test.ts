/**
 * A job names its local files by absolute path, whatever folder `sluice job submit` ran in:
 * docs/cluster.md submits "from anywhere that reads the files", and workers run in folders of
 * their own. A glob used to be listed relative to the submitter's folder (an absolute
 * `/shared/day1/*.parquet` became `../../shared/day1/…`), which a worker elsewhere could not open.
 */
import { rmSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildJob } from '../../src/cluster/job.js';
import { fingerprint } from '../../src/pipeline/resume.js';
import { pipeline } from '../../src/pipeline/pipeline.js';
import { loadPlan } from '@sluice/ops';
import { tempDir } from '../helpers.js';
import { dataset, plan } from './cluster.js';

describe('cluster: job inputs', () => {
  const dir = tempDir('sluice-job-');
  let file: string;

  beforeAll(async () => {
    file = await dataset(dir);
  }, 60_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['an absolute glob', () => join(dir, '*.parquet')],
    ['a relative path', () => relative(process.cwd(), file)],
    ['a folder', () => dir],
  ])('%s is stored as absolute paths, with the fingerprint a worker computes from them', async (_what, input) => {
    const job = await buildJob({ name: 'abs', plan: plan(), input: input() });
    expect(job.input).toEqual([file]);
    expect(job.input.every((f) => isAbsolute(f))).toBe(true);
    const info = await pipeline(job.plan, { input: job.input, windowBatches: true }).info();
    expect(fingerprint(loadPlan(job.plan), info.dataset)).toBe(job.fingerprint);
  });
});
