import { z } from 'zod';
import { defineEvent, Identifier, ShortText } from '../event-definition.js';

const ModelCall = {
  wake_id: Identifier,
  adapter: z.enum(['reference', 'openai', 'replay']),
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

/** A model call that answered; `raw_output` is stored verbatim before anything uses it. */
export const ModelAnswered = defineEvent('ModelOutputEvent', 'ModelAnswered', '1.2.0', z.strictObject({
  ...ModelCall,
  context: ContextCounts,
  raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS),
  usage: z.strictObject({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) }),
  /** true when the server reported no usage and the counts are estimates (ceil(chars / 4)): never passed off as measured. */
  usage_estimated: z.boolean(),
}));

/** A model call that did not yield usable output: exactly one event per call, like answers. */
export const ModelCallFailed = defineEvent('ModelOutputEvent', 'ModelCallFailed', '1.1.0', z.strictObject({
  ...ModelCall,
  context: ContextCounts.nullable(),
  failure: z.enum(['timeout', 'http_error', 'refusal', 'schema_violation', 'budget_exhausted']),
  detail: z.string().max(2_000),
  raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS).nullable(),
}));
