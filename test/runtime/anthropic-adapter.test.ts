// The anthropic adapter (issue 36 item 1) against a REAL HTTP server on loopback that speaks the
// Messages API as documented (test/support/anthropic-like-server.ts) — no hosted API is reachable
// from here. Each case is one recorded outcome: the request as sent per dialect, the typed event
// stream read, stop_reason mapped with the original kept, usage with the cache's reads and writes,
// the prompt counted by count_tokens or estimated (said), 429/529 retried under the policy and
// reported (retry-after not followed), a max_tokens cut-off, a refusal, a stream cut mid-event, an
// error event mid-stream, a timeout — none retried as an answer — the key redacted everywhere, and
// the preflight's refusals (model not served, key refused, count_tokens absent, a schema keyword
// outside the subset, a constraint not honoured).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ContextBundle } from '../../runtime/context-bundle.js';
import type { ModelRequest, TransportFailure } from '../../runtime/model-adapter.js';
import { answerJsonSchema } from '../../runtime/answer-schema.js';
import { AnthropicAdapter } from '../../runtime/model-adapters/anthropic-adapter.js';
import { AnthropicAdapterConfigError, type AnthropicAdapterOptions } from '../../runtime/model-adapters/anthropic-options.js';
import { emptyAnthropicStreamState, readAnthropicStream } from '../../runtime/model-adapters/anthropic-stream.js';
import { MODEL_PROTOCOL_V2 } from '../../runtime/model-protocol.js';
import { renderPrompt } from '../../runtime/prompt.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { tempDir } from '../support/writer-fixture.js';
import { MODEL_OPTIONS, ModelFlagError, modelChoiceOf } from '../../cli/model-flags.js';
import { modelFlagsOf } from '../../design/model-choice-flags.js';
import { ANTHROPIC_NO_SEED } from '../../runtime/protocol.js';
import { startAnthropicLikeServer, subsetViolation, tokensOf, type AnthropicLikeServer } from '../support/anthropic-like-server.js';

const KEY = 'sk-ant-loopback-SECRET-4f2a9c';
const MODEL = 'claude-loopback-1';
const SCHEMA = answerJsonSchema(MODEL_PROTOCOL_V2);
const NO_PARAMS = { temperature: null, top_p: null, seed: null, max_tokens: null };
const NO_RETRY = { max_attempts: 1, backoff_ms: [] };
const RETRY_3 = { max_attempts: 3, backoff_ms: [5, 5] };

const BUNDLE: ContextBundle = ContextBundle.parse({
  wake: { wake_id: 'wake-001', wake_at: '2026-07-20T09:00:00.000Z', budget: { model_calls: 1, tokens: 8_000, tool_calls: 4 }, visible_to_seq: 1 },
  state: { source: 'persistent', goal: null, tasks: [], attention_target: null, waiting_condition: null, journal_entries: 0, denied_actions: [] },
  window: { events: [], eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0, statement: 'window 0 of 0 eligible events' },
  workspace: [],
});

function request(failures: TransportFailure[] = [], overrides: Partial<ModelRequest> = {}): ModelRequest {
  const prompt = renderPrompt(BUNDLE);
  return { wake_id: 'wake-001', call_number: 1, bundle: BUNDLE, system: prompt.system, user: prompt.user, max_tokens: 512, answer_schema: SCHEMA, onTransportFailure: async (f) => void failures.push(f), ...overrides };
}

let server: AnthropicLikeServer;
beforeAll(async () => {
  server = await startAnthropicLikeServer({ apiKey: KEY, models: [MODEL, 'claude-other-2'], simulateSystemCache: true, schemaSubsetCheck: false, answer: (body, headers) => (JSON.stringify(body).includes('ECHO_THE_KEY') ? { echoed: headers['x-api-key'] } : undefined) });
});
afterAll(async () => {
  await server?.close();
});

function adapter(overrides: Partial<AnthropicAdapterOptions> = {}): AnthropicAdapter {
  return new AnthropicAdapter({ baseUrl: server.baseUrl, modelId: MODEL, apiKey: KEY, params: NO_PARAMS, dialect: 'anthropic_json', retry: NO_RETRY, contextSize: null, stream: true, ...overrides });
}

const last = () => server.messages().at(-1)!;

describe('the request per dialect, and the answer read from the typed events', () => {
  test('anthropic_json, streamed: output_config carries the schema, the answer is the text; end_turn → stop; usage with the cache written, then read', async () => {
    const a = adapter({ params: { ...NO_PARAMS, temperature: 0.5 } });
    const first = await a.call(request(), 5_000);
    const sent = last();
    expect(sent.headers['x-api-key']).toBe(KEY);
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.body).toMatchObject({ model: MODEL, system: request().system, messages: [{ role: 'user', content: request().user }], max_tokens: 512, temperature: 0.5, stream: true, output_config: { format: { type: 'json_schema', schema: SCHEMA } } });
    expect(sent.body).not.toHaveProperty('seed');
    expect(sent.body).not.toHaveProperty('tools');
    if (first.kind !== 'answered') throw new Error(JSON.stringify(first));
    expect(JSON.parse(first.raw_output)).toMatchObject({ protocol: 'ds-model-output/2' });
    expect(first).toMatchObject({ finish_reason: 'stop', provider_finish_reason: 'end_turn', response_model: MODEL, usage_source: 'server', prompt_count_source: 'estimate', attempts: 1, cache_read_tokens: 0 });
    const systemTokens = tokensOf(request().system);
    expect(first.cache_write_tokens).toBe(systemTokens);
    // The prompt is every input token: afresh, read from the cache, written to it.
    const second = await a.call(request(), 5_000);
    if (second.kind !== 'answered') throw new Error(JSON.stringify(second));
    expect(second).toMatchObject({ cache_read_tokens: systemTokens, cache_write_tokens: 0, prompt_reuse: { reused_tokens: systemTokens, source: 'server_usage' } });
    expect(second.usage.prompt_tokens).toBe(first.usage.prompt_tokens);
    expect(second.prompt_reuse!.reused_tokens + second.prompt_reuse!.evaluated_tokens).toBe(second.usage.prompt_tokens);
  });

  test('anthropic_tool, streamed: one strict tool forced by tool_choice; the answer is its input as streamed (input_json_delta); tool_use → stop', async () => {
    const outcome = await adapter({ dialect: 'anthropic_tool' }).call(request(), 5_000);
    expect(last().body).toMatchObject({ tools: [{ name: 'ds_model_output', input_schema: SCHEMA, strict: true }], tool_choice: { type: 'tool', name: 'ds_model_output' } });
    expect(last().body).not.toHaveProperty('output_config');
    if (outcome.kind !== 'answered') throw new Error(JSON.stringify(outcome));
    expect(JSON.parse(outcome.raw_output)).toMatchObject({ protocol: 'ds-model-output/2' });
    expect(outcome).toMatchObject({ finish_reason: 'stop', provider_finish_reason: 'tool_use', usage_source: 'server' });
  });

  test.each(['anthropic_json', 'anthropic_tool'] as const)('%s, not streamed: the whole message read the same way', async (dialect) => {
    const outcome = await adapter({ dialect, stream: false }).call(request(), 5_000);
    expect(last().body).not.toHaveProperty('stream');
    if (outcome.kind !== 'answered') throw new Error(JSON.stringify(outcome));
    expect(JSON.parse(outcome.raw_output)).toMatchObject({ protocol: 'ds-model-output/2' });
    expect(outcome.provider_finish_reason).toBe(dialect === 'anthropic_tool' ? 'tool_use' : 'end_turn');
  });

  test('count_tokens configured: the prompt counted by POST /v1/messages/count_tokens (source server), equal to what the API then bills as input', async () => {
    const outcome = await adapter({ countTokens: true }).call(request(), 5_000);
    const count = server.requests.filter((r) => r.url === '/v1/messages/count_tokens').at(-1)!;
    expect(count.body).toMatchObject({ model: MODEL, system: request().system, output_config: { format: { type: 'json_schema' } } });
    expect(count.body).not.toHaveProperty('max_tokens');
    expect(outcome.prompt_count_source).toBe('server');
    expect(outcome.prompt_tokens_counted).toBe(outcome.usage!.prompt_tokens);
  });

  test('a configured seed is refused with a typed error saying the API has none, by the adapter and by the command line', () => {
    expect(() => adapter({ params: { ...NO_PARAMS, seed: 7 } })).toThrow(AnthropicAdapterConfigError);
    expect(() => adapter({ params: { ...NO_PARAMS, seed: 7 } })).toThrow(ANTHROPIC_NO_SEED);
    process.env['DS_TEST_ANTHROPIC_FLAG_KEY'] = KEY;
    const refusal = (() => {
      try {
        modelChoiceOf({ model: 'anthropic', 'model-id': MODEL, 'api-key-env': 'DS_TEST_ANTHROPIC_FLAG_KEY', 'model-seed': '7' });
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(refusal).toBeInstanceOf(ModelFlagError);
    expect(String((refusal as Error).message)).toContain('takes no seed');
    // The control: the same flags without the seed are accepted, the base URL the API's own.
    expect(modelChoiceOf({ model: 'anthropic', 'model-id': MODEL, 'api-key-env': 'DS_TEST_ANTHROPIC_FLAG_KEY' })).toMatchObject({ adapter: 'anthropic', base_url: 'https://api.anthropic.com', dialect: 'anthropic_json', count_tokens: false });
  });
});

describe('the command line and its inverse', () => {
  test('modelFlagsOf gives back, through modelChoiceOf, every anthropic choice the flags can make', () => {
    process.env['DS_TEST_ANTHROPIC_FLAG_KEY'] = KEY;
    const base = { adapter: 'anthropic', base_url: 'http://127.0.0.1:9', model_id: MODEL, api_key_env: 'DS_TEST_ANTHROPIC_FLAG_KEY', params: { temperature: 0.2, top_p: null, seed: null, max_tokens: 300 }, dialect: 'anthropic_tool', stream: false, context_size: 200_000, timeout_ms: 45_000, count_tokens: true, config_file: null, config_sha256: null } as const;
    for (const choice of [base, { ...base, dialect: 'anthropic_json' as const, stream: true, context_size: null, count_tokens: false, parallel_slots: 3 }]) {
      const { values } = parseArgs({ args: modelFlagsOf(choice), options: MODEL_OPTIONS, strict: true });
      expect(modelChoiceOf(values)).toEqual(choice);
    }
  });

  test('the model configuration file: an anthropic variant with its defaults; a seed in it refused with the same reason', () => {
    process.env['ANTHROPIC_API_KEY_DS_TEST'] = KEY;
    const dir = tempDir('ds-anthropic-config-');
    const file = path.join(dir, 'model.json');
    writeFileSync(file, JSON.stringify({ adapter: 'anthropic', model_id: MODEL, api_key_env: 'ANTHROPIC_API_KEY_DS_TEST', count_tokens: true, prices: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } }));
    expect(modelChoiceOf({ 'model-config': file })).toMatchObject({ adapter: 'anthropic', base_url: 'https://api.anthropic.com', dialect: 'anthropic_json', stream: true, count_tokens: true, context_size: null, prices: { cache_write: 3.75 }, config_file: file });
    writeFileSync(file, JSON.stringify({ adapter: 'anthropic', model_id: MODEL, api_key_env: 'ANTHROPIC_API_KEY_DS_TEST', params: { seed: 7 } }));
    expect(() => modelChoiceOf({ 'model-config': file })).toThrow(ModelFlagError);
    expect(() => modelChoiceOf({ 'model-config': file })).toThrow('takes no seed');
  });

  test('refuses --model anthropic without a key variable, and --count-tokens for another model', () => {
    expect(() => modelChoiceOf({ model: 'anthropic', 'model-id': MODEL, 'api-key-env': 'none' })).toThrow('--model anthropic needs an API key');
    expect(() => modelChoiceOf({ model: 'anthropic', 'model-id': MODEL, 'api-key-env': 'DS_TEST_SURELY_UNSET_ANTHROPIC_KEY' })).toThrow('set it, or name the variable that holds the key with --api-key-env VAR');
    expect(() => modelChoiceOf({ model: 'openai', 'base-url': 'http://127.0.0.1:9/v1', 'model-id': 'm', 'api-key-env': 'none', 'count-tokens': true })).toThrow('--count-tokens applies to --model anthropic or gemini only');
    expect(() => modelChoiceOf({ model: 'anthropic', 'model-id': MODEL, 'api-key-env': 'DS_TEST_ANTHROPIC_FLAG_KEY', 'structured-output': 'json_schema' })).toThrow('must be one of anthropic_json, anthropic_tool');
  });
});

describe('every way a call can end, each one recorded outcome', () => {
  test('429 rate_limit_error then an answer: the attempt reported (retry-after reported, not followed), the answer has attempts 2', async () => {
    const failures: TransportFailure[] = [];
    server.script('rate_limit');
    const before = server.messages().length;
    const outcome = await adapter({ retry: RETRY_3 }).call(request(failures), 5_000);
    expect(outcome.kind).toBe('answered');
    expect(outcome.attempts).toBe(2);
    expect(server.messages().length - before).toBe(2);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ attempt: 1, kind: 'http_429', backoff_ms: 5 });
    expect(failures[0]!.detail).toContain('rate_limit_error');
    expect(failures[0]!.detail).toContain('Retry-After "7" not followed: the backoff is pre-registered');
  });

  test('529 overloaded_error on every attempt: a transport failure after the policy\'s attempts, no tokens recorded', async () => {
    const failures: TransportFailure[] = [];
    server.script('overloaded', 'overloaded', 'overloaded');
    const outcome = await adapter({ retry: RETRY_3 }).call(request(failures), 5_000);
    if (outcome.kind !== 'failed') throw new Error('answered');
    expect(outcome).toMatchObject({ failure: 'transport', attempts: 3, usage: null });
    expect(failures.map((f) => f.kind)).toEqual(['http_529', 'http_529', 'http_529']);
    expect(outcome.detail).toContain('overloaded_error: Overloaded');
  });

  test('max_tokens: the cut answer is an answer (never retried), finish_reason length with max_tokens kept', async () => {
    server.script('max_tokens');
    const before = server.messages().length;
    const outcome = await adapter().call(request(), 5_000);
    expect(server.messages().length - before).toBe(1);
    expect(outcome).toMatchObject({ kind: 'answered', finish_reason: 'length', provider_finish_reason: 'max_tokens' });
    expect(() => JSON.parse(outcome.raw_output!)).toThrow();
  });

  test('stop_reason refusal: a refusal failure with the API\'s usage, not retried', async () => {
    server.script('refusal');
    const before = server.messages().length;
    const outcome = await adapter().call(request(), 5_000);
    expect(server.messages().length - before).toBe(1);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'refusal', provider_finish_reason: 'refusal', usage_source: 'server' });
  });

  test('a stream cut mid-event: stream_broken, what arrived kept, the usage of message_start recorded; not retried', async () => {
    server.script('cut_stream');
    const before = server.messages().length;
    const outcome = await adapter({ retry: RETRY_3 }).call(request(), 5_000);
    expect(server.messages().length - before).toBe(1);
    if (outcome.kind !== 'failed') throw new Error('answered');
    expect(outcome.failure).toBe('stream_broken');
    expect(outcome.raw_output).toMatch(/^\{"protocol"/);
    expect(outcome.usage_source).toBe('server');
    expect(outcome.detail).toContain('before message_stop');
  });

  test('an `event: error` (overloaded_error) mid-stream: stream_broken with the error in its detail; not retried', async () => {
    server.script('error_event');
    const before = server.messages().length;
    const outcome = await adapter({ retry: RETRY_3 }).call(request(), 5_000);
    expect(server.messages().length - before).toBe(1);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'stream_broken' });
    expect((outcome as { detail: string }).detail).toContain('overloaded_error: Overloaded');
  });

  test('no answer within the timeout: a timeout, the request aborted, not retried', async () => {
    server.script('hang');
    const before = server.messages().length;
    const outcome = await adapter({ retry: RETRY_3 }).call(request(), 400);
    expect(server.messages().length - before).toBe(1);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout' });
    expect((outcome as { detail: string }).detail).toContain('within timeoutMs 400');
  });

  test('a prompt over the Models API\'s max_input_tokens: truncated_prompt, nothing sent', async () => {
    const small = await startAnthropicLikeServer({ apiKey: KEY, models: [MODEL], maxInputTokens: 300, schemaSubsetCheck: false });
    try {
      const a = new AnthropicAdapter({ baseUrl: small.baseUrl, modelId: MODEL, apiKey: KEY, params: { ...NO_PARAMS, max_tokens: 100 }, dialect: 'anthropic_json', retry: NO_RETRY, contextSize: null });
      const checked = await a.preflight(SCHEMA, 5_000);
      expect(checked.ok).toBe(true);
      expect(checked.facts).toMatchObject({ context_size: 300 });
      const sentBefore = small.messages().length;
      const outcome = await a.call(request(), 5_000);
      expect(outcome).toMatchObject({ kind: 'failed', failure: 'truncated_prompt', usage: null });
      expect(small.messages().length).toBe(sentBefore);
    } finally {
      await small.close();
    }
  });

  test('the key is redacted from everything returned, even when the server echoes it in an answer', async () => {
    const outcome = await adapter().call(request([], { user: 'ECHO_THE_KEY please' }), 5_000);
    expect(JSON.stringify(outcome)).not.toContain(KEY);
    expect(outcome.raw_output).toContain('[redacted API key]');
    const refused = await new AnthropicAdapter({ baseUrl: server.baseUrl, modelId: 'claude-missing', apiKey: KEY, params: NO_PARAMS, dialect: 'anthropic_json', retry: NO_RETRY, contextSize: null }).preflight(SCHEMA, 5_000);
    expect(JSON.stringify(refused)).not.toContain(KEY);
  });
});

describe('the preflight', () => {
  test('passes: the model served, the window unknown (said), the probe answered in the dialect and the constraint honoured', async () => {
    for (const dialect of ['anthropic_json', 'anthropic_tool'] as const) {
      const result = await adapter({ dialect, countTokens: true }).preflight(SCHEMA, 5_000);
      if (!result.ok) throw new Error(result.reason);
      expect(result.facts).toMatchObject({ served_model: MODEL, context_size: null, dialect, probe_schema_valid: true, probe_usage_source: 'server' });
      expect(result.lines.join('\n')).toContain('input window: unknown');
      expect(result.lines.join('\n')).toContain(`the constraint is honoured (dialect ${dialect})`);
    }
  });

  test('refuses a model the key may not use, naming those it serves', async () => {
    const result = await adapter({ modelId: 'claude-missing' }).preflight(SCHEMA, 5_000);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain('does not serve the configured model "claude-missing"');
    expect(!result.ok && result.reason).toContain(`"${MODEL}", "claude-other-2"`);
  });

  test('refuses a key the API refuses (401 authentication_error), naming the variable to check', async () => {
    const result = await adapter({ apiKey: 'sk-ant-wrong' }).preflight(SCHEMA, 5_000);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain('authentication_error: invalid x-api-key');
    expect(!result.ok && result.reason).toContain('api_key_env');
  });

  test('refuses count_tokens configured where the endpoint does not count', async () => {
    const bare = await startAnthropicLikeServer({ apiKey: KEY, models: [MODEL], noCountTokens: true, schemaSubsetCheck: false });
    try {
      const result = await new AnthropicAdapter({ baseUrl: bare.baseUrl, modelId: MODEL, apiKey: KEY, params: NO_PARAMS, dialect: 'anthropic_json', retry: NO_RETRY, contextSize: null, countTokens: true }).preflight(SCHEMA, 5_000);
      expect(!result.ok && result.reason).toContain('set count_tokens to false');
    } finally {
      await bare.close();
    }
  });

  test('a schema outside the documented subset: the API\'s 400 quoted in the refusal (forged: the full answer schema has minimum)', async () => {
    expect(subsetViolation(SCHEMA)).not.toBeNull();
    server.setSchemaSubsetCheck(true);
    try {
      const result = await adapter().preflight(SCHEMA, 5_000);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.reason).toContain('HTTP 400');
      expect(!result.ok && result.reason).toMatch(/invalid_request_error: output_config\.format\.schema: For '\w+' type, (property '\w+' is not supported|'additionalProperties' must be explicitly set to false)/);
    } finally {
      server.setSchemaSubsetCheck(false);
    }
  });

  test('a constraint not honoured (forged: the server answers JSON outside the schema): refused, naming the other dialect', async () => {
    const loose = await startAnthropicLikeServer({ apiKey: KEY, models: [MODEL], schemaSubsetCheck: false, answer: () => ({ protocol: 'something else' }) });
    try {
      const result = await new AnthropicAdapter({ baseUrl: loose.baseUrl, modelId: MODEL, apiKey: KEY, params: NO_PARAMS, dialect: 'anthropic_json', retry: NO_RETRY, contextSize: null }).preflight(SCHEMA, 5_000);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.reason).toContain('ignored the constraint (dialect anthropic_json)');
      expect(!result.ok && result.reason).toContain('--structured-output anthropic_tool');
    } finally {
      await loose.close();
    }
  });
});

describe('the stream reader', () => {
  test('unknown event types and pings are passed over; message_delta\'s cumulative usage updates message_start\'s', async () => {
    const text = [
      'event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}\n\n',
      'event: ping\ndata: {"type": "ping"}\n\n',
      'event: some_future_event\ndata: {"type":"some_future_event","x":1}\n\n',
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{}"}}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ].join('');
    const state = emptyAnthropicStreamState();
    const end = await readAnthropicStream(new Response(text).body!, { maxBytes: 10_000, maxEvents: 100 }, state);
    expect(end).toEqual({ kind: 'done' });
    expect(state).toMatchObject({ model: 'm', text: '{}', stop_reason: 'end_turn', usage: { input_tokens: 10, cache_read_input_tokens: 5, output_tokens: 7 } });
  });

  test('a stream that ends without message_stop is not complete (forged: the last event dropped)', async () => {
    const state = emptyAnthropicStreamState();
    const end = await readAnthropicStream(new Response('event: message_start\ndata: {"type":"message_start","message":{"model":"m"}}\n\n').body!, { maxBytes: 10_000, maxEvents: 100 }, state);
    expect(end).toEqual({ kind: 'eof' });
  });
});
