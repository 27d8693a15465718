import { resourceUsage } from 'node:process';

/**
 * Progress on stderr for long work: a line redrawn in place on a terminal, a line every few
 * seconds otherwise (CI logs), nothing when quiet.
 */
export class Progress {
  private readonly t0 = performance.now();
  private last = 0;
  private readonly tty = process.stderr.isTTY === true;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly unit: string,
    private readonly quiet = false,
  ) {}

  /** Reports `done` units so far (throttled). */
  update(done: number): void {
    if (this.quiet) return;
    const now = performance.now();
    if (now - this.last < (this.tty ? 200 : 5000)) return;
    this.last = now;
    const secs = (now - this.t0) / 1000;
    const pct = this.total > 0 ? ` ${((100 * done) / this.total).toFixed(0)}%` : '';
    const line = `${this.label}: ${done.toLocaleString('en-US')}/${this.total.toLocaleString('en-US')} ${this.unit}${pct}, ${Math.round(done / Math.max(secs, 1e-9)).toLocaleString('en-US')} ${this.unit}/s`;
    process.stderr.write(this.tty ? `\r${line}\x1b[K` : `${line}\n`);
  }

  /** Clears the progress line. */
  done(): void {
    if (!this.quiet && this.tty && this.last > 0) process.stderr.write('\r\x1b[K');
  }
}

/** Peak resident set size of this process so far, in MB. */
export function peakRssMB(): number {
  // maxRSS is in kilobytes on Linux.
  return resourceUsage().maxRSS / 1024;
}

/** A plain-text table with aligned columns. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
