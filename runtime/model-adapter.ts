// What every model adapter is (issue 5 item 3, issue 15): one call in, one outcome out. The
// wake loop turns each outcome into exactly one ModelOutputEvent.* and commits it before
// anything uses the content. Adapters never retry an answer (a retry would be a second call
// beyond the shared budget) and never throw for a failed call — a timeout, an HTTP error or a
// refusal is an outcome like an answer. The one retry that exists is a transport retry under
// the pre-registered policy (DESIGN §12): an attempt where no answer reached the runtime,
// reported attempt by attempt through `onTransportFailure` before the next one starts.
import { assertNever } from '../foundation/assert-never.js';
import type { PromptReuse } from '../schema/events/model-output-events.js';
import type { ContextBundle } from './context-bundle.js';
import type { ServerTimings } from './model-adapters/server-timings.js';
import type { ConstraintShownEarlier, RuntimeModelConfig } from './protocol.js';

/** The adapters there are: one per variant of the start message's model configuration (runtime/protocol.ts), each listed once in model-adapters/adapter-list.ts. */
export type ModelAdapterName = RuntimeModelConfig['adapter'];

/** The configuration a start message gives each adapter, by name. */
export type ModelConfigs = { readonly [N in ModelAdapterName]: Extract<RuntimeModelConfig, { readonly adapter: N }> };

export interface ModelParams {
  readonly temperature: number | null;
  readonly top_p: number | null;
  readonly seed: number | null;
  readonly max_tokens: number | null;
}

/** Who counted a token figure: the model's server, a tokenizer of the model itself, or ceil(chars / 4). */
export type TokenCountSource = 'server' | 'tokenizer' | 'estimate';

export interface TokenUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
}

/** One transport attempt that brought no answer (connection refused or reset, 408, 409, 429, 5xx: transport-retry.ts RETRYABLE_STATUSES). */
export interface TransportFailure {
  /** 1-based attempt number within this call. */
  readonly attempt: number;
  /** e.g. `connection_refused`, `connection_reset`, `http_503`. */
  readonly kind: string;
  readonly detail: string;
  readonly latency_ms: number;
  /** How long the adapter waits before the next attempt; null when this was the last one. */
  readonly backoff_ms: number | null;
}

export interface ModelRequest {
  readonly wake_id: string;
  /** Which call of the wake (1-based); the budget bounds it. */
  readonly call_number: number;
  /** The structured bundle (the reference policy reads this) … */
  readonly bundle: ContextBundle;
  /** … and the same bundle rendered as chat messages (what an LLM reads). */
  readonly system: string;
  readonly user: string;
  /** Token cap for the answer, from the wake's remaining token budget. */
  readonly max_tokens: number;
  /**
   * The JSON Schema the answer must satisfy (runtime/answer-schema.ts: generated from the zod
   * schema, specialised to this wake's shown seqs). Adapters that constrain decoding send it in
   * their dialect; the runtime checks every answer against the zod schema regardless.
   */
  readonly answer_schema: Readonly<Record<string, unknown>>;
  /** Called (and awaited) after each transport attempt that brought no answer, before the next. */
  readonly onTransportFailure?: (failure: TransportFailure) => Promise<void>;
}

/** What every answered or failed call says about itself when it can (null where it cannot). */
export interface CallFacts {
  /** The server's or engine's reason the answer ended: `stop`, `length`, … */
  readonly finish_reason: string | null;
  /** The response's own `model` field (what the server says answered), null where it has none. */
  readonly response_model: string | null;
  /** Tokens spent, and who counted them. */
  readonly usage: TokenUsage | null;
  readonly usage_source: TokenCountSource | null;
  /** The prompt's size in tokens as counted before or by the call, and who counted it. */
  readonly prompt_tokens_counted: number | null;
  readonly prompt_count_source: TokenCountSource | null;
  /** Transport attempts this call took (1 when the first one answered). */
  readonly attempts: number;
  /** What of the prompt a cache served and what was evaluated, as the server or engine said (model-adapters/prompt-reuse.ts); null or absent: nobody said. */
  readonly prompt_reuse?: PromptReuse | null;
  /** The provider's own reason the answer ended, when `finish_reason` is the house's mapping of it (Anthropic's stop_reason, Gemini's finishReason); null or absent: the same word, or none. */
  readonly provider_finish_reason?: string | null;
  /** Prompt tokens the provider read from its prompt cache, and wrote to it, as it reported them (part of usage.prompt_tokens, each billed at its own price); null or absent: not reported. */
  readonly cache_read_tokens?: number | null;
  readonly cache_write_tokens?: number | null;
  /** The server's own account of the request's work (llama.cpp `timings`), when it gave one; not recorded in events (the preflight reads it). */
  readonly server_timings?: ServerTimings | null;
  /** The local engine's split of the work, timed by the adapter around its evaluation (the prompt: until the first token; the answer: after it); not recorded in events. */
  readonly engine_timings?: ServerTimings | null;
}

export type ModelCallOutcome =
  | ({
      readonly kind: 'answered';
      readonly raw_output: string;
      readonly usage: TokenUsage;
      readonly usage_source: TokenCountSource;
      readonly latency_ms: number;
      readonly system_fingerprint: string | null;
    } & Omit<CallFacts, 'usage' | 'usage_source'>)
  | ({
      readonly kind: 'failed';
      /**
       * timeout: no complete answer within the call's timeout (what arrived is in raw_output);
       * transport: every attempt of the retry policy failed without an answer;
       * http_error: the server answered with an error or something not a completion;
       * refusal: the model or its server refused;
       * truncated_prompt: the prompt did not fit the model's context (counted shorter than sent, or over it): the answer, if any, is not used;
       * stream_broken: the answer's stream stopped halfway.
       */
      readonly failure: 'timeout' | 'transport' | 'http_error' | 'refusal' | 'truncated_prompt' | 'stream_broken';
      readonly detail: string;
      readonly raw_output: string | null;
      readonly latency_ms: number;
      /** The build that failed, when the adapter knows it (a local model always does): a failed call ran on some build too. */
      readonly system_fingerprint?: string | null;
    } & CallFacts);

type CallFailure = Extract<ModelCallOutcome, { kind: 'failed' }>['failure'];

/** Said of a failed call whose usage is null: the budget ledger counts nothing for it (design/budget-ledger.ts). */
export const NO_TOKENS_RECORDED = '0 tokens recorded (usage null)';

/**
 * Why a failed call records no tokens (issue 31 item 7): a call that never reached a server —
 * or reached one that evaluated nothing — records usage null with this reason in its detail and
 * on screen, never an estimate. An estimate is kept only where a server did or may have
 * evaluated the prompt (a request delivered and timed out, a stream that broke off, an answer
 * without usage), and is said to be one (usage_source "estimate").
 */
export function noUsageReason(failure: CallFailure): string {
  switch (failure) {
    case 'transport':
      return 'no attempt brought an answer or a count of tokens: a connection refused, reset or never made, or a request never delivered whole, was evaluated by no server, and a server answering an error status reported nothing';
    case 'truncated_prompt':
      return 'the prompt was refused before it was sent: no server evaluated anything';
    case 'http_error':
      return 'the server answered the request with an error status, not a completion, and counted no tokens';
    case 'timeout':
      return 'the call was given up before any server or engine reported tokens for it';
    case 'refusal':
    case 'stream_broken':
      return 'the server reported no tokens';
    default: {
      assertNever(failure, 'failure');
    }
  }
}

/** Facts of a call that knows none of them (a failure before any request, a replay of an old record). */
export const NO_CALL_FACTS: CallFacts = { finish_reason: null, response_model: null, usage: null, usage_source: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null };

/** What a check learnt, for the record and the screen: served model, context size, probe outcome. */
export type PreflightFacts = Readonly<Record<string, string | number | boolean | null>>;

/** The result of an adapter's check before hour 0 (issue 15 item 5); a refusal keeps what the check learnt before it (issue 31 item 3d). */
export type PreflightResult = { readonly ok: true; readonly facts: PreflightFacts; readonly lines: readonly string[] } | { readonly ok: false; readonly reason: string; readonly facts?: PreflightFacts; readonly lines: readonly string[] };

/** One prompt the plan can produce, with the answer cap it would be sent with (issue 31 item 3). */
export interface PromptSample {
  readonly label: string;
  readonly system: string;
  readonly user: string;
  readonly answerCap: number;
}

/** The speed calls' prompts, made once the samples are counted and the context is known (so that they fit); each is timed in turn. */
export type SpeedSampleOf = (context: ModelMeasurement['context'], counts: ModelMeasurement['counts']) => readonly PromptSample[];

/** How a speed was measured (MeasuredSpeed.source). */
export const SPEED_SOURCES = ['server_timings', 'engine_timings', 'wall'] as const;
export type SpeedSource = (typeof SPEED_SOURCES)[number];

/** The speed a server (or a local engine) showed on one call, and how it was measured. */
export interface MeasuredSpeed {
  readonly prompt_tokens: number;
  /** Milliseconds as measured (fractions where the server gives them). */
  readonly prompt_ms: number;
  readonly generated_tokens: number;
  readonly generated_ms: number;
  /** `server_timings`: the server's own split of the work; `engine_timings`: the local engine's, timed around its evaluation; `wall`: the call's wall time, prompt and generation not told apart (each rate is then a lower bound). */
  readonly source: SpeedSource;
  readonly latency_ms: number;
}

/** What an adapter measured of the model against the plan's prompts before hour 0: its context, each sample counted, its speed. */
export interface ModelMeasurement {
  readonly context: { readonly size: number; readonly source: string } | null;
  readonly counts: readonly { readonly label: string; readonly tokens: number; readonly source: TokenCountSource }[];
  /** One per speed sample, in order: what it showed, or why it showed nothing (the call failed: `failure`, `timed_out`). */
  readonly speeds: readonly ({ readonly label: string; readonly prompt_tokens: number } & ({ readonly speed: MeasuredSpeed; readonly failure: null; readonly timed_out: false } | { readonly speed: null; readonly failure: string; readonly timed_out: boolean }))[];
  readonly lines: readonly string[];
}

export interface ModelAdapter {
  readonly name: ModelAdapterName;
  readonly model_id: string;
  readonly params: ModelParams;
  /** The server's or build's fingerprint when known before a call; null otherwise. */
  readonly build: string | null;
  call(request: ModelRequest, timeoutMs: number): Promise<ModelCallOutcome>;
  /**
   * Checks before hour 0 that calls can succeed (server up, model served, constraint honoured);
   * any probe call is outside the study's budget. Adapters with nothing to check omit it.
   */
  preflight?(answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number, shownEarlier?: ConstraintShownEarlier | null): Promise<PreflightResult>;
  /**
   * Counts `samples` with the model's tokenizer and measures its speed on the prompt `speedSample`
   * makes from those counts (one of the plan's typical size that fits the context and carries
   * nothing of the scenario's future), before hour 0
   * (issue 31 item 3); outside the study's budget. Adapters without a model to measure omit it.
   */
  measure?(samples: readonly PromptSample[], speedSample: SpeedSampleOf, answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<ModelMeasurement>;
  /** Frees what the adapter holds (a loaded model, open connections). */
  close?(): Promise<void>;
}

/**
 * What the rest of the house asks of an adapter (issue 33 item 4), stated by each adapter where
 * it is defined and gathered in model-adapters/adapter-list.ts (MODEL_ADAPTERS): whoever needs to
 * know asks the fact, never the name, so a new adapter answers every question by stating it.
 */
export interface ModelAdapterDefinition<N extends ModelAdapterName> {
  readonly name: N;
  /**
   * Its calls go to a model — a server, or an engine in the runtime process — and not to code
   * (the reference policy) or to a record (a replay). Only such a model is shared by a block's
   * members (its parallel slots bound how many call at once, design/model-choice.ts
   * blockSlotsOf), and only its calls' token counts are worth a note when they are estimates or
   * missing (runtime/wake-loop.ts): the model could have counted them.
   */
  readonly callsModel: boolean;
  /** Who counts the tokens its calls spend (`usage_source`): the model's server, the model's own tokenizer, or ceil(chars / 4). */
  readonly usageCountedBy: readonly TokenCountSource[];
  /** Who counts a prompt before or by its call (`prompt_count_source`). */
  readonly promptCountedBy: readonly TokenCountSource[];
  /**
   * How long one call may be waited for, from its configuration: the runtime gives each call that
   * long and a stopping runtime waits that long for a call under way (runtime/main.ts), as the
   * controller does (the signed manifest's call_timeout_ms). Null: not waited for — the answer is
   * at hand at once (computed, or served from a record).
   */
  readonly callTimeoutMs: (config: ModelConfigs[N]) => number | null;
  /** Checked against the plan before anything of an instance is written (controller/model-check.ts: its preflight and measurement). */
  readonly checkedBeforeStart: boolean;
  /** Its calls go over HTTP to a server process, which must be running and serving the model id (a resume's advice says so, controller/instance-processes.ts; freezing that process stalls the model). */
  readonly answeredByServer: boolean;
  /** Its check at the runtime's start reports the build it loaded (preflight fact `build`), which must be the build the signed manifest pins (controller/instance-processes.ts). */
  readonly preflightReportsBuild: boolean;
  /** The adapter a start message's configuration asks for; nothing is loaded or called yet. */
  readonly create: (config: ModelConfigs[N]) => ModelAdapter;
}
