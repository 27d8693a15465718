/**
 * --backend checked against the backends this installation has, before a command does any work:
 * the pipeline would find an unknown name only once it builds the backend, after `demo` has
 * generated its data or `run` has opened its files, and then as a plan error (exit 1) although
 * the mistake is on the command line.
 */
import { backendNames, installedBackendPackages } from '../backend/registry.js';
// Core's own backends (`reference`, the in-process `cpu`, `auto`) register on import.
import '../backend/inline.js';
import '../placement/register.js';
import { UsageError, type Values } from './args.js';

/**
 * Throws a UsageError when --backend names a backend that is neither registered nor installed as
 * `@sluice/backend-NAME`; a list (`cpu,webgpu`, auto over those) is checked name by name.
 * Costs a readdir of each node_modules/@sluice on the resolution path.
 *
 * @example
 * checkBackendArg({ backend: 'nope' }); // throws '--backend "nope" is not a backend here (available: reference, cpu, auto, …)'
 */
export function checkBackendArg(values: Values): void {
  const arg = values.backend;
  if (typeof arg !== 'string') return;
  const known = [...new Set([...backendNames(), ...installedBackendPackages()])];
  const unknown = arg.split(',').find((name) => !known.includes(name));
  if (unknown === undefined) return;
  const what = unknown === arg ? '' : ` (in "${arg}")`;
  throw new UsageError(`--backend "${unknown}"${what} is not a backend here (available: ${known.join(', ')})`);
}
