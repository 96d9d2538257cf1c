// Why one file: the start message's model configuration is one zod discriminated union checked at the process boundary; its variants (openai, anthropic, gemini, local, replay) are built from the bounds defined here, and a file of their own would import those bounds while this one imports the variants back (a cycle at load).
//
// Messages on the Node IPC channel between the experiment controller (parent) and a
// ds-runtime process (child), DESIGN §2 and §6. Every message is validated with zod on
// receipt, on both sides.
//
// This file imports only schema/ and writer/ protocol files, never controller/: the
// runtime process must not load controller code (design/manifest.ts pulls in the
// writer's store and better-sqlite3; the runtime never opens a database). The capability
// flags and the retrieval policy come from schema/, the one definition the controller's
// manifest and pre-registration use too; the controller checks it passes the signed,
// pre-registered values.
import { z } from 'zod';
import { ModelPrices } from '../schema/model-prices.js';
import { Capabilities } from '../schema/capabilities.js';
import { RetrievalPolicy } from '../schema/retrieval-policy.js';
import { Identifier } from '../schema/event-definition.js';
import { Budget, CheckpointRecorded } from '../schema/events/experiment-events.js';
import { PromptReuse } from '../schema/events/model-output-events.js';
import { AnswerSchemaDialect, AnthropicDialect, GeminiDialect, SchemaSubsetPolicy, StructuredOutputDialect, TransportRetryPolicy } from '../schema/model-call-policy.js';
import { ModelProtocol } from './model-protocol.js';
import { DEFAULT_FRAMING, PromptFraming } from './prompt-framing.js';
import { WriterRequestTimeoutMs } from '../writer/protocol.js';

/** The phases of one wake, in order (DESIGN §6 steps 3–8). */
export const WAKE_PHASES = ['observe', 'think', 'plan', 'act', 'remember', 'checkpoint'] as const;
export const WakePhase = z.enum(WAKE_PHASES);
export type WakePhase = z.infer<typeof WakePhase>;


const Count = z.number().int().min(0);
const Seq = z.number().int().min(1);

// ---------------------------------------------------------------------------------------
// parent → child

const ModelParamsSchema = z.strictObject({ temperature: z.number().min(0).max(2).nullable(), top_p: z.number().gt(0).max(1).nullable(), seed: z.number().int().nullable(), max_tokens: z.number().int().min(1).nullable() });

const CallFactsSchema = {
  finish_reason: z.string().nullable(),
  response_model: z.string().nullable(),
  prompt_tokens_counted: Count.nullable(),
  prompt_count_source: z.enum(['server', 'tokenizer', 'estimate']).nullable(),
  attempts: z.number().int().min(1),
  prompt_reuse: PromptReuse.nullable().default(null),
  provider_finish_reason: z.string().nullable().default(null),
  cache_read_tokens: Count.nullable().default(null),
  cache_write_tokens: Count.nullable().default(null),
};
const UsageSchema = z.strictObject({ prompt_tokens: Count, completion_tokens: Count });

/** One recorded model call, as the replay adapter serves it (runtime/model-adapter.ts ModelCallOutcome). */
export const RecordedModelCall = z.strictObject({
  wake_id: Identifier,
  call_number: z.number().int().min(1),
  outcome: z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('answered'), raw_output: z.string(), usage: UsageSchema, usage_source: z.enum(['server', 'tokenizer', 'estimate']), latency_ms: z.number().min(0), system_fingerprint: z.string().nullable(), ...CallFactsSchema }),
    z.strictObject({
      kind: z.literal('failed'),
      failure: z.enum(['timeout', 'transport', 'http_error', 'refusal', 'truncated_prompt', 'stream_broken']),
      detail: z.string(),
      raw_output: z.string().nullable(),
      latency_ms: z.number().min(0),
      usage: UsageSchema.nullable(),
      usage_source: z.enum(['server', 'tokenizer', 'estimate']).nullable(),
      ...CallFactsSchema,
    }),
  ]),
});
export type RecordedModelCall = z.infer<typeof RecordedModelCall>;

/** What the reference policy calls itself in manifests and model events (runtime/model-adapters/reference-policy.ts). */
export const REFERENCE_POLICY_MODEL_ID = 'reference-policy';
// 2.0.0 (issue 15): answers in ds-model-output/2, within its bounds.
export const REFERENCE_POLICY_VERSION = '2.0.0';
export const REFERENCE_POLICY_BUILD = `reference-policy@${REFERENCE_POLICY_VERSION}`;

/**
 * How long the controller waits for the runtime's answer to one wake beyond the wake's model-call
 * budget (its call timeout × attempts + backoffs) before the wake fails with a timeout. An
 * instance's own comes from its pre-registration (design/prereg.ts wake_answer_timeout_ms);
 * absent there, DEFAULT_WAKE_ANSWER_TIMEOUT_MS, the value of every run before issue 20.
 */
export const WakeAnswerTimeoutMs = z.number().int().min(1_000).max(3_600_000);
export const DEFAULT_WAKE_ANSWER_TIMEOUT_MS = 120_000;

export const MIN_MODEL_TIMEOUT_MS = 100;
export const MAX_MODEL_TIMEOUT_MS = 600_000;
/** The most context a server's model may claim (tokens): a bound, not a recommendation. */
export const MAX_CONTEXT_TOKENS = 1_048_576;
/** The most context the local adapter allocates (tokens): its KV cache lives in the runtime process. */
export const MAX_LOCAL_CONTEXT_TOKENS = 131_072;
export const MIN_CONTEXT_TOKENS = 256;
export const ModelTimeoutMs = z.number().int().min(MIN_MODEL_TIMEOUT_MS).max(MAX_MODEL_TIMEOUT_MS);
export const ServerContextTokens = z.number().int().min(MIN_CONTEXT_TOKENS).max(MAX_CONTEXT_TOKENS);
/**
 * Whether the local adapter keeps the KV cache of a prompt's common prefix between an instance's
 * calls (model-adapters/kv-prefix.ts: why that carries no memory across wakes). On: measured on
 * the test model, answers with and without it were byte-identical at the same seed
 * (docs/local-model.md "KV reuse"). Off with --no-kv-reuse or "kv_reuse": false.
 */
export const DEFAULT_LOCAL_KV_REUSE = true;
export const LocalContextTokens = z.number().int().min(MIN_CONTEXT_TOKENS).max(MAX_LOCAL_CONTEXT_TOKENS);
const TimeoutMs = ModelTimeoutMs;
/**
 * An OpenAI-compatible server's base URL, e.g. http://127.0.0.1:8080/v1: http(s) only, no
 * credentials (the key travels in a header, from an environment variable, never in a file), no
 * query or fragment.
 */
export const ServerBaseUrl = z
  .url({ protocol: /^https?$/ })
  .refine((u) => { const url = new URL(u); return url.username === '' && url.password === ''; }, { message: 'the base URL must not carry credentials; name the API key\'s environment variable instead' })
  .refine((u) => { const url = new URL(u); return url.search === '' && url.hash === ''; }, { message: 'the base URL must not carry a query or fragment' });

/** An OpenAI-compatible server (issue 5 item 3, issue 15). The API key never travels here: the runtime reads `api_key_env`. */
export const OpenAiModelConfig = z.strictObject({
  adapter: z.literal('openai'),
  base_url: ServerBaseUrl,
  model_id: z.string().min(1).max(200),
  api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/).nullable(),
  params: ModelParamsSchema,
  dialect: StructuredOutputDialect,
  /** Stream the answer (closing the stream is what cancels decoding on llama.cpp and vLLM). */
  stream: z.boolean(),
  /** The server's context in tokens when it does not report one; null: unknown unless reported. */
  context_size: ServerContextTokens.nullable(),
  timeout_ms: TimeoutMs,
  /** What its calls cost (issue 36): every call record carries its cost at these prices; absent: not priced (no cost recorded, no cost cap possible). */
  prices: ModelPrices.optional(),
});
export type OpenAiModelConfig = z.infer<typeof OpenAiModelConfig>;

/** Where Anthropic's Messages API is served; the adapter posts to `${base_url}/v1/messages`. */
export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/** The words a configured seed is refused with: Anthropic's Messages API has no seed parameter, so a seed would be a promise the request cannot keep. */
export const ANTHROPIC_NO_SEED = "Anthropic's Messages API takes no seed (the request has no such parameter, so sampling cannot be seeded): drop --model-seed, or set params.seed to null in the model configuration";

/**
 * Anthropic's Messages API (issue 36, docs/model-protocol.md "anthropic"). The key is required
 * and never travels here: the runtime reads the variable `api_key_env` names. `context_size` is
 * the fallback when the Models API reports no `max_input_tokens` for the model (null: unknown
 * unless reported, and prompts are then not checked against it — said at the preflight), the
 * same rule as the openai adapter's: no guessed default, because Anthropic's windows differ by
 * model and by beta (200k, 1M), and a wrong default would refuse or pass prompts silently.
 */
export const AnthropicModelConfig = z.strictObject({
  adapter: z.literal('anthropic'),
  base_url: ServerBaseUrl.default(ANTHROPIC_BASE_URL),
  model_id: z.string().min(1).max(200),
  api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/),
  /** Anthropic's temperature is 0..1; no seed (ANTHROPIC_NO_SEED). */
  params: ModelParamsSchema.extend({ temperature: z.number().min(0).max(1).nullable() }).refine((p) => p.seed === null, { message: ANTHROPIC_NO_SEED, path: ['seed'] }),
  dialect: AnthropicDialect,
  stream: z.boolean(),
  context_size: ServerContextTokens.nullable(),
  timeout_ms: TimeoutMs,
  /** Count each prompt with POST /v1/messages/count_tokens before it is sent (a side request per call); false: the estimate, marked as such. */
  count_tokens: z.boolean(),
  /** What its calls cost (issue 36); absent: not priced. */
  prices: ModelPrices.optional(),
});
export type AnthropicModelConfig = z.infer<typeof AnthropicModelConfig>;

/** Google's Gemini API, spoken natively (issue 36, docs/model-protocol.md "gemini"): generateContent on {base_url}/v1beta/models/{model_id}, the key in x-goog-api-key. */
export const DEFAULT_GEMINI_BASE_URL = 'https://generativelanguage.googleapis.com';
export const GeminiModelConfig = z.strictObject({
  adapter: z.literal('gemini'),
  base_url: ServerBaseUrl,
  /** The model's name without `models/`, e.g. gemini-2.5-flash. */
  model_id: z.string().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { message: 'a Gemini model id is its name without "models/" (letters, digits, dots, dashes, underscores)' }),
  /** The environment variable holding the API key: required, the API takes no call without one. */
  api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/),
  params: ModelParamsSchema,
  dialect: GeminiDialect,
  /** Stream with :streamGenerateContent?alt=sse (closing the connection cancels the call). */
  stream: z.boolean(),
  /** The model's input token limit when the Models API does not report one; null: the Models API's inputTokenLimit is used. */
  context_size: ServerContextTokens.nullable(),
  timeout_ms: TimeoutMs,
  /** Count each prompt with POST …:countTokens before its call (a request of its own); false: estimated, and marked so. */
  count_tokens: z.boolean(),
  /** What its calls cost (issue 36); absent: not priced. */
  prices: ModelPrices.optional(),
});
export type GeminiModelConfig = z.infer<typeof GeminiModelConfig>;

/** llama.cpp seeds with an unsigned 32-bit integer. */
const LocalParamsSchema = ModelParamsSchema.extend({ seed: z.number().int().min(0).max(0xffff_ffff).nullable() });

/** A GGUF model run inside the runtime process (node-llama-cpp, issue 15 item 6). */
export const LocalModelConfig = z.strictObject({
  adapter: z.literal('local'),
  /** Absolute path of the .gguf file; it must be readable by the runtime's uid. */
  model_file: z.string().min(1).max(4_096),
  /** What the manifest calls the model (default: the file's name). */
  model_id: z.string().min(1).max(200),
  params: LocalParamsSchema,
  threads: z.number().int().min(1).max(256),
  context_size: LocalContextTokens,
  timeout_ms: TimeoutMs,
  /** Keep the KV cache of the prompt's common prefix between calls (DEFAULT_LOCAL_KV_REUSE); the same for every group of a study, named in every call's fingerprint when on. */
  kv_reuse: z.boolean().default(DEFAULT_LOCAL_KV_REUSE),
  /** What its calls cost (issue 36), e.g. the machine's hour spread over its tokens; absent: not priced. */
  prices: ModelPrices.optional(),
});
export type LocalModelConfig = z.infer<typeof LocalModelConfig>;

/** Which model the subject thinks with; `retry` is the pre-registration's transport policy, filled in by the controller. */
export const RuntimeModelConfig = z.discriminatedUnion('adapter', [
  z.strictObject({ adapter: z.literal('reference') }),
  OpenAiModelConfig.extend({ retry: TransportRetryPolicy }),
  AnthropicModelConfig.extend({ retry: TransportRetryPolicy }),
  GeminiModelConfig.extend({ retry: TransportRetryPolicy }),
  LocalModelConfig,
  z.strictObject({ adapter: z.literal('replay'), source_model_id: z.string().min(1).max(200), calls: z.array(RecordedModelCall).max(10_000) }),
]);
export type RuntimeModelConfig = z.infer<typeof RuntimeModelConfig>;

/**
 * A server that showed its constraint honoured at an earlier start of the runtime in this
 * controller's session (issue 34): the build it reported and the dialect asked in. A restart whose
 * server reports the same build is not probed again, because a probe call on a single-slot server
 * (llama.cpp) replaces the study's prompt in its cache, and the next wake would pay for all of it.
 */
export const ConstraintShownEarlier = z.strictObject({ server_build: z.string().min(1).max(200), dialect: StructuredOutputDialect });
export type ConstraintShownEarlier = z.infer<typeof ConstraintShownEarlier>;

export const RuntimeStartConfig = z.strictObject({
  type: z.literal('start'),
  subject_id: Identifier,
  /** The writer's socket (same length bound as the writer's own start config). */
  socket_path: z.string().min(1).max(100),
  /** The writer token of role `runtime`. Travels only here, never in argv or env. */
  token: z.string().min(16).max(256),
  /** The group switches, never the group letter. */
  capabilities: Capabilities,
  retrieval_policy: RetrievalPolicy,
  /** The subject's workspace folder (absolute). */
  workspace_dir: z.string().min(1).max(4_096),
  model: RuntimeModelConfig,
  /** The protocol the run's answers are asked for and checked in: ds-model-output/2 for new runs, the recorded one for a replay. */
  protocol: ModelProtocol,
  /** Per writer request; a read page or append answered later fails the wake as writer_unavailable (the pre-registration's, design/prereg.ts). */
  writer_request_timeout_ms: WriterRequestTimeoutMs,
  /**
   * The dialect the answer schema is sent in (the manifest's structured_output.dialect) and the
   * pre-registered schema_subset policy (issue 36): every schema the runtime sends — each wake's,
   * the preflight probe's — goes through runtime/schema-subsets/schema-to-send.ts with them, the
   * same for every group.
   */
  schema_subset: z.strictObject({ dialect: AnswerSchemaDialect, policy: SchemaSubsetPolicy }),
  /** Null at a first start: the probe call is made. */
  constraint_shown_earlier: ConstraintShownEarlier.nullable().default(null),
  /** The scenario's framing of the system message (runtime/prompt-framing.ts), the same for every group. Absent: the default. */
  framing: PromptFraming.default(DEFAULT_FRAMING),
});
export type RuntimeStartConfig = z.infer<typeof RuntimeStartConfig>;

/** What a wake is told of the cost cap: the cap in force and the spent, in nano-USD. */
export const WakeCostCap = z.strictObject({ cap_nano_usd: z.number().int().min(1), spent_nano_usd: z.number().int().min(0) });
export type WakeCostCap = z.infer<typeof WakeCostCap>;

export const RuntimeWake = z.strictObject({
  type: z.literal('wake'),
  wake_id: Identifier,
  /** Virtual time of the wake (the signed schedule's), ISO-8601. */
  wake_at: z.iso.datetime(),
  /** The last seq the runtime may see in this wake; the controller fixes it before waking. */
  visible_to_seq: Seq,
  budget: Budget,
  /**
   * Whether the runtime waits for the controller's progress_ack after each append (see
   * wake_progress). True only on a wake whose planned runtime crash kills it at an exact point;
   * on every other wake the runtime reports its appends and goes on. Absent: false.
   */
  hold_at_each_append: z.boolean().default(false),
  /**
   * Whether steps with nothing between them share one append (one durable commit): the answer
   * and its focus update, when the answer proposes no plan, no action and no claim. True on a wake
   * with no planned crash; false on a crash drill's wake, whose kill points count one append per
   * step (controller/crash-drills.ts). The same events in the same order either way. Absent: false.
   */
  steps_share_appends: z.boolean().default(false),
  /**
   * The cost cap in force and what the instance has spent before this wake, counted by the
   * controller from the store (design/cost-cap.ts): the runtime holds a call back that could take
   * the spent over the cap (runtime/cost-cap-hold.ts). Null or absent: no cap.
   */
  cost_cap: WakeCostCap.nullable().default(null),
});
export type RuntimeWake = z.infer<typeof RuntimeWake>;

export const RuntimeShutdown = z.strictObject({ type: z.literal('shutdown') });

/** The controller saw a wake_progress of a held wake; the runtime takes no further step until it arrives (see wake_progress). */
export const RuntimeProgressAck = z.strictObject({ type: z.literal('progress_ack'), wake_id: Identifier, appends: z.number().int().min(1) });

export const RuntimeParentMessage = z.discriminatedUnion('type', [RuntimeStartConfig, RuntimeWake, RuntimeShutdown, RuntimeProgressAck]);
export type RuntimeParentMessage = z.infer<typeof RuntimeParentMessage>;

// ---------------------------------------------------------------------------------------
// child → parent

/** Why a wake failed. The runtime never fails a wake silently; each code names one cause. */
export const WAKE_FAILURE_CODES = [
  /** Another wake is still running: one wake at a time. */
  'busy',
  /** A wake arrived before a valid start message. */
  'not_started',
  /** The wake message did not pass its schema. */
  'bad_message',
  /** The writer could not be reached, or a request timed out or lost its connection. */
  'writer_unavailable',
  /** The writer answered with a refusal (wrong token, limit, …); the message names its code. */
  'writer_refused',
  /** The writer refused an append because the disk holding the store is full (its code store_full): nothing of it was written; free space, then resume. */
  'store_full',
  /** The writer serves another subject than the one this runtime was started for. */
  'identity_mismatch',
  /** visible_to_seq is below what an earlier wake already observed. */
  'seq_regressed',
  /** visible_to_seq is beyond the writer's head: the controller promised events that do not exist. */
  'beyond_head',
  /** The writer returned pages that are not the contiguous run of seqs asked for. */
  'read_gap',
  /** The store has no open wake of this id (no WakeStarted, or it already ended): nothing was appended. */
  'wake_not_open',
  /** The runtime is stopping (shutdown or signal) while the wake ran. */
  'stopped',
  /** A bug in the runtime; the message says what threw. */
  'internal',
] as const;
export const WakeFailureCode = z.enum(WAKE_FAILURE_CODES);
export type WakeFailureCode = z.infer<typeof WakeFailureCode>;

export const FATAL_CODES = [
  /** No start message within the start timeout. */
  'no_config',
  /** The start message did not pass its schema. */
  'bad_start',
  /** DS_FAULT_INJECTION is set but unusable (schema/fault-switch.ts). */
  'fault_arming',
] as const;
export const RuntimeFatalCode = z.enum(FATAL_CODES);
export type RuntimeFatalCode = z.infer<typeof RuntimeFatalCode>;

/** The adapter's check before the first wake (issue 15 item 5); null when the adapter has nothing to check (reference, replay). */
export const PreflightReport = z.discriminatedUnion('ok', [
  z.strictObject({ ok: z.literal(true), facts: z.record(z.string().max(64), z.union([z.string().max(2_000), z.number(), z.boolean(), z.null()])), lines: z.array(z.string().max(2_000)).max(64) }),
  z.strictObject({ ok: z.literal(false), reason: z.string().max(4_000), facts: z.record(z.string().max(64), z.union([z.string().max(2_000), z.number(), z.boolean(), z.null()])).optional(), lines: z.array(z.string().max(2_000)).max(64) }),
]);
export type PreflightReport = z.infer<typeof PreflightReport>;

export const RuntimeReady = z.strictObject({ type: z.literal('ready'), pid: z.number().int().min(1), preflight: PreflightReport.nullable() });

/**
 * Sent after each append the runtime makes during a wake (running totals for the wake), and
 * flushed before its next step: the controller learns from it that a model call's outcome is
 * recorded (model_call_started). On a held wake (RuntimeWake hold_at_each_append) the runtime
 * then waits for `progress_ack` before its next step, so the controller's runtime-crash
 * intervention kills it exactly at its kill point (e.g. right after the first
 * ExecutionIntentRecorded, before the file is touched), the same way in every run; other wakes
 * do not pay for that round trip.
 */
export const WakeProgress = z.strictObject({
  wake_id: Identifier,
  appends: Count,
  execution_intents: Count,
});
export type WakeProgress = z.infer<typeof WakeProgress>;
export const RuntimeWakeProgress = WakeProgress.extend({ type: z.literal('wake_progress') });

/**
 * Sent (and flushed) just before the runtime asks the model. Until the next wake_progress (the
 * recorded outcome's append) the call is in flight: if the runtime dies then, its answer is lost
 * unrecorded, and the controller says so where it records the stop.
 */
export const RuntimeModelCallStarted = z.strictObject({ type: z.literal('model_call_started'), wake_id: Identifier, call_number: z.number().int().min(1) });

export const WakeCounts = z.strictObject({
  appends: Count,
  model_calls: Count,
  tokens: Count,
  tool_calls: Count,
  retries: Count,
  proposals: Count,
  executions: Count,
  denials: Count,
  failures: Count,
  claims: Count,
  claims_refused: Count,
  plan_revisions: Count,
  reconciled: Count,
  unknown_outcomes: Count,
});
export type WakeCounts = z.infer<typeof WakeCounts>;

/** CheckpointRecorded's payload without wake_id (the controller adds it). */
export const WakeCheckpoint = CheckpointRecorded.payload.omit({ wake_id: true });
export type WakeCheckpoint = z.infer<typeof WakeCheckpoint>;

/**
 * What one wake did. The runtime observed seqs observed_from_seq..observed_to_seq
 * (inclusive; empty when observed_to_seq = observed_from_seq − 1, i.e. nothing new was
 * visible), so events_read = observed_to_seq − observed_from_seq + 1.
 */
const WakeDoneFields = z.strictObject({
  wake_id: Identifier,
  observed_from_seq: Seq,
  observed_to_seq: Count,
  events_read: Count,
  appends: Count,
  /** Wake phases this build does not have (none): kept so a partial build can never pass for a whole one. */
  not_built: z.array(WakePhase),
  /** What the wake did; the controller records its budget ledger from the store, not from this. */
  counts: WakeCounts,
  /** The subject's checkpoint (spec §9.4), recorded by the controller as CheckpointRecorded. */
  checkpoint: WakeCheckpoint,
  /** The context bundle's statement of what it showed and left out. */
  window_statement: z.string().max(2_000),
  notes: z.array(z.string().max(2_000)).max(256),
});
function checkObservedRange(d: z.infer<typeof WakeDoneFields>, ctx: z.RefinementCtx): void {
  if (d.observed_to_seq < d.observed_from_seq - 1) ctx.addIssue({ code: 'custom', path: ['observed_to_seq'], message: 'observed_to_seq must be at least observed_from_seq − 1' });
  else if (d.events_read !== d.observed_to_seq - d.observed_from_seq + 1) ctx.addIssue({ code: 'custom', path: ['events_read'], message: 'events_read must equal the length of the observed seq range' });
}
export const WakeDone = WakeDoneFields.superRefine(checkObservedRange);
export type WakeDone = z.infer<typeof WakeDone>;
export const RuntimeWakeDone = WakeDoneFields.extend({ type: z.literal('wake_done') }).superRefine(checkObservedRange);

export const WakeFailure = z.strictObject({ wake_id: Identifier, code: WakeFailureCode, message: z.string() });
export type WakeFailure = z.infer<typeof WakeFailure>;
export const RuntimeWakeFailed = WakeFailure.extend({ type: z.literal('wake_failed') });

export const RuntimeFatal = z.strictObject({ type: z.literal('fatal'), code: RuntimeFatalCode, message: z.string() });

export const RuntimeChildMessage = z.discriminatedUnion('type', [RuntimeReady, RuntimeWakeProgress, RuntimeModelCallStarted, RuntimeWakeDone, RuntimeWakeFailed, RuntimeFatal]);
export type RuntimeChildMessage = z.infer<typeof RuntimeChildMessage>;
