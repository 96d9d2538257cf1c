// A study run as a real Slurm job array (docs/cluster.md), on the one-node cluster .ci/slurm-up
// brings up: cluster/slurm/submit-study.sh plans it (--plan-only, --same-uid: jobs are not
// root), submits round 1 as `sbatch --array=0-2` of study-task.sbatch and the expand/merge step
// as a job that depends on it. One task is stopped mid-run the way a time limit stops it
// (`scancel --signal=TERM --batch`: TERM to the batch shell only, which forwards it to node):
// the instance records the stop, publishes its stopped copy, exits 3, and the job script
// requeues the task; the requeued task (same array index, SLURM_RESTART_COUNT=1) resumes it
// and publishes it sealed. The dependent job merges (exit 0/4) and --recompute agrees. Last,
// the same study run on one machine (`npm run study -- --n 1 ...`) gives the same report but
// for what comparable-report.ts takes out, written out there.
// n = 1 per group, no expansion round (the reference policy's scores spread less than the
// pre-registered rule's bounds: --expand says so and the test checks it), 6-hour wakes so an
// instance takes seconds. Skipped with the reason when Slurm is not here; on CI (CI set) a
// missing Slurm fails instead: .ci/run installs it.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { ControllerKey } from '../../controller/key-store.js';
import { checkSignedManifest } from '../../design/manifest.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { eventIs } from '../../schema/typed-event.js';
import { lockCopy, makeKey, study, taskEnv } from '../support/batch-study.js';
import { REPO } from '../support/controller-run.js';
import { storedEvents } from '../support/stored-events.js';
import { tempDir } from '../support/writer-fixture.js';
import { comparableReports, stopResumeRecords, usageByGroup } from './comparable-report.js';
import { arrayTask, diagnostics, exitStatusOf, FINISHED_STATES, readIfThere, runCommand, showJob, slurmMissing, until } from './slurm-jobs.js';

const missing = slurmMissing();
const onCi = Boolean(process.env['CI']);
if (missing !== null && !onCi) console.warn(`test/cluster/slurm-study.test.ts skipped: ${missing}`);

/** Every wait of the Slurm part together: submit to merged, requeue included (~60 s measured). */
const CLUSTER_BUDGET_MS = 200_000;
const SEED = 'slurm';
const STUDY_ID = 'slurm-test-study';
const SAME_UID = 'cluster job: the Slurm test runs its jobs as root, under one uid';

/** The bundled pre-registration, n = 1 per group (expandable to 2), 6-hour wakes, locked by `key`. */
function writePrereg(file: string, key: ControllerKey): string {
  const prereg = JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')) as Record<string, Record<string, unknown>>;
  prereg['expansion_rule']!['initial_n_per_group'] = 1;
  prereg['expansion_rule']!['expanded_n_per_group'] = 2;
  prereg['thresholds']!['c_instances_passing'] = [
    { n: 1, at_least: 1 },
    { n: 2, at_least: 2 },
  ];
  prereg['wake_schedule']!['base_period_sim_minutes'] = 360;
  writeFileSync(file, JSON.stringify(prereg, null, 2));
  return lockCopy(file, file, key);
}

describe('a study on Slurm', () => {
  test.runIf(missing !== null && onCi)('CI has Slurm (.ci/run installs it and runs .ci/slurm-up)', () => {
    throw new Error(`CI is set but ${missing}`);
  });

  test.skipIf(missing !== null)('plan, job array, a task stopped and requeued, dependent merge, recompute: the same report as one machine', async () => {
    const dir = tempDir('ds-slurm-study-');
    const keyDir = path.join(dir, 'keys');
    const key = makeKey(keyDir);
    const prereg = writePrereg(path.join(dir, 'prereg.json'), key);
    const studyDir = path.join(dir, 'study');
    const logs = path.join(dir, 'logs');
    const scratch = path.join(dir, 'scratch');
    mkdirSync(scratch);
    const xdg = path.join(dir, 'xdg');
    mkdirSync(xdg);
    const env = taskEnv(xdg, { DS_LOGS: logs, DS_SCRATCH: scratch });
    const jobIds: string[] = [];
    const started = Date.now();
    const left = (): number => Math.max(1_000, CLUSTER_BUDGET_MS - (Date.now() - started));
    try {
      // 1. plan and submit
      const submitted = await runCommand('bash', [path.join(REPO, 'cluster', 'slurm', 'submit-study.sh'), studyDir, '--n', '1', '--seed', SEED, '--study-id', STUDY_ID, '--key-dir', keyDir, '--prereg', prereg, '--same-uid', SAME_UID], { env, cwd: dir, timeoutMs: 60_000 });
      expect(submitted.code, submitted.stdout + submitted.stderr).toBe(0);
      const ids = /round1_job=(\d+) expand_job=(\d+) array=(\S+)/.exec(submitted.stdout);
      expect(ids, submitted.stdout).not.toBeNull();
      const [, round1, expandJob, array] = ids!;
      jobIds.push(round1!, expandJob!);
      expect(array).toBe('0-2');
      const plan = JSON.parse(readFileSync(path.join(studyDir, 'study.json'), 'utf8')) as { study_id: string; same_uid: string; batch: { instances: { index: number; group: string; replicate: number; round: number }[] } };
      expect(plan.study_id).toBe(STUDY_ID);
      expect(plan.same_uid).toBe(SAME_UID);
      expect(plan.batch.instances.map((i) => [i.index, i.group, i.replicate, i.round])).toEqual([
        [0, 'A', 1, 1],
        [1, 'B', 1, 1],
        [2, 'C', 1, 1],
      ]);
      const expandRecord = (await showJob(expandJob!))[0];
      expect(expandRecord?.['Dependency'], 'the expand/merge step waits for round 1').toMatch(new RegExp(`afterany:${round1}`));

      // 2. stop task 1 (group B) mid-run, the way a time limit's warning does
      const taskLog = path.join(logs, `ds-task-${round1}_1.out`);
      // Wherever the stop lands, the wake under way finishes first (docs/cluster.md): a wake cut
      // by a stop is never run again, so a cut scored wake would change B's scores.
      await until('task 1 running its instance (its second wake done)', left(), () => (/\[B-r1\] wake-0002 .*completed/.test(readIfThere(taskLog)) ? true : null));
      const running = await arrayTask(round1!, 1);
      expect(running?.['JobState']).toBe('RUNNING');
      const stopped = await runCommand('scancel', ['--signal=TERM', '--batch', running!['JobId']!], { timeoutMs: 10_000 });
      expect(stopped.code, stopped.stderr).toBe(0);

      // 3. it stops (recorded, published as stopped), is requeued, resumes, finishes
      await until('task 1 requeued by its job script', left(), () => (/exit 3 \(stopped, resumable\): requeueing/.test(readIfThere(taskLog)) ? true : null));
      const requeued = await until('task 1 finished after its requeue', left(), async () => {
        const t = await arrayTask(round1!, 1);
        return t !== null && t['Restarts'] === '1' && FINISHED_STATES.has(t['JobState'] ?? '') ? t : null;
      });
      expect(requeued['JobState']).toBe('COMPLETED');
      expect(exitStatusOf(requeued)).toBe(0);
      const log = readIfThere(taskLog);
      expect(log).toMatch(/TERM \(a time-limit warning or scancel --batch\): forwarding it to node/);
      expect(log).toMatch(/\[B-r1\] STOPPED \(operator signal SIGTERM\); its closed run folder is published to .*stopped\/B-r1/);
      expect(log).toMatch(/instance index 1, attempt 2/);
      expect(log).toMatch(/\[B-r1\] resuming from /);
      expect(log).toMatch(/exit 0: the instance is sealed and published/);
      const record = JSON.parse(readFileSync(path.join(studyDir, 'tasks', '1.json'), 'utf8')) as { state: string; attempts: number; task_id: string };
      expect(record).toMatchObject({ state: 'done', attempts: 2, task_id: `slurm:${round1}_1` });
      for (const task of [0, 2]) {
        const t = await until(`task ${task} finished`, left(), async () => {
          const f = await arrayTask(round1!, task);
          return f !== null && FINISHED_STATES.has(f['JobState'] ?? '') ? f : null;
        });
        expect([t['JobState'], t['Restarts'], exitStatusOf(t)], `task ${task}`).toEqual(['COMPLETED', '0', 0]);
      }

      // 4. the dependent job: --expand (no round 2), then --merge and --recompute
      const merged = await until('the expand/merge job finished', left(), async () => {
        const f = (await showJob(expandJob!))[0];
        return f !== undefined && FINISHED_STATES.has(f['JobState'] ?? '') ? f : null;
      });
      const mergeLog = readIfThere(path.join(logs, `ds-expand-${expandJob}.out`));
      expect(mergeLog).toMatch(/"expand":false/);
      expect(mergeLog).toMatch(/merge of slurm-test-study: 3 of 3 planned instance\(s\) verified against the plan/);
      expect(mergeLog).toMatch(/RECOMPUTED: every number of .* follows from its run folders/);
      const mergeExit = exitStatusOf(merged);
      expect([0, 4], `merge exit ${mergeExit}`).toContain(mergeExit);
      const arrayWallS = (Date.now() - started) / 1000;
      console.log(`slurm study: submitted to merged in ${arrayWallS.toFixed(0)} s (3 instances on 2 CPUs, one stopped and requeued)`);

      // 5. what the study folder holds
      const recompute = await study(['--recompute', studyDir], env);
      expect(recompute.stdout).toMatch(/^RECOMPUTED: every number of .* follows from its run folders/);
      expect(recompute.code).toBe(0);
      const statusCall = await study(['--status', studyDir, '--json'], env);
      expect(statusCall.code).toBe(0);
      expect(JSON.parse(statusCall.stdout)).toMatchObject({ planned: 3, counts: { done: 3, running: 0, stopped: 0, missing: 0, failed: 0 } });
      const publicKey = parsePublicKeyHex(readFileSync(path.join(keyDir, 'controller.pub'), 'utf8'));
      for (const name of ['A-r1', 'B-r1', 'C-r1']) {
        const signed = checkSignedManifest(JSON.parse(readFileSync(path.join(studyDir, 'instances', name, RUN_FILES.manifest), 'utf8')), publicKey);
        expect(signed.ok, name).toBe(true);
        if (signed.ok) expect(signed.manifest.isolation, name).toEqual({ mode: 'same-uid', reason: SAME_UID });
      }
      const bEvents = storedEvents(path.join(studyDir, 'instances', 'B-r1'));
      expect(stopResumeRecords(bEvents)).toEqual({ stops: 1, resumes: 1, stopHeads: 1 });
      const stopAt = bEvents.findIndex((e) => eventIs(e, 'SystemEvent.EmergencyStopped'));
      expect(bEvents[stopAt]!.payload).toMatchObject({ reason: 'operator signal SIGTERM' });
      expect(bEvents.findIndex((e) => eventIs(e, 'SystemEvent.Resumed'))).toBeGreaterThan(stopAt);
      expect(bEvents.filter((e) => eventIs(e, 'ExperimentEvent.WakeEnded') && e.payload.outcome === 'stopped'), 'no wake of B was cut by the stop').toEqual([]);
      for (const name of ['A-r1', 'C-r1']) expect(stopResumeRecords(storedEvents(path.join(studyDir, 'instances', name))), name).toEqual({ stops: 0, resumes: 0, stopHeads: 0 });

      // 6. the same study on one machine
      const single = path.join(dir, 'single');
      const one = await study(['--n', '1', '--seed', SEED, '--study-id', STUDY_ID, '--prereg', prereg, '--key-dir', keyDir, '--out', single, '--same-uid', SAME_UID, '--json'], env);
      expect([0, 4], one.stderr.slice(-3000)).toContain(one.code);
      expect(one.code).toBe(mergeExit);
      const clusterReport = JSON.parse(readFileSync(path.join(studyDir, 'report.json'), 'utf8')) as Record<string, unknown>;
      const singleReport = JSON.parse(readFileSync(path.join(single, 'report.json'), 'utf8')) as Record<string, unknown>;
      expect(clusterReport['verdict']).toBe(singleReport['verdict']);
      expect(clusterReport['expanded']).toBe(false);
      type Scored = { group: string; replicate: number; status: string; score: number | null; dimensions: Record<string, number> };
      const scores = (r: Record<string, unknown>): unknown[] => (r['instances'] as Scored[]).map((i) => [i.group, i.replicate, i.status, i.score, i.dimensions]);
      expect(scores(clusterReport)).toEqual(scores(singleReport));
      expect((clusterReport['instances'] as Scored[]).every((i) => i.status === 'finished' && typeof i.score === 'number')).toBe(true);
      const [clusterSide, singleSide] = comparableReports({ report: clusterReport, studyDir }, { report: singleReport, studyDir: single });
      expect(clusterSide).toEqual(singleSide);
      // What comparable-report.ts masks, bounded here: B's tokens may move by the few digits the
      // stop's records add to seq numbers its later prompts cite (0.1 %); its tool calls may not.
      const clusterUsage = usageByGroup(clusterReport);
      const singleUsage = usageByGroup(singleReport);
      expect(Object.keys(clusterUsage).sort()).toEqual(['A', 'B', 'C']);
      for (const g of ['A', 'C']) expect(clusterUsage[g], g).toEqual(singleUsage[g]);
      expect(clusterUsage['B']!.toolCalls).toBe(singleUsage['B']!.toolCalls);
      expect(Math.abs(clusterUsage['B']!.tokens - singleUsage['B']!.tokens)).toBeLessThanOrEqual(singleUsage['B']!.tokens / 1000);
      // The comparison sees content: one score changed is a difference.
      const forged = structuredClone(clusterReport) as { instances: Scored[] };
      forged.instances[1]!.score = (forged.instances[1]!.score ?? 0) + 0.5;
      const [forgedSide] = comparableReports({ report: forged as unknown as Record<string, unknown>, studyDir }, { report: singleReport, studyDir: single });
      expect(forgedSide).not.toEqual(singleSide);
      rmSync(dir, { recursive: true, force: true });
    } catch (error) {
      console.error(`slurm study failed; folder kept: ${dir}\n${await diagnostics(jobIds, logs)}`);
      // Leave nothing of this test queued on the cluster (its own jobs, by id).
      if (jobIds.length > 0) await runCommand('scancel', jobIds);
      throw error;
    }
  }, 300_000);
});
