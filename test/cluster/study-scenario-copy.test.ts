// A batch study's own copy of its scenario (issue 35 item 1): `--plan-only --scenario DIR` copies
// the scenario folder into STUDY/scenario/ and pins its hash in the signed study.json; a task then
// needs the study folder and the code only — the folder it was planned from is moved away before
// the task runs, and every instance carries the own scenario's hash. Forged: the study's copy
// edited after the plan is refused by every instance's start, saying what to put back; put back,
// the same task runs. Real processes (node cli/study.ts), 12-hour wakes (seconds an instance).
import { cpSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ExperimentPlan } from '../../design/experiment-plan.js';
import { loadScenario } from '../../design/scenario.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { readStudyPlan, STUDY_FILES } from '../../study-contract/study-folder.js';
import { jsonOf, lockCopy, makeKey, planArgs, study, taskEnv, writeLockedPrereg } from '../support/batch-study.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

describe('--plan-only --scenario DIR: the study folder keeps the scenario, tasks need nothing else', () => {
  test('planned from a folder outside the checkout, run after that folder is gone; forged: an edited copy refused, then put back and run', async () => {
    const dir = tempDir('ds-scenario-copy-');
    const env = taskEnv(path.join(dir, 'config'));
    const keyDir = path.join(dir, 'keys');
    const key = makeKey(keyDir);
    const source = path.join(dir, 'ward');
    cpSync(path.join(SCENARIOS_DIR, 'research-workspace-72h'), source, { recursive: true });
    const definition = JSON.parse(readFileSync(path.join(source, 'scenario.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(path.join(source, 'scenario.json'), JSON.stringify({ ...definition, scenario_id: 'ward', framing: 'a hospital ward office' }, null, 2));
    const preregFile = path.join(dir, 'prereg.json');
    writeLockedPrereg(preregFile, key);
    const prereg = JSON.parse(readFileSync(preregFile, 'utf8')) as Record<string, Record<string, unknown>>;
    prereg['scenario']!['id'] = 'ward';
    const own = path.join(dir, 'prereg-ward.json');
    writeFileSync(own, JSON.stringify(prereg, null, 2));
    lockCopy(own, own, key);
    const planned = loadScenario(source);

    const studyDir = path.join(dir, 'study');
    const plan = await study([...planArgs({ out: studyDir, keyDir, prereg: own, studyId: 'ward-study' }), '--scenario', source], env);
    expect(plan.code, plan.stderr).toBe(0);
    expect(jsonOf(plan)['instances']).toBe(3);
    expect(readStudyPlan(studyDir).scenario_hash).toBe(planned.scenario_hash);
    expect(loadScenario(path.join(studyDir, STUDY_FILES.scenario)).scenario_hash).toBe(planned.scenario_hash);
    // The folder it was planned from is no longer there: a node has the study folder and the code.
    renameSync(source, `${source}.gone`);

    // Forged: the copy edited after the plan.
    const note = path.join(studyDir, STUDY_FILES.scenario, 'workspace', 'notes', 'reading-plan.md');
    const original = readFileSync(note);
    writeFileSync(note, Buffer.concat([original, Buffer.from('\nedited after the plan\n')]));
    const task = ['--block', '0', '--out', studyDir, '--key-dir', keyDir, '--scratch', path.join(dir, 'scratch'), '--json'];
    const refused = await study(task, env);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout + refused.stderr).toContain(`but its study was planned with the scenario ${planned.scenario_hash}: the study's copy was changed after the plan; put back the scenario the study was planned with`);
    for (const name of ['A-r1', 'B-r1', 'C-r1']) expect(existsSync(path.join(studyDir, STUDY_FILES.instances, name)), name).toBe(false);

    writeFileSync(note, original);
    const ran = await study(task, env);
    expect(ran.code, ran.stderr.slice(-3000)).toBe(0);
    for (const name of ['A-r1', 'B-r1', 'C-r1']) {
      const runDir = path.join(studyDir, STUDY_FILES.instances, name);
      expect(ExperimentPlan.parse(JSON.parse(readFileSync(path.join(runDir, RUN_FILES.plan), 'utf8'))).scenario_hash, name).toBe(planned.scenario_hash);
    }
    const merged = await study(['--merge', studyDir, '--key-dir', keyDir, '--json'], env);
    expect([0, 4], merged.stderr.slice(-3000)).toContain(merged.code);
  }, 240_000);
});
