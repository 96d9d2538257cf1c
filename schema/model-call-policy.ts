// How the subject's model is asked and what a failing server costs (issue 15 items 1, 4, 5):
// facts the manifest, the pre-registration and the runtime's start message share, so each is
// defined once here.
import { z } from 'zod';

/**
 * How the answer's JSON Schema is sent to an OpenAI-compatible server:
 * - json_schema: OpenAI's strict form, `response_format: {type: "json_schema", json_schema: {name, strict, schema}}`;
 * - vllm: vLLM's OpenAI-compatible server, `response_format: {type: "json_schema", json_schema: {name, schema}}`, decoded by its guided-decoding backend (issue 36);
 * - ollama: Ollama's OpenAI-compatible endpoint, the same form, which it turns into its `format` (issue 36);
 * - llamacpp: llama.cpp server's own fields (`response_format: {type: "json_object", schema}` and `json_schema`);
 * - json_object: `response_format: {type: "json_object"}` (valid JSON, no schema);
 * - none: nothing (the prompt alone asks for the format).
 * The local adapter always decodes under a grammar generated from the schema (`gbnf`).
 */
export const STRUCTURED_OUTPUT_DIALECTS = ['json_schema', 'vllm', 'ollama', 'llamacpp', 'json_object', 'none'] as const;
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
 * Every dialect an answer's JSON Schema may be sent in: the openai adapter's, Anthropic's,
 * Gemini's, and `gbnf` (the local adapter's grammar, runtime/answer-grammar.ts). Each has its
 * documented schema subset (runtime/schema-subsets/).
 */
export const AnswerSchemaDialect = z.union([StructuredOutputDialect, AnthropicDialect, GeminiDialect, z.literal('gbnf')]);
export type AnswerSchemaDialect = z.infer<typeof AnswerSchemaDialect>;

/**
 * What a start does with keywords of the answer schema outside its dialect's documented subset
 * (issue 36 item 2), pre-registered (`model_calls.schema_subset`), the same for every group:
 * - refuse: the start is refused before anything is written, naming each keyword;
 * - strip: they are left out of the schema sent (the runtime's zod check still enforces the full
 *   schema on every answer), and the manifest lists what was left out.
 * A structural demand removal cannot meet (e.g. every property required) refuses under both.
 */
export const SCHEMA_SUBSET_POLICIES = ['refuse', 'strip'] as const;
export const SchemaSubsetPolicy = z.enum(SCHEMA_SUBSET_POLICIES);
export type SchemaSubsetPolicy = z.infer<typeof SchemaSubsetPolicy>;
/** A pre-registration without the key (every one locked before issue 36) refuses. */
export const DEFAULT_SCHEMA_SUBSET_POLICY: SchemaSubsetPolicy = 'refuse';

/** The pre-registered policy of a pre-registration's model_calls block (design/prereg.ts ModelCallRules). */
export function schemaSubsetPolicyOf(rules: { readonly schema_subset?: SchemaSubsetPolicy | undefined }): SchemaSubsetPolicy {
  return rules.schema_subset ?? DEFAULT_SCHEMA_SUBSET_POLICY;
}

/** The most keywords a subset record lists (the answer schema has a few hundred nodes). */
export const MAX_REMOVED_KEYWORDS = 2_000;

/**
 * One keyword a dialect's subset left out of the schema sent: where (a JSON Pointer into the
 * schema), which keyword, and what it was sent as instead where it was rewritten rather than
 * dropped (`oneOf` sent as `anyOf`, `const` as a one-value `enum`), null where it was dropped.
 */
export const RemovedKeyword = z.strictObject({
  path: z.string().max(1_000),
  keyword: z.string().min(1).max(200),
  sent_as: z.string().min(1).max(200).nullable(),
});
export type RemovedKeyword = z.infer<typeof RemovedKeyword>;

/** What the manifest records of the subset check: the pre-registered policy and what it left out of the schema sent. */
export const SchemaSubsetRecord = z.strictObject({
  policy: SchemaSubsetPolicy,
  removed: z.array(RemovedKeyword).max(MAX_REMOVED_KEYWORDS),
});
export type SchemaSubsetRecord = z.infer<typeof SchemaSubsetRecord>;

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
