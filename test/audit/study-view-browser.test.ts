// The audit desk over a whole study (issue 35 item 5), as a reader uses it: the real `npm run
// audit -- STUDY` process serving a real study folder (A, B and C of one replicate, the reference
// policy, the shared blind-study fixture) on loopback, driven by a real headless Chromium. From
// the served report.html a finding's link leads to its event's page, where the finding is shown;
// a wake's page shows what A, B and C were shown and answered, counted against their stores
// (read here with better-sqlite3, not through the desk); nothing in the study folder changes.
// Forged reports (a seq or an instance the study does not hold, hostile text) are shown as
// problems, escaped. Chromium must be installed (/usr/bin/chromium): without it this FAILS.
import Database from 'better-sqlite3';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AuditDesk } from '../../audit/audit-desk.js';
import { startAuditServer, type AuditServer } from '../../audit/audit-server.js';
import { startStudyServer } from '../../audit/study-server.js';
import { StudyView } from '../../audit/study-view.js';
import { StudyReport } from '../../oracle/study-report.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { renderReportHtml } from '../../study/report-html.js';
import { readReportTimelines } from '../../study/instance-timelines.js';
import { copyStudy, makeBlindStudy } from '../support/blind-study.js';
import { spawnAuditDesk, stopAuditDesk, type DeskProcess } from '../support/audit-desk-process.js';
import { launchChromium, openOnOrigin, type OriginPage } from '../support/chromium.js';
import { closeDeskPage } from '../support/desk-browser.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { folderState } from '../support/folder-state.js';
import { tempDir } from '../support/writer-fixture.js';

const PAGE_TIMEOUT_MS = 15_000;
const DESK_START_TIMEOUT_MS = 60_000;
/** Where the screenshots go: DS_SCREENSHOT_DIR when set (the notes of a review), else a temporary folder of this run. */
const SHOTS = process.env['DS_SCREENSHOT_DIR'] ?? tempDir('ds-study-view-shots-');
const XSS = '<script>alert(1)</script><img src=x onerror=alert(2)>';

let studyDir: string;
let before: Map<string, string> | null;
let report: StudyReport;
let desk: DeskProcess | undefined;
let deskUrl: string;
let browser: Browser;
const servers: AuditServer[] = [];

beforeAll(async () => {
  ({ studyDir } = await makeBlindStudy());
  before = folderState(studyDir);
  report = StudyReport.parse(JSON.parse(readFileSync(path.join(studyDir, STUDY_FILES.json), 'utf8')));
  desk = await spawnAuditDesk(studyDir, DESK_START_TIMEOUT_MS);
  deskUrl = desk.url;
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  for (const s of servers) await s.close();
  await stopAuditDesk(desk);
});

/** Every event of a run's store, read with better-sqlite3 (read-only), not through the desk. */
function storeEvents(runDir: string): EventEnvelope[] {
  const db = new Database(path.join(runDir, 'events.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT envelope FROM events ORDER BY seq').all() as { envelope: string }[]).map((r) => JSON.parse(r.envelope) as EventEnvelope);
  } finally {
    db.close();
  }
}

type Opened = OriginPage;

function open(url: string, origin = deskUrl): Promise<Opened> {
  return openOnOrigin(browser, origin, url, PAGE_TIMEOUT_MS, { viewport: { width: 1400, height: 1000 } });
}

const closeClean = closeDeskPage;

const located = (): { key: string; seq: number; id: string; detail: string }[] =>
  report.instances.flatMap((i) => i.hard_failures.filter((f) => f.seq !== null).map((f) => ({ key: `${i.group}-r${i.replicate}`, seq: f.seq!, id: f.id, detail: f.detail })));

describe('a real study served whole', () => {
  test('the study page lists its instances by group and every finding of report.json, linked to its event', async () => {
    const findings = report.instances.flatMap((i) => i.hard_failures).length;
    expect(desk!.desk.output()).toContain(`audit desk (study): ${studyDir}`);
    expect(desk!.desk.output()).toContain(`${report.instances.length} instance(s) in 1 replicate(s); report.json: ${report.verdict}; ${findings} hard failure(s) listed`);
    const opened = await open(`${deskUrl}/`);
    const { page } = opened;
    expect(await page.locator('#verdict-label').innerText()).toBe(report.verdict);
    expect(await page.locator('#instances td.instance').count()).toBe(report.instances.length);
    // The fixture's A-r1 asserts as FACT a figure the scenario has refuted: a real hard failure.
    expect(located().length).toBeGreaterThan(0);
    expect(await page.locator('#findings tr.finding-row').count()).toBe(report.instances.flatMap((i) => i.hard_failures).length);
    for (const f of located()) expect(await page.locator(`#findings tr[data-instance="${f.key}"][data-seq="${f.seq}"] a.finding-link`).getAttribute('href')).toBe(`/run/${f.key}/event/${f.seq}`);
    await page.screenshot({ path: path.join(SHOTS, 'view-study.png'), fullPage: true });
    await closeClean(opened);
  });

  test('from the served report.html, each finding\'s link leads to its event page, which shows that finding', async () => {
    for (const f of located()) {
      const opened = await open(`${deskUrl}/report.html`);
      const { page } = opened;
      const link = page.locator(`a.finding-link[href="/run/${f.key}/event/${f.seq}"]`);
      expect(await link.count()).toBe(1);
      await Promise.all([page.waitForURL(`${deskUrl}/run/${f.key}/event/${f.seq}`), link.click()]);
      const findings = page.locator('#findings');
      expect(await findings.isVisible()).toBe(true);
      const item = findings.locator(`li.finding[data-finding="${f.id}"]`);
      expect(await item.count()).toBe(1);
      expect(await item.innerText()).toContain(f.detail);
      expect(await page.locator('h1').innerText()).toBe(`Event #${f.seq}`);
      // The desk's own links on the page stay inside the instance, and lead back to the study.
      expect(await page.locator('a[href^="/event/"]').count()).toBe(0);
      expect(await page.locator('#study-link').getAttribute('href')).toBe('/');
      await page.screenshot({ path: path.join(SHOTS, 'view-finding.png'), fullPage: false });
      await closeClean(opened);
    }
  });

  test('in the served report.html each mark of an instance\'s 72-hour strip links to its event page in the desk', async () => {
    const opened = await open(`${deskUrl}/report.html`);
    const { page } = opened;
    const marks = page.locator('svg#strip-A-r1 a');
    const hrefs = await marks.evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    // One link per mark the store gave the strip: every WakeStarted at least, each into A-r1's desk.
    const wakes = storeEvents(path.join(studyDir, 'instances', 'A-r1')).filter((e) => e.event_type === 'ExperimentEvent.WakeStarted');
    expect(hrefs.length).toBeGreaterThanOrEqual(wakes.length);
    for (const href of hrefs) expect(href).toMatch(/^\/run\/A-r1\/event\/\d+$/);
    const first = `/run/A-r1/event/${wakes[0]!.seq}`;
    expect(hrefs).toContain(first);
    await Promise.all([page.waitForURL(`${deskUrl}${first}`), page.locator(`svg#strip-A-r1 a[href="${first}"]`).first().click()]);
    expect(await page.locator('h1').innerText()).toBe(`Event #${wakes[0]!.seq}`);
    await closeClean(opened);
  });

  test('report.html as written to the study folder keeps its seqs as plain text (no link that leads nowhere from a file)', () => {
    const onDisk = readFileSync(path.join(studyDir, STUDY_FILES.html), 'utf8');
    expect(onDisk).not.toContain('finding-link');
    expect(onDisk).not.toContain('href="/run/');
    // The same page the study wrote (with its 72-hour strips), less the links.
    expect(onDisk).toBe(renderReportHtml(report, { timelines: readReportTimelines(studyDir, report) }));
    for (const f of located()) expect(onDisk).toContain(`<td class="num">${f.seq}</td>`);
  });

  test('a wake side by side: what A, B and C were shown and answered, as their stores hold it', async () => {
    // The wake after the first delivered intervention: each column has a delivery and an answer.
    const aEvents = storeEvents(path.join(studyDir, 'instances', 'A-r1'));
    const delivered = aEvents.find((e) => e.event_type === 'ExperimentEvent.InterventionDelivered')!;
    const wakeId = (delivered.payload as { wake_id: string }).wake_id;
    const opened = await open(`${deskUrl}/replicate/1`);
    const { page } = opened;
    await Promise.all([page.waitForURL(`${deskUrl}/wake/1/${wakeId}`), page.locator(`a.wake-link[href="/wake/1/${wakeId}"]`).click()]);
    for (const group of ['A', 'B', 'C'] as const) {
      const events = storeEvents(path.join(studyDir, 'instances', `${group}-r1`));
      const started = events.findIndex((e) => e.event_type === 'ExperimentEvent.WakeStarted' && (e.payload as { wake_id: string }).wake_id === wakeId);
      const ended = events.findIndex((e) => e.event_type === 'ExperimentEvent.WakeEnded' && (e.payload as { wake_id: string }).wake_id === wakeId);
      let previousEnd = started - 1;
      while (previousEnd >= 0 && events[previousEnd]!.event_type !== 'ExperimentEvent.WakeEnded') previousEnd -= 1;
      const answers = events.slice(started, ended + 1).filter((e) => e.event_type === 'ModelOutputEvent.ModelAnswered');
      const deliveries = events.slice(previousEnd + 1, ended + 1).filter((e) => e.event_type === 'ExperimentEvent.InterventionDelivered');
      const column = page.locator(`td.wake-column[data-group="${group}"]`);
      expect(answers.length, group).toBeGreaterThan(0);
      expect(deliveries.length, group).toBe(1);
      expect(await column.locator('.call').count(), group).toBe(answers.length);
      const shown = await column.locator('pre.answer').allInnerTexts();
      expect(shown, group).toEqual(answers.map((a) => (a.payload as { raw_output: string }).raw_output));
      expect(await column.locator('.deliveries li').count(), group).toBe(deliveries.length);
      expect(await column.locator('.wake-events tr').count(), group).toBe(ended - started + 1);
    }
    await page.screenshot({ path: path.join(SHOTS, 'view-wake.png'), fullPage: false });
    await closeClean(opened);
  });

  test('every instance\'s desk pages answer under its prefix; a wake or instance the study lacks is a 404 saying why', async () => {
    for (const i of report.instances) {
      const key = `${i.group}-r${i.replicate}`;
      for (const p of ['', 'timeline', 'claims', 'integrity', 'event/1']) {
        const r = await fetch(`${deskUrl}/run/${key}/${p}`);
        expect(r.status, `${key}/${p}`).toBe(200);
        expect(await r.text()).not.toMatch(/href="\/(?!run\/|report\.html|replicate|wake)[a-z]/);
      }
    }
    const noWake = await fetch(`${deskUrl}/wake/1/${encodeURIComponent(XSS)}`);
    expect(noWake.status).toBe(404);
    const text = await noWake.text();
    expect(text).not.toContain('<script>alert');
    expect(text).toContain('no instance of replicate 1 shows wake');
    expect((await fetch(`${deskUrl}/run/D-r9/`)).status).toBe(404);
    expect((await fetch(`${deskUrl}/wake/1/%E0%A4`)).status).toBe(400);
    expect((await fetch(`${deskUrl}/run/A-r1/`, { method: 'POST' })).status).toBe(405);
  });

  test('the study folder is byte-identical after serving and browsing', () => {
    expect(folderState(studyDir)).toEqual(before);
  });
});

describe('a forged report.json is shown as problems, never dropped, its text escaped', () => {
  let forged: string;
  let url: string;

  beforeAll(async () => {
    forged = copyStudy(studyDir);
    const raw = JSON.parse(readFileSync(path.join(forged, STUDY_FILES.json), 'utf8')) as StudyReport;
    const a = raw.instances.find((i) => i.group === 'A')!;
    a.hard_failures.push({ id: 'duplicate_side_effect', seq: 999_999, detail: `forged ${XSS}` });
    const ghost = { ...raw.instances.find((i) => i.group === 'B')!, replicate: 7, dir: 'instances/B-r7', hard_failures: [{ id: 'fact_contradicts_store' as const, seq: 12, detail: 'an instance the study does not hold' }] };
    raw.instances.push(ghost);
    writeFileSync(path.join(forged, STUDY_FILES.json), JSON.stringify(StudyReport.parse(raw)));
    const view = StudyView.open(forged, SCENARIOS_DIR);
    const server = await startStudyServer(view, { port: 0, log: () => {}, renderReport: (r, findingHref) => renderReportHtml(r, { findingHref }) });
    servers.push(server);
    url = server.url.replace(/\/$/, '');
  }, 60_000);

  test('a seq the store does not hold and an instance the folder does not hold are named on the study page', async () => {
    const opened = await open(`${url}/`, url);
    const { page } = opened;
    expect(await page.locator('#study-problems').innerText()).toContain('report.json lists B-r7 (dir instances/B-r7), which is not in');
    const missingSeq = page.locator('#findings tr[data-instance="A-r1"][data-seq="999999"]');
    expect(await missingSeq.locator('.finding-problem').innerText()).toMatch(/seq 999999 is not in its store \(it holds seq 1 to \d+\)/);
    expect(await missingSeq.locator('a.finding-link').count()).toBe(0);
    expect(await page.locator('#findings tr[data-instance="B-r7"] .finding-problem').innerText()).toContain('B-r7 is not in the study folder');
    // The hostile detail is text: no element of its own, shown as written.
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(await missingSeq.innerText()).toContain(XSS);
    await closeClean(opened);
    const overview = await (await fetch(`${url}/run/A-r1/`)).text();
    expect(overview).toContain('seq 999999 is not in this store');
    expect(overview).not.toContain('<script>alert');
  });

  test('a run opened on its own inside the study finds its findings in report.json; an unreadable report is said so on its pages', async () => {
    const runDir = path.join(forged, 'instances', 'A-r1');
    const single = AuditDesk.open(runDir, SCENARIOS_DIR);
    expect(single.findings).toMatchObject({ ok: true, value: { instance: 'A-r1' } });
    const server = await startAuditServer(single, { port: 0, log: () => {} });
    servers.push(server);
    const seq = located()[0]!.seq;
    expect(await (await fetch(`${server.url}event/${seq}`)).text()).toContain('id="findings"');

    const broken = copyStudy(studyDir);
    copyFileSync(path.join(broken, STUDY_FILES.plan), path.join(broken, STUDY_FILES.json));
    const unreadable = AuditDesk.open(path.join(broken, 'instances', 'A-r1'), SCENARIOS_DIR);
    expect(unreadable.findings).toMatchObject({ ok: false, problem: expect.stringContaining('is not a study report') });
    const view = StudyView.open(broken, SCENARIOS_DIR);
    const brokenServer = await startStudyServer(view, { port: 0, log: () => {}, renderReport: (r) => renderReportHtml(r) });
    servers.push(brokenServer);
    expect(await (await fetch(`${brokenServer.url}`)).text()).toContain('id="report-problem"');
    expect(await (await fetch(`${brokenServer.url}run/A-r1/event/${seq}`)).text()).toContain('id="findings-unknown"');
    expect((await fetch(`${brokenServer.url}report.html`)).status).toBe(404);
  });
});
