// A study's model checked once, before anything of the study is written (issue 31 item 3):
// controller/model-check.ts on replicate 1's plan, and the study's predicted duration said from
// its forecast (design/model-forecast.ts predictedStudyMs: the calls of every instance on one
// server taking the declared parallel slots at once, at most three per block at once).
import { schemaSubsetPolicyOf } from '../schema/model-call-policy.js';
import { checkModelBeforeStart, type ModelCheck } from '../controller/instance-runner.js';
import { buildExperimentPlan } from '../design/experiment-plan.js';
import { blockSlotsOf, resolveModel } from '../design/model-choice.js';
import { durationText, predictedStudyMs } from '../design/model-forecast.js';
import { modelCallRulesOf, type PreRegistration } from '../design/prereg.js';
import type { Scenario } from '../design/scenario.js';
import type { StudyPlan } from '../study-contract/study-folder.js';
import { replicateSeed } from '../study-contract/study-replicates.js';
import { GROUPS } from '../design/groups.js';

/**
 * The check before hour 0 for a whole study (controller/model-check.ts), on replicate 1's plan:
 * refused, nothing of the study is written; passed, the predicted duration of the study is said,
 * and every instance it starts carries this forecast instead of measuring the server again.
 */
export async function checkStudyModel(plan: StudyPlan, prereg: PreRegistration, scenario: Scenario, options: { readonly concurrency: number; readonly log: (line: string) => void }): Promise<ModelCheck | null> {
  const rules = modelCallRulesOf(prereg);
  if (rules === null) return null;
  const model = resolveModel(plan.model, rules.transport_retry, schemaSubsetPolicyOf(rules));
  const first = buildExperimentPlan({ prereg, scenario, seed: replicateSeed(plan.seed, 1), startAt: plan.start_at });
  const check = await checkModelBeforeStart({ plan: first, scenario, prereg, model: model.runtime, protocol: model.protocol, schemaSubset: model.subsetChoice, log: (line) => options.log(`[study] ${line}`) });
  if (check !== null) {
    const study = predictedStudyOf(check, plan, options.concurrency);
    options.log(`[study] predicted: an instance ${durationText(check.forecast.predicted_instance_ms.low)} to ${durationText(check.forecast.predicted_instance_ms.high)}; the study's ${study.instances} instances ${durationText(study.low)} to ${durationText(study.high)} (one server, ${study.atOnce} call(s) at once)${plan.n_expanded > plan.n_initial ? `, more if the expansion rule adds replicates (to n = ${plan.n_expanded})` : ''}`);
  }
  return check;
}

/**
 * The study's predicted duration at the check's forecast: its first round's instances on one
 * server, as many calls at once as the blocks under way let (design/model-choice.ts blockSlotsOf
 * per block), never more than the server's slots for all of them.
 */
export function predictedStudyOf(check: ModelCheck, plan: StudyPlan, concurrency: number): { readonly low: number; readonly high: number; readonly instances: number; readonly blocksAtOnce: number; readonly atOnce: number } {
  const instances = GROUPS.length * plan.n_initial;
  const blocksAtOnce = Math.max(1, Math.min(concurrency, plan.n_initial));
  const atOnce = Math.min(blockSlotsOf(plan.model, GROUPS.length) * blocksAtOnce, blockSlotsOf(plan.model, instances));
  return { ...predictedStudyMs(check.forecast, instances, atOnce), instances, blocksAtOnce, atOnce };
}

/** What the study took against what the check predicted before hour 0 (issue 31 item 3b): said at its end, with what a miss may mean. */
export function studyTimeLine(check: ModelCheck, plan: StudyPlan, concurrency: number, tookMs: number): string {
  const study = predictedStudyOf(check, plan, concurrency);
  return `[study] time: took ${durationText(tookMs)}; the check before hour 0 predicted ${durationText(study.low)} to ${durationText(study.high)} for its first ${study.instances} instances (${check.forecast.speed.prompt_tokens_per_s} prompt tokens/s, ${check.forecast.speed.generated_tokens_per_s} generated tokens/s, ${check.forecast.speed.source})${missOf(tookMs, study)}`;
}

/** Why a study may have taken less than the low end or more than the high end of its prediction. */
function missOf(tookMs: number, predicted: { readonly low: number; readonly high: number }): string {
  if (tookMs < predicted.low) {
    return ": faster than its low end, which evaluates every prompt whole; a server that reuses a cached prompt prefix (llama.cpp's KV cache: a block's groups often send the same one) evaluates less, and no call's record says how much yet";
  }
  if (tookMs > predicted.high) return ': slower than its high end, which has no retries, pauses or a server slowed by other work: see the blocks and the usable data below';
  return '';
}
