// Why one file: its parts have files of their own (gemini-options, gemini-request, gemini-stream, gemini-reply, gemini-models-api; the shared http-exchange, http-attempt, transport-retry, bounded-http, sse-events, prompt-fit, structured-output, call-delivery, api-key-redaction, measured-speed, json-prefix); what is left is the one call sequence and its preflight, which map every way a call can end.
// The `gemini` model adapter (issue 36 item 3, docs/model-protocol.md "gemini"): Google's Gemini
// API spoken natively, not through its OpenAI-compatible endpoint — so the schema sent is the one
// Gemini applies (`generationConfig.responseJsonSchema`), and its finishReason and usageMetadata
// reach the record as Gemini said them.
//
// One call, in order (the openai adapter's sequence, openai-adapter.ts):
// 1. Once: GET models/{model} gives inputTokenLimit and outputTokenLimit (else the configured
//    context_size).
// 2. The prompt counted by POST …:countTokens when configured (count_tokens), else estimated
//    (ceil(chars / 4)) and marked so; a prompt over the input limit is not sent.
// 3. POST …:streamGenerateContent?alt=sse (default) or …:generateContent, the key in the
//    x-goog-api-key header. Attempts that bring no answer — refused or reset connections, 429
//    RESOURCE_EXHAUSTED, 503 UNAVAILABLE and every other 408/409/5xx — are retried under the
//    pre-registered policy, each reported through onTransportFailure first; a Retry-After header
//    or the error's RetryInfo.retryDelay is quoted in the detail, not followed. A timeout aborts
//    the request and closes its connection (a streamed call is cancelled so) and is not retried.
// 4. The outcome: finish_reason mapped from finishReason with the original in
//    provider_finish_reason, usage from usageMetadata (thoughts counted as completion),
//    cache_read_tokens, prompt_reuse, response_model = modelVersion, the attempts.
//
// The key is read from the environment by the caller and only ever sent in its header; every
// detail and text of an outcome or a preflight passes through `redact`.
import type { GeminiDialect, TransportRetryPolicy } from '../../schema/model-call-policy.js';
import { MAX_ANSWER_TOKENS, sentAnswerCap } from '../answer-cap.js';
import { NO_TOKENS_RECORDED, noUsageReason, type CallFacts, type ModelAdapter, type ModelAdapterDefinition, type ModelCallOutcome, type ModelMeasurement, type ModelParams, type ModelRequest, type PreflightResult, type PromptSample, type SpeedSampleOf, type TransportFailure } from '../model-adapter.js';
import { estimateTokens } from '../prompt.js';
import { ApiKeyRedactor } from './api-key-redaction.js';
import { describeError, quoteBody } from './bounded-http.js';
import { answerNotWithin } from './call-delivery.js';
import { GEMINI_ADAPTER_LIMITS, GeminiAdapterConfigError, GeminiAdapterOptions, geminiUrlsOf, type GeminiUrls } from './gemini-options.js';
import { finishReasonOf, geminiUsageOf, REFUSAL_FINISH_REASONS, type GeminiReply } from './gemini-reply.js';
import { geminiRequestBody } from './gemini-request.js';
import { applyGeminiChunk, emptyGeminiState, googleErrorText, readGeminiStream, type GeminiReplyState } from './gemini-stream.js';
import { GeminiModelsApi } from './gemini-models-api.js';
import { errorStatusOf, noAnswerDetail, openAttempt, readWholeBody } from './http-attempt.js';
import { ExchangeGate, type HttpExchange } from './http-exchange.js';
import { isJsonPrefix } from './json-prefix.js';
import { measureWith } from './measured-speed.js';
import { checkPromptFits, checkPromptNotTruncated, type PromptCount } from './prompt-fit.js';
import { checkConstrainedAnswer, PROBE_MESSAGES } from './structured-output.js';
import { withTransportRetry, type AttemptResult, type NoAnswer } from './transport-retry.js';

/** The gemini adapter as the house asks it (runtime/model-adapter.ts ModelAdapterDefinition; listed in adapter-list.ts). */
export const GEMINI_ADAPTER: ModelAdapterDefinition<'gemini'> = {
  name: 'gemini',
  callsModel: true,
  usageCountedBy: ['server', 'estimate'],
  promptCountedBy: ['tokenizer', 'estimate'],
  callTimeoutMs: (config) => config.timeout_ms,
  checkedBeforeStart: true,
  answeredByServer: true,
  preflightReportsBuild: false,
  create: (config) => {
    const apiKey = process.env[config.api_key_env];
    if (apiKey === undefined || apiKey === '') throw new Error(`the environment variable ${config.api_key_env} (the Gemini API key) is not set`);
    return new GeminiAdapter({ baseUrl: config.base_url, modelId: config.model_id, apiKey, params: config.params, dialect: config.dialect, retry: config.retry, contextSize: config.context_size, stream: config.stream, countTokens: config.count_tokens });
  },
};

/** The model's limits as learnt: the context the forecast and the fit check use is input + output. */
interface GeminiLimits {
  readonly input: number | null;
  readonly output: number | null;
  readonly source: string;
}

type Failure = Extract<ModelCallOutcome, { kind: 'failed' }>['failure'];

export class GeminiAdapter implements ModelAdapter {
  readonly name = 'gemini' as const;
  readonly model_id: string;
  readonly params: ModelParams;
  readonly build = null;
  readonly dialect: GeminiDialect;
  readonly retry: TransportRetryPolicy;
  readonly stream: boolean;
  readonly countTokens: boolean;
  private readonly urls: GeminiUrls;
  private readonly apiKey: string;
  private readonly redactor: ApiKeyRedactor;
  private readonly configuredContextSize: number | null;
  private readonly maxResponseBytes: number;
  private readonly gate = new ExchangeGate();
  private readonly api: GeminiModelsApi;
  private limits: GeminiLimits | undefined = undefined;

  constructor(options: GeminiAdapterOptions) {
    const parsed = GeminiAdapterOptions.safeParse(options);
    // Issue paths and messages only: zod does not quote values, so the key cannot leak here.
    if (!parsed.success) throw new GeminiAdapterConfigError(`gemini adapter options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    const o = parsed.data;
    this.model_id = o.modelId;
    this.params = { ...o.params };
    this.dialect = o.dialect;
    this.retry = { max_attempts: o.retry.max_attempts, backoff_ms: [...o.retry.backoff_ms] };
    this.stream = o.stream;
    this.countTokens = o.countTokens;
    this.urls = geminiUrlsOf(o.baseUrl, o.modelId);
    this.apiKey = o.apiKey;
    this.redactor = new ApiKeyRedactor(o.apiKey);
    this.configuredContextSize = o.contextSize;
    this.maxResponseBytes = o.maxResponseBytes ?? GEMINI_ADAPTER_LIMITS.maxResponseBytes;
    this.api = new GeminiModelsApi(this.urls, this.model_id, { 'x-goog-api-key': this.apiKey }, this.gate);
  }

  async call(request: ModelRequest, timeoutMs: number): Promise<ModelCallOutcome> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new GeminiAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    if (!Number.isSafeInteger(request.max_tokens) || request.max_tokens < 1) throw new GeminiAdapterConfigError(`request.max_tokens must be a positive integer, got ${request.max_tokens}`);
    const maxTokens = sentAnswerCap(request.max_tokens, this.params.max_tokens);
    return this.complete(request.system, request.user, request.answer_schema, maxTokens, timeoutMs, request.onTransportFailure);
  }

  /**
   * Before hour 0: GET models/{model} shows the model served (under the retry policy) and gives
   * its token limits; countTokens answers when configured; one probe call whose answer must show
   * the constraint honoured. A 400 INVALID_ARGUMENT to the probe is the schema refused: the
   * refusal quotes Google's message.
   */
  async preflight(answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<PreflightResult> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new GeminiAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    const lines: string[] = [];
    let learnt: Record<string, string | number | boolean | null> | null = null;
    const refuse = (reason: string): PreflightResult => ({ ok: false, reason: this.redact(reason), ...(learnt === null ? {} : { facts: this.redactFacts(learnt) }), lines: [...lines, `refused: ${reason}`].map((l) => this.redact(l)) });
    const sideMs = Math.min(timeoutMs, GEMINI_ADAPTER_LIMITS.sideRequestTimeoutMs);

    const looked = await withTransportRetry(
      this.retry,
      async (): Promise<AttemptResult<Exclude<Awaited<ReturnType<GeminiModelsApi['model']>>, { kind: 'no_answer' }>>> => {
        const r = await this.api.model(sideMs);
        return r.kind === 'no_answer' ? { ok: false, noAnswer: r.noAnswer } : { ok: true, value: r };
      },
      async (f) => {
        lines.push(`GET ${this.urls.model}: attempt ${f.attempt} brought no answer (${f.kind})${f.backoff_ms === null ? '' : `; trying again in ${f.backoff_ms} ms (retry policy)`}`);
      },
    );
    if (looked.kind === 'no_answer') return refuse(`the Gemini API does not answer: GET ${this.urls.model} brought no answer in ${looked.attempts} attempt(s) (retry policy: max_attempts ${this.retry.max_attempts}); last: ${looked.last.detail}. Check the base URL and the network`);
    const model = looked.value;
    if (model.kind === 'timeout') return refuse(`the Gemini API does not answer: ${model.detail}`);
    if (model.kind === 'refused') {
      if (model.status === 401 || model.status === 403 || /API_KEY_INVALID|API key not valid/.test(model.detail)) return refuse(`the Gemini API refused the key: ${model.detail}; set the environment variable the configuration names (api_key_env) to a valid API key, or name another with --api-key-env VAR`);
      if (model.status === 404) return refuse(`the Gemini API serves no model ${JSON.stringify(this.model_id)}: ${model.detail}; give a model id GET /v1beta/models lists (without "models/"), with --model-id`);
      return refuse(`GET ${this.urls.model} did not show the model: ${model.detail}`);
    }
    if (model.generates === false) return refuse(`the model ${model.name} does not list generateContent among its supportedGenerationMethods: choose a generative model with --model-id`);
    lines.push(`GET ${this.urls.model}: the API serves ${model.name}${model.version === null ? '' : ` (version ${model.version})`}`);
    this.limits = this.limitsFrom(model.inputTokenLimit, model.outputTokenLimit);
    lines.push(this.limits.input === null ? 'input token limit: unknown (the Models API reports none and none is configured): prompts are not checked against it' : `input token limit ${this.limits.input}, output token limit ${this.limits.output ?? 'unknown'} (${this.limits.source})`);
    if (!this.stream) lines.push('stream: off — a call that times out is abandoned here, but the API may finish (and bill) it');

    let countTokens: string | null = null;
    if (this.countTokens) {
      const c = await this.api.countTokens(PROBE_MESSAGES.system, PROBE_MESSAGES.user, sideMs);
      if (c.kind === 'failed') return refuse(`count_tokens is configured, but POST ${this.urls.countTokens} does not count: ${c.detail}; fix the cause, or start without --count-tokens ("count_tokens": false: prompts are then estimated, and marked so)`);
      countTokens = `answers (${c.tokens} tokens for the probe prompt)`;
      lines.push(`POST ${this.urls.countTokens}: ${countTokens}`);
    } else {
      lines.push('count_tokens: off — prompt sizes are estimated (ceil(chars / 4)) and marked so; a truncated prompt cannot be detected');
    }

    const facts: Record<string, string | number | boolean | null> = {
      served_model: model.name,
      model_version: model.version,
      context_size: this.contextOf()?.size ?? null,
      context_source: this.contextOf()?.source ?? null,
      input_token_limit: this.limits.input,
      output_token_limit: this.limits.output,
      count_tokens: countTokens,
      dialect: this.dialect,
      stream: this.stream,
      retry_max_attempts: this.retry.max_attempts,
      retry_backoff_ms: this.retry.backoff_ms.join(','),
      probe_finish_reason: null,
      probe_provider_finish_reason: null,
      probe_latency_ms: null,
      probe_response_model: null,
      probe_prompt_tokens: null,
      probe_completion_tokens: null,
      probe_usage_source: null,
      probe_attempts: null,
      probe_schema_valid: null,
      probe_raw_output: null,
    };
    learnt = facts;

    const probeMaxTokens = this.params.max_tokens ?? Math.min(MAX_ANSWER_TOKENS, this.limits.output ?? MAX_ANSWER_TOKENS);
    const outcome = await this.complete(PROBE_MESSAGES.system, PROBE_MESSAGES.user, answerSchema, probeMaxTokens, timeoutMs, async (f) => {
      lines.push(`probe call: attempt ${f.attempt} brought no answer (${f.kind})${f.backoff_ms === null ? '' : `; trying again in ${f.backoff_ms} ms (retry policy)`}`);
    });
    facts.probe_finish_reason = outcome.finish_reason;
    facts.probe_provider_finish_reason = outcome.provider_finish_reason ?? null;
    facts.probe_latency_ms = outcome.latency_ms;
    facts.probe_response_model = outcome.response_model;
    facts.probe_prompt_tokens = outcome.usage?.prompt_tokens ?? null;
    facts.probe_completion_tokens = outcome.usage?.completion_tokens ?? null;
    facts.probe_usage_source = outcome.usage_source;
    facts.probe_attempts = outcome.attempts;
    facts.probe_raw_output = outcome.raw_output === null ? null : outcome.raw_output.slice(0, GEMINI_ADAPTER_LIMITS.probeRawChars);
    if (outcome.kind === 'failed') {
      if (outcome.failure === 'http_error' && /\b400 INVALID_ARGUMENT\b/.test(outcome.detail)) {
        return refuse(`the Gemini API refused the probe call's request in dialect ${this.dialect} (400 INVALID_ARGUMENT), most likely the answer's JSON Schema: ${outcome.detail}; the schema must stay within what responseJsonSchema accepts (docs/model-protocol.md "gemini")`);
      }
      return refuse(`the probe call in dialect ${this.dialect} failed (${outcome.failure}): ${outcome.detail}`);
    }
    const verdict = checkConstrainedAnswer('json_schema', answerSchema, outcome.raw_output);
    facts.probe_schema_valid = verdict.schema_valid;
    lines.push(`probe call (maxOutputTokens ${probeMaxTokens}): answered in ${outcome.latency_ms} ms, finishReason ${outcome.provider_finish_reason ?? 'none'}, ${outcome.usage.prompt_tokens}+${outcome.usage.completion_tokens} tokens (${outcome.usage_source}), schema checked with ${verdict.checked_with}`);
    if (!verdict.honoured) {
      if (outcome.finish_reason === 'length' && isJsonPrefix(outcome.raw_output)) {
        return refuse(`the probe answer was cut at its token cap (maxOutputTokens ${probeMaxTokens}, finishReason MAX_TOKENS) while still JSON, so the constraint (dialect ${this.dialect}) could not be confirmed; raise max_tokens (--max-tokens, or params.max_tokens in the model configuration)`);
      }
      return refuse(`${verdict.reason.replace('dialect json_schema', `dialect ${this.dialect}`)}; the Gemini API was asked with responseMimeType application/json and responseJsonSchema, which it applies to the model it serves — a model that does not is not usable here: choose another with --model-id`);
    }
    lines.push(`the constraint is honoured (dialect ${this.dialect}): ${verdict.detail}`);
    return { ok: true, facts, lines: lines.map((l) => this.redact(l)) };
  }

  /** Before hour 0, with the plan: each sample counted as a call counts it (:countTokens, else the estimate), then the timed calls (the wall clock: Gemini reports no split of its work). */
  async measure(samples: readonly PromptSample[], speedSampleOf: SpeedSampleOf, answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<ModelMeasurement> {
    const sideMs = Math.min(timeoutMs, GEMINI_ADAPTER_LIMITS.sideRequestTimeoutMs);
    await this.learnLimits(sideMs);
    return measureWith(
      {
        count: (system, user) => this.countPrompt(system, user, sideMs),
        complete: (system, user, answerCap) => this.complete(system, user, answerSchema, answerCap, timeoutMs, undefined),
        redact: (text) => this.redact(text),
      },
      samples,
      speedSampleOf,
      this.contextOf(),
    );
  }

  // -------------------------------------------------------------------------------------

  private redact(text: string): string {
    return this.redactor.redact(text);
  }

  private redactNullable(text: string | null): string | null {
    return this.redactor.redactNullable(text);
  }

  private redactFacts(facts: Readonly<Record<string, string | number | boolean | null>>): Record<string, string | number | boolean | null> {
    return this.redactor.redactFacts(facts);
  }

  private limitsFrom(input: number | null, output: number | null): GeminiLimits {
    if (input !== null) return { input, output, source: `GET ${this.urls.model} inputTokenLimit/outputTokenLimit` };
    return { input: this.configuredContextSize, output, source: this.configuredContextSize === null ? 'none reported or configured' : 'configured context_size' };
  }

  /** The context the fit check and the forecast use: the input limit plus the output limit (Gemini bounds them apart). */
  private contextOf(): { readonly size: number; readonly source: string } | null {
    const l = this.limits;
    if (l === undefined || l.input === null) return null;
    return { size: l.input + (l.output ?? 0), source: `${l.source}: input ${l.input} + output ${l.output ?? 0}` };
  }

  /** Learns the limits once; an API that cannot be reached is asked again next call (the configured size serves meanwhile). */
  private async learnLimits(timeoutMs: number): Promise<void> {
    if (this.limits !== undefined) return;
    const model = await this.api.model(timeoutMs);
    if (model.kind === 'served') this.limits = this.limitsFrom(model.inputTokenLimit, model.outputTokenLimit);
    else if (this.configuredContextSize !== null) this.limits = this.limitsFrom(null, null);
  }

  private estimatePrompt(system: string, user: string): PromptCount {
    return { tokens: estimateTokens(system) + estimateTokens(user), source: 'estimate', messages: 2 };
  }

  private async countPrompt(system: string, user: string, timeoutMs: number): Promise<PromptCount> {
    if (!this.countTokens) return this.estimatePrompt(system, user);
    const c = await this.api.countTokens(system, user, timeoutMs);
    return c.kind === 'counted' ? { tokens: c.tokens, source: 'tokenizer', messages: 1 } : this.estimatePrompt(system, user);
  }

  /** A prompt the model cannot take: over the input limit, or with its cap over the whole. */
  private fitOf(count: PromptCount, maxTokens: number): ReturnType<typeof checkPromptFits> {
    const input = this.limits?.input ?? null;
    if (input !== null && count.tokens > input) {
      return { fits: false, detail: `the prompt (${count.tokens} tokens, ${count.source === 'estimate' ? 'estimated (ceil(chars / 4))' : 'counted by :countTokens'}) is over the model's input token limit ${input} (${this.limits?.source}); the request was not sent` };
    }
    return checkPromptFits(count, maxTokens, this.contextOf());
  }

  private async complete(system: string, user: string, answerSchema: Readonly<Record<string, unknown>>, maxTokens: number, timeoutMs: number, onTransportFailure: ((f: TransportFailure) => Promise<void>) | undefined): Promise<ModelCallOutcome> {
    const started = performance.now();
    const elapsedMs = (): number => Math.max(0, Math.round(performance.now() - started));
    const sideMs = Math.min(timeoutMs, GEMINI_ADAPTER_LIMITS.sideRequestTimeoutMs);
    await this.learnLimits(sideMs);
    const count = await this.countPrompt(system, user, sideMs);
    const counted = { prompt_tokens_counted: count.tokens, prompt_count_source: count.source } as const;
    const failed = (failure: Failure, detail: string, rawOutput: string | null, facts: Omit<CallFacts, 'prompt_tokens_counted' | 'prompt_count_source'>): ModelCallOutcome => ({
      kind: 'failed',
      failure,
      detail: this.redact(facts.usage === null ? `${detail}; ${NO_TOKENS_RECORDED}: ${noUsageReason(failure)}` : detail),
      raw_output: this.redactNullable(rawOutput),
      latency_ms: elapsedMs(),
      ...facts,
      response_model: this.redactNullable(facts.response_model),
      ...counted,
    });
    const nothingKnown = { finish_reason: null, provider_finish_reason: null, response_model: null, usage: null, usage_source: null, cache_read_tokens: null, cache_write_tokens: null, prompt_reuse: null } as const;

    const fit = this.fitOf(count, maxTokens);
    if (!fit.fits) return failed('truncated_prompt', fit.detail, null, { ...nothingKnown, attempts: 1 });

    const url = this.stream ? this.urls.stream : this.urls.generate;
    const body = JSON.stringify(geminiRequestBody(system, user, this.dialect, answerSchema, this.params, maxTokens));
    const result = await withTransportRetry(this.retry, (n) => this.attempt(url, body, timeoutMs, n), onTransportFailure);
    if (result.kind === 'no_answer') return failed('transport', noAnswerDetail(`POST ${url}`, result, this.retry), null, { ...nothingKnown, attempts: result.attempts });
    const attempts = result.attempts;
    const reply = result.value;
    const factsOf = (state: GeminiReplyState | null) => {
      const u = geminiUsageOf(state?.usage, count.tokens, state?.text ?? '');
      return { finish_reason: finishReasonOf(state?.finishReason ?? null), provider_finish_reason: state?.finishReason ?? null, response_model: state?.modelVersion ?? null, usage: u.usage, usage_source: u.usage_source, cache_read_tokens: u.cache_read_tokens, cache_write_tokens: null, prompt_reuse: u.prompt_reuse, attempts };
    };
    const arrived = (state: GeminiReplyState | null): string | null => (state === null || !state.sawContent ? null : state.text);

    switch (reply.kind) {
      case 'timeout':
        return failed('timeout', reply.detail, arrived(reply.state), factsOf(reply.state));
      case 'stream_broken':
        return failed('stream_broken', reply.detail, arrived(reply.state), factsOf(reply.state));
      case 'http_error':
        return failed('http_error', reply.detail, arrived(reply.state), reply.answered2xx ? factsOf(reply.state) : { ...nothingKnown, attempts });
      case 'completion': {
        const state = reply.state;
        const facts = factsOf(state);
        if (state.blockReason !== null) {
          return failed('refusal', `the Gemini API blocked the prompt (promptFeedback.blockReason ${state.blockReason}): no candidate was generated`, arrived(state), { ...facts, provider_finish_reason: state.finishReason ?? `blockReason:${state.blockReason}` });
        }
        if (state.finishReason !== null && REFUSAL_FINISH_REASONS.has(state.finishReason)) {
          return failed('refusal', `the Gemini API stopped the answer for its filters (finishReason ${state.finishReason})${state.sawContent ? ` after ${state.text.length} chars, kept and not used` : ''}`, arrived(state), facts);
        }
        if (!state.sawContent) {
          return failed('http_error', `POST ${url}: the answer has no text in candidates[0].content.parts (finishReason ${state.finishReason ?? 'none'})`, null, facts);
        }
        const truncation = checkPromptNotTruncated(count, facts.usage_source === 'server' ? facts.usage.prompt_tokens : null);
        if (truncation.truncated) return failed('truncated_prompt', truncation.detail, state.text, facts);
        return {
          kind: 'answered',
          raw_output: this.redact(state.text),
          usage: facts.usage,
          usage_source: facts.usage_source,
          latency_ms: elapsedMs(),
          system_fingerprint: null,
          finish_reason: facts.finish_reason,
          provider_finish_reason: facts.provider_finish_reason,
          response_model: this.redactNullable(facts.response_model),
          cache_read_tokens: facts.cache_read_tokens,
          cache_write_tokens: null,
          attempts,
          prompt_reuse: facts.prompt_reuse,
          ...counted,
        };
      }
      default: {
        const unhandled: never = reply;
        throw new GeminiAdapterConfigError(`bug: unknown reply ${JSON.stringify(unhandled)}`);
      }
    }
  }

  /** One transport attempt through the gate: its own connection, closed before this returns. */
  private attempt(url: string, body: string, timeoutMs: number, n: number): Promise<AttemptResult<GeminiReply>> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: this.stream ? 'text/event-stream, application/json' : 'application/json', 'x-goog-api-key': this.apiKey };
    const request = { method: 'POST' as const, url, headers, body, timeoutMs, connectTimeoutMs: Math.min(timeoutMs, GEMINI_ADAPTER_LIMITS.sideRequestTimeoutMs) };
    return this.gate.run(request, (exchange) => this.attemptOn(exchange, url, timeoutMs, n));
  }

  private async attemptOn(exchange: HttpExchange, url: string, timeoutMs: number, n: number): Promise<AttemptResult<GeminiReply>> {
    const what = `POST ${url}`;
    const answer = (reply: GeminiReply): AttemptResult<GeminiReply> => ({ ok: true, value: reply });
    const noAnswer = (na: NoAnswer): AttemptResult<GeminiReply> => ({ ok: false, noAnswer: { ...na, detail: this.redact(na.detail) } });
    const timeoutReply = (state: GeminiReplyState | null, stage: string): GeminiReply => ({
      kind: 'timeout',
      state,
      detail: `no complete answer from ${what} ${answerNotWithin(timeoutMs)} (attempt ${n}; ${stage}); the request had reached the API, which may have evaluated (and billed) it; the request was aborted and its connection closed (a streamed call is cancelled so), and a timeout is not retried${state !== null && state.sawContent ? `; ${state.text.length} chars had arrived and are kept` : ''}`,
    });
    const opened = await openAttempt(exchange, what, timeoutMs, GEMINI_ADAPTER_LIMITS.sideRequestTimeoutMs);
    if (opened.kind === 'no_answer') return noAnswer(opened.noAnswer);
    if (opened.kind === 'timed_out') return answer(timeoutReply(null, 'no response headers had arrived'));
    const { response, status } = opened;

    if (response.status < 200 || response.status > 299) {
      // Google's error object, kept for the preflight (a 400 INVALID_ARGUMENT is the schema refused).
      let google = null as string | null;
      const error = await errorStatusOf(response, status, this.maxResponseBytes, (bytes, unreadable) => {
        if (bytes === null) return `; ${unreadable}`;
        google = googleErrorOf(bytes);
        const retryDelay = retryDelayOf(bytes);
        return `; ${google ?? quoteBody(bytes, GEMINI_ADAPTER_LIMITS.quotedBodyChars)}${retryDelay === null ? '' : `; retryDelay ${JSON.stringify(retryDelay)} not followed: the backoff is pre-registered`}`;
      });
      if (error.kind === 'no_answer') return noAnswer(error.noAnswer);
      return answer({ kind: 'http_error', detail: error.detail, state: null, answered2xx: false, status: response.status, google });
    }

    const state = emptyGeminiState();
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.includes('text/event-stream') && response.body !== null) {
      const end = await readGeminiStream(response.body, { maxBytes: this.maxResponseBytes, maxEvents: GEMINI_ADAPTER_LIMITS.maxStreamEvents }, state);
      const arrivedWords = `${state.events} chunks, ${state.text.length} chars had arrived`;
      switch (end.kind) {
        case 'broken':
          if (exchange.signal.aborted) return answer(timeoutReply(state, `the stream was still arriving (${arrivedWords})`));
          return answer({ kind: 'stream_broken', detail: `${status}: the stream broke off before the answer was complete (${describeError(end.error)}); ${arrivedWords} and are kept, not used`, state });
        case 'over_limit':
        case 'server_error':
        case 'malformed':
          return answer({ kind: 'http_error', detail: `${status}: ${end.detail} (${arrivedWords})`, state, answered2xx: true, status: response.status, google: null });
        case 'eof':
          if (state.finishReason === null && state.blockReason === null) return answer({ kind: 'stream_broken', detail: `${status}: the stream ended without a finishReason: the answer may be incomplete; ${arrivedWords} and are kept, not used`, state });
          return answer({ kind: 'completion', state });
        default: {
          const unhandled: never = end;
          throw new GeminiAdapterConfigError(`bug: unknown stream end ${JSON.stringify(unhandled)}`);
        }
      }
    }

    const whole = await readWholeBody(response, exchange.signal, this.maxResponseBytes, status);
    if (whole.kind === 'timeout') return answer(timeoutReply(null, 'the response body had not fully arrived'));
    if (whole.kind === 'broken') return answer({ kind: 'stream_broken', detail: whole.detail, state: null });
    if (whole.kind === 'bad') return answer({ kind: 'http_error', detail: whole.detail, state: null, answered2xx: true, status: response.status, google: null });
    let json: unknown;
    try {
      json = JSON.parse(whole.text);
    } catch (error) {
      return answer({ kind: 'http_error', detail: `${status}: the body is not JSON (${describeError(error)}); it begins ${quoteBody(whole.bytes, GEMINI_ADAPTER_LIMITS.quotedBodyChars)}`, state: null, answered2xx: true, status: response.status, google: null });
    }
    state.events = 1;
    const bad = applyGeminiChunk(state, json);
    if (bad !== null) return answer({ kind: 'http_error', detail: `${status}: ${bad.detail}`, state, answered2xx: true, status: response.status, google: null });
    return answer({ kind: 'completion', state });
  }
}

/** The API's error object of a failed response, as `HTTP-code STATUS: message` (null when the body is not one). */
function googleErrorOf(bytes: Uint8Array): string | null {
  try {
    const error = (JSON.parse(new TextDecoder('utf-8').decode(bytes)) as { error?: unknown }).error;
    return error === undefined ? null : `error ${googleErrorText(error)}`;
  } catch {
    return null;
  }
}

/** google.rpc.RetryInfo's retryDelay in a 429's details, e.g. "37s" (null when none). */
function retryDelayOf(bytes: Uint8Array): string | null {
  try {
    const details = (JSON.parse(new TextDecoder('utf-8').decode(bytes)) as { error?: { details?: unknown } }).error?.details;
    if (!Array.isArray(details)) return null;
    const info = details.find((d) => typeof d === 'object' && d !== null && typeof (d as { retryDelay?: unknown }).retryDelay === 'string') as { retryDelay: string } | undefined;
    return info === undefined ? null : info.retryDelay.slice(0, 40);
  } catch {
    return null;
  }
}
