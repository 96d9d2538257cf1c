// The model configuration file (issue 15 item 7): `--model-config FILE`, one zod-validated JSON
// object naming the adapter and everything it needs. The file is read once, its bytes hashed;
// every instance started from it copies it into its run folder (model-config.json) and the
// manifest pins the hash (model.config_sha256), so a study's instances provably share one
// configuration. Unknown keys are refused by name. Transport retries and the pause rule are NOT
// here: they are pre-registered (the pre-registration's model_calls), identical for every group.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { AnthropicDialect, GeminiDialect, StructuredOutputDialect } from '../schema/model-call-policy.js';
import { ModelPrices } from '../schema/model-prices.js';
import { ANTHROPIC_BASE_URL, DEFAULT_GEMINI_BASE_URL, DEFAULT_LOCAL_KV_REUSE, GeminiModelConfig, LocalContextTokens, ModelTimeoutMs, ServerBaseUrl, ServerContextTokens } from '../runtime/protocol.js';
import { ParallelSlots, type ModelChoice } from '../design/model-choice.js';

export const DEFAULT_MODEL_TIMEOUT_MS = 60_000;
/**
 * A local model's call timeout when none is given: no server queue to protect, and the prompt is
 * evaluated on this machine's CPU — attention over a prompt of ~10,000 tokens took 10–60 s on
 * the 2 busy cores here (docs/local-model.md), so 60 s cut answers that were on their way.
 */
export const DEFAULT_LOCAL_TIMEOUT_MS = 300_000;
/** The local adapter's context when none is given: room for a full window's prompt and a whole answer with small vocabularies. */
export const DEFAULT_LOCAL_CONTEXT_TOKENS = 16_384;
export const DEFAULT_LOCAL_THREADS = 1;
/** A configuration is a few hundred bytes; more is not one. */
const MAX_CONFIG_BYTES = 64 * 1024;

export class ModelConfigError extends TypedErrorOf('model_config', EXIT_CODES.failed) {
  override readonly name = 'ModelConfigError';
}

const Params = z.strictObject({
  temperature: z.number().min(0).max(2).nullable().default(null),
  top_p: z.number().gt(0).max(1).nullable().default(null),
  seed: z.number().int().nullable().default(null),
  max_tokens: z.number().int().min(1).nullable().default(null),
});
const NO_PARAMS = { temperature: null, top_p: null, seed: null, max_tokens: null };
const TimeoutMs = ModelTimeoutMs.default(DEFAULT_MODEL_TIMEOUT_MS);

/** What a file says alike for the hosted APIs with a key always required (anthropic, gemini): their own keys beside these are the URL, the model id, the key's variable and the dialect. */
const HOSTED_API_FIELDS = {
  params: Params.default(NO_PARAMS),
  timeout_ms: TimeoutMs,
  /** The model's input window when the provider's Models API reports none. */
  context_size: ServerContextTokens.nullable().default(null),
  stream: z.boolean().default(true),
  /** Count each prompt with the provider's token-counting endpoint (count_tokens, :countTokens) before its call; false: estimated, and marked so. */
  count_tokens: z.boolean().default(false),
  /** US dollars per million input, output, cache-read and cache-write tokens (schema/model-prices.ts); absent: not priced. */
  prices: ModelPrices.optional(),
  parallel_slots: ParallelSlots.optional(),
};

export const ModelConfigFile = z.discriminatedUnion('adapter', [
  /** The scripted reference policy (issue 35): a dry run of the apparatus from a file, the study's command line otherwise unchanged. */
  z.strictObject({ adapter: z.literal('reference') }),
  z.strictObject({
    adapter: z.literal('openai'),
    base_url: ServerBaseUrl,
    model_id: z.string().min(1).max(200),
    /** The environment variable holding the API key; null for a local server without one. */
    api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/).nullable().default('OPENAI_API_KEY'),
    structured_output: StructuredOutputDialect.default('json_schema'),
    params: Params.default(NO_PARAMS),
    timeout_ms: TimeoutMs,
    context_size: ServerContextTokens.nullable().default(null),
    stream: z.boolean().default(true),
    /** How many calls the server takes at once (llama-server --parallel): that many members of a study's block may call together. */
    parallel_slots: ParallelSlots.optional(),
    /** US dollars per million input, output, cache-read and cache-write tokens (schema/model-prices.ts): every call record carries its cost; absent: not priced. */
    prices: ModelPrices.optional(),
  }),
  z.strictObject({
    adapter: z.literal('anthropic'),
    base_url: ServerBaseUrl.default(ANTHROPIC_BASE_URL),
    model_id: z.string().min(1).max(200),
    /** The environment variable holding the API key (the API always wants one). */
    api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/).default('ANTHROPIC_API_KEY'),
    structured_output: AnthropicDialect.default('anthropic_json'),
    ...HOSTED_API_FIELDS,
  }),
  z.strictObject({
    adapter: z.literal('gemini'),
    base_url: ServerBaseUrl.default(DEFAULT_GEMINI_BASE_URL),
    model_id: GeminiModelConfig.shape.model_id,
    /** The environment variable holding the API key: required (the Gemini API takes no call without one). */
    api_key_env: GeminiModelConfig.shape.api_key_env,
    structured_output: GeminiDialect.default('gemini_json_schema'),
    ...HOSTED_API_FIELDS,
  }),
  z.strictObject({
    adapter: z.literal('local'),
    /** Relative paths are read from the configuration file's folder. */
    model_file: z.string().min(1).max(4_096),
    model_id: z.string().min(1).max(200).optional(),
    params: Params.default(NO_PARAMS),
    threads: z.number().int().min(1).max(256).default(DEFAULT_LOCAL_THREADS),
    context_size: LocalContextTokens.default(DEFAULT_LOCAL_CONTEXT_TOKENS),
    timeout_ms: ModelTimeoutMs.default(DEFAULT_LOCAL_TIMEOUT_MS),
    /** Keep the KV cache of the prompt's common prefix between calls (runtime/protocol.ts DEFAULT_LOCAL_KV_REUSE). */
    kv_reuse: z.boolean().default(DEFAULT_LOCAL_KV_REUSE),
    /** How many members of a study's block may evaluate their model at once on this machine. */
    parallel_slots: ParallelSlots.optional(),
    /** US dollars per million input, output, cache-read and cache-write tokens (schema/model-prices.ts): every call record carries its cost; absent: not priced. */
    prices: ModelPrices.optional(),
  }),
]);
export type ModelConfigFile = z.infer<typeof ModelConfigFile>;

const PRE_REGISTERED_KEYS = ['retry', 'transport_retry', 'pause', 'pause_after_consecutive_transport_failures', 'max_attempts', 'backoff_ms', 'schema_subset', 'cost_cap', 'cost_cap_usd_per_instance'];

/** The name a local model goes by when none is given: its file's name without `.gguf`. */
export function localModelIdOf(modelFile: string): string {
  return path.basename(modelFile).replace(/\.gguf$/i, '').slice(0, 200) || 'local-model';
}

/** Reads, checks and resolves a model configuration file into the choice it names (paths absolute, the bytes' sha256 pinned). */
export function readModelConfigFile(file: string): ModelChoice {
  const absolute = path.resolve(file);
  let bytes: Buffer;
  try {
    if (statSync(absolute).size > MAX_CONFIG_BYTES) throw new ModelConfigError(`${absolute} is larger than ${MAX_CONFIG_BYTES} bytes: not a model configuration`);
    bytes = readFileSync(absolute);
  } catch (error) {
    if (error instanceof ModelConfigError) throw error;
    throw new ModelConfigError(`cannot read the model configuration ${absolute}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new ModelConfigError(`${absolute} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (json !== null && typeof json === 'object') {
    const preRegistered = Object.keys(json).filter((k) => PRE_REGISTERED_KEYS.includes(k));
    if (preRegistered.length > 0) throw new ModelConfigError(`${absolute}: ${preRegistered.join(', ')}: transport retries, the pause rule, the schema subset policy and the cost cap are pre-registered (the pre-registration's model_calls block, identical for every group), not part of a model configuration: remove them from this file (set model_calls.schema_subset in a copy of the pre-registration, locked)`);
  }
  const parsed = ModelConfigFile.safeParse(json);
  if (!parsed.success) throw new ModelConfigError(`${absolute} is not a valid model configuration: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  const sha256 = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  const c = parsed.data;
  const provenance = { config_file: absolute, config_sha256: sha256 };
  switch (c.adapter) {
    case 'reference':
      return { adapter: 'reference', ...provenance };
    case 'openai':
      return { adapter: 'openai', base_url: c.base_url, model_id: c.model_id, api_key_env: c.api_key_env, params: c.params, dialect: c.structured_output, stream: c.stream, context_size: c.context_size, timeout_ms: c.timeout_ms, ...(c.parallel_slots === undefined ? {} : { parallel_slots: c.parallel_slots }), ...(c.prices === undefined ? {} : { prices: c.prices }), ...provenance };
    case 'anthropic':
      return { adapter: 'anthropic', base_url: c.base_url, model_id: c.model_id, api_key_env: c.api_key_env, params: c.params, dialect: c.structured_output, stream: c.stream, context_size: c.context_size, timeout_ms: c.timeout_ms, count_tokens: c.count_tokens, ...(c.prices === undefined ? {} : { prices: c.prices }), ...(c.parallel_slots === undefined ? {} : { parallel_slots: c.parallel_slots }), ...provenance };
    case 'gemini':
      return { adapter: 'gemini', base_url: c.base_url, model_id: c.model_id, api_key_env: c.api_key_env, params: c.params, dialect: c.structured_output, stream: c.stream, context_size: c.context_size, timeout_ms: c.timeout_ms, count_tokens: c.count_tokens, ...(c.prices === undefined ? {} : { prices: c.prices }), ...(c.parallel_slots === undefined ? {} : { parallel_slots: c.parallel_slots }), ...provenance };
    case 'local': {
      const modelFile = path.resolve(path.dirname(absolute), c.model_file);
      return { adapter: 'local', model_file: modelFile, model_id: c.model_id ?? localModelIdOf(modelFile), params: c.params, threads: c.threads, context_size: c.context_size, timeout_ms: c.timeout_ms, kv_reuse: c.kv_reuse, ...(c.parallel_slots === undefined ? {} : { parallel_slots: c.parallel_slots }), ...(c.prices === undefined ? {} : { prices: c.prices }), ...provenance };
    }
    default: {
      const unhandled: never = c;
      throw new ModelConfigError(`unknown adapter ${JSON.stringify(unhandled)}`);
    }
  }
}
