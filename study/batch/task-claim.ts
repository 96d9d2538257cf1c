// Who runs an index of a batch plan now, and what the last task of it did (issue 18 item 2, and
// "two tasks given the same index"): STUDY/tasks/<index>.claim is created exclusively (`wx`) by
// the task that runs the index and removed when it ends; a second task finds it and is refused,
// unless it is the same scheduler task come back (a Slurm requeue keeps the array job and task
// ids; a Kubernetes retry keeps DS_TASK_ID as the job files set it) or the claimant was a process
// on this host that is gone. STUDY/tasks/<index>.json is the last task's record, read by --status.
import { existsSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { CodedErrorOf } from '../../foundation/typed-error.js';
import { BATCH_FILES } from '../../study-contract/batch-plan.js';

export const TASK_STATES = ['running', 'done', 'stopped', 'failed'] as const;

export const TaskClaim = z.strictObject({
  index: z.number().int().min(0),
  task_id: z.string().min(1).max(300),
  host: z.string().max(300),
  pid: z.number().int(),
  since: z.iso.datetime(),
});
export type TaskClaim = z.infer<typeof TaskClaim>;

export const TaskRecord = z.strictObject({
  index: z.number().int().min(0),
  instance: z.string().min(1).max(32),
  state: z.enum(TASK_STATES),
  task_id: z.string().min(1).max(300),
  host: z.string().max(300),
  /** The run folder on that host's scratch. */
  run_dir: z.string().max(4096),
  /** How many tasks have run this index (a requeue is one more). */
  attempts: z.number().int().min(1),
  updated_at: z.iso.datetime(),
  exit_code: z.number().int().nullable(),
  detail: z.string().max(4000).nullable(),
  /** Wall time of every attempt so far, summed. */
  wall_ms: z.number().int().min(0),
});
export type TaskRecord = z.infer<typeof TaskRecord>;

export class TaskClaimError extends CodedErrorOf<'claimed_by_another_task'>('task', EXIT_CODES.misused) {
  override readonly name = 'TaskClaimError';
}

/** This task's identity as its scheduler gives it: what a requeue of it keeps. */
export function taskIdentity(env: NodeJS.ProcessEnv): string {
  if (env['DS_TASK_ID']) return `task:${env['DS_TASK_ID']}`;
  if (env['SLURM_ARRAY_JOB_ID'] && env['SLURM_ARRAY_TASK_ID'] !== undefined) return `slurm:${env['SLURM_ARRAY_JOB_ID']}_${env['SLURM_ARRAY_TASK_ID']}`;
  if (env['SLURM_JOB_ID']) return `slurm:${env['SLURM_JOB_ID']}`;
  return `process:${hostname()}:${process.pid}`;
}

export function claimFile(studyDir: string, index: number): string {
  return path.join(studyDir, BATCH_FILES.tasks, `${index}.claim`);
}

export function recordFile(studyDir: string, index: number): string {
  return path.join(studyDir, BATCH_FILES.tasks, `${index}.json`);
}

export function readClaim(studyDir: string, index: number): TaskClaim | null {
  const file = claimFile(studyDir, index);
  if (!existsSync(file)) return null;
  const parsed = TaskClaim.safeParse(safeJson(readFileSync(file, 'utf8')));
  // A claim nobody can read is still a claim: a task refuses to run beside it.
  return parsed.success ? parsed.data : { index, task_id: 'unreadable claim', host: 'unknown', pid: -1, since: new Date(0).toISOString() };
}

export function readTaskRecord(studyDir: string, index: number): TaskRecord | null {
  const file = recordFile(studyDir, index);
  if (!existsSync(file)) return null;
  const parsed = TaskRecord.safeParse(safeJson(readFileSync(file, 'utf8')));
  return parsed.success ? parsed.data : null;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Whether this task may take the index (nothing written): null when it is free, else the claim
 * it takes over (its own earlier attempt, or a process of this host that is gone); refuses
 * (exit 2) while another task holds it.
 */
function claimTakenOver(studyDir: string, index: number, taskId: string): TaskClaim | null {
  const held = readClaim(studyDir, index);
  if (held === null) return null;
  const sameTask = held.task_id === taskId;
  const goneHere = held.host === hostname() && held.pid > 0 && processGone(held.pid);
  if (!sameTask && !goneHere) {
    throw new TaskClaimError('claimed_by_another_task', `instance ${index} is claimed by task ${held.task_id} on host ${held.host} (pid ${held.pid}) since ${held.since}: two tasks were given the same index. Nothing was run or changed. If that task is gone for good (cancelled, its node lost), remove ${claimFile(studyDir, index)} and run this index again`);
  }
  return held;
}

function takeoverNote(held: TaskClaim, taskId: string): string {
  return held.task_id === taskId ? `took over the claim of an earlier attempt of this task (${held.task_id}, host ${held.host}, since ${held.since}): a requeue` : `took over the claim of pid ${held.pid} on this host, which is gone (since ${held.since})`;
}

/**
 * Takes the index for this task, or refuses (exit 2) while another task holds it. Returns what
 * a takeover replaced, to be said on screen (null: the index was free).
 */
export function claimIndex(studyDir: string, index: number, taskId: string): string | null {
  mkdirSync(path.join(studyDir, BATCH_FILES.tasks), { recursive: true });
  const file = claimFile(studyDir, index);
  const mine: TaskClaim = { index, task_id: taskId, host: hostname(), pid: process.pid, since: new Date().toISOString() };
  const text = `${JSON.stringify(mine)}\n`;
  try {
    writeFileSync(file, text, { flag: 'wx' });
    return null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const held = claimTakenOver(studyDir, index, taskId)!;
  writeFileSync(`${file}.tmp-${process.pid}`, text);
  renameSync(`${file}.tmp-${process.pid}`, file);
  return takeoverNote(held, taskId);
}

/**
 * Takes every index of a block for this task, or none: each is checked before any is written (a
 * refusal leaves the study folder as it was), and a claim lost to a race meanwhile gives back
 * those taken. Returns each takeover's note by index.
 */
export function claimIndices(studyDir: string, indices: readonly number[], taskId: string): Map<number, string> {
  for (const index of indices) claimTakenOver(studyDir, index, taskId);
  const notes = new Map<number, string>();
  const taken: number[] = [];
  try {
    for (const index of indices) {
      const note = claimIndex(studyDir, index, taskId);
      taken.push(index);
      if (note !== null) notes.set(index, note);
    }
  } catch (error) {
    for (const index of taken) releaseIndex(studyDir, index, taskId);
    throw error;
  }
  return notes;
}

/** Gives the index back, only if the claim is still this task's. */
export function releaseIndex(studyDir: string, index: number, taskId: string): void {
  const held = readClaim(studyDir, index);
  if (held !== null && held.task_id === taskId && held.pid === process.pid) unlinkSync(claimFile(studyDir, index));
}

/** Writes the index's task record whole (temp file, rename): --status never reads half of one. */
export function writeTaskRecord(studyDir: string, record: TaskRecord): void {
  const file = recordFile(studyDir, record.index);
  const temp = `${file}.tmp-${process.pid}`;
  writeFileSync(temp, `${JSON.stringify(TaskRecord.parse(record), null, 2)}\n`);
  renameSync(temp, file);
}
