// Launches the system's Chromium (Debian's package) headless for browser tests. playwright-core
// ships no browser, and CI has no network but npm and Debian, so the browser is the distribution's;
// .ci/run installs it. A missing browser fails the test with the fix, never a silent skip.
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Download, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';
/** Launch normally takes well under a second; this only stops a hung browser from eating the test timeout. */
const LAUNCH_TIMEOUT_MS = 15_000;

export const CHROMIUM_MISSING_MESSAGE =
  `Chromium is not installed at ${CHROMIUM_PATH}; the browser tests need it. ` +
  'Install it as root with: apt-get update && apt-get install -y chromium (CI does this in .ci/run).';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(CHROMIUM_MISSING_MESSAGE);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    timeout: LAUNCH_TIMEOUT_MS,
  });
}

/** A page opened offline, and everything it tried or raised. */
export interface OfflinePage {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Every request the page tried for anything but a file: URL (each was aborted). */
  readonly offFileRequests: string[];
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
  readonly dialogs: string[];
  readonly downloads: Download[];
}

/**
 * Opens `file` in a new context with every request but file: refused and counted, console errors,
 * page errors, dialogs (dismissed) and downloads recorded. The caller closes `context`.
 */
export async function openOffline(browser: Browser, file: string, timeoutMs: number, contextOptions: BrowserContextOptions = {}): Promise<OfflinePage> {
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  const opened: OfflinePage = { page, context, offFileRequests: [], consoleErrors: [], pageErrors: [], dialogs: [], downloads: [] };
  page.on('request', (request) => {
    if (!request.url().startsWith('file:')) opened.offFileRequests.push(request.url());
  });
  page.on('console', (message) => {
    if (message.type() === 'error') opened.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => opened.pageErrors.push(error.message));
  page.on('dialog', (dialog) => {
    opened.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('download', (download) => opened.downloads.push(download));
  await page.route('**/*', (route) => (route.request().url().startsWith('file:') ? route.continue() : route.abort('blockedbyclient')));
  try {
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  } catch (error) {
    await context.close();
    throw error;
  }
  return opened;
}

/** A page that may reach `origin` (a server on loopback) and nothing else, and everything it tried or raised. */
export interface OriginPage {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Every request for anything off `origin` (each was aborted). */
  readonly offOrigin: string[];
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
}

/** Opens `url` in a new context allowed `origin` only (no trailing slash); the caller closes `context`. */
export async function openOnOrigin(browser: Browser, origin: string, url: string, timeoutMs: number, contextOptions: BrowserContextOptions = {}): Promise<OriginPage> {
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  const opened: OriginPage = { page, context, offOrigin: [], consoleErrors: [], pageErrors: [] };
  await page.route('**/*', (route) => {
    if (route.request().url().startsWith(`${origin}/`)) return route.continue();
    opened.offOrigin.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  page.on('console', (m) => {
    if (m.type() === 'error') opened.consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => opened.pageErrors.push(e.message));
  try {
    await page.goto(url, { waitUntil: 'load' });
  } catch (error) {
    await context.close();
    throw error;
  }
  return opened;
}
