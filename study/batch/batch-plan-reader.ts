// Reading a batch plan back (study-contract/batch-plan.ts), by every step that acts on one: a task, the
// merge, the expansion step, the status. study.json must be a batch plan (1.4.0: one task per
// block; 1.2.0, before blocks: one per instance; study-folder.ts) whose instances follow
// the study's rule, signed over its exact bytes by its planner key, and — where the step has a
// trust anchor of its own (the merge: the key the researcher gives it) — that key must be the
// planner's. expansion.json, when present, must expand exactly this plan, for every group.
import { toHex } from '../../schema/ed25519-keys.js';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BATCH_FILES, BatchPlanError, BLOCK_MEMBERS, checkBatchInstances, checkSignedStudyFile, ExpansionPlan, type BatchBlock, type PlannedInstance } from '../../study-contract/batch-plan.js';
import { readStudyPlan, STUDY_FILES, type StudyPlan } from '../../study-contract/study-folder.js';
import { z } from 'zod';

/** A plan read and checked, with round 2 when the expansion step planned it. */
export interface BatchPlan {
  readonly studyDir: string;
  readonly plan: StudyPlan;
  readonly batch: BatchBlock;
  /** sha256 of study.json's bytes. */
  readonly sha256: string;
  readonly expansion: ExpansionPlan | null;
  /** Every planned instance, round 1 then round 2, by index (index i at position i). */
  readonly instances: readonly PlannedInstance[];
}

/** expansion.json is a few kilobytes an instance at most; read whole, so bounded. */
const MAX_EXPANSION_BYTES = 16 * 1024 * 1024;

/**
 * Reads and checks STUDY's batch plan. `trustedKey`: the one key the caller trusts to have
 * planned it (null: the plan's own planner key, for a task, which checks its own key against
 * the allow-list instead).
 */
export function readBatchPlan(studyDir: string, trustedKey: Uint8Array | null): BatchPlan {
  const dir = path.resolve(studyDir);
  const plan = readStudyPlan(dir);
  const batch = plan.batch;
  if (batch === undefined) throw new BatchPlanError('plan_not_batch', `${path.join(dir, STUDY_FILES.plan)} plans a study for one machine (study_version ${plan.study_version}), not for a batch scheduler: run it with npm run study -- --resume ${dir}; or plan a batch study with npm run study -- --plan-only --out NEW_FOLDER`);
  if (trustedKey !== null && toHex(trustedKey) !== batch.planner_key) {
    throw new BatchPlanError('plan_untrusted', `${path.join(dir, STUDY_FILES.plan)} was planned by key ${batch.planner_key.slice(0, 16)}…, not by the trusted key ${toHex(trustedKey).slice(0, 16)}…: a plan of somebody else, however self-consistent; give --key-dir the folder of the key that planned the study`);
  }
  if (!batch.allowed_keys.includes(batch.planner_key)) throw new BatchPlanError('plan_edited', `${path.join(dir, STUDY_FILES.plan)}: the planner key ${batch.planner_key.slice(0, 16)}… is not on its own allow-list: not a plan --plan-only writes`);
  const sha256 = checkSignedStudyFile(dir, STUDY_FILES.plan, BATCH_FILES.signature, plan.study_id, batch.planner_key);
  checkBatchInstances(batch.instances, plan.seed, 1, plan.n_initial, 1, STUDY_FILES.plan);
  const expansion = readExpansion(dir, plan, batch, sha256);
  return { studyDir: dir, plan, batch, sha256, expansion, instances: [...batch.instances, ...(expansion?.instances ?? [])] };
}

function readExpansion(dir: string, plan: StudyPlan, batch: BatchBlock, studySha256: string): ExpansionPlan | null {
  const file = path.join(dir, BATCH_FILES.expansion);
  if (!existsSync(file)) return null;
  const bytes = readFileSync(file);
  if (bytes.length > MAX_EXPANSION_BYTES) throw new BatchPlanError('expansion_refused', `${file} is ${bytes.length} bytes, over the ${MAX_EXPANSION_BYTES} an expansion plan takes: not one --expand writes`);
  let parsed;
  try {
    parsed = ExpansionPlan.safeParse(JSON.parse(bytes.toString('utf8')));
  } catch (error) {
    throw new BatchPlanError('expansion_refused', `${file} is not JSON (${error instanceof Error ? error.message : String(error)}): damaged; move it away and run npm run study -- --expand ${dir} again`);
  }
  if (!parsed.success) throw new BatchPlanError('expansion_refused', `${file} is not an expansion plan this build reads: ${z.prettifyError(parsed.error)}`);
  checkSignedStudyFile(dir, BATCH_FILES.expansion, BATCH_FILES.expansionSignature, plan.study_id, batch.planner_key);
  const expansion = parsed.data;
  if (expansion.study_id !== plan.study_id || expansion.study_sha256 !== studySha256) throw new BatchPlanError('expansion_refused', `${file} expands another plan (study ${expansion.study_id}, study.json ${expansion.study_sha256}), not this one (${plan.study_id}, ${studySha256})`);
  if (expansion.n_from !== plan.n_initial || expansion.n_to !== plan.n_expanded) throw new BatchPlanError('expansion_refused', `${file} expands n = ${expansion.n_from} → ${expansion.n_to}, the plan's rule n = ${plan.n_initial} → ${plan.n_expanded}`);
  // Every group, never only some (spec §6.2). Signed by the planner, so not an edit: a round 2 that does not follow from the plan.
  try {
    checkBatchInstances(expansion.instances, plan.seed, plan.n_initial + 1, plan.n_expanded, 2, BATCH_FILES.expansion);
  } catch (error) {
    throw error instanceof BatchPlanError ? new BatchPlanError('expansion_refused', `${error.message}: round 2 plans every group's next replicates, as --expand writes it`) : error;
  }
  return expansion;
}

/** The planned instance at `index`; out of range is misuse, with what the plan holds. */
export function plannedAt(batchPlan: BatchPlan, index: number): PlannedInstance {
  const entry = batchPlan.instances[index];
  if (entry !== undefined) return entry;
  const round1 = batchPlan.batch.instances.length;
  const planned = batchPlan.instances.length;
  const expandable = batchPlan.expansion === null && batchPlan.plan.n_expanded > batchPlan.plan.n_initial && index < batchPlan.plan.n_expanded * 3;
  throw new BatchPlanError('index_out_of_range', `index ${index} names no instance of ${batchPlan.studyDir}: the plan holds indices 0-${planned - 1}${planned > round1 ? ` (round 2: ${round1}-${planned - 1})` : ''}${expandable ? `; ${round1}-${batchPlan.plan.n_expanded * 3 - 1} would be the expansion round, which is not planned: it is planned only by npm run study -- --expand ${batchPlan.studyDir} once round 1 is done` : ''}`);
}

/** The planned instances of block `block` (replicate block+1's A, B and C, indices 3·block … 3·block+2); out of range is misuse, with what the plan holds. */
export function plannedBlockAt(batchPlan: BatchPlan, block: number): readonly PlannedInstance[] {
  const first = block * BLOCK_MEMBERS;
  const members = batchPlan.instances.slice(first, first + BLOCK_MEMBERS);
  if (members.length === BLOCK_MEMBERS) return members;
  const round1 = batchPlan.batch.instances.length / BLOCK_MEMBERS;
  const planned = batchPlan.instances.length / BLOCK_MEMBERS;
  const expandable = batchPlan.expansion === null && batchPlan.plan.n_expanded > batchPlan.plan.n_initial && block < batchPlan.plan.n_expanded;
  throw new BatchPlanError('index_out_of_range', `block ${block} names no block of ${batchPlan.studyDir}: the plan holds blocks 0-${planned - 1}${planned > round1 ? ` (round 2: ${round1}-${planned - 1})` : ''}${expandable ? `; ${round1}-${batchPlan.plan.n_expanded - 1} would be the expansion round, which is not planned: it is planned only by npm run study -- --expand ${batchPlan.studyDir} once round 1 is done` : ''}`);
}
