/** `sluice serve`: serve a plan's batches over HTTP until SIGINT or SIGTERM. */
import { loadPlan } from '@sluice/ops';
import { createBatchServer, type ServeOptions } from '../../serve/server.js';
import { untilStopped } from '../stop.js';
import { checkBackendArg } from '../backend.js';
import { int, parseSize, pipelineOptions, planArg, tokenArg, UsageError, type Values } from '../args.js';

export async function cmdServe(values: Values): Promise<number> {
  const plan = loadPlan(planArg(values));
  checkBackendArg(values);
  const port = int(values, 'port', undefined, { max: 65535 });
  const token = tokenArg(values);
  const s = await createBatchServer(plan, pipelineOptions(values, plan), { ...(token === undefined ? {} : { token }), ...serveLimits(values) });
  const host = (values.host as string | undefined) ?? '127.0.0.1';
  // Listening for the stop signals before saying "serving", which a supervisor may answer at once.
  const stopped = untilStopped();
  const url = await s.listen(port, host).catch(async (e: unknown) => {
    await s.close();
    throw e;
  });
  if (token === undefined && !/^(127\.|::1$|localhost$)/.test(host)) {
    process.stderr.write(`warning: serving on ${host} without --token (or SLUICE_TOKEN): anyone who can reach port ${new URL(url).port} can read the data\n`);
  }
  process.stderr.write(
    `serving ${s.store.batches} batches of ${plan.batchSize} rows at ${url}/v1/batches/{seq}${token === undefined ? '' : ' (bearer token required)'}\n` +
      `dashboard: ${url}/dashboard${token === undefined ? '' : '?token=TOKEN'}\n`,
  );
  await stopped;
  await s.close();
  return 0;
}

/** The server's bounds from --metrics-auth, --spill-dir, --spill-size, --max-connections and --send-timeout. */
function serveLimits(values: Values): ServeOptions {
  const o: ServeOptions = { onWarning: (m) => process.stderr.write(`warning: ${m}\n`) };
  const auth = values['metrics-auth'];
  if (auth !== undefined) {
    if (auth !== 'token' && auth !== 'open') throw new UsageError(`--metrics-auth must be "token" or "open", got "${String(auth)}"`);
    o.metricsAuth = auth;
  }
  if (typeof values['spill-dir'] === 'string') o.spillDir = values['spill-dir'];
  const size = values['spill-size'];
  if (typeof size === 'string') {
    const bytes = /^\s*\d+\s*$/.test(size) ? Number(size) : parseSize(size); // a bare number is bytes
    if (bytes === undefined) throw new UsageError(`--spill-size takes a size such as 4GiB or 500MB (0 turns the spill off), got "${size}"`);
    o.spillBytes = Math.floor(bytes);
  }
  if (values['max-connections'] !== undefined) o.maxConnections = int(values, 'max-connections');
  if (values['send-timeout'] !== undefined) o.sendTimeoutMs = int(values, 'send-timeout') * 1000;
  return o;
}
