// The batch-scheduler modes of `npm run study` (issue 18; docs/cluster.md): --plan-only,
// --block K (one task: a replicate's A, B and C in lockstep; issue 31), --instance K (one task of
// a plan made before blocks), --shard I/N (several, one after another), --expand, --merge,
// --status. study.ts parses the command line and hands each mode here; the work is in
// study/batch/.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { defaultKeyDir, KEY_FILES, loadOrCreateControllerKey } from '../controller/key-store.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedError } from '../foundation/typed-error.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { expandBatchStudy, mergeBatchStudy, type MergeFinding } from '../study/batch/batch-merge.js';
import { writeBatchPlan, type BatchPlanOptions } from '../study/batch/batch-plan-writer.js';
import { batchStudyStatus } from '../study/batch/batch-status.js';
import { statusText } from './study-status-text.js';
import { runBatchTask, shardIndices, type TaskOptions, type TaskOutcome } from '../study/batch/instance-task.js';
import { runBlockTask, worstExit, type FailedMember } from '../study/batch/block-task.js';
import { readBatchPlan, type BatchPlan } from '../study/batch/batch-plan-reader.js';
import { checkTaskUnit, sharedModelOf, taskUnitOf } from '../study/batch/task-unit.js';
import { blockLine } from '../study/study-block.js';
import { costLines } from '../study/plan-cost.js';
import { exploratoryWords } from '../study-contract/exploratory.js';
import { blockSlotsOf } from '../design/model-choice.js';
import { BLOCK_MEMBERS, indexRange, type TaskUnit } from '../study-contract/batch-plan.js';
import { scratchRootOf } from '../study/batch/node-local-scratch.js';
import { MAX_STUDY_INSTANCES } from '../study-contract/study-folder.js';
import { UsageError } from './command-line.js';
import type { CommandOutput } from './command-outcome.js';
import { installGracefulStop } from './operator-stop.js';

/** The scheduler variables a task takes its index from, in the order they are read. */
export const TASK_INDEX_VARIABLES = ['SLURM_ARRAY_TASK_ID', 'JOB_COMPLETION_INDEX'] as const;

/** `K`, or `task`: the scheduler's index (exactly one of TASK_INDEX_VARIABLES set, or both alike). */
export function taskIndexOf(flag: string, text: string, env: NodeJS.ProcessEnv): number {
  let value = text;
  if (text === 'task') {
    const set = TASK_INDEX_VARIABLES.filter((v) => env[v] !== undefined && env[v] !== '');
    if (set.length === 0) throw new UsageError(`--${flag} task: neither ${TASK_INDEX_VARIABLES.join(' nor ')} is set: run it as a Slurm array task or a Kubernetes Indexed Job, or give the index (--${flag} K)`);
    const values = new Set(set.map((v) => env[v]));
    if (values.size > 1) throw new UsageError(`--${flag} task: ${set.map((v) => `${v}=${env[v]}`).join(' and ')} disagree: which index is this task? give it as --${flag} K`);
    value = env[set[0]!]!;
  }
  if (!/^(0|[1-9][0-9]{0,5})$/.test(value) || Number(value) >= MAX_STUDY_INSTANCES) throw new UsageError(`--${flag} must be an index from 0 to ${MAX_STUDY_INSTANCES - 1} (or \`task\`), got ${JSON.stringify(value)}${text === 'task' ? ' from the scheduler' : ''}`);
  return Number(value);
}

export async function planOnly(input: BatchPlanOptions): Promise<CommandOutput> {
  const written = await writeBatchPlan(input);
  const { plan, batch } = written;
  const blocks = batch.instances.length / BLOCK_MEMBERS;
  const blockSlots = blockSlotsOf(plan.model, BLOCK_MEMBERS);
  const server = sharedModelOf(plan.model);
  const text = [
    `PLANNED: ${plan.study_id}, ${blocks} block(s) of A, B and C = ${batch.instances.length} instances (round 1: blocks ${written.array}, instance indices ${indexRange(batch.instances)}; n = ${plan.n_initial} per group${plan.n_expanded > plan.n_initial ? `, the pre-registered rule may expand every group to n = ${plan.n_expanded} — planned by --expand once round 1 is done` : ''}), seed ${plan.seed}, ${batch.allowed_keys.length} key(s) allowed to sign`,
    `  plan: ${written.studyFile} (study_version ${plan.study_version}, signed by ${batch.planner_key.slice(0, 16)}…); nothing was run`,
    `  a block: ${blockLine(plan.model)}`,
    `  run each block as a task: npm run study -- --block K --out ${input.outDir}   (Slurm: sbatch --array=${written.array} cluster/slurm/study-task.sbatch; see docs/cluster.md)`,
    ...(server === null ? [] : [`  the blocks share ${server}: at most ⌊its parallel slots ÷ ${blockSlots}⌋ blocks at once (at least one; Slurm: --array=${written.array}%K; docs/cluster.md)`]),
    ...(plan.exploratory === undefined ? [] : [`  EXPLORATORY: ${exploratoryWords(plan.exploratory)}`]),
    ...(plan.cost === undefined ? [] : costLines(plan.cost).map((line) => `  ${line}`)),
    '',
  ].join('\n');
  return {
    exitCode: EXIT_CODES.ok,
    json: { study_id: plan.study_id, plan: written.studyFile, study_version: plan.study_version, task_unit: 'block', instances: batch.instances.length, blocks, array: written.array, block_slots: blockSlots, model_server: server, n_initial: plan.n_initial, n_expanded: plan.n_expanded, cost: plan.cost ?? null, exploratory: plan.exploratory ?? null, allowed_keys: batch.allowed_keys, planner_key: batch.planner_key },
    text,
  };
}

export interface TaskInput {
  readonly outDir: string;
  readonly instance: string | undefined;
  readonly block: string | undefined;
  readonly shard: string | undefined;
  readonly keyDir: string | undefined;
  readonly scratch: string | undefined;
  readonly preregFile: string | undefined;
  readonly scenariosDir: string;
  readonly operator: string;
  readonly log: (line: string) => void;
}

type IndexOutcome = TaskOutcome | FailedMember;

/** The task units a command runs: one block, one instance, or a shard's (blocks or instances, as the plan runs them). */
function taskUnitsOf(input: TaskInput, env: NodeJS.ProcessEnv): { unit: TaskUnit; units: number[]; plan: BatchPlan | undefined } {
  if (input.block !== undefined) return { unit: 'block', units: [taskIndexOf('block', input.block, env)], plan: undefined };
  if (input.instance !== undefined) return { unit: 'instance', units: [taskIndexOf('instance', input.instance, env)], plan: undefined };
  const m = /^([^/]+)\/([1-9][0-9]{0,5})$/.exec(input.shard ?? '');
  if (!m) throw new UsageError(`--shard must be I/N (shard I of N, I from 0 to N-1, or task/N), got ${JSON.stringify(input.shard)}`);
  const shards = Number(m[2]);
  const shard = taskIndexOf('shard', m[1]!, env);
  if (shard >= shards) throw new UsageError(`--shard ${input.shard}: shard ${shard} of ${shards} does not exist (shards are 0 to ${shards - 1})`);
  const plan = readBatchPlan(path.resolve(input.outDir), null);
  const unit = taskUnitOf(plan.plan);
  const units = shardIndices(plan, shard, shards);
  // A plan made before blocks whose model shares a server: refused whole, before any of its instances.
  if (unit === 'instance' && units.length > 0) checkTaskUnit(plan, 'instance', units[0]!);
  input.log(`[task] shard ${shard}/${shards}: ${units.length} ${unit === 'block' ? 'block(s)' : 'instance(s)'}: ${units.join(', ').slice(0, 300)}`);
  return { unit, units, plan };
}

function outcomeLine(o: IndexOutcome): string {
  return 'state' in o ? `index ${o.index} (${o.instance}): ${o.state === 'already_done' ? 'published already, nothing to do' : o.state}${o.published ? ` → ${o.published}` : ''}${o.detail ? ` (${o.detail})` : ''}` : `index ${o.index}: FAILED: ${o.error}`;
}

export async function runTask(input: TaskInput): Promise<CommandOutput> {
  const env = process.env;
  const studyDir = path.resolve(input.outDir);
  const again = input.block !== undefined ? `npm run study -- --block ${input.block} --out ${studyDir}` : input.instance !== undefined ? `npm run study -- --instance ${input.instance} --out ${studyDir}` : `npm run study -- --shard ${input.shard} --out ${studyDir}`;
  const stop = installGracefulStop(input.log, input.instance !== undefined ? 'stopping the instance (the stop recorded, its folder published as stopped: resumable)' : "stopping every member of the block at its wake boundary (each stop recorded, each folder published as stopped: resumable)", again);
  const options: TaskOptions = { studyDir, keyDir: input.keyDir ?? null, scratch: scratchRootOf(input.scratch, env), preregFile: input.preregFile ?? null, scenariosDir: input.scenariosDir, operator: input.operator, signal: stop.signal, stopAtWakeEnd: stop.atWakeEnd, env, log: input.log };
  const { unit, units, plan } = taskUnitsOf(input, env);
  const outcomes: IndexOutcome[] = [];
  const lines: string[] = [];
  const reached: number[] = [];
  for (const u of units) {
    if (stop.atWakeEnd.aborted) break;
    reached.push(u);
    try {
      if (unit === 'block') {
        const block = await runBlockTask(options, u, plan);
        outcomes.push(...block.members);
        lines.push(`block ${block.block} (replicate ${block.replicate}): ${block.members.map(outcomeLine).join('; ')}`);
      } else {
        const one = await runBatchTask(options, u, plan);
        outcomes.push(one);
        lines.push(outcomeLine(one));
      }
    } catch (error) {
      // --block / --instance: its error is the command's (typed, with its exit); a shard goes on with the others.
      if (input.shard === undefined) throw error;
      const exitCode = error instanceof TypedError ? error.exitCode : EXIT_CODES.failed;
      const message = error instanceof Error ? error.message : String(error);
      input.log(`[task] ${unit} ${u} FAILED (exit ${exitCode}): ${message}`);
      const failed = unit === 'block' ? blockMembers(u).map((index) => ({ index, exitCode, error: message })) : [{ index: u, exitCode, error: message }];
      outcomes.push(...failed);
      lines.push(unit === 'block' ? `block ${u}: FAILED: ${message}` : outcomeLine(failed[0]!));
    }
  }
  const notReached = units.filter((u) => !reached.includes(u));
  const worst = worstExit(outcomes);
  const exitCode = notReached.length > 0 && worst === EXIT_CODES.ok ? EXIT_CODES.stopped : worst;
  if (notReached.length > 0) lines.push(`not reached (the task was stopped first): ${unit === 'block' ? 'blocks' : 'indices'} ${notReached.join(', ')}: run the task again`);
  const verdict = exitCode === EXIT_CODES.ok ? 'DONE' : exitCode === EXIT_CODES.stopped ? 'STOPPED (resumable: requeue the task)' : exitCode === EXIT_CODES.misused ? 'REFUSED (do not retry)' : 'FAILED';
  return { exitCode, json: { study_dir: studyDir, task_unit: unit, units, outcomes, not_reached: notReached }, text: `${verdict}: ${lines.join('; ')}\n` };
}

/** The instance indices of block `block`. */
function blockMembers(block: number): number[] {
  return Array.from({ length: BLOCK_MEMBERS }, (_, i) => block * BLOCK_MEMBERS + i);
}

/** The trust anchor of a merge: the public key of the key folder (the planner's). */
function trustedPublicKey(keyDir: string | undefined): Uint8Array {
  const dir = path.resolve(keyDir ?? defaultKeyDir());
  const file = path.join(dir, KEY_FILES.public);
  if (!existsSync(file)) throw new UsageError(`no ${KEY_FILES.public} in ${dir}: the merge trusts the key that planned the study; give --key-dir the folder of that key`);
  return parsePublicKeyHex(readFileSync(file, 'utf8'));
}

function findingLines(findings: readonly MergeFinding[], leftovers: readonly string[]): string[] {
  return [
    ...findings.slice(0, 200).map((f) => `  ${f.kind.toUpperCase()} ${f.instance}${f.index === null ? '' : ` (index ${f.index})`}: ${f.detail}${f.rerun ? `; run: ${f.rerun}` : ''}`),
    ...(findings.length > 200 ? [`  … and ${findings.length - 200} more (--json lists every one)`] : []),
    ...leftovers.map((l) => `  note: ${l} is a publish a crash cut short (not data, ignored): remove it`),
  ];
}

export async function merge(studyDir: string, keyDir: string | undefined, scenariosDir: string, log: (line: string) => void): Promise<CommandOutput> {
  const outcome = await mergeBatchStudy(path.resolve(studyDir), trustedPublicKey(keyDir), scenariosDir, log);
  const { check } = outcome;
  const head = `merge of ${check.batchPlan.plan.study_id}: ${check.verified} of ${check.checked.length} planned instance(s) verified against the plan (${(check.verifyMs / 1000).toFixed(1)} s)`;
  const tail = outcome.report
    ? [`MERGED: report written (verdict ${outcome.report.verdict}${outcome.report.voided ? ', VOID' : ''}; ${(outcome.reportMs / 1000).toFixed(1)} s): ${outcome.files!.json}, ${outcome.files!.markdown}, ${outcome.files!.html}; npm run study -- --recompute ${check.batchPlan.studyDir} rebuilds it`]
    : outcome.lines;
  return {
    exitCode: outcome.exitCode,
    json: { study_id: check.batchPlan.plan.study_id, planned: check.checked.length, verified: check.verified, findings: check.findings, leftovers: check.leftovers, expansion: outcome.expansion, verify_ms: check.verifyMs, report_ms: outcome.reportMs, report: outcome.report, files: outcome.files },
    text: `${[head, ...findingLines(check.findings, check.leftovers), ...tail].join('\n')}\n`,
  };
}

export async function expand(studyDir: string, keyDir: string | undefined, scenariosDir: string, log: (line: string) => void): Promise<CommandOutput> {
  const dir = path.resolve(keyDir ?? defaultKeyDir());
  const key = loadOrCreateControllerKey(dir, { create: false });
  const outcome = await expandBatchStudy(path.resolve(studyDir), key, scenariosDir, log);
  return {
    exitCode: outcome.exitCode,
    json: { study_id: outcome.check.batchPlan.plan.study_id, expand: outcome.expand, already_planned: outcome.alreadyPlanned, task_unit: outcome.unit, array: outcome.array, reasons: outcome.reasons, findings: outcome.check.findings },
    text: `${[...findingLines(outcome.check.findings, outcome.check.leftovers), ...outcome.lines].join('\n')}\n`,
  };
}

export function status(studyDir: string, list: boolean): CommandOutput {
  const s = batchStudyStatus(path.resolve(studyDir));
  return { exitCode: EXIT_CODES.ok, json: { ...s }, text: statusText(s, list) };
}
