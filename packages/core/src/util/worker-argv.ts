/**
 * The Node flags Sluice's own worker threads (decode workers, backend pools) start with.
 *
 * A worker inherits its parent's `execArgv`, module hooks included: under tsx (`--require
 * …/preflight.cjs --import …/loader.mjs`) every thread loads the hooks and sends each of its module
 * loads through them. Sluice's workers run only Sluice's built JavaScript, which needs no hooks,
 * and paid for them: a cpu backend's start and first chunk took several times as long under tsx
 * as under plain node, once per pool and once per backend that `backend: "auto"` starts while it
 * calibrates.
 *
 * So when the parent has hooks (`--import`, `--require`/`-r`, `--loader`, `--experimental-loader`),
 * the workers get its flags without them; the same for `node --input-type=module -e …`, whose
 * `--input-type` would stop every worker from starting. An explicit `execArgv` must hold only
 * flags a worker accepts (Node throws ERR_WORKER_INVALID_EXEC_ARGV on V8 and process-wide flags
 * such as `--max-old-space-size`, which a worker inherits anyway when none is given). Where
 * anything else is left, the workers inherit as before, hooks and all.
 * `SLUICE_WORKER_HOOKS=inherit` keeps the hooks in every case (say, instrumentation loaded with
 * `--import` that should see the workers).
 *
 * @returns the flags to pass as `execArgv`, or undefined to inherit the parent's.
 * @example
 * new Worker(url, { execArgv: workerExecArgv() });
 */
export function workerExecArgv(argv: readonly string[] = process.execArgv, env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  if (env.SLUICE_WORKER_HOOKS === 'inherit') return undefined;
  const kept: string[] = [];
  let dropped = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    if (DROPPED.has(eq < 0 ? a : a.slice(0, eq))) {
      dropped = true;
      if (eq < 0) i++; // its value is the next argument
      continue;
    }
    kept.push(a);
  }
  if (!dropped) return undefined;
  return kept.every((a) => WORKER_SAFE.test(a)) ? kept : undefined;
}

/**
 * Flags the workers do without, each with its value: the module hooks, and the parent's own code
 * given on the command line (`-e`/`--eval`, `-p`/`--print`, which `execArgv` holds with the code)
 * with its `--input-type` (a worker started from a file that inherits it fails to start:
 * "--input-type can only be used with string input via --eval, --print, or STDIN").
 */
const DROPPED = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--input-type', '-e', '--eval', '-p', '--print']);

/**
 * Flags (single tokens) known to be accepted in a worker's explicit execArgv: the inspector, the
 * profilers, warnings and source maps. Anything else sends the workers back to inheriting.
 */
const WORKER_SAFE =
  /^--(?:inspect|inspect-brk|inspect-wait|inspect-port|cpu-prof|cpu-prof-dir|cpu-prof-name|cpu-prof-interval|heap-prof|heap-prof-dir|heap-prof-name|heap-prof-interval|enable-source-maps|no-warnings|no-deprecation|trace-warnings|trace-deprecation|trace-uncaught)(?:=.*)?$/;
