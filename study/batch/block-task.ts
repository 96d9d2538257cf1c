// One block of a batch plan, run by a scheduler's task (issue 31 item 1; docs/cluster.md "One task
// per block"): `npm run study -- --block K --out STUDY` (K, or `task`: SLURM_ARRAY_TASK_ID /
// JOB_COMPLETION_INDEX) runs replicate K+1's A, B and C — instance indices 3K, 3K+1, 3K+2 —
// side by side in this one task through one studyBlock (study/study-block.ts): the
// same lockstep, drawn order and declared slots as a one-machine study, every turn appended to
// STUDY/blocks/r<K+1>.jsonl. Each member is what a task of one instance is (instance-task.ts):
// its index claimed, run on node-local scratch (anew, or resumed from this node's scratch or the
// stopped copy an attempt published), published sealed or as a stopped copy, its task record kept.
// The three indices are claimed together or not at all, after every check passed: a block that
// cannot be kept together (a member claimed by another task, a folder where a member is published
// that is no sealed run) runs none of its members. A member published already leaves the block at
// once and holds nobody back. SIGTERM stops every member at its wake boundary (each stop recorded,
// each published as stopped): the task exits 3 and its requeue resumes the block.
import path from 'node:path';
import type { BlockSeat } from '../../controller/lockstep-block.js';
import { EXIT_CODES, type ExitCode } from '../../foundation/exit-codes.js';
import { TypedError } from '../../foundation/typed-error.js';
import { blockLine, studyBlock } from '../study-block.js';
import { readBatchPlan, plannedBlockAt, type BatchPlan } from './batch-plan-reader.js';
import { indexToRun, runClaimed, taskContext, type IndexToRun, type TaskOptions, type TaskOutcome } from './instance-task.js';
import { checkNodeLocal } from './node-local-scratch.js';
import { claimIndices, releaseIndex } from './task-claim.js';
import { checkTaskUnit } from './task-unit.js';

/** A member that failed (its task record says so): the error, with the exit it carries. */
export interface FailedMember {
  readonly index: number;
  readonly exitCode: ExitCode;
  readonly error: string;
}

export interface BlockOutcome {
  readonly block: number;
  readonly replicate: number;
  /** One per member, in index order (A, B, C). */
  readonly members: readonly (TaskOutcome | FailedMember)[];
  /** The worst of the members' exits: misuse (2), failure (1), a stop (3), done (0). */
  readonly exitCode: ExitCode;
}

/** The task's exit of outcomes: misuse (2) before failure (1) before a stop (3) before done (0). */
export function worstExit(outcomes: readonly { exitCode: ExitCode }[]): ExitCode {
  for (const code of [EXIT_CODES.misused, EXIT_CODES.failed, EXIT_CODES.stopped] as const) if (outcomes.some((o) => o.exitCode === code)) return code;
  return EXIT_CODES.ok;
}

/** Runs (or resumes, or finds published) block `block` of the plan; the outcome's exitCode is the task's. */
export async function runBlockTask(options: TaskOptions, block: number, planned?: BatchPlan): Promise<BlockOutcome> {
  const batchPlan = planned ?? readBatchPlan(path.resolve(options.studyDir), null);
  checkTaskUnit(batchPlan, 'block', block);
  const entries = plannedBlockAt(batchPlan, block);
  const replicate = entries[0]!.replicate;
  const ctx = taskContext(options, batchPlan);
  // Every member looked at before anything is claimed or written: a refusal of one refuses the block.
  const found = entries.map((e) => indexToRun(ctx, e.index));
  const toRun = found.filter((f) => f.done === null);
  const say = (line: string): void => options.log(`[block ${block}] ${line}`);
  if (toRun.length === 0) {
    say(`replicate ${replicate}'s A, B and C are published and sealed already: nothing to do`);
    return { block, replicate, members: found.map((f) => f.done!), exitCode: EXIT_CODES.ok };
  }
  say(checkNodeLocal(options.scratch.root, options.scratch.from));
  const studyDir = batchPlan.studyDir;
  const takeovers = claimIndices(studyDir, toRun.map((f) => f.entry.index), ctx.taskId);
  for (const f of toRun) {
    const note = takeovers.get(f.entry.index);
    if (note !== undefined) options.log(`[${f.name}] ${note}`);
  }
  try {
    const lockstep = studyBlock({ studyDir, seed: batchPlan.plan.seed, replicate, model: batchPlan.plan.model });
    say(`replicate ${replicate}: ${toRun.map((f) => f.name).join(', ')} to run; ${blockLine(batchPlan.plan.model)}`);
    const members = await Promise.all(found.map((f) => runMember(f, lockstep.seat(f.entry.group), (seat) => runClaimed(ctx, f, seat))));
    return { block, replicate, members, exitCode: worstExit(members) };
  } finally {
    // runClaimed releases each claim it was given; these are the ones it never got to (an error before it ran).
    for (const f of toRun) releaseIndex(studyDir, f.entry.index, ctx.taskId);
  }
}

/** One member through its seat; it always leaves the block (a member that never leaves holds the others forever). */
async function runMember(found: IndexToRun, seat: BlockSeat, run: (seat: BlockSeat) => Promise<TaskOutcome>): Promise<TaskOutcome | FailedMember> {
  try {
    if (found.done !== null) return found.done;
    return await run(seat);
  } catch (error) {
    // Its task record says failed (runClaimed); the block goes on with the others.
    return { index: found.entry.index, exitCode: error instanceof TypedError ? error.exitCode : EXIT_CODES.failed, error: error instanceof Error ? error.message : String(error) };
  } finally {
    seat.leave();
  }
}
