// `npm run study -- --status STUDY [--list] [--json]` (issue 18 item 4): every planned instance of a batch
// study as done / running / stopped / missing / failed, from the study folder alone (published
// folders, stopped copies, claims, task records), with the command that reruns what is not done,
// and the study's next step. Reads only; a published folder counts as done when its final head
// verifies with its key (the merge verifies it whole).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { arrayRange, BATCH_FILES, blockOfIndex, indexRange, taskCommand, type TaskUnit } from '../../study-contract/batch-plan.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { instanceDirName } from '../../study-contract/study-replicates.js';
import { readBatchPlan } from './batch-plan-reader.js';
import { publishedIsSealed } from './instance-task.js';
import { readClaim, readTaskRecord } from './task-claim.js';
import { taskUnitOf } from './task-unit.js';

export const STATUS_STATES = ['done', 'running', 'stopped', 'missing', 'failed'] as const;
export type StatusState = (typeof STATUS_STATES)[number];

export interface InstanceStatus {
  readonly index: number;
  readonly instance: string;
  readonly round: 1 | 2;
  readonly state: StatusState;
  readonly detail: string | null;
  readonly rerun: string | null;
  /** A running instance: since when its task has held it (its claim), ISO 8601; null otherwise. */
  readonly since: string | null;
}

export interface StudyStatus {
  readonly study_id: string;
  readonly study_dir: string;
  /** What one task of the plan runs (a block, or an instance before blocks): the unit of `rerun` and `next`. */
  readonly task_unit: TaskUnit;
  readonly planned: number;
  readonly counts: Record<StatusState, number>;
  readonly instances: readonly InstanceStatus[];
  /** The one thing to do next. */
  readonly next: string;
}

export function batchStudyStatus(studyDir: string): StudyStatus {
  const batchPlan = readBatchPlan(studyDir, null);
  const dir = batchPlan.studyDir;
  const unit = taskUnitOf(batchPlan.plan);
  const instances: InstanceStatus[] = batchPlan.instances.map((entry) => {
    const name = instanceDirName(entry.group, entry.replicate);
    const at = (state: StatusState, detail: string | null, rerun: boolean, since: string | null = null): InstanceStatus => ({ index: entry.index, instance: name, round: entry.round, state, detail, rerun: rerun ? taskCommand(dir, unit, entry.index) : null, since });
    const published = path.join(dir, STUDY_FILES.instances, name);
    if (existsSync(published)) {
      const sealed = publishedIsSealed(published, batchPlan);
      return sealed.sealed ? at('done', null, false) : at('failed', `${published} is there but not sealed (${sealed.why}): move it away and rerun`, true);
    }
    const claim = readClaim(dir, entry.index);
    if (claim !== null) return at('running', `task ${claim.task_id} on ${claim.host} since ${claim.since}`, false, claim.since);
    const record = readTaskRecord(dir, entry.index);
    if (existsSync(path.join(dir, BATCH_FILES.stopped, name))) return at('stopped', record?.detail ?? 'stopped', true);
    if (record?.state === 'failed') return at('failed', `exit ${record.exit_code}: ${record.detail ?? 'no detail'}`, true);
    return at('missing', record === null ? null : `last task recorded ${record.state}, published nothing`, true);
  });
  const counts = Object.fromEntries(['done', 'running', 'stopped', 'missing', 'failed'].map((s) => [s, instances.filter((i) => i.state === s).length])) as Record<StatusState, number>;
  const notDone = instances.filter((i) => i.state !== 'done' && i.state !== 'running');
  const roundOneDone = instances.filter((i) => i.round === 1).every((i) => i.state === 'done');
  // In a plan that runs blocks, a member not done is rerun by its block's task (the others of it resume or are found published).
  const toRerun = [...new Set(notDone.map((i) => (unit === 'block' ? blockOfIndex(i.index) : i.index)))];
  const next =
    notDone.length > 0
      ? `run what is not done: ${toRerun.length === 1 ? notDone[0]!.rerun! : `${unit === 'block' ? 'blocks' : 'indices'} ${toRerun.join(',').slice(0, 200)} (e.g. sbatch --array=LIST cluster/slurm/study-task.sbatch, or ${notDone[0]!.rerun})`}`
      : counts.running > 0
        ? `wait for ${counts.running} running task(s)`
        : batchPlan.expansion === null && batchPlan.plan.n_expanded > batchPlan.plan.n_initial && roundOneDone
          ? `round 1 is done: npm run study -- --expand ${dir} (plans round 2 if the pre-registered rule calls for it), then npm run study -- --merge ${dir}`
          : `every planned instance (${unit === 'block' ? `blocks ${arrayRange(batchPlan.instances, unit)}, indices ` : ''}${indexRange(batchPlan.instances)}) is done: npm run study -- --merge ${dir}`;
  return { study_id: batchPlan.plan.study_id, study_dir: dir, task_unit: unit, planned: instances.length, counts, instances, next };
}
