// The `openai` model adapter against REAL HTTP servers on loopback (issue 5 item 3, issue 15
// items 1, 3, 4; docs/model-protocol.md "openai"). Every case checks the requests the server
// saw — which endpoints, how many chat requests (one per attempt, attempts only where no answer
// came) — and that the API key appears in no outcome. The servers speak like llama.cpp
// (/props, /tokenize {content}), vLLM (/v1/models max_model_len, /tokenize {model, prompt}) or a
// bare OpenAI-compatible server (404 for both).
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, test } from 'vitest';
import { specialisedAnswerSchema } from '../../runtime/answer-schema.js';
import { ContextBundle } from '../../runtime/context-bundle.js';
import type { ModelCallOutcome, ModelRequest, TransportFailure } from '../../runtime/model-adapter.js';
import { emptyChatStreamState, readChatStream } from '../../runtime/model-adapters/chat-stream.js';
import { OpenAiAdapter } from '../../runtime/model-adapters/openai-adapter.js';
import { OPENAI_ADAPTER_LIMITS, OpenAiAdapterConfigError, type OpenAiAdapterOptions } from '../../runtime/model-adapters/openai-options.js';
import { checkPromptFits, checkPromptNotTruncated, TOKENIZE_SLACK_PER_MESSAGE } from '../../runtime/model-adapters/prompt-fit.js';
import { JSON_SCHEMA_NAME, structuredOutputFields } from '../../runtime/model-adapters/structured-output.js';
import { STRUCTURED_OUTPUT_DIALECTS, type StructuredOutputDialect } from '../../schema/model-call-policy.js';
import { classifyFetchError, RETRYABLE_STATUSES, withTransportRetry } from '../../runtime/model-adapters/transport-retry.js';
import { estimateTokens, renderPrompt } from '../../runtime/prompt.js';
import {
  closeAllLoopbacks,
  closedBaseUrl,
  completion,
  json,
  llamaProps,
  llamaTokenize,
  loopbackTokens,
  MODEL,
  modelList,
  pieces,
  sse,
  sseEvent,
  startLoopback,
  startSse,
  streamChunks,
  vllmModelList,
  vllmTokenize,
  type Handler,
  type LoopbackServer,
} from './openai-loopback-server.js';

const API_KEY = 'sk-test-SECRET-7f3a9c1e5b2d4f60';
const EV1 = '0b6f3c1e-2a4d-4c8e-9f10-5a7b3c2d1e0f';
const EV2 = '7d1e2f30-4b5c-4d6e-8f70-112233445566';
const HASH = `sha256:${'ab'.repeat(32)}`;
const CHAT = '/v1/chat/completions';

const BUNDLE: ContextBundle = ContextBundle.parse({
  wake: { wake_id: 'wake-003', wake_at: '2026-07-20T09:00:00.000Z', budget: { model_calls: 1, tokens: 8_000, tool_calls: 4 }, visible_to_seq: 42 },
  state: { source: 'persistent', goal: { goal_id: 'goal-1', description: 'Prepare the Friday report', deadline_at: '2026-07-23T17:00:00.000Z' }, tasks: [], attention_target: 'Friday report', waiting_condition: null, journal_entries: 0, denied_actions: [] },
  window: {
    events: [
      { seq: 40, event_id: EV1, event_type: 'WorldEvent.MessageReceived', occurred_at: '2026-07-20T08:40:00.000Z', payload: { from: 'reviewer', subject: 'status', body: 'The dataset arrives Thursday.', in_reply_to: null } },
      { seq: 41, event_id: EV2, event_type: 'WorldEvent.FileChangedExternally', occurred_at: '2026-07-20T08:41:00.000Z', payload: { path: 'notes.md', change: 'modified', post_hash: HASH } },
    ],
    eligible_total: 2,
    omitted_by_count: 0,
    omitted_by_token_cap: 0,
    not_eligible: 0,
    tokens_estimated: 60,
    statement: 'window 2 of 2 eligible events (0 older left out, 0 over the token cap); 0 events of other types not shown',
  },
  workspace: [{ path: 'notes.md', bytes: 120, sha256: HASH }],
});
const SCHEMA = specialisedAnswerSchema('ds-model-output/2', [40, 41]);

/** A valid ds-model-output/2 answer for this wake. */
const ANSWER = JSON.stringify({
  protocol: 'ds-model-output/2',
  focus: { attention_target: 'Friday report', waiting_condition: null },
  actions: [{ tool: 'files', op: 'read', path: 'notes.md', rationale: 'See what is there.' }],
  claims: [{ claim_type: 'FACT', statement: 'The dataset arrives Thursday.', evidence_seqs: [40] }],
  plan_revision: null,
  checkpoint: { current_goal_id: 'goal-1', goal_status: 'active', attention_target: 'Friday report', waiting_condition: null, next_action: 'read notes.md', evidence_seqs: [40] },
});

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  const prompt = renderPrompt(BUNDLE);
  return { wake_id: 'wake-003', call_number: 1, bundle: BUNDLE, system: prompt.system, user: prompt.user, max_tokens: 300, answer_schema: SCHEMA, ...overrides };
}

const PARAMS = { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 };
const RETRY = { max_attempts: 3, backoff_ms: [30, 60] };

function adapterFor(server: { baseUrl: string }, overrides: Partial<OpenAiAdapterOptions> = {}): OpenAiAdapter {
  return new OpenAiAdapter({ baseUrl: server.baseUrl, modelId: MODEL, apiKey: API_KEY, params: PARAMS, dialect: 'llamacpp', retry: RETRY, contextSize: null, ...overrides });
}

/** A llama.cpp-like server: /props (n_ctx), /tokenize {content}, /v1/models. */
function llamaServer(chat: Handler, nCtx = 8_192): Promise<LoopbackServer> {
  return startLoopback({ chat, props: llamaProps(nCtx), tokenize: llamaTokenize, models: modelList(MODEL) });
}

/** One call; checks what every call must satisfy: no key in the outcome, a detail for a failure, a latency. */
async function callChecked(adapter: OpenAiAdapter, req: ModelRequest = request(), timeoutMs = 5_000): Promise<ModelCallOutcome> {
  const outcome = await adapter.call(req, timeoutMs);
  expect(JSON.stringify(outcome)).not.toContain(API_KEY);
  if (outcome.kind === 'failed') expect(outcome.detail.length).toBeGreaterThan(0);
  expect(outcome.latency_ms).toBeGreaterThanOrEqual(0);
  return outcome;
}

function route(s: LoopbackServer): string[] {
  return s.seen.map((r) => `${r.method} ${r.url}`);
}

function chatBody(s: LoopbackServer, i = 0): Record<string, unknown> {
  const body = s.to(CHAT)[i]?.json;
  expect(body).not.toBeNull();
  return body!;
}

/** The prompt as the loopback tokenizer counts it (system and user apart, as the adapter asks). */
function countedPrompt(req: ModelRequest = request()): number {
  return loopbackTokens(req.system) + loopbackTokens(req.user);
}

afterEach(closeAllLoopbacks);

// ---------------------------------------------------------------------------------------

describe('the request body: one per dialect', () => {
  const expected: Record<StructuredOutputDialect, Record<string, unknown>> = {
    json_schema: { response_format: { type: 'json_schema', json_schema: { name: JSON_SCHEMA_NAME, strict: true, schema: SCHEMA } } },
    vllm: { response_format: { type: 'json_schema', json_schema: { name: JSON_SCHEMA_NAME, schema: SCHEMA } } },
    ollama: { response_format: { type: 'json_schema', json_schema: { name: JSON_SCHEMA_NAME, schema: SCHEMA } } },
    llamacpp: { response_format: { type: 'json_object', schema: SCHEMA }, json_schema: SCHEMA },
    json_object: { response_format: { type: 'json_object' } },
    none: {},
  };

  test.each(STRUCTURED_OUTPUT_DIALECTS.map((d) => [d]))('%s: the server receives the model, messages, capped max_tokens, params, stream and exactly the dialect\'s fields', async (dialect) => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks(pieces(ANSWER))));
    const req = request();
    const outcome = await callChecked(adapterFor(server, { dialect }), req);
    expect(outcome.kind).toBe('answered');
    const got = server.to(CHAT)[0]!;
    expect(got.method).toBe('POST');
    expect(got.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.json).toEqual({
      model: MODEL,
      messages: [
        { role: 'system', content: req.system },
        { role: 'user', content: req.user },
      ],
      // min(configured 512, the wake's 300)
      max_tokens: 300,
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      stream: true,
      stream_options: { include_usage: true },
      ...expected[dialect],
    });
    expect(structuredOutputFields(dialect, SCHEMA)).toEqual(expected[dialect]);
  });

  test('the configured cap wins when lower; null params are not sent; stream off sends no stream fields; no key, no Authorization header anywhere', async () => {
    const server = await llamaServer((_s, res) => json(res, 200, completion(ANSWER)));
    const adapter = adapterFor(server, { apiKey: null, params: { temperature: null, top_p: null, seed: null, max_tokens: 100 }, dialect: 'json_object', stream: false });
    const outcome = await callChecked(adapter);
    expect(outcome.kind).toBe('answered');
    for (const seen of server.seen) expect(seen.headers.authorization).toBeUndefined();
    const body = chatBody(server);
    expect(body.max_tokens).toBe(100);
    expect(Object.keys(body).sort()).toEqual(['max_tokens', 'messages', 'model', 'response_format']);
    expect(adapter.params).toEqual({ temperature: null, top_p: null, seed: null, max_tokens: 100 });
  });

  test('the key goes to every request of the configured server (chat and side requests alike) and nowhere else', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks([ANSWER])));
    await callChecked(adapterFor(server));
    expect(server.seen.length).toBeGreaterThan(1);
    for (const seen of server.seen) expect(seen.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });
});

// ---------------------------------------------------------------------------------------

describe('honest records: streamed and plain answers', () => {
  test('a streamed answer: content, finish_reason, the server\'s usage, the chunks\' model and fingerprint, the tokenizer\'s prompt count, 1 attempt; the side requests once per adapter', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks(pieces(ANSWER), { model: 'served-alias', usage: { prompt_tokens: 9_000, completion_tokens: 88 } })));
    const adapter = adapterFor(server);
    const req = request();
    const outcome = await callChecked(adapter, req);
    expect(outcome).toEqual({
      kind: 'answered',
      raw_output: ANSWER,
      usage: { prompt_tokens: 9_000, completion_tokens: 88 },
      usage_source: 'server',
      latency_ms: expect.any(Number),
      system_fingerprint: 'fp_stream_1',
      finish_reason: 'stop',
      response_model: 'served-alias',
      prompt_tokens_counted: countedPrompt(req),
      prompt_count_source: 'tokenizer',
      attempts: 1,
      // The server reported no cache (no cached_tokens, no timings): nobody said, so null.
      prompt_reuse: null,
      cache_read_tokens: null,
    });
    // The first call learns the context (llama.cpp's /props) and finds the tokenizer (counting the system message), then counts the user message.
    expect(route(server)).toEqual(['GET /props', 'POST /tokenize', 'POST /tokenize', `POST ${CHAT}`]);
    expect(server.to('/tokenize').map((s) => s.json)).toEqual([
      { content: req.system, add_special: false },
      { content: req.user, add_special: false },
    ]);

    await callChecked(adapter, req);
    expect(route(server).slice(4)).toEqual(['POST /tokenize', 'POST /tokenize', `POST ${CHAT}`]);
  });

  test('a server that ignores stream: true and answers plain JSON is read as such (content-type decides)', async () => {
    const server = await llamaServer((_s, res) => json(res, 200, completion(ANSWER, { finish_reason: 'length', model: 'plain-model' })));
    const outcome = await callChecked(adapterFor(server));
    expect(chatBody(server).stream).toBe(true);
    expect(outcome).toMatchObject({ kind: 'answered', raw_output: ANSWER, finish_reason: 'length', response_model: 'plain-model', usage: { prompt_tokens: 20_321, completion_tokens: 45 }, usage_source: 'server', system_fingerprint: 'fp_test_1', attempts: 1 });
  });

  test('an event stream sent without its content type is still read as a stream', async () => {
    const server = await llamaServer((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      for (const c of streamChunks(pieces(ANSWER))) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
    const outcome = await callChecked(adapterFor(server));
    expect(outcome).toMatchObject({ kind: 'answered', raw_output: ANSWER, finish_reason: 'stop' });
  });

  test('no usage from the server: the estimate, said to be one (prompt as counted, completion ceil(chars / 4)); never a silent zero', async () => {
    const streamed = await llamaServer((_s, res) => sse(res, streamChunks(pieces(ANSWER), { usage: null })));
    const req = request();
    const a = await callChecked(adapterFor(streamed), req);
    expect(a).toMatchObject({ kind: 'answered', usage_source: 'estimate', usage: { prompt_tokens: countedPrompt(req), completion_tokens: estimateTokens(ANSWER) }, prompt_count_source: 'tokenizer' });

    // A bare OpenAI-compatible server (no /props, no /tokenize): everything estimated, and marked.
    const bare = await startLoopback({ chat: (_s, res) => json(res, 200, completion(ANSWER, { usage: null })) });
    const b = await callChecked(adapterFor(bare), req);
    const estimate = estimateTokens(req.system) + estimateTokens(req.user);
    expect(b).toMatchObject({ kind: 'answered', usage_source: 'estimate', usage: { prompt_tokens: estimate, completion_tokens: estimateTokens(ANSWER) }, prompt_tokens_counted: estimate, prompt_count_source: 'estimate' });
    expect(route(bare)).toEqual(['GET /props', 'GET /v1/models', 'POST /tokenize', 'POST /tokenize', `POST ${CHAT}`]);
  });

  test('a vLLM-shaped server: its tokenizer ({model, prompt} → count) and its max_model_len are used', async () => {
    const server = await startLoopback({ chat: (_s, res) => sse(res, streamChunks([ANSWER])), models: vllmModelList(MODEL, 8_192), tokenize: vllmTokenize });
    const req = request();
    const outcome = await callChecked(adapterFor(server), req);
    expect(outcome).toMatchObject({ kind: 'answered', prompt_tokens_counted: countedPrompt(req), prompt_count_source: 'tokenizer' });
    const shapes = server.to('/tokenize').map((s) => Object.keys(s.json ?? {}).sort().join(','));
    expect(shapes).toEqual(['add_special,content', 'add_special_tokens,model,prompt', 'add_special_tokens,model,prompt']);

    // Its context is max_model_len: a prompt over it is not sent.
    const small = await startLoopback({ chat: (_s, res) => sse(res, streamChunks([ANSWER])), models: vllmModelList(MODEL, 200), tokenize: vllmTokenize });
    const refused = await callChecked(adapterFor(small), req);
    expect(refused).toMatchObject({ kind: 'failed', failure: 'truncated_prompt' });
    expect(refused.kind === 'failed' && refused.detail).toContain('max_model_len');
    expect(small.to(CHAT)).toHaveLength(0);
  });

  test('a refusal (message.refusal, a streamed refusal delta) and a content filter stop: refusal, with usage', async () => {
    const refusing = await llamaServer((_s, res) => json(res, 200, completion(null, { refusal: "I can't help with that." })));
    const a = await callChecked(adapterFor(refusing));
    expect(a).toMatchObject({ kind: 'failed', failure: 'refusal', raw_output: "I can't help with that.", usage_source: 'server', attempts: 1 });

    const streamedRefusal = await llamaServer((_s, res) => sse(res, streamChunks([], { refusal: 'No.' })));
    const b = await callChecked(adapterFor(streamedRefusal));
    expect(b).toMatchObject({ kind: 'failed', failure: 'refusal' });
    expect(b.kind === 'failed' && b.detail).toContain('No.');

    const filtered = await llamaServer((_s, res) => sse(res, streamChunks(['partial'], { finish_reason: 'content_filter' })));
    const c = await callChecked(adapterFor(filtered));
    expect(c).toMatchObject({ kind: 'failed', failure: 'refusal', raw_output: 'partial', finish_reason: 'content_filter' });
  });
});

// ---------------------------------------------------------------------------------------

describe('a stream that goes wrong', () => {
  test('cut halfway (the socket destroyed): stream_broken with what arrived, never retried', async () => {
    const half = ANSWER.slice(0, 80);
    const failures: TransportFailure[] = [];
    const server = await llamaServer((_s, res, req) => {
      startSse(res);
      for (const c of streamChunks(pieces(half)).slice(0, -2)) sseEvent(res, c);
      setTimeout(() => req.socket.destroy(), 30);
    });
    const outcome = await callChecked(adapterFor(server), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'stream_broken', raw_output: half, finish_reason: null, response_model: MODEL, usage_source: 'estimate', attempts: 1 });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('broke off');
    expect(server.to(CHAT)).toHaveLength(1);
    expect(failures).toEqual([]);
  });

  test('ends cleanly without a finish_reason or [DONE]: stream_broken with what arrived', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks(pieces(ANSWER)).slice(0, 3), false));
    const outcome = await callChecked(adapterFor(server));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'stream_broken', raw_output: ANSWER.slice(0, 32) });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('without a finish_reason or [DONE]');
  });

  test('a finish_reason but no [DONE] (the body just ends): the answer is complete', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks(pieces(ANSWER)), false));
    expect(await callChecked(adapterFor(server))).toMatchObject({ kind: 'answered', raw_output: ANSWER, usage_source: 'server' });
  });

  test('an error event (llama.cpp `error:` line, or data with an error object) ends the call as http_error with what arrived', async () => {
    const llama = await llamaServer((_s, res) => {
      startSse(res);
      sseEvent(res, streamChunks(['{"proto'])[1]);
      res.end('error: {"code":500,"message":"the slot crashed","type":"server_error"}\n\n');
    });
    const a = await callChecked(adapterFor(llama));
    expect(a).toMatchObject({ kind: 'failed', failure: 'http_error', raw_output: '{"proto', attempts: 1 });
    expect(a.kind === 'failed' && a.detail).toContain('the slot crashed');

    const vllm = await llamaServer((_s, res) => sse(res, [{ error: { message: 'backend overloaded', code: 500 } }]));
    const b = await callChecked(adapterFor(vllm));
    expect(b).toMatchObject({ kind: 'failed', failure: 'http_error', raw_output: null });
    expect(b.kind === 'failed' && b.detail).toContain('backend overloaded');
  });

  test('bounded: a stream over maxResponseBytes or over the event limit stops being read, http_error', async () => {
    const endless = await llamaServer((_s, res) => {
      startSse(res);
      const chunk = streamChunks(['x'.repeat(200)])[1];
      for (let i = 0; i < 100; i++) sseEvent(res, chunk);
      res.end();
    });
    const a = await callChecked(adapterFor(endless, { maxResponseBytes: 4_096 }));
    expect(a).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(a.kind === 'failed' && a.detail).toContain('exceeded 4096 bytes');
    expect(a.kind === 'failed' && (a.raw_output ?? '').length).toBeLessThanOrEqual(4_096);

    const chatty = await llamaServer((_s, res) => {
      startSse(res);
      res.end('data: {}\n\n'.repeat(OPENAI_ADAPTER_LIMITS.maxStreamEvents + 1));
    });
    const b = await callChecked(adapterFor(chatty, { maxResponseBytes: 8 * 1024 * 1024 }));
    expect(b).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(b.kind === 'failed' && b.detail).toContain(`exceeded ${OPENAI_ADAPTER_LIMITS.maxStreamEvents} events`);
  });

  test('the SSE reader: CRLF lines, comments, multi-line data, a missing blank line between events', async () => {
    const text = [': ping', 'data: {"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}', 'data: {"choices":[{"index":0,"delta":{"content":"b"},', 'data: "finish_reason":null}]}', '', 'data: {"choices":[{"index":0,"delta":{"content":"c"},"finish_reason":"stop"}]}', 'data: [DONE]', ''].join('\r\n');
    const { state, end } = await readChatStream(new Response(text).body!, { maxBytes: 10_000, maxEvents: 10 }, emptyChatStreamState());
    // Lines 2-4 are one event without a blank line before it: the complete first payload is dispatched on its own.
    expect(end).toEqual({ kind: 'done' });
    expect(state).toMatchObject({ content: 'abc', finish_reason: 'stop', model: 'm', events: 4 });
  });
});

// ---------------------------------------------------------------------------------------

describe('timeouts: the request is cancelled on the server, never retried, what arrived is kept', () => {
  test('mid-stream: the server sees its response closed (by the client) right when the adapter gives up; raw_output holds what arrived', async () => {
    const sent = ANSWER.slice(0, 48);
    const server = await llamaServer((_s, res) => {
      startSse(res);
      for (const c of streamChunks(pieces(sent)).slice(0, -2)) sseEvent(res, c);
      // … and then the server "decodes" forever.
    });
    const timeoutMs = 400;
    const started = performance.now();
    const outcome = await callChecked(adapterFor(server), request(), timeoutMs);
    const returnedAt = performance.now();
    expect(returnedAt - started).toBeGreaterThanOrEqual(timeoutMs - 5);
    expect(returnedAt - started).toBeLessThan(timeoutMs + 2_000);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout', raw_output: sent, response_model: MODEL, usage_source: 'estimate', attempts: 1 });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('within timeoutMs 400');
    const chat = server.to(CHAT)[0]!;
    for (let i = 0; i < 50 && chat.closedAt === null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(chat.closedAt).not.toBeNull();
    expect(chat.finished).toBe(false);
    // Closed by the abort, within a moment of it (not when the test server is torn down).
    expect(chat.closedAt! - returnedAt).toBeLessThan(300);
    expect(chat.closedAt! - started).toBeGreaterThanOrEqual(timeoutMs - 5);
    expect(server.to(CHAT)).toHaveLength(1);
  });

  test('before any header: timeout, raw_output null, one chat request, no transport failure reported', async () => {
    const failures: TransportFailure[] = [];
    const server = await llamaServer(() => undefined);
    const outcome = await callChecked(adapterFor(server), request({ onTransportFailure: async (f) => void failures.push(f) }), 300);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout', raw_output: null, attempts: 1 });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('no response headers had arrived');
    expect(server.to(CHAT)).toHaveLength(1);
    expect(failures).toEqual([]);
    // The abort closed it on the server side too.
    for (let i = 0; i < 50 && server.to(CHAT)[0]!.closedAt === null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server.to(CHAT)[0]!.closedAt).not.toBeNull();
  });

  test('a server that hangs on everything: one side request waits, the rest are skipped, the call ends within 2 × timeoutMs + slack', async () => {
    const hang: Handler = () => undefined;
    const server = await startLoopback({ chat: hang, props: hang, models: hang, tokenize: hang });
    const started = performance.now();
    const outcome = await callChecked(adapterFor(server), request(), 300);
    expect(performance.now() - started).toBeLessThan(2 * 300 + 1_000);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout', prompt_count_source: 'estimate', attempts: 1 });
    expect(route(server)).toEqual(['GET /props', `POST ${CHAT}`]);
  });

  test('a plain JSON body that stalls after its headers: timeout, not a hang', async () => {
    const server = await llamaServer((_s, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"choices": [');
    });
    const started = performance.now();
    const outcome = await callChecked(adapterFor(server, { stream: false }), request(), 300);
    expect(performance.now() - started).toBeLessThan(2_300);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout', raw_output: null });
  });
});

// ---------------------------------------------------------------------------------------

describe('transport retries under the pre-registered policy', () => {
  test('503 twice, then an answer: attempts 3, onTransportFailure heard twice (awaited) with the policy\'s backoffs, before each retry', async () => {
    let chats = 0;
    const server = await llamaServer((_s, res) => {
      chats += 1;
      if (chats <= 2) return json(res, 503, { error: { code: 503, message: 'Loading model' } }, { 'retry-after': '5' });
      sse(res, streamChunks(pieces(ANSWER)));
    });
    const failures: TransportFailure[] = [];
    const heardAt: number[] = [];
    const started = performance.now();
    const outcome = await callChecked(
      adapterFor(server),
      request({
        onTransportFailure: async (f) => {
          failures.push(f);
          heardAt.push(server.to(CHAT).length);
          // Awaited: the adapter waits for the record before it waits out the backoff.
          await new Promise((r) => setTimeout(r, 20));
        },
      }),
    );
    expect(outcome).toMatchObject({ kind: 'answered', raw_output: ANSWER, attempts: 3 });
    expect(failures.map((f) => [f.attempt, f.kind, f.backoff_ms])).toEqual([
      [1, 'http_503', 30],
      [2, 'http_503', 60],
    ]);
    expect(failures[0]!.detail).toContain('Loading model');
    expect(failures[0]!.detail).toContain('Retry-After "5" not followed');
    expect(heardAt).toEqual([1, 2]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(30 + 60 + 2 * 20 - 5);
    expect(server.to(CHAT)).toHaveLength(3);
    for (const f of failures) expect(f.detail).not.toContain(API_KEY);
  });

  test('the status table (issue 31 item 6): 408, 409, 429 and every 5xx are the retryable set, nothing else', () => {
    const retryable = Array.from({ length: 900 }, (_v, i) => 100 + i).filter((status) => RETRYABLE_STATUSES.has(status));
    expect(retryable).toEqual([408, 409, 429, ...Array.from({ length: 100 }, (_v, i) => 500 + i)]);
  });

  test.each([408, 409, 429, 500, 501, 502, 503, 504, 599])('HTTP %i is a transport failure: retried, and after the last attempt `transport` with the attempts', async (status) => {
    const server = await llamaServer((_s, res) => json(res, status, { error: 'busy' }));
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(server, { retry: { max_attempts: 2, backoff_ms: [10] } }), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'transport', attempts: 2, raw_output: null, usage: null });
    expect(failures.map((f) => [f.kind, f.backoff_ms])).toEqual([
      [`http_${status}`, 10],
      [`http_${status}`, null],
    ]);
    expect(server.to(CHAT)).toHaveLength(2);
  });

  test('connection refused (a closed port): every attempt fails, `transport` after max_attempts, the last reported with backoff null', async () => {
    const baseUrl = await closedBaseUrl();
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor({ baseUrl }), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'transport', attempts: 3, raw_output: null, usage: null, usage_source: null, finish_reason: null, prompt_count_source: 'estimate' });
    expect(failures.map((f) => [f.attempt, f.kind, f.backoff_ms])).toEqual([
      [1, 'connection_refused', 30],
      [2, 'connection_refused', 60],
      [3, 'connection_refused', null],
    ]);
    const detail = outcome.kind === 'failed' ? outcome.detail : '';
    expect(detail).toContain('ECONNREFUSED');
    expect(detail).toContain('in 3 attempt(s)');
    expect(detail).toContain('max_attempts 3');
  });

  test('the server drops the connection before answering: connection_reset, retried, the answer of the next attempt used', async () => {
    let chats = 0;
    const server = await llamaServer((_s, res, req) => {
      chats += 1;
      if (chats === 1) return void req.socket.destroy();
      sse(res, streamChunks([ANSWER]));
    });
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(server), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'answered', attempts: 2 });
    expect(failures.map((f) => f.kind)).toEqual(['connection_reset']);
    expect(failures[0]!.detail).toContain('before a response');
  });

  test.each([400, 401, 404, 422])('HTTP %i is the server\'s answer to this request: http_error after exactly one chat request, not retried', async (status) => {
    const server = await llamaServer((_s, res) => json(res, status, { error: { code: status, message: `refused with ${status}` } }));
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(server), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error', attempts: 1, usage: null });
    expect(outcome.kind === 'failed' && outcome.detail).toContain(`HTTP ${status}`);
    expect(server.to(CHAT)).toHaveLength(1);
    expect(failures).toEqual([]);
  });

  test('an answer is never retried: HTTP 400 is http_error after exactly one chat request', async () => {
    const server = await llamaServer((_s, res) => json(res, 400, { error: { code: 400, message: 'Unrecognized schema: pattern' } }));
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(server), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error', attempts: 1, usage: null });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('Unrecognized schema');
    expect(server.to(CHAT)).toHaveLength(1);
    expect(failures).toEqual([]);
  });

  test('max_attempts 1: a 503 is reported once and the call ends', async () => {
    const server = await llamaServer((_s, res) => json(res, 503, 'y'.repeat(5_000)));
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(server, { retry: { max_attempts: 1, backoff_ms: [] } }), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'transport', attempts: 1 });
    expect(failures).toHaveLength(1);
    expect(failures[0]!.backoff_ms).toBeNull();
    // The body is quoted to 500 chars at most.
    expect(failures[0]!.detail).toContain('y'.repeat(500));
    expect(failures[0]!.detail).not.toContain('y'.repeat(501));
  });

  test('an onTransportFailure that throws stops the call: no further attempt follows an attempt that could not be recorded', async () => {
    const server = await llamaServer((_s, res) => json(res, 503, {}));
    await expect(adapterFor(server).call(request({ onTransportFailure: async () => { throw new Error('the store refused the record'); } }), 5_000)).rejects.toThrow('the store refused the record');
    expect(server.to(CHAT)).toHaveLength(1);
  });

  test('the retry loop itself: a non-transient failure ends it at once; the classification of fetch errors', async () => {
    const seen: number[] = [];
    const waits: number[] = [];
    const r = await withTransportRetry({ max_attempts: 5, backoff_ms: [1, 2, 3, 4] }, async (n) => {
      seen.push(n);
      return n < 3 ? { ok: false, noAnswer: { kind: 'connection_refused', detail: 'x', retryable: true } } : { ok: false, noAnswer: { kind: 'transport_cert', detail: 'y', retryable: false } };
    }, undefined, async (ms) => void waits.push(ms));
    expect(seen).toEqual([1, 2, 3]);
    expect(waits).toEqual([1, 2]);
    expect(r).toMatchObject({ kind: 'no_answer', attempts: 3, last: { kind: 'transport_cert', backoff_ms: null } });

    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    expect(classifyFetchError(refused, 'd')).toEqual({ kind: 'connection_refused', detail: 'd', retryable: true });
    const cert = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('unable to verify'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }) });
    expect(classifyFetchError(cert, 'd')).toMatchObject({ retryable: false });
  });
});

// ---------------------------------------------------------------------------------------

describe('prompt size: counted, checked against the context, and truncation caught', () => {
  test('the server counted fewer prompt tokens than the tokenizer: truncated_prompt, the answer kept in raw_output and not used', async () => {
    const req = request();
    const counted = countedPrompt(req);
    const server = await llamaServer((_s, res) => sse(res, streamChunks([ANSWER], { usage: { prompt_tokens: Math.floor(counted / 3), completion_tokens: 40 } })));
    const outcome = await callChecked(adapterFor(server), req);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'truncated_prompt', raw_output: ANSWER, usage: { prompt_tokens: Math.floor(counted / 3), completion_tokens: 40 }, usage_source: 'server', prompt_tokens_counted: counted, prompt_count_source: 'tokenizer', finish_reason: 'stop' });
    expect(outcome.kind === 'failed' && outcome.detail).toContain(`the server counted ${Math.floor(counted / 3)} prompt tokens`);
    expect(server.to(CHAT)).toHaveLength(1);
  });

  test('the check\'s boundary: the slack of one token per message passes, one more is caught (forged counts)', () => {
    const count = { tokens: 1_000, source: 'tokenizer' as const, messages: 2 };
    expect(checkPromptNotTruncated(count, 1_000)).toEqual({ truncated: false, checked: true });
    expect(checkPromptNotTruncated(count, 1_000 - 2 * TOKENIZE_SLACK_PER_MESSAGE)).toEqual({ truncated: false, checked: true });
    expect(checkPromptNotTruncated(count, 1_000 - 2 * TOKENIZE_SLACK_PER_MESSAGE - 1)).toMatchObject({ truncated: true });
    expect(checkPromptNotTruncated(count, 4_996)).toEqual({ truncated: false, checked: true });
    // An estimate is no ground for the check (it can be above the true count): not run, and said so by `checked`.
    expect(checkPromptNotTruncated({ ...count, source: 'estimate' }, 10)).toEqual({ truncated: false, checked: false });
    expect(checkPromptNotTruncated(count, null)).toEqual({ truncated: false, checked: false });
  });

  test('with only an estimate, a lower server count is not called truncation (the estimate may be high)', async () => {
    const req = request();
    const server = await startLoopback({ chat: (_s, res) => sse(res, streamChunks([ANSWER], { usage: { prompt_tokens: 10, completion_tokens: 40 } })) });
    const outcome = await callChecked(adapterFor(server), req);
    expect(outcome).toMatchObject({ kind: 'answered', prompt_count_source: 'estimate', usage: { prompt_tokens: 10 } });
  });

  test('over the server\'s context (llama.cpp /props n_ctx): truncated_prompt, and no chat request is sent', async () => {
    const req = request();
    const counted = countedPrompt(req);
    const server = await llamaServer((_s, res) => sse(res, streamChunks([ANSWER])), counted + 299);
    const outcome = await callChecked(adapterFor(server), req);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'truncated_prompt', raw_output: null, usage: null, prompt_tokens_counted: counted, prompt_count_source: 'tokenizer' });
    const detail = outcome.kind === 'failed' ? outcome.detail : '';
    expect(detail).toContain(`plus the answer's cap (max_tokens 300) is ${counted + 300} tokens, over the context size ${counted + 299}`);
    expect(detail).toContain('n_ctx');
    expect(detail).toContain('not sent');
    expect(server.to(CHAT)).toHaveLength(0);

    // Exactly at the context size it fits.
    const exact = await llamaServer((_s, res) => sse(res, streamChunks([ANSWER])), counted + 300);
    expect(await callChecked(adapterFor(exact), req)).toMatchObject({ kind: 'answered' });
  });

  test('the configured contextSize serves when the server reports none (the estimate is then the count, and said so)', async () => {
    const req = request();
    const server = await startLoopback({ chat: (_s, res) => sse(res, streamChunks([ANSWER])) });
    const outcome = await callChecked(adapterFor(server, { contextSize: 500 }), req);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'truncated_prompt', prompt_count_source: 'estimate' });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('configured contextSize');
    expect(outcome.kind === 'failed' && outcome.detail).toContain('estimated');
    expect(server.to(CHAT)).toHaveLength(0);
  });

  test('the fit check (forged sizes)', () => {
    const count = { tokens: 700, source: 'tokenizer' as const, messages: 2 };
    expect(checkPromptFits(count, 300, { size: 1_000, source: 's' })).toEqual({ fits: true });
    expect(checkPromptFits(count, 301, { size: 1_000, source: 's' })).toMatchObject({ fits: false });
    expect(checkPromptFits(count, 10_000, null)).toEqual({ fits: true });
  });
});

// ---------------------------------------------------------------------------------------

describe('what still holds: no redirect, bounded bodies, redaction, typed configuration errors', () => {
  test('HTTP 500 echoing the key: retried, then transport with status and body, the key redacted in the call and in every attempt', async () => {
    const server = await llamaServer((s, res) => json(res, 500, { error: 'internal error', echoed_header: s.headers.authorization }));
    const failures: TransportFailure[] = [];
    const outcome = await callChecked(adapterFor(server), request({ onTransportFailure: async (f) => void failures.push(f) }));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'transport', raw_output: null, attempts: RETRY.max_attempts });
    const detail = outcome.kind === 'failed' ? outcome.detail : '';
    expect(detail).toContain('HTTP 500');
    expect(detail).toContain('internal error');
    expect(detail).toContain('[redacted API key]');
    expect(failures.map((f) => f.kind)).toEqual(['http_500', 'http_500', 'http_500']);
    for (const f of failures) {
      expect(f.detail).toContain('[redacted API key]');
      expect(f.detail).not.toContain(API_KEY);
    }
    expect(server.to(CHAT)).toHaveLength(RETRY.max_attempts);
  });

  test('a streamed answer that echoes the key: redacted in the raw output too', async () => {
    const server = await llamaServer((s, res) => sse(res, streamChunks([`key: ${String(s.headers.authorization)}`])));
    const outcome = await callChecked(adapterFor(server));
    expect(outcome.kind === 'answered' && outcome.raw_output).toBe('key: Bearer [redacted API key]');
  });

  test('a non-JSON body, JSON that is not a completion, a completion without content: http_error saying which', async () => {
    const html = await llamaServer((_s, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>gateway says hello</html>');
    });
    const a = await callChecked(adapterFor(html));
    expect(a).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(a.kind === 'failed' && a.detail).toMatch(/not JSON.*gateway says hello/);

    const noChoices = await llamaServer((_s, res) => json(res, 200, { object: 'error', message: 'model not loaded' }));
    const b = await callChecked(adapterFor(noChoices));
    expect(b.kind === 'failed' && b.detail).toContain('choices');

    const noContent = await llamaServer((_s, res) => json(res, 200, completion(null)));
    const c = await callChecked(adapterFor(noContent));
    expect(c).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(c.kind === 'failed' && c.detail).toContain('choices[0].message.content');
  });

  test('an oversized plain body (streamed without a length, and declared with one): http_error, reading stops at the bound', async () => {
    const streamed = await llamaServer((_s, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"pad": "${'x'.repeat(2 * 1024 * 1024)}"}`);
    });
    const a = await callChecked(adapterFor(streamed));
    expect(a.kind === 'failed' && a.detail).toContain(`exceeds maxResponseBytes ${1024 * 1024}`);

    const declared = await llamaServer((_s, res) => json(res, 200, completion('z'.repeat(8_000))));
    const b = await callChecked(adapterFor(declared, { maxResponseBytes: 4_096 }));
    expect(b.kind === 'failed' && b.detail).toContain('exceeds maxResponseBytes 4096');
  });

  test('a redirect is not followed: one chat request, http_error naming where it pointed, nothing sent to the target', async () => {
    const target = await llamaServer((_s, res) => sse(res, streamChunks([ANSWER])));
    const redirecting = await startLoopback({
      chat: (_s, res: ServerResponse) => {
        res.writeHead(307, { location: `${target.baseUrl}/chat/completions` });
        res.end();
      },
      props: (_s, res) => {
        res.writeHead(302, { location: `${target.baseUrl.replace('/v1', '')}/props` });
        res.end();
      },
    });
    const outcome = await callChecked(adapterFor(redirecting));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error', attempts: 1 });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('HTTP 307');
    expect(outcome.kind === 'failed' && outcome.detail).toContain(target.baseUrl);
    expect(redirecting.to(CHAT)).toHaveLength(1);
    expect(target.seen).toHaveLength(0);
  });

  test('bad configuration is a typed error that does not quote the key; a bad timeout or cap is refused before any request', async () => {
    const base = { modelId: 'm', apiKey: null, params: PARAMS, dialect: 'llamacpp' as const, retry: RETRY, contextSize: null };
    const bad: [string, Record<string, unknown>][] = [
      ['credentials in the URL', { ...base, baseUrl: `http://user:${API_KEY}@127.0.0.1:1/v1` }],
      ['ftp', { ...base, baseUrl: 'ftp://127.0.0.1/v1' }],
      ['empty model id', { ...base, baseUrl: 'http://127.0.0.1/v1', modelId: '' }],
      ['an unknown dialect', { ...base, baseUrl: 'http://127.0.0.1/v1', dialect: 'grammar' }],
      ['the old jsonMode key', { ...base, baseUrl: 'http://127.0.0.1/v1', jsonMode: true }],
      ['backoffs not max_attempts - 1', { ...base, baseUrl: 'http://127.0.0.1/v1', retry: { max_attempts: 3, backoff_ms: [10] } }],
      ['too many attempts', { ...base, baseUrl: 'http://127.0.0.1/v1', retry: { max_attempts: 11, backoff_ms: Array.from({ length: 10 }, () => 1) } }],
      ['a backoff over 60 s', { ...base, baseUrl: 'http://127.0.0.1/v1', retry: { max_attempts: 2, backoff_ms: [60_001] } }],
      ['a context of 0', { ...base, baseUrl: 'http://127.0.0.1/v1', contextSize: 0 }],
      ['no retry policy', { ...base, baseUrl: 'http://127.0.0.1/v1', retry: undefined }],
    ];
    for (const [what, options] of bad) {
      let error: unknown = null;
      try {
        new OpenAiAdapter(options as OpenAiAdapterOptions);
      } catch (e) {
        error = e;
      }
      expect(error, what).toBeInstanceOf(OpenAiAdapterConfigError);
      expect(String(error), what).not.toContain(API_KEY);
    }
    expect(new OpenAiAdapter({ ...base, baseUrl: 'http://127.0.0.1/v1' }).stream).toBe(true);

    const server = await llamaServer((_s, res) => sse(res, streamChunks([ANSWER])));
    const adapter = adapterFor(server);
    await expect(adapter.call(request(), 0)).rejects.toThrow(OpenAiAdapterConfigError);
    await expect(adapter.call(request({ max_tokens: 0 }), 1_000)).rejects.toThrow(OpenAiAdapterConfigError);
    expect(server.seen).toHaveLength(0);
  });
});

