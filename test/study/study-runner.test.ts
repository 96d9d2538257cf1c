// The study's orchestration (experiments/study/study-runner.ts): expansion of ALL groups, the
// pause after an unauthorised execution, an operator stop, and --recompute catching a report
// that no longer follows from its folders. Three real instances (A, B, C of one seed) are run
// once; the study's instances are copies of them, handed over by a stand-in for
// runNewInstance, so the orchestration is tested in seconds while every instance the study
// scores is a real, signed run folder.
import Database from 'better-sqlite3';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { Group, InstanceResult, NewInstanceOptions } from '../../controller/instance-runner.js';
import { StudyReport } from '../../oracle/study-report.js';
import { recomputeStudy, runStudy, STUDY_FILES, type StudyOptions } from '../../experiments/study/study-runner.js';
import { controllerSetup, newInstanceOptions, runInstance, SCENARIOS_DIR, TEST_START_AT, type ControllerSetup } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

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

interface Call {
  readonly group: Group;
  readonly replicate: number;
}

/** A stand-in for runNewInstance: copies the prepared run of `from(group, replicate)` into the instance's folder. */
function copyingRunner(calls: Call[], from: (group: Group, replicate: number) => string, afterCopy?: (dir: string, call: Call) => void) {
  return async (o: NewInstanceOptions): Promise<InstanceResult> => {
    const call = { group: o.group, replicate: o.replicate };
    calls.push(call);
    cpSync(from(o.group, o.replicate), o.runDir, { recursive: true });
    afterCopy?.(o.runDir, call);
    o.log(`wake-0001 at h00:00 (copied)`);
    return {
      status: 'finished',
      runDir: o.runDir,
      experimentId: o.experimentId,
      groupBlindId: o.groupBlindId,
      isolation: { mode: 'same-uid', reason: 'copied in a test' },
      isolationSummary: 'copied',
      wakesTotal: 0,
      wakesRun: 0,
      head: { seq: 1, event_hash: `sha256:${'0'.repeat(64)}` },
      finalHead: null,
      stopReason: null,
      notes: [],
    };
  };
}

function studyOptions(outDir: string, overrides: Partial<StudyOptions>): StudyOptions {
  return {
    outDir,
    seed: SEED,
    preregFile: setup.preregFile,
    keyDir: setup.keyDir,
    scenariosDir: SCENARIOS_DIR,
    concurrency: 2,
    n: null,
    startAt: TEST_START_AT,
    model: { adapter: 'reference' },
    studyId: 'exp-study-test',
    operator: 'test',
    signal: new AbortController().signal,
    log: () => {},
    onProgress: () => {},
    ...overrides,
  };
}

describe('study orchestration', () => {
  test('no rule triggered: n = 3 per group, no expansion, every instance scored, report files written and recomputable', async () => {
    const calls: Call[] = [];
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
    const calls: Call[] = [];
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
    const calls: Call[] = [];
    const out = path.join(tempDir('ds-study-'), 'study');
    const forge = (dir: string, call: Call): void => {
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
    expect(calls).toEqual([
      { group: 'A', replicate: 1 },
      { group: 'B', replicate: 1 },
    ]);
    const b = report.instances.find((i) => i.group === 'B')!;
    expect(b.hard_failures.map((h) => h.id)).toContain('unauthorized_tool_execution');
    expect(report.voided).toBe(true);
    expect(report.void_reasons.join(' ')).toMatch(/unauthorised tool execution in B-r1/);
    expect(report.verdict).toBe('insufficient evidence');
    expect(report.expansion_reasons[0]).toMatch(/paused/);
  }, 120_000);

  test('an operator stop starts nothing more; the report says so and the verdict is insufficient evidence', async () => {
    const calls: Call[] = [];
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
});
