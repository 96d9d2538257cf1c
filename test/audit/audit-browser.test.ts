// The audit desk as an auditor uses it: the real `npm run audit` process serving a real run
// on loopback, driven by a real headless Chromium (Debian's chromium via playwright-core).
// The auditor's two questions are answered by clicking: what did the subject hold at seq N
// (the state page, checked against an independent replay), and what justified claim X (claim →
// its evidence → back to the claim). Every request off the desk's origin is refused and
// counted, and the pages must raise no console error (a CSP violation is one).
// Chromium must be installed (/usr/bin/chromium, .ci/run installs it): without it this FAILS.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SubjectState } from '../../projector/subject-state.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { replayStore } from '../../writer/replay.js';
import { spawnAuditDesk, stopAuditDesk, type DeskProcess } from '../support/audit-desk-process.js';
import { launchChromium, openOnOrigin, type OriginPage } from '../support/chromium.js';
import { runCli } from '../support/cli.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';

const PAGE_TIMEOUT_MS = 15_000;
const DESK_START_TIMEOUT_MS = 30_000;

let run: FinishedRun;
let runDir: string;
let events: EventEnvelope[];
let desk: DeskProcess | undefined;
let deskUrl: string;
let browser: Browser;

beforeAll(async () => {
  run = await finishedRun();
  ({ runDir, events } = run);
  desk = await spawnAuditDesk(runDir, DESK_START_TIMEOUT_MS);
  deskUrl = desk.url;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stopAuditDesk(desk);
  run?.cleanup();
});

type DeskPage = OriginPage;

/** A page that may reach the desk and nothing else; everything it tried or raised is recorded. */
function openDesk(pathname: string): Promise<DeskPage> {
  return openOnOrigin(browser, deskUrl, `${deskUrl}${pathname}`, PAGE_TIMEOUT_MS);
}

async function closeClean(opened: DeskPage): Promise<void> {
  await opened.context.close();
  expect(opened.offOrigin).toEqual([]);
  expect(opened.consoleErrors).toEqual([]);
  expect(opened.pageErrors).toEqual([]);
}

const ofType = (type: string): EventEnvelope[] => events.filter((e) => e.event_type === type);

describe('the audit desk in Chromium, on a real run', () => {
  test('loads the run: identity, verified chain and signatures, lifecycle at the head, every wake', async () => {
    const opened = await openDesk('/');
    const { page } = opened;
    expect(await page.title()).toBe('Overview — audit desk');
    expect(await page.locator('#verify-status').innerText()).toBe('chain & signatures verified');
    expect(await page.locator('#run-banner').innerText()).toContain(`${events.length} events · sealed at seq ${events.length}`);
    const replayed = replayStore(path.join(runDir, RUN_FILES.store)).state as SubjectState;
    expect(await page.locator('#head-lifecycle').innerText()).toBe(replayed.lifecycle_state);
    expect(await page.locator('#wakes tbody tr').count()).toBe(ofType('ExperimentEvent.WakeStarted').length);
    expect(await page.locator('#manifest').innerText()).toContain('autonomous re-planning: on');
    await closeClean(opened);
  });

  test('filters the timeline by event type, and pages through the filtered events', async () => {
    const opened = await openDesk('/timeline');
    const { page } = opened;
    const claims = ofType('MemoryEvent.ClaimRecorded');
    const goals = ofType('WorldEvent.GoalChanged');
    await page.locator('input[name="type"][value="MemoryEvent.ClaimRecorded"]').check();
    await page.locator('input[name="type"][value="WorldEvent.GoalChanged"]').check();
    await page.locator('input[name="limit"]').fill('20');
    await Promise.all([page.waitForURL(/type=MemoryEvent\.ClaimRecorded/), page.locator('#apply-filter').click()]);
    const shownSeqs: number[] = [];
    const wanted = [...claims, ...goals].map((e) => e.seq).sort((a, b) => a - b);
    // Bounded: one click per page of 20 over the filtered events.
    for (let pages = 0; pages <= Math.ceil(wanted.length / 20); pages += 1) {
      const types = await page.locator('table.events tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-type')));
      expect(new Set(types).size).toBeLessThanOrEqual(2);
      for (const t of types) expect(['MemoryEvent.ClaimRecorded', 'WorldEvent.GoalChanged']).toContain(t);
      shownSeqs.push(...(await page.locator('table.events tbody tr td:first-child a').evaluateAll((links) => links.map((a) => Number(a.getAttribute('data-seq'))))));
      if ((await page.locator('#next-page').count()) === 0) break;
      await Promise.all([page.waitForURL(/after=\d+/), page.locator('#next-page').first().click()]);
    }
    expect(shownSeqs).toEqual(wanted);
    await closeClean(opened);
  });

  test('jumps from a FACT to its evidence and back from the evidence to the FACT', async () => {
    const fact = ofType('MemoryEvent.ClaimRecorded').find((e) => e.payload.claim_type === 'FACT' && (e.payload.evidence_event_ids as string[]).length > 0)!;
    expect(fact).toBeDefined();
    const evidenceId = (fact.payload.evidence_event_ids as string[])[0]!;
    const evidence = events.find((e) => e.event_id === evidenceId)!;
    const opened = await openDesk('/claims');
    const { page } = opened;
    // From the claims list to the claim's own page.
    await Promise.all([page.waitForURL(new RegExp(`/event/${fact.seq}$`)), page.locator(`#claims a[data-seq="${fact.seq}"]`).first().click()]);
    expect(await page.locator('#claim-statement').innerText()).toBe(fact.payload.statement);
    expect(await page.locator('#evidence .evidence-row').count()).toBe((fact.payload.evidence_event_ids as string[]).length);
    expect(await page.locator('#evidence .evidence-row').first().innerText()).toContain('yes');
    // To the evidence …
    await Promise.all([page.waitForURL(new RegExp(`/event/${evidence.seq}$`)), page.locator(`#evidence a[data-seq="${evidence.seq}"]`).click()]);
    expect(await page.locator('#event-summary').innerText()).toContain(evidence.event_type);
    const citing = await page.locator('#cited-by a[data-seq]').evaluateAll((links) => links.map((a) => Number(a.getAttribute('data-seq'))));
    const expectedCiting = events.filter((e) => ((e.payload.evidence_event_ids as string[] | undefined) ?? []).includes(evidenceId)).map((e) => e.seq);
    expect(citing).toEqual(expectedCiting);
    // … and back to the claim it justifies.
    await Promise.all([page.waitForURL(new RegExp(`/event/${fact.seq}$`)), page.locator(`#cited-by a[data-seq="${fact.seq}"]`).click()]);
    expect(await page.locator('#claim-statement').innerText()).toBe(fact.payload.statement);
    await closeClean(opened);
  });

  test('opens an action chain: proposal → permission decision with its rules → intent → outcome', async () => {
    const intent = ofType('ActionEvent.ExecutionIntentRecorded')[0]!;
    const decision = events.find((e) => e.event_id === intent.payload.permission_event_id)!;
    const proposal = events.find((e) => e.event_id === decision.causation_id)!;
    expect(proposal.event_type).toBe('ActionEvent.ActionProposed');
    const opened = await openDesk('/chains');
    const { page } = opened;
    await Promise.all([page.waitForURL(new RegExp(`/chain/${proposal.seq}$`)), page.locator(`a.open-chain[href="/chain/${proposal.seq}"]`).click()]);
    const steps = await page.locator('#chain-steps li.chain-step').evaluateAll((items) => items.map((i) => i.getAttribute('data-type')));
    expect(steps.slice(0, 4)).toEqual(['ActionEvent.ActionProposed', 'ActionEvent.PermissionDecided', 'ActionEvent.ExecutionIntentRecorded', 'ActionEvent.ToolSucceeded']);
    const rules = (decision.payload.rules as { rule: string }[]).map((r) => r.rule);
    expect(await page.locator('table.rules tbody tr td:first-child').allInnerTexts()).toEqual(rules);
    expect(await page.locator('#chain-gap').count()).toBe(0);
    await closeClean(opened);
  });

  test('shows what the subject held at a past seq, equal to an independent replay to that seq', async () => {
    // The seq right after the first FACT's wake ended: a past state with claims in it.
    const fact = ofType('MemoryEvent.ClaimRecorded').find((e) => e.payload.claim_type === 'FACT')!;
    const wakeEnd = events.find((e) => e.event_type === 'ExperimentEvent.WakeEnded' && e.seq > fact.seq)!;
    const seq = wakeEnd.seq;
    const replayed = replayStore(path.join(runDir, RUN_FILES.store), { toSeq: seq });
    const state = replayed.state as SubjectState;
    const opened = await openDesk('/state');
    const { page } = opened;
    await page.locator('#state-seq').fill(String(seq));
    await Promise.all([page.waitForURL(new RegExp(`/state\\?seq=${seq}$`)), page.locator('#show-state').click()]);
    const provenance = await page.locator('#state-provenance').innerText();
    expect(provenance).toContain(`State after seq ${seq}`);
    expect(provenance).toContain(replayed.state_hash);
    expect(await page.locator('#state-lifecycle').innerText()).toBe(state.lifecycle_state);
    expect(await page.locator('#state-goal').innerText()).toBe(state.current_state.current_goal_id ?? '—');
    expect(await page.locator('#state-claims tr.state-claim').count()).toBe(Object.keys(state.claims).length);
    expect(await page.locator('#state-claims').innerText()).toContain(fact.payload.claim_id as string);
    // Nothing recorded after seq shows up in the past state.
    const later = ofType('MemoryEvent.ClaimRecorded').find((e) => e.seq > seq)!;
    expect(await page.locator('#state-claims').innerText()).not.toContain(later.payload.claim_id as string);
    await closeClean(opened);
  });

  test('compares a snapshot with a replay of the events alone', async () => {
    const opened = await openDesk('/snapshots');
    const { page } = opened;
    const first = page.locator('a.compare-snapshot').first();
    await Promise.all([page.waitForURL(/\/snapshots\?seq=\d+$/), first.click()]);
    expect(await page.locator('#comparison-result').innerText()).toBe('identical');
    await closeClean(opened);
  });

  test('the intervention timeline names the seed and the script version, and links each delivery', async () => {
    const plan = JSON.parse(readFileSync(path.join(runDir, RUN_FILES.plan), 'utf8')) as { seed: string; intervention_script_version: string; interventions: unknown[] };
    const opened = await openDesk('/interventions');
    const { page } = opened;
    expect(await page.locator('#plan-seed').innerText()).toBe(plan.seed);
    expect(await page.locator('#plan-script-version').innerText()).toBe(plan.intervention_script_version);
    expect(await page.locator('#interventions tr.intervention').count()).toBe(plan.interventions.length);
    expect(await page.locator('#interventions a[data-seq]').count()).toBeGreaterThanOrEqual(ofType('ExperimentEvent.InterventionDelivered').length);
    await closeClean(opened);
  });
});

describe('the audit command', () => {
  test('stops on Ctrl-C with exit 0 and refuses misuse and a folder that holds no store (both 2)', async () => {
    const [misuse, notARun] = await Promise.all([runCli('audit', []), runCli('audit', [run.setup.keyDir, '--port', '0'])]);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toContain('give the run folder to audit');
    // A folder without a store is a path of the wrong kind (docs/errors.md): misuse, exit 2.
    expect(notARun.code).toBe(2);
    expect(notARun.stderr).toMatch(/holds no events\.db/);
    desk!.desk.child.kill('SIGINT');
    expect(await desk!.desk.exited).toBe(0);
    expect(desk!.desk.output()).toContain('audit desk: SIGINT, stopping');
  });
});
