// Why one file: its parts already have files of their own (server-probe, prompt-fit, chat-stream, structured-output, transport-retry, http-exchange); what is left is the one call sequence that ties them together and maps every way it can end.
// The `openai` model adapter (issue 5 item 3, issue 15, docs/model-protocol.md "openai"): an
// OpenAI-compatible chat-completions server (vLLM, llama.cpp server, Ollama, OpenAI).
//
// One call, in order:
// 1. Once per adapter (or in `preflight`): learn the server's context size and whether it has a
//    tokenizer endpoint (server-probe.ts).
// 2. Count the prompt (system + user) with that tokenizer, else estimate it (ceil(chars / 4),
//    marked as an estimate); a prompt that cannot fit the context with the answer's cap is
//    refused as `truncated_prompt` without sending it (prompt-fit.ts).
// 3. POST {baseUrl}/chat/completions, streamed by default (chat-stream.ts), the answer
//    constrained in the configured dialect (structured-output.ts). Attempts that bring no
//    answer — connection refused or reset, 408/409/429/5xx — are retried under the
//    pre-registered policy (transport-retry.ts), each reported through
//    `request.onTransportFailure` before the wait. An answer, however bad, is never retried;
//    nor is a timeout: each attempt has the full `timeoutMs`, and on expiry the request is
//    aborted and its connection closed — a server decoding it stops at its next batch, but
//    llama.cpp b4748 still runs a request it had only queued, so a second attempt would only
//    queue behind a server still busy (docs/model-protocol.md "Cancellation").
// 4. The outcome records finish_reason, the response's own model field, the usage (the
//    server's, or an estimate said to be one), the prompt count and who made it, the attempts.
//    A server that counted fewer prompt tokens than the tokenizer did read less than it was
//    sent: `truncated_prompt`, the answer kept in raw_output and not used.
//
// Every HTTP request of this adapter — chat attempts, retries, the side requests, the
// preflight probe, the model check's counts and speed calls — passes one gate
// (http-exchange.ts): one at a time, each on a connection of its own, closed before the next
// starts (issue 31 item 8).
//
// No redirect is ever followed (a redirect would be a request to wherever it points, carrying
// the key). Every body is read bounded. Every way a call can go wrong comes back as an outcome
// with a detail; `call` throws only for a caller's bug (a timeout or token cap that is not a
// positive integer) or when `onTransportFailure` throws (an attempt that cannot be recorded
// must not be followed by another).
//
// The API key is read from the environment by the caller and only ever sent in the
// Authorization header, to the configured server. Every detail, and any text of the outcome,
// passes through `redact`, because a server may echo the header back, and outcomes go into the
// event store.
import { assertNever } from '../../foundation/assert-never.js';
import type { StructuredOutputDialect, TransportRetryPolicy } from '../../schema/model-call-policy.js';
import type { ConstraintShownEarlier } from '../protocol.js';
import { probeSkipReason } from './probe-skip.js';
import { cachedTokensOf, promptReuseOf } from './prompt-reuse.js';
import { ChatCompletion, timingsField, Usage, type ChatReply, type ContextSize } from './openai-chat-reply.js';
import { isJsonPrefix } from './json-prefix.js';
import { answerNotWithin } from './call-delivery.js';
import { errorStatusOf, noAnswerDetail, openAttempt, readWholeBody } from './http-attempt.js';
import { ApiKeyRedactor } from './api-key-redaction.js';
import { OPENAI_ADAPTER_LIMITS, OpenAiAdapterConfigError, OpenAiAdapterOptions } from './openai-options.js';
import { NO_TOKENS_RECORDED, noUsageReason, type CallFacts, type ModelAdapter, type ModelAdapterDefinition, type ModelCallOutcome, type ModelMeasurement, type ModelParams, type ModelRequest, type PreflightResult, type PromptSample, type SpeedSampleOf, type TokenUsage, type TransportFailure } from '../model-adapter.js';
import { measureWith } from './measured-speed.js';
import { MAX_ANSWER_TOKENS, sentAnswerCap } from '../answer-cap.js';
import { estimateTokens } from '../prompt.js';
import { describeError, quoteBody } from './bounded-http.js';
import { emptyChatStreamState, readChatStream, type ChatStreamState } from './chat-stream.js';
import { checkPromptFits, checkPromptNotTruncated, type PromptCount } from './prompt-fit.js';
import { ServerProbe, type ModelList, type ServedModel, type ServerProps, type TokenizerKind } from './server-probe.js';
import { ExchangeGate, type HttpExchange } from './http-exchange.js';
import { checkConstrainedAnswer, PROBE_MESSAGES, structuredOutputFields } from './structured-output.js';
import { withTransportRetry, type AttemptResult, type NoAnswer } from './transport-retry.js';

/** The text the tokenizer probe counts (any non-empty text would do). */
const TOKENIZER_PROBE_TEXT = 'Counting the tokens of this sentence checks the tokenizer.';

/** The openai adapter as the house asks it (runtime/model-adapter.ts ModelAdapterDefinition; listed in adapter-list.ts). */
export const OPENAI_ADAPTER: ModelAdapterDefinition<'openai'> = {
  name: 'openai',
  callsModel: true,
  // The server's usage, else the estimate (said so); the prompt by the server's tokenizer endpoint, else the estimate.
  usageCountedBy: ['server', 'estimate'],
  promptCountedBy: ['tokenizer', 'estimate'],
  callTimeoutMs: (config) => config.timeout_ms,
  checkedBeforeStart: true,
  answeredByServer: true,
  preflightReportsBuild: false,
  create: (config) => {
    const apiKey = config.api_key_env === null ? null : (process.env[config.api_key_env] ?? null);
    if (config.api_key_env !== null && apiKey === null) throw new Error(`the environment variable ${config.api_key_env} (the API key) is not set`);
    return new OpenAiAdapter({ baseUrl: config.base_url, modelId: config.model_id, apiKey, params: config.params, dialect: config.dialect, retry: config.retry, contextSize: config.context_size, stream: config.stream });
  },
};

export class OpenAiAdapter implements ModelAdapter {
  readonly name = 'openai' as const;
  readonly model_id: string;
  readonly params: ModelParams;
  /** Unknown before a call; each answer carries the server's system_fingerprint (llama.cpp's build is in the preflight's facts). */
  readonly build = null;
  readonly dialect: StructuredOutputDialect;
  readonly retry: TransportRetryPolicy;
  readonly stream: boolean;
  private readonly baseUrl: string;
  private readonly chatUrl: string;
  private readonly apiKey: string | null;
  private readonly redactor: ApiKeyRedactor;
  private readonly configuredContextSize: number | null;
  private readonly maxResponseBytes: number;
  private readonly probe: ServerProbe;
  /** Every request of this adapter — chat, side requests, retries — passes it: one at a time, the last one's connection closed first (issue 31 item 8). */
  private readonly gate = new ExchangeGate();
  /** What the server said about itself; undefined until learnt (by preflight or the first call that reached it). */
  private context: ContextSize | null | undefined = undefined;
  private tokenizer: TokenizerKind | undefined = undefined;

  constructor(options: OpenAiAdapterOptions) {
    const parsed = OpenAiAdapterOptions.safeParse(options);
    if (!parsed.success) {
      // Issue paths and messages only: zod does not quote values, so the key cannot leak here.
      throw new OpenAiAdapterConfigError(`openai adapter options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    }
    const o = parsed.data;
    this.model_id = o.modelId;
    this.params = { ...o.params };
    this.dialect = o.dialect;
    this.retry = { max_attempts: o.retry.max_attempts, backoff_ms: [...o.retry.backoff_ms] };
    this.stream = o.stream;
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.chatUrl = `${this.baseUrl}/chat/completions`;
    this.apiKey = o.apiKey;
    this.redactor = new ApiKeyRedactor(o.apiKey);
    this.configuredContextSize = o.contextSize;
    this.maxResponseBytes = o.maxResponseBytes ?? OPENAI_ADAPTER_LIMITS.maxResponseBytes;
    this.probe = new ServerProbe({ baseUrl: this.baseUrl, modelId: this.model_id, headers: this.authHeaders(), maxBytes: OPENAI_ADAPTER_LIMITS.sideResponseBytes, quotedBodyChars: OPENAI_ADAPTER_LIMITS.quotedBodyChars, gate: this.gate });
  }

  async call(request: ModelRequest, timeoutMs: number): Promise<ModelCallOutcome> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new OpenAiAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    if (!Number.isSafeInteger(request.max_tokens) || request.max_tokens < 1) throw new OpenAiAdapterConfigError(`request.max_tokens must be a positive integer, got ${request.max_tokens}`);
    // The wake's remaining budget caps the answer even when the configured cap is higher.
    const maxTokens = sentAnswerCap(request.max_tokens, this.params.max_tokens);
    return this.complete(request.system, request.user, request.answer_schema, maxTokens, timeoutMs, request.onTransportFailure);
  }

  /**
   * Before hour 0 (issue 15 item 5): the server answers GET /models (under the retry policy)
   * and lists the configured model id exactly; its context size where it reports one; its
   * tokenizer; then one probe call in the configured dialect whose answer must show the
   * constraint honoured (skipped for `none`, and said). The probe is outside the study's
   * budget: the caller records the facts returned.
   *
   * The model id must match exactly, even when the server serves a single model: llama.cpp
   * answers whatever id a request names, so a mismatch would not fail a call, but the manifest
   * would then name a model the server does not say it serves. The refusal names what it
   * serves, to be configured (or set with llama-server's --alias).
   */
  async preflight(answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number, shownEarlier: ConstraintShownEarlier | null = null): Promise<PreflightResult> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new OpenAiAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    const lines: string[] = [];
    // What the check learnt before a refusal goes with it (issue 31 item 3d): preflight.jsonl keeps it.
    let learnt: Record<string, string | number | boolean | null> | null = null;
    const refuse = (reason: string): PreflightResult => ({ ok: false, reason: this.redact(reason), ...(learnt === null ? {} : { facts: this.redactFacts(learnt) }), lines: [...lines, `refused: ${reason}`].map((l) => this.redact(l)) });
    const sideMs = Math.min(timeoutMs, OPENAI_ADAPTER_LIMITS.sideRequestTimeoutMs);

    // 1. The server answers, and serves the configured model.
    const listing = await withTransportRetry(
      this.retry,
      async (): Promise<AttemptResult<Exclude<ModelList, { kind: 'no_answer' }>>> => {
        const r = await this.probe.listModels(sideMs);
        return r.kind === 'no_answer' ? { ok: false, noAnswer: r.noAnswer } : { ok: true, value: r };
      },
      async (f) => {
        lines.push(`GET ${this.probe.modelsUrl}: attempt ${f.attempt} brought no answer (${f.kind})${f.backoff_ms === null ? '' : `; trying again in ${f.backoff_ms} ms (retry policy)`}`);
      },
    );
    if (listing.kind === 'no_answer') return refuse(`the model server does not answer: GET ${this.probe.modelsUrl} brought no answer in ${listing.attempts} attempt(s) (retry policy: max_attempts ${this.retry.max_attempts}); last: ${listing.last.detail}. Start the server, or check the base URL`);
    const models = listing.value;
    if (models.kind === 'timeout') return refuse(`the model server does not answer: ${models.detail}`);
    if (models.kind === 'not_listed') return refuse(`the model server answered GET ${this.probe.modelsUrl}, but not with a model list (${models.detail}); an OpenAI-compatible server lists the models it serves there`);
    lines.push(`GET ${this.probe.modelsUrl}: the server answers and lists ${models.models.length} model(s)`);
    const served = models.models.find((m) => m.id === this.model_id);
    if (served === undefined) {
      const ids = models.models.map((m) => JSON.stringify(m.id));
      if (models.models.length === 1) return refuse(`the server serves one model, ${ids[0]}, not the configured ${JSON.stringify(this.model_id)}: set the model id to ${ids[0]} (llama-server lists its --alias, or the model file's path when it has none)`);
      return refuse(`the server does not serve the configured model ${JSON.stringify(this.model_id)}: it lists ${models.models.length} model(s)${ids.length === 0 ? '' : `: ${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', …' : ''}`}`);
    }
    lines.push(`the server serves the configured model ${JSON.stringify(served.id)}`);

    // 2. Its context size and tokenizer.
    const props = await this.probe.props(sideMs);
    this.context = this.contextFrom(props === 'unreachable' ? null : props, served);
    if (this.context === null) lines.push('context size: unknown (the server reports none and none is configured): prompts are not checked against it');
    else lines.push(`context size: ${this.context.size} tokens (${this.context.source})`);
    if (this.configuredContextSize !== null && this.context !== null && this.context.source !== 'configured contextSize' && this.configuredContextSize !== this.context.size) {
      lines.push(`the configured contextSize ${this.configuredContextSize} differs from the server's ${this.context.size}: the server's is used`);
    }
    const buildInfo = props !== null && props !== 'unreachable' ? props.build_info : null;
    if (buildInfo !== null) lines.push(`server build: ${buildInfo}`);
    // Said before the first wake: without a stream, closing a timed-out request does not stop llama.cpp or vLLM decoding it, and the next calls queue behind it.
    if (!this.stream) lines.push('stream: off — a call that times out is abandoned here but may keep the server decoding; later calls can queue behind it (stream is the default)');
    const found = await this.probe.findTokenizer(TOKENIZER_PROBE_TEXT, sideMs);
    if (found.kind === 'unreachable') {
      lines.push(`tokenizer: the probe got no answer (${found.detail}); calls try again, and estimate until it answers`);
    } else {
      this.tokenizer = found.kind;
      lines.push(found.kind === 'none' ? 'tokenizer: none on the server: prompt sizes are estimated (ceil(chars / 4)) and marked so, and a truncated prompt cannot be detected' : `tokenizer: ${found.detail}`);
    }

    const facts: Record<string, string | number | boolean | null> = {
      served_model: served.id,
      models_listed: models.models.length,
      context_size: this.context?.size ?? null,
      context_source: this.context?.source ?? null,
      server_build: buildInfo,
      tokenize: found.kind === 'unreachable' ? null : found.kind,
      dialect: this.dialect,
      stream: this.stream,
      retry_max_attempts: this.retry.max_attempts,
      retry_backoff_ms: this.retry.backoff_ms.join(','),
      probe_finish_reason: null,
      probe_latency_ms: null,
      probe_response_model: null,
      probe_prompt_tokens: null,
      probe_completion_tokens: null,
      probe_usage_source: null,
      probe_attempts: null,
      probe_schema_valid: null,
      probe_raw_output: null,
      probe_timings: null,
      probe_skipped: null,
    };
    learnt = facts;

    // 3. One probe call shows the constraint honoured, unless this very server showed it at an earlier start.
    const skip = probeSkipReason(shownEarlier, buildInfo, this.dialect);
    if (skip !== null) return { ok: true, facts: { ...facts, probe_skipped: skip }, lines: [...lines, `probe call skipped: ${skip}`].map((l) => this.redact(l)) };
    if (this.dialect === 'none') {
      lines.push('dialect none: no constraint is sent, so there is none to check; the probe call is skipped and every answer relies on the model alone');
      return { ok: true, facts, lines: lines.map((l) => this.redact(l)) };
    }
    // The cap a study's call gets (runtime/answer-cap.ts), so a constrained answer the study would
    // accept is not cut here — within what the context leaves after the probe's few tokens (a
    // context too small for the study's calls is the forecast's to refuse, naming its sizes).
    const roomMax = this.context === null || this.context === undefined ? MAX_ANSWER_TOKENS : Math.max(1, this.context.size - OPENAI_ADAPTER_LIMITS.probePromptReserveTokens);
    const probeMaxTokens = this.params.max_tokens ?? Math.min(MAX_ANSWER_TOKENS, roomMax);
    const outcome = await this.complete(PROBE_MESSAGES.system, PROBE_MESSAGES.user, answerSchema, probeMaxTokens, timeoutMs, async (f) => {
      lines.push(`probe call: attempt ${f.attempt} brought no answer (${f.kind})${f.backoff_ms === null ? '' : `; trying again in ${f.backoff_ms} ms (retry policy)`}`);
    });
    facts.probe_finish_reason = outcome.finish_reason;
    facts.probe_latency_ms = outcome.latency_ms;
    facts.probe_response_model = outcome.response_model;
    facts.probe_prompt_tokens = outcome.usage?.prompt_tokens ?? null;
    facts.probe_completion_tokens = outcome.usage?.completion_tokens ?? null;
    facts.probe_usage_source = outcome.usage_source;
    facts.probe_attempts = outcome.attempts;
    facts.probe_raw_output = outcome.raw_output === null ? null : outcome.raw_output.slice(0, OPENAI_ADAPTER_LIMITS.probeRawChars);
    facts.probe_timings = outcome.server_timings ? JSON.stringify(outcome.server_timings) : null;
    // In order (issue 31 item 3c): transport, HTTP, is it JSON, does it satisfy the schema, then
    // finish_reason — so each refusal names the cause, not its symptom (prose until the cap is a
    // constraint ignored, not a cap too small).
    if (outcome.kind === 'failed') {
      const hint = outcome.failure === 'http_error' ? `; the server may not accept dialect ${this.dialect}: ${this.otherDialectAdvice(props)}` : '';
      return refuse(`the probe call in dialect ${this.dialect} failed (${outcome.failure}): ${outcome.detail}${hint}`);
    }
    const verdict = checkConstrainedAnswer(this.dialect, answerSchema, outcome.raw_output);
    facts.probe_schema_valid = verdict.schema_valid;
    lines.push(`probe call (max_tokens ${probeMaxTokens}): answered in ${outcome.latency_ms} ms, finish_reason ${outcome.finish_reason ?? 'none'}, ${outcome.usage.prompt_tokens}+${outcome.usage.completion_tokens} tokens (${outcome.usage_source}), schema checked with ${verdict.checked_with}`);
    if (!verdict.honoured) {
      // A constrained decoder writes a prefix of valid JSON; cut at the cap that is all it is. Prose is a constraint ignored.
      if (outcome.finish_reason === 'length' && outcome.raw_output.trimStart().startsWith('{') && !verdict.schema_valid && isJsonPrefix(outcome.raw_output)) {
        return refuse(`the probe answer was cut at its token cap (max_tokens ${probeMaxTokens}, finish_reason length) while still JSON, so the constraint (dialect ${this.dialect}) could not be confirmed; the study's answers get ${this.params.max_tokens === null ? 'at most' : 'the same'} cap: raise max_tokens (--max-tokens, or params.max_tokens in the model configuration)`);
      }
      return refuse(`${verdict.reason}${outcome.finish_reason === 'length' ? ` (the answer ran to its cap of ${probeMaxTokens} tokens: a server that ignores the constraint writes until it is cut)` : ''}; ${this.otherDialectAdvice(props)}`);
    }
    lines.push(`the constraint is honoured (dialect ${this.dialect}): ${verdict.detail}`);
    return { ok: true, facts, lines: lines.map((l) => this.redact(l)) };
  }

  /**
   * Before hour 0, with the plan in hand (issue 31 item 3): each sample counted as a call would
   * count it (the server's tokenizer, else the estimate, said so), against the context it reports;
   * then one call of `speedSample` in the configured dialect, through the same path as a study call,
   * timed by the server's own `timings` where it sends them (llama.cpp), else by the wall clock.
   * Outside the study's budget; nothing here decides — controller/model-forecast.ts judges.
   */
  async measure(samples: readonly PromptSample[], speedSampleOf: SpeedSampleOf, answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<ModelMeasurement> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new OpenAiAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    const sideMs = Math.min(timeoutMs, OPENAI_ADAPTER_LIMITS.sideRequestTimeoutMs);
    const { context, reachable } = await this.learnContext(sideMs);
    return measureWith(
      {
        count: (system, user) => (reachable ? this.countPrompt(system, user, sideMs) : Promise.resolve(this.estimatePrompt(system, user))),
        complete: (system, user, answerCap) => this.complete(system, user, answerSchema, answerCap, timeoutMs, undefined),
        redact: (text) => this.redact(text),
      },
      samples,
      speedSampleOf,
      context,
    );
  }

  // -------------------------------------------------------------------------------------

  private authHeaders(): Record<string, string> {
    return this.apiKey === null ? {} : { authorization: `Bearer ${this.apiKey}` };
  }

  private redact(text: string): string {
    return this.redactor.redact(text);
  }

  private redactFacts(facts: Readonly<Record<string, string | number | boolean | null>>): Record<string, string | number | boolean | null> {
    return this.redactor.redactFacts(facts);
  }

  /**
   * The dialect most likely to work on this server instead of the configured one, as advice the
   * tool accepts: llama.cpp (it answers /props) ignores OpenAI's form in some builds (b4748) but
   * honours its own fields; any other server is asked in OpenAI's form.
   */
  private otherDialectAdvice(props: ServerProps | null | 'unreachable'): string {
    const llamaCpp = props !== null && props !== 'unreachable';
    const other: StructuredOutputDialect = this.dialect === 'llamacpp' ? 'json_schema' : llamaCpp ? 'llamacpp' : ['json_schema', 'vllm', 'ollama'].includes(this.dialect) ? 'json_object' : 'json_schema';
    const why = other === 'llamacpp' ? 'the server is llama.cpp (it answers /props), whose own fields constrain where its OpenAI form may be ignored' : other === 'json_object' ? 'JSON without the schema: the runtime still checks every answer against it, and the record says the constraint was weaker' : "OpenAI's form, which vLLM, OpenAI and current llama.cpp honour";
    return `try dialect ${other} (${why}): start again with --structured-output ${other}, or "structured_output": "${other}" in the model configuration file`;
  }

  private redactNullable(text: string | null): string | null {
    return this.redactor.redactNullable(text);
  }

  /** The server's context size (llama.cpp /props, else vLLM's max_model_len), else the configured one, else null. */
  private contextFrom(props: { readonly n_ctx: number | null } | null, served: ServedModel | undefined): ContextSize | null {
    if (props !== null && props.n_ctx !== null) return { size: props.n_ctx, source: `server: GET ${this.probe.propsUrl} default_generation_settings.n_ctx` };
    if (served !== undefined && served.max_model_len !== null) return { size: served.max_model_len, source: `server: GET ${this.probe.modelsUrl} max_model_len` };
    return this.configuredContextSize === null ? null : { size: this.configuredContextSize, source: 'configured contextSize' };
  }

  /**
   * Learns the context size once. A server that cannot be reached is asked again next call (the
   * configured size serves meanwhile), and `reachable: false` spares this call the tokenizer
   * requests too: a hung server would otherwise cost a side timeout per request before the chat
   * attempt even starts.
   */
  private async learnContext(timeoutMs: number): Promise<{ readonly context: ContextSize | null; readonly reachable: boolean }> {
    if (this.context !== undefined) return { context: this.context, reachable: true };
    const props = await this.probe.props(timeoutMs);
    if (props === 'unreachable') return { context: this.contextFrom(null, undefined), reachable: false };
    if (props !== null && props.n_ctx !== null) return { context: (this.context = this.contextFrom(props, undefined)), reachable: true };
    const models = await this.probe.listModels(timeoutMs);
    if (models.kind === 'no_answer' || models.kind === 'timeout') return { context: this.contextFrom(null, undefined), reachable: false };
    const served = models.kind === 'listed' ? models.models.find((m) => m.id === this.model_id) : undefined;
    return { context: (this.context = this.contextFrom(null, served)), reachable: true };
  }

  private estimatePrompt(system: string, user: string): PromptCount {
    return { tokens: estimateTokens(system) + estimateTokens(user), source: 'estimate', messages: 2 };
  }

  /** The prompt's size: the server's tokenizer (system and user counted apart, as they are sent), else the estimate. */
  private async countPrompt(system: string, user: string, timeoutMs: number): Promise<PromptCount> {
    const estimate = this.estimatePrompt(system, user);
    let systemTokens: number | null = null;
    if (this.tokenizer === undefined) {
      const found = await this.probe.findTokenizer(system, timeoutMs);
      if (found.kind === 'unreachable') return estimate;
      this.tokenizer = found.kind;
      systemTokens = found.tokens;
    }
    const kind = this.tokenizer;
    if (kind === 'none') return estimate;
    // One after the other, never at once: one request of this adapter at a time (issue 31 item 8).
    const s = systemTokens === null ? await this.probe.tokenize(kind, system, timeoutMs) : { kind: 'counted' as const, tokens: systemTokens };
    if (s.kind !== 'counted') return estimate;
    const u = await this.probe.tokenize(kind, user, timeoutMs);
    if (u.kind !== 'counted') return estimate;
    return { tokens: s.tokens + u.tokens, source: 'tokenizer', messages: 2 };
  }

  private requestBody(system: string, user: string, answerSchema: Readonly<Record<string, unknown>>, maxTokens: number): Record<string, unknown> {
    const p = this.params;
    return {
      model: this.model_id,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ],
      max_tokens: maxTokens,
      ...(p.temperature === null ? {} : { temperature: p.temperature }),
      ...(p.top_p === null ? {} : { top_p: p.top_p }),
      ...(p.seed === null ? {} : { seed: p.seed }),
      ...(this.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      ...structuredOutputFields(this.dialect, answerSchema),
    };
  }

  /** One model call from counting the prompt to the outcome (call and the preflight probe). */
  private async complete(system: string, user: string, answerSchema: Readonly<Record<string, unknown>>, maxTokens: number, timeoutMs: number, onTransportFailure: ((f: TransportFailure) => Promise<void>) | undefined): Promise<ModelCallOutcome> {
    const started = performance.now();
    const elapsedMs = (): number => Math.max(0, Math.round(performance.now() - started));
    const sideMs = Math.min(timeoutMs, OPENAI_ADAPTER_LIMITS.sideRequestTimeoutMs);
    const { context, reachable } = await this.learnContext(sideMs);
    const count = reachable ? await this.countPrompt(system, user, sideMs) : this.estimatePrompt(system, user);
    const counted = { prompt_tokens_counted: count.tokens, prompt_count_source: count.source } as const;
    const failed = (failure: Extract<ModelCallOutcome, { kind: 'failed' }>['failure'], detail: string, rawOutput: string | null, facts: Omit<CallFacts, 'prompt_tokens_counted' | 'prompt_count_source'>): ModelCallOutcome => ({
      kind: 'failed',
      failure,
      // No usage, no estimate (issue 31 item 7): the detail says why the ledger counts nothing.
      detail: this.redact(facts.usage === null ? `${detail}; ${NO_TOKENS_RECORDED}: ${noUsageReason(failure)}` : detail),
      raw_output: this.redactNullable(rawOutput),
      latency_ms: elapsedMs(),
      ...facts,
      response_model: this.redactNullable(facts.response_model),
      ...counted,
    });
    const nothingKnown = { finish_reason: null, response_model: null, usage: null, usage_source: null } as const;

    const fit = checkPromptFits(count, maxTokens, context);
    if (!fit.fits) return failed('truncated_prompt', fit.detail, null, { ...nothingKnown, attempts: 1 });

    const body = JSON.stringify(this.requestBody(system, user, answerSchema, maxTokens));
    const result = await withTransportRetry(this.retry, (n) => this.attempt(body, timeoutMs, n), onTransportFailure);
    if (result.kind === 'no_answer') return failed('transport', noAnswerDetail(`POST ${this.chatUrl}`, result, this.retry), null, { ...nothingKnown, attempts: result.attempts });
    const attempts = result.attempts;
    const reply = result.value;

    /** The server's usage when it sent a well-formed one, else the estimate (the prompt as counted, the text as ceil(chars / 4)), said to be one. */
    const usageOf = (serverUsage: unknown, text: string): { usage: TokenUsage; usage_source: 'server' | 'estimate' } => {
      const u = Usage.safeParse(serverUsage);
      if (u.success) return { usage: { prompt_tokens: u.data.prompt_tokens, completion_tokens: u.data.completion_tokens }, usage_source: 'server' };
      return { usage: { prompt_tokens: count.tokens, completion_tokens: estimateTokens(text) }, usage_source: 'estimate' };
    };
    const fromState = (state: ChatStreamState | null) => ({
      finish_reason: state?.finish_reason ?? null,
      response_model: state?.model ?? null,
      ...usageOf(state?.usage, state?.content ?? ''),
      attempts,
      ...timingsField(state?.timings),
      prompt_reuse: promptReuseOf(state?.usage, state?.timings), cache_read_tokens: cachedTokensOf(state?.usage),
    });

    switch (reply.kind) {
      case 'timeout':
        // The request was sent, so the prompt counts as spent (estimated); what streamed in is kept.
        return failed('timeout', reply.detail, reply.state === null || !reply.state.sawContent ? null : reply.state.content, fromState(reply.state));
      case 'stream_broken':
        return failed('stream_broken', reply.detail, reply.state === null || !reply.state.sawContent ? null : reply.state.content, fromState(reply.state));
      case 'http_error':
        return failed('http_error', reply.detail, reply.state === null || !reply.state.sawContent ? null : reply.state.content, reply.answered2xx ? fromState(reply.state) : { ...nothingKnown, finish_reason: reply.state?.finish_reason ?? null, response_model: reply.state?.model ?? null, attempts });
      case 'completion': {
        const facts = { finish_reason: reply.finish_reason, response_model: reply.model, ...usageOf(reply.usage, reply.content ?? reply.refusal ?? ''), attempts, ...timingsField(reply.timings), prompt_reuse: promptReuseOf(reply.usage, reply.timings), cache_read_tokens: cachedTokensOf(reply.usage) };
        if (reply.refusal !== null && reply.refusal.trim() !== '') {
          return failed('refusal', `the model refused: ${JSON.stringify(reply.refusal.slice(0, OPENAI_ADAPTER_LIMITS.quotedBodyChars))}`, reply.content ?? reply.refusal, facts);
        }
        if (reply.finish_reason === 'content_filter') {
          return failed('refusal', `the server's content filter stopped the answer (finish_reason content_filter)${reply.content === null ? '' : ` after ${reply.content.length} chars`}`, reply.content, facts);
        }
        if (reply.content === null) {
          return failed('http_error', `POST ${this.chatUrl}: the completion has no choices[0].message.content (finish_reason ${reply.finish_reason ?? 'none'})`, null, facts);
        }
        const truncation = checkPromptNotTruncated(count, facts.usage_source === 'server' ? facts.usage.prompt_tokens : null);
        if (truncation.truncated) return failed('truncated_prompt', truncation.detail, reply.content, facts);
        return {
          kind: 'answered',
          raw_output: this.redact(reply.content),
          usage: facts.usage,
          usage_source: facts.usage_source,
          latency_ms: elapsedMs(),
          system_fingerprint: this.redactNullable(reply.system_fingerprint),
          finish_reason: facts.finish_reason,
          response_model: this.redactNullable(facts.response_model),
          attempts,
          ...timingsField(reply.timings),
          prompt_reuse: facts.prompt_reuse, cache_read_tokens: facts.cache_read_tokens,
          ...counted,
        };
      }
      default: {
        assertNever(reply, 'chat reply');
      }
    }
  }

  /**
   * One transport attempt: an answer (or a timeout) ends the call; no answer goes back to the
   * retry policy. Through the adapter's gate: the request has a connection of its own, closed —
   * and seen closed — before this returns (http-exchange.ts), so no later request of this adapter
   * overlaps it, a timed-out one included.
   */
  private attempt(body: string, timeoutMs: number, n: number): Promise<AttemptResult<ChatReply>> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: this.stream ? 'text/event-stream, application/json' : 'application/json', ...this.authHeaders() };
    const request = { method: 'POST' as const, url: this.chatUrl, headers, body, timeoutMs, connectTimeoutMs: Math.min(timeoutMs, OPENAI_ADAPTER_LIMITS.sideRequestTimeoutMs) };
    return this.gate.run(request, (exchange) => this.attemptOn(exchange, timeoutMs, n));
  }

  private async attemptOn(exchange: HttpExchange, timeoutMs: number, n: number): Promise<AttemptResult<ChatReply>> {
    const what = `POST ${this.chatUrl}`;
    const answer = (reply: ChatReply): AttemptResult<ChatReply> => ({ ok: true, value: reply });
    const noAnswer = (na: NoAnswer): AttemptResult<ChatReply> => ({ ok: false, noAnswer: { ...na, detail: this.redact(na.detail) } });
    const timeoutReply = (state: ChatStreamState | null, stage: string): ChatReply => ({
      kind: 'timeout',
      state,
      detail: `no complete answer from ${what} ${answerNotWithin(timeoutMs)} (attempt ${n}; ${stage}); the request had reached the server, which may have queued or evaluated it (its prompt is counted as spent, estimated where the server said nothing); the request was aborted, its connection closed before anything else was sent (a streaming server stops decoding it; llama.cpp b4748 still runs a request it had only queued), and a timeout is not retried${state !== null && state.sawContent ? `; ${state.content.length} chars had arrived and are kept` : ''}`,
    });
    const opened = await openAttempt(exchange, what, timeoutMs, OPENAI_ADAPTER_LIMITS.sideRequestTimeoutMs);
    if (opened.kind === 'no_answer') return noAnswer(opened.noAnswer);
    if (opened.kind === 'timed_out') return answer(timeoutReply(null, 'no response headers had arrived'));
    const { response, status } = opened;

    if (response.status < 200 || response.status > 299) {
      const error = await errorStatusOf(response, status, this.maxResponseBytes, (bytes, unreadable) => `; body: ${bytes === null ? unreadable : quoteBody(bytes, OPENAI_ADAPTER_LIMITS.quotedBodyChars)}`);
      return error.kind === 'no_answer' ? noAnswer(error.noAnswer) : answer({ kind: 'http_error', detail: error.detail, state: null, answered2xx: false });
    }

    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.includes('text/event-stream') && response.body !== null) {
      const state = emptyChatStreamState();
      const { end } = await readChatStream(response.body, { maxBytes: this.maxResponseBytes, maxEvents: OPENAI_ADAPTER_LIMITS.maxStreamEvents }, state);
      return answer(this.streamReply(state, end, status, exchange.signal, timeoutReply));
    }

    // Not streamed: the server was asked not to, or ignored `stream: true`.
    const whole = await readWholeBody(response, exchange.signal, this.maxResponseBytes, status);
    if (whole.kind === 'timeout') return answer(timeoutReply(null, 'the response body had not fully arrived'));
    if (whole.kind === 'broken') return answer({ kind: 'stream_broken', detail: whole.detail, state: null });
    if (whole.kind === 'bad') return answer({ kind: 'http_error', detail: whole.detail, state: null, answered2xx: true });
    const { text, bytes } = whole;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      // An event stream sent without its content type is still read as one.
      if (/^\s*(data|event|:)/.test(text)) {
        const state = emptyChatStreamState();
        const { end } = await readChatStream(new Response(bytes).body!, { maxBytes: this.maxResponseBytes, maxEvents: OPENAI_ADAPTER_LIMITS.maxStreamEvents }, state);
        return answer(this.streamReply(state, end, `${status} (an event stream without its content type)`, exchange.signal, timeoutReply));
      }
      return answer({ kind: 'http_error', detail: `${status}: the body is not JSON (${describeError(error)}); it begins ${JSON.stringify(text.slice(0, OPENAI_ADAPTER_LIMITS.quotedBodyChars))}`, state: null, answered2xx: true });
    }
    const completion = ChatCompletion.safeParse(json);
    if (!completion.success) {
      const issues = completion.error.issues.slice(0, 4).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
      return answer({ kind: 'http_error', detail: `${status}: not a chat completion (${issues}); it begins ${JSON.stringify(text.slice(0, OPENAI_ADAPTER_LIMITS.quotedBodyChars))}`, state: null, answered2xx: true });
    }
    const c = completion.data;
    const choice = c.choices[0]!;
    return answer({ kind: 'completion', content: choice.message.content ?? null, refusal: choice.message.refusal ?? null, finish_reason: choice.finish_reason ?? null, usage: c.usage, timings: c.timings, model: c.model ?? null, system_fingerprint: c.system_fingerprint ?? null });
  }

  /** How a read stream ended, as a reply: complete (a finish_reason or [DONE]), timed out, broken, or wrong. */
  private streamReply(state: ChatStreamState, end: Awaited<ReturnType<typeof readChatStream>>['end'], status: string, signal: AbortSignal, timeoutReply: (state: ChatStreamState | null, stage: string) => ChatReply): ChatReply {
    const arrived = `${state.events} events, ${state.content.length} chars had arrived`;
    switch (end.kind) {
      case 'broken': {
        if (signal.aborted) return timeoutReply(state, `the stream was still arriving (${arrived})`);
        return { kind: 'stream_broken', detail: `${status}: the stream broke off before the answer was complete (${describeError(end.error)}); ${arrived} and are kept, not used`, state };
      }
      case 'over_limit':
      case 'server_error':
      case 'malformed':
        return { kind: 'http_error', detail: `${status}: ${end.detail} (${arrived})`, state, answered2xx: true };
      case 'done':
      case 'eof':
        if (state.finish_reason === null && end.kind === 'eof') {
          return { kind: 'stream_broken', detail: `${status}: the stream ended without a finish_reason or [DONE]: the answer may be incomplete; ${arrived} and are kept, not used`, state };
        }
        return { kind: 'completion', content: state.content, refusal: state.refusal === '' ? null : state.refusal, finish_reason: state.finish_reason, usage: state.usage, timings: state.timings, model: state.model, system_fingerprint: state.system_fingerprint };
      default: {
        assertNever(end, 'stream end');
      }
    }
  }
}
