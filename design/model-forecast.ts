// What the preflight predicts before hour 0 (issue 31 item 3; DESIGN §12 "Preflight predicts"):
// the plan's first and largest prompts counted by the model's tokenizer against its context, the
// model's measured speed against the call timeout, and the predicted duration of an instance.
// Pure: an adapter's measurement (runtime/model-adapter.ts ModelMeasurement) and the plan's facts
// in, a judgement out — a refusal with what to change, or the forecast (signed into the manifest,
// kept in preflight.jsonl, said on screen) with its warnings.
//
// The rules:
// - the first wake's prompt plus its answer cap must fit the context: else no wake can run (refused);
// - the largest prompt the plan allows plus its cap should fit: else late wakes will be refused as
//   truncated_prompt (a warning: the window may never fill that far);
// - the largest call the plan can send (the largest prompt that fits, with the whole answer cap)
//   must fit the call timeout with TIMEOUT_MARGIN to spare: its prompt timed directly (prompt
//   evaluation slows as prompts grow), its answer at the measured generation rate; else it is
//   refused, naming the timeout that would fit;
// - an instance is predicted between `low` (every wake a typical prompt with an answer as long as
//   the speed call's) and `high` (every wake the largest call).
import { z } from 'zod';
import { SPEED_SOURCES, type MeasuredSpeed, type ModelMeasurement } from '../runtime/model-adapter.js';
import { MAX_MODEL_TIMEOUT_MS } from '../runtime/protocol.js';

export const FORECAST_VERSION = '1.0.0';
/** The largest call's predicted time × this must be within the call timeout. */
export const TIMEOUT_MARGIN = 1.25;
/** The speed call's answer cap: enough tokens to time generation, little enough to be quick. */
export const SPEED_ANSWER_TOKENS = 64;
/** Below this answer cap a whole answer of the protocol rarely fits: no smaller cap is advised. */
export const MIN_ADVISED_ANSWER_TOKENS = 512;

const Tokens = z.number().int().min(0);
const Ms = z.number().int().min(0);

export const ModelForecast = z.strictObject({
  forecast_version: z.literal(FORECAST_VERSION),
  context_size: Tokens.nullable(),
  context_source: z.string().max(500).nullable(),
  first_wake_prompt_tokens: Tokens,
  largest_prompt_tokens: Tokens,
  prompt_count_source: z.enum(['server', 'tokenizer', 'estimate']),
  answer_cap_tokens: Tokens,
  largest_window: z.strictObject({ events: Tokens, tokens_estimated: Tokens }),
  /** null: the context is unknown, nothing to check against. */
  late_wakes_fit: z.boolean().nullable(),
  /** The rates on a prompt of the first wake's size. */
  speed: z.strictObject({ prompt_tokens_per_s: z.number().min(0), generated_tokens_per_s: z.number().min(0), source: z.enum(SPEED_SOURCES), measured_prompt_tokens: Tokens, measured_generated_tokens: Tokens }),
  /** The largest sendable prompt timed on its own (null: no longer than the typical one, so not timed apart). */
  largest_prompt_timed: z.strictObject({ prompt_tokens: Tokens, prompt_ms: Ms }).nullable(),
  call_timeout_ms: Ms,
  timeout_margin: z.number().min(1),
  predicted_largest_call_ms: Ms,
  predicted_instance_ms: z.strictObject({ low: Ms, high: Ms }),
  wakes: Tokens,
  warnings: z.array(z.string().max(2_000)).max(16),
});
export type ModelForecast = z.infer<typeof ModelForecast>;

export interface ForecastInput {
  readonly measurement: ModelMeasurement;
  /** The answer caps the first and the largest prompt are sent with (runtime/answer-cap.ts). */
  readonly firstCap: number;
  readonly largestCap: number;
  readonly largestWindow: { readonly events: number; readonly tokensEstimated: number };
  readonly callTimeoutMs: number;
  readonly wakes: number;
}

export type ForecastVerdict = { readonly ok: true; readonly forecast: ModelForecast; readonly lines: readonly string[] } | { readonly ok: false; readonly reason: string; readonly lines: readonly string[] };

/** How each way of timing a call is said. */
const SPEED_SOURCE_WORDS: Readonly<Record<MeasuredSpeed['source'], string>> = {
  server_timings: "the server's timings",
  engine_timings: "the engine's timings, taken by the adapter",
  wall: 'wall clock: lower bounds',
};

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const durationText = (ms: number): string => (ms >= 3_600_000 ? `${(ms / 3_600_000).toFixed(1)} h` : ms >= 60_000 ? `${(ms / 60_000).toFixed(1)} min` : seconds(ms));

function ratesOf(speed: MeasuredSpeed): { promptPerMs: number; generatedPerMs: number } {
  // A rate of nothing measured (0 tokens generated) is taken as the prompt's: the call still generated its answer in that time.
  const promptPerMs = speed.prompt_tokens / Math.max(1, speed.prompt_ms);
  const generatedPerMs = speed.generated_tokens > 0 ? speed.generated_tokens / Math.max(1, speed.generated_ms) : promptPerMs;
  return { promptPerMs, generatedPerMs };
}

function countOf(m: ModelMeasurement, label: string): ModelMeasurement['counts'][number] {
  const count = m.counts.find((c) => c.label === label);
  if (count === undefined) throw new RangeError(`the measurement counted no ${label} prompt`);
  return count;
}

/** Judges a measurement: a refusal naming what to change, or the forecast with its warnings. */
export function judgeForecast(input: ForecastInput): ForecastVerdict {
  const m = input.measurement;
  const lines = [...m.lines];
  const first = countOf(m, 'first');
  const largest = countOf(m, 'largest');
  const how = first.source === 'estimate' ? 'estimated as ceil(chars / 4): the server has no tokenizer' : `counted by the ${first.source}`;
  const context = m.context;
  const refuse = (reason: string): ForecastVerdict => ({ ok: false, reason, lines: [...lines, `refused: ${reason}`] });
  if (context !== null && first.tokens + input.firstCap > context.size) {
    return refuse(`the first wake's prompt is ${first.tokens} tokens (${how}); with its answer cap of ${input.firstCap} that is ${first.tokens + input.firstCap} tokens, over the model's context of ${context.size} (${context.source}): no wake of this plan can run. Give the model a context of at least ${first.tokens + input.firstCap} tokens (llama-server -c, --context-size), or a smaller answer cap (--max-tokens), or a pre-registration with a smaller window`);
  }
  const warnings: string[] = [];
  const lateFit = context === null ? null : largest.tokens + input.largestCap <= context.size;
  if (lateFit === false) {
    warnings.push(`late wakes may not fit: the largest prompt the plan allows (its window at ${input.largestWindow.events} events, ${input.largestWindow.tokensEstimated} estimated tokens: the pre-registered bounds) is ${largest.tokens} tokens, with its cap ${largest.tokens + input.largestCap}, over the context of ${context!.size}: a wake whose window fills that far is refused as truncated_prompt`);
  }
  const [typical, largestTimed] = m.speeds;
  if (typical === undefined || typical.speed === null) {
    const why = typical === undefined ? 'no speed call was made' : typical.failure;
    return refuse(`the speed call of the first wake's size (${typical?.prompt_tokens ?? first.tokens} prompt tokens) gave no measurement (${why}), so no call of the plan can be timed against the call timeout of ${seconds(input.callTimeoutMs)}; ${typical?.timed_out ? 'a call of the first wake\'s size does not even finish within it: raise --model-timeout-ms ("timeout_ms" in the model configuration), or give the model a faster server' : 'fix the server'}`);
  }
  const speed = typical.speed;
  const { promptPerMs, generatedPerMs } = ratesOf(speed);
  const sendable = sendablePromptTokens(largest.tokens, context?.size ?? null, input.largestCap);
  if (largestTimed !== undefined && largestTimed.speed === null) {
    // Not measurable within the timeout: the typical rates give a lower bound of what it needs (evaluation only slows as prompts grow), and never less than twice the timeout that failed.
    const atLeastMs = Math.min(MAX_MODEL_TIMEOUT_MS, Math.max(2 * input.callTimeoutMs, Math.ceil(((sendable / promptPerMs + input.largestCap / generatedPerMs) * TIMEOUT_MARGIN) / 1000) * 1000));
    const raise = input.callTimeoutMs < MAX_MODEL_TIMEOUT_MS ? `Raise --model-timeout-ms to at least ${atLeastMs} ("timeout_ms" in the model configuration; the check then times it again), give the model a faster server, or pre-register a smaller window` : `The call timeout is the most the tool allows (${MAX_MODEL_TIMEOUT_MS} ms): give the model a faster server (more threads, a GPU), or pre-register a smaller window (retrieval_policy)`;
    return refuse(`the largest prompt the plan can send (${largestTimed.prompt_tokens} tokens) gave no measurement (${largestTimed.failure})${largestTimed.timed_out ? `: it is not even evaluated within the call timeout of ${seconds(input.callTimeoutMs)}, and its wakes would time out. ${raise}` : '; fix the server'}`);
  }
  // Timed directly where it was (prompt evaluation slows as prompts grow), else from the typical rates.
  const largestPromptMs = largestTimed?.speed ? (largestTimed.speed.prompt_ms * sendable) / Math.max(1, largestTimed.speed.prompt_tokens) : sendable / promptPerMs;
  const largestCallMs = Math.round(largestPromptMs + input.largestCap / generatedPerMs);
  const typicalPrompt = typicalPromptTokens(first.tokens, sendable);
  const low = Math.round(input.wakes * (typicalPrompt / promptPerMs + speed.generated_tokens / generatedPerMs));
  const high = input.wakes * largestCallMs;
  lines.push(`speed: ${(promptPerMs * 1000).toFixed(1)} prompt tokens/s, ${(generatedPerMs * 1000).toFixed(1)} generated tokens/s on the first wake's size (${SPEED_SOURCE_WORDS[speed.source]})${largestTimed?.speed ? `; ${((largestTimed.speed.prompt_tokens / Math.max(1, largestTimed.speed.prompt_ms)) * 1000).toFixed(1)} prompt tokens/s on the largest (${largestTimed.speed.prompt_tokens} tokens)` : ''}`);
  lines.push(`predicted: the largest call (${sendable} prompt tokens, ${input.largestCap}-token answer) ${seconds(largestCallMs)} against the call timeout ${seconds(input.callTimeoutMs)}; an instance of ${input.wakes} wakes ${durationText(low)} to ${durationText(high)}`);
  if (largestCallMs * TIMEOUT_MARGIN > input.callTimeoutMs) {
    const callMsAtCap = (cap: number): number => {
      const prompt = sendablePromptTokens(largest.tokens, context?.size ?? null, cap);
      const promptMs = largestTimed?.speed ? (largestTimed.speed.prompt_ms * prompt) / Math.max(1, largestTimed.speed.prompt_tokens) : prompt / promptPerMs;
      return promptMs + cap / generatedPerMs;
    };
    return refuse(`the largest call the plan can send (${sendable} prompt tokens and a ${input.largestCap}-token answer) is predicted to take ${seconds(largestCallMs)} at the measured speed, over the call timeout of ${seconds(input.callTimeoutMs)} with the margin ×${TIMEOUT_MARGIN}: its wakes would time out. ${timeoutAdvice(largestCallMs, input.largestCap, callMsAtCap)}`);
  }
  // Measured against llama.cpp b4748: a pilot's prompts reached 7,241 tokens against a largest of 6,535 (docs/model-protocol.md).
  lines.push(`note: the largest prompt (${largest.tokens} tokens) fills the window to its pre-registered bounds with the state and the workspace listing as at hour 0; what a subject keeps (its state, its files) makes later prompts longer, and the pre-registration bounds neither`);
  for (const w of warnings) lines.push(`warning: ${w}`);
  const forecast = ModelForecast.parse({
    forecast_version: FORECAST_VERSION,
    context_size: context?.size ?? null,
    context_source: context?.source.slice(0, 500) ?? null,
    first_wake_prompt_tokens: first.tokens,
    largest_prompt_tokens: largest.tokens,
    prompt_count_source: first.source,
    answer_cap_tokens: input.largestCap,
    largest_window: { events: input.largestWindow.events, tokens_estimated: input.largestWindow.tokensEstimated },
    late_wakes_fit: lateFit,
    speed: { prompt_tokens_per_s: round1(promptPerMs * 1000), generated_tokens_per_s: round1(generatedPerMs * 1000), source: speed.source, measured_prompt_tokens: speed.prompt_tokens, measured_generated_tokens: speed.generated_tokens },
    largest_prompt_timed: largestTimed?.speed ? { prompt_tokens: largestTimed.speed.prompt_tokens, prompt_ms: Math.round(largestTimed.speed.prompt_ms) } : null,
    call_timeout_ms: input.callTimeoutMs,
    timeout_margin: TIMEOUT_MARGIN,
    predicted_largest_call_ms: largestCallMs,
    predicted_instance_ms: { low, high },
    wakes: input.wakes,
    warnings,
  });
  return { ok: true, forecast, lines };
}

/**
 * What would let the largest call fit, as the tool accepts it: a call timeout within
 * MAX_MODEL_TIMEOUT_MS; else the largest answer cap whose call fits at that timeout (a smaller cap
 * also lets a longer prompt into the context: `callMsAtCap` counts both); else a faster server or
 * a smaller window, when even MIN_ADVISED_ANSWER_TOKENS do not fit.
 */
function timeoutAdvice(largestCallMs: number, cap: number, callMsAtCap: (cap: number) => number): string {
  const neededMs = Math.ceil((largestCallMs * TIMEOUT_MARGIN) / 1000) * 1000;
  if (neededMs <= MAX_MODEL_TIMEOUT_MS) return `Raise --model-timeout-ms to at least ${neededMs} ("timeout_ms" in the model configuration), or lower the answer cap (--max-tokens)`;
  const fits = (c: number): boolean => callMsAtCap(c) * TIMEOUT_MARGIN <= MAX_MODEL_TIMEOUT_MS;
  // Halving from the cap in use: at most log2(cap) steps.
  let advised = cap;
  while (advised >= MIN_ADVISED_ANSWER_TOKENS && !fits(advised)) advised = Math.floor(advised / 2);
  const beyond = `it would need a call timeout of ${neededMs} ms, over the most the tool allows (${MAX_MODEL_TIMEOUT_MS})`;
  if (advised >= MIN_ADVISED_ANSWER_TOKENS) return `${beyond}: run with --model-timeout-ms ${MAX_MODEL_TIMEOUT_MS} --max-tokens ${advised} ("timeout_ms" and "params.max_tokens" in the model configuration), or give the model a faster server`;
  return `${beyond}, and even a ${MIN_ADVISED_ANSWER_TOKENS}-token answer cap does not fit within it: give the model a faster server (more threads, a GPU), or pre-register a smaller window (retrieval_policy)`;
}

/** The largest prompt that can be sent: a prompt over the context (with its answer cap) is never sent. */
function sendablePromptTokens(largestTokens: number, contextSize: number | null, cap: number): number {
  return contextSize === null ? largestTokens : Math.min(largestTokens, Math.max(0, contextSize - cap));
}

/** The prompt a wake is taken to send on average: midway between the first wake's and the largest sendable. */
function typicalPromptTokens(firstTokens: number, sendable: number): number {
  return (firstTokens + sendable) / 2;
}

/**
 * The tokens one model call is predicted to take (prompt and answer), by the rules the forecast's
 * times follow: `low` a typical prompt with an answer as long as the speed call's, `high` the
 * largest sendable prompt with the whole answer cap. Per call: a study multiplies it by its calls.
 */
export function predictedCallTokens(forecast: ModelForecast): { readonly low: number; readonly high: number } {
  const { low, high } = predictedCallParts(forecast);
  return { low: low.prompt + low.answer, high: high.prompt + high.answer };
}

/** The same call's tokens kept apart as prompt and answer, by the same rules: what a price per kind of token is applied to (study/plan-cost.ts). */
export function predictedCallParts(forecast: ModelForecast): { readonly low: CallTokens; readonly high: CallTokens } {
  const sendable = sendablePromptTokens(forecast.largest_prompt_tokens, forecast.context_size, forecast.answer_cap_tokens);
  return { low: { prompt: Math.round(typicalPromptTokens(forecast.first_wake_prompt_tokens, sendable)), answer: forecast.speed.measured_generated_tokens }, high: { prompt: sendable, answer: forecast.answer_cap_tokens } };
}

export interface CallTokens {
  readonly prompt: number;
  readonly answer: number;
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** What a study of `instances` instances takes at the forecast, on one server taking `slots` calls at once. */
export function predictedStudyMs(forecast: ModelForecast, instances: number, slots: number): { readonly low: number; readonly high: number } {
  const atOnce = Math.max(1, Math.min(slots, instances));
  return { low: Math.round((forecast.predicted_instance_ms.low * instances) / atOnce), high: Math.round((forecast.predicted_instance_ms.high * instances) / atOnce) };
}

export { durationText };
