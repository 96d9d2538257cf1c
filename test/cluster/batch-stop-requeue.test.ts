// A batch task stopped and requeued (issue 18 item 2), against the real command: one instance of
// a planned study run as Slurm array task 77_0 is SIGTERMed mid-run (as Slurm does before a time
// limit or on scancel; signalled by its pid: its title is ds-controller), exits 3 with its closed
// run folder published to STUDY/stopped/A-r1 and its task record saying so; --status names the
// rerun, --merge says the study is not complete (exit 3). The requeue — the same array task on
// another node (another --scratch), its first node's claim left behind — takes the claim over,
// resumes from the stopped copy, publishes a sealed folder (exit 0) and removes the stopped copy;
// the store records the stop and the resume. A task of the published index then has nothing to do.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { checkSignedManifest } from '../../design/manifest.js';
import { readBatchPlan } from '../../study/batch/batch-plan-reader.js';
import { publishedIsSealed } from '../../study/batch/instance-task.js';
import { claimFile, readClaim, readTaskRecord } from '../../study/batch/task-claim.js';
import { BATCH_FILES } from '../../study-contract/batch-plan.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { asPlanBeforeBlocks, jsonOf, makeKey, planStudy, spawnStudy, study, taskEnv, untilOutput, writeLockedPrereg } from '../support/batch-study.js';
import { folderState } from '../support/folder-state.js';
import { ofType, storedEvents } from '../support/stored-events.js';
import { tempDir } from '../support/writer-fixture.js';

/** Generous for a loaded 2-core machine: an instance takes ~10 s there, a CLI start ~2 s. */
const WAIT_MS = 90_000;

let dir: string;
let keyDir: string;
let studyDir: string;
let xdg: string;
/** The scheduler's view of the task: array job 77, task 0 (what a requeue keeps). */
const SLURM = { SLURM_ARRAY_JOB_ID: '77', SLURM_ARRAY_TASK_ID: '0', SLURM_JOB_ID: '78' };

beforeAll(async () => {
  dir = tempDir('ds-batch-stop-');
  xdg = path.join(dir, 'xdg');
  keyDir = path.join(dir, 'keys');
  const key = makeKey(keyDir);
  const prereg = writeLockedPrereg(path.join(dir, 'prereg.json'), key);
  studyDir = path.join(dir, 'study');
  await planStudy({ out: studyDir, keyDir, prereg, studyId: 'bs-stop', seed: 'stop' }, taskEnv(xdg));
  // One instance per task, as a plan made before blocks runs (a block task stopped and requeued: test/cluster/slurm-study.test.ts).
  asPlanBeforeBlocks(studyDir, key);
}, 60_000);

describe('a task stopped by SIGTERM, then requeued on another node', () => {
  test('stopped: exit 3, the closed folder in STUDY/stopped/A-r1, tasks/0.json says stopped, --status names the rerun, --merge is not complete (3); requeued: the claim taken over, resumed from the stopped copy, sealed and published (0), the stop and the resume recorded', async () => {
    const env = taskEnv(xdg, SLURM);
    const nodeOne = path.join(dir, 'node-1-scratch');
    const nodeTwo = path.join(dir, 'node-2-scratch');
    const first = spawnStudy(['--instance', 'task', '--out', studyDir, '--scratch', nodeOne, '--json'], env);
    // The task's stderr says wakes no more: its instance's processes.log on scratch does (docs/cluster.md "A task's log").
    const scratchLog = path.join(nodeOne, 'ds-bs-stop', 'A-r1', RUN_FILES.processLog);
    await untilOutput(() => (existsSync(scratchLog) ? readFileSync(scratchLog, 'utf8') : ''), /\[A-r1\] wake-0001 at/, WAIT_MS);
    // While it runs, the index is claimed by this array task, and --status says running.
    expect(readClaim(studyDir, 0)).toMatchObject({ task_id: 'slurm:77_0', pid: first.child.pid });
    process.kill(first.child.pid!, 'SIGTERM');
    expect(await first.exited, first.output().slice(-4000)).toBe(3);
    const out = first.output();
    expect(out).toMatch(/SIGTERM/);
    expect(out).toMatch(/\[A-r1\] STOPPED \(.*\); its closed run folder is published to .*stopped\/A-r1 \(its processes' lines: processes\.log in it\): run this index again \(requeue\) to resume it, on any node/);
    const stoppedDir = path.join(studyDir, BATCH_FILES.stopped, 'A-r1');
    const json = JSON.parse(out.split('\n').find((l) => l.startsWith('{"study_dir"'))!) as { outcomes: { index: number; state: string; exitCode: number; published: string }[]; exit_code: number };
    expect(json.exit_code).toBe(3);
    expect(json.outcomes).toMatchObject([{ index: 0, state: 'stopped', exitCode: 3, published: stoppedDir }]);
    // The stopped copy is a closed store (no -wal, no -shm), its chain intact, not sealed.
    expect(existsSync(path.join(stoppedDir, RUN_FILES.store))).toBe(true);
    for (const side of ['-wal', '-shm']) expect(existsSync(path.join(stoppedDir, `${RUN_FILES.store}${side}`)), side).toBe(false);
    // Everything verifies but the seal it has not reached yet.
    expect(verifyDirectory(stoppedDir).failures).toEqual([expect.objectContaining({ store: RUN_FILES.heads, reason: expect.stringMatching(/^no final signed head/) })]);
    expect(publishedIsSealed(stoppedDir, readBatchPlan(studyDir, null)).sealed).toBe(false);
    expect(ofType(storedEvents(stoppedDir), 'SystemEvent.EmergencyStopped')).toHaveLength(1);
    expect(existsSync(path.join(studyDir, STUDY_FILES.instances, 'A-r1'))).toBe(false);
    // Nothing half-published is left: only the stopped copy's name.
    expect(readdirSync(path.join(studyDir, BATCH_FILES.stopped))).toEqual(['A-r1']);
    expect(existsSync(claimFile(studyDir, 0))).toBe(false);
    expect(readTaskRecord(studyDir, 0)).toMatchObject({ index: 0, instance: 'A-r1', state: 'stopped', task_id: 'slurm:77_0', exit_code: 3, attempts: 1, run_dir: path.join(nodeOne, 'ds-bs-stop', 'A-r1') });

    const [statusCall, mergeCall] = await Promise.all([study(['--status', studyDir, '--json'], taskEnv(xdg)), study(['--merge', studyDir, '--key-dir', keyDir, '--json'], taskEnv(xdg))]);
    expect(statusCall.code, statusCall.stderr).toBe(0);
    const status = jsonOf(statusCall) as { counts: Record<string, number>; instances: { index: number; state: string; rerun: string | null }[]; next: string };
    expect(status.counts).toEqual({ done: 0, running: 0, stopped: 1, missing: 2, failed: 0 });
    expect(status.instances[0]).toMatchObject({ index: 0, state: 'stopped', rerun: `npm run study -- --instance 0 --out ${studyDir}` });
    expect(status.next).toContain('run what is not done: indices 0,1,2');
    expect(mergeCall.code, mergeCall.stderr).toBe(3);
    const merged = jsonOf(mergeCall) as { findings: { kind: string; index: number; rerun: string | null }[]; report: unknown };
    expect(merged.findings).toEqual([
      expect.objectContaining({ kind: 'stopped', index: 0, rerun: `npm run study -- --instance 0 --out ${studyDir}` }),
      expect.objectContaining({ kind: 'missing', index: 1 }),
      expect.objectContaining({ kind: 'missing', index: 2 }),
    ]);
    expect(merged.report).toBeNull();
    expect(existsSync(path.join(studyDir, STUDY_FILES.json))).toBe(false);

    // Node 1 is lost with a claim of this array task on it (as a node failure leaves it); Slurm requeues task 77_0 on node 2.
    writeFileSync(claimFile(studyDir, 0), `${JSON.stringify({ index: 0, task_id: 'slurm:77_0', host: 'node-lost', pid: 4242, since: '2026-03-02T09:00:00.000Z' })}\n`);
    const requeued = await study(['--instance', 'task', '--out', studyDir, '--scratch', nodeTwo], env);
    expect(requeued.code, requeued.stderr.slice(-4000)).toBe(0);
    expect(requeued.stderr).toContain('[A-r1] took over the claim of an earlier attempt of this task (slurm:77_0, host node-lost, since 2026-03-02T09:00:00.000Z): a requeue');
    expect(requeued.stderr).toContain(`[A-r1] resuming from the stopped copy ${stoppedDir} (copied to ${path.join(nodeTwo, 'ds-bs-stop', 'A-r1')})`);
    expect(requeued.stdout).toMatch(/^DONE: index 0 \(A-r1\): done → .*instances\/A-r1/);
    const published = path.join(studyDir, STUDY_FILES.instances, 'A-r1');
    expect(verifyDirectory(published).failures).toEqual([]);
    // Its processes.log went with the stopped copy and was continued on node 2: both attempts' runtimes and wakes, the resume said.
    const processLog = readFileSync(path.join(published, RUN_FILES.processLog), 'utf8');
    expect(processLog.match(/^\[ds-runtime \d+\] started for subject /gm)?.length ?? 0, processLog.slice(-3000)).toBeGreaterThanOrEqual(2);
    expect(processLog).toMatch(/\[A-r1\] wake-0001 at h/);
    expect(processLog).toMatch(/\[A-r1\] resuming from the stopped copy /);
    expect(requeued.stderr, 'no runtime line on the task stderr').not.toMatch(/^\[ds-runtime /m);
    expect(publishedIsSealed(published, readBatchPlan(studyDir, null))).toEqual({ sealed: true, why: '' });
    const events = storedEvents(published);
    expect(ofType(events, 'SystemEvent.EmergencyStopped')).toHaveLength(1);
    expect(ofType(events, 'SystemEvent.Resumed')).toHaveLength(1);
    expect(ofType(events, 'SystemEvent.StoreSealed')).toHaveLength(1);
    // The stop comes before the resume, the seal last.
    const seqOf = (type: string): number => ofType(events, type)[0]!.seq;
    expect(seqOf('SystemEvent.EmergencyStopped')).toBeLessThan(seqOf('SystemEvent.Resumed'));
    expect(events[events.length - 1]!.event_type).toBe('SystemEvent.StoreSealed');
    expect(existsSync(stoppedDir)).toBe(false);
    expect(existsSync(claimFile(studyDir, 0))).toBe(false);
    // Published whole: node 2's scratch copy is gone.
    expect(existsSync(path.join(nodeTwo, 'ds-bs-stop', 'A-r1'))).toBe(false);
    const record = readTaskRecord(studyDir, 0)!;
    expect(record).toMatchObject({ state: 'done', exit_code: 0, attempts: 2, task_id: 'slurm:77_0', run_dir: path.join(nodeTwo, 'ds-bs-stop', 'A-r1') });
    expect(record.wall_ms).toBeGreaterThan(0);

    // Once published, the index has nothing to do (a third attempt, or a duplicate task): said, exit 0, nothing changed.
    const before = folderState(studyDir);
    const again = await study(['--instance', '0', '--out', studyDir, '--scratch', nodeOne, '--json'], taskEnv(xdg));
    expect(again.code, again.stderr).toBe(0);
    expect(jsonOf(again)).toMatchObject({ outcomes: [{ index: 0, state: 'already_done', exitCode: 0 }] });
    expect(again.stderr).toContain('is published and sealed already');
    expect(folderState(studyDir)).toEqual(before);
    // The signed manifest is the plan's entry, run under the job's uid as planned (--same-uid).
    const manifest = checkSignedManifest(JSON.parse(readFileSync(path.join(published, RUN_FILES.manifest), 'utf8')), parsePublicKeyHex(readFileSync(path.join(published, RUN_FILES.publicKey), 'utf8')));
    expect(manifest.ok).toBe(true);
    if (manifest.ok) expect(manifest.manifest).toMatchObject({ experiment_id: 'bs-stop', replicate: 1, random_seed: 'stop-r1', isolation: { mode: 'same-uid', reason: 'test: cluster jobs run as the job uid' } });
  }, 240_000);
});
