/** `sluice job submit NAME …` and `sluice job status NAME`: a cluster job's one-time submit and its progress. */
import { loadPlan } from '@sluice/ops';
import { buildJob, loadJob, submitJob } from '../../cluster/job.js';
import { clusterStatus, formatStatus } from '../../cluster/status.js';
import { connectRedis } from '../../cluster/connect.js';
import { inputs, int, planArg, redisArg, UsageError, type Values } from '../args.js';

export async function cmdJob(values: Values, args: readonly string[]): Promise<number> {
  const [action, name] = args;
  if (action !== 'submit' && action !== 'status')
    throw new UsageError(`job takes "submit" or "status", got ${action === undefined ? 'nothing' : `"${action}"`}`);
  if (name === undefined) throw new UsageError(`job ${action} needs the job's name (sluice job ${action} NAME …)`);
  const url = redisArg(values);
  const redis = await connectRedis(url, { maxRetriesPerRequest: 2, retryStrategy: () => null });
  try {
    if (action === 'submit') {
      // Read once: its spec goes to the job, its "input" is --input's default.
      const plan = loadPlan(planArg(values));
      const job = await buildJob({
        name,
        plan: plan.spec,
        input: inputs(values, plan),
        ...(values.seed !== undefined ? { seed: int(values, 'seed') } : {}),
        ...(values.epochs !== undefined ? { epochs: int(values, 'epochs', undefined, { min: 1 }) } : {}),
        ...(values['batch-size'] !== undefined ? { batchSize: int(values, 'batch-size', undefined, { min: 1 }) } : {}),
        ...(values['split-batches'] !== undefined ? { splitBatches: int(values, 'split-batches', undefined, { min: 1 }) } : {}),
        ...(typeof values.state === 'string' ? { fitState: values.state } : {}),
      });
      const { created } = await submitJob(redis, job);
      const what = `job ${name}: ${job.batches} batches in ${job.splits.length} splits over ${job.input.length} file${job.input.length === 1 ? '' : 's'}`;
      if (values.json) process.stdout.write(`${JSON.stringify({ job: name, created, batches: job.batches, splits: job.splits.length })}\n`);
      else process.stderr.write(`${created ? 'submitted' : 'already submitted (unchanged)'}: ${what}\n`);
      return 0;
    }
    const s = await clusterStatus(redis, await loadJob(redis, name));
    process.stdout.write(`${values.json ? JSON.stringify(s) : formatStatus(s)}\n`);
    return 0;
  } finally {
    redis.disconnect();
  }
}
