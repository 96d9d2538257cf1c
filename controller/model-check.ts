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
import type { ModelAdapter, PreflightFacts, SpeedSampleOf } from '../runtime/model-adapter.js';
import { modelAdapterFor } from '../runtime/model-adapters/adapter-for.js';
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

/** The call timeout of a model that is waited for; null for one that is not (reference, replay). */
function timeoutOf(model: RuntimeModelConfig): number | null {
  return model.adapter === 'openai' || model.adapter === 'local' ? model.timeout_ms : null;
}

/** Checks the model against the plan before anything is written; ModelCheckError (nothing written) when it cannot work. */
export async function checkModelBeforeStart(input: ModelCheckInput): Promise<ModelCheck | null> {
  const timeoutMs = timeoutOf(input.model);
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
  const schema = specialisedAnswerSchema(input.protocol, [1]);
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
  // A prompt of the first wake's size (the plan's early wakes; every wake at least): large enough
  // for the server's rates to be its rates on the study's prompts, small enough to fit wherever the
  // first wake fits and to be measured within the call timeout — the largest prompt the
  // pre-registration allows (a full window) can be several times longer than any wake reaches.
  // Cut to what the context holds with the cap.
  const speedSample: SpeedSampleOf = (context, counts) => {
    const firstTokens = counts.find((c) => c.label === 'first')?.tokens ?? 1;
    const charsPerToken = (bounds.first.system.length + bounds.first.user.length) / Math.max(1, firstTokens);
    const wanted = Math.min(firstTokens, context === null ? Infinity : context.size - speedCap - SPEED_CONTEXT_SLACK_TOKENS);
    const userChars = Math.floor(wanted * charsPerToken) - bounds.first.system.length;
    return { label: 'speed', ...speedPrompt(bounds, userChars, nonce), answerCap: speedCap };
  };
  const measurement = await adapter.measure([first, largest], speedSample, schema, timeoutMs);
  const verdict = judgeForecast({ measurement, firstCap: first.answerCap, largestCap: largest.answerCap, largestWindow: bounds.largestWindow, callTimeoutMs: timeoutMs, wakes: input.plan.schedule.wakes.length });
  for (const line of verdict.lines) say(line);
  if (!verdict.ok) throw new ModelCheckError('forecast', `${verdict.reason}. Nothing was written`, preflight.facts);
  return { forecast: verdict.forecast, facts: preflight.facts, lines: [...preflight.lines, ...verdict.lines] };
}
