// Why one file: its parts have files of their own (anthropic-options, -request, -stream, -reply, -side-requests; the shared http-exchange, transport-retry, bounded-http, prompt-fit, structured-output, call-delivery, api-key-redaction); what is left is the one call sequence that ties them together and maps every way it can end, and the preflight that checks it.
// The `anthropic` model adapter (issue 36 item 1, docs/model-protocol.md "anthropic"):
// Anthropic's Messages API, POST {baseUrl}/v1/messages with `x-api-key` and `anthropic-version`.
//
// One call, in order:
// 1. Count the prompt with POST /v1/messages/count_tokens when the configuration asks for it
//    (count_tokens: true; source `server`), else estimate it (ceil(chars / 4), source
//    `estimate`); a prompt that cannot fit the model's input window with the answer's cap is
//    refused as `truncated_prompt` without sending it (prompt-fit.ts).
// 2. POST the message in the configured dialect (anthropic-request.ts), streamed by default
//    (anthropic-stream.ts). Attempts that bring no answer — connection refused or reset, 408,
//    409, 429 (rate_limit_error), 529 (overloaded_error) and every other 5xx — are retried under
//    the pre-registered policy (transport-retry.ts), each reported through
//    `request.onTransportFailure` before the wait; a `retry-after` is reported, not followed:
//    the backoff is pre-registered, the same for every group. An answer, however bad, is never
//    retried; nor is a timeout (the request is aborted and its connection closed: the API stops
//    generating a stream whose connection is gone), nor a stream the API ended with an error
//    event (it had started answering).
// 3. The outcome records finish_reason (stop_reason mapped, the original in
//    provider_finish_reason), the response's model id, the usage with the cache's reads and
//    writes, the prompt count and who made it, the attempts.
//
// Every request of this adapter passes one gate (http-exchange.ts): one at a time, each on a
// connection of its own, closed before the next starts. No redirect is followed (it would carry
// the key elsewhere). The key is read from its environment variable by `create`, sent only in the
// x-api-key header, and every text this adapter returns passes through the redactor.
import { assertNever } from '../../foundation/assert-never.js';
import type { AnthropicDialect, TransportRetryPolicy } from '../../schema/model-call-policy.js';
import { MAX_ANSWER_TOKENS, sentAnswerCap } from '../answer-cap.js';
import { NO_TOKENS_RECORDED, noUsageReason, type CallFacts, type ModelAdapter, type ModelAdapterDefinition, type ModelCallOutcome, type ModelMeasurement, type ModelParams, type ModelRequest, type PreflightResult, type PromptSample, type SpeedSampleOf, type TokenCountSource, type TokenUsage, type TransportFailure } from '../model-adapter.js';
import { estimateTokens } from '../prompt.js';
import { ApiKeyRedactor } from './api-key-redaction.js';
import { ANTHROPIC_ADAPTER_LIMITS, ANTHROPIC_VERSION, AnthropicAdapterConfigError, AnthropicAdapterOptions } from './anthropic-options.js';
import { answerOf, AnthropicMessage, contentOfMessage, contentOfStream, finishReasonOf, usageFactsOf, type AnthropicReply } from './anthropic-reply.js';
import { countTokensBody, messagesBody, type MessagesRequest } from './anthropic-request.js';
import { countTokens, lookUpModel, type ModelLookup, type SideRequestContext } from './anthropic-side-requests.js';
import { anthropicErrorText, emptyAnthropicStreamState, readAnthropicStream, type AnthropicStreamEnd, type AnthropicStreamState } from './anthropic-stream.js';
import { describeError, quoteBody } from './bounded-http.js';
import { answerNotWithin } from './call-delivery.js';
import { errorStatusOf, noAnswerDetail, openAttempt, readWholeBody } from './http-attempt.js';
import { ExchangeGate, type HttpExchange } from './http-exchange.js';
import { measureWith } from './measured-speed.js';
import { checkPromptFits, type PromptCount } from './prompt-fit.js';
import { checkConstrainedAnswer, PROBE_MESSAGES } from './structured-output.js';
import { withTransportRetry, type AttemptResult, type NoAnswer } from './transport-retry.js';

/** The anthropic adapter as the house asks it (runtime/model-adapter.ts ModelAdapterDefinition; listed in adapter-list.ts). */
export const ANTHROPIC_ADAPTER: ModelAdapterDefinition<'anthropic'> = {
  name: 'anthropic',
  callsModel: true,
  // The API's usage, else the estimate (said so); the prompt by count_tokens when configured, else the estimate.
  usageCountedBy: ['server', 'estimate'],
  promptCountedBy: ['server', 'estimate'],
  callTimeoutMs: (config) => config.timeout_ms,
  checkedBeforeStart: true,
  answeredByServer: true,
  preflightReportsBuild: false,
  create: (config) => {
    const apiKey = process.env[config.api_key_env];
    if (apiKey === undefined || apiKey === '') throw new AnthropicAdapterConfigError(`the environment variable ${config.api_key_env} (the Anthropic API key) is not set`);
    return new AnthropicAdapter({ baseUrl: config.base_url, modelId: config.model_id, apiKey, params: config.params, dialect: config.dialect, retry: config.retry, contextSize: config.context_size, stream: config.stream, countTokens: config.count_tokens });
  },
};

type Failure = Extract<ModelCallOutcome, { kind: 'failed' }>['failure'];
type Facts = Omit<CallFacts, 'prompt_tokens_counted' | 'prompt_count_source'>;
type PreflightFactValue = string | number | boolean | null;

export class AnthropicAdapter implements ModelAdapter {
  readonly name = 'anthropic' as const;
  readonly model_id: string;
  readonly params: ModelParams;
  /** A hosted API reports no build. */
  readonly build = null;
  readonly dialect: AnthropicDialect;
  readonly retry: TransportRetryPolicy;
  readonly stream: boolean;
  readonly countTokens: boolean;
  private readonly baseUrl: string;
  private readonly messagesUrl: string;
  private readonly apiKey: string;
  private readonly redactor: ApiKeyRedactor;
  private readonly configuredContextSize: number | null;
  private readonly maxResponseBytes: number;
  private readonly gate = new ExchangeGate();
  /** The model's input window: the Models API's max_input_tokens, else the configured one; undefined until the preflight asked. */
  private context: { readonly size: number; readonly source: string } | null | undefined = undefined;

  constructor(options: AnthropicAdapterOptions) {
    const parsed = AnthropicAdapterOptions.safeParse(options);
    if (!parsed.success) throw new AnthropicAdapterConfigError(`anthropic adapter options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
    const o = parsed.data;
    this.model_id = o.modelId;
    this.params = { ...o.params };
    this.dialect = o.dialect;
    this.retry = { max_attempts: o.retry.max_attempts, backoff_ms: [...o.retry.backoff_ms] };
    this.stream = o.stream;
    this.countTokens = o.countTokens;
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.messagesUrl = `${this.baseUrl}/v1/messages`;
    this.apiKey = o.apiKey;
    this.redactor = new ApiKeyRedactor(o.apiKey);
    this.configuredContextSize = o.contextSize;
    this.maxResponseBytes = o.maxResponseBytes ?? ANTHROPIC_ADAPTER_LIMITS.maxResponseBytes;
  }

  async call(request: ModelRequest, timeoutMs: number): Promise<ModelCallOutcome> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new AnthropicAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    if (!Number.isSafeInteger(request.max_tokens) || request.max_tokens < 1) throw new AnthropicAdapterConfigError(`request.max_tokens must be a positive integer, got ${request.max_tokens}`);
    const maxTokens = sentAnswerCap(request.max_tokens, this.params.max_tokens);
    return this.complete(request.system, request.user, request.answer_schema, maxTokens, timeoutMs, request.onTransportFailure);
  }

  /**
   * Before hour 0: the API serves the configured model to this key (GET /v1/models/{id}, under
   * the retry policy; a refusal names what it serves); its input window (the Models API's
   * max_input_tokens, else the configured context_size, else unknown — said); count_tokens
   * answers when configured; then one probe call in the dialect whose answer must show the
   * constraint honoured. A 400 for the schema is a refusal quoting the API's message. A hosted
   * API reports no build, so the probe is made at every start.
   */
  async preflight(answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<PreflightResult> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new AnthropicAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    const lines: string[] = [];
    const facts: Record<string, PreflightFactValue> = { served_model: null, context_size: null, context_source: null, dialect: this.dialect, stream: this.stream, count_tokens: this.countTokens, retry_max_attempts: this.retry.max_attempts, retry_backoff_ms: this.retry.backoff_ms.join(',') };
    const refuse = (reason: string): PreflightResult => ({ ok: false, reason: this.redactor.redact(reason), facts: this.redactor.redactFacts(facts), lines: [...lines, `refused: ${reason}`].map((l) => this.redactor.redact(l)) });
    const side = this.side(Math.min(timeoutMs, ANTHROPIC_ADAPTER_LIMITS.sideRequestTimeoutMs));

    // 1. The API answers, and serves the configured model to this key.
    const looked = await withTransportRetry(
      this.retry,
      async (): Promise<AttemptResult<Exclude<ModelLookup, { kind: 'no_answer' }>>> => {
        const r = await lookUpModel(side, this.model_id);
        return r.kind === 'no_answer' ? { ok: false, noAnswer: r.noAnswer } : { ok: true, value: r };
      },
      async (f) => void lines.push(`GET /v1/models/${this.model_id}: attempt ${f.attempt} brought no answer (${f.kind})${f.backoff_ms === null ? '' : `; trying again in ${f.backoff_ms} ms (retry policy)`}`),
    );
    if (looked.kind === 'no_answer') return refuse(`the API does not answer: GET ${this.baseUrl}/v1/models/${this.model_id} brought no answer in ${looked.attempts} attempt(s) (retry policy: max_attempts ${this.retry.max_attempts}); last: ${looked.last.detail}. Check the base URL (--base-url, default https://api.anthropic.com)`);
    const model = looked.value;
    if (model.kind === 'timeout') return refuse(`the API does not answer: ${model.detail}`);
    if (model.kind === 'refused') return refuse(`the API refused the model lookup (${model.detail}); a 401 is the key: check the variable the configuration names (api_key_env)`);
    if (model.kind === 'not_served') {
      const served = model.served === null ? 'the list of models did not answer' : `it serves ${model.served.length} model(s)${model.served.length === 0 ? '' : `: ${model.served.slice(0, 10).map((m) => JSON.stringify(m)).join(', ')}${model.served.length > 10 ? ', …' : ''}`}`;
      return refuse(`the API does not serve the configured model ${JSON.stringify(this.model_id)} to this key (${model.detail}); ${served}: set --model-id (or model_id) to one of them`);
    }
    facts.served_model = model.id;
    lines.push(model.id === this.model_id ? `the API serves the configured model ${JSON.stringify(model.id)}` : `the API serves the configured ${JSON.stringify(this.model_id)} as ${JSON.stringify(model.id)} (an alias; every call records the model that answered)`);

    // 2. The input window.
    this.context = model.maxInputTokens !== null ? { size: model.maxInputTokens, source: `the Models API: GET ${model.url} max_input_tokens` } : this.configuredContextSize === null ? null : { size: this.configuredContextSize, source: 'configured context_size' };
    facts.context_size = this.context?.size ?? null;
    facts.context_source = this.context?.source ?? null;
    lines.push(this.context === null ? 'input window: unknown (the Models API reports no max_input_tokens and no context_size is configured): prompts are not checked against it; set context_size (--context-size) to check them' : `input window: ${this.context.size} tokens (${this.context.source})`);
    if (!this.stream) lines.push('stream: off — a call that times out is abandoned here, but the API may go on generating it (stream is the default)');

    // 3. count_tokens, when configured.
    if (this.countTokens) {
      const counted = await countTokens(side, countTokensBody(this.messages(PROBE_MESSAGES.system, PROBE_MESSAGES.user, answerSchema)));
      if (counted.kind === 'failed') return refuse(`count_tokens is configured, but POST ${this.baseUrl}/v1/messages/count_tokens does not count (${counted.detail}); set count_tokens to false (prompts are then estimated, and the record says so)`);
      lines.push(`count_tokens: the probe prompt is ${counted.tokens} tokens by POST /v1/messages/count_tokens`);
      facts.probe_counted_tokens = counted.tokens;
    } else {
      lines.push('count_tokens: off — prompt sizes are estimated (ceil(chars / 4)) and marked so');
    }

    // 4. One probe call shows the constraint honoured.
    const probeMaxTokens = this.params.max_tokens ?? Math.min(MAX_ANSWER_TOKENS, this.context === null ? MAX_ANSWER_TOKENS : Math.max(1, this.context.size - ANTHROPIC_ADAPTER_LIMITS.probePromptReserveTokens));
    const outcome = await this.complete(PROBE_MESSAGES.system, PROBE_MESSAGES.user, answerSchema, probeMaxTokens, timeoutMs, async (f) => void lines.push(`probe call: attempt ${f.attempt} brought no answer (${f.kind})${f.backoff_ms === null ? '' : `; trying again in ${f.backoff_ms} ms (retry policy)`}`));
    Object.assign(facts, { probe_finish_reason: outcome.finish_reason, probe_provider_finish_reason: outcome.provider_finish_reason ?? null, probe_latency_ms: outcome.latency_ms, probe_response_model: outcome.response_model, probe_prompt_tokens: outcome.usage?.prompt_tokens ?? null, probe_completion_tokens: outcome.usage?.completion_tokens ?? null, probe_usage_source: outcome.usage_source, probe_attempts: outcome.attempts, probe_raw_output: outcome.raw_output?.slice(0, ANTHROPIC_ADAPTER_LIMITS.probeRawChars) ?? null });
    if (outcome.kind === 'failed') {
      // A 400 naming the schema is the documented subset: both dialects take the same subset, so the other one is no advice.
      const hint = outcome.failure === 'http_error' && outcome.detail.includes('HTTP 400') && /schema/i.test(outcome.detail) ? '; the Messages API takes only a subset of JSON Schema, the same in both its dialects (output_config and strict tools), and its message above names the keyword it refused: this answer schema cannot be sent to it as it is' : '';
      return refuse(`the probe call in dialect ${this.dialect} failed (${outcome.failure}): ${outcome.detail}${hint}`);
    }
    const verdict = checkConstrainedAnswer(this.dialect, answerSchema, outcome.raw_output);
    facts.probe_schema_valid = verdict.schema_valid;
    lines.push(`probe call (max_tokens ${probeMaxTokens}): answered in ${outcome.latency_ms} ms, stop_reason ${outcome.provider_finish_reason ?? 'none'}, ${outcome.usage.prompt_tokens}+${outcome.usage.completion_tokens} tokens (${outcome.usage_source}), schema checked with ${verdict.checked_with}`);
    if (!verdict.honoured) return refuse(`${verdict.reason}${outcome.finish_reason === 'length' ? ` (the answer ran to its cap of ${probeMaxTokens} tokens, stop_reason max_tokens: raise max_tokens if it was cut while still JSON)` : ''}; ${this.otherDialectAdvice()}`);
    lines.push(`the constraint is honoured (dialect ${this.dialect}): ${verdict.detail}`);
    return { ok: true, facts: this.redactor.redactFacts(facts), lines: lines.map((l) => this.redactor.redact(l)) };
  }

  /**
   * Before hour 0, with the plan in hand: each sample counted as a call would count it, against
   * the input window; then the speed calls, timed by the wall clock (the API reports no timings).
   */
  async measure(samples: readonly PromptSample[], speedSampleOf: SpeedSampleOf, answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<ModelMeasurement> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new AnthropicAdapterConfigError(`timeoutMs must be a positive integer, got ${timeoutMs}`);
    const sideMs = Math.min(timeoutMs, ANTHROPIC_ADAPTER_LIMITS.sideRequestTimeoutMs);
    const context = this.context ?? (this.configuredContextSize === null ? null : { size: this.configuredContextSize, source: 'configured context_size' });
    return measureWith(
      {
        count: (system, user) => this.countPrompt(system, user, answerSchema, sideMs),
        complete: (system, user, answerCap) => this.complete(system, user, answerSchema, answerCap, timeoutMs, undefined),
        redact: (text) => this.redactor.redact(text),
        // The call counted its own prompt (count_tokens is a request of its own): not counted twice.
        speedPromptTokens: (outcome) => outcome.prompt_tokens_counted ?? 0,
      },
      samples,
      speedSampleOf,
      context,
    );
  }

  // -------------------------------------------------------------------------------------

  private headers(): Record<string, string> {
    return { 'x-api-key': this.apiKey, 'anthropic-version': ANTHROPIC_VERSION };
  }

  private side(timeoutMs: number): SideRequestContext {
    return { gate: this.gate, baseUrl: this.baseUrl, headers: this.headers(), timeoutMs };
  }

  private messages(system: string, user: string, answerSchema: Readonly<Record<string, unknown>>): MessagesRequest {
    return { modelId: this.model_id, system, user, answerSchema, dialect: this.dialect };
  }

  private otherDialectAdvice(): string {
    const other: AnthropicDialect = this.dialect === 'anthropic_json' ? 'anthropic_tool' : 'anthropic_json';
    return `or try dialect ${other}: start again with --structured-output ${other}, or "structured_output": "${other}" in the model configuration file`;
  }

  /** count_tokens when configured and it answers; else the estimate (a count that failed is said in the lines of measure, and is an estimate in the record). */
  private async countPrompt(system: string, user: string, answerSchema: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<PromptCount> {
    const estimate: PromptCount = { tokens: estimateTokens(system) + estimateTokens(user), source: 'estimate', messages: 2 };
    if (!this.countTokens) return estimate;
    const counted = await countTokens(this.side(timeoutMs), countTokensBody(this.messages(system, user, answerSchema)));
    return counted.kind === 'counted' ? { tokens: counted.tokens, source: 'server', messages: 2 } : estimate;
  }

  /** One model call from counting the prompt to the outcome (call, the probe, the speed calls). */
  private async complete(system: string, user: string, answerSchema: Readonly<Record<string, unknown>>, maxTokens: number, timeoutMs: number, onTransportFailure: ((f: TransportFailure) => Promise<void>) | undefined): Promise<ModelCallOutcome> {
    const started = performance.now();
    const elapsedMs = (): number => Math.max(0, Math.round(performance.now() - started));
    const count = await this.countPrompt(system, user, answerSchema, Math.min(timeoutMs, ANTHROPIC_ADAPTER_LIMITS.sideRequestTimeoutMs));
    const counted = { prompt_tokens_counted: count.tokens, prompt_count_source: count.source } as const;
    const r = this.redactor;
    const failed = (failure: Failure, detail: string, rawOutput: string | null, facts: Facts): ModelCallOutcome => ({
      kind: 'failed',
      failure,
      detail: r.redact(facts.usage === null ? `${detail}; ${NO_TOKENS_RECORDED}: ${noUsageReason(failure)}` : detail),
      raw_output: r.redactNullable(rawOutput),
      latency_ms: elapsedMs(),
      ...facts,
      response_model: r.redactNullable(facts.response_model),
      ...counted,
    });
    const nothingKnown: Facts = { finish_reason: null, provider_finish_reason: null, response_model: null, usage: null, usage_source: null, cache_read_tokens: null, cache_write_tokens: null, prompt_reuse: null, attempts: 1 };

    const fit = checkPromptFits(count, maxTokens, this.context ?? null);
    if (!fit.fits) return failed('truncated_prompt', fit.detail.replace('the server would drop part of the prompt, so the chat request', 'the API would refuse it, so the message'), null, nothingKnown);

    const body = JSON.stringify(messagesBody(this.messages(system, user, answerSchema), this.params, maxTokens, this.stream));
    const result = await withTransportRetry(this.retry, (n) => this.attempt(body, timeoutMs, n), onTransportFailure);
    if (result.kind === 'no_answer') return failed('transport', noAnswerDetail(`POST ${this.messagesUrl}`, result, this.retry), null, { ...nothingKnown, attempts: result.attempts });
    const attempts = result.attempts;
    const reply = result.value;

    /** What the API said of the call: its stop reason mapped and kept, its model, its usage (else the estimate, said so). */
    const factsOf = (stopReason: string | null, usage: unknown, model: string | null, text: string): Facts & { readonly usage: TokenUsage; readonly usage_source: TokenCountSource } => {
      const u = usageFactsOf(usage);
      const stop = { finish_reason: finishReasonOf(stopReason), provider_finish_reason: stopReason, response_model: model, attempts };
      if (u !== null) return { ...stop, usage: u.usage, usage_source: 'server', cache_read_tokens: u.cache_read_tokens, cache_write_tokens: u.cache_write_tokens, prompt_reuse: u.prompt_reuse };
      return { ...stop, usage: { prompt_tokens: count.tokens, completion_tokens: estimateTokens(text) }, usage_source: 'estimate', cache_read_tokens: null, cache_write_tokens: null, prompt_reuse: null };
    };
    const arrived = (state: AnthropicStreamState | null): string | null => (state === null || (!state.sawText && !state.sawTool) ? null : state.sawTool ? state.toolJson : state.text);
    const fromState = (state: AnthropicStreamState | null): Facts => (state === null ? { ...nothingKnown, usage: { prompt_tokens: count.tokens, completion_tokens: 0 }, usage_source: 'estimate', attempts } : factsOf(state.stop_reason, state.usage, state.model, arrived(state) ?? ''));

    switch (reply.kind) {
      case 'timeout':
      case 'stream_broken':
        // The request reached the API, so the prompt counts as spent (the API's figures where it sent them, else estimated); what streamed in is kept.
        return failed(reply.kind, reply.detail, arrived(reply.state), fromState(reply.state));
      case 'http_error':
        return failed('http_error', reply.detail, arrived(reply.state), reply.answered2xx ? fromState(reply.state) : { ...nothingKnown, attempts });
      case 'message': {
        const answer = answerOf(this.dialect, reply.content);
        const shown = 'answer' in answer ? answer.answer : reply.content.toolJson ?? (reply.content.sawText ? reply.content.text : null);
        const facts = factsOf(reply.stop_reason, reply.usage, reply.model, shown ?? '');
        if (reply.stop_reason === 'refusal') return failed('refusal', `the model refused (stop_reason refusal)${shown === null ? '' : ` after ${shown.length} chars, kept and not used`}`, shown, facts);
        if ('missing' in answer) return failed('http_error', `POST ${this.messagesUrl}: ${answer.missing} (stop_reason ${reply.stop_reason ?? 'none'})`, shown, facts);
        return { kind: 'answered', raw_output: r.redact(answer.answer), latency_ms: elapsedMs(), system_fingerprint: null, ...facts, response_model: r.redactNullable(facts.response_model), ...counted };
      }
      default: {
        assertNever(reply, 'anthropic reply');
      }
    }
  }

  /** One transport attempt, through the adapter's gate: an answer (or a timeout) ends the call; no answer goes back to the retry policy. */
  private attempt(body: string, timeoutMs: number, n: number): Promise<AttemptResult<AnthropicReply>> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: this.stream ? 'text/event-stream, application/json' : 'application/json', ...this.headers() };
    const request = { method: 'POST' as const, url: this.messagesUrl, headers, body, timeoutMs, connectTimeoutMs: Math.min(timeoutMs, ANTHROPIC_ADAPTER_LIMITS.sideRequestTimeoutMs) };
    return this.gate.run(request, (exchange) => this.attemptOn(exchange, timeoutMs, n));
  }

  private async attemptOn(exchange: HttpExchange, timeoutMs: number, n: number): Promise<AttemptResult<AnthropicReply>> {
    const what = `POST ${this.messagesUrl}`;
    const answer = (reply: AnthropicReply): AttemptResult<AnthropicReply> => ({ ok: true, value: reply });
    const noAnswer = (na: NoAnswer): AttemptResult<AnthropicReply> => ({ ok: false, noAnswer: { ...na, detail: this.redactor.redact(na.detail) } });
    const timeoutReply = (state: AnthropicStreamState | null, stage: string): AnthropicReply => ({
      kind: 'timeout',
      state,
      detail: `no complete answer from ${what} ${answerNotWithin(timeoutMs)} (attempt ${n}; ${stage}); the request had reached the API (its prompt is counted as spent, estimated where the API said nothing); the request was aborted and its connection closed, which stops a streamed generation, and a timeout is not retried`,
    });
    const opened = await openAttempt(exchange, what, timeoutMs, ANTHROPIC_ADAPTER_LIMITS.sideRequestTimeoutMs);
    if (opened.kind === 'no_answer') return noAnswer(opened.noAnswer);
    if (opened.kind === 'timed_out') return answer(timeoutReply(null, 'no response headers had arrived'));
    const { response, status } = opened;

    if (response.status < 200 || response.status > 299) {
      const error = await errorStatusOf(response, status, this.maxResponseBytes, (bytes, unreadable) => `: ${bytes === null ? unreadable : this.errorWords(bytes)}`);
      return error.kind === 'no_answer' ? noAnswer(error.noAnswer) : answer({ kind: 'http_error', detail: error.detail, state: null, answered2xx: false });
    }

    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.includes('text/event-stream') && response.body !== null) {
      const state = emptyAnthropicStreamState();
      const end = await readAnthropicStream(response.body, { maxBytes: this.maxResponseBytes, maxEvents: ANTHROPIC_ADAPTER_LIMITS.maxStreamEvents }, state);
      return answer(this.streamReply(state, end, status, exchange.signal, timeoutReply));
    }
    const whole = await readWholeBody(response, exchange.signal, this.maxResponseBytes, status);
    if (whole.kind === 'timeout') return answer(timeoutReply(null, 'the response body had not fully arrived'));
    if (whole.kind === 'broken') return answer({ kind: 'stream_broken', detail: whole.detail, state: null });
    if (whole.kind === 'bad') return answer({ kind: 'http_error', detail: whole.detail, state: null, answered2xx: true });
    let json: unknown;
    try {
      json = JSON.parse(whole.text);
    } catch (error) {
      return answer({ kind: 'http_error', detail: `${status}: the body is not JSON (${describeError(error)}); it begins ${quoteBody(whole.bytes, ANTHROPIC_ADAPTER_LIMITS.quotedBodyChars)}`, state: null, answered2xx: true });
    }
    const message = AnthropicMessage.safeParse(json);
    if (!message.success) return answer({ kind: 'http_error', detail: `${status}: not a message (${message.error.issues.slice(0, 4).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}); it begins ${quoteBody(whole.bytes, ANTHROPIC_ADAPTER_LIMITS.quotedBodyChars)}`, state: null, answered2xx: true });
    return answer({ kind: 'message', content: contentOfMessage(message.data), stop_reason: message.data.stop_reason ?? null, usage: message.data.usage, model: message.data.model ?? null });
  }

  /** An error body as the API's own words (`{type: "error", error: {type, message}}`), else quoted. */
  private errorWords(bytes: Uint8Array): string {
    try {
      const body = JSON.parse(new TextDecoder('utf-8').decode(bytes)) as { type?: unknown; error?: unknown };
      if (body.type === 'error' && body.error !== undefined) return anthropicErrorText(body.error);
    } catch {
      // Not JSON: quoted below.
    }
    return `body: ${quoteBody(bytes, ANTHROPIC_ADAPTER_LIMITS.quotedBodyChars)}`;
  }

  /** How a read stream ended, as a reply. */
  private streamReply(state: AnthropicStreamState, end: AnthropicStreamEnd, status: string, signal: AbortSignal, timeoutReply: (state: AnthropicStreamState | null, stage: string) => AnthropicReply): AnthropicReply {
    const arrived = `${state.events} events, ${state.sawTool ? state.toolJson.length : state.text.length} chars had arrived`;
    switch (end.kind) {
      case 'broken':
        if (signal.aborted) return timeoutReply(state, `the stream was still arriving (${arrived})`);
        return { kind: 'stream_broken', detail: `${status}: the stream broke off before message_stop (${describeError(end.error)}); ${arrived} and are kept, not used`, state };
      case 'server_error':
        return { kind: 'stream_broken', detail: `${status}: ${end.detail}; ${arrived} and are kept, not used; not retried (the message had started)`, state };
      case 'over_limit':
      case 'malformed':
      case 'bad_event':
        return { kind: 'http_error', detail: `${status}: ${end.detail} (${arrived})`, state, answered2xx: true };
      case 'eof':
        return { kind: 'stream_broken', detail: `${status}: the stream ended without message_stop: the answer may be incomplete; ${arrived} and are kept, not used`, state };
      case 'done':
        return { kind: 'message', content: contentOfStream(state), stop_reason: state.stop_reason, usage: state.usage, model: state.model };
      default: {
        assertNever(end, 'anthropic stream end');
      }
    }
  }
}
