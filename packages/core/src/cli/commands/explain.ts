/** `sluice explain`: the optimizer's rewrite, stages, kernels per batch, placement and provisioning. */
import { loadPlan, type BackendSpec, type TypedPlan } from '@sluice/ops';
import { createBackend } from '../../backend/registry.js';
import { openInput } from '../../pipeline/fit.js';
import { autoPlacement } from '../../placement/auto.js';
import { calibrationCachePath, chooseMeasured, predictRun, readMeasurements, runCandidates } from '../../placement/calibration.js';
import { autoCandidates, calibrate, provision, type Provision } from '../../placement/cost.js';
import { explainPlan, type Explain } from '../../plan/explain.js';
import { typedForExplain } from '../../gen/schema.js';
import { eliminateRedundant } from '../../plan/optimize.js';
import { readColumnStats, type ColumnStats } from '../../plan/stats.js';
import type { Dataset } from '../../reader/dataset.js';
import { DecoderPool } from '../../reader/decoder-pool.js';
import { givenInputs, planArg, UsageError, type Values } from '../args.js';
import { formatTable } from '../progress.js';
import { checkBackendArg } from '../backend.js';
// Core's own backends (`reference`, in-process `cpu`, `auto`), for createBackend and calibration.
import '../../backend/inline.js';
import '../../placement/register.js';

/** `sluice explain` from parsed options: prints the report. */
export async function cmdExplain(values: Values): Promise<number> {
  const target = values['target-rows-per-sec'];
  const rate = target === undefined ? undefined : Number(target);
  if (rate !== undefined && !(Number.isFinite(rate) && rate > 0))
    throw new UsageError(`--target-rows-per-sec must be a positive number, got "${String(target)}"`);
  checkBackendArg(values);
  const r = await explainCommand({
    plan: planArg(values),
    input: givenInputs(values) ?? [],
    ...(typeof values.backend === 'string' ? { backend: values.backend } : {}),
    ...(rate !== undefined ? { targetRowsPerSec: rate } : {}),
    json: !!values.json,
  });
  process.stdout.write(r + '\n');
  return 0;
}

export interface ExplainCommandOptions {
  readonly plan: string;
  readonly input: readonly string[];
  readonly backend?: string;
  readonly targetRowsPerSec?: number;
  readonly json: boolean;
}

/** What `sluice explain --json` prints: explain's figures plus placement and provisioning when asked. */
export interface ExplainReport extends Explain {
  readonly placement?: {
    /** The cost model's placement (features per backend) and its predicted ms per batch. */
    readonly byBackend: Record<string, string[]>;
    readonly predictedMs: Record<string, number>;
    readonly singleMs: Record<string, number>;
    readonly skipped: Record<string, string>;
    /** The candidate placement a run would take: the fastest measured one, else the model's. */
    readonly chosen: string;
    readonly basis: 'measured' | 'model';
    /** Batches of the run the choice is for (from --input, else 100). */
    readonly batches: number;
    /** Cached measurements of the candidates on this machine (placement/calibration.ts); a run measures the missing ones. */
    readonly measured: Record<string, { fixedMs: number; perBatchMs: number; runMs: number } | null>;
    readonly cache: string;
  };
  readonly provisioning?: { readonly targetRowsPerSec: number; readonly units: readonly Provision[] };
}

/**
 * Runs `sluice explain` and returns its output (a table, or JSON).
 *
 * @example
 * console.log(await explainCommand({ plan: 'plan.json', input: [], backend: 'webgpu', json: true }));
 */
export async function explainCommand(o: ExplainCommandOptions): Promise<string> {
  const plan = loadPlan(o.plan);
  let typed: TypedPlan;
  let stats: ReadonlyMap<string, ColumnStats> = new Map();
  let batches = 100;
  // The files read (--input, else the plan's own input; none without either), for whether the
  // reader can compute op chains.
  const files = o.input.length > 0 ? o.input : (plan.input ?? []);
  let input: Pick<Dataset, 'files'> = { files: [] };
  if (files.length > 0) {
    const pool = new DecoderPool(1);
    try {
      const { dataset, plan: t } = await openInput(plan, files, pool);
      typed = t;
      batches = (dataset.totalRows * t.epochs) / t.batchSize;
      input = dataset;
      stats = await readColumnStats(
        dataset.files.map((f) => f.source),
        t.columns,
      );
    } finally {
      await pool.close();
    }
  } else {
    typed = typedForExplain(plan);
  }
  const spec: BackendSpec = o.backend !== undefined ? { name: o.backend } : plan.backend;
  const candidates = autoCandidates(spec);
  let report: ExplainReport;
  if (candidates === null) {
    const lean = eliminateRedundant(typed, stats).plan;
    const backend = await createBackend(lean, spec, new Map());
    try {
      report = explainPlan(typed, { stats, backend, backendName: spec.name });
    } finally {
      await backend.dispose();
    }
  } else {
    const lean = eliminateRedundant(typed, stats).plan;
    const { placement, skipped, models } = await autoPlacement(lean, spec);
    const byBackend: Record<string, string[]> = {};
    for (const [f, b] of placement.byFeature) (byBackend[b] ??= []).push(f);
    const base = explainPlan(typed, { stats, backendName: 'auto' });
    // The candidates a run would measure, and what this machine has measured of them so far.
    const { candidates, modelChoice } = runCandidates(
      models.map((m) => m.backend),
      placement,
      typed,
      input,
      spec,
    );
    const cached = readMeasurements(typed);
    const chosen = chooseMeasured(candidates, cached, batches) ?? modelChoice;
    const measured = Object.fromEntries(
      candidates.map((c) => [c.label, cached[c.label] === undefined ? null : { ...cached[c.label]!, runMs: predictRun(cached[c.label]!, batches) }]),
    );
    report = {
      ...base,
      placement: {
        byBackend,
        predictedMs: placement.predictedMs,
        singleMs: placement.singleMs,
        skipped,
        chosen: chosen.label,
        basis: cached[chosen.label] === undefined ? 'model' : 'measured',
        batches,
        measured,
        cache: calibrationCachePath(typed),
      },
    };
  }
  if (o.targetRowsPerSec !== undefined) {
    const names = candidates ?? [spec.name];
    const lean = eliminateRedundant(typed, stats).plan;
    const models = [];
    for (const n of names) {
      try {
        models.push(await calibrate(n, lean, n === 'cpu' ? { spec: { workers: 1 } } : {}));
      } catch (e) {
        if (candidates === null || o.backend?.includes(',')) throw e;
      }
    }
    report = { ...report, provisioning: { targetRowsPerSec: o.targetRowsPerSec, units: provision(lean, models, o.targetRowsPerSec) } };
  }
  return o.json ? JSON.stringify(report, null, 2) : formatExplain(report);
}

const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : x.toPrecision(3));

function formatExplain(r: ExplainReport): string {
  const lines = [
    `plan: ${r.ops} ops of ${r.opTypes} types (${r.opTypeNames.join(', ')}) on backend ${r.backend}`,
    `rewrite: ${r.ops} -> ${r.opsAfterRewrite} ops (${r.removed.length} redundant removed); ${r.opsExecuted} run per batch with shared sub-chains`,
    `fusion: ${r.nodes} fused nodes -> ${r.stages.length} stages (${r.search} search, lower bound ${r.lowerBound}) -> ${r.kernelsPerBatch} kernels per batch (${Object.entries(
      r.kernelsByDevice,
    )
      .map(([d, n]) => `${d} ${n}`)
      .join(', ')})`,
    '',
    formatTable(
      ['stage', 'device', 'kind', 'nodes', 'ops', 'kernels', 'op types'],
      r.stages.map((s) => [
        String(s.index),
        s.device,
        s.kind,
        String(s.nodes),
        String(s.ops),
        String(s.kernels),
        Object.entries(s.opTypes)
          .map(([k, v]) => `${k}×${v}`)
          .join(' '),
      ]),
    ),
  ];
  if (r.removed.length > 0) {
    lines.push('', 'removed:', ...r.removed.slice(0, 20).map((x) => `  ${x.feature} ${x.op} (#${x.index + 1}): ${x.reason}`));
    if (r.removed.length > 20) lines.push(`  … and ${r.removed.length - 20} more (--json lists all)`);
  }
  if (r.placement) {
    const pl = r.placement;
    lines.push('', 'placement by the cost model (op microbenchmarks, predicted ms per batch):');
    for (const [b, fs] of Object.entries(pl.byBackend)) lines.push(`  ${b}: ${fs.length} features, ${fmt(pl.predictedMs[b] ?? 0)} ms`);
    lines.push(
      `  each backend alone: ${Object.entries(pl.singleMs)
        .map(([b, ms]) => `${b} ${fmt(ms)} ms`)
        .join(', ')}`,
    );
    for (const [b, why] of Object.entries(pl.skipped)) lines.push(`  skipped ${b}: ${why}`);
    lines.push('', `candidates measured on the real path (cached in ${pl.cache}), for a run of ${fmt(pl.batches)} batches:`);
    for (const [c, m] of Object.entries(pl.measured))
      lines.push(
        `  ${c}: ${m === null ? 'not measured yet (the first auto run measures it)' : `${fmt(m.runMs)} ms (${fmt(m.fixedMs)} fixed + ${fmt(m.perBatchMs)} per batch)`}`,
      );
    lines.push(`  chosen: ${pl.chosen} (${pl.basis === 'measured' ? 'fastest measured' : 'cost model; nothing measured yet'})`);
  }
  if (r.provisioning) {
    lines.push('', `provisioning for ${r.provisioning.targetRowsPerSec.toLocaleString('en-US')} rows/s:`);
    for (const u of r.provisioning.units)
      lines.push(`  ${u.backend}: ${u.units} unit(s) at ${Math.round(u.rowsPerSecPerUnit).toLocaleString('en-US')} rows/s each`);
  }
  return lines.join('\n');
}
