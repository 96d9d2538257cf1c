// What one task of a batch plan runs, and the refusals when a task asks for another unit
// (issue 31 item 1; docs/cluster.md "One task per block"). A 1.4.0 plan runs blocks: array index k
// is replicate k+1's A, B and C side by side in lockstep, so that the three meet the same model
// server at the same time and no group's calls wait behind other work more often than the
// drawn order allows (DESIGN §12 "Blocks under real load"). A 1.2.0 plan (before blocks) ran one
// instance per task: its instances met whatever load the scheduler put beside each. That is
// harmless where no model is shared (the reference policy, a replay) and the very confound
// blocks remove where one is (a server, or a local model on the node): such a task is refused,
// not run out of its block. Every refusal's advice is a command the tool accepts.
import { blockOfIndex, BatchPlanError, BLOCK_MEMBERS, type TaskUnit } from '../../study-contract/batch-plan.js';
import { BATCH_STUDY_VERSION, runsBlocks, STUDY_FILES, type StudyPlan } from '../../study-contract/study-folder.js';
import type { ModelChoice } from '../../design/model-choice.js';
import { modelFlagsOf } from '../../design/model-choice-flags.js';
import { shellCommandLine } from '../../foundation/shell-word.js';
import type { BatchPlan } from './batch-plan-reader.js';
import path from 'node:path';

export function taskUnitOf(plan: StudyPlan): TaskUnit {
  return runsBlocks(plan) ? 'block' : 'instance';
}

/** The model a block's members would share, in words (null: none is shared: the reference policy, a replay). */
export function sharedModelOf(model: ModelChoice): string | null {
  switch (model.adapter) {
    case 'openai':
      return `the model server ${model.base_url} (${model.model_id})`;
    case 'anthropic':
      return `Anthropic's Messages API at ${model.base_url} (${model.model_id})`;
    case 'gemini':
      // One API key's rate limit (429 RESOURCE_EXHAUSTED) is a load the members share.
      return `the Gemini API at ${model.base_url} (${model.model_id}, the key in ${model.api_key_env})`;
    case 'local':
      return `the local model ${model.model_file}, evaluated on the task's node`;
    case 'reference':
    case 'replay':
      return null;
    default: {
      const unhandled: never = model;
      throw new BatchPlanError('plan_edited', `unknown model ${JSON.stringify(unhandled)}`);
    }
  }
}

/** `npm run study -- --plan-only --out NEW_FOLDER …` with everything the plan was planned with: it writes a plan that runs blocks. */
export function planAgainCommand(plan: StudyPlan): string {
  const words = [
    ...['--plan-only', '--out', 'NEW_FOLDER', '--n', String(plan.n_initial), '--seed', plan.seed, '--study-id', plan.study_id],
    ...(plan.key_dir === undefined ? [] : ['--key-dir', plan.key_dir]),
    ...['--prereg', plan.prereg_file, '--start-at', plan.start_at],
    ...(plan.same_uid ? ['--same-uid', plan.same_uid] : []),
    ...modelFlagsOf(plan.model),
  ];
  return `npm run study -- ${shellCommandLine(words)}`;
}

/** What to add to planAgainCommand for the keys beyond the planner's (their files are not in the plan). */
function otherKeysNote(batchPlan: BatchPlan): string {
  const others = batchPlan.batch.allowed_keys.length - 1;
  return others === 0 ? '' : `, adding --allow-key NODE.pub for each of the ${others} other key(s) the plan allows`;
}

/**
 * Refuses (exit 2, nothing run or written) a task whose unit is not the plan's, or a task of one
 * instance that would run out of its block. `index`: the instance index (for `instance`) or the
 * block (for `block`) the task was given.
 */
export function checkTaskUnit(batchPlan: BatchPlan, asked: TaskUnit, index: number): void {
  const { plan, studyDir } = batchPlan;
  const file = path.join(studyDir, STUDY_FILES.plan);
  const unit = taskUnitOf(plan);
  const shared = sharedModelOf(plan.model);
  if (unit === 'block' && asked === 'instance') {
    throw new BatchPlanError('plan_runs_blocks', `${file} (study_version ${plan.study_version}) runs blocks: one task runs one replicate's A, B and C side by side in lockstep (docs/cluster.md), and instance ${index} is a member of block ${blockOfIndex(index)}; run that block: \`npm run study -- --block ${blockOfIndex(index)} --out ${studyDir}\`. Nothing was run or changed`);
  }
  if (unit === 'instance' && asked === 'block') {
    const first = index * BLOCK_MEMBERS;
    const members = `${first}, ${first + 1} and ${first + 2}`;
    const advice =
      shared === null
        ? `its model shares no server, so its instances ${members} (block ${index}) may run one per task: \`npm run study -- --instance ${first} --out ${studyDir}\` (then ${first + 1} and ${first + 2})`
        : `its model is ${shared}, which one instance per task cannot share fairly; plan the study again as blocks (study_version ${BATCH_STUDY_VERSION}): \`${planAgainCommand(plan)}\`${otherKeysNote(batchPlan)}`;
    throw new BatchPlanError('plan_runs_instances', `${file} (study_version ${plan.study_version}, before blocks) was planned one instance per task, not one block per task: --block does not run it; ${advice}. Nothing was run or changed`);
  }
  if (unit === 'instance' && shared !== null) {
    throw new BatchPlanError(
      'block_not_kept_together',
      `${file} (study_version ${plan.study_version}, before blocks) runs one instance per task, and its model is ${shared}: run so, replicate ${Math.floor(index / BLOCK_MEMBERS) + 1}'s A, B and C would each meet whatever load the scheduler puts beside it, a confound of the server's load and not of the groups (DESIGN §12 "Blocks under real load"), so the plan cannot keep its blocks together and is not run. Plan the study again as blocks (study_version ${BATCH_STUDY_VERSION}), one task per replicate's A, B and C: \`${planAgainCommand(plan)}\`${otherKeysNote(batchPlan)}; then run each block as a task (docs/cluster.md). Nothing was run or changed`,
    );
  }
}
