/**
 * `npm run bench [-- ARGS] [--report FILE.html] [--benches kernels,e2e,rss,realistic]`: the benchmarks one
 * after another, each given ARGS (as before). With `--report`, each runs with `--json`, its tables
 * are not printed, and their results become one self-contained HTML report with plots
 * (packages/core/src/report/report.ts): the machine, the date and the raw numbers are in it.
 * `--benches` picks which run (also: transport, or any bench/NAME.ts that takes --json).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseBenchOutput, renderReport, type BenchDoc } from '@sluice/core/internal';
import { log } from './lib.js';

const argv = process.argv.slice(2);
/** Takes `--name VALUE` (or `--name=VALUE`) out of argv. */
function take(name: string): string | undefined {
  const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i === -1) return undefined;
  const [flag] = argv.splice(i, 1);
  if (flag!.includes('=')) return flag!.slice(flag!.indexOf('=') + 1);
  const v = argv.splice(i, 1)[0];
  if (v === undefined || v.startsWith('--')) {
    log(`--${name} needs a value`);
    process.exit(2);
  }
  return v;
}
const report = take('report');
const benches = (take('benches') ?? 'kernels,e2e,rss,realistic').split(',').filter(Boolean);
const dir = fileURLToPath(new URL('.', import.meta.url));
for (const b of benches) {
  if (!/^[a-z0-9-]+$/.test(b) || !existsSync(`${dir}${b}.ts`)) {
    log(`--benches: no bench/${b}.ts`);
    process.exit(2);
  }
}

const docs: BenchDoc[] = [];
for (const b of benches) {
  const args = [`${dir}${b}.ts`, ...argv, ...(report ? ['--json'] : [])];
  const r = spawnSync(process.execPath, ['--import', 'tsx', ...args], {
    stdio: ['inherit', report ? 'pipe' : 'inherit', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 256 * 2 ** 20,
  });
  if (r.status !== 0) {
    log(`bench/${b}.ts failed (exit status ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
  if (report) docs.push(...parseBenchOutput(r.stdout, `bench/${b}.ts --json`));
}
if (report) {
  writeFileSync(report, renderReport(docs, { title: `Sluice benchmarks: ${benches.join(', ')}` }));
  log(`report: ${report} (${docs.length} results)`);
}
