/**
 * A real headless browser for UI tests: Debian's chromium driven by playwright-core. Installs
 * chromium with apt-get when it is missing (once per machine; a minute or two).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const INSTALL_TIMEOUT_MS = 15 * 60_000;

function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { stdio: 'inherit', timeout: INSTALL_TIMEOUT_MS, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  try {
    install();
  } catch {
    // A fresh machine may have no package lists yet.
    execFileSync('apt-get', ['update'], { stdio: 'inherit', timeout: INSTALL_TIMEOUT_MS });
    install();
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is missing`);
}

export async function launchBrowser(): Promise<Browser> {
  ensureChromium();
  // No sandbox: tests run as root in containers, where chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/**
 * Runs `body` on a new page; on failure writes a screenshot to a temp dir, prints its path and
 * adds the page's script errors to the failure.
 */
export async function withPage(browser: Browser, name: string, body: (page: Page) => Promise<void>): Promise<void> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  try {
    await body(page);
  } catch (err) {
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'threadline-ui-')), `${name}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    console.log(`screenshot of the failed page: ${file}`);
    if (err instanceof Error && problems.length) err.message += `\n${problems.join('\n')}`;
    throw err;
  } finally {
    await context.close();
  }
}
