/**
 * The backend registry: backend names mapped to factories, plus the lookup that loads a backend's
 * package on first use. It imports none of the backends it holds: core's own register themselves
 * (backend/inline.ts: `reference` and `cpu`; placement/register.ts: `auto`), and whoever needs
 * them (the pipeline, the CLI) imports those modules for their side effect.
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PlanError, type BackendSpec, type PlanState, type TypedPlan } from '@sluice/ops';
import type { Backend, BackendFactory } from './types.js';

const registry = new Map<string, BackendFactory>();
/** Core's own factories, by name: what a list of names (`auto`) runs with, whatever a user registers. */
const builtins = new Map<string, BackendFactory>();

/**
 * Options of a backend registration.
 *
 * @example
 * registerBackend('cpu', createCpuBackend, { readerKernels: cpuReaderKernels });
 */
export interface BackendRegistration {
  /**
   * Kernels for the ops the reader computes on dictionary entries (plan/pushdown.ts), in place of
   * core's reference kernels: the URL of a module whose export `FAST_OPS` maps op names to
   * kernel overrides (`KernelOverride`: return undefined to leave a call to the reference kernel).
   * The decode workers import it. Called with the plan's backend spec; null for none (say, when
   * the spec turns the fast kernels off). The kernels must give bit-identical results.
   */
  readonly readerKernels?: (spec: BackendSpec) => string | null | Promise<string | null>;
}
const registrations = new Map<string, BackendRegistration>();

/**
 * Names given to `registerBackend` (by a backend package as it loads, or by the user). Such a name
 * is used as registered: its package is not imported over it.
 */
const registered = new Set<string>();

/**
 * Makes a backend available to plans under `name`. Backend packages call this on import; core
 * never imports a backend.
 *
 * @example
 * registerBackend('echo', (plan) => ({ name: 'echo', capabilities: { ops: 'all', timing: 'measured' }, run: ..., dispose: async () => {} }));
 */
export function registerBackend(name: string, factory: BackendFactory, options: BackendRegistration = {}): void {
  registry.set(name, factory);
  registrations.set(name, options);
  registered.add(name);
}

/**
 * Registers one of core's own backends. Unlike `registerBackend`, the name stays open: an
 * installed `@sluice/backend-NAME` still loads over it (core's in-process `cpu` is the fallback
 * for the worker-pool package), and a name the user registered first is kept.
 */
export function registerBuiltinBackend(name: string, factory: BackendFactory): void {
  builtins.set(name, factory);
  if (!registered.has(name)) registry.set(name, factory);
}

/**
 * Names of the registered backends.
 *
 * @example
 * backendNames(); // ['reference', 'cpu', 'auto', ...]
 */
export function backendNames(): string[] {
  return [...registry.keys()];
}

/** NAME of every @sluice/backend-NAME package that `loadBackendPackage` could import from here. */
export function installedBackendPackages(): string[] {
  const names = new Set<string>();
  for (const dir of createRequire(import.meta.url).resolve.paths('@sluice/core') ?? []) {
    try {
      for (const d of readdirSync(join(dir, '@sluice'))) if (d.startsWith('backend-')) names.add(d.slice('backend-'.length));
    } catch {
      // no @sluice scope in this node_modules
    }
  }
  return [...names].sort();
}

/**
 * Loads the package `@sluice/backend-NAME` if it is installed, once (a later call gets the first
 * call's answer, or its error); importing it registers the backend. This keeps core free of static
 * imports of any backend while `--backend NAME` just works.
 */
export function loadBackendPackage(name: string): Promise<boolean> {
  if (!/^[a-z0-9-]+$/.test(name)) return Promise.resolve(false);
  let load = loads.get(name);
  if (load === undefined) {
    load = importBackend(name);
    loads.set(name, load);
  }
  return load;
}

const loads = new Map<string, Promise<boolean>>();

async function importBackend(name: string): Promise<boolean> {
  try {
    await import(`@sluice/backend-${name}`);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(`@sluice/backend-${name}`)) return false;
    throw new PlanError(`backend package @sluice/backend-${name} failed to load: ${(e as Error).message}`, {}, { cause: e });
  }
}

/**
 * Starts loading backend NAME's package, unless a backend is registered under that name, without
 * waiting for it: a run calls this before it reads the files' footers, so the import (~0.1 s for
 * the cpu backend) overlaps that read instead of following it. A failure surfaces where the run
 * needs the backend (`createBackend`, `readerKernels`).
 */
export function preloadBackend(name: string): void {
  if (!registered.has(name)) loadBackendPackage(name).catch(() => undefined);
}

/**
 * A name registered here (the user's own `cpu`, say) is kept; otherwise its package, if
 * installed, registers itself (over core's in-process `cpu`).
 */
async function loadUnlessRegistered(name: string): Promise<void> {
  if (!registered.has(name)) await loadBackendPackage(name);
}

/**
 * The module of kernels the reader should run a backend's pushed-down ops with (see
 * `BackendRegistration.readerKernels`), or null for core's reference kernels. Loads the backend's
 * package first, as `createBackend` does.
 */
export async function readerKernels(spec: BackendSpec): Promise<string | null> {
  if (spec.name.includes(',')) return null;
  await loadUnlessRegistered(spec.name);
  return (await registrations.get(spec.name)?.readerKernels?.(spec)) ?? null;
}

/** Builds the backend a plan names (loading its package if needed), or fails with the list of known ones. */
export async function createBackend(plan: TypedPlan, spec: BackendSpec, state: PlanState): Promise<Backend> {
  // A list "cpu,webgpu" is core's `auto` over those backends.
  const list = spec.name.includes(',') ? builtins.get('auto') : undefined;
  if (list !== undefined) return list(plan, spec, state);
  await loadUnlessRegistered(spec.name);
  const factory = registry.get(spec.name);
  if (factory === undefined) {
    const known = [...new Set([...backendNames(), ...installedBackendPackages()])];
    throw new PlanError(
      `unknown backend "${spec.name}" (available here: ${known.join(', ')}; a backend is a package @sluice/backend-NAME, or a name given to registerBackend)`,
    );
  }
  return factory(plan, spec, state);
}
