// Launches the system's Chromium (Debian's package) headless for browser tests. playwright-core
// ships no browser, and CI has no network but npm and Debian, so the browser is the distribution's;
// .ci/run installs it. A missing browser fails the test with the fix, never a silent skip.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
