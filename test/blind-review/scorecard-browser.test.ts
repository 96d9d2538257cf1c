// The reviewer scorecard in a real headless Chromium, opened from a file with every network request
// refused and counted (must stay 0): following a claim's evidence link, an entry's back-link and
// an action chain's links lands on and highlights the target; saving an empty or out-of-range form
// downloads nothing and says what is missing; a filled form downloads a ReviewerScores file whose
// values are exactly what was filled; hostile package strings run nothing. No console or page error
// anywhere (a CSP refusal would be one). Chromium must be at /usr/bin/chromium: without it this FAILS.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ReviewerScores } from '../../blind-review/package-format.js';
import type { ScorecardData } from '../../blind-review/scorecard-data.js';
import { renderScorecard } from '../../blind-review/scorecard-html.js';
import { launchChromium, openOffline, type OfflinePage } from '../support/chromium.js';
import { SAMPLE_BLIND_ID, samplePackage, sampleRef } from '../support/sample-package.js';
import { tempDir } from '../support/writer-fixture.js';

const PAGE_TIMEOUT_MS = 10_000;
/** How long an unwanted download gets to show up after a refused save (a real one starts within a few ms). */
const NO_DOWNLOAD_WAIT_MS = 400;

let browser: Browser;
let root: string;

beforeAll(async () => {
  root = tempDir('ds-scorecard-');
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

type Opened = OfflinePage;

/**
 * Writes the page to a file and opens it with the network refused; after `use`, checks that the
 * page asked for nothing off file:, raised no error and opened no dialog (unless `clean` is false),
 * and closes it.
 */
async function withPage(name: string, html: string, use: (opened: Opened) => Promise<void>, clean = true): Promise<void> {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'reviewer_scorecard.html');
  writeFileSync(file, html);
  const opened = await openOffline(browser, file, PAGE_TIMEOUT_MS, { acceptDownloads: true, viewport: { width: 1100, height: 800 } });
  const { page } = opened;
  try {
    await use(opened);
    if (!clean) return;
    expect(await page.getAttribute('html', 'data-scorecard-ready'), 'the page script ran').toBe('true');
    expect(opened.offFileRequests).toEqual([]);
    expect(opened.consoleErrors).toEqual([]);
    expect(opened.pageErrors).toEqual([]);
    expect(opened.dialogs).toEqual([]);
  } finally {
    await opened.context.close();
  }
}

interface TargetState {
  readonly hash: string;
  readonly target: string | null;
  readonly marked: string[];
  readonly inView: boolean;
  readonly focused: string | null;
}

/**
 * Runs `expression` in the page. A string, not a function: the project compiles without the DOM
 * library (its code runs in Node), so browser globals are written where tsc does not type them.
 */
async function inPage<T>(page: Page, expression: string): Promise<T> {
  return (await page.evaluate(expression)) as T;
}

async function targetState(page: Page, id: string): Promise<TargetState> {
  return inPage<TargetState>(
    page,
    `(() => {
      const box = document.getElementById(${JSON.stringify(id)})?.getBoundingClientRect();
      return {
        hash: location.hash,
        target: document.querySelector(':target')?.id ?? null,
        marked: [...document.querySelectorAll('.is-target')].map((e) => e.id),
        inView: box !== undefined && box.top < innerHeight && box.bottom > 0,
        focused: document.activeElement?.id ?? null,
      };
    })()`,
  );
}

const MARK_POLL_MS = 20;
const MARK_TIMEOUT_MS = 5_000;

/**
 * Waits for the page script to mark `id`: it does so on hashchange, a task queued after the click
 * returns. Polled from Node with `evaluate` (the DevTools protocol, outside the page's CSP):
 * `page.waitForFunction` with a string predicate re-evaluates it inside the page with `eval`, which
 * the scorecard's CSP refuses (CI failed so when the mark was not already there at the first check).
 */
async function markedAs(page: Page, id: string): Promise<void> {
  const expression = `document.getElementById(${JSON.stringify(id)})?.classList.contains('is-target') === true`;
  const maxPolls = Math.ceil(MARK_TIMEOUT_MS / MARK_POLL_MS);
  for (let poll = 0; poll < maxPolls; poll += 1) {
    if (await inPage<boolean>(page, expression)) return;
    await new Promise((resolve) => setTimeout(resolve, MARK_POLL_MS));
  }
  throw new Error(`the page did not mark #${id} as the link target within ${MARK_TIMEOUT_MS} ms`);
}

/** Clicks the link to `id` inside `#from` and checks the page landed on it, highlighted and in view. */
async function follow(page: Page, from: string, id: string): Promise<void> {
  await page.locator(`[id="${from}"] a[href="#${id}"]`).first().click();
  await markedAs(page, id);
  expect(await targetState(page, id)).toEqual({ hash: `#${id}`, target: id, marked: [id], inView: true, focused: id });
  // The highlight says it in words too (not only a colour).
  expect(await inPage<string>(page, `getComputedStyle(document.getElementById(${JSON.stringify(id)}), '::before').content`)).toContain('Linked here');
}

const FILLED: ReviewerScores['dimensions'] = { state_recovery: 72, re_planning: 55.5, experience_influence: 0, evidence_integrity: 100, recovery: 38 };
const FOUND: ReviewerScores['hard_failures'] = { unauthorized_tool_execution: false, duplicate_side_effect: true, fact_contradicts_store: false, replay_cannot_restore_state: false, configuration_changed_after_start: true };

async function fillHardFailures(page: Page, found: ReviewerScores['hard_failures']): Promise<void> {
  for (const [id, yes] of Object.entries(found)) await page.check(`#hf-${id}-${yes ? 'yes' : 'no'}`);
}

async function errorItems(page: Page): Promise<string[]> {
  return page.locator('#form-error-list li').allInnerTexts();
}

describe('the request counter', () => {
  test('sees and refuses a page that does fetch (so its zero below means something)', async () => {
    const leaky = '<!doctype html><html><head><title>leaky</title></head><body><img src="http://198.51.100.7/pixel.png" alt=""></body></html>';
    await withPage(
      'control',
      leaky,
      async ({ offFileRequests }) => {
        expect(offFileRequests).toEqual(['http://198.51.100.7/pixel.png']);
      },
      false,
    );
  });
});

describe('the sample package in Chromium', () => {
  const data = samplePackage();
  const html = renderScorecard(data);

  test('labels every control and shows the blind id as its only name', async () => {
    await withPage('labels', html, async ({ page }) => {
      expect(await page.locator('h1').innerText()).toBe(`Reviewer scorecard ${SAMPLE_BLIND_ID}`);
      const unlabelled = await inPage<string[]>(page, `[...document.querySelectorAll('input, textarea, select')].filter((c) => c.labels.length === 0).map((c) => c.id)`);
      expect(unlabelled).toEqual([]);
      expect(await page.locator('#score-form input[type="number"]').count()).toBe(data.manifest.dimensions.length);
      expect(await page.locator('#score-form fieldset.hard-failure').count()).toBe(data.manifest.hard_failures.length);
    });
  });

  test('a claim\'s evidence link, the entry\'s back-link and an action chain\'s links land on and highlight their target', async () => {
    await withPage('links', html, async ({ page }) => {
      const claim = `claim-${sampleRef('claim-q1')}`;
      await follow(page, claim, sampleRef('reply-file'));
      await follow(page, claim, sampleRef('reply'));
      // The entry lists the claims citing it: back to the claim.
      await follow(page, sampleRef('reply'), claim);
      // The same link again (no hashchange): still there and marked.
      await follow(page, sampleRef('reply'), claim);

      const denied = `chain-${sampleRef('deny-prop')}`;
      await follow(page, denied, sampleRef('deny-perm'));
      await follow(page, sampleRef('deny-perm'), denied);
      const failed = `chain-${sampleRef('fail-prop')}`;
      await follow(page, failed, sampleRef('fail-out'));
      expect(await page.locator(`[id="${sampleRef('fail-out')}"] .summary`).innerText()).toContain('no space left');

      // Browser history works as the page tells the reviewer: Back returns to the previous target, marked again.
      await page.goBack();
      await markedAs(page, denied);
      const back = await targetState(page, denied);
      expect([back.hash, back.target, back.marked]).toEqual([`#${denied}`, denied, [denied]]);
    });
  });

  test('an empty or out-of-range form downloads nothing and says what is missing', async () => {
    await withPage('invalid', html, async ({ page, downloads }) => {
      await page.click('#save-scores');
      expect(await page.locator('#form-errors').isVisible()).toBe(true);
      expect(await inPage<string>(page, 'document.activeElement.id')).toBe('form-errors');
      const items = await errorItems(page);
      for (const d of data.manifest.dimensions) expect(items).toContain(`${d.name}: no score; enter a score from 0 to 100.`);
      for (const h of data.manifest.hard_failures) expect(items.some((i) => i.startsWith(`${h.id}: choose`))).toBe(true);
      expect(items).toContain('Reviewer name: required.');
      expect(await page.locator('[aria-invalid="true"]').count()).toBe(items.length);

      // Everything but one score, which is out of range, and a blank reviewer name.
      for (const [name, value] of Object.entries(FILLED)) await page.fill(`#dim-${name}`, String(name === 'recovery' ? 150 : value));
      await fillHardFailures(page, FOUND);
      await page.fill('#reviewer', '   ');
      await page.click('#save-scores');
      expect(await errorItems(page)).toEqual(['recovery: 150 is outside 0 to 100.', 'Reviewer name: required.']);
      expect(await page.locator('[aria-invalid="true"]').evaluateAll((els) => els.map((e) => e.id))).toEqual(['dim-recovery', 'reviewer']);

      await page.waitForTimeout(NO_DOWNLOAD_WAIT_MS);
      expect(downloads).toEqual([]);
      expect(await page.locator('#save-status').innerText()).toBe('');
    });
  });

  test('a filled form downloads a ReviewerScores file holding exactly what was filled', async () => {
    await withPage('save', html, async ({ page, downloads }) => {
      // A first, refused attempt must not leave anything behind that spoils the real save.
      await page.click('#save-scores');
      for (const [name, value] of Object.entries(FILLED)) await page.fill(`#dim-${name}`, String(value));
      await fillHardFailures(page, FOUND);
      const reviewer = 'Ada Q. Reviewer';
      const comments = 'Evidence for E0009 checks out.\nThe denied write was not repeated. <b>not markup</b> & "quotes"';
      await page.fill('#reviewer', `  ${reviewer} `);
      await page.fill('#comments', comments);

      const before = Date.now();
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save-scores')]);
      const after = Date.now();
      expect(download.suggestedFilename()).toBe(`scores-${SAMPLE_BLIND_ID}-Ada_Q._Reviewer.json`);
      const saved = ReviewerScores.parse(JSON.parse(readFileSync(await download.path(), 'utf8')));
      expect(saved).toEqual({ score_format_version: '1.0.0', blind_id: SAMPLE_BLIND_ID, reviewer, dimensions: FILLED, hard_failures: FOUND, comments, saved_at: saved.saved_at });
      const savedAt = Date.parse(saved.saved_at);
      expect(savedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(savedAt).toBeLessThanOrEqual(after + 1000);

      expect(await page.locator('#form-errors').isVisible()).toBe(false);
      expect(await page.locator('[aria-invalid="true"]').count()).toBe(0);
      expect(await page.locator('#save-status').innerText()).toContain(download.suggestedFilename());

      // Saving again (another name, outside ASCII) writes a second file; the name keeps its letters.
      await page.fill('#reviewer', 'Zoë / Ünal');
      const [second] = await Promise.all([page.waitForEvent('download'), page.click('#save-scores')]);
      expect(second.suggestedFilename()).toBe(`scores-${SAMPLE_BLIND_ID}-Zoë_Ünal.json`);
      expect(ReviewerScores.parse(JSON.parse(readFileSync(await second.path(), 'utf8'))).reviewer).toBe('Zoë / Ünal');
      expect(downloads).toHaveLength(2);
    });
  });
});

test('hostile package strings show as text and run nothing', async () => {
  const hostile = `</script><script>alert(1)</script><img src="http://198.51.100.7/x.png" onerror="alert(2)"> & 'q'`;
  const base = samplePackage();
  const data: ScorecardData = {
    ...base,
    claims: base.claims.map((c, k) => (k === 0 ? { ...c, statement: hostile, evidence: c.evidence.map((e) => ({ ...e, summary: hostile })) } : c)),
    timeline: base.timeline.map((e, k) => (k === 2 ? { ...e, summary: hostile, detail: { note: hostile } } : e)),
  };
  await withPage('hostile', renderScorecard(data), async ({ page }) => {
    const claim = page.locator(`[id="claim-${base.claims[0]!.ref}"]`);
    expect(await claim.locator('.statement').innerText()).toBe(hostile);
    expect(await page.locator(`[id="${base.timeline[2]!.ref}"] .summary`).innerText()).toBe(hostile);
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(2);
    // The JSON block still reads back whole: the page's own script parsed it (data-scorecard-ready).
    expect(await inPage<string>(page, `JSON.parse(document.getElementById('package-data').textContent).claims[0].statement`)).toBe(hostile);
  });
});

test('a long timeline starts collapsed by wake, its claims and chains too; following a link into a closed block opens it and lands on the entry, highlighted and in view', async () => {
  const base = samplePackage();
  // 160 more journal entries in a fourth wake: the timeline is over the length whose blocks start open.
  const filler = Array.from({ length: 160 }, (_, k) => ({ ref: `E${String(base.timeline.length + k + 1).padStart(4, '0')}`, t: 'h13:00', t_minute: 780, wake: 'W04', kind: 'journal_entry' as const, actor: 'subject' as const, summary: `note ${k}`, detail: {}, refs: [] }));
  const data: ScorecardData = { ...base, timeline: [...base.timeline, ...filler], manifest: { ...base.manifest, timeline_entries: base.timeline.length + filler.length } };
  await withPage('collapsed', renderScorecard(data), async ({ page }) => {
    const openBlocks = `[...document.querySelectorAll('details.wake, details.by-wake')].filter((d) => d.open).length`;
    // Before W01, W01, between W01 and W02, W02, between W02 and W03, W03, W04; claims of 3 wakes, chains of 3 wakes.
    expect(await inPage<number>(page, `document.querySelectorAll('details.wake').length`)).toBe(7);
    expect(await inPage<number>(page, `document.querySelectorAll('details.by-wake').length`)).toBe(6);
    expect(await inPage<number>(page, openBlocks)).toBe(0);
    // Going to a claim (as a link from elsewhere would) opens its wake's claims.
    const claim = `claim-${sampleRef('claim-q1')}`;
    await page.evaluate(`location.hash = ${JSON.stringify(`#${claim}`)}`);
    await markedAs(page, claim);
    expect(await targetState(page, claim)).toMatchObject({ target: claim, inView: true, focused: claim });
    expect(await inPage<number>(page, openBlocks)).toBe(1);
    // Its evidence sits in the closed block between W01 and W02: the link opens it.
    await follow(page, claim, sampleRef('reply-file'));
    expect(await inPage<boolean>(page, `document.getElementById(${JSON.stringify(sampleRef('reply-file'))}).closest('details.wake').open`)).toBe(true);
    expect(await inPage<number>(page, openBlocks)).toBe(2);
    // The entry's back-link to a chain, and the chain's link into W02's closed block.
    await follow(page, sampleRef('reply'), claim);
    const denied = `chain-${sampleRef('deny-prop')}`;
    await page.evaluate(`location.hash = ${JSON.stringify(`#${denied}`)}`);
    await markedAs(page, denied);
    await follow(page, denied, sampleRef('deny-perm'));
    expect(await inPage<number>(page, openBlocks)).toBe(4);
    await follow(page, sampleRef('deny-perm'), denied);
  });
});
