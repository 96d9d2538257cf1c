// What a new study will cost (issue 35 item 2; study-contract/plan-cost.ts): counted from its plan
// and pre-registration — instances, each replicate's wakes from its own seeded schedule (the
// schedule every instance of that replicate gets: design/wake-schedule.ts), one model call per
// wake — and, where the model's server was checked before hour 0, its time and tokens predicted
// at the measured speed (design/model-forecast.ts). Said on screen and kept in study.json.
import { durationText, predictedCallParts, predictedCallTokens, type CallTokens } from '../design/model-forecast.js';
import { callCostNanoUsd, worstCallCostNanoUsd } from '../runtime/call-cost.js';
import { configuredPricesOf } from '../runtime/configured-prices.js';
import { usdText } from '../schema/cost-summary.js';
import type { ModelPrices } from '../schema/model-prices.js';
import { modelCallRulesOf, type PreRegistration } from '../design/prereg.js';
import { seededRandom } from '../design/seeded-random.js';
import { buildWakeSchedule } from '../design/wake-schedule.js';
import { GROUPS } from '../design/groups.js';
import type { ModelCheck } from '../controller/instance-runner.js';
import type { ModelChoice } from '../design/model-choice.js';
import { adapterOf } from '../runtime/model-adapters/adapter-list.js';
import { PlanCost } from '../study-contract/plan-cost.js';
import { StudyPlan as StudyPlanSchema, type StudyPlan } from '../study-contract/study-folder.js';
import { exploratoryWords } from '../study-contract/exploratory.js';
import { replicateSeed } from '../study-contract/study-replicates.js';
import { predictedStudyOf } from './study-model-check.js';

/** A check before hour 0 and the blocks the study runs at once (its predicted duration depends on both), with where that number comes from. */
export interface CostPrediction {
  readonly check: ModelCheck;
  readonly concurrency: number;
  readonly concurrencySource: string;
}

/**
 * The plan's cost; `prediction` the check before hour 0, or why there is none (said in the plan).
 * Bounded: one schedule per replicate, at most n_expanded ≤ MAX_REPLICATES_PER_GROUP of them.
 */
export function planCostOf(plan: StudyPlan, prereg: PreRegistration, prediction: CostPrediction | string): PlanCost {
  const wakes = Array.from({ length: plan.n_expanded }, (_, k) => buildWakeSchedule(prereg, seededRandom(replicateSeed(plan.seed, k + 1)), plan.start_at).wakes.length);
  const callsUpTo = (n: number): number => GROUPS.length * wakes.slice(0, n).reduce((sum, w) => sum + w, 0);
  const roundOneCalls = callsUpTo(plan.n_initial);
  const forecast = typeof prediction === 'string' ? null : prediction.check.forecast;
  const predicted = typeof prediction === 'string' ? null : predictionOf(prediction, plan, roundOneCalls, callsUpTo(plan.n_expanded));
  return PlanCost.parse({
    instances: { round_1: GROUPS.length * plan.n_initial, at_most: GROUPS.length * plan.n_expanded },
    wakes_per_instance: { min: Math.min(...wakes), max: Math.max(...wakes) },
    model_calls: { round_1: roundOneCalls, at_most: callsUpTo(plan.n_expanded) },
    attempts_per_call_at_most: modelCallRulesOf(prereg)?.transport_retry.max_attempts ?? 1,
    predicted,
    not_predicted: forecast === null ? prediction : null,
  });
}

function predictionOf(prediction: CostPrediction, plan: StudyPlan, roundOneCalls: number, mostCalls: number): NonNullable<PlanCost['predicted']> {
  const { forecast } = prediction.check;
  const study = predictedStudyOf(prediction.check, plan, prediction.concurrency);
  const perCall = predictedCallTokens(forecast);
  return {
    speed: `${forecast.speed.prompt_tokens_per_s} prompt tokens/s, ${forecast.speed.generated_tokens_per_s} generated tokens/s (${forecast.speed.source}), measured by the check before hour 0`,
    instance_ms: forecast.predicted_instance_ms,
    round_1_ms: { low: study.low, high: study.high },
    blocks_at_once: study.blocksAtOnce,
    blocks_at_once_source: prediction.concurrencySource,
    calls_at_once: study.atOnce,
    tokens_per_call: perCall,
    tokens_per_instance: { low: perCall.low * forecast.wakes, high: perCall.high * forecast.wakes },
    tokens_round_1: { low: perCall.low * roundOneCalls, high: perCall.high * roundOneCalls },
    cost: expectedCostOf(predictedCallParts(forecast), configuredPricesOf(plan.model), forecast.wakes, roundOneCalls, mostCalls),
  };
}

/**
 * The expected cost (issue 36): the forecast's tokens per call at the configured prices — low, a
 * typical prompt all at the input price with the speed call's answer; high, the worst a call can
 * cost (runtime/call-cost.ts worstCallCostNanoUsd: the largest prompt, the whole answer cap) —
 * times the calls of an instance, of round 1 and of every group expanded. Null: not priced.
 */
function expectedCostOf(parts: { readonly low: CallTokens; readonly high: CallTokens }, prices: ModelPrices | null, wakes: number, roundOneCalls: number, mostCalls: number): NonNullable<PlanCost['predicted']>['cost'] {
  if (prices === null) return null;
  const low = callCostNanoUsd({ prompt_tokens: parts.low.prompt, completion_tokens: parts.low.answer, cache_read_tokens: 0, cache_write_tokens: 0 }, prices);
  const high = worstCallCostNanoUsd(parts.high.prompt, parts.high.answer, prices);
  const times = (n: number) => ({ low: low * n, high: high * n });
  return { prices, per_call_nano_usd: times(1), per_instance_nano_usd: times(wakes), round_1_nano_usd: times(roundOneCalls), at_most_nano_usd: times(mostCalls) };
}

/** Why a plan predicts no time or tokens: its model calls no server, or (a pre-registration without model-call rules) none was checked. */
export function notPredictedReason(model: ModelChoice): string {
  if (!adapterOf(model.adapter).checkedBeforeStart) return `the ${model.adapter} model calls no model server: no time or tokens to measure`;
  return `the ${model.adapter} model was not checked before hour 0 (the pre-registration records no model-call rules to check it against)`;
}

const count = (x: number): string => x.toLocaleString('en-US');

/** The cost in lines, as the plan says it on screen. */
export function costLines(cost: PlanCost): string[] {
  const w = cost.wakes_per_instance;
  const expands = cost.instances.at_most > cost.instances.round_1;
  const lines = [
    `cost: ${count(cost.instances.round_1)} instances${expands ? ` (up to ${count(cost.instances.at_most)} if the pre-registered rule expands every group)` : ''}, ${w.min === w.max ? w.min : `${w.min}–${w.max}`} wakes each: ${count(cost.model_calls.round_1)} model calls${expands ? ` (up to ${count(cost.model_calls.at_most)})` : ''}, one per wake, each at most ${cost.attempts_per_call_at_most} attempt(s) under the pre-registered transport retry policy`,
  ];
  const p = cost.predicted;
  if (p === null) lines.push(`  time and tokens: not predicted (${cost.not_predicted})`);
  else {
    lines.push(`  predicted at ${p.speed}: an instance ${durationText(p.instance_ms.low)} to ${durationText(p.instance_ms.high)}, ${count(p.tokens_per_instance.low)} to ${count(p.tokens_per_instance.high)} tokens (prompt and answer; ${count(p.tokens_per_call.low)} to ${count(p.tokens_per_call.high)} a call)`);
    lines.push(`  round 1: ${durationText(p.round_1_ms.low)} to ${durationText(p.round_1_ms.high)} at ${p.blocks_at_once} block(s) at once (${p.blocks_at_once_source}) on one server taking ${p.calls_at_once} call(s) at once, ${count(p.tokens_round_1.low)} to ${count(p.tokens_round_1.high)} tokens${expands ? '; more if the rule expands' : ''}`);
    lines.push(...expectedCostLines(p.cost));
  }
  return lines;
}

/** The expected cost on screen: a forecast, said to be one, or that the model is not priced. */
function expectedCostLines(cost: NonNullable<PlanCost['predicted']>['cost']): string[] {
  if (cost === undefined) return [];
  if (cost === null) return ['  expected cost: not stated (the model configuration states no prices; add "prices", or --prices, to have it)'];
  const range = (r: { low: number; high: number }): string => `${usdText(r.low)} to ${usdText(r.high)}`;
  const p = cost.prices;
  return [
    `  expected cost: a forecast from the preflight's token figures at the configured prices (US dollars per million tokens: input ${p.input}, output ${p.output}, cache read ${p.cache_read}, cache write ${p.cache_write}), not a measurement: an instance ${range(cost.per_instance_nano_usd)}, round 1 ${range(cost.round_1_nano_usd)}, at most ${range(cost.at_most_nano_usd)} if every group expands (${range(cost.per_call_nano_usd)} a call; low: a typical prompt at the input price, high: the largest prompt with the whole answer cap)`,
  ];
}

/**
 * A one-machine study's plan as study.json will keep it: its cost stated from the check before
 * hour 0 (`modelCheck`, null when there was none) and said on screen, with the exploratory
 * departure, before anything runs.
 */
export function statedStudyPlan(plan: StudyPlan, prereg: PreRegistration, modelCheck: ModelCheck | null, concurrency: number, log: (line: string) => void): StudyPlan {
  const stated = StudyPlanSchema.parse({ ...plan, cost: planCostOf(plan, prereg, modelCheck === null ? notPredictedReason(plan.model) : { check: modelCheck, concurrency, concurrencySource: 'the study\'s blocks at once: --concurrency, or its default' }) });
  for (const line of costLines(stated.cost!)) log(`[study] ${line}`);
  if (stated.exploratory !== undefined) log(`[study] EXPLORATORY: ${exploratoryWords(stated.exploratory)}`);
  return stated;
}
