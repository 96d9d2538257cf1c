// A new study's plan (study.json), checked whole before anything of the study is written: the
// key, the pre-registration's lock and form, the bounds, every field study.json holds. One path
// for a study run on one machine (study-runner.ts) and one planned for a batch scheduler
// (study/batch/batch-plan-writer.ts), so the two plans cannot drift apart.
import path from 'node:path';
import { loadOrCreateControllerKey, type ControllerKey } from '../controller/key-store.js';
import type { ModelChoice } from '../design/model-choice.js';
import { readLockedPrereg, type PreRegistration } from '../design/prereg.js';
import type { BatchBlock } from '../study-contract/batch-plan.js';
import { BATCH_STUDY_VERSION, MAX_STUDY_INSTANCES, STUDY_VERSION, StudyError, StudyPlan } from '../study-contract/study-folder.js';
import { GROUPS } from '../design/groups.js';
import { hashCanonical } from '../schema/hash.js';
import { checkedExploratory } from './plan-validity.js';
import { requirePricesForCap } from '../design/cost-cap.js';
import { configuredPricesOf } from '../runtime/configured-prices.js';

/** What a new study's plan is made of, a one-machine study's or a batch plan's (--plan-only). */
export interface NewPlanInput {
  readonly seed: string;
  readonly preregFile: string;
  readonly keyDir: string;
  readonly concurrency: number;
  /** n per group before expansion; default: the pre-registration's initial_n_per_group. */
  readonly n: number | null;
  readonly startAt: string;
  readonly model: ModelChoice;
  readonly studyId: string;
  readonly sameUid: string | null;
  /** --exploratory's reason: the study knowingly departs from its pre-registration (study/plan-validity.ts). Absent or null: it follows it. */
  readonly exploratory?: string | null;
  /** A batch plan's block, made from the checked numbers (absent: a one-machine study, 1.1.0). */
  readonly batch?: (nInitial: number, key: ControllerKey) => BatchBlock;
}

/**
 * A new study's plan, checked whole before anything of the study is written: the key, the
 * pre-registration's lock and form, the bounds, every field study.json holds.
 */
export function checkedNewStudyPlan(input: NewPlanInput): { readonly plan: StudyPlan; readonly prereg: PreRegistration; readonly key: ControllerKey } {
  // Refused before anything is written (DESIGN §8): every instance would refuse it anyway.
  const key = loadOrCreateControllerKey(input.keyDir);
  const locked = readLockedPrereg(input.preregFile, key.keys.publicKey);
  if (!locked.ok) throw new StudyError('prereg_refused', `refusing to start the study: ${locked.check.failures.map((f) => f.message).join('; ')}`);
  const { prereg } = locked;
  // A cost cap no price can hold would refuse every instance: refused here, before the study is written.
  requirePricesForCap(prereg.model_calls?.cost_cap_usd_per_instance, configuredPricesOf(input.model), 'start the study');
  const rule = prereg.expansion_rule;
  const nInitial = input.n ?? rule.initial_n_per_group;
  const nExpanded = Math.max(rule.expanded_n_per_group, nInitial);
  if (nExpanded * GROUPS.length > MAX_STUDY_INSTANCES) throw new StudyError('out_of_bounds', `n = ${nExpanded} per group is ${nExpanded * GROUPS.length} instances, over the ${MAX_STUDY_INSTANCES} a study runs`);
  // The rules the report applies at the end, applied now (issue 35): refused here, not VOID after the last instance.
  const exploratory = checkedExploratory({ nFlag: input.n, nInitial, nExpanded, prereg, preregFile: input.preregFile, exploratory: input.exploratory ?? null });
  const batch = input.batch?.(nInitial, key);
  const parsed = StudyPlan.safeParse({
    study_version: batch === undefined ? STUDY_VERSION : BATCH_STUDY_VERSION,
    study_id: input.studyId,
    seed: input.seed,
    prereg_file: path.resolve(input.preregFile),
    prereg_sha256: hashCanonical(prereg),
    n_initial: nInitial,
    n_expanded: nExpanded,
    concurrency: input.concurrency,
    start_at: input.startAt,
    model: input.model,
    started_at: new Date().toISOString(),
    key_dir: path.resolve(input.keyDir),
    same_uid: input.sameUid,
    ...(batch === undefined ? {} : { batch }),
    ...(exploratory === null ? {} : { exploratory }),
  });
  if (!parsed.success) throw new StudyError('out_of_bounds', `refusing to start the study: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}; nothing was written`);
  return { plan: parsed.data, prereg, key };
}
