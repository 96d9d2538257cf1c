// The audit desk as a browser test meets it: the real `npm run audit` process serving one run on
// loopback, and pages opened in Chromium that may reach the desk and nothing else — every request
// off its origin refused and recorded, every console and page error recorded, so a page that
// fetches or raises anything fails its test on close.
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { expect } from 'vitest';
import { spawnCli, type SpawnedCli } from './cli.js';
import { waitForOutput } from './controller-run.js';

const DESK_START_TIMEOUT_MS = 30_000;

export interface ServedDesk {
  readonly process: SpawnedCli;
  /** http://127.0.0.1:PORT, without a trailing slash. */
  readonly url: string;
}

export async function serveDesk(runDir: string): Promise<ServedDesk> {
  const process = spawnCli('audit', [runDir, '--port', '0']);
  await waitForOutput(process.output, /serving http:\/\/127\.0\.0\.1:\d+\//, DESK_START_TIMEOUT_MS);
  return { process, url: /serving (http:\/\/127\.0\.0\.1:\d+)\//.exec(process.output())![1]! };
}

/** Kills the desk if it still runs (a test may have stopped it itself). */
export async function stopDesk(served: ServedDesk | undefined): Promise<void> {
  if (served && served.process.child.exitCode === null) {
    served.process.child.kill('SIGKILL');
    await served.process.exited;
  }
}

export interface DeskPage {
  readonly page: Page;
  readonly context: BrowserContext;
  readonly offOrigin: string[];
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
}

/** A page that may reach the desk and nothing else; everything it tried or raised is recorded. */
export async function openDeskPage(browser: Browser, deskUrl: string, pathname: string, timeoutMs: number, contextOptions: BrowserContextOptions = {}): Promise<DeskPage> {
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  const opened: DeskPage = { page, context, offOrigin: [], consoleErrors: [], pageErrors: [] };
  await page.route('**/*', (route) => {
    if (route.request().url().startsWith(`${deskUrl}/`)) return route.continue();
    opened.offOrigin.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  page.on('console', (m) => {
    if (m.type() === 'error') opened.consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => opened.pageErrors.push(e.message));
  await page.goto(`${deskUrl}${pathname}`, { waitUntil: 'load' });
  return opened;
}

/** Closes the page and fails the test if it reached off the desk or raised an error. */
export async function closeDeskPage(opened: DeskPage): Promise<void> {
  await opened.context.close();
  expect(opened.offOrigin).toEqual([]);
  expect(opened.consoleErrors).toEqual([]);
  expect(opened.pageErrors).toEqual([]);
}
