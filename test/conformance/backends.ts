// The backends the shared conformance suite runs against. A backend package adds itself here;
// one that cannot run on this machine says why, and its tests are skipped with that reason.
import '@sluice/backend-cpu';
import { webgpuUnavailable } from '@sluice/backend-webgpu';
import '@sluice/backend-fpga-sim';
import '@sluice/backend-smartssd-sim';
import type { BackendSpec } from '@sluice/core';

export interface BackendUnderTest {
  readonly label: string;
  readonly spec: BackendSpec;
  /** Why this backend cannot run here, or null when it can. */
  readonly unavailable: () => Promise<string | null>;
}

const always = async (): Promise<null> => null;

export const BACKENDS: readonly BackendUnderTest[] = [
  { label: 'cpu, 1 worker', spec: { name: 'cpu', workers: 1 }, unavailable: always },
  { label: 'cpu, 2 workers', spec: { name: 'cpu', workers: 2 }, unavailable: always },
  { label: 'cpu, 2 workers, reference kernels only', spec: { name: 'cpu', workers: 2, fast: false }, unavailable: always },
  // Dawn on whatever adapter the machine has (llvmpipe in CI); skipped with the apt steps when none.
  { label: 'webgpu', spec: { name: 'webgpu' }, unavailable: webgpuUnavailable },
  // Simulators compute outputs with core's kernels on the host, so they run everywhere.
  { label: 'fpga-sim, host, 4 MiniPipes', spec: { name: 'fpga-sim', deployment: 'host', miniPipes: 4 }, unavailable: always },
  { label: 'smartssd-sim', spec: { name: 'smartssd-sim' }, unavailable: always },
];
