// The audit desk as a browser test meets it: the real `npm run audit` process serving one run on
// loopback (audit-desk-process.ts), and pages opened in Chromium that may reach the desk and
// nothing else (chromium.ts openOnOrigin) — every request off its origin refused and recorded,
// every console and page error recorded, so a page that fetches or raises anything fails its
// test on close.
import type { Browser, BrowserContextOptions } from 'playwright-core';
import { expect } from 'vitest';
import { spawnAuditDesk, stopAuditDesk } from './audit-desk-process.js';
import { openOnOrigin, type OriginPage } from './chromium.js';
import type { SpawnedCli } from './cli.js';

const DESK_START_TIMEOUT_MS = 30_000;

export interface ServedDesk {
  readonly process: SpawnedCli;
  /** http://127.0.0.1:PORT, without a trailing slash. */
  readonly url: string;
}

export async function serveDesk(runDir: string): Promise<ServedDesk> {
  const served = await spawnAuditDesk(runDir, DESK_START_TIMEOUT_MS);
  return { process: served.desk, url: served.url };
}

/** Kills the desk if it still runs (a test may have stopped it itself). */
export async function stopDesk(served: ServedDesk | undefined): Promise<void> {
  await stopAuditDesk(served && { desk: served.process, url: served.url });
}

export type DeskPage = OriginPage;

/** A page that may reach the desk and nothing else; everything it tried or raised is recorded. */
export function openDeskPage(browser: Browser, deskUrl: string, pathname: string, timeoutMs: number, contextOptions: BrowserContextOptions = {}): Promise<DeskPage> {
  return openOnOrigin(browser, deskUrl, `${deskUrl}${pathname}`, timeoutMs, contextOptions);
}

/** Closes the page and fails the test if it reached off the desk or raised an error. */
export async function closeDeskPage(opened: DeskPage): Promise<void> {
  await opened.context.close();
  expect(opened.offOrigin).toEqual([]);
  expect(opened.consoleErrors).toEqual([]);
  expect(opened.pageErrors).toEqual([]);
}
