// The batch plan of issues 18 and 31 and every refusal a task meets before it runs anything,
// against the real command (node processes, real keys and signatures, a temporary
// XDG_CONFIG_HOME): what --plan-only writes and signs (1.4.0: one task per block; --allow-key, a
// non-empty folder, a key file that is no key); a plan edited, unsigned, re-signed, planned by
// another key, or not a batch plan, refused by --block, --merge and --status alike; a task of
// another unit than the plan's (--instance on a plan of blocks; --block on a plan made before
// blocks; an instance of such a plan whose model calls a server or a local model: its block
// cannot be kept together), each advice followed; a block out of range (and one of the expansion
// round not planned yet); `--block task` from SLURM_ARRAY_TASK_ID / JOB_COMPLETION_INDEX; --shard
// of blocks; two tasks given the same index (a claim held by another task: the whole block is
// refused, none of it claimed); the pre-registration a task would run; a published folder that
// is not a sealed run. No instance runs here: a task that would run is stopped by a claim another
// task holds, whose refusal names the index it took. Every refusal leaves the study folder
// byte-identical and writes no scratch.
// Also, in process: the claim takeovers (a requeue, a process gone), the node-local check on
// real mountinfo text (NFS, Lustre, an escaped space, an overmount) and this machine's own, and
// the publish refusals (an open store, an instance published already).
import { toHex } from '../../schema/ed25519-keys.js';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { KEY_FILES, type ControllerKey } from '../../controller/key-store.js';
import { checkPreregLock, PreRegistration, readPreregJson } from '../../design/prereg.js';
import { taskIndexOf } from '../../cli/study-batch.js';
import { UsageError } from '../../cli/command-line.js';
import { expandBatchStudy, mergeBatchStudy } from '../../study/batch/batch-merge.js';
import { batchStudyStatus } from '../../study/batch/batch-status.js';
import { signStudyFile, writeBatchPlan } from '../../study/batch/batch-plan-writer.js';
import { TypedError } from '../../foundation/typed-error.js';
import { readBatchPlan } from '../../study/batch/batch-plan-reader.js';
import { runBatchTask, shardIndices, type TaskOptions } from '../../study/batch/instance-task.js';
import { runBlockTask } from '../../study/batch/block-task.js';
import { planAgainCommand } from '../../study/batch/task-unit.js';
import { MODEL_OPTIONS, modelChoiceOf } from '../../cli/model-flags.js';
import { modelFlagsOf } from '../../design/model-choice-flags.js';
import type { ModelChoice } from '../../design/model-choice.js';
import { parseArgs } from 'node:util';
import { checkNodeLocal, mountOf, NETWORK_FILE_SYSTEMS, ScratchError } from '../../study/batch/node-local-scratch.js';
import { publishSealed, publishStopped, PublishError } from '../../study/batch/run-folder-publish.js';
import { claimFile, claimIndex, readClaim, releaseIndex, TaskClaimError } from '../../study/batch/task-claim.js';
import { BATCH_FILES, BATCH_SIGNATURE_PAYLOAD_TYPE, BatchPlanError, checkSignedStudyFile } from '../../study-contract/batch-plan.js';
import { BATCH_STUDY_VERSION, readStudyPlan, runsBlocks, STUDY_FILES } from '../../study-contract/study-folder.js';
import { verifyDsse } from '../../schema/dsse.js';
import { hashCanonical, hashText } from '../../schema/hash.js';
import { systemTmpdir } from '../support/suite-temp-dir.js';
import { adviceArgs, asPlanBeforeBlocks, errorCodeOf, errorMessageOf, jsonOf, lockCopy, makeKey, planArgs, study, taskEnv, writeLockedPrereg, type StudyCall } from '../support/batch-study.js';
import { SCENARIOS_DIR, TEST_START_AT } from '../support/controller-run.js';
import { folderState } from '../support/folder-state.js';
import { tempDir } from '../support/writer-fixture.js';

let dir: string;
let env: NodeJS.ProcessEnv;
let k1: ControllerKey;
let k2: ControllerKey;
let keys1: string;
let keys2: string;
let prereg1: string;
/** The same pre-registration, locked by key 2. */
let prereg2: string;
/** n = 1, planned by key 1 (never changed: copy it); planned without --json (its screen text). */
let plan1: string;
let inst1: string;
let inst2: string;
let instAllow: string;
let plan1Call: StudyCall;
/** n = 1, planned by key 1 with key 2 allowed (never changed). */
let planAllow: string;
let planAllowCall: StudyCall;
/** n = 2, planned by key 1 (never changed). */
let plan2: string;
let plan2Call: StudyCall;

/** What `run` throws (null: nothing). */
function caughtOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return null;
}

async function caughtOfAsync(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  return null;
}

function copyOf(source: string, name: string): string {
  const to = path.join(dir, name);
  cpSync(source, to, { recursive: true });
  return to;
}

function planJson(studyDir: string): Record<string, unknown> & { batch: { instances: { index: number; seed: string }[]; allowed_keys: string[]; planner_key: string } } {
  return JSON.parse(readFileSync(path.join(studyDir, STUDY_FILES.plan), 'utf8')) as ReturnType<typeof planJson>;
}

function writePlan(studyDir: string, plan: unknown): void {
  writeFileSync(path.join(studyDir, STUDY_FILES.plan), `${JSON.stringify(plan, null, 2)}\n`);
}

/** Re-signs study.json as it now is, with `key`: what a forger holding that key does. */
function resign(studyDir: string, key: ControllerKey): void {
  rmSync(path.join(studyDir, BATCH_FILES.signature));
  signStudyFile(studyDir, STUDY_FILES.plan, BATCH_FILES.signature, planJson(studyDir)['study_id'] as string, key);
}

/** Runs the command, and holds it to a refusal: its exit, its code, a telling part of its message, the study folder (and the scratch) as they were. */
async function refused(studyDir: string, args: readonly string[], want: { exit: number; code: string; message: RegExp }, callEnv: NodeJS.ProcessEnv = env): Promise<StudyCall> {
  const scratch = path.join(dir, `scratch-${path.basename(studyDir)}`);
  const before = folderState(studyDir);
  const scratchBefore = folderState(scratch);
  const isTask = args.includes('--block') || args.includes('--instance') || args.includes('--shard');
  const r = await study([...args, ...(isTask ? ['--scratch', scratch] : []), '--json'], callEnv);
  expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr.slice(-2000)}`).toBe(want.exit);
  expect(errorCodeOf(r), args.join(' ')).toBe(want.code);
  expect(errorMessageOf(r)).toMatch(want.message);
  expect(folderState(studyDir), `${args.join(' ')} changed ${studyDir}`).toEqual(before);
  expect(folderState(scratch), `${args.join(' ')} wrote scratch`).toEqual(scratchBefore);
  return r;
}

/** The same in process (the production step the command calls), for the cases beside the one run as a command. */
async function refusedInProcess(studyDir: string, run: () => unknown, want: { code: string; message: RegExp }): Promise<void> {
  const before = folderState(studyDir);
  const error = await caughtOfAsync(async () => run());
  expect(error, `expected ${want.code}`).toBeInstanceOf(TypedError);
  expect((error as TypedError).errorCode).toBe(want.code);
  expect((error as TypedError).exitCode).toBe(2);
  expect((error as Error).message).toMatch(want.message);
  expect(folderState(studyDir)).toEqual(before);
}

/** A task's options, in process, as the command makes them (scratch under the test folder). */
function taskOptions(studyDir: string, keyDir: string, preregFile: string | null = null): TaskOptions {
  return { studyDir, keyDir, scratch: { root: path.join(dir, 'scratch-in-process'), from: '--scratch' }, preregFile, scenariosDir: SCENARIOS_DIR, operator: 'test', signal: new AbortController().signal, env: {}, log: () => undefined };
}

const trust = (key: ControllerKey): Uint8Array => key.keys.publicKey;

beforeAll(async () => {
  dir = tempDir('ds-batch-plan-');
  env = taskEnv(path.join(dir, 'xdg'));
  keys1 = path.join(dir, 'keys1');
  keys2 = path.join(dir, 'keys2');
  k1 = makeKey(keys1);
  k2 = makeKey(keys2);
  prereg1 = writeLockedPrereg(path.join(dir, 'prereg.json'), k1);
  prereg2 = lockCopy(prereg1, path.join(dir, 'prereg-k2.json'), k2);
  plan1 = path.join(dir, 'plan-n1');
  planAllow = path.join(dir, 'plan-allow');
  plan2 = path.join(dir, 'plan-n2');
  [plan1Call, planAllowCall, plan2Call] = await Promise.all([
    study(planArgs({ out: plan1, keyDir: keys1, prereg: prereg1, studyId: 'bp-one' }).filter((a) => a !== '--json'), env),
    // Key 1 named again: the planner's key is on the list once.
    study(planArgs({ out: planAllow, keyDir: keys1, prereg: prereg1, studyId: 'bp-allow', allowKeys: [path.join(keys2, KEY_FILES.public), path.join(keys1, KEY_FILES.public)] }), env),
    study(planArgs({ out: plan2, keyDir: keys1, prereg: prereg1, studyId: 'bp-two', n: 2, exploratory: 'test: two replicates per group under a pre-registration of one' }), env),
  ]);
  for (const r of [plan1Call, planAllowCall, plan2Call]) if (r.code !== 0) throw new Error(`test setup: --plan-only exited ${r.code}: ${r.stderr.slice(-3000)}`);
  // The per-instance tasks of plans made before blocks (study_version 1.2.0: one instance per task, still run as they were).
  inst1 = asPlanBeforeBlocks(copyOf(plan1, 'plan-n1-instances'), k1);
  inst2 = asPlanBeforeBlocks(copyOf(plan2, 'plan-n2-instances'), k1);
  instAllow = asPlanBeforeBlocks(copyOf(planAllow, 'plan-allow-instances'), k1);
}, 60_000);

describe('--plan-only', () => {
  test('writes study.json 1.4.0 (one task per block: its study runs blocks) with every instance by index and the allowed keys, signed by the planner key; runs nothing', () => {
    const plan = planJson(plan1);
    expect(plan['study_version']).toBe('1.4.0');
    expect(BATCH_STUDY_VERSION).toBe('1.4.0');
    expect(runsBlocks(readStudyPlan(plan1))).toBe(true);
    expect(plan['study_id']).toBe('bp-one');
    expect(plan['same_uid']).toBe('test: cluster jobs run as the job uid');
    expect(plan.batch.instances).toEqual([
      { index: 0, group: 'A', replicate: 1, seed: 'batch-r1', round: 1 },
      { index: 1, group: 'B', replicate: 1, seed: 'batch-r1', round: 1 },
      { index: 2, group: 'C', replicate: 1, seed: 'batch-r1', round: 1 },
    ]);
    expect(plan.batch.allowed_keys).toEqual([toHex(k1.keys.publicKey)]);
    expect(plan.batch.planner_key).toBe(toHex(k1.keys.publicKey));
    // Index i: replicate floor(i/3)+1 of group A, B, C[i mod 3], each replicate its own seed.
    const two = planJson(plan2).batch.instances;
    expect(two).toHaveLength(6);
    two.forEach((entry, i) => expect(entry).toEqual({ index: i, group: 'ABC'[i % 3], replicate: Math.floor(i / 3) + 1, seed: `batch-r${Math.floor(i / 3) + 1}`, round: 1 }));
    // Nothing ran: the plan, its signature, the scenario's copy (issue 35), an empty instances folder.
    expect(readdirSync(plan1).sort()).toEqual([BATCH_FILES.signature, STUDY_FILES.instances, STUDY_FILES.plan, STUDY_FILES.scenario].sort());
    expect(readdirSync(path.join(plan1, STUDY_FILES.instances))).toEqual([]);
    // The signature: DSSE by key 1 over study.json's exact bytes, under its name, for its study.
    const envelope = JSON.parse(readFileSync(path.join(plan1, BATCH_FILES.signature), 'utf8')) as unknown;
    const verified = verifyDsse(envelope, BATCH_SIGNATURE_PAYLOAD_TYPE, k1.keys.publicKey);
    expect(verified.ok).toBe(true);
    const sha256 = hashText(readFileSync(path.join(plan1, STUDY_FILES.plan)));
    expect(verified.ok && verified.body).toEqual({ file: STUDY_FILES.plan, sha256, study_id: 'bp-one' });
    expect(checkSignedStudyFile(plan1, STUDY_FILES.plan, BATCH_FILES.signature, 'bp-one', toHex(k1.keys.publicKey))).toBe(sha256);
    // …and with any other key it does not verify.
    expect(verifyDsse(envelope, BATCH_SIGNATURE_PAYLOAD_TYPE, k2.keys.publicKey).ok).toBe(false);
    expect(() => checkSignedStudyFile(plan1, STUDY_FILES.plan, BATCH_FILES.signature, 'bp-one', toHex(k2.keys.publicKey))).toThrow(BatchPlanError);
    expect(readBatchPlan(plan1, trust(k1)).instances).toHaveLength(3);
  });

  test('the screen says the block array range and the next step; --json the study, instances, blocks, array; --allow-key adds a key to the allow-list', () => {
    expect(plan1Call.stdout).toMatch(/^PLANNED: bp-one, 1 block\(s\) of A, B and C = 3 instances \(round 1: blocks 0, instance indices 0-2; n = 1 per group, the pre-registered rule may expand every group to n = 2/);
    expect(plan1Call.stdout).toContain(`run each block as a task: npm run study -- --block K --out ${plan1}`);
    expect(plan1Call.stdout).toContain('sbatch --array=0 cluster/slurm/study-task.sbatch');
    expect(plan1Call.stdout).toContain("a block: each replicate's A, B and C side by side, wakes in lockstep, their model calls at once (no model server to share)");
    expect(jsonOf(plan2Call)).toMatchObject({ study_id: 'bp-two', study_version: '1.4.0', task_unit: 'block', instances: 6, blocks: 2, array: '0-1', block_slots: 3, model_server: null, n_initial: 2, n_expanded: 2, exit_code: 0, allowed_keys: [toHex(k1.keys.publicKey)] });
    expect(jsonOf(planAllowCall)).toMatchObject({ study_id: 'bp-allow', instances: 3, blocks: 1, array: '0', allowed_keys: [toHex(k1.keys.publicKey), toHex(k2.keys.publicKey)], planner_key: toHex(k1.keys.publicKey) });
    expect(planJson(planAllow).batch.allowed_keys).toEqual([toHex(k1.keys.publicKey), toHex(k2.keys.publicKey)]);
  });

  test('refused into a non-empty folder (exit 2), the folder untouched', async () => {
    const out = path.join(dir, 'not-empty');
    mkdirSync(out);
    writeFileSync(path.join(out, 'notes.txt'), 'mine\n');
    await refused(out, planArgs({ out, keyDir: keys1, prereg: prereg1, studyId: 'bp-ne' }).filter((a) => a !== '--json'), { exit: 2, code: 'study_out_not_empty', message: /not empty/ });
  });

  test('an --allow-key file that is no key (or no file): exit 2, nothing written (no folder, the key folder as it was)', async () => {
    const notKey = path.join(dir, 'not-a-key.pub');
    writeFileSync(notKey, 'this is not a public key\n');
    const out = path.join(dir, 'allow-bad');
    const parent = folderState(dir);
    const r = await study(planArgs({ out, keyDir: keys1, prereg: prereg1, studyId: 'bp-bad', allowKeys: [notKey] }), env);
    expect(r.code, r.stderr).toBe(2);
    expect(errorCodeOf(r)).toBe('batch_plan_plan_untrusted');
    expect(errorMessageOf(r)).toContain(`--allow-key ${notKey} is not a controller public key`);
    expect(errorMessageOf(r)).toContain('nothing was written');
    expect(existsSync(out)).toBe(false);
    expect(folderState(dir)).toEqual(parent);
    const missing = path.join(dir, 'no-such.pub');
    await refusedInProcess(dir, () => writeBatchPlan({ outDir: out, seed: 'batch', preregFile: prereg1, keyDir: keys1, n: 1, startAt: TEST_START_AT, model: { adapter: 'reference' }, studyId: 'bp-bad', sameUid: null, allowKeyFiles: [missing], scenariosDir: SCENARIOS_DIR, log: () => undefined }), { code: 'batch_plan_plan_untrusted', message: new RegExp(`--allow-key ${missing} is not a controller public key`) });
  });
});

describe('a plan that is not what its planner signed: every step refuses it (exit 2), nothing changed', () => {
  test('study.json edited after planning (a seed; n): --block, --merge and --status refuse plan_edited', async () => {
    const seed = copyOf(plan1, 'edited-seed');
    const p = planJson(seed);
    p.batch.instances[1]!.seed = 'batch-r9';
    writePlan(seed, p);
    const edited = { exit: 2, code: 'batch_plan_plan_edited', message: /study\.json hashes to sha256:[0-9a-f]+, but its planner signed sha256:[0-9a-f]+: the file was edited after it was planned/ };
    await Promise.all([refused(seed, ['--block', '0', '--out', seed, '--key-dir', keys1], edited), refused(seed, ['--merge', seed, '--key-dir', keys1], edited), refused(seed, ['--status', seed], edited)]);
    const n = copyOf(plan1, 'edited-n');
    writePlan(n, { ...planJson(n), n_initial: 2, n_expanded: 2 });
    await refusedInProcess(n, () => readBatchPlan(n, null), { code: 'batch_plan_plan_edited', message: edited.message });
    await refusedInProcess(n, () => readBatchPlan(n, trust(k1)), { code: 'batch_plan_plan_edited', message: edited.message });
  });

  test('edited and signed again by the planner key itself: the plan must still follow the study rule (seeds, indices, count) and allow its planner', async () => {
    const cases: [string, (p: ReturnType<typeof planJson>) => void, RegExp][] = [
      ['resigned-seed', (p) => (p.batch.instances[2]!.seed = 'chosen-seed'), /entry 2 is .*chosen-seed.*the plan's rule makes it .*batch-r1/],
      ['resigned-swap', (p) => p.batch.instances.reverse(), /entry 0 is .*"index":2/],
      ['resigned-n', (p) => ((p as Record<string, unknown>)['n_initial'] = 2), /lists 3 instances, but replicates 1–2 of groups A, B, C are 6/],
      ['resigned-planner-dropped', (p) => (p.batch.allowed_keys = [toHex(k2.keys.publicKey)]), /the planner key .* is not on its own allow-list/],
    ];
    for (const [name, edit, message] of cases) {
      const forged = copyOf(plan1, name);
      const p = planJson(forged);
      edit(p);
      writePlan(forged, p);
      resign(forged, k1);
      await refusedInProcess(forged, () => readBatchPlan(forged, trust(k1)), { code: 'batch_plan_plan_edited', message });
    }
    // The first, as a command.
    const forged = path.join(dir, 'resigned-seed');
    await refused(forged, ['--merge', forged, '--key-dir', keys1], { exit: 2, code: 'batch_plan_plan_edited', message: cases[0]![2] });
  });

  test('the signature removed, damaged, of another study, or by another key than the plan names: plan_unsigned / plan_edited', async () => {
    const unsigned = copyOf(plan1, 'unsigned');
    rmSync(path.join(unsigned, BATCH_FILES.signature));
    const u = { code: 'batch_plan_plan_unsigned', message: /study\.sig\.dsse\.json is missing: study\.json carries no planner signature/ };
    await refused(unsigned, ['--status', unsigned], { exit: 2, ...u });
    await refusedInProcess(unsigned, () => readBatchPlan(unsigned, trust(k1)), u);
    await refusedInProcess(unsigned, () => runBlockTask(taskOptions(unsigned, keys1), 0), u);
    const damaged = copyOf(plan1, 'sig-damaged');
    writeFileSync(path.join(damaged, BATCH_FILES.signature), '{"payloadType": ');
    await refusedInProcess(damaged, () => readBatchPlan(damaged, null), { code: 'batch_plan_plan_unsigned', message: /is not JSON/ });
    const otherStudy = copyOf(plan1, 'sig-of-another-study');
    cpSync(path.join(planAllow, BATCH_FILES.signature), path.join(otherStudy, BATCH_FILES.signature));
    await refusedInProcess(otherStudy, () => readBatchPlan(otherStudy, trust(k1)), { code: 'batch_plan_plan_edited', message: /a signature of another file or study/ });
    const byOther = copyOf(plan1, 'sig-by-key-2');
    resign(byOther, k2);
    await refused(byOther, ['--block', '0', '--out', byOther, '--key-dir', keys1], { exit: 2, code: 'batch_plan_plan_edited', message: /does not verify with the planner key/ });
  });

  test('a plan planned (and signed) by another key: --merge trusting the planner refuses plan_untrusted; a task whose key is not on the allow-list refuses plan_untrusted', async () => {
    const foreign = copyOf(plan1, 'planned-by-key-2');
    const p = planJson(foreign);
    p.batch.planner_key = toHex(k2.keys.publicKey);
    p.batch.allowed_keys = [toHex(k2.keys.publicKey)];
    writePlan(foreign, p);
    resign(foreign, k2);
    // Self-consistent: it reads when nothing is trusted but itself…
    expect(readBatchPlan(foreign, null).batch.planner_key).toBe(toHex(k2.keys.publicKey));
    await Promise.all([
      // …but the merge's trust anchor is the key given to it.
      refused(foreign, ['--merge', foreign, '--key-dir', keys1], { exit: 2, code: 'batch_plan_plan_untrusted', message: /was planned by key .*, not by the trusted key .*: a plan of somebody else/ }),
      refused(foreign, ['--block', '0', '--out', foreign, '--key-dir', keys1], { exit: 2, code: 'batch_plan_plan_untrusted', message: new RegExp(`the key in ${keys1} .* is not on the plan's allow-list`) }),
    ]);
    await refusedInProcess(plan1, () => runBlockTask(taskOptions(plan1, keys2), 0), { code: 'batch_plan_plan_untrusted', message: new RegExp(`the key in ${keys2} .* is not on the plan's allow-list`) });
    await refusedInProcess(plan1, () => expandBatchStudy(plan1, k2, SCENARIOS_DIR, () => undefined), { code: 'batch_plan_plan_untrusted', message: /not by the trusted key/ });
  });

  test('a one-machine study.json is no batch plan (plan_not_batch), and --resume does not run a batch plan (study_batch_study)', async () => {
    const single = copyOf(plan1, 'one-machine');
    const { batch: _batch, ...rest } = planJson(single);
    writePlan(single, { ...rest, study_version: '1.1.0' });
    const notBatch = { code: 'batch_plan_plan_not_batch', message: /plans a study for one machine .*npm run study -- --resume/ };
    await refused(single, ['--block', '0', '--out', single, '--key-dir', keys1], { exit: 2, ...notBatch });
    await refusedInProcess(single, () => mergeBatchStudy(single, trust(k1), SCENARIOS_DIR, () => undefined), notBatch);
    await refusedInProcess(single, () => batchStudyStatus(single), notBatch);
    await refused(plan1, ['--resume', plan1], { exit: 2, code: 'study_batch_study', message: /was planned for a batch scheduler/ });
  });
});

describe('which index a task runs', () => {
  test('an index out of range: exit 2 index_out_of_range; one of the expansion round not yet planned says to run --expand', async () => {
    const [expansion, beyond] = await Promise.all([
      refused(inst1, ['--instance', '3', '--out', inst1, '--key-dir', keys1], { exit: 2, code: 'batch_plan_index_out_of_range', message: /index 3 names no instance of .*: the plan holds indices 0-2; 3-5 would be the expansion round, which is not planned/ }),
      refused(inst1, ['--instance', '6', '--out', inst1, '--key-dir', keys1], { exit: 2, code: 'batch_plan_index_out_of_range', message: /index 6 names no instance of .*: the plan holds indices 0-2$/ }),
    ]);
    expect(errorMessageOf(expansion)).toContain(`npm run study -- --expand ${inst1}`);
    expect(errorMessageOf(beyond)).not.toContain('--expand');
    expect(() => taskIndexOf('instance', '30000', {})).toThrow(/--instance must be an index from 0 to 29999/);
    expect(() => taskIndexOf('instance', '-1', {})).toThrow(UsageError);
    expect(() => taskIndexOf('instance', '01', {})).toThrow(UsageError);
  });

  describe('with every index claimed by tasks of another job (so that nothing runs, and the refusal names the index taken)', () => {
    let claimed: string;
    let claimedBefore: ReturnType<typeof folderState>;
    beforeAll(() => {
      claimed = copyOf(inst2, 'claimed');
      mkdirSync(path.join(claimed, BATCH_FILES.tasks));
      for (let i = 0; i < 6; i += 1) writeFileSync(claimFile(claimed, i), `${JSON.stringify({ index: i, task_id: `slurm:4242_${i}`, host: 'node-17', pid: 31337, since: '2026-03-02T09:00:00.000Z' })}\n`);
      claimedBefore = folderState(claimed);
    });

    const claimedBy = (i: number): RegExp => new RegExp(`^instance ${i} is claimed by task slurm:4242_${i} on host node-17 \\(pid 31337\\) since 2026-03-02T09:00:00.000Z: two tasks were given the same index. Nothing was run or changed`);

    test('a claim held by another task: exit 2 claimed_by_another_task, nothing run, nothing written (no task record, no scratch)', async () => {
      await refused(claimed, ['--instance', '4', '--out', claimed, '--key-dir', keys1], { exit: 2, code: 'task_claimed_by_another_task', message: claimedBy(4) });
      expect(existsSync(path.join(claimed, BATCH_FILES.tasks, '4.json'))).toBe(false);
      // A claim nobody can read is still a claim.
      const garbled = copyOf(claimed, 'claim-garbled');
      writeFileSync(claimFile(garbled, 0), '{"index": 0, "task_');
      await refusedInProcess(garbled, () => runBatchTask(taskOptions(garbled, keys1), 0), { code: 'task_claimed_by_another_task', message: /claimed by task unreadable claim/ });
      expect(existsSync(path.join(dir, 'scratch-in-process'))).toBe(false);
    });

    test('`--instance task`: the index from SLURM_ARRAY_TASK_ID, or from JOB_COMPLETION_INDEX; neither, both disagreeing, or not an index: exit 2', async () => {
      const task = ['--instance', 'task', '--out', claimed, '--key-dir', keys1];
      await Promise.all([
        refused(claimed, task, { exit: 2, code: 'task_claimed_by_another_task', message: claimedBy(1) }, taskEnv(path.join(dir, 'xdg'), { SLURM_ARRAY_JOB_ID: '5000', SLURM_ARRAY_TASK_ID: '1' })),
        refused(claimed, task, { exit: 2, code: 'task_claimed_by_another_task', message: claimedBy(5) }, taskEnv(path.join(dir, 'xdg'), { JOB_COMPLETION_INDEX: '5' })),
      ]);
      await Promise.all([
        refused(claimed, task, { exit: 2, code: 'usage', message: /--instance task: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set/ }),
        refused(claimed, task, { exit: 2, code: 'usage', message: /--instance task: SLURM_ARRAY_TASK_ID=1 and JOB_COMPLETION_INDEX=2 disagree/ }, taskEnv(path.join(dir, 'xdg'), { SLURM_ARRAY_TASK_ID: '1', JOB_COMPLETION_INDEX: '2' })),
      ]);
      // Both set and alike: that index; an empty variable counts as unset; a range is not an index.
      expect(taskIndexOf('instance', 'task', { SLURM_ARRAY_TASK_ID: '3', JOB_COMPLETION_INDEX: '3' })).toBe(3);
      expect(taskIndexOf('instance', 'task', { SLURM_ARRAY_TASK_ID: '', JOB_COMPLETION_INDEX: '4' })).toBe(4);
      expect(() => taskIndexOf('instance', 'task', { SLURM_ARRAY_TASK_ID: '1-3' })).toThrow(/--instance must be an index from 0 to 29999 \(or `task`\), got "1-3" from the scheduler/);
      expect(folderState(claimed)).toEqual(claimedBefore);
    });

    test('--shard 1/2 takes exactly the indices ≡ 1 mod 2 (1, 3, 5), one after another; --shard task/2 from the scheduler; a shard that does not exist: exit 2', async () => {
      const [odd, even] = await Promise.all([
        study(['--shard', '1/2', '--out', claimed, '--key-dir', keys1, '--scratch', path.join(dir, 'scratch-shard'), '--json'], env),
        study(['--shard', 'task/2', '--out', claimed, '--key-dir', keys1, '--scratch', path.join(dir, 'scratch-shard'), '--json'], taskEnv(path.join(dir, 'xdg'), { JOB_COMPLETION_INDEX: '0' })),
      ]);
      for (const [r, indices] of [
        [odd, [1, 3, 5]],
        [even, [0, 2, 4]],
      ] as const) {
        // Each index refused on its own (a shard goes on with the others), the task's exit the worst: 2.
        expect(r.code, r.stderr).toBe(2);
        const json = jsonOf(r) as { outcomes: { index: number; exitCode: number; error: string }[]; not_reached: number[] };
        expect(json.outcomes.map((o) => o.index)).toEqual(indices);
        for (const o of json.outcomes) {
          expect(o.exitCode).toBe(2);
          expect(o.error).toMatch(claimedBy(o.index));
        }
        expect(json.not_reached).toEqual([]);
        expect(r.stderr).toContain(`[task] shard ${indices[0]}/2: 3 instance(s): ${indices.join(', ')}`);
      }
      expect(folderState(claimed)).toEqual(claimedBefore);
      expect(existsSync(path.join(dir, 'scratch-shard'))).toBe(false);
      // The same selection, read from the plan in process (one made before blocks: its shards are of instances).
      const plan = readBatchPlan(inst2, trust(k1));
      expect(shardIndices(plan, 1, 2)).toEqual([1, 3, 5]);
      expect(shardIndices(plan, 0, 4)).toEqual([0, 4]);
      expect(shardIndices(plan, 2, 3)).toEqual([2, 5]);
    });
  });
});

describe('what a task refuses to run, before it runs anything', () => {
  test('the pre-registration: not locked by the task key, not on this node, or another one: exit 2 prereg_refused', async () => {
    // Key 2 is allowed, but the plan's pre-registration is locked by key 1 only.
    await refused(instAllow, ['--instance', '0', '--out', instAllow, '--key-dir', keys2], { exit: 2, code: 'batch_plan_prereg_refused', message: /refusing to run .*prereg\.json: .*lock a copy on each node with its key/ });
    await refusedInProcess(instAllow, () => runBatchTask(taskOptions(instAllow, keys2, path.join(dir, 'gone.json')), 0), { code: 'batch_plan_prereg_refused', message: /gone\.json is not on this node/ });
    const other = JSON.parse(readFileSync(prereg1, 'utf8')) as { thresholds: { c_median_min_score: number } };
    other.thresholds.c_median_min_score -= 1;
    const otherFile = path.join(dir, 'prereg-other-k2.json');
    writeFileSync(otherFile, JSON.stringify(other, null, 2));
    lockCopy(otherFile, otherFile, k2);
    await refusedInProcess(instAllow, () => runBatchTask(taskOptions(instAllow, keys2, otherFile), 1), { code: 'batch_plan_prereg_refused', message: /hashes to sha256:[0-9a-f]+, not the plan's pre-registration/ });
    // Key 2's own locked copy of the same pre-registration passes its lock and hashes as the plan's: what a node with its own key gives.
    expect(checkPreregLock(prereg2, k2.keys.publicKey).ok).toBe(true);
    expect(hashCanonical(PreRegistration.parse(readPreregJson(prereg2)))).toBe(planJson(instAllow)['prereg_sha256']);
  });

  test('a folder where the instance is published that is not a sealed run of the plan: exit 2 published_folder_refused', async () => {
    const half = copyOf(inst1, 'half-published');
    mkdirSync(path.join(half, STUDY_FILES.instances, 'B-r1'));
    writeFileSync(path.join(half, STUDY_FILES.instances, 'B-r1', 'events.db'), '');
    await refused(half, ['--instance', '1', '--out', half, '--key-dir', keys1], { exit: 2, code: 'batch_plan_published_folder_refused', message: /B-r1 exists but is not a sealed run of this plan \(it has no controller\.pub\)/ });
  });

  test('--status of a plan nothing ran: every instance missing, each with the command that runs it (exit 0)', async () => {
    const r = await study(['--status', inst1, '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    const s = jsonOf(r) as { planned: number; counts: Record<string, number>; instances: { index: number; state: string; rerun: string }[] };
    expect(s.planned).toBe(3);
    expect(s.counts).toEqual({ done: 0, running: 0, stopped: 0, missing: 3, failed: 0 });
    expect(s.instances.map((i) => [i.index, i.state, i.rerun])).toEqual([0, 1, 2].map((i) => [i, 'missing', `npm run study -- --instance ${i} --out ${inst1}`]));
  });
});

describe('claims, in process: who may take an index over', () => {
  test('the same scheduler task (a requeue) takes its own claim over; a process gone on this host is taken over; any other claimant refuses', () => {
    const studyDir = tempDir('ds-claims-');
    const write = (index: number, claim: object): void => {
      mkdirSync(path.join(studyDir, BATCH_FILES.tasks), { recursive: true });
      writeFileSync(claimFile(studyDir, index), `${JSON.stringify(claim)}\n`);
    };
    expect(claimIndex(studyDir, 0, 'slurm:77_0')).toBeNull();
    expect(readClaim(studyDir, 0)).toMatchObject({ index: 0, task_id: 'slurm:77_0', host: hostname(), pid: process.pid });
    // Another task of the same index, here or elsewhere: refused, the claim kept.
    const refusal = caughtOf(() => claimIndex(studyDir, 0, 'slurm:78_0'));
    expect(refusal).toBeInstanceOf(TaskClaimError);
    expect((refusal as TaskClaimError).errorCode).toBe('task_claimed_by_another_task');
    expect((refusal as TaskClaimError).exitCode).toBe(2);
    expect(readClaim(studyDir, 0)?.task_id).toBe('slurm:77_0');
    // Released only by its holder.
    releaseIndex(studyDir, 0, 'slurm:78_0');
    expect(existsSync(claimFile(studyDir, 0))).toBe(true);
    releaseIndex(studyDir, 0, 'slurm:77_0');
    expect(existsSync(claimFile(studyDir, 0))).toBe(false);
    // A requeue: the same array task on another node, its first node lost with the claim.
    write(1, { index: 1, task_id: 'slurm:77_1', host: 'node-lost', pid: 4242, since: '2026-03-02T09:00:00.000Z' });
    expect(claimIndex(studyDir, 1, 'slurm:77_1')).toMatch(/^took over the claim of an earlier attempt of this task \(slurm:77_1, host node-lost, since 2026-03-02T09:00:00.000Z\): a requeue$/);
    expect(readClaim(studyDir, 1)).toMatchObject({ task_id: 'slurm:77_1', host: hostname(), pid: process.pid });
    // A process of this host that is gone.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const gonePid = Number(gone.stdout);
    write(2, { index: 2, task_id: `process:${hostname()}:${gonePid}`, host: hostname(), pid: gonePid, since: '2026-03-02T09:00:00.000Z' });
    expect(claimIndex(studyDir, 2, 'process:other')).toBe(`took over the claim of pid ${gonePid} on this host, which is gone (since 2026-03-02T09:00:00.000Z)`);
    // The same pid on another host is not known to be gone: refused.
    write(3, { index: 3, task_id: 'process:elsewhere', host: 'node-9', pid: gonePid, since: '2026-03-02T09:00:00.000Z' });
    expect(() => claimIndex(studyDir, 3, 'process:other')).toThrow(/instance 3 is claimed by task process:elsewhere on host node-9/);
    // A live process of this host (this one) is not taken over either.
    write(4, { index: 4, task_id: 'process:alive', host: hostname(), pid: process.pid, since: '2026-03-02T09:00:00.000Z' });
    expect(() => claimIndex(studyDir, 4, 'process:other')).toThrow(TaskClaimError);
  });
});

describe('node-local scratch', () => {
  /** A realistic mountinfo (optional fields, a root overlay, tmpfs, ext4) plus the mounts of a case. */
  const table = (root: string, extra: readonly string[]): string =>
    [
      '22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw',
      '27 1 0:45 / / rw,relatime shared:1 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A:/var/lib/docker/overlay2/l/B,upperdir=/var/lib/docker/overlay2/x/diff,workdir=/var/lib/docker/overlay2/x/work',
      '30 27 0:27 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=65536k',
      `41 27 254:1 / ${root} rw,relatime shared:30 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro`,
      ...extra,
      '',
    ].join('\n');

  test('mountOf: the mount holding a path, longest prefix; escaped spaces; the last of an overmount', () => {
    const info = table('/local', [
      '50 27 0:50 / /home rw,relatime shared:40 - nfs4 fileserver:/export/home rw,vers=4.2,rsize=1048576,wsize=1048576,hard,proto=tcp',
      '51 27 0:51 / /lustre/scratch rw,relatime shared:41 - lustre 10.0.0.1@o2ib:/scratch rw,flock,lazystatfs',
      '52 27 0:52 / /mnt/job\\040scratch rw,relatime shared:42 - tmpfs tmpfs rw,size=1048576k',
      '53 27 0:53 / /srv/data rw,relatime shared:43 - nfs fileserver:/data rw,vers=3',
      '54 53 0:54 / /srv/data rw,relatime shared:44 - tmpfs tmpfs rw,size=1048576k',
    ]);
    expect(mountOf('/home/ann/runs', info)).toEqual({ mountPoint: '/home', fsType: 'nfs4', source: 'fileserver:/export/home' });
    expect(mountOf('/home', info)?.fsType).toBe('nfs4');
    // A name that only begins like a mount point is not inside it.
    expect(mountOf('/homework', info)).toMatchObject({ mountPoint: '/', fsType: 'overlay' });
    expect(mountOf('/lustre/scratch/u1', info)).toMatchObject({ mountPoint: '/lustre/scratch', fsType: 'lustre' });
    expect(mountOf('/lustre/other', info)?.fsType).toBe('overlay');
    expect(mountOf('/mnt/job scratch/ds-x', info)).toEqual({ mountPoint: '/mnt/job scratch', fsType: 'tmpfs', source: 'tmpfs' });
    expect(mountOf('/mnt/job', info)?.fsType).toBe('overlay');
    // tmpfs mounted over the NFS export at the same point: the later mount is what a path reaches.
    expect(mountOf('/srv/data/x', info)?.fsType).toBe('tmpfs');
    expect(mountOf('/dev/shm/ds', info)?.fsType).toBe('tmpfs');
    expect(mountOf('/local/tmp', info)?.fsType).toBe('ext4');
    expect(mountOf('/x', 'not a mountinfo line\n\n')).toBeNull();
  });

  test('checkNodeLocal refuses a network file system (ScratchError network_file_system, exit 2) and accepts tmpfs, ext4, overlay', () => {
    // On the system's temporary folder, as before the suite moved TMPDIR to tmpfs: the table
    // below mounts a tmpfs at /dev/shm, and this test expects its root under the overlay at /.
    const root = realpathSync(mkdtempSync(path.join(systemTmpdir(), 'ds-mounts-')));
    for (const sub of ['nfs-share', 'lustre', 'with space', 'with', 'tmpfs', 'ext4', 'over']) mkdirSync(path.join(root, sub));
    symlinkSync(path.join(root, 'nfs-share'), path.join(root, 'link-to-nfs'));
    const esc = (p: string): string => p.replaceAll(' ', '\\040');
    const info = table(path.join(root, 'ext4'), [
      `60 27 0:60 / ${root}/nfs-share rw,relatime shared:50 - nfs4 filer:/vol/share rw,vers=4.1`,
      `61 27 0:61 / ${root}/lustre rw,relatime shared:51 - lustre mds@tcp:/fs rw`,
      `62 27 0:62 / ${esc(`${root}/with space`)} rw,relatime shared:52 - nfs filer:/vol/spaced rw`,
      `63 27 0:63 / ${root}/tmpfs rw,relatime shared:53 - tmpfs tmpfs rw`,
      `64 27 0:64 / ${root}/over rw,relatime shared:54 - tmpfs tmpfs rw`,
      `65 64 0:65 / ${root}/over rw,relatime shared:55 - fuse.sshfs u@h:/x rw`,
    ]);
    const refusedOn = (scratch: string, fsType: string): void => {
      const caught = caughtOf(() => checkNodeLocal(scratch, '--scratch', info));
      expect(caught, scratch).toBeInstanceOf(ScratchError);
      const e = caught as ScratchError;
      expect(e.code).toBe('network_file_system');
      expect(e.errorCode).toBe('scratch_network_file_system');
      expect(e.exitCode).toBe(2);
      expect(e.message).toContain(`is on ${fsType}`);
      expect(e.message).toContain('a network file system');
      expect(e.message).toContain('--scratch DIR');
    };
    // A scratch folder not made yet is judged by the folder it would be made in.
    refusedOn(path.join(root, 'nfs-share', 'ds-study', 'A-r1'), 'nfs4');
    refusedOn(path.join(root, 'lustre'), 'lustre');
    refusedOn(path.join(root, 'with space', 'x'), 'nfs');
    // Through a symlink: the real path decides.
    refusedOn(path.join(root, 'link-to-nfs', 'scratch'), 'nfs4');
    // sshfs mounted over a tmpfs: the upper one.
    refusedOn(path.join(root, 'over'), 'fuse.sshfs');
    expect(checkNodeLocal(path.join(root, 'with', 'x'), '$TMPDIR', info)).toMatch(/on overlay at \/: node-local$/);
    expect(checkNodeLocal(path.join(root, 'tmpfs', 'ds-x'), '--scratch', info)).toBe(`scratch ${path.join(root, 'tmpfs', 'ds-x')} (from --scratch) is on tmpfs at ${root}/tmpfs: node-local`);
    expect(checkNodeLocal(path.join(root, 'ext4'), '$DS_SCRATCH', info)).toMatch(/is on ext4 at .*: node-local$/);
    // No table, or one that holds no mount: said, not passed over in silence.
    expect(checkNodeLocal(root, '--scratch', null)).toMatch(/could not be checked \(no \/proc\/self\/mountinfo\): make sure it is node-local/);
    expect(checkNodeLocal(root, '--scratch', 'garbage\n')).toMatch(/could not be found in \/proc\/self\/mountinfo/);
    for (const t of ['nfs', 'nfs4', 'lustre', 'gpfs', 'cifs', 'beegfs', 'ceph']) expect(NETWORK_FILE_SYSTEMS.has(t), t).toBe(true);
    rmSync(root, { recursive: true, force: true });
  });

  test("this machine's /proc/self/mountinfo classifies the test's temporary folder as node-local", () => {
    const tmp = tempDir('ds-scratch-here-');
    const real = readFileSync('/proc/self/mountinfo', 'utf8');
    const mount = mountOf(realpathSync(tmp), real);
    expect(mount).not.toBeNull();
    expect(NETWORK_FILE_SYSTEMS.has(mount!.fsType)).toBe(false);
    expect(checkNodeLocal(path.join(tmp, 'ds-study'), '--scratch')).toBe(`scratch ${path.join(tmp, 'ds-study')} (from --scratch) is on ${mount!.fsType} at ${mount!.mountPoint}: node-local`);
  });
});

describe('publishing a run folder, in process', () => {
  const runFolder = (root: string, name: string, content: string): string => {
    const run = path.join(root, name);
    mkdirSync(path.join(run, 'workspace'), { recursive: true });
    writeFileSync(path.join(run, 'events.db'), content);
    writeFileSync(path.join(run, 'workspace', 'notes.md'), `${content} notes\n`);
    return run;
  };

  test('an open store (a -wal or -shm beside it) is not published (publish_store_open); a sealed instance is never replaced (publish_already_published); a stopped copy is', () => {
    const root = tempDir('ds-publish-');
    const into = path.join(root, 'study', 'instances');
    const open = runFolder(root, 'open', 'open store');
    writeFileSync(path.join(open, 'events.db-wal'), 'wal');
    for (const publish of [publishSealed, publishStopped]) {
      const error = caughtOf(() => publish(open, into, 'A-r1'));
      expect(error).toBeInstanceOf(PublishError);
      expect((error as PublishError).errorCode).toBe('publish_store_open');
      expect((error as PublishError).exitCode).toBe(1);
      expect((error as PublishError).message).toContain('events.db-wal exists');
    }
    expect(existsSync(path.join(into, 'A-r1'))).toBe(false);

    const first = runFolder(root, 'first', 'first run');
    expect(publishSealed(first, into, 'A-r1')).toBe(path.join(into, 'A-r1'));
    expect(folderState(path.join(into, 'A-r1'))).toEqual(folderState(first));
    // No dot-folder of the publish is left.
    expect(readdirSync(into)).toEqual(['A-r1']);
    const second = runFolder(root, 'second', 'second run');
    const publishedBefore = folderState(into);
    const caught = caughtOf(() => publishSealed(second, into, 'A-r1'));
    expect(caught).toBeInstanceOf(PublishError);
    expect((caught as PublishError).errorCode).toBe('publish_already_published');
    expect(folderState(into)).toEqual(publishedBefore);

    const stoppedInto = path.join(root, 'study', 'stopped');
    publishStopped(first, stoppedInto, 'B-r1');
    publishStopped(second, stoppedInto, 'B-r1');
    expect(readdirSync(stoppedInto)).toEqual(['B-r1']);
    expect(readFileSync(path.join(stoppedInto, 'B-r1', 'events.db'), 'utf8')).toBe('second run');
  });
});
