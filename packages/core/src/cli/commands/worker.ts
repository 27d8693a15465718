/** `sluice worker`: join a cluster job, make its splits and serve their batches until SIGINT or SIGTERM. */
import { startWorker, type WorkerOptions } from '../../cluster/worker.js';
import { untilStopped } from '../stop.js';
import { checkBackendArg } from '../backend.js';
import { int, need, redisArg, tokenArg, UsageError, type Values } from '../args.js';

export async function cmdWorker(values: Values): Promise<number> {
  const port = int(values, 'port', 0, { max: 65535 });
  checkBackendArg(values);
  const token = tokenArg(values);
  const host = (values.host as string | undefined) ?? '127.0.0.1';
  const auth = values['metrics-auth'];
  if (auth !== undefined && auth !== 'token' && auth !== 'open') throw new UsageError(`--metrics-auth must be "token" or "open", got "${String(auth)}"`);
  const o: WorkerOptions = {
    redis: redisArg(values),
    job: need(values, 'job'),
    port,
    host,
    ...(typeof values.advertise === 'string' ? { advertise: values.advertise } : {}),
    ...(typeof values.backend === 'string' ? { backend: values.backend } : {}),
    ...(token === undefined ? {} : { token }),
    ...(auth === undefined ? {} : { metricsAuth: auth }),
    ...(values['lease-ms'] !== undefined ? { leaseMs: int(values, 'lease-ms') } : {}),
    ...(values['max-held'] !== undefined ? { maxHeld: int(values, 'max-held') } : {}),
    ...(values['wait-ms'] !== undefined ? { waitMs: int(values, 'wait-ms') } : {}),
    ...(values['max-attempts'] !== undefined ? { maxAttempts: int(values, 'max-attempts') } : {}),
    ...(values['lease-splits'] !== undefined ? { leaseSplits: int(values, 'lease-splits') } : {}),
    ...(values.decoders !== undefined ? { decoders: int(values, 'decoders') } : {}),
    onWarning: (m) => process.stderr.write(`warning: ${m}\n`),
  };
  // Listening for the stop signals before saying "serving", which a supervisor may answer at once.
  const stopped = untilStopped();
  const w = await startWorker(o);
  if (token === undefined && !/^(127\.|::1$|localhost$)/.test(host)) {
    process.stderr.write(`warning: serving on ${host} without --token (or SLUICE_TOKEN): anyone who can reach it can read the data\n`);
  }
  process.stderr.write(`worker ${w.id} of job ${o.job} serving at ${w.url}/v1/batches/{seq}\n`);
  await stopped;
  await w.stop();
  process.stderr.write(`worker ${w.id} stopped; its leases were handed back\n`);
  return 0;
}
