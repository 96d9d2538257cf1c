// How the subject's model is asked and what a failing server costs (issue 15 items 1, 4, 5):
// facts the manifest, the pre-registration and the runtime's start message share, so each is
// defined once here.
import { z } from 'zod';

/**
 * How the answer's JSON Schema is sent to an OpenAI-compatible server:
 * - json_schema: OpenAI / vLLM, `response_format: {type: "json_schema", json_schema: {name, strict, schema}}`;
 * - llamacpp: llama.cpp server's own fields (`response_format: {type: "json_object", schema}` and `json_schema`);
 * - json_object: `response_format: {type: "json_object"}` (valid JSON, no schema);
 * - none: nothing (the prompt alone asks for the format).
 * The local adapter always decodes under a grammar generated from the schema (`gbnf`).
 */
export const STRUCTURED_OUTPUT_DIALECTS = ['json_schema', 'llamacpp', 'json_object', 'none'] as const;
export const StructuredOutputDialect = z.enum(STRUCTURED_OUTPUT_DIALECTS);
export type StructuredOutputDialect = z.infer<typeof StructuredOutputDialect>;

/**
 * How the answer's JSON Schema is sent to Anthropic's Messages API (issue 36):
 * - anthropic_json: `output_config: {format: {type: "json_schema", schema}}` (JSON outputs; the answer is the text block);
 * - anthropic_tool: one strict tool whose `input_schema` is the schema, forced with `tool_choice: {type: "tool", name}` (the answer is the tool call's input).
 */
export const ANTHROPIC_DIALECTS = ['anthropic_json', 'anthropic_tool'] as const;
export const AnthropicDialect = z.enum(ANTHROPIC_DIALECTS);
export type AnthropicDialect = z.infer<typeof AnthropicDialect>;

/** How it is sent to Gemini's generateContent (issue 36): `generationConfig: {responseMimeType: "application/json", responseJsonSchema: schema}`. */
export const GEMINI_DIALECTS = ['gemini_json_schema'] as const;
export const GeminiDialect = z.enum(GEMINI_DIALECTS);
export type GeminiDialect = z.infer<typeof GeminiDialect>;

/**
 * The pre-registered transport retry policy: attempts per model call where no answer reached
 * the runtime (connection refused or reset, HTTP 408/409/429/5xx), and the waits between them.
 * Identical for every group; an answer, however bad, is never retried.
 */
export const TransportRetryPolicy = z
  .strictObject({
    max_attempts: z.number().int().min(1).max(10),
    backoff_ms: z.array(z.number().int().min(0).max(60_000)).max(9),
  })
  .refine((p) => p.backoff_ms.length === p.max_attempts - 1, { message: 'backoff_ms lists one wait between each two attempts (max_attempts - 1 values)', path: ['backoff_ms'] });
export type TransportRetryPolicy = z.infer<typeof TransportRetryPolicy>;
