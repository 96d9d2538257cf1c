// The `gemini` model adapter over REAL HTTP on loopback (issue 36 items 3 and 5;
// docs/model-protocol.md "gemini"), against test/support/gemini-like-server.ts, a server written
// from Google's documentation of the Gemini API: each case is a recorded outcome with its detail,
// the requests the server saw, and the key in no outcome and no preflight line.
import { afterEach, describe, expect, test } from 'vitest';
import { specialisedAnswerSchema } from '../../runtime/answer-schema.js';
import { ContextBundle } from '../../runtime/context-bundle.js';
import type { ModelCallOutcome, ModelRequest, PreflightResult, TransportFailure } from '../../runtime/model-adapter.js';
import { GeminiAdapter } from '../../runtime/model-adapters/gemini-adapter.js';
import type { GeminiAdapterOptions } from '../../runtime/model-adapters/gemini-options.js';
import { finishReasonOf, geminiUsageOf } from '../../runtime/model-adapters/gemini-reply.js';
import { renderPrompt } from '../../runtime/prompt.js';
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';
import { GEMINI_TEST_MODEL, startGeminiLikeServer, TOKEN_CHARS, type GeminiLikeOptions, type GeminiLikeServer } from '../support/gemini-like-server.js';

const API_KEY = 'AIza-test-SECRET-5c1e9a7f3b2d4e60';
const BUNDLE: ContextBundle = ContextBundle.parse({
  wake: { wake_id: 'wake-003', wake_at: '2026-07-20T09:00:00.000Z', budget: { model_calls: 1, tokens: 8_000, tool_calls: 4 }, visible_to_seq: 42 },
  state: { source: 'persistent', goal: { goal_id: 'goal-1', description: 'Prepare the Friday report', deadline_at: '2026-07-23T17:00:00.000Z' }, tasks: [], attention_target: 'Friday report', waiting_condition: null, journal_entries: 0, denied_actions: [] },
  window: { events: [], eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0, statement: 'window 0 of 0 eligible events' },
  workspace: [],
});
const SCHEMA = specialisedAnswerSchema('ds-model-output/2', []);
const PARAMS = { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 };
const RETRY = { max_attempts: 3, backoff_ms: [20, 40] };
const ANSWER_TEXT = JSON.stringify(EMPTY_ANSWER);

const servers: GeminiLikeServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function server(options: Partial<GeminiLikeOptions> = {}): Promise<GeminiLikeServer> {
  const s = await startGeminiLikeServer({ key: API_KEY, ...options });
  servers.push(s);
  return s;
}

function adapterFor(s: GeminiLikeServer, overrides: Partial<GeminiAdapterOptions> = {}): GeminiAdapter {
  return new GeminiAdapter({ baseUrl: s.baseUrl, modelId: GEMINI_TEST_MODEL, apiKey: API_KEY, params: PARAMS, dialect: 'gemini_json_schema', retry: RETRY, contextSize: null, ...overrides });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  const prompt = renderPrompt(BUNDLE);
  return { wake_id: 'wake-003', call_number: 1, bundle: BUNDLE, system: prompt.system, user: prompt.user, max_tokens: 300, answer_schema: SCHEMA, ...overrides };
}

/** One call, with what every call must satisfy: no key in the outcome, a detail for a failure. */
async function callChecked(adapter: GeminiAdapter, req: ModelRequest = request(), timeoutMs = 5_000): Promise<ModelCallOutcome> {
  const outcome = await adapter.call(req, timeoutMs);
  expect(JSON.stringify(outcome)).not.toContain(API_KEY);
  if (outcome.kind === 'failed') expect(outcome.detail.length).toBeGreaterThan(0);
  return outcome;
}

function keyless(result: PreflightResult): PreflightResult {
  expect(JSON.stringify(result)).not.toContain(API_KEY);
  return result;
}

const generateRequests = (s: GeminiLikeServer) => s.requests.filter((r) => r.path.includes(':generateContent') || r.path.includes(':streamGenerateContent'));

describe('a call answered', () => {
  test('streamed: the request in the documented form, the answer, finishReason STOP as stop with the original kept, usage with thoughts as completion, the cache read, modelVersion', async () => {
    const s = await server({ thoughtsTokens: 11, cachedTokens: 5 });
    const outcome = await callChecked(adapterFor(s));
    expect(outcome.kind, JSON.stringify(outcome)).toBe('answered');
    if (outcome.kind !== 'answered') return;
    expect(outcome.raw_output).toBe(ANSWER_TEXT);
    expect(outcome).toMatchObject({ finish_reason: 'stop', provider_finish_reason: 'STOP', response_model: `${GEMINI_TEST_MODEL}-001`, usage_source: 'server', cache_read_tokens: 5, cache_write_tokens: null, attempts: 1, prompt_count_source: 'estimate' });
    const req = request();
    const prompt = Math.ceil((req.system.length + req.user.length) / TOKEN_CHARS);
    expect(outcome.usage).toEqual({ prompt_tokens: prompt, completion_tokens: Math.ceil(ANSWER_TEXT.length / TOKEN_CHARS) + 11 });
    expect(outcome.prompt_reuse).toEqual({ reused_tokens: 5, evaluated_tokens: prompt - 5, source: 'server_usage' });
    const sent = generateRequests(s);
    expect(sent.map((r) => r.path)).toEqual([`/v1beta/models/${GEMINI_TEST_MODEL}:streamGenerateContent?alt=sse`]);
    expect(sent[0]!.apiKey).toBe(API_KEY);
    expect(sent[0]!.body).toEqual({
      systemInstruction: { parts: [{ text: req.system }] },
      contents: [{ role: 'user', parts: [{ text: req.user }] }],
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: SCHEMA, maxOutputTokens: 300, candidateCount: 1, temperature: 0.2, topP: 0.9, seed: 7 },
    });
    // The model's limits were asked once, before the call.
    expect(s.requests[0]!.path).toBe(`/v1beta/models/${GEMINI_TEST_MODEL}`);
  });

  test('not streamed: :generateContent, the same record; count_tokens: the prompt counted by :countTokens (source tokenizer), null parameters not sent', async () => {
    const s = await server();
    const outcome = await callChecked(adapterFor(s, { stream: false, countTokens: true, params: { temperature: null, top_p: null, seed: null, max_tokens: null } }));
    expect(outcome).toMatchObject({ kind: 'answered', finish_reason: 'stop', provider_finish_reason: 'STOP', usage_source: 'server', prompt_count_source: 'tokenizer', cache_read_tokens: 0 });
    const req = request();
    expect(outcome.prompt_tokens_counted).toBe(Math.ceil((req.system.length + req.user.length) / TOKEN_CHARS));
    expect(s.requests.map((r) => r.path)).toEqual([`/v1beta/models/${GEMINI_TEST_MODEL}`, `/v1beta/models/${GEMINI_TEST_MODEL}:countTokens`, `/v1beta/models/${GEMINI_TEST_MODEL}:generateContent`]);
    expect(s.requests[1]!.body).toEqual({ generateContentRequest: { model: `models/${GEMINI_TEST_MODEL}`, systemInstruction: { parts: [{ text: req.system }] }, contents: [{ role: 'user', parts: [{ text: req.user }] }] } });
    expect((generateRequests(s)[0]!.body!['generationConfig'] as Record<string, unknown>)).toEqual({ responseMimeType: 'application/json', responseJsonSchema: SCHEMA, maxOutputTokens: 300, candidateCount: 1 });
  });

  test('forged: an answer that echoes the key is recorded with the key redacted', async () => {
    const s = await server({ answer: () => JSON.stringify({ ...EMPTY_ANSWER, focus: { attention_target: `key ${API_KEY}`, waiting_condition: null } }) });
    const outcome = await callChecked(adapterFor(s));
    expect(outcome.raw_output).toContain('[redacted API key]');
  });
});

describe('the faults, each a recorded outcome', () => {
  test('429 RESOURCE_EXHAUSTED then an answer: a no-answer attempt reported before the retry, Retry-After and retryDelay quoted and not followed', async () => {
    const s = await server({ faults: ['rate_limited'] });
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(s), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'answered', attempts: 2 });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ attempt: 1, kind: 'http_429', backoff_ms: 20 });
    expect(failures[0]!.detail).toContain('429 RESOURCE_EXHAUSTED: You exceeded your current quota');
    expect(failures[0]!.detail).toContain('retryDelay "37s" not followed: the backoff is pre-registered');
    expect(failures[0]!.detail).toContain('Retry-After "37" not followed: the backoff is pre-registered');
    expect(generateRequests(s)).toHaveLength(2);
  });

  test('503 UNAVAILABLE on every attempt: a transport failure after the policy, no tokens recorded', async () => {
    const s = await server({ faults: ['unavailable', 'unavailable', 'unavailable'] });
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(s), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'transport', attempts: 3, usage: null });
    expect(failures.map((f) => [f.kind, f.backoff_ms])).toEqual([['http_503', 20], ['http_503', 40], ['http_503', null]]);
    if (outcome.kind === 'failed') expect(outcome.detail).toContain('503 UNAVAILABLE: The model is overloaded');
  });

  test('MAX_TOKENS: answered as length, the original kept; the cut JSON is the runtime\'s to refuse', async () => {
    const s = await server({ faults: ['max_tokens'] });
    const outcome = await callChecked(adapterFor(s));
    expect(outcome).toMatchObject({ kind: 'answered', finish_reason: 'length', provider_finish_reason: 'MAX_TOKENS', usage_source: 'server' });
    expect(() => JSON.parse(outcome.raw_output!)).toThrow();
  });

  test('SAFETY: a refusal with the provider\'s word kept and the usage it reported', async () => {
    const s = await server({ faults: ['safety'] });
    const outcome = await callChecked(adapterFor(s));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'refusal', finish_reason: 'safety', provider_finish_reason: 'SAFETY', usage_source: 'server' });
    if (outcome.kind === 'failed') expect(outcome.detail).toContain('stopped the answer for its filters (finishReason SAFETY)');
  });

  test('a prompt blocked (promptFeedback.blockReason): a refusal that says so', async () => {
    const s = await server({ faults: ['prompt_blocked'] });
    const outcome = await callChecked(adapterFor(s, { stream: false }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'refusal', provider_finish_reason: 'blockReason:SAFETY' });
    if (outcome.kind === 'failed') expect(outcome.detail).toContain('blocked the prompt (promptFeedback.blockReason SAFETY)');
  });

  test('a stream cut mid-chunk: stream_broken, what arrived kept and not used, not retried', async () => {
    const s = await server({ faults: ['cut_stream'] });
    const outcome = await callChecked(adapterFor(s));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'stream_broken', attempts: 1 });
    expect(outcome.raw_output).not.toBeNull();
    expect(ANSWER_TEXT.startsWith(outcome.raw_output!)).toBe(true);
    expect(outcome.raw_output!.length).toBeLessThan(ANSWER_TEXT.length);
    expect(generateRequests(s)).toHaveLength(1);
  });

  test('a hang: a timeout, the connection closed (the server sees its client go), not retried', async () => {
    const s = await server({ faults: ['hang'] });
    const outcome = await callChecked(adapterFor(s), request(), 400);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout', attempts: 1 });
    if (outcome.kind === 'failed') expect(outcome.detail).toContain('within timeoutMs 400');
    await new Promise((r) => setTimeout(r, 50));
    expect(s.abandoned()).toBe(1);
  });

  test('a schema the server refuses (switched on): http_error quoting 400 INVALID_ARGUMENT, not retried', async () => {
    const s = await server({ refuseSchemaKeywords: ['oneOf'] });
    const outcome = await callChecked(adapterFor(s));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error', attempts: 1, usage: null });
    if (outcome.kind === 'failed') expect(outcome.detail).toContain('400 INVALID_ARGUMENT: Invalid JSON payload received. generation_config.response_json_schema: the keyword "oneOf" is not supported');
  });

  test('a prompt over the inputTokenLimit: truncated_prompt, nothing sent to generate', async () => {
    const s = await server({ inputTokenLimit: 50 });
    const outcome = await callChecked(adapterFor(s));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'truncated_prompt', usage: null });
    if (outcome.kind === 'failed') expect(outcome.detail).toContain("over the model's input token limit 50");
    expect(generateRequests(s)).toHaveLength(0);
  });
});

describe('preflight', () => {
  test('passes: the model served, its limits, countTokens answering, the constraint shown honoured by the probe', async () => {
    const s = await server({ inputTokenLimit: 100_000, outputTokenLimit: 8_192 });
    const result = keyless(await adapterFor(s, { countTokens: true }).preflight(SCHEMA, 5_000));
    expect(result.ok, JSON.stringify(result)).toBe(true);
    if (!result.ok) return;
    expect(result.facts).toMatchObject({ served_model: `models/${GEMINI_TEST_MODEL}`, input_token_limit: 100_000, output_token_limit: 8_192, context_size: 108_192, probe_finish_reason: 'stop', probe_provider_finish_reason: 'STOP', probe_schema_valid: true, probe_usage_source: 'server' });
    expect(result.lines.join('\n')).toContain('the constraint is honoured (dialect gemini_json_schema)');
  });

  test('refuses a schema the API answers 400 INVALID_ARGUMENT, quoting Google\'s message', async () => {
    const s = await server({ refuseSchemaKeywords: ['oneOf'] });
    const result = keyless(await adapterFor(s).preflight(SCHEMA, 5_000));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toContain('refused the probe call\'s request in dialect gemini_json_schema (400 INVALID_ARGUMENT)');
    expect(result.reason).toContain('the keyword "oneOf" is not supported');
  });

  test('refuses a wrong key (400 API_KEY_INVALID) and a missing model (404), each with advice; a dead port as no answer', async () => {
    const s = await server();
    const wrong = keyless(await new GeminiAdapter({ baseUrl: s.baseUrl, modelId: GEMINI_TEST_MODEL, apiKey: 'AIza-wrong-key', params: PARAMS, dialect: 'gemini_json_schema', retry: RETRY, contextSize: null }).preflight(SCHEMA, 5_000));
    expect(wrong.ok).toBe(false);
    if (!wrong.ok) expect(wrong.reason).toMatch(/refused the key: .*API key not valid.*--api-key-env VAR/);
    const missing = keyless(await adapterFor(s, { modelId: 'gemini-none' }).preflight(SCHEMA, 5_000));
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.reason).toMatch(/serves no model "gemini-none".*--model-id/);
    await s.close();
    servers.splice(servers.indexOf(s), 1);
    const dead = keyless(await adapterFor(s).preflight(SCHEMA, 2_000));
    expect(dead.ok).toBe(false);
    if (!dead.ok) expect(dead.reason).toMatch(/does not answer: .* 3 attempt\(s\)/);
  });

  test('refuses a probe answer cut at MAX_TOKENS while still JSON, advising a higher cap', async () => {
    const s = await server({ faults: ['max_tokens'] });
    const result = keyless(await adapterFor(s).preflight(SCHEMA, 5_000));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain('cut at its token cap (maxOutputTokens 512, finishReason MAX_TOKENS) while still JSON');
  });
});

describe('the mapping, on its own', () => {
  test('finishReason words, and usage with absent counts read as 0 (proto3 JSON leaves zeros out)', () => {
    expect(['STOP', 'MAX_TOKENS', 'SAFETY', 'OTHER', null].map(finishReasonOf)).toEqual(['stop', 'length', 'safety', 'other', null]);
    expect(geminiUsageOf({ promptTokenCount: 10 }, 99, 'x')).toMatchObject({ usage: { prompt_tokens: 10, completion_tokens: 0 }, usage_source: 'server', cache_read_tokens: 0 });
    // Forged: no usageMetadata at all — the estimate, said to be one.
    expect(geminiUsageOf(undefined, 99, 'abcdefgh')).toMatchObject({ usage: { prompt_tokens: 99, completion_tokens: 2 }, usage_source: 'estimate', cache_read_tokens: null });
  });
});
