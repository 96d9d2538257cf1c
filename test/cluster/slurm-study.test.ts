// A study run as a real Slurm job array (docs/cluster.md), on the one-node cluster .ci/slurm-up
// brings up: cluster/slurm/submit-study.sh plans it (--plan-only, --same-uid: jobs are not
// root), submits round 1 as a block array — `sbatch --array=0` of study-task.sbatch, one task
// per block, here the one block of n = 1: replicate 1's A, B and C side by side in lockstep in
// one task (`--block task`) — and the expand/merge step as a job that depends on it. The job
// file asks for a block's 3 CPUs; this node has 2, so the test submits with
// DS_SBATCH_ARGS=--cpus-per-task=2 (the override docs/cluster.md describes) and sees it taken.
// The block task is stopped mid-run the way a time limit stops it (`scancel --signal=TERM
// --batch`: TERM to the batch shell only, which forwards it to node): each of the three
// instances stops at its wake boundary, records the stop, publishes its stopped copy; the task
// exits 3 and the job script requeues it; the requeued task (same array index,
// SLURM_RESTART_COUNT=1) resumes the whole block and publishes the three sealed. The dependent
// job merges (exit 0/4: report 2.1.0, the block's record held to the drawn order) and
// --recompute agrees. Last, the same study run on one machine (`npm run study -- --n 1 ...`)
// gives the same report but for what comparable-report.ts takes out, written out there.
// n = 1 per group, no expansion round (the reference policy's scores spread less than the
// pre-registered rule's bounds: --expand says so and the test checks it), 6-hour wakes so an
// instance takes seconds. Skipped with the reason when Slurm is not here; on CI (CI set) a
// missing Slurm fails instead: .ci/run installs it.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { ControllerKey } from '../../controller/key-store.js';
import { checkSignedManifest } from '../../design/manifest.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { eventIs } from '../../schema/typed-event.js';
import { checkBlockTurns, readBlockRecord } from '../../oracle/block-turns.js';
import { lockCopy, makeKey, study, taskEnv } from '../support/batch-study.js';
import { REPO } from '../support/controller-run.js';
import { storedEvents } from '../support/stored-events.js';
import { tempDir } from '../support/writer-fixture.js';
import { blockSessions, comparableReports, stopResumeRecords, usageByGroup } from './comparable-report.js';
import { arrayTask, diagnostics, exitStatusOf, FINISHED_STATES, readIfThere, runCommand, showJob, slurmMissing, until } from './slurm-jobs.js';
import { STUDY_REPORT_VERSION } from '../../oracle/study-report.js';

const missing = slurmMissing();
const onCi = Boolean(process.env['CI']);
if (missing !== null && !onCi) console.warn(`test/cluster/slurm-study.test.ts skipped: ${missing}`);

/** Every wait of the Slurm part together: submit to merged, requeue included (~60 s measured). */
const CLUSTER_BUDGET_MS = 200_000;
const SEED = 'slurm';
const STUDY_ID = 'slurm-test-study';
const SAME_UID = 'cluster job: the Slurm test runs its jobs as root, under one uid';
const GROUP_RUNS = ['A-r1', 'B-r1', 'C-r1'];
/** The CPUs of this test's node (.ci/slurm-up: CPUs=2), below a block's 3: the override the docs describe. */
const CPUS_HERE = 2;

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

  test.skipIf(missing !== null)('plan, a block array, the block task stopped and requeued, dependent merge, recompute: the same report as one machine', async () => {
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
    // DS_ARRAY_LIMIT=1: one block at a time, as for a one-slot model server (docs/cluster.md "Blocks sharing a server").
    const env = taskEnv(xdg, { DS_LOGS: logs, DS_SCRATCH: scratch, DS_SBATCH_ARGS: `--cpus-per-task=${CPUS_HERE}`, DS_ARRAY_LIMIT: '1' });
    const jobIds: string[] = [];
    const started = Date.now();
    const left = (): number => Math.max(1_000, CLUSTER_BUDGET_MS - (Date.now() - started));
    try {
      // 0. a throttle that is no number of blocks is refused before anything is planned or submitted
      const badLimit = await runCommand('bash', [path.join(REPO, 'cluster', 'slurm', 'submit-study.sh'), studyDir, '--n', '1', '--key-dir', keyDir, '--prereg', prereg], { env: { ...env, DS_ARRAY_LIMIT: '0' }, cwd: dir, timeoutMs: 60_000 });
      expect(badLimit.code, badLimit.stdout + badLimit.stderr).toBe(2);
      expect(badLimit.stdout).toContain("DS_ARRAY_LIMIT must be a whole number of blocks at once (1 or more), is '0'; nothing planned or submitted");
      expect(existsSync(studyDir)).toBe(false);

      // 1. plan and submit
      const submitted = await runCommand('bash', [path.join(REPO, 'cluster', 'slurm', 'submit-study.sh'), studyDir, '--n', '1', '--seed', SEED, '--study-id', STUDY_ID, '--key-dir', keyDir, '--prereg', prereg, '--same-uid', SAME_UID], { env, cwd: dir, timeoutMs: 60_000 });
      expect(submitted.code, submitted.stdout + submitted.stderr).toBe(0);
      const ids = /round1_job=(\d+) expand_job=(\d+) array=(\S+)/.exec(submitted.stdout);
      expect(ids, submitted.stdout).not.toBeNull();
      const [, round1, expandJob, array] = ids!;
      jobIds.push(round1!, expandJob!);
      // One task per block: n = 1 is one block, array index 0.
      expect(array).toBe('0');
      expect(submitted.stdout).toContain('round 1 is array 0, one task per block');
      expect(submitted.stdout).toMatch(/round 1: job \d+, array 0%1/);
      const plan = JSON.parse(readFileSync(path.join(studyDir, 'study.json'), 'utf8')) as { study_version: string; study_id: string; same_uid: string; batch: { instances: { index: number; group: string; replicate: number; round: number }[] } };
      expect(plan.study_version).toBe('1.4.0');
      expect(plan.study_id).toBe(STUDY_ID);
      expect(plan.same_uid).toBe(SAME_UID);
      expect(plan.batch.instances.map((i) => [i.index, i.group, i.replicate, i.round])).toEqual([
        [0, 'A', 1, 1],
        [1, 'B', 1, 1],
        [2, 'C', 1, 1],
      ]);
      const expandRecord = (await showJob(expandJob!))[0];
      expect(expandRecord?.['Dependency'], 'the expand/merge step waits for round 1').toMatch(new RegExp(`afterany:${round1}`));

      // 2. stop the block's task mid-run, the way a time limit's warning does
      const taskLog = path.join(logs, `ds-task-${round1}_0.out`);
      // Wherever the stop lands, each wake under way finishes first (docs/cluster.md): a wake cut
      // by a stop is never run again, so a cut scored wake would change a group's scores.
      // Its wakes are in the instance's processes.log on scratch, not in the task's log (docs/cluster.md "A task's log").
      const scratchLog = path.join(scratch, `ds-${STUDY_ID}`, 'B-r1', RUN_FILES.processLog);
      await until('the block task running its instances (B-r1 past its second wake)', left(), () => (/\[B-r1\] wake-0002 .*completed/.test(readIfThere(scratchLog)) ? true : null));
      const running = await arrayTask(round1!, 0);
      expect(running?.['JobState']).toBe('RUNNING');
      // The job file's 3 CPUs, overridden for this 2-CPU node by DS_SBATCH_ARGS.
      expect(readFileSync(path.join(REPO, 'cluster', 'slurm', 'study-task.sbatch'), 'utf8')).toMatch(/^#SBATCH --cpus-per-task=3$/m);
      expect(running?.['NumCPUs']).toBe(String(CPUS_HERE));
      // The array's throttle from DS_ARRAY_LIMIT: at most one block task at once.
      expect(running?.['ArrayTaskThrottle']).toBe('1');
      const stopped = await runCommand('scancel', ['--signal=TERM', '--batch', running!['JobId']!], { timeoutMs: 10_000 });
      expect(stopped.code, stopped.stderr).toBe(0);

      // 3. every instance of the block stops (recorded, published as stopped), the task is requeued, resumes the block, finishes
      await until('the block task requeued by its job script', left(), () => (/exit 3 \(stopped, resumable\): requeueing/.test(readIfThere(taskLog)) ? true : null));
      const requeued = await until('the block task finished after its requeue', left(), async () => {
        const t = await arrayTask(round1!, 0);
        return t !== null && t['Restarts'] === '1' && FINISHED_STATES.has(t['JobState'] ?? '') ? t : null;
      });
      expect(requeued['JobState']).toBe('COMPLETED');
      expect(exitStatusOf(requeued)).toBe(0);
      const log = readIfThere(taskLog);
      expect(log).toMatch(/TERM \(a time-limit warning or scancel --batch\): forwarding it to node/);
      for (const name of GROUP_RUNS) {
        expect(log, name).toMatch(new RegExp(`\\[${name}\\] STOPPED \\(operator signal SIGTERM\\); its closed run folder is published to .*stopped/${name}`));
        expect(log, name).toMatch(new RegExp(`\\[${name}\\] resuming from `));
      }
      expect(log).toMatch(/block 0 \(instances 0-2\), attempt 1/);
      expect(log).toMatch(/block 0 \(instances 0-2\), attempt 2/);
      expect(log).toMatch(/exit 0: sealed and published: block 0/);
      for (const index of [0, 1, 2]) {
        const record = JSON.parse(readFileSync(path.join(studyDir, 'tasks', `${index}.json`), 'utf8')) as { state: string; attempts: number; task_id: string };
        expect(record, `index ${index}`).toMatchObject({ state: 'done', attempts: 2, task_id: `slurm:${round1}_0` });
      }
      // One task, one block: there is no task 1 or 2 of the array.
      expect(await arrayTask(round1!, 1)).toBeNull();

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
      console.log(`slurm study: submitted to merged in ${arrayWallS.toFixed(0)} s (one block of 3 instances on ${CPUS_HERE} CPUs, stopped and requeued)`);

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
      // Every member of the block stopped once (the stop's head signed), resumed once, no wake cut.
      for (const name of GROUP_RUNS) {
        const events = storedEvents(path.join(studyDir, 'instances', name));
        expect(stopResumeRecords(events), name).toEqual({ stops: 1, resumes: 1, stopHeads: 1 });
        const stopAt = events.findIndex((e) => eventIs(e, 'SystemEvent.EmergencyStopped'));
        expect(events[stopAt]!.payload, name).toMatchObject({ reason: 'operator signal SIGTERM' });
        expect(events.findIndex((e) => eventIs(e, 'SystemEvent.Resumed')), name).toBeGreaterThan(stopAt);
        expect(events.filter((e) => eventIs(e, 'ExperimentEvent.WakeEnded') && e.payload.outcome === 'stopped'), `no wake of ${name} was cut by the stop`).toEqual([]);
      }
      // The block's record: the turns of both sessions (before the stop, after the requeue), each as drawn.
      const blockRecord = readBlockRecord(studyDir, 1);
      if (blockRecord.kind !== 'read') throw new Error(`no record of block r1: ${JSON.stringify(blockRecord)}`);
      const turns = checkBlockTurns(SEED, 1, blockRecord.lines);
      expect(turns.problems).toEqual([]);
      expect(turns.sessions).toBe(2);

      // 6. the same study on one machine
      const single = path.join(dir, 'single');
      const one = await study(['--n', '1', '--seed', SEED, '--study-id', STUDY_ID, '--prereg', prereg, '--key-dir', keyDir, '--out', single, '--same-uid', SAME_UID, '--json'], env);
      expect([0, 4], one.stderr.slice(-3000)).toContain(one.code);
      expect(one.code).toBe(mergeExit);
      const clusterReport = JSON.parse(readFileSync(path.join(studyDir, 'report.json'), 'utf8')) as Record<string, unknown>;
      const singleReport = JSON.parse(readFileSync(path.join(single, 'report.json'), 'utf8')) as Record<string, unknown>;
      // Both ran the replicate as a block: report 2.1.0, its record as drawn; the cluster's in two
      // sessions, its three runtimes started once more (three start turns more).
      expect([clusterReport['report_version'], singleReport['report_version']]).toEqual([STUDY_REPORT_VERSION, STUDY_REPORT_VERSION]);
      const clusterBlock = blockSessions(clusterReport)[1]!;
      const singleBlock = blockSessions(singleReport)[1]!;
      expect(clusterBlock).toEqual({ recorded: singleBlock.recorded + GROUP_RUNS.length, sessions: 2, ok: true });
      expect(singleBlock.sessions).toBe(1);
      expect(singleBlock.ok).toBe(true);
      expect(clusterReport['verdict']).toBe(singleReport['verdict']);
      expect(clusterReport['expanded']).toBe(false);
      type Scored = { group: string; replicate: number; status: string; score: number | null; dimensions: Record<string, number> };
      const scores = (r: Record<string, unknown>): unknown[] => (r['instances'] as Scored[]).map((i) => [i.group, i.replicate, i.status, i.score, i.dimensions]);
      expect(scores(clusterReport)).toEqual(scores(singleReport));
      expect((clusterReport['instances'] as Scored[]).every((i) => i.status === 'finished' && typeof i.score === 'number')).toBe(true);
      const [clusterSide, singleSide] = comparableReports({ report: clusterReport, studyDir }, { report: singleReport, studyDir: single });
      expect(clusterSide).toEqual(singleSide);
      // What comparable-report.ts masks, bounded here: each group's tokens may move by the few
      // digits the stop's records add to seq numbers its later prompts cite (0.1 %); its tool calls may not.
      const clusterUsage = usageByGroup(clusterReport);
      const singleUsage = usageByGroup(singleReport);
      expect(Object.keys(clusterUsage).sort()).toEqual(['A', 'B', 'C']);
      for (const g of ['A', 'B', 'C']) {
        expect(clusterUsage[g]!.toolCalls, g).toBe(singleUsage[g]!.toolCalls);
        expect(Math.abs(clusterUsage[g]!.tokens - singleUsage[g]!.tokens), g).toBeLessThanOrEqual(singleUsage[g]!.tokens / 1000);
      }
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
