/**
 * `npx tsx bench/report.ts --out report.html RESULT.json ...`: one HTML report with plots from
 * results the benchmarks printed with `--json` earlier (a file may hold several, one per line).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseBenchOutput, renderReport } from '@sluice/core/internal';
import { log } from './lib.js';

const { values, positionals } = parseArgs({ options: { out: { type: 'string' }, title: { type: 'string' } }, allowPositionals: true });
if (values.out === undefined || positionals.length === 0) {
  log('usage: npx tsx bench/report.ts --out report.html [--title T] RESULT.json ...');
  process.exit(2);
}
const docs = positionals.flatMap((f) => parseBenchOutput(readFileSync(f, 'utf8'), f));
writeFileSync(values.out, renderReport(docs, values.title === undefined ? {} : { title: values.title }));
log(`report: ${values.out} (${docs.length} results from ${positionals.length} files)`);
