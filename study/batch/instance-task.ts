// One instance of a batch plan as a task runs it (issue 18 item 2): the member of a block task
// (block-task.ts, `npm run study -- --block K`: every plan since issue 31) or, for a plan made
// before blocks whose model shares no server, a task of its own (`--instance K`, K or `task`:
// SLURM_ARRAY_TASK_ID / JOB_COMPLETION_INDEX; task-unit.ts says which a plan takes).
// The plan is checked (signed, unedited), the task's key must be on its allow-list, the scratch
// must be node-local; the index is claimed (task-claim.ts); the instance runs on scratch — anew,
// or resumed from this node's scratch or from the stopped copy an earlier attempt published —
// and is published to the study folder once sealed (run-folder-publish.ts), or as a stopped copy
// when stopped (SIGTERM before a time limit, scancel), so a requeue on any node resumes it.
// Exit: 0 sealed and published (or published already) · 3 stopped, resumable (requeue) · 2 a plan
// it cannot run or misuse (never retry) · 1 failed.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { resumeInstance, runNewInstance, type InstanceResult } from '../../controller/instance-runner.js';
import { defaultKeyDir, loadOrCreateControllerKey, type ControllerKey } from '../../controller/key-store.js';
import { readLockedPrereg } from '../../design/prereg.js';
import { EXIT_CODES, type ExitCode } from '../../foundation/exit-codes.js';
import { TypedError } from '../../foundation/typed-error.js';
import type { BlockSeat } from '../../controller/lockstep-block.js';
import { BATCH_FILES, BatchPlanError, BLOCK_MEMBERS, blockOfIndex, type PlannedInstance } from '../../study-contract/batch-plan.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { instanceDirName } from '../../study-contract/study-replicates.js';
import { parsePublicKeyHex, toHex } from '../../schema/ed25519-keys.js';
import { hashCanonical } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { readSignedHeads } from '../../writer/signed-files-check.js';
import { plannedAt, readBatchPlan, type BatchPlan } from './batch-plan-reader.js';
import { checkNodeLocal } from './node-local-scratch.js';
import { copyToScratch, publishSealed, publishStopped } from './run-folder-publish.js';
import { claimIndex, readTaskRecord, releaseIndex, taskIdentity, writeTaskRecord } from './task-claim.js';
import { checkTaskUnit, taskUnitOf } from './task-unit.js';
import { studyScenarioPlace } from '../study-scenario.js';
import { TaskInstanceLog } from './task-instance-log.js';

export interface TaskOptions {
  readonly studyDir: string;
  /** null: the plan's key_dir. */
  readonly keyDir: string | null;
  readonly scratch: { readonly root: string; readonly from: string };
  /** A node's own locked copy of the plan's pre-registration (per-node keys); null: the plan's file. */
  readonly preregFile: string | null;
  readonly scenariosDir: string;
  readonly operator: string;
  readonly signal: AbortSignal;
  /** Stop at the next wake boundary (controller/instance-options.ts); unset: only `signal`. */
  readonly stopAtWakeEnd?: AbortSignal;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
}

export type TaskState = 'done' | 'already_done' | 'stopped' | 'failed';

export interface TaskOutcome {
  readonly index: number;
  readonly instance: string;
  readonly state: TaskState;
  readonly exitCode: ExitCode;
  /** Where the run folder is published (instances/ or stopped/), null when nothing was. */
  readonly published: string | null;
  readonly runDir: string | null;
  readonly detail: string | null;
}

/** The final head of a published folder, checked with its own key, which must be on the plan's allow-list. */
export function publishedIsSealed(dir: string, batchPlan: BatchPlan): { sealed: boolean; why: string } {
  const pub = path.join(dir, RUN_FILES.publicKey);
  const heads = path.join(dir, RUN_FILES.heads);
  if (!existsSync(pub) || !existsSync(heads)) return { sealed: false, why: `it has no ${existsSync(pub) ? RUN_FILES.heads : RUN_FILES.publicKey}` };
  const key = parsePublicKeyHex(readFileSync(pub, 'utf8'));
  if (!batchPlan.batch.allowed_keys.includes(toHex(key))) return { sealed: false, why: `it is signed by key ${toHex(key).slice(0, 16)}…, which the plan does not allow` };
  return readSignedHeads(heads, key).some((line) => line.head?.kind === 'final') ? { sealed: true, why: '' } : { sealed: false, why: 'it has no final signed head' };
}

/** Whether scratch's run folder continues the published stopped copy (same manifest, its heads a prefix). */
function scratchExtends(scratchDir: string, stoppedDir: string): boolean {
  const read = (dir: string, file: string): string | null => (existsSync(path.join(dir, file)) ? readFileSync(path.join(dir, file), 'utf8') : null);
  const manifest = read(scratchDir, RUN_FILES.manifest);
  const heads = read(scratchDir, RUN_FILES.heads);
  const stoppedHeads = read(stoppedDir, RUN_FILES.heads) ?? '';
  return manifest !== null && manifest === read(stoppedDir, RUN_FILES.manifest) && heads !== null && heads.startsWith(stoppedHeads);
}

function taskKey(batchPlan: BatchPlan, keyDir: string | null): ControllerKey {
  const dir = keyDir ?? batchPlan.plan.key_dir ?? defaultKeyDir();
  const key = loadOrCreateControllerKey(dir, { create: false });
  if (!batchPlan.batch.allowed_keys.includes(toHex(key.keys.publicKey))) {
    throw new BatchPlanError('plan_untrusted', `the key in ${dir} (${key.keyId.slice(0, 16)}…) is not on the plan's allow-list (${batchPlan.batch.allowed_keys.map((k) => `${k.slice(0, 16)}…`).join(', ')}): the merge would refuse what it signs; give --key-dir the key the study was planned with, or plan again with --allow-key for this node's controller.pub. Nothing was run or changed`);
  }
  return key;
}

function taskPrereg(batchPlan: BatchPlan, override: string | null, key: ControllerKey): string {
  const file = path.resolve(override ?? batchPlan.plan.prereg_file);
  if (!existsSync(file)) throw new BatchPlanError('prereg_refused', `the pre-registration ${file} is not on this node: the plan needs one that hashes to ${batchPlan.plan.prereg_sha256}, locked by this task's key; give --prereg FILE. Nothing was run or changed`);
  const locked = readLockedPrereg(file, key.keys.publicKey);
  if (!locked.ok) throw new BatchPlanError('prereg_refused', `refusing to run ${file}: ${locked.check.failures.map((f) => f.message).join('; ')}. With one key per node, lock a copy on each node with its key (npm run prereg -- lock COPY --key-dir KEYS) and give it as --prereg COPY. Nothing was run or changed`);
  const sha256 = hashCanonical(locked.prereg);
  if (sha256 !== batchPlan.plan.prereg_sha256) throw new BatchPlanError('prereg_refused', `${file} hashes to ${sha256}, not the plan's pre-registration ${batchPlan.plan.prereg_sha256}: another pre-registration; nothing was run or changed`);
  return file;
}

/** What every index of a task shares: the plan, the task's key and pre-registration (checked), its identity. */
export interface TaskContext {
  readonly options: TaskOptions;
  readonly batchPlan: BatchPlan;
  readonly key: ControllerKey;
  readonly preregFile: string;
  readonly taskId: string;
}

/** The plan's key and pre-registration checks for this task (nothing written); refusals are BatchPlanErrors. */
export function taskContext(options: TaskOptions, batchPlan: BatchPlan): TaskContext {
  const key = taskKey(batchPlan, options.keyDir);
  return { options, batchPlan, key, preregFile: taskPrereg(batchPlan, options.preregFile, key), taskId: taskIdentity(options.env) };
}

/** One planned index as a task found it, before it claims anything: published already (its outcome), or to run. */
export interface IndexToRun {
  readonly entry: PlannedInstance;
  readonly name: string;
  /** Non-null: published and sealed already, nothing to do. */
  readonly done: TaskOutcome | null;
}

/** Looks at `index` (nothing written): published and sealed, to run, or refused (a folder where it is published that is no sealed run). */
export function indexToRun(ctx: TaskContext, index: number): IndexToRun {
  const { batchPlan, options } = ctx;
  const entry = plannedAt(batchPlan, index);
  const name = instanceDirName(entry.group, entry.replicate);
  const publishedDir = path.join(batchPlan.studyDir, STUDY_FILES.instances, name);
  if (!existsSync(publishedDir)) return { entry, name, done: null };
  const found = publishedIsSealed(publishedDir, batchPlan);
  if (!found.sealed) throw new BatchPlanError('published_folder_refused', `${publishedDir} exists but is not a sealed run of this plan (${found.why}): a half-copied or foreign folder where instance ${index} is published; move it away, then run ${taskUnitOf(batchPlan.plan) === 'block' ? `block ${blockOfIndex(index)}` : 'this index'} again. Nothing was run or changed`);
  options.log(`[${name}] index ${index} is published and sealed already (${publishedDir}): nothing to do`);
  return { entry, name, done: { index, instance: name, state: 'already_done', exitCode: EXIT_CODES.ok, published: publishedDir, runDir: null, detail: null } };
}

/** Runs (or resumes, or finds published) the instance at `index` as a task of its own: a plan planned one instance per task (1.2.0) whose model shares no server. */
export async function runBatchTask(options: TaskOptions, index: number, planned?: BatchPlan): Promise<TaskOutcome> {
  const batchPlan = planned ?? readBatchPlan(path.resolve(options.studyDir), null);
  checkTaskUnit(batchPlan, 'instance', index);
  const ctx = taskContext(options, batchPlan);
  const found = indexToRun(ctx, index);
  if (found.done !== null) return found.done;
  options.log(`[${found.name}] ${checkNodeLocal(options.scratch.root, options.scratch.from)}`);
  const takeover = claimIndex(batchPlan.studyDir, index, ctx.taskId);
  if (takeover !== null) options.log(`[${found.name}] ${takeover}`);
  return runClaimed(ctx, found, null);
}

/**
 * Runs an index this task has claimed (claimIndex / claimIndices): on scratch, anew or resumed,
 * then published (sealed, or as a stopped copy); its task record kept; the claim released
 * whatever happens. `seat`: its seat in its block (a block task), null for a task of its own.
 */
export async function runClaimed(ctx: TaskContext, found: IndexToRun, seat: BlockSeat | null): Promise<TaskOutcome> {
  const { options, batchPlan, taskId } = ctx;
  const { entry, name } = found;
  const { index } = entry;
  const studyDir = batchPlan.studyDir;
  const before = readTaskRecord(studyDir, index);
  const runDir = path.join(options.scratch.root, `ds-${batchPlan.plan.study_id}`, name);
  const startedMs = Date.now();
  const record = (state: 'running' | 'done' | 'stopped' | 'failed', exitCode: number | null, detail: string | null): void =>
    writeTaskRecord(studyDir, { index, instance: name, state, task_id: taskId, host: hostname(), run_dir: runDir, attempts: (before?.attempts ?? 0) + 1, updated_at: new Date().toISOString(), exit_code: exitCode, detail, wall_ms: (before?.wall_ms ?? 0) + (Date.now() - startedMs) });
  const again = taskUnitOf(batchPlan.plan) === 'block' ? `run block ${blockOfIndex(index)} again (requeue)` : 'run this index again (requeue)';
  const log = new TaskInstanceLog(name, runDir, options.log);
  try {
    record('running', null, null);
    let result: Pick<InstanceResult, 'status' | 'stopReason'>;
    try {
      result = await runOnScratch(ctx, entry, log, runDir, seat);
    } finally {
      // Its processes have ended: what waited for the run folder is written before the folder is copied.
      log.close();
    }
    const kept = `its processes' lines: ${RUN_FILES.processLog} in it`;
    if (result.status === 'finished') {
      const published = publishSealed(runDir, path.join(studyDir, STUDY_FILES.instances), name);
      rmSync(path.join(studyDir, BATCH_FILES.stopped, name), { recursive: true, force: true });
      record('done', EXIT_CODES.ok, null);
      // Published whole and fsynced: the scratch copy is a duplicate now.
      rmSync(runDir, { recursive: true, force: true });
      options.log(`[${name}] sealed and published to ${published} (${kept})`);
      return { index, instance: name, state: 'done', exitCode: EXIT_CODES.ok, published, runDir, detail: null };
    }
    const published = publishStopped(runDir, path.join(studyDir, BATCH_FILES.stopped), name);
    const detail = result.stopReason ?? 'stopped';
    record('stopped', EXIT_CODES.stopped, detail);
    options.log(`[${name}] STOPPED (${detail}); its closed run folder is published to ${published} (${kept}): ${again} to resume it, on any node`);
    return { index, instance: name, state: 'stopped', exitCode: EXIT_CODES.stopped, published, runDir, detail };
  } catch (error) {
    const exitCode = error instanceof TypedError ? error.exitCode : EXIT_CODES.failed;
    record('failed', exitCode, error instanceof Error ? error.message.slice(0, 4000) : String(error).slice(0, 4000));
    options.log(`[${name}] FAILED; its processes' lines are in ${log.processLog} on this node's scratch (if its run folder was made)`);
    throw error;
  } finally {
    releaseIndex(studyDir, index, taskId);
  }
}

async function runOnScratch(ctx: TaskContext, entry: PlannedInstance, log: TaskInstanceLog, runDir: string, seat: BlockSeat | null): Promise<Pick<InstanceResult, 'status' | 'stopReason'>> {
  const { options, batchPlan, key, preregFile } = ctx;
  const name = instanceDirName(entry.group, entry.replicate);
  const studyDir = batchPlan.studyDir;
  if (existsSync(runDir) && publishedIsSealed(runDir, batchPlan).sealed) {
    log.task(`${runDir} was sealed by an earlier attempt that ended before it published: publishing it now`);
    return { status: 'finished', stopReason: null };
  }
  const stoppedDir = path.join(studyDir, BATCH_FILES.stopped, name);
  const onScratch = existsSync(runDir) && readdirSync(runDir).length > 0;
  const stopped = existsSync(stoppedDir);
  let resume = onScratch;
  if (stopped && onScratch && !scratchExtends(runDir, stoppedDir)) {
    const aside = `${runDir}.superseded-${Date.now()}-${randomBytes(2).toString('hex')}`;
    renameSync(runDir, aside);
    log.task(`this node's scratch held another or older run of this instance than the stopped copy an attempt published; it is kept at ${aside} and the run resumes from ${stoppedDir}`);
  }
  if (stopped && !(existsSync(runDir) && readdirSync(runDir).length > 0)) {
    copyToScratch(stoppedDir, runDir);
    resume = true;
    log.task(`resuming from the stopped copy ${stoppedDir} (copied to ${runDir})`);
  } else if (resume) log.task(`resuming from this node's scratch ${runDir}${stopped ? ' (it continues the published stopped copy)' : ' (an earlier attempt ended before it published anything)'}`);
  const common = {
    runDir,
    keyDir: key.keyDir,
    ...(seat === null ? {} : { block: seat }),
    speed: null,
    signal: options.signal,
    ...(options.stopAtWakeEnd ? { stopAtWakeEnd: options.stopAtWakeEnd } : {}),
    operator: options.operator,
    // The study folder's copy of its scenario (a plan made before issue 35: the checkout's), so a node needs the study folder and the code alone.
    ...studyScenarioPlace(batchPlan.studyDir, options.scenariosDir, batchPlan.plan),
    ...(batchPlan.plan.same_uid ? { isolation: { forceSameUid: batchPlan.plan.same_uid } } : {}),
    // The writer's and the runtime's lines go to the run folder's processes.log, the controller's too (task-instance-log.ts).
    childOutputToRunFolder: true,
    log: (line: string) => log.controller(line),
  };
  // An empty folder an attempt left (made, then lost): the start wants none or an empty one, and the first line written would make it not empty.
  if (!resume && existsSync(runDir)) rmdirSync(runDir);
  log.task(`${resume ? 'resumed' : 'started'} on ${hostname()} in ${runDir}; every line of its processes goes to ${RUN_FILES.processLog} there, published with the folder`);
  if (resume) return resumeInstance(common);
  return runNewInstance({
    ...common,
    preregFile,
    seed: entry.seed,
    group: entry.group,
    startAt: batchPlan.plan.start_at,
    experimentId: batchPlan.plan.study_id,
    replicate: entry.replicate,
    // Random, never derived from the group or the index: the id must not reveal the group (spec §8.5).
    groupBlindId: `inst-${randomBytes(4).toString('hex')}`,
    startedAt: new Date().toISOString(),
    model: batchPlan.plan.model,
  });
}

/** The task units of shard I of N: every planned block (a plan that runs blocks) or index (one before blocks) ≡ I (mod N), in order. */
export function shardIndices(batchPlan: BatchPlan, shard: number, shards: number): number[] {
  const units = taskUnitOf(batchPlan.plan) === 'block' ? batchPlan.instances.filter((i) => i.index % BLOCK_MEMBERS === 0).map((i) => blockOfIndex(i.index)) : batchPlan.instances.map((i) => i.index);
  return units.filter((u) => u % shards === shard);
}
