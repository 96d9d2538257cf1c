// A batch task's instances keep their processes' lines in their run folders (issue 35 item 3): a
// real block task (`npm run study -- --block 0`, node-local scratch, published to the study
// folder) leaves each published instance with a processes.log holding its writer's and runtime's
// lines (their start, every wake) and its controller's (every wake), while the task's stderr — the
// scheduler's log — carries a start and a finish line per instance and none of the runtime's or
// the writer's lines; `npm run verify` and the merge accept the published folders with the file.
// Forged: a processes.log the task cannot append to (a folder in its place): every line it could
// not keep is said on stderr with why, none dropped; a warning is said on stderr, a routine
// wake only in the file. An empty run folder left on scratch by a lost attempt is still started in
// (the first line kept must not make it a folder the start refuses).
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { RUN_FILES } from '../../schema/run-files.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { TaskInstanceLog } from '../../study/batch/task-instance-log.js';
import { jsonOf, makeKey, planStudy, study, taskEnv, writeLockedPrereg } from '../support/batch-study.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

const MEMBERS = ['A-r1', 'B-r1', 'C-r1'];

function verifyCli(dir: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', path.join(REPO, 'cli', 'verify.ts'), dir], { cwd: REPO, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, output: stdout + stderr });
    });
  });
}

describe('a block task: every instance its processes.log, the task stderr calm', () => {
  test('published folders hold the runtime and controller lines; stderr holds start/finish per instance; verify and merge accept them', async () => {
    const dir = tempDir('ds-batch-process-log-');
    const env = taskEnv(path.join(dir, 'config'));
    const keyDir = path.join(dir, 'keys');
    const key = makeKey(keyDir);
    const prereg = writeLockedPrereg(path.join(dir, 'prereg.json'), key);
    const studyDir = path.join(dir, 'study');
    await planStudy({ out: studyDir, keyDir, prereg, studyId: 'process-log' }, env);

    // An empty run folder an earlier attempt left on scratch (made, then the node lost): the first line must not make it a folder the start refuses.
    mkdirSync(path.join(dir, 'scratch', 'ds-process-log', 'A-r1'), { recursive: true });
    const ran = await study(['--block', '0', '--out', studyDir, '--key-dir', keyDir, '--scratch', path.join(dir, 'scratch'), '--json'], env);
    expect(ran.code, ran.stderr.slice(-3000)).toBe(0);
    expect(jsonOf(ran)['task_unit']).toBe('block');
    const stderr = ran.stderr.split('\n').filter((l) => l !== '');
    expect(stderr.filter((l) => /^\[ds-(runtime|writer) \d+\]/.test(l)), 'no child line on the task stderr').toEqual([]);
    expect(stderr.filter((l) => / wake-\d+ at h\d+/.test(l)), 'no routine wake line on the task stderr').toEqual([]);
    for (const name of MEMBERS) {
      const mine = stderr.filter((l) => l.startsWith(`[${name}] `));
      expect(mine.filter((l) => / started on .* processes\.log/.test(l)), `${name} start line`).toHaveLength(1);
      expect(mine.filter((l) => / sealed and published to .*processes\.log/.test(l)), `${name} finish line`).toHaveLength(1);
      expect(mine.length, `${name}: a few lines, not one per wake:\n${mine.join('\n')}`).toBeLessThanOrEqual(4);

      const log = readFileSync(path.join(studyDir, STUDY_FILES.instances, name, RUN_FILES.processLog), 'utf8');
      expect(log, name).toMatch(/^\[ds-runtime \d+\] started for subject /m);
      expect(log, name).toMatch(/^\[ds-writer \d+\] serving .* at head seq 1$/m);
      const runtimeWakes = log.match(/^\[ds-runtime \d+\] wake wake-\d+ done: /gm) ?? [];
      const controllerWakes = log.match(new RegExp(`^\\S+ \\[${name}\\] wake-\\d+ at h\\d+:\\d\\d .* · completed$`, 'gm')) ?? [];
      expect(runtimeWakes.length, name).toBeGreaterThan(0);
      expect(controllerWakes.length, `${name}: one controller line per runtime wake`).toBe(runtimeWakes.length);
      expect(log, name).toMatch(new RegExp(`^\\S+ \\[${name}\\] started on .* in .*${name}; every line`, 'm'));
      expect(log, name).toMatch(new RegExp(`^\\S+ \\[${name}\\] sealed at seq \\d+; final head signed$`, 'm'));
    }
    for (const name of MEMBERS) {
      const verified = await verifyCli(path.join(studyDir, STUDY_FILES.instances, name));
      expect(verified.code, verified.output.slice(-2000)).toBe(0);
    }
    const merged = await study(['--merge', studyDir, '--key-dir', keyDir, '--json'], env);
    expect([0, 4], merged.stderr.slice(-3000)).toContain(merged.code);
    const findings = (jsonOf(merged)['findings'] as { instance: string }[] | undefined) ?? [];
    expect(findings.filter((f) => MEMBERS.includes(f.instance)), 'no published folder refused (its processes.log is no stranger)').toEqual([]);
  }, 300_000);

  test('forged: a processes.log that cannot be appended to; every line said on stderr with why, routine lines in the file only', () => {
    const runDir = tempDir('ds-task-log-');
    const said: string[] = [];
    const ok = new TaskInstanceLog('A-r1', runDir, (l) => said.push(l));
    ok.controller('wake-1 at h00:00 (scheduled) · completed');
    ok.controller('warning: model call retried');
    ok.task('started here');
    ok.close();
    expect(said).toEqual(['[A-r1] warning: model call retried', '[A-r1] started here']);
    expect(readFileSync(path.join(runDir, RUN_FILES.processLog), 'utf8').split('\n').filter((l) => l !== '').map((l) => l.replace(/^\S+ /, ''))).toEqual(['[A-r1] wake-1 at h00:00 (scheduled) · completed', '[A-r1] warning: model call retried', '[A-r1] started here']);

    const blocked = tempDir('ds-task-log-blocked-');
    mkdirSync(path.join(blocked, RUN_FILES.processLog));
    said.length = 0;
    const forged = new TaskInstanceLog('B-r1', blocked, (l) => said.push(l));
    forged.controller('wake-2 at h12:00 (scheduled) · completed');
    forged.close();
    expect(said.some((l) => l.startsWith('[B-r1] not in ') && l.includes('wake-2 at h12:00')), said.join('\n')).toBe(true);
    expect(said.some((l) => /could not be appended to .*processes\.log: EISDIR/.test(l)), said.join('\n')).toBe(true);
  });
});
