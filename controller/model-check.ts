// The model checked before anything of a new instance (or study) is written (issue 31 items 3
// and 5): the adapter is built here, in the controller, from the configuration the runtime will
// get, and asked (1) its preflight — the server answers, serves the configured model, honours the
// constraint — and (2) to measure the plan's first and largest prompts and its speed
// (controller/prompt-bounds.ts, runtime/model-adapter.ts `measure`), which design/model-forecast.ts
// judges. A refusal leaves nothing behind (the folder is not made yet), so its advice is to change
// the flag it names and run the same command again; the forecast goes into the signed manifest
// and preflight.jsonl, and its predictions on screen. The runtime still checks its model at every
// start (its own preflight): the server may change between now and then.
//
// A model with nothing to measure (the reference policy, a replay) is not checked: null.
import { randomBytes } from 'node:crypto';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import { judgeForecast, SPEED_ANSWER_TOKENS, type ModelForecast } from '../design/model-forecast.js';
import type { PreRegistration } from '../design/prereg.js';
import type { Scenario } from '../design/scenario.js';
import { requestedAnswerCap, sentAnswerCap } from '../runtime/answer-cap.js';
import { specialisedAnswerSchema } from '../runtime/answer-schema.js';
import { answerSchemaToSend, type SubsetChoice } from '../runtime/schema-subsets/schema-to-send.js';
import type { ModelAdapter, PreflightFacts, SpeedSampleOf } from '../runtime/model-adapter.js';
import { adapterOf, callTimeoutMsOf, modelAdapterFor } from '../runtime/model-adapters/adapter-list.js';
import type { ModelProtocol } from '../runtime/model-protocol.js';
import type { RuntimeModelConfig } from '../runtime/protocol.js';
import { ModelCheckError } from './model-check-error.js';
import { promptBoundsOf, speedPrompt } from './prompt-bounds.js';

export interface ModelCheckInput {
  readonly plan: ExperimentPlan;
  readonly scenario: Scenario;
  readonly prereg: PreRegistration;
  readonly model: RuntimeModelConfig;
  readonly protocol: ModelProtocol;
  /** The dialect and the pre-registered subset policy: the probe's schema is sent as every wake's is (design/model-choice.ts ResolvedModel.subsetChoice). */
  readonly schemaSubset: SubsetChoice;
  readonly log: (line: string) => void;
}

export interface ModelCheck {
  readonly forecast: ModelForecast;
  /** The preflight's facts and the measurement's lines, for preflight.jsonl. */
  readonly facts: PreflightFacts;
  readonly lines: readonly string[];
}

/** Tokens the speed prompt leaves free beyond its cap: a chat template's own tokens (llama.cpp b4748 adds 61). */
const SPEED_CONTEXT_SLACK_TOKENS = 256;

/** The largest prompt is timed on its own only when it is this much longer than the typical one. */
const LARGEST_SPEED_CALL_FACTOR = 1.2;

/** The call timeout a model is checked within, when its adapter is checked before hour 0 (runtime/model-adapters/adapter-list.ts); null when it is not (nothing to measure). */
function checkTimeoutOf(model: RuntimeModelConfig): number | null {
  if (!adapterOf(model.adapter).checkedBeforeStart) return null;
  const timeoutMs = callTimeoutMsOf(model);
  if (timeoutMs === null) throw new ModelCheckError('unmeasurable', `the ${model.adapter} adapter is to be checked before hour 0 but states no call timeout to check it within (a bug of the adapter's definition)`, {});
  return timeoutMs;
}

/** Checks the model against the plan before anything is written; ModelCheckError (nothing written) when it cannot work. */
export async function checkModelBeforeStart(input: ModelCheckInput): Promise<ModelCheck | null> {
  const timeoutMs = checkTimeoutOf(input.model);
  if (timeoutMs === null) return null;
  const adapter = modelAdapterFor(input.model);
  try {
    return await checkWith(adapter, timeoutMs, input);
  } finally {
    await adapter.close?.();
  }
}

async function checkWith(adapter: ModelAdapter, timeoutMs: number, input: ModelCheckInput): Promise<ModelCheck> {
  const say = (line: string): void => input.log(`model check: ${line}`);
  const schema = answerSchemaToSend(input.schemaSubset, specialisedAnswerSchema(input.protocol, [1]));
  if (!adapter.preflight || !adapter.measure) throw new ModelCheckError('unmeasurable', `the ${adapter.name} adapter cannot be checked before hour 0 (it has no preflight or measurement)`, {});
  const preflight = await adapter.preflight(schema, timeoutMs);
  for (const line of preflight.lines) say(line);
  if (!preflight.ok) throw new ModelCheckError('refused', `the model failed its check before hour 0: ${preflight.reason}. Nothing was written: fix what it names and run the same command again`, preflight.facts ?? {});

  const bounds = promptBoundsOf(input.plan, input.scenario, input.prereg);
  const budget = input.plan.schedule.wakes[0]?.budget.tokens ?? 0;
  const configured = adapter.params.max_tokens;
  const capOf = (p: { system: string; user: string }): number => sentAnswerCap(requestedAnswerCap(budget, p.system, p.user), configured);
  const first = { label: 'first', ...bounds.first, answerCap: capOf(bounds.first) };
  const largest = { label: 'largest', ...bounds.largest, answerCap: capOf(bounds.largest) };
  const speedCap = sentAnswerCap(SPEED_ANSWER_TOKENS, configured);
  const nonce = randomBytes(6).toString('hex');
  // Two speed calls, each after its own nonce so no prefix cache serves it: one of the first
  // wake's size (the plan's early wakes: the rates an instance's prediction rests on), then one of
  // the largest prompt the plan can send (its window at the bounds, cut to what the context holds
  // with the cap) — timed directly, because prompt evaluation slows as a prompt grows (attention),
  // so rates from a small prompt would promise the largest call too soon. Within the call timeout:
  // a call that cannot be measured within it cannot be made within it either.
  const speedSamples: SpeedSampleOf = (context, counts) => {
    const firstTokens = counts.find((c) => c.label === 'first')?.tokens ?? 1;
    const largestTokens = counts.find((c) => c.label === 'largest')?.tokens ?? firstTokens;
    const charsPerToken = (bounds.first.system.length + bounds.first.user.length) / Math.max(1, firstTokens);
    const room = context === null ? Infinity : context.size - Math.max(speedCap, largest.answerCap) - SPEED_CONTEXT_SLACK_TOKENS;
    const sample = (label: string, tokens: number) => ({ label, ...speedPrompt(bounds, Math.floor(tokens * charsPerToken) - bounds.first.system.length, `${label}-${nonce}`), answerCap: speedCap });
    const typical = Math.min(firstTokens, context === null ? Infinity : context.size - speedCap - SPEED_CONTEXT_SLACK_TOKENS);
    const largestSendable = Math.min(largestTokens, room);
    return largestSendable > typical * LARGEST_SPEED_CALL_FACTOR ? [sample('typical', typical), sample('largest', largestSendable)] : [sample('typical', typical)];
  };
  const measurement = await adapter.measure([first, largest], speedSamples, schema, timeoutMs);
  const verdict = judgeForecast({ measurement, firstCap: first.answerCap, largestCap: largest.answerCap, largestWindow: bounds.largestWindow, callTimeoutMs: timeoutMs, wakes: input.plan.schedule.wakes.length });
  for (const line of verdict.lines) say(line);
  if (!verdict.ok) throw new ModelCheckError('forecast', `${verdict.reason}. Nothing was written`, preflight.facts);
  return { forecast: verdict.forecast, facts: preflight.facts, lines: [...preflight.lines, ...verdict.lines] };
}
