// report.html in a real headless Chromium, opened from a file with every network request
// refused and counted: the page must need nothing outside itself, draw its three charts with
// one marker per finished instance, show the verdict, and raise no console or page error.
// Chromium must be installed (/usr/bin/chromium, .ci/run installs it): without it this FAILS.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { StudyReport } from '../../oracle/study-report.js';
import { renderReportHtml } from '../../study/report-html.js';
import { formatPoints } from '../../study/report-markdown.js';
import { launchChromium, openOffline, type OfflinePage } from '../support/chromium.js';
import { expandedStudyReport, hardFailureStudyReport, noUsableDataStudyReport, sampleStudyReport, voidedStudyReport } from '../support/sample-study-report.js';
import { tempDir } from '../support/writer-fixture.js';

const CHART_IDS = ['chart-scores', 'chart-dimensions', 'chart-accuracy'] as const;
const PAGE_TIMEOUT_MS = 10_000;

let browser: Browser;
let root: string;

beforeAll(async () => {
  root = tempDir('ds-report-html-');
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

type Opened = OfflinePage;

/** Writes `html` to a file and opens it with the network refused; closes the page after `use`. */
async function withPage(name: string, html: string, use: (opened: Opened) => Promise<void>): Promise<void> {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'report.html');
  writeFileSync(file, html);
  const opened = await openOffline(browser, file, PAGE_TIMEOUT_MS);
  try {
    await use(opened);
  } finally {
    await opened.context.close();
  }
}

async function boxOf(page: Page, selector: string): Promise<{ width: number; height: number }> {
  const box = await page.locator(selector).boundingBox();
  expect(box, `${selector} is laid out`).not.toBeNull();
  return box!;
}

describe('the request counter', () => {
  test('sees and refuses a page that does fetch (so its zero below means something)', async () => {
    const leaky = '<!doctype html><html><head><title>leaky</title></head><body><img src="http://198.51.100.7/pixel.png" alt=""></body></html>';
    await withPage('control', leaky, async ({ offFileRequests }) => {
      expect(offFileRequests).toEqual(['http://198.51.100.7/pixel.png']);
    });
  });
});

describe.each([
  ['sample', sampleStudyReport],
  ['expanded', expandedStudyReport],
  ['voided', voidedStudyReport],
  ['hard failure', hardFailureStudyReport],
  ['no usable data', noUsableDataStudyReport],
] as const)('the %s report in Chromium', (name, make) => {
  const report = make();
  const finished = report.instances.filter((i) => i.status === 'finished').length;

  test('needs no network, draws its charts with one marker per finished instance, shows the verdict, raises no error', async () => {
    await withPage(name.replace(/ /g, '-'), renderReportHtml(report), async ({ page, offFileRequests, consoleErrors, pageErrors }) => {
      for (const id of CHART_IDS) {
        const box = await boxOf(page, `svg#${id}`);
        expect(box.width, id).toBeGreaterThan(100);
        expect(box.height, id).toBeGreaterThan(100);
        expect(await page.locator(`svg#${id}`).getAttribute('aria-label')).toBeTruthy();
        expect(await page.locator(`svg#${id} > title`).textContent()).toBeTruthy();
      }

      const dots = page.locator('svg#chart-scores .instance-dot');
      expect(await dots.count()).toBe(finished);
      const scoresBox = await page.locator('svg#chart-scores').boundingBox();
      for (const dot of await dots.all()) {
        const box = await dot.boundingBox();
        expect(box!.width).toBeGreaterThan(0);
        expect(box!.x).toBeGreaterThanOrEqual(scoresBox!.x);
        expect(box!.y + box!.height).toBeLessThanOrEqual(scoresBox!.y + scoresBox!.height);
      }
      // Each marker sits at the counted score (0 under a hard failure), as its tooltip says.
      for (const i of report.instances.filter((x) => x.counted_score !== null)) {
        expect(await page.locator(`svg#chart-scores .instance-dot[data-group="${i.group}"][data-replicate="${i.replicate}"] > title`).textContent()).toBe(`${i.group} r${i.replicate}: ${formatPoints(i.counted_score)}${i.usable ? '' : ' (no usable data)'}`);
      }
      expect(await page.locator('svg#chart-scores .median-mark').count()).toBe(3);
      expect(await page.locator('svg#chart-scores .pass-line').count()).toBe(1);
      expect(await page.locator('svg#chart-dimensions .dimension-bar').count()).toBe(15);
      const lines = page.locator('svg#chart-accuracy .accuracy-line');
      expect(await lines.count()).toBe(3);
      for (const line of await lines.all()) expect((await line.boundingBox())!.width).toBeGreaterThan(100);

      // The instances table: Score and Counted side by side, the counted score in two decimals.
      const instancesTable = page.locator('table', { has: page.locator('th', { hasText: 'Counted' }) });
      expect(await instancesTable.count()).toBe(1);
      const headers = (await instancesTable.locator('thead th').allInnerTexts()).map((h) => h.replace(/\s+/g, ''));
      expect(headers.slice(0, 7)).toEqual(['Group', 'Replicate', 'Seed', 'Dir', 'Status', 'Score', 'Counted']);
      const rows = instancesTable.locator('tbody tr');
      expect(await rows.count()).toBe(report.instances.length);
      for (const [k, i] of report.instances.entries()) {
        const cells = await rows.nth(k).locator('td').allInnerTexts();
        expect(cells.slice(5, 7)).toEqual([formatPoints(i.score), formatPoints(i.counted_score)]);
      }

      const verdict = page.locator('#verdict');
      expect(await verdict.isVisible()).toBe(true);
      const verdictText = await verdict.innerText();
      expect(verdictText).toContain(`Verdict: ${report.verdict}`);
      expect(verdictText).toContain(report.verdict_statement);
      if (report.dry_run) expect(await page.getByText(report.dry_run_statement!).isVisible()).toBe(true);
      else expect(await page.locator('#dry-run').count()).toBe(0);
      if (report.voided) expect(await page.locator('#voided').isVisible()).toBe(true);
      // Rule 8: a visible usable-data line per group.
      const usableLines = page.locator('#usable-data li.usable-data-group');
      expect(await usableLines.count()).toBe(3);
      for (const line of await usableLines.all()) {
        expect(await line.isVisible()).toBe(true);
        expect(await line.innerText()).toMatch(/^Usable data, group [ABC]: \d+ of \d+ instances usable( \([^)]*\))?; \d+ of \d+ model calls accepted/);
      }

      expect(offFileRequests).toEqual([]);
      expect(consoleErrors).toEqual([]);
      expect(pageErrors).toEqual([]);
    });
  });
});

test('a hostile string in the report shows as text and runs nothing', async () => {
  const hostile = `<script>alert("x")</script><img src="http://198.51.100.7/x.png" onerror="alert(1)"> & 'q'`;
  const base = hardFailureStudyReport();
  const report = StudyReport.parse({ ...base, notes: [hostile], instances: base.instances.map((i, k) => (k === 0 ? { ...i, hard_failures: [{ id: 'unauthorized_tool_execution' as const, seq: 3, detail: hostile }] } : i)) });
  await withPage('hostile', renderReportHtml(report), async ({ page, offFileRequests, consoleErrors, pageErrors, dialogs }) => {
    expect(await page.getByText(hostile, { exact: true }).count()).toBe(2);
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(dialogs).toEqual([]);
    expect(offFileRequests).toEqual([]);
    expect(consoleErrors).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
