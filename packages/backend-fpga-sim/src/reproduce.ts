import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fit, InputError, pipeline, type PlanSpec } from '@sluice/core';
import { generateDataset, getPreset } from '@sluice/core/gen';
import './register.js';
import { PIPER } from './model.js';

/** PIPER §4.1.1: Dataset I has 45 million rows (13 dense float + 26 hex-string sparse features). */
export const PIPER_D1_ROWS = 45_000_000;

/** PIPER Table 4, PIPER column (seconds over the full Dataset I) — printed beside the model, never used by it. */
export const PIPER_TABLE4_SECONDS: Readonly<Record<string, number>> = {
  Neg2Zero: 0.23,
  Logarithm: 0.23,
  Hex2Int: 0.92,
  Modulus: 0.46,
  'VocabGen-8K': 0.92,
  'VocabMap-8K': 0.46,
  'VocabGen-512K': 2.15,
  'VocabMap-512K': 2.96,
};

export interface Table4Row {
  op: string;
  modeledSeconds: number;
  paperSeconds: number;
}

export interface ReproduceOptions {
  /** Rows to generate and run (scaled to the paper's row count); default 20,000. */
  rows?: number;
  /** Deployment the board is modelled in (default `remote`, PIPER's network-attached design). */
  deployment?: string;
  /** Called as each step starts, with what it does (`sluice reproduce` prints it on stderr). */
  onProgress?: (step: string) => void;
  /** Folder to make the generated data's temporary folder in (default: the system's). */
  tmpDir?: string;
}

/** Where each Table 4 row comes from: the plan variant and the op's key in the modelled per-op times. */
const SOURCES: ReadonlyArray<[string, 'P-I' | 'P-II' | 'P-III', string]> = [
  ['Neg2Zero', 'P-I', 'neg2zero'],
  ['Logarithm', 'P-I', 'log'],
  ['Hex2Int', 'P-I', 'hex2int'],
  ['Modulus', 'P-I', 'modulus'],
  ['VocabGen-8K', 'P-II', 'vocabGen'],
  ['VocabMap-8K', 'P-II', 'vocabMap'],
  ['VocabGen-512K', 'P-III', 'vocabGen'],
  ['VocabMap-512K', 'P-III', 'vocabMap'],
];

/**
 * Runs PIPER Dataset I's shape (the `piper-d1` preset at `rows` rows) through fpga-sim with plans
 * P-I, P-II and P-III, and scales each op's modelled time to the paper's 45M rows. The modelled
 * seconds come only from the cost model applied to the work counted in these runs.
 */
export async function reproduceTable4(opts: ReproduceOptions = {}): Promise<{ rows: Table4Row[]; generatedRows: number; deployment: string }> {
  const rows = opts.rows ?? 20_000;
  if (!Number.isSafeInteger(rows) || rows < 1) throw new InputError(`--rows must be a positive integer, got ${rows}`);
  const deployment = opts.deployment ?? 'remote';
  const step = opts.onProgress ?? ((): void => undefined);
  const dir = mkdtempSync(join(opts.tmpDir ?? tmpdir(), 'sluice-piper-'));
  try {
    const input = join(dir, 'piper-d1.parquet');
    step(`generating ${rows.toLocaleString('en-US')} piper-d1 rows`);
    await generateDataset({ preset: 'piper-d1', rows, out: input });
    const preset = getPreset('piper-d1');
    const perVariant = new Map<string, Record<string, number>>();
    const variants = ['P-I', 'P-II', 'P-III'] as const;
    for (const [i, variant] of variants.entries()) {
      const plan: PlanSpec = { ...preset.variants![variant]!(), backend: { name: 'fpga-sim', deployment, miniPipes: 1 } };
      const name = `${variant} (${i + 1}/${variants.length})`;
      if (variant !== 'P-I') step(`${name}: fitting the vocabularies`);
      const fitState = variant === 'P-I' ? undefined : (await fit(plan, { input })).state;
      step(`${name}: running on fpga-sim`);
      const p = pipeline(plan, { input, ...(fitState ? { fitState } : {}) });
      for await (const b of p) void b;
      perVariant.set(variant, p.metrics().reportTotals);
    }
    const scale = PIPER_D1_ROWS / rows;
    const out = SOURCES.map(([op, variant, key]): Table4Row => {
      const ms = perVariant.get(variant)![`op ${key} ms`] ?? 0;
      return { op, modeledSeconds: (ms / 1000) * scale, paperSeconds: PIPER_TABLE4_SECONDS[op]! };
    });
    return { rows: out, generatedRows: rows, deployment };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `sluice reproduce piper-table4`: the table as text, or the JSON rows. */
export async function piperTable4Command(opts: ReproduceOptions & { json?: boolean }): Promise<string> {
  const r = await reproduceTable4(opts);
  if (opts.json) return JSON.stringify(r.rows, null, 2);
  const lines = [
    `PIPER Table 4 (Dataset I, ${PIPER_D1_ROWS.toLocaleString('en-US')} rows): fpga-sim model vs the paper's PIPER column`,
    `model: ${r.deployment} deployment, 1 MiniPipe at ${PIPER.clockHz / 1e6} MHz, ${PIPER.widthBytes}-byte datapath; work counted on ${r.generatedRows.toLocaleString('en-US')} generated piper-d1 rows, scaled ×${(PIPER_D1_ROWS / r.generatedRows).toFixed(0)}`,
    '',
    `${'op'.padEnd(15)}${'modelled s'.padStart(12)}${'paper s'.padStart(10)}${'diff'.padStart(9)}`,
    ...r.rows.map(
      (x) =>
        `${x.op.padEnd(15)}${x.modeledSeconds.toFixed(3).padStart(12)}${x.paperSeconds.toFixed(2).padStart(10)}${`${x.modeledSeconds >= x.paperSeconds ? '+' : ''}${((x.modeledSeconds / x.paperSeconds - 1) * 100).toFixed(1)}%`.padStart(9)}`,
    ),
  ];
  return lines.join('\n');
}
