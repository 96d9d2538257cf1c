import { z } from 'zod';
import { defineEvent, Identifier, ShortText } from '../event-definition.js';

const ModelCall = {
  wake_id: Identifier,
  adapter: z.enum(['reference', 'openai', 'replay', 'local', 'anthropic', 'gemini']),
  model_id: ShortText,
  params: z.strictObject({
    temperature: z.number().nullable(),
    top_p: z.number().nullable(),
    seed: z.number().int().nullable(),
    max_tokens: z.number().int().min(1).nullable(),
  }),
  system_fingerprint: z.string().max(200).nullable(),
  latency_ms: z.number().min(0),
};
/** The /1.2.0 and /1.1.0 shapes knew three adapters. */
const ModelCallBefore15 = { ...ModelCall, adapter: z.enum(['reference', 'openai', 'replay']) };
/** The shapes of catalogues 1.1.0 and 1.2.0 knew four (before issue 36's hosted APIs). */
const ModelCallBefore36 = { ...ModelCall, adapter: z.enum(['reference', 'openai', 'replay', 'local']) };

const MAX_RAW_OUTPUT_CHARS = 48_000;

const Count = z.number().int().min(0);
/**
 * What the call's context bundle held and left out (DESIGN §6 step 3: "window 40 of 312
 * events, 272 outside"), recorded with the call so the omission is in the record, not only on
 * screen. Null for a call never made (budget_exhausted).
 */
export const ContextCounts = z.strictObject({
  window_events: Count,
  eligible_total: Count,
  omitted_by_count: Count,
  omitted_by_token_cap: Count,
  not_eligible: Count,
  tokens_estimated: Count,
});

const Usage = z.strictObject({ prompt_tokens: Count, completion_tokens: Count });
/** Who counted a token figure: the model's server, the model's own tokenizer, or the runtime's ceil(chars / 4). */
export const TokenCountSource = z.enum(['server', 'tokenizer', 'estimate']);
export const AnswerProtocol = z.enum(['ds-model-output/1', 'ds-model-output/2']);

/**
 * Where a call's prompt-reuse figures come from (issue 34 item 1): `server_timings` — llama.cpp's
 * `timings` (`cache_n` served from its KV cache and `prompt_n` evaluated; a build without
 * `cache_n`, such as b4748, reports only `prompt_n`, and the reused count is then the server's
 * prompt count less it); `server_usage` — OpenAI-style `usage.prompt_tokens_details.cached_tokens`
 * (OpenAI, vLLM with prefix caching); `engine` — the local adapter's own KV cache, counted by it.
 */
export const PromptReuseSource = z.enum(['server_timings', 'server_usage', 'engine']);
export type PromptReuseSource = z.infer<typeof PromptReuseSource>;

/** Prompt tokens served from a cache of an earlier call (`reused_tokens`) and evaluated afresh (`evaluated_tokens`), and who said so. */
export const PromptReuse = z.strictObject({ reused_tokens: Count, evaluated_tokens: Count, source: PromptReuseSource });
export type PromptReuse = z.infer<typeof PromptReuse>;

/**
 * What every call that reached a model says about itself (issue 15 item 3): why the answer
 * ended, what model the response says answered, the prompt's size as counted (and by whom), and
 * how many transport attempts the call took. Null where the adapter cannot know.
 */
const CallRecord = {
  /** The protocol the answer was asked for and checked against. */
  protocol: AnswerProtocol,
  finish_reason: z.string().min(1).max(64).nullable(),
  response_model: z.string().min(1).max(200).nullable(),
  prompt_tokens_counted: Count.nullable(),
  prompt_count_source: TokenCountSource.nullable(),
  attempts: z.number().int().min(1).max(100),
  /** 1.4.0 / 1.3.0 (issue 34): what of the prompt a cache served; null where nobody reported it (and in records before). */
  prompt_reuse: PromptReuse.nullable(),
  /**
   * 1.5.0 / 1.4.0 (issue 36): the provider's own word for why the answer ended, as it said it,
   * from an adapter whose `finish_reason` is the house's mapping of it (Anthropic's `stop_reason`
   * end_turn → stop, max_tokens → length; Gemini's `finishReason` STOP, MAX_TOKENS, SAFETY); null
   * where the adapter maps nothing (an OpenAI-compatible server's finish_reason is its own word)
   * or nobody said.
   */
  provider_finish_reason: z.string().min(1).max(64).nullable(),
  /** Prompt tokens read from a provider's prompt cache (Anthropic cache_read_input_tokens, Gemini cachedContentTokenCount, OpenAI cached_tokens), billed at the cache-read price; null: not reported. Part of usage.prompt_tokens. */
  cache_read_tokens: Count.nullable(),
  /** Prompt tokens written to a provider's prompt cache (Anthropic cache_creation_input_tokens), billed at the cache-write price; null: not reported. Part of usage.prompt_tokens. */
  cache_write_tokens: Count.nullable(),
  /** What the call cost in billionths of a US dollar, from its recorded usage and the configured prices (runtime/call-cost.ts); null: no prices configured. */
  cost_nano_usd: Count.nullable(),
};
/** The call record as catalogue 1.2.0 wrote it (before issue 36's provider finish reason, cache counts and cost). */
const { provider_finish_reason: _provider, cache_read_tokens: _cacheRead, cache_write_tokens: _cacheWrite, cost_nano_usd: _cost, ...CallRecordBefore36 } = CallRecord;
/** The call record as catalogue 1.1.0 wrote it (before prompt_reuse). */
const { prompt_reuse: _reuse, ...CallRecordBefore34 } = CallRecordBefore36;

/**
 * A model call that answered with text the protocol accepts; `raw_output` is stored verbatim
 * before anything uses it. 1.3.0 (issue 15): the call record above; `usage_source` replaces
 * `usage_estimated` (true ⇒ "estimate", false ⇒ "server").
 */
/** An answer's own fields, the same in 1.3.0 and 1.4.0 (which adds the call record's prompt_reuse). */
const AnsweredFields = {
  context: ContextCounts,
  raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS),
  usage: Usage,
  usage_source: TokenCountSource,
};

export const ModelAnswered = defineEvent(
  'ModelOutputEvent',
  'ModelAnswered',
  '1.5.0',
  z.strictObject({ ...ModelCall, ...CallRecord, ...AnsweredFields }),
  undefined,
  {
    '1.4.0': z.strictObject({ ...ModelCallBefore36, ...CallRecordBefore36, ...AnsweredFields }),
    '1.3.0': z.strictObject({ ...ModelCallBefore36, ...CallRecordBefore34, ...AnsweredFields }),
    '1.2.0': z.strictObject({ ...ModelCallBefore15, context: ContextCounts, raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS), usage: Usage, usage_estimated: z.boolean() }),
  },
);

export const MODEL_CALL_FAILURES = [
  /** No complete answer within the call's timeout; what arrived is in raw_output. */
  'timeout',
  /** Every transport attempt of the pre-registered retry policy failed without an answer. */
  'transport',
  /** The server answered with an error status or with something that is not a completion. */
  'http_error',
  'refusal',
  /** The prompt did not fit the model's context (counted shorter than sent, or over it): nothing of an answer is used. */
  'truncated_prompt',
  /** The answer's stream stopped halfway. */
  'stream_broken',
  /** The answer is not an answer in the run's protocol. */
  'schema_violation',
  /** The answer fails the protocol and ended at its token cap (finish_reason "length"). */
  'length',
  /** The wake grants no model call: none was made. */
  'budget_exhausted',
  /**
   * 1.4.0 (issue 36): the call was not made — what the instance has spent plus the most the call
   * could cost would exceed the pre-registered cost cap (model_calls.cost_cap_usd_per_instance);
   * the controller then stops the instance, recorded and resumable.
   */
  'cost_cap',
] as const;
export const ModelCallFailure = z.enum(MODEL_CALL_FAILURES);
/**
 * The failures that record a call the runtime did not make — the wake granted none, or the cost
 * cap held it back: nothing was asked, nothing spent, and no count of calls counts them.
 */
export const CALLS_NOT_MADE = ['budget_exhausted', 'cost_cap'] as const satisfies readonly (typeof MODEL_CALL_FAILURES)[number][];
/** Whether a recorded failure stands for a call that was made (of any version: `failure` as stored). */
export function callWasMade(failure: unknown): boolean {
  return !(CALLS_NOT_MADE as readonly unknown[]).includes(failure);
}
/** The kinds versions 1.3.0 and 1.2.0 knew: a cost_cap there is no record those versions wrote. */
const ModelCallFailureBefore36 = z.enum(MODEL_CALL_FAILURES.filter((f) => f !== 'cost_cap') as [string, ...string[]]);

/**
 * A model call that did not yield usable output: exactly one event per call, like answers.
 * 1.2.0 (issue 15): the call record, and the usage of an answer that failed (a misbehaving
 * model is not cheap); null for calls that never reached a model (protocol null too only for
 * budget_exhausted, which asked for nothing).
 */
/** A failed call's own fields, the same in 1.2.0 and 1.3.0 (which adds the call record's prompt_reuse). */
const FailedFields = {
  context: ContextCounts.nullable(),
  failure: ModelCallFailure,
  detail: z.string().max(2_000),
  raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS).nullable(),
  usage: Usage.nullable(),
  usage_source: TokenCountSource.nullable(),
};

export const ModelCallFailed = defineEvent(
  'ModelOutputEvent',
  'ModelCallFailed',
  '1.4.0',
  z.strictObject({ ...ModelCall, ...CallRecord, ...FailedFields }),
  undefined,
  {
    '1.3.0': z.strictObject({ ...ModelCallBefore36, ...CallRecordBefore36, ...FailedFields, failure: ModelCallFailureBefore36 }),
    '1.2.0': z.strictObject({ ...ModelCallBefore36, ...CallRecordBefore34, ...FailedFields, failure: ModelCallFailureBefore36 }),
    '1.1.0': z.strictObject({
      ...ModelCallBefore15,
      context: ContextCounts.nullable(),
      failure: z.enum(['timeout', 'http_error', 'refusal', 'schema_violation', 'budget_exhausted']),
      detail: z.string().max(2_000),
      raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS).nullable(),
    }),
  },
);

/**
 * One transport attempt of a model call that brought no answer (connection refused or reset,
 * HTTP 408/409/429/5xx), recorded before the adapter waits and tries again under the
 * pre-registered retry policy (DESIGN §12). The call itself still ends in exactly one
 * ModelAnswered or ModelCallFailed.
 */
export const ModelCallAttemptFailed = defineEvent(
  'ModelOutputEvent',
  'ModelCallAttemptFailed',
  '1.0.0',
  z.strictObject({
    wake_id: Identifier,
    call_number: z.number().int().min(1),
    attempt: z.number().int().min(1).max(100),
    kind: z.string().min(1).max(64),
    detail: z.string().max(2_000),
    latency_ms: z.number().min(0),
    /** The wait before the next attempt; null when none follows (the call then fails as `transport`). */
    backoff_ms: z.number().int().min(0).nullable(),
  }),
);
