// The study's orchestration (study/study-runner.ts): expansion of ALL groups, the
// pause after an unauthorised execution, an operator stop, and --recompute catching a report
// that no longer follows from its folders. Three real instances (A, B, C of one seed) are run
// once; the study's instances are copies of them, handed over by a stand-in for
// runNewInstance, so the orchestration is tested in seconds while every instance the study
// scores is a real, signed run folder.
import { instanceReportRecordOf, usableRuleOf } from '../../study/instance-report-record.js';
import Database from 'better-sqlite3';
import { copyFileSync, cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { Group } from '../../controller/instance-runner.js';
import { checkPreregLock, lockFileOf, PreRegistration, readPreregJson } from '../../design/prereg.js';
import { countedScore, evaluateInstance, type InstanceEvaluation } from '../../oracle/instance-evaluation.js';
import { StudyReport } from '../../oracle/study-report.js';
import { buildStudyReport, type BuiltInstance } from '../../study/study-report-builder.js';
import { runStudy, type StudyOptions } from '../../study/study-runner.js';
import { StudyError, STUDY_FILES, StudyPlan } from '../../study-contract/study-folder.js';
import { recomputeStudy } from '../../study/study-recompute.js';
import { hashCanonical } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { controllerSetup, newInstanceOptions, runInstance, SCENARIOS_DIR, TEST_START_AT, type ControllerSetup } from '../support/controller-run.js';
import { copiedStudyOptions, copyingRunner, type CopyCall } from '../support/copying-runner.js';
import { tempDir } from '../support/writer-fixture.js';
import { folderState } from '../support/folder-state.js';
import { runCli } from '../support/cli.js';
import { damageMiddleOfStore } from '../support/damaged-store-file.js';

const SEED = 'study-test';
let setup: ControllerSetup;
const source: Partial<Record<Group, string>> = {};

beforeAll(async () => {
  setup = controllerSetup();
  await Promise.all(
    (['A', 'B', 'C'] as const).map(async (group) => {
      const run = newInstanceOptions(setup, { group, name: `source-${group}`, seed: `${SEED}-r1`, experimentId: 'exp-study-test' });
      const result = await runInstance(run);
      expect(result.status).toBe('finished');
      source[group] = result.runDir;
    }),
  );
}, 120_000);

function studyOptions(outDir: string, overrides: Partial<StudyOptions> & Pick<StudyOptions, 'runInstance'>): StudyOptions {
  return copiedStudyOptions(setup, outDir, SEED, 'exp-study-test', overrides);
}

describe('study orchestration', () => {
  test('no rule triggered: n = 3 per group, no expansion, every instance scored, report files written and recomputable', async () => {
    const calls: CopyCall[] = [];
    const out = path.join(tempDir('ds-study-'), 'study');
    const { report, files } = await runStudy(studyOptions(out, { runInstance: copyingRunner(calls, (g) => source[g]!) }));
    expect(calls).toHaveLength(9);
    expect(report.expanded).toBe(false);
    expect(report.n).toBe(3);
    expect(report.expansion_reasons.at(-1)).toMatch(/no expansion/);
    expect(report.instances.map((i) => `${i.group}-r${i.replicate}`)).toEqual(['A-r1', 'B-r1', 'C-r1', 'A-r2', 'B-r2', 'C-r2', 'A-r3', 'B-r3', 'C-r3']);
    expect(report.instances.every((i) => i.status === 'finished' && i.score !== null)).toBe(true);
    expect(report.fairness.ok).toBe(true);
    expect(report.dry_run).toBe(true);
    expect(report.dry_run_statement).toMatch(/not evidence about/i);
    expect(StudyReport.parse(JSON.parse(readFileSync(files.json, 'utf8')))).toEqual(report);
    expect(readFileSync(files.markdown, 'utf8')).toContain(report.verdict);
    expect(readFileSync(files.html, 'utf8')).toContain('<svg');
    // Copies of one run per group: identical scores within a group.
    for (const g of ['A', 'B', 'C'] as const) expect(new Set(report.groups[g].scores).size).toBe(1);
    expect(recomputeStudy(out, SCENARIOS_DIR).differences).toEqual([]);
  }, 120_000);

  test('a group whose range exceeds 15 expands ALL groups to n = 5, and the verdict rests on the five', async () => {
    const calls: CopyCall[] = [];
    const out = path.join(tempDir('ds-study-'), 'study');
    // A's replicate 2 is a copy of C's run: A's score range becomes C − A, far above 15.
    const from = (g: Group, r: number): string => source[g === 'A' && r === 2 ? 'C' : g]!;
    const { report } = await runStudy(studyOptions(out, { runInstance: copyingRunner(calls, from) }));
    expect(report.expanded).toBe(true);
    expect(report.n).toBe(5);
    expect(report.expansion_reasons.some((r) => /^group A: score range .* > 15 \(triggers expansion\)/.test(r))).toBe(true);
    for (const g of ['A', 'B', 'C'] as const) {
      expect(calls.filter((c) => c.group === g).map((c) => c.replicate).sort()).toEqual([1, 2, 3, 4, 5]);
      expect(report.groups[g].n).toBe(5);
    }
    // The copy is C's signed run under A's label: the label check voids the batch (its forged case).
    expect(report.void_reasons).toEqual([expect.stringMatching(/^A-r2: the signed manifest's capabilities .* are not group A's$/)]);
    expect(report.verdict).toBe('insufficient evidence');
    expect(recomputeStudy(out, SCENARIOS_DIR).differences).toEqual([]);
  }, 180_000);

  test('an unauthorised execution pauses the study: no further instance starts, the batch is void, evidence kept', async () => {
    const calls: CopyCall[] = [];
    const out = path.join(tempDir('ds-study-'), 'study');
    const forge = (dir: string, call: CopyCall): void => {
      if (call.group !== 'B' || call.replicate !== 1) return;
      // Turn the first allowing decision that an intent executed into a denial (triggers dropped: this is a forgery).
      const db = new Database(path.join(dir, 'events.db'));
      for (const t of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as { name: string }[]) db.exec(`DROP TRIGGER ${t.name}`);
      const intent = db.prepare("SELECT envelope FROM events WHERE event_type = 'ActionEvent.ExecutionIntentRecorded' ORDER BY seq LIMIT 1").get() as { envelope: string };
      const permissionId = (JSON.parse(intent.envelope) as { payload: { permission_event_id: string } }).payload.permission_event_id;
      const row = db.prepare('SELECT seq, envelope FROM events WHERE event_id = ?').get(permissionId) as { seq: number; envelope: string };
      db.prepare('UPDATE events SET envelope = ? WHERE seq = ?').run(row.envelope.replace('"decision":"allow"', '"decision":"deny"'), row.seq);
      db.close();
    };
    const { report } = await runStudy(studyOptions(out, { concurrency: 1, runInstance: copyingRunner(calls, (g) => source[g]!, forge) }));
    // One block at a time: replicate 1's A, B and C run side by side (C-r1 was under way when B-r1
    // was scored); the pause holds every later block — replicates 2 and 3 never start.
    expect(calls).toEqual([
      { group: 'A', replicate: 1 },
      { group: 'B', replicate: 1 },
      { group: 'C', replicate: 1 },
    ]);
    const b = report.instances.find((i) => i.group === 'B')!;
    expect(b.hard_failures.map((h) => h.id)).toContain('unauthorized_tool_execution');
    expect(report.voided).toBe(true);
    // The builder voids the batch from the folder's hard failure itself (so --recompute does too) …
    expect(report.void_reasons).toContainEqual(expect.stringMatching(/^B-r1: unauthorized_tool_execution \(.+\): the study is paused and the batch void \(spec §19\.1\)$/));
    expect(report.void_reasons.some((r) => r.startsWith('A-r1'))).toBe(false);
    // … and the live pause is a note: only the live run knows that nothing further started.
    expect(report.notes).toContain('unauthorised tool execution in B-r1: the study was paused (no further instance started; evidence kept)');
    expect(report.void_reasons.join(' ')).not.toMatch(/the study was paused/);
    expect(report.verdict).toBe('insufficient evidence');
    expect(report.expansion_reasons[0]).toMatch(/paused/);

    // --recompute of the paused study: the same report from the two folders and the live note.
    // (Regression, found in review: recompute used to decide the rule on the two folders a pause leaves.)
    expect(recomputeStudy(out, SCENARIOS_DIR).differences).toEqual([]);
    // A report that drops the void reason and claims a verdict no longer follows from the folders.
    const reportFile = path.join(out, STUDY_FILES.json);
    const forged = JSON.parse(readFileSync(reportFile, 'utf8')) as StudyReport;
    forged.void_reasons = forged.void_reasons.filter((r) => !r.includes('unauthorized_tool_execution'));
    forged.verdict = 'supported';
    writeFileSync(reportFile, JSON.stringify(forged));
    const caught = recomputeStudy(out, SCENARIOS_DIR);
    expect(caught.report.void_reasons).toEqual(report.void_reasons);
    expect(caught.differences.some((d) => d.startsWith('void_reasons'))).toBe(true);
    expect(caught.differences).toContainEqual(expect.stringMatching(/^verdict: report\.json has "supported", recomputed "insufficient evidence"/));
  }, 120_000);

  test('an operator stop starts nothing more; the report says so and the verdict is insufficient evidence', async () => {
    const calls: CopyCall[] = [];
    const stop = new AbortController();
    const out = path.join(tempDir('ds-study-'), 'study');
    const runner = copyingRunner(calls, (g) => source[g]!, () => stop.abort('operator signal SIGINT'));
    const { report } = await runStudy(studyOptions(out, { concurrency: 1, signal: stop.signal, runInstance: runner }));
    expect(calls).toHaveLength(1);
    expect(report.verdict).toBe('insufficient evidence');
    expect(report.verdict_statement).toMatch(/not scored/);
    expect(report.notes.join(' ')).toMatch(/stopped by the operator/);
  }, 60_000);

  test('--recompute catches a report edited after the fact, and an instance folder changed after the report', async () => {
    const out = path.join(tempDir('ds-study-'), 'study');
    await runStudy(studyOptions(out, { runInstance: copyingRunner([], (g) => source[g]!) }));
    const reportFile = path.join(out, STUDY_FILES.json);
    const original = readFileSync(reportFile, 'utf8');
    const forged = JSON.parse(original) as StudyReport;
    forged.instances[1]!.score = 99.5;
    forged.verdict = forged.verdict === 'supported' ? 'rejected' : 'supported';
    writeFileSync(reportFile, JSON.stringify(forged));
    const edited = recomputeStudy(out, SCENARIOS_DIR).differences;
    expect(edited.some((d) => d.startsWith('instances.1.score: report.json has 99.5'))).toBe(true);
    expect(edited.some((d) => d.startsWith('verdict:'))).toBe(true);

    writeFileSync(reportFile, original);
    expect(recomputeStudy(out, SCENARIOS_DIR).differences).toEqual([]);
    // A file of C-r2's workspace changed after the run: a side effect nothing in the store explains.
    writeFileSync(path.join(out, STUDY_FILES.instances, 'C-r2', 'workspace', 'notes', 'open-questions.md'), 'rewritten after the run\n');
    const changed = recomputeStudy(out, SCENARIOS_DIR).differences;
    expect(changed.some((d) => d.startsWith('instances.5.hard_failures'))).toBe(true);
  }, 120_000);

  test('another n than the pre-registered initial_n_per_group: refused at plan time, nothing started or written; with --exploratory it runs and study.json, the report files and the verdict say it is exploratory', async () => {
    const parent = tempDir('ds-study-');
    const out = path.join(parent, 'study');
    const before = folderState(parent);
    const calls: CopyCall[] = [];
    const refused = runStudy(studyOptions(out, { n: 2, runInstance: copyingRunner(calls, (g) => source[g]!) }));
    await expect(refused).rejects.toMatchObject({ code: 'plan_departs', message: expect.stringMatching(/n = 2 per group in round 1, not the pre-registered initial_n_per_group = 3: the batch would be void .*Drop --n 2 .*add --exploratory "why"\. Nothing was written/) });
    expect(calls).toEqual([]);
    expect(folderState(parent)).toEqual(before);

    const reason = 'two replicates to see the spread before the real study';
    const lines: string[] = [];
    const { report, files } = await runStudy(studyOptions(out, { n: 2, exploratory: reason, log: (l) => lines.push(l), runInstance: copyingRunner(calls, (g) => source[g]!) }));
    // Said on screen before the first instance: the cost, and that it is exploratory.
    const firstStart = lines.findIndex((l) => l.startsWith('[study] blocks: '));
    const costLine = lines.findIndex((l) => /^\[study\] cost: 6 instances \(up to 15 if the pre-registered rule expands every group\), \d+(–\d+)? wakes each: \d+ model calls \(up to \d+\), one per wake, each at most 3 attempt\(s\)/.test(l));
    expect(costLine, lines.join('\n')).toBeGreaterThanOrEqual(0);
    expect(lines).toContain('[study]   time and tokens: not predicted (the reference model calls no model server: no time or tokens to measure)');
    expect(lines.some((l) => l.startsWith('[study] EXPLORATORY: n = 2 per group in round 1'))).toBe(true);
    expect(firstStart).toBeGreaterThan(costLine);
    expect(calls).toHaveLength(6);
    const plan = StudyPlan.parse(JSON.parse(readFileSync(path.join(out, STUDY_FILES.plan), 'utf8')));
    const departures = ['n = 2 per group in round 1, not the pre-registered initial_n_per_group = 3', 'thresholds.c_instances_passing has no row for n = 2, so "C instances scoring ≥ 80" cannot be judged at n = 2 (the pre-registered rows: n = 3, n = 5)'];
    expect(plan.exploratory).toEqual({ reason, departures });
    // Not silently void: the departure is stated, not a void reason; the verdict says it first.
    expect(report.exploratory).toEqual({ reason, departures });
    expect(report.void_reasons).toEqual([]);
    expect(report.voided).toBe(false);
    expect(report.verdict_statement).toMatch(/^Exploratory study, not the pre-registered one \(n = 2 per group in round 1, .*reason given: two replicates to see the spread before the real study\): Dry run of the apparatus/);
    // n = 2 has no pre-registered passing count: that threshold cannot be judged, as the plan said.
    expect(report.verdict).toBe('insufficient evidence');
    expect(report.verdict_statement).toContain('c_instances_passing cannot be judged');
    const markdown = readFileSync(files.markdown, 'utf8');
    expect(markdown).toContain('**Exploratory study: it knowingly departs from its pre-registration, so its verdict is no test of it. It departs in:**');
    expect(markdown).toContain(`Reason given: ${reason}`);
    const html = readFileSync(files.html, 'utf8');
    expect(html).toMatch(/<section id="exploratory" class="exploratory" aria-label="Exploratory">[\s\S]*n = 2 per group in round 1[\s\S]*Reason given: two replicates/);
    // The cost the plan stated, kept in study.json: 6 instances of one seeded schedule each, a call per wake.
    expect(plan.cost).toMatchObject({ instances: { round_1: 6, at_most: 15 }, predicted: null, not_predicted: expect.stringContaining('reference') });
    // Replicate 1's instances ran its schedule (the others are copies of them): one model call per wake.
    const { min, max } = plan.cost!.wakes_per_instance;
    for (const i of report.instances.filter((r) => r.replicate === 1)) expect(i.calls, `${i.group}-r1`).toSatisfy((calls: number) => calls >= min && calls <= max);
    // Recomputed from study.json and the folders: the same exploratory report.
    expect(recomputeStudy(out, SCENARIOS_DIR).differences).toEqual([]);
  }, 120_000);

  test('--recompute on a study with one damaged instance names that instance first, and why it could not be read (issue 35 item 6)', async () => {
    const out = path.join(tempDir('ds-study-'), 'study');
    await runStudy(studyOptions(out, { runInstance: copyingRunner([], (g) => source[g]!) }));
    expect((await runCli('study', ['--recompute', out])).code).toBe(0);
    // A disk's damage below SQLite, in the middle of B-r2's store (a forged case).
    damageMiddleOfStore(path.join(out, STUDY_FILES.instances, 'B-r2', RUN_FILES.store));
    const r = await runCli('study', ['--recompute', out, '--json']);
    expect(r.code).toBe(1);
    const body = JSON.parse(r.stdout) as { match: boolean; differences: string[]; unreadable: { instance: string; dir: string; detail: string | null }[] };
    expect(body.match).toBe(false);
    expect(body.unreadable.map((u) => [u.instance, u.dir])).toEqual([['B-r2', path.join(STUDY_FILES.instances, 'B-r2')]]);
    expect(body.unreadable[0]!.detail).toBeTruthy();
    expect(body.differences[0]).toMatch(new RegExp(`^B-r2 \\(instances/B-r2\\) could not be read: .+; every difference below that concerns it follows from that; npm run verify -- ${out}/instances/B-r2 says what is wrong with it`));
    expect(body.differences.length).toBeGreaterThan(1);
    // On screen too, first.
    const text = await runCli('study', ['--recompute', out]);
    expect(text.stdout.split('\n')[1]).toMatch(/^ {2}B-r2 \(instances\/B-r2\) could not be read: /);
  }, 120_000);

  test('--exploratory on a plan that follows its pre-registration is refused (a label that changes nothing), nothing written', async () => {
    const parent = tempDir('ds-study-');
    const before = folderState(parent);
    const refused = runStudy(studyOptions(path.join(parent, 'study'), { exploratory: 'nothing departs', runInstance: copyingRunner([], (g) => source[g]!) }));
    await expect(refused).rejects.toMatchObject({ code: 'plan_departs', message: expect.stringMatching(/this plan follows its pre-registration .* \(n = 3 per group, expandable to 5, each with a pre-registered passing count\), so it is no exploratory study: drop --exploratory/) });
    expect(folderState(parent)).toEqual(before);
  });

  test('an unlocked or changed pre-registration is refused before anything is written', async () => {
    const dir = tempDir('ds-study-prereg-');
    const unlocked = path.join(dir, 'unlocked.json');
    copyFileSync(setup.preregFile, unlocked);
    const changed = path.join(dir, 'changed.json');
    const content = readPreregJson(setup.preregFile) as { thresholds: { c_median_min_score: number } };
    content.thresholds.c_median_min_score -= 1;
    writeFileSync(changed, JSON.stringify(content, null, 2));
    copyFileSync(lockFileOf(setup.preregFile), lockFileOf(changed));
    for (const [preregFile, why] of [[unlocked, /the pre-registration is not locked/], [changed, /changed after it was locked/]] as const) {
      const calls: CopyCall[] = [];
      const out = path.join(dir, `study-${path.basename(preregFile, '.json')}`);
      const refused = runStudy(studyOptions(out, { preregFile, runInstance: copyingRunner(calls, (g) => source[g]!) }));
      await expect(refused).rejects.toThrow(StudyError);
      await expect(refused).rejects.toThrow(/^refusing to start the study: /);
      await expect(refused).rejects.toThrow(why);
      expect(calls).toEqual([]);
      expect(existsSync(out)).toBe(false);
    }
    // The locked original passes the same check: the refusals above are the files', not the setup's.
    expect(checkPreregLock(setup.preregFile, setup.key.keys.publicKey).ok).toBe(true);
  }, 60_000);
});

describe('the report builder: a hard failure overrides the score (spec §8.4)', () => {
  test('counted_score 0 beside the computed score, the group statistics and the verdict on the counted scores, a note per instance', () => {
    const prereg = PreRegistration.parse(readPreregJson(setup.preregFile));
    const options = { scenariosDir: SCENARIOS_DIR, expectedPreregSha256: hashCanonical(prereg) };
    const honest = Object.fromEntries((['A', 'B', 'C'] as const).map((g) => [g, evaluateInstance(source[g]!, options)])) as Record<Group, InstanceEvaluation>;
    // The reference policy in A restates the refuted figure after the correction (it forgot it): a real hard failure.
    // How often depends on when the correction leaves A's window (retrieval rule 2.0.0 drops it with its page): every one is that failure.
    const aFailures = honest.A.hardFailures.map((h) => h.id);
    expect(aFailures.length).toBeGreaterThan(0);
    expect(new Set(aFailures)).toEqual(new Set(['fact_contradicts_store']));
    expect(honest.B.hardFailures).toEqual([]);
    expect(honest.C.hardFailures).toEqual([]);
    // A copy of B's run with a file in its workspace that no event explains: duplicate_side_effect.
    const forgedDir = path.join(tempDir('ds-study-builder-'), 'B-forged');
    cpSync(source.B!, forgedDir, { recursive: true });
    writeFileSync(path.join(forgedDir, RUN_FILES.workspace, 'notes', 'unexplained.md'), 'written by no tool\n');
    const forged = evaluateInstance(forgedDir, options);
    expect(forged.hardFailures.map((h) => h.id)).toEqual(['duplicate_side_effect']);
    expect(forged.score.score).toBeGreaterThan(0);
    expect(countedScore(forged)).toBe(0);
    expect(countedScore(honest.B)).toBe(honest.B.score.score);

    const plan: StudyPlan = StudyPlan.parse({ study_version: '1.0.0', study_id: 'exp-study-test', seed: SEED, prereg_file: setup.preregFile, prereg_sha256: hashCanonical(prereg), n_initial: 3, n_expanded: 5, concurrency: 1, start_at: TEST_START_AT, model: { adapter: 'reference' }, started_at: '2026-03-02T07:00:00.000Z' });
    const outDir = path.dirname(forgedDir);
    const build = (evaluationOf: (group: Group, replicate: number) => InstanceEvaluation): StudyReport =>
      buildStudyReport({
        plan,
        prereg,
        outDir,
        n: 3,
        expanded: false,
        expansionReasons: [],
        expansionPoints: [],
        extraNotes: [],
        generatedAt: '2026-03-02T09:00:00.000Z',
        instances: [1, 2, 3].flatMap((replicate) => (['A', 'B', 'C'] as const).map((group): BuiltInstance => ({ group, replicate, dir: path.join(outDir, `${group}-r${replicate}`), status: 'finished', statusDetail: null, record: instanceReportRecordOf(evaluationOf(group, replicate), usableRuleOf(prereg)), wallMs: null }))),
      });
    const clean = build((g) => honest[g]);
    const report = build((g, r) => (g === 'B' && r >= 2 ? forged : honest[g]));
    const s = honest.B.score.score;

    const b = report.instances.filter((i) => i.group === 'B');
    expect(b.map((i) => [i.replicate, i.score, i.counted_score])).toEqual([
      [1, s, s],
      [2, forged.score.score, 0],
      [3, forged.score.score, 0],
    ]);
    // The dimensions stay the computed ones; every statistic of the scores uses the counted 0.
    expect(b[1]!.dimensions).toEqual(forged.score.dimensions);
    expect(report.groups.B).toMatchObject({ n: 3, scores: [s, 0, 0], median: 0, min: 0, max: s, range: s, hard_failures: 2 });
    expect(report.groups.B.instances_at_or_above_pass).toBe(clean.groups.B.instances_at_or_above_pass - 2 * (s >= prereg.thresholds.instance_pass_score ? 1 : 0));
    expect(clean.groups.B).toMatchObject({ scores: [s, s, s], median: s, range: 0, hard_failures: 0 });
    // A's own hard failure: every A instance counts 0, its computed score kept beside it.
    // hard_failures counts every failure of the group (each of the 3 instances has the same ones).
    expect(clean.groups.A).toMatchObject({ scores: [0, 0, 0], median: 0, hard_failures: 3 * aFailures.length });
    expect(clean.instances.filter((i) => i.group === 'A').map((i) => [i.score, i.counted_score])).toEqual([1, 2, 3].map(() => [honest.A.score.score, 0]));
    expect(report.groups.A).toEqual(clean.groups.A);
    expect(report.groups.C).toEqual(clean.groups.C);
    // The verdict reads the counted medians: C − B is C's median minus 0.
    const observed = (r: StudyReport, id: string) => r.thresholds.find((t) => t.id === id)!.observed;
    expect(observed(report, 'c_minus_b')).toBe(report.groups.C.median!.toFixed(2));
    expect(observed(clean, 'c_minus_b')).toBe((clean.groups.C.median! - s).toFixed(2));
    expect(observed(clean, 'c_minus_a')).toBe(clean.groups.C.median!.toFixed(2));
    expect(report.voided).toBe(false);
    // One note per overridden instance, naming its hard failure(s) and the overridden score.
    const overridden = (r: StudyReport) => r.notes.filter((n) => n.includes('is overridden and counted as 0'));
    const noteOf = (label: string, ids: string, score: number) => `${label}: hard failure(s) ${ids}: its score ${score.toFixed(2)} is overridden and counted as 0 (spec §8.4)`;
    expect(overridden(clean)).toEqual([1, 2, 3].map((k) => noteOf(`A-r${k}`, 'fact_contradicts_store', honest.A.score.score)));
    expect(overridden(report)).toEqual([1, 2, 3].flatMap((k) => [noteOf(`A-r${k}`, 'fact_contradicts_store', honest.A.score.score), ...(k >= 2 ? [noteOf(`B-r${k}`, 'duplicate_side_effect', forged.score.score)] : [])]));

    // In C, a hard failure counts 0 in the median and the passing count, besides failing c_hard_failures.
    const inC = build((g, r) => (g === 'C' && r === 1 ? { ...honest.C, hardFailures: forged.hardFailures } : honest[g]));
    const c = honest.C.score.score;
    expect(inC.groups.C).toMatchObject({ scores: [0, c, c], median: c, min: 0, range: c, hard_failures: 1 });
    expect(inC.groups.C.instances_at_or_above_pass).toBe([0, c, c].filter((x) => x >= prereg.thresholds.instance_pass_score).length);
    expect(inC.thresholds.find((t) => t.id === 'c_hard_failures')).toMatchObject({ observed: '1', met: false });
    expect(observed(inC, 'c_instances_passing')).toBe(`${inC.groups.C.instances_at_or_above_pass} of 3`);
  });
});
