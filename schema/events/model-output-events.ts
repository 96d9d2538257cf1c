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

/** A model call that answered; `raw_output` is stored verbatim before anything uses it. */
export const ModelAnswered = defineEvent('ModelOutputEvent', 'ModelAnswered', '1.1.0', z.strictObject({
  ...ModelCall,
  raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS),
  usage: z.strictObject({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) }),
  /** true when the server reported no usage and the counts are estimates (ceil(chars / 4)): never passed off as measured. */
  usage_estimated: z.boolean(),
}));

/** A model call that did not yield usable output: exactly one event per call, like answers. */
export const ModelCallFailed = defineEvent('ModelOutputEvent', 'ModelCallFailed', '1.0.0', z.strictObject({
  ...ModelCall,
  failure: z.enum(['timeout', 'http_error', 'refusal', 'schema_violation', 'budget_exhausted']),
  detail: z.string().max(2_000),
  raw_output: z.string().max(MAX_RAW_OUTPUT_CHARS).nullable(),
}));
