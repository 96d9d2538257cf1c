// report.html's 72-hour strips and the accuracy chart's intervention and crash marks, in a real
// headless Chromium, for a real study (three real runs, A, B and C of one replicate, made into a
// study by runStudy): every strip's marks counted per lane against its own store (read with
// better-sqlite3, not through timeline/), the same wake at the same x in A, B and C, the chart's
// marks counted against the stores, nothing fetched, no error. Forged: a report whose strips
// lost one crash draws one crash mark fewer on the chart, and the count says so.
// Chromium must be installed (/usr/bin/chromium): without it this FAILS.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { StudyReport } from '../../oracle/study-report.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { readReportTimelines } from '../../study/instance-timelines.js';
import { renderReportHtml } from '../../study/report-html.js';
import { makeBlindStudy } from '../support/blind-study.js';
import { launchChromium, openOffline } from '../support/chromium.js';
import { storedEvents } from '../support/stored-events.js';
import { drawnMarks, markDifferences, STORE_LANE_COUNTS } from '../support/timeline-marks.js';
import { tempDir } from '../support/writer-fixture.js';

const PAGE_TIMEOUT_MS = 15_000;
const NOTES_SCREENSHOT = '/work/notes/svg-report.png';

let browser: Browser;
let studyDir: string;
let report: StudyReport;
let shots: string;
const storeOf = new Map<string, EventEnvelope[]>();

beforeAll(async () => {
  ({ studyDir } = await makeBlindStudy());
  report = StudyReport.parse(JSON.parse(readFileSync(path.join(studyDir, 'report.json'), 'utf8')));
  for (const instance of report.instances) storeOf.set(instance.dir, storedEvents(path.join(studyDir, instance.dir)));
  shots = tempDir('ds-report-timeline-');
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
});

/** From the stores alone: one intervention per replicate and id delivered in any of its groups; one crash per restart of each instance. */
function chartCountsFromStores(): { interventions: number; crashes: number } {
  const perReplicate = new Map<number, Set<string>>();
  let crashes = 0;
  for (const instance of report.instances) {
    const events = storeOf.get(instance.dir)!;
    const ids = perReplicate.get(instance.replicate) ?? new Set<string>();
    for (const e of events) if (e.event_type === 'ExperimentEvent.InterventionDelivered') ids.add(e.payload.intervention_id as string);
    perReplicate.set(instance.replicate, ids);
    crashes += events.filter((e) => e.event_type === 'SystemEvent.ProcessRestarted').length;
  }
  return { interventions: [...perReplicate.values()].reduce((n, s) => n + s.size, 0), crashes };
}

describe('the study report\'s 72-hour strips in Chromium, for a real study', () => {
  test('one strip per instance, marks counted against each store, the same wake lined up across A, B and C', async () => {
    const opened = await openOffline(browser, path.join(studyDir, 'report.html'), PAGE_TIMEOUT_MS, { viewport: { width: 1200, height: 900 } });
    const { page } = opened;
    try {
      expect(report.instances.length).toBe(3);
      const positions = new Map<string, Map<string, number>>();
      let previousBottom = -Infinity;
      for (const instance of report.instances) {
        const svg = page.locator(`svg#strip-${instance.group}-r${instance.replicate}`);
        const box = (await svg.boundingBox())!;
        // Stacked: A above B above C.
        expect(box.y, instance.group).toBeGreaterThan(previousBottom - 1);
        previousBottom = box.y + box.height;
        const marks = await drawnMarks(svg);
        const events = storeOf.get(instance.dir)!;
        expect(markDifferences(marks, events), instance.dir).toEqual([]);
        for (const mark of marks) {
          expect(mark.href).toBeNull();
          expect(mark.title).toMatch(new RegExp(`^#${mark.seq} .+`));
        }
        console.log(`[report] ${instance.dir}: ${['wakes', 'interventions', 'crashes', 'stops', 'model_failures', 'denials', 'facts', 'accuracy'].map((lane) => `${lane} ${marks.filter((m) => m.lane === lane).length}`).join(', ')}`);
        const wakeX = await svg.locator('g.mark[data-lane="wakes"]').evaluateAll((gs) =>
          gs.map((g) => {
            const r = g.getBoundingClientRect();
            return [/(wake-\d+)/.exec(g.querySelector('title')?.textContent ?? '')?.[1] ?? '', r.x + r.width / 2] as const;
          }),
        );
        positions.set(instance.group, new Map(wakeX));
      }
      // The same wake at the same x in the three strips of the replicate.
      const a = positions.get('A')!;
      expect(a.size).toBeGreaterThan(10);
      for (const [wake, x] of a) for (const group of ['B', 'C']) expect(Math.abs(positions.get(group)!.get(wake)! - x), `${wake} in ${group}`).toBeLessThan(0.5);
      const expected = chartCountsFromStores();
      expect(expected.interventions).toBeGreaterThan(0);
      expect(expected.crashes).toBeGreaterThan(0);
      expect(await page.locator('svg#chart-accuracy g.chart-intervention').count()).toBe(expected.interventions);
      expect(await page.locator('svg#chart-accuracy g.chart-crash').count()).toBe(expected.crashes);
      console.log(`[report] accuracy chart: ${expected.interventions} intervention mark(s), ${expected.crashes} crash mark(s), as the stores count`);
      for (const title of await page.locator('svg#chart-accuracy g.chart-crash > title').allTextContents()) expect(title).toMatch(/restarted/);
      expect(opened.offFileRequests).toEqual([]);
      expect(opened.consoleErrors).toEqual([]);
      expect(opened.pageErrors).toEqual([]);
      const shot = path.join(shots, 'report-timelines.png');
      await page.locator('svg#chart-accuracy').screenshot({ path: path.join(shots, 'report-accuracy.png') });
      await page.locator('section#timelines').screenshot({ path: shot });
      // In print the strips keep their size and every mark (shapes and letters carry the meaning).
      await page.emulateMedia({ media: 'print' });
      for (const instance of report.instances) {
        const printed = (await page.locator(`svg#strip-${instance.group}-r${instance.replicate}`).boundingBox())!;
        expect(printed.width, instance.group).toBeGreaterThan(600);
        const laidOut = await page.locator(`svg#strip-${instance.group}-r${instance.replicate} g.mark`).evaluateAll((gs) => gs.filter((g) => g.getBoundingClientRect().width > 0 && g.getBoundingClientRect().height > 0).length);
        expect(laidOut, `${instance.group}: marks laid out in print`).toBe(Object.values(STORE_LANE_COUNTS).reduce((n, rule) => n + rule.of(storeOf.get(instance.dir)!), 0));
      }
      const pdf = await page.pdf({ path: path.join(shots, 'report.pdf'), format: 'A4' });
      expect(pdf.length).toBeGreaterThan(10_000);
      mkdirSync(path.dirname(NOTES_SCREENSHOT), { recursive: true });
      copyFileSync(shot, NOTES_SCREENSHOT);
      copyFileSync(path.join(shots, 'report-accuracy.png'), NOTES_SCREENSHOT.replace('.png', '-accuracy.png'));
    } finally {
      await opened.context.close();
    }
  });

  test('forged: strips that lost one crash draw one crash mark fewer on the accuracy chart, and the count catches it', async () => {
    const timelines = readReportTimelines(studyDir, report);
    let dropped = false;
    const forged = {
      ...timelines,
      strips: timelines.strips.map((strip) => {
        if (dropped || strip.timeline === null || !strip.timeline.marks.some((m) => m.lane === 'crashes')) return strip;
        dropped = true;
        const at = strip.timeline.marks.findIndex((m) => m.lane === 'crashes');
        return { ...strip, timeline: { ...strip.timeline, marks: strip.timeline.marks.filter((_, i) => i !== at) } };
      }),
    };
    expect(dropped).toBe(true);
    const file = path.join(shots, 'forged', 'report.html');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, renderReportHtml(report, { timelines: forged }));
    const opened = await openOffline(browser, file, PAGE_TIMEOUT_MS);
    try {
      const expected = chartCountsFromStores();
      const drawn = await opened.page.locator('svg#chart-accuracy g.chart-crash').count();
      expect(drawn).toBe(expected.crashes - 1);
      expect(drawn === expected.crashes).toBe(false);
    } finally {
      await opened.context.close();
    }
  });
});
