// The merge's compact records (issue 34 item 4, study/instance-report-record.ts) against a real
// batch study: planned (n = 1), its block 0 run as a task process (A, B and C side by side).
// The merge verifies and scores each folder on a worker thread and keeps only its record; the
// report it writes must be byte for byte the one the full path writes (every folder scored in
// this thread by rebuildStudyReport, its verify made again inside the hard-failure check). The
// forged cases: a folder whose store changes between its verification and its scoring (replaced
// by another of another length, or one row edited in place) yields a problem, never a record; a
// record judged by another usable-data rule than the study's is scored again, never used.
import Database from 'better-sqlite3';
import { copyFileSync, cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { ControllerKey } from '../../controller/key-store.js';
import { checkRounds, mergeBatchStudy } from '../../study/batch/batch-merge.js';
import { readBatchPlan } from '../../study/batch/batch-plan-reader.js';
import { checkFolder, scoreCheckedFolder, type FolderCheckInput } from '../../study/batch/instance-folder-check.js';
import type { ScoredFolder } from '../../study/instance-report-record.js';
import { rebuildStudyReport } from '../../study/study-recompute.js';
import { writeStudyReport } from '../../study/study-runner.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { instanceDirName } from '../../study-contract/study-replicates.js';
import { GROUPS } from '../../design/groups.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { StudyReport } from '../../oracle/study-report.js';
import { CALL_TIMEOUT_MS, makeKey, planStudy, study, taskEnv, writeLockedPrereg } from '../support/batch-study.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

let dir: string;
let key: ControllerKey;
/** The finished study (never changed: copy it). */
let finished: string;

function copyOf(name: string): string {
  const to = path.join(dir, name);
  cpSync(finished, to, { recursive: true });
  return to;
}

/** The merge's input for a folder of the study, as checkRounds makes it. */
function inputOf(studyDir: string, group: (typeof GROUPS)[number]): FolderCheckInput {
  const batchPlan = readBatchPlan(studyDir, key.keys.publicKey);
  const entry = batchPlan.instances.find((e) => e.group === group && e.replicate === 1)!;
  return { dir: path.join(studyDir, STUDY_FILES.instances, instanceDirName(group, 1)), entry, studyId: batchPlan.plan.study_id, preregSha256: batchPlan.plan.prereg_sha256, sameUid: Boolean(batchPlan.plan.same_uid), allowedKeys: batchPlan.batch.allowed_keys, scenariosDir: SCENARIOS_DIR, scoreRefused: false };
}

const REPORT_FILES = [STUDY_FILES.json, STUDY_FILES.markdown, STUDY_FILES.html] as const;

beforeAll(async () => {
  dir = tempDir('ds-merge-record-');
  const env = taskEnv(path.join(dir, 'xdg'));
  const keys = path.join(dir, 'keys');
  key = makeKey(keys);
  const prereg = writeLockedPrereg(path.join(dir, 'prereg.json'), key);
  finished = path.join(dir, 'study');
  await planStudy({ out: finished, keyDir: keys, prereg, studyId: 'mr-main', seed: 'record' }, env);
  const r = await study(['--block', '0', '--out', finished, '--key-dir', keys, '--scratch', path.join(dir, 'scratch')], env);
  if (r.code !== 0) throw new Error(`test setup: block 0 exited ${r.code}: ${r.stderr.slice(-4000)}`);
}, 2 * CALL_TIMEOUT_MS);

describe('the merge reports from compact records', () => {
  test('the report from the records the workers made is byte for byte the full path\'s (every folder scored here, verified again)', async () => {
    const merged = copyOf('merged');
    const outcome = await mergeBatchStudy(merged, key.keys.publicKey, SCENARIOS_DIR, () => undefined);
    expect(outcome.check.findings).toEqual([]);
    expect(outcome.report, outcome.lines.join('\n')).not.toBeNull();
    // Every folder was scored once, on the worker that verified it, and kept as its record.
    expect([...outcome.check.scored.byDir.values()].map((s) => [s.status, s.record === null])).toEqual(GROUPS.map(() => ['finished', false]));
    expect(outcome.check.scored.prereg).not.toBeNull();

    const full = copyOf('full');
    const rebuilt = rebuildStudyReport(full, SCENARIOS_DIR);
    const stored = StudyReport.parse(JSON.parse(readFileSync(path.join(merged, STUDY_FILES.json), 'utf8')));
    writeStudyReport(full, { ...rebuilt.report, generated_at: stored.generated_at });
    for (const file of REPORT_FILES) expect(readFileSync(path.join(full, file), 'utf8'), file).toBe(readFileSync(path.join(merged, file), 'utf8'));
    // Not a report of nothing: three scored instances, their per-wake points, calls judged.
    expect(stored.instances.map((i) => [i.group, i.status, i.per_wake.length > 0, i.calls !== null])).toEqual(GROUPS.map((g) => [g, 'finished', true, true]));
  }, 2 * CALL_TIMEOUT_MS);

  test('forged: a store replaced between its verification and its scoring is a problem of the folder, never a record', () => {
    const forged = copyOf('swapped');
    const inputs = GROUPS.map((g) => inputOf(forged, g));
    const made = inputs.map((input) => checkFolder(input));
    for (const m of made) expect(m.problems).toEqual([]);
    const events = made.map((m) => m.checks!.verify.events);
    // The control: scored with its own checks, the record counts the events that were verified.
    const honest = scoreCheckedFolder(inputs[0]!, made[0]!);
    expect(honest.problems).toEqual([]);
    expect(honest.scored?.record?.events).toBe(events[0]);
    // Another instance's store, of another length, put in A-r1's place after A-r1 was verified.
    const other = events.findIndex((n) => n !== events[0]);
    expect(other, `the three instances have ${events.join(', ')} events: none of another length to swap in`).toBeGreaterThan(0);
    copyFileSync(path.join(inputs[other]!.dir, RUN_FILES.store), path.join(inputs[0]!.dir, RUN_FILES.store));
    const swapped = scoreCheckedFolder(inputs[0]!, made[0]!);
    expect(swapped.scored).toBeNull();
    expect(swapped.problems).toEqual([`it changed while it was merged: ${events[0]} event(s) verified, ${events[other]} in its store now`]);
  });

  test('forged: a store edited in place after its verification, its length kept, is a problem of the folder, never a record', () => {
    const forged = copyOf('edited');
    const input = inputOf(forged, 'A');
    const made = checkFolder(input);
    expect(made.problems).toEqual([]);
    const events = made.checks!.verify.events;
    // One row's stored text changed after the verify (its triggers dropped first: the writer's refuse edits), the count unchanged.
    const db = new Database(path.join(input.dir, RUN_FILES.store));
    for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as { name: string }[]) db.exec(`DROP TRIGGER "${name}"`);
    const changed = db.prepare("UPDATE events SET envelope = replace(envelope, '\"actor\":', '\"actor\" :') WHERE seq = ?").run(events).changes;
    db.close();
    expect(changed).toBe(1);
    const edited = scoreCheckedFolder(input, made);
    expect(edited.scored).toBeNull();
    expect(edited.problems).toEqual([`it changed while it was merged: the event at seq ${events} is not the one verified`]);
  });

  test('forged: a record judged by another usable-data rule than the study\'s is scored again, never used', async () => {
    const studyDir = copyOf('rule');
    const check = await checkRounds(studyDir, key.keys.publicKey, SCENARIOS_DIR, 'planned', () => undefined);
    const honest = rebuildStudyReport(studyDir, SCENARIOS_DIR, check.scored).report;
    const [firstDir, first] = [...check.scored.byDir][0]!;
    const record = first.record!;
    const forgedRecord = { ...record, usable_rule: { ...record.usable_rule, min_accepted_share: 0 }, usable: { ...record.usable, usable: !record.usable.usable, reason: 'forged' } };
    const byDir = new Map<string, ScoredFolder>(check.scored.byDir);
    byDir.set(firstDir, { ...first, record: forgedRecord });
    const rebuilt = rebuildStudyReport(studyDir, SCENARIOS_DIR, { byDir, prereg: check.scored.prereg }).report;
    expect(rebuilt.instances.map((i) => i.usable_reason)).not.toContain('forged');
    expect({ ...rebuilt, generated_at: '' }).toEqual({ ...honest, generated_at: '' });
  });
});
