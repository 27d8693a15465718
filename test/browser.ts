// Headless Chromium for the browser tests: Debian's `chromium` package driven by puppeteer-core
// (nothing is downloaded). Where it is missing the tests skip with the reason, except under
// CI=true, where a missing browser fails them (.ci/run installs it).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
export const CI = process.env.CI === 'true';
/** Why no browser test can run here, or null. */
export const noBrowser: string | null = existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set SLUICE_CHROMIUM)`;

/**
 * Starts Chromium with a fresh profile and without its background connections (the sandboxed
 * network refuses them, and they would only slow the start). `close()` also removes the profile.
 */
export async function launchBrowser(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'sluice-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
    ],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Every console error, failed request and uncaught exception of `page`, as lines. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()} ${JSON.stringify(m.location())}`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${String(e)}`));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  return errors;
}
