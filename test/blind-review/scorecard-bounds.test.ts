// The scorecard stays readable (issue 32): control characters from model text are shown escaped,
// never written raw (a real run's events forged to hold NUL, ESC, BEL, DEL and C1 controls, and a
// lone surrogate, taken through the exporter's own path: normalizer, package data, page); a run far
// too large for a page gives a page within MAX_SCORECARD_BYTES that says so and names, where it
// would be, what it leaves out and the file that holds it, with every wake still shown; a long
// timeline starts collapsed by wake. The fitting itself (water-filling) on small hand-worked lists.
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { normalizeEvents } from '../../blind-review/event-normalizer.js';
import { scorecardBoundNote } from '../../blind-review/export-notes.js';
import { buildPackageData, packageFiles } from '../../blind-review/package-content.js';
import { PACKAGE_FILES, TimelineEntry, type ClaimsWithEvidence, type ActionChains } from '../../blind-review/package-format.js';
import { fitLists, MAX_SCORECARD_BYTES } from '../../blind-review/scorecard-budget.js';
import type { ScorecardData } from '../../blind-review/scorecard-data.js';
import { renderScorecardPage } from '../../blind-review/scorecard-html.js';
import { OPEN_TIMELINE_UP_TO_ENTRIES } from '../../blind-review/scorecard-wakes.js';
import { loadRunRecord, type RunRecord } from '../../oracle/run-record.js';
import { copyStudy, makeBlindStudy } from '../support/blind-study.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { samplePackage } from '../support/sample-package.js';

/** Every control character the page must never hold raw: C0 but the line feed, DEL, C1. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const CONTROLS = '\u0000\u0001\u0007\u0008\u0009\u000d\u001b[31m\u007f\u0085\u009b';

let record: RunRecord;
let runDir: string;

beforeAll(async () => {
  const study = await makeBlindStudy();
  runDir = path.join(copyStudy(study.studyDir), 'instances', 'C-r1');
  record = loadRunRecord(runDir, SCENARIOS_DIR);
}, 180_000);

const allIds = (html: string): Set<string> => new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((m) => m[1]!));
const allHrefs = (html: string): string[] => [...html.matchAll(/\shref="#([^"]*)"/g)].map((m) => m[1]!);

describe('control characters from model text', () => {
  test("a real run's answer, proposed path, rationale and checkpoint holding NUL, ESC, BEL, DEL, C1 and a lone surrogate: the page holds no raw control character, each shown as its \\u escape", () => {
    // Forge the run's own events (in memory, as loaded): the first proposed action's path and rationale, the first answer, the first checkpoint.
    const events = structuredClone(record.events);
    const proposal = events.find((e) => e.event_type === 'ActionEvent.ActionProposed' && typeof (e.payload['args'] as Record<string, unknown>)['path'] === 'string')!;
    const args = proposal.payload['args'] as Record<string, unknown>;
    args['path'] = `notes/${CONTROLS}x.md`;
    proposal.payload['rationale'] = `because${CONTROLS}\ud800 (a lone surrogate)`;
    const answer = events.find((e) => e.event_type === 'ModelOutputEvent.ModelAnswered')!;
    answer.payload['raw_output'] = `${String(answer.payload['raw_output'])}${CONTROLS}`;
    const checkpoint = events.find((e) => e.event_type === 'ExperimentEvent.CheckpointRecorded')!;
    checkpoint.payload['next_action'] = `write notes/${CONTROLS}x.md`;
    const forged: RunRecord = { ...record, events };
    const timeline = normalizeEvents(forged.events, forged.plan, { hostPaths: [runDir] });
    const data = buildPackageData(forged, 'R-00C0DE', timeline);
    // The controls reach the package data as the model wrote them.
    expect(data.timeline.some((e) => e.summary.includes('\u0000'))).toBe(true);
    expect(data.actions.some((a) => a.rationale.includes('\u0000'))).toBe(true);
    expect(data.checkpoints.some((c) => c.next_action?.includes('\u001b') === true)).toBe(true);

    const page = renderScorecardPage(data);
    const html = packageFiles(data, page.html).get(PACKAGE_FILES.scorecard)!;
    expect(html).toBe(page.html);
    expect(html).not.toMatch(RAW_CONTROL);
    expect(Buffer.from(html, 'utf8').includes(0)).toBe(false);
    // No unpaired surrogate either: the file is the same text after a UTF-8 round trip.
    expect(Buffer.from(html, 'utf8').toString('utf8')).toBe(html);
    // Each shown as what it is, marked.
    for (const c of ['\\u0000', '\\u0001', '\\u0007', '\\u0008', '\\u0009', '\\u000d', '\\u001b', '\\u007f', '\\u0085', '\\u009b', '\\ud800']) {
      expect(html, c).toContain(`<span class="ctl" title="control character">${c}</span>`);
    }
    // The JSON block escapes them and reads back to the same strings.
    const json = /<script type="application\/json" id="package-data">([\s\S]*?)<\/script>/.exec(html)![1]!;
    const back = JSON.parse(json) as { actions: ActionChains; checkpoints: ScorecardData['checkpoints'] };
    expect(back.actions.map((a) => a.rationale)).toEqual(data.actions.map((a) => a.rationale));
    expect(back.checkpoints).toEqual(JSON.parse(JSON.stringify(data.checkpoints)));
  });
});

/** A run far too large for one page: `wakes` wakes of `perWake` entries with 1.5 KB details each, and many claims and chains. */
function hugePackage(wakes: number, perWake: number, claimsCount: number, chainsCount: number): ScorecardData {
  const base = samplePackage();
  const ref = (i: number): string => `E${String(i + 1).padStart(5, '0')}`;
  const timeline: TimelineEntry[] = [];
  for (let w = 0; w < wakes; w++) {
    for (let k = 0; k < perWake; k++) {
      const i = timeline.length;
      const minute = w * 60 + Math.floor(k / 10);
      timeline.push(
        TimelineEntry.parse({
          ref: ref(i),
          t: `h${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`,
          t_minute: minute,
          wake: `W${String(w + 1).padStart(2, '0')}`,
          kind: 'journal_entry',
          actor: 'subject',
          summary: `journal ${i}: ${'a long line of notes '.repeat(8)}`,
          detail: { text: `entry ${i} `.padEnd(1_500, 'x') },
          refs: i > 0 ? [ref(i - 1)] : [],
        }),
      );
    }
  }
  const claims: ClaimsWithEvidence = Array.from({ length: claimsCount }, (_, k) => ({ ref: ref(k * 7), t: timeline[k * 7]!.t, wake: timeline[k * 7]!.wake, claim_type: 'FACT' as const, statement: `claim ${k}: ${'a statement of some length '.repeat(6)}`, confidence: null, alternatives: [], evidence: [{ ref: ref(timeline.length - 1 - k), kind: 'journal_entry' as const, summary: 'the last entries' }] }));
  const actions: ActionChains = Array.from({ length: chainsCount }, (_, k) => ({ proposal: ref(k * 5 + 1), t: timeline[k * 5 + 1]!.t, wake: timeline[k * 5 + 1]!.wake, tool: 'files', op: 'write', target: `notes/n${k}.md`, rationale: 'keep notes '.repeat(10), decision: 'allow' as const, decision_ref: ref(k * 5 + 2), failed_rules: [], repeat_of_denied: false, intent: ref(k * 5 + 3), outcome: 'succeeded' as const, outcome_ref: ref(k * 5 + 4) }));
  return { ...base, manifest: { ...base.manifest, wakes, timeline_entries: timeline.length }, timeline, claims, actions };
}

describe('the page bound', () => {
  test(`a run far over ${MAX_SCORECARD_BYTES} bytes: the page stays within it, says so, shows every wake's first entries and names what it leaves out and where it is`, () => {
    const data = hugePackage(40, 500, 2_000, 3_000);
    const page = renderScorecardPage(data);
    expect(page.bytes).toBe(Buffer.byteLength(page.html, 'utf8'));
    expect(page.bytes).toBeLessThanOrEqual(MAX_SCORECARD_BYTES);
    // Most of the bound is used (not a page cut far below it).
    expect(page.bytes).toBeGreaterThan(MAX_SCORECARD_BYTES * 0.9);
    expect(page.leftOut.timeline).toBeGreaterThan(0);
    expect(page.leftOut.claims).toBeGreaterThan(0);
    expect(page.leftOut.actions).toBeGreaterThan(0);
    const html = page.html;
    const shownEntries = 20_000 - page.leftOut.timeline;
    expect(html).toContain(`<p id="page-bound">This page is held to at most 1,048,576 bytes. This run is larger: the page shows ${shownEntries.toLocaleString('en-US')} of 20,000 timeline entries (the first ones of every wake), ${2_000 - page.leftOut.claims} of 2,000 claims and ${3_000 - page.leftOut.actions} of 3,000 action chains.`);
    // Every wake has its block, collapsed (the timeline is long), with its first entries and a notice naming the rest and the file.
    const blocks = html.split('<details class="wake"').slice(1);
    expect(blocks).toHaveLength(40);
    for (const [w, block] of blocks.entries()) {
      expect(block.startsWith('><summary>'), `wake ${w + 1} starts closed`).toBe(true);
      const first = w * 500;
      expect(block, `wake ${w + 1}`).toContain(`id="E${String(first + 1).padStart(5, '0')}"`);
      const shown = [...block.matchAll(/<li id="(E\d+)" class="entry/g)].length;
      expect(shown).toBeGreaterThan(0);
      expect(shown).toBeLessThan(500);
      expect(block).toContain(`<p class="left-out">${500 - shown} more entries of this block (E${String(first + shown + 1).padStart(5, '0')}–E${String(first + 500).padStart(5, '0')}) are not shown here: this page is held to 1,048,576 bytes. They are in normalized_timeline.jsonl (one entry a line, by its number) of this package.</p>`);
    }
    expect(html).toMatch(/<p class="left-out">[\d,]+ more claims \(E\d+–E\d+\) are not shown here: this page is held to 1,048,576 bytes\. They are in claims_with_evidence\.json of this package\.<\/p>/);
    expect(html).toMatch(/<p class="left-out">[\d,]+ more action chains \(E\d+–E\d+\) are not shown here: this page is held to 1,048,576 bytes\. They are in action_chains\.json of this package\.<\/p>/);
    // No dead link: an entry left out reads "(not shown here)" where it is cited.
    const ids = allIds(html);
    for (const href of allHrefs(html)) expect(ids.has(href), href).toBe(true);
    expect(html).toContain('(not shown here)</span>');
    // The same page for the same data.
    expect(renderScorecardPage(data).html).toBe(html);
  });

  test('a run that fits is shown whole, and the page says so', () => {
    const page = renderScorecardPage(samplePackage());
    expect(page.leftOut).toEqual({ timeline: 0, claims: 0, actions: 0 });
    expect(page.html).toContain('<p id="page-bound">This page is held to at most 1,048,576 bytes. Everything of this package is shown.</p>');
    expect(page.html).not.toContain('class="left-out"');
    // A short timeline reads in one scroll: its blocks start open.
    expect(page.html.split('<details class="wake" open>').length - 1).toBe(page.html.split('<details class="wake"').length - 1);
  });

  test(`a timeline of more than ${OPEN_TIMELINE_UP_TO_ENTRIES} entries starts collapsed by wake, and a page within the bound still shows all of it`, () => {
    const data = hugePackage(4, 50, 10, 10);
    const page = renderScorecardPage(data);
    expect(page.leftOut).toEqual({ timeline: 0, claims: 0, actions: 0 });
    expect(page.html).not.toContain('<details class="wake" open>');
    expect(page.html.split('<details class="wake">').length - 1).toBe(4);
    expect(page.html).toContain('closed (the timeline has over 150 entries): open a block to read its entries; a link to an entry opens its block');
  });

  test("the export's note sums what the pages left out, and says nothing when nothing was", () => {
    expect(scorecardBoundNote({ pages: 0, timeline: 0, claims: 0, actions: 0 }, 3)).toEqual([]);
    expect(scorecardBoundNote({ pages: 2, timeline: 900, claims: 12, actions: 30 }, 3)).toEqual([
      "2 of 3 scorecard page(s) reached their bound of 1048576 bytes and leave out 900 timeline entries, 12 claim(s) and 30 action chain(s) in all: each page names what it leaves out where it would be, and every one is in the package's normalized_timeline.jsonl, claims_with_evidence.json and action_chains.json",
    ]);
  });
});

describe('fitting lists into a budget (weighted water-filling)', () => {
  test('lists that fit their share are shown whole; the rest share what is left by weight, each a prefix', () => {
    // Budget 100 over three lists of weight 1 totalling 10, 60 and 200: the first fits (10), the others share 90 (45 each).
    expect(fitLists([{ sizes: [5, 5], weight: 1 }, { sizes: [20, 20, 20], weight: 1 }, { sizes: [50, 50, 50, 50], weight: 1 }], 100)).toEqual([2, 2, 0]);
    expect(fitLists([{ sizes: [10], weight: 1 }, { sizes: [30, 30], weight: 1 }], 1_000)).toEqual([1, 2]);
    expect(fitLists([{ sizes: [10], weight: 1 }, { sizes: [], weight: 1 }], 0)).toEqual([0, 0]);
    expect(fitLists([{ sizes: [40, 40, 40], weight: 1 }, { sizes: [40, 40, 40], weight: 1 }], 170)).toEqual([2, 2]);
    // Weight 2 against 1 over 300: shares 200 and 100.
    expect(fitLists([{ sizes: Array(10).fill(50), weight: 2 }, { sizes: Array(10).fill(50), weight: 1 }], 300)).toEqual([4, 2]);
  });
});
