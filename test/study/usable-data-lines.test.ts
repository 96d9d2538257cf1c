// One count in every usable-data line (issue 31 item 7): a study report once said "group B: 0 of
// 0 instances usable" and two lines later "rule 8 NOT met: group B: 0 of 1 instances have usable
// data" — B's replicate never ran (the study was stopped before its turn), so the group's own n
// was 0 while the verdict counts the n it rests on. Reports built by the real builder
// (buildStudyReport) from instances that ran but were not scored, and from a group with none
// run at all; every line of report.md, report.html and the screen that counts a group's usable
// instances must give the same "k of n" as the verdict's rule 8.
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { PreRegistration, readPreregJson } from '../../design/prereg.js';
import { buildStudyReport, type BuiltInstance } from '../../study/study-report-builder.js';
import { renderReportHtml } from '../../study/report-html.js';
import { renderReportMarkdown, usableDataScreenLines } from '../../study/report-markdown.js';
import { StudyPlan } from '../../study-contract/study-folder.js';
import { GROUPS, type Group } from '../../design/groups.js';
import { type StudyReport } from '../../oracle/study-report.js';
import { hashCanonical } from '../../schema/hash.js';
import { REPO, TEST_START_AT } from '../support/controller-run.js';

const PREREG = PreRegistration.parse(readPreregJson(path.join(REPO, 'experiments', 'prereg', 'default.json')));
const OUT = '/study';

function report(n: number, instances: readonly Omit<BuiltInstance, 'dir' | 'record' | 'wallMs'>[]): StudyReport {
  const plan = StudyPlan.parse({ study_version: '1.0.0', study_id: 'exp-lines', seed: 'lines', prereg_file: 'prereg.json', prereg_sha256: hashCanonical(PREREG), n_initial: n, n_expanded: n, concurrency: 1, start_at: TEST_START_AT, model: { adapter: 'reference' }, started_at: '2026-03-02T07:00:00.000Z' });
  return buildStudyReport({
    plan,
    prereg: PREREG,
    outDir: OUT,
    n,
    expanded: false,
    expansionReasons: [],
    expansionPoints: [],
    extraNotes: [],
    generatedAt: '2026-03-02T09:00:00.000Z',
    instances: instances.map((i) => ({ ...i, dir: path.join(OUT, 'instances', `${i.group}-r${i.replicate}`), record: null, wallMs: null })),
  });
}

/** Every "k of n instances" a text says about `group`, as [k, n]. */
function countsOf(text: string, group: Group): [number, number][] {
  return [...text.matchAll(new RegExp(`group ${group}: (\\d+) of (\\d+) instances`, 'g'))].map((m) => [Number(m[1]), Number(m[2])]);
}

/** Checks that every usable-data count of `group` in the markdown, the HTML, the screen and the verdict is `expected`, and that each says it at least once. */
function expectOneCount(r: StudyReport, group: Group, expected: [number, number]): void {
  const markdown = renderReportMarkdown(r);
  const html = renderReportHtml(r);
  const screen = usableDataScreenLines(r).join('\n');
  for (const [where, text] of [['report.md', markdown], ['report.html', html], ['screen', screen]] as const) {
    const counts = countsOf(text, group);
    expect(counts.length, `${where}: group ${group} is counted`).toBeGreaterThan(0);
    for (const c of counts) expect(c, `${where}: group ${group}`).toEqual(expected);
  }
  // The verdict's statement names rule 8's count unless something else decides it first (a void batch).
  for (const c of countsOf(r.verdict_statement, group)) expect(c, `verdict statement: group ${group}`).toEqual(expected);
  // The group line and the rule-8 line are both in each document.
  expect(countsOf(markdown, group).length, 'report.md: the group line and rule 8').toBeGreaterThanOrEqual(2);
  expect(countsOf(html, group).length, 'report.html: the group line and rule 8').toBeGreaterThanOrEqual(2);
  expect(countsOf(screen, group).length, 'screen: the group line and rule 8').toBe(2);
}

describe('the usable-data lines agree with each other and with the verdict', () => {
  test('a group whose replicate never ran (stopped before its turn): "0 of 1 instances usable (1 not run)", as rule 8 says, never "0 of 0"', () => {
    const r = report(1, [
      { group: 'A', replicate: 1, status: 'stopped', statusDetail: 'paused: the model server did not answer' },
      { group: 'C', replicate: 1, status: 'failed', statusDetail: 'the runtime exited during start-up' },
    ]);
    // The report holds no instance of B: its own n is 0 — the source of the old "0 of 0".
    expect(r.groups.B.n).toBe(0);
    expect(r.usable_data.shortfalls).toEqual(['group A: 0 of 1 instances have usable data', 'group B: 0 of 1 instances have usable data', 'group C: 0 of 1 instances have usable data']);
    for (const g of GROUPS) expectOneCount(r, g, [0, 1]);
    const screen = usableDataScreenLines(r);
    expect(screen[1]).toBe('usable data, group B: 0 of 1 instances usable (1 not run); 0 of 0 model calls accepted (no call made); failed: none');
    expect(screen[0]).toBe('usable data, group A: 0 of 1 instances usable (1 not scored); 0 of 0 model calls accepted (no call made); failed: none');
    // Each instance without data named with its reason (issue 32 item 6), then rule 8.
    expect(screen.filter((l) => l.startsWith('no data, ')).map((l) => l.slice(0, 'no data, A r1'.length))).toEqual(['no data, A r1', 'no data, C r1']);
    expect(screen.at(-1)).toBe('NO USABLE DATA: rule 8 NOT met: group A: 0 of 1 instances have usable data; group B: 0 of 1 instances have usable data; group C: 0 of 1 instances have usable data');
    expect(renderReportMarkdown(r)).toContain('- Usable data, group B: 0 of 1 instances usable (1 not run); 0 of 0 model calls accepted (no call made); failed: none');
    expect(renderReportHtml(r)).toContain('<li class="usable-data-group" data-group="B">Usable data, group B: 0 of 1 instances usable (1 not run);');
  });

  test('n = 3, a group with one replicate not scored and one never run: "0 of 3 … (1 not scored, 2 not run)" wherever it is counted', () => {
    const r = report(3, [
      { group: 'A', replicate: 1, status: 'failed', statusDetail: 'could not start' },
      { group: 'B', replicate: 1, status: 'stopped', statusDetail: 'not resumed' },
      { group: 'C', replicate: 1, status: 'failed', statusDetail: 'could not start' },
      { group: 'A', replicate: 2, status: 'failed', statusDetail: 'could not start' },
      { group: 'C', replicate: 2, status: 'failed', statusDetail: 'could not start' },
    ]);
    expect(r.groups.B.n).toBe(1);
    expectOneCount(r, 'B', [0, 3]);
    expectOneCount(r, 'A', [0, 3]);
    expect(usableDataScreenLines(r)[1]).toContain('group B: 0 of 3 instances usable (1 not scored, 2 not run);');
    expect(usableDataScreenLines(r)[0]).toContain('group A: 0 of 3 instances usable (2 not scored, 1 not run);');
  });
});
