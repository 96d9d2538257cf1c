// The model protocol, the prompt and the non-reference model adapters (issue 5 item 3,
// docs/model-protocol.md). The openai adapter is exercised against a REAL HTTP server on
// loopback started here (node:http, port 0): every case counts the requests the server saw,
// because one call must be exactly one request, and checks that the API key appears in no
// outcome. The replay adapter is checked to serve recordings in order, to refuse to invent
// output, and to open no socket at all.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHook } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { z } from 'zod';
import { ContextBundle } from '../../runtime/context-bundle.js';
import type { ModelCallOutcome, ModelRequest } from '../../runtime/model-adapter.js';
import { OpenAiAdapter, OpenAiAdapterConfigError, type OpenAiAdapterOptions } from '../../runtime/model-adapters/openai-adapter.js';
import { recordedCallsFromEvents, ReplayAdapter, ReplayRecordingError } from '../../runtime/model-adapters/replay-adapter.js';
import { MODEL_OUTPUT_LIMITS, MODEL_PROTOCOL, ModelOutput, parseModelOutput } from '../../runtime/model-protocol.js';
import { estimateTokens, renderPrompt } from '../../runtime/prompt.js';
import type { RecordedModelCall } from '../../runtime/protocol.js';
import { d, draft, SubjectStream } from '../support/subject-events.js';

const API_KEY = 'sk-test-SECRET-7f3a9c1e5b2d4f60';
const EV1 = '0b6f3c1e-2a4d-4c8e-9f10-5a7b3c2d1e0f';
const EV2 = '7d1e2f30-4b5c-4d6e-8f70-112233445566';
const HASH = `sha256:${'ab'.repeat(32)}`;

// ---------------------------------------------------------------------------------------
// fixtures

const BUNDLE: ContextBundle = ContextBundle.parse({
  wake: { wake_id: 'wake-003', wake_at: '2026-07-20T09:00:00.000Z', budget: { model_calls: 1, tokens: 8_000, tool_calls: 4 }, visible_to_seq: 42 },
  state: {
    source: 'persistent',
    goal: { goal_id: 'goal-1', description: 'Prepare the Friday report', deadline_at: '2026-07-23T17:00:00.000Z' },
    tasks: [
      { task_id: 'task-1', title: 'Collect notes', status: 'doing', priority: 1, depends_on: [] },
      { task_id: 'task-2', title: 'Analyse the dataset', status: 'blocked', priority: 2, depends_on: ['task-1'] },
    ],
    attention_target: 'Friday report',
    waiting_condition: 'dataset from the reviewer',
    journal_entries: 3,
    denied_actions: [{ tool: 'files', op: 'write', repeats: 1 }],
  },
  window: {
    events: [
      { seq: 40, event_id: EV1, event_type: 'WorldEvent.MessageReceived', occurred_at: '2026-07-20T08:40:00.000Z', payload: { from: 'reviewer', subject: 'status', body: 'The dataset arrives Thursday.\nSorry for the delay.', in_reply_to: null } },
      { seq: 41, event_id: EV2, event_type: 'WorldEvent.FileChangedExternally', occurred_at: '2026-07-20T08:41:00.000Z', payload: { path: 'notes.md', change: 'modified', post_hash: HASH } },
    ],
    eligible_total: 312,
    omitted_by_count: 310,
    omitted_by_token_cap: 0,
    not_eligible: 90,
    tokens_estimated: 120,
    statement: 'window 2 of 312 eligible events (310 older left out, 0 over the token cap); 90 events of other types not shown',
  },
  workspace: [{ path: 'notes.md', bytes: 120, sha256: HASH }],
});

const VALID_ANSWER = {
  protocol: MODEL_PROTOCOL,
  focus: { attention_target: 'Friday report', waiting_condition: 'dataset from the reviewer' },
  actions: [{ tool: 'files', op: 'read', path: 'notes.md', rationale: 'See what is there.' }],
  claims: [
    { claim_type: 'FACT', statement: 'The dataset arrives Thursday.', evidence_event_ids: [EV1], confidence: null, alternatives: [] },
    { claim_type: 'INFERENCE', statement: 'The report can be finished by Friday.', evidence_event_ids: [EV1], confidence: 0.6, alternatives: ['It cannot.'] },
  ],
  plan_revision: null,
  checkpoint: { current_goal_id: 'goal-1', goal_status: 'in progress', attention_target: 'Friday report', waiting_condition: 'dataset', next_action: 'draft the outline', evidence_event_ids: [EV1] },
};
const VALID_TEXT = JSON.stringify(VALID_ANSWER);

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  const prompt = renderPrompt(BUNDLE);
  return { wake_id: 'wake-003', call_number: 1, bundle: BUNDLE, system: prompt.system, user: prompt.user, max_tokens: 300, ...overrides };
}

function completion(content: string | null, extra: Record<string, unknown> = {}, message: Record<string, unknown> = {}): string {
  return JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'test-model',
    choices: [{ index: 0, message: { role: 'assistant', content, ...message }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 321, completion_tokens: 45, total_tokens: 366 },
    system_fingerprint: 'fp_test_1',
    ...extra,
  });
}

// ---------------------------------------------------------------------------------------
// a real HTTP server on loopback

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  body: string | null;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface TestServer {
  readonly baseUrl: string;
  readonly received: Received[];
  /** Errors the server side saw while writing (e.g. the client cancelled a large body). */
  readonly writeErrors: string[];
  close(): Promise<void>;
}

const servers: TestServer[] = [];

async function startServer(handler: Handler, options: { answerBeforeBody?: boolean } = {}): Promise<TestServer> {
  const received: Received[] = [];
  const writeErrors: string[] = [];
  const server: Server = createServer((req, res) => {
    // Counted when the request arrives, so a handler that never answers is counted too.
    const entry: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: null };
    received.push(entry);
    res.on('error', (error) => writeErrors.push(error.message));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      entry.body = Buffer.concat(chunks).toString('utf8');
      if (!options.answerBeforeBody) handler(req, res, entry.body);
    });
    if (options.answerBeforeBody) handler(req, res, '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const s: TestServer = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    writeErrors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

const PARAMS = { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 };

function adapterFor(server: { baseUrl: string }, overrides: Partial<OpenAiAdapterOptions> = {}): OpenAiAdapter {
  return new OpenAiAdapter({ baseUrl: server.baseUrl, modelId: 'test-model', apiKey: API_KEY, params: PARAMS, ...overrides });
}

/** One call; checks what every call must satisfy: exactly one request, no key in the outcome. */
async function callOnce(server: TestServer, adapter: OpenAiAdapter, timeoutMs = 5_000, req: ModelRequest = request()): Promise<ModelCallOutcome> {
  const outcome = await adapter.call(req, timeoutMs);
  expect(server.received).toHaveLength(1);
  expect(JSON.stringify(outcome)).not.toContain(API_KEY);
  if (outcome.kind === 'failed') expect(outcome.detail.length).toBeGreaterThan(0);
  expect(outcome.latency_ms).toBeGreaterThanOrEqual(0);
  return outcome;
}

function json(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
}

// ---------------------------------------------------------------------------------------

describe('openai adapter against a real HTTP server on loopback', () => {
  test('a good answer: the request carries model, messages and params; the outcome carries text, usage, fingerprint and latency', async () => {
    const server = await startServer((_req, res) => json(res, 200, completion(VALID_TEXT)));
    const req = request();
    const outcome = await callOnce(server, adapterFor(server), 5_000, req);

    const got = server.received[0]!;
    expect(got.method).toBe('POST');
    expect(got.url).toBe('/v1/chat/completions');
    expect(got.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(got.headers['content-type']).toBe('application/json');
    const body = JSON.parse(got.body!) as Record<string, unknown>;
    expect(body).toEqual({
      model: 'test-model',
      messages: [
        { role: 'system', content: req.system },
        { role: 'user', content: req.user },
      ],
      // min(configured 512, the wake's 300)
      max_tokens: 300,
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
    });
    expect(body).not.toHaveProperty('response_format');

    expect(outcome).toEqual({ kind: 'answered', raw_output: VALID_TEXT, usage: { prompt_tokens: 321, completion_tokens: 45 }, usage_estimated: false, latency_ms: expect.any(Number), system_fingerprint: 'fp_test_1' });
    expect(parseModelOutput(VALID_TEXT).ok).toBe(true);
  });

  test('the configured cap wins when it is lower; null params are not sent; jsonMode adds response_format; no key, no Authorization', async () => {
    const server = await startServer((_req, res) => json(res, 200, completion(VALID_TEXT, { system_fingerprint: undefined })));
    const adapter = adapterFor(server, { apiKey: null, params: { temperature: null, top_p: null, seed: null, max_tokens: 100 }, jsonMode: true });
    const outcome = await callOnce(server, adapter);
    const got = server.received[0]!;
    expect(got.headers.authorization).toBeUndefined();
    const body = JSON.parse(got.body!) as Record<string, unknown>;
    expect(body.max_tokens).toBe(100);
    expect(body.response_format).toEqual({ type: 'json_object' });
    expect(Object.keys(body).sort()).toEqual(['max_tokens', 'messages', 'model', 'response_format']);
    expect(outcome.kind === 'answered' && outcome.system_fingerprint).toBeNull();
    expect(adapter.params).toEqual({ temperature: null, top_p: null, seed: null, max_tokens: 100 });
  });

  test('usage missing: answered with the estimate, flagged as estimated', async () => {
    const server = await startServer((_req, res) => json(res, 200, completion(VALID_TEXT, { usage: undefined })));
    const req = request();
    const outcome = await callOnce(server, adapterFor(server), 5_000, req);
    expect(outcome).toMatchObject({
      kind: 'answered',
      raw_output: VALID_TEXT,
      usage_estimated: true,
      usage: { prompt_tokens: estimateTokens(req.system) + estimateTokens(req.user), completion_tokens: estimateTokens(VALID_TEXT) },
    });
  });

  test('a server that never answers: timeout within timeout + slack, one request, the detail names the ms', async () => {
    const server = await startServer(() => undefined);
    const timeoutMs = 300;
    const started = performance.now();
    const outcome = await callOnce(server, adapterFor(server), timeoutMs);
    const elapsedMs = performance.now() - started;
    expect(elapsedMs).toBeGreaterThanOrEqual(timeoutMs - 5);
    expect(elapsedMs).toBeLessThan(timeoutMs + 2_000);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout', raw_output: null });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('300');
  });

  test('a server that sends headers and then stalls the body: timeout, not a hang', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"choices": [');
    });
    const started = performance.now();
    const outcome = await callOnce(server, adapterFor(server), 300);
    expect(performance.now() - started).toBeLessThan(2_300);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'timeout' });
  });

  test('HTTP 500: http_error with the status and the body, and a body echoing the key is redacted', async () => {
    const server = await startServer((req, res) => json(res, 500, JSON.stringify({ error: 'internal error', echoed_header: req.headers.authorization })));
    const outcome = await callOnce(server, adapterFor(server));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error', raw_output: null });
    const detail = outcome.kind === 'failed' ? outcome.detail : '';
    expect(detail).toContain('HTTP 500');
    expect(detail).toContain('internal error');
    expect(detail).toContain('[redacted API key]');
    expect(detail).not.toContain(API_KEY);
  });

  test('an HTTP error body is quoted to 500 chars at most', async () => {
    const server = await startServer((_req, res) => json(res, 503, 'y'.repeat(5_000)));
    const outcome = await callOnce(server, adapterFor(server));
    const detail = outcome.kind === 'failed' ? outcome.detail : '';
    expect(detail).toContain('HTTP 503');
    expect(detail).toContain('y'.repeat(500));
    expect(detail).not.toContain('y'.repeat(501));
  });

  test('a non-JSON body: http_error saying so', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>gateway says hello</html>');
    });
    const outcome = await callOnce(server, adapterFor(server));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(outcome.kind === 'failed' && outcome.detail).toMatch(/not JSON.*gateway says hello/);
  });

  test('JSON that is not a chat completion, or has no content: http_error', async () => {
    const noChoices = await startServer((_req, res) => json(res, 200, JSON.stringify({ object: 'error', message: 'model not loaded' })));
    const a = await callOnce(noChoices, adapterFor(noChoices));
    expect(a).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(a.kind === 'failed' && a.detail).toContain('choices');

    const noContent = await startServer((_req, res) => json(res, 200, completion(null)));
    const b = await callOnce(noContent, adapterFor(noContent));
    expect(b).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(b.kind === 'failed' && b.detail).toContain('choices[0].message.content');
  });

  test('a refusal, and a content filter stop: refusal', async () => {
    const refusing = await startServer((_req, res) => json(res, 200, completion(null, {}, { refusal: "I can't help with that." })));
    const a = await callOnce(refusing, adapterFor(refusing));
    expect(a).toMatchObject({ kind: 'failed', failure: 'refusal', raw_output: "I can't help with that." });
    expect(a.kind === 'failed' && a.detail).toContain("I can't help with that.");

    const filtered = await startServer((_req, res) => {
      const body = JSON.parse(completion('partial')) as { choices: { finish_reason: string }[] };
      body.choices[0]!.finish_reason = 'content_filter';
      json(res, 200, JSON.stringify(body));
    });
    const b = await callOnce(filtered, adapterFor(filtered));
    expect(b).toMatchObject({ kind: 'failed', failure: 'refusal', raw_output: 'partial' });
    expect(b.kind === 'failed' && b.detail).toContain('content_filter');
  });

  test('an oversized body (streamed without a length, and declared with one): http_error, reading stops at the bound', async () => {
    const streamed = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"pad": "${'x'.repeat(2 * 1024 * 1024)}"}`);
    });
    const a = await callOnce(streamed, adapterFor(streamed));
    expect(a).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(a.kind === 'failed' && a.detail).toContain(`exceeds maxResponseBytes ${1024 * 1024}`);

    const declared = await startServer((_req, res) => {
      const body = completion('z'.repeat(8_000));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    const b = await callOnce(declared, adapterFor(declared, { maxResponseBytes: 4_096 }));
    expect(b).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(b.kind === 'failed' && b.detail).toContain('exceeds maxResponseBytes 4096');
  });

  test('a redirect is not followed: one request, http_error naming where it pointed', async () => {
    const target = await startServer((_req, res) => json(res, 200, completion(VALID_TEXT)));
    const redirecting = await startServer((_req, res) => {
      res.writeHead(307, { location: `${target.baseUrl}/chat/completions` });
      res.end();
    });
    const outcome = await callOnce(redirecting, adapterFor(redirecting));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('HTTP 307');
    expect(target.received).toHaveLength(0);
  });

  test('the server drops the connection mid-request: http_error, not retried', async () => {
    const server = await startServer((req) => req.socket.destroy());
    const outcome = await callOnce(server, adapterFor(server));
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error' });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('before a response');
  });

  test('connection refused (a closed port): http_error with the cause', async () => {
    const closed = await startServer(() => undefined);
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const outcome = await adapterFor(closed).call(request(), 5_000);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error', raw_output: null });
    expect(outcome.kind === 'failed' && outcome.detail).toContain('ECONNREFUSED');
    expect(JSON.stringify(outcome)).not.toContain(API_KEY);
    expect(closed.received).toHaveLength(0);
  });

  test('bad configuration is a typed error that does not quote the key; a bad timeout or cap is refused before any request', async () => {
    expect(() => new OpenAiAdapter({ baseUrl: `http://user:${API_KEY}@127.0.0.1:1/v1`, modelId: 'm', apiKey: null, params: PARAMS })).toThrow(OpenAiAdapterConfigError);
    try {
      new OpenAiAdapter({ baseUrl: `http://user:${API_KEY}@127.0.0.1:1/v1`, modelId: 'm', apiKey: null, params: PARAMS });
    } catch (error) {
      expect(String(error)).not.toContain(API_KEY);
    }
    expect(() => new OpenAiAdapter({ baseUrl: 'ftp://127.0.0.1/v1', modelId: 'm', apiKey: null, params: PARAMS })).toThrow(OpenAiAdapterConfigError);
    expect(() => new OpenAiAdapter({ baseUrl: 'http://127.0.0.1/v1', modelId: '', apiKey: null, params: PARAMS })).toThrow(OpenAiAdapterConfigError);

    const server = await startServer((_req, res) => json(res, 200, completion(VALID_TEXT)));
    const adapter = adapterFor(server);
    await expect(adapter.call(request(), 0)).rejects.toThrow(OpenAiAdapterConfigError);
    await expect(adapter.call(request({ max_tokens: 0 }), 1_000)).rejects.toThrow(OpenAiAdapterConfigError);
    expect(server.received).toHaveLength(0);
  });
});

// ---------------------------------------------------------------------------------------

describe('parseModelOutput', () => {
  test('a valid answer parses, bare and inside one ```json fence', () => {
    const bare = parseModelOutput(VALID_TEXT);
    expect(bare.ok).toBe(true);
    expect(bare.ok && bare.output.claims).toHaveLength(2);
    const fenced = parseModelOutput(`\`\`\`json\n${JSON.stringify(VALID_ANSWER, null, 2)}\n\`\`\``);
    expect(fenced).toEqual(bare);
  });

  const failures: [string, string, RegExp][] = [
    ['prose around the JSON', `Here is my answer:\n${VALID_TEXT}\nHope this helps.`, /not JSON/],
    ['a wrong protocol', JSON.stringify({ ...VALID_ANSWER, protocol: 'ds-model-output/2' }), /protocol/],
    ['an INFERENCE without confidence', JSON.stringify({ ...VALID_ANSWER, claims: [{ ...VALID_ANSWER.claims[1], confidence: null }] }), /INFERENCE carries a confidence/],
    ['too many actions', JSON.stringify({ ...VALID_ANSWER, actions: Array.from({ length: MODEL_OUTPUT_LIMITS.maxActions + 1 }, () => VALID_ANSWER.actions[0]) }), /actions/],
    ['a key the protocol does not have (an id from the model)', JSON.stringify({ ...VALID_ANSWER, actions: [{ ...VALID_ANSWER.actions[0], proposal_id: 'p-1' }] }), /proposal_id/],
    ['two objects', `${VALID_TEXT}\n${VALID_TEXT}`, /not JSON/],
  ];
  test.each(failures)('%s fails with a detail', (_name, raw, detail) => {
    const parsed = parseModelOutput(raw);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.detail).toMatch(detail);
  });

  test('the array bounds the prompt states as numbers are the schema\'s (at the bound passes, over it fails)', () => {
    const ids = (n: number): string[] => Array.from({ length: n }, () => EV1);
    const withCheckpointEvidence = (n: number) => ({ ...VALID_ANSWER, checkpoint: { ...VALID_ANSWER.checkpoint, evidence_event_ids: ids(n) } });
    const withDependsOn = (n: number) => ({ ...VALID_ANSWER, actions: [{ tool: 'task_board', op: 'add', task_id: 't', title: 'T', status: 'todo', priority: 9, depends_on: Array.from({ length: n }, () => 'x'), rationale: 'r' }] });
    const withAlternatives = (n: number) => ({ ...VALID_ANSWER, claims: [{ ...VALID_ANSWER.claims[1], alternatives: Array.from({ length: n }, () => 'a') }] });
    const system = renderPrompt(BUNDLE).system;
    for (const [make, bound, text] of [
      [withCheckpointEvidence, 64, '"evidence_event_ids": [at most 64 EVENT_ID]'],
      [withDependsOn, 32, '"depends_on": [at most 32 ID]'],
      [withAlternatives, 16, '"alternatives": [at most 16 '],
    ] as const) {
      expect(system).toContain(text);
      expect(ModelOutput.safeParse(make(bound)).success).toBe(true);
      expect(ModelOutput.safeParse(make(bound + 1)).success).toBe(false);
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('docs/model-protocol.md', () => {
  const doc = readFileSync(fileURLToPath(new URL('../../docs/model-protocol.md', import.meta.url)), 'utf8');

  test('its example answer parses', () => {
    const block = /```json\n([\s\S]*?)\n```/.exec(doc);
    expect(block).not.toBeNull();
    const parsed = parseModelOutput(block![1]!);
    expect(parsed.ok ? 'ok' : parsed.detail).toBe('ok');
  });

  test('it states the protocol limits', () => {
    const L = MODEL_OUTPUT_LIMITS;
    expect(doc).toContain(MODEL_PROTOCOL);
    const flat = doc.replace(/\s+/g, ' ');
    expect(flat).toContain(`at most ${L.maxActions} actions, ${L.maxClaims} claims, ${L.maxEvidencePerClaim} evidence ids per claim, ${L.maxPlanSteps} plan steps, ${L.maxFileContentChars.toLocaleString('en').replace(',', ' ')} chars`);
  });
});

// ---------------------------------------------------------------------------------------

/** Every property name anywhere in a JSON Schema. */
function propertyNames(schema: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const s of schema) propertyNames(s, out);
  else if (schema !== null && typeof schema === 'object') {
    const props = (schema as { properties?: Record<string, unknown> }).properties;
    if (props) for (const k of Object.keys(props)) out.add(k);
    for (const v of Object.values(schema)) propertyNames(v, out);
  }
  return out;
}

describe('renderPrompt', () => {
  test('the same bundle gives a byte-identical prompt, whatever the key order of its payloads', () => {
    const a = renderPrompt(BUNDLE);
    const b = renderPrompt(structuredClone(BUNDLE));
    const reordered = structuredClone(BUNDLE);
    const first = reordered.window.events[0]!;
    first.payload = Object.fromEntries(Object.entries(first.payload).reverse());
    const c = renderPrompt(reordered);
    expect(b).toEqual(a);
    expect(c.user).toBe(a.user);
    expect(c.system).toBe(a.system);
  });

  test('the user message: the statement line first, then one line per event, then the workspace', () => {
    const { user } = renderPrompt(BUNDLE);
    const lines = user.split('\n');
    const statementAt = lines.indexOf(BUNDLE.window.statement);
    expect(statementAt).toBeGreaterThan(0);
    expect(lines[statementAt + 1]).toBe(`40 · ${EV1} · WorldEvent.MessageReceived · 2026-07-20T08:40:00.000Z · {"body":"The dataset arrives Thursday.\\nSorry for the delay.","from":"reviewer","in_reply_to":null,"subject":"status"}`);
    expect(lines[statementAt + 2]).toBe(`41 · ${EV2} · WorldEvent.FileChangedExternally · 2026-07-20T08:41:00.000Z · {"change":"modified","path":"notes.md","post_hash":"${HASH}"}`);
    expect(user).toContain('WAKE wake-003 at 2026-07-20T09:00:00.000Z');
    expect(user).toContain('- task-2 · blocked · priority 2 · "Analyse the dataset" · depends on: task-1');
    expect(user).toContain(`"notes.md" · 120 · ${HASH}`);
    expect(lines.indexOf(`"notes.md" · 120 · ${HASH}`)).toBeGreaterThan(statementAt + 2);
  });

  test('names no group, capability, oracle or intervention, and not how the state was made', () => {
    const { system, user } = renderPrompt(BUNDLE);
    for (const word of ['group', 'capabilit', 'oracle', 'intervention']) {
      expect(system.toLowerCase()).not.toContain(word);
      expect(user.toLowerCase()).not.toContain(word);
    }
    // Rebuilt-from-the-window vs persistent state must not change a byte of the prompt.
    const windowOnly = renderPrompt({ ...BUNDLE, state: { ...BUNDLE.state, source: 'window' } });
    expect(windowOnly).toEqual(renderPrompt(BUNDLE));
  });

  test('the system message states the protocol: its name, every field, FACT evidence, INFERENCE confidence, proposals a gate may deny', () => {
    const { system } = renderPrompt(BUNDLE);
    expect(system).toContain(MODEL_PROTOCOL);
    const fields = propertyNames(z.toJSONSchema(ModelOutput, { unrepresentable: 'any' }));
    expect(fields.size).toBeGreaterThan(20);
    for (const field of fields) expect(system, field).toContain(`"${field}"`);
    expect(system).toContain(`"actions": [at most ${MODEL_OUTPUT_LIMITS.maxActions} ACTION objects]`);
    expect(system).toContain(`"claims": [at most ${MODEL_OUTPUT_LIMITS.maxClaims} CLAIM objects]`);
    expect(system).toContain(`[at most ${MODEL_OUTPUT_LIMITS.maxEvidencePerClaim} EVENT_ID]`);
    expect(system).toContain(`at most ${MODEL_OUTPUT_LIMITS.maxFileContentChars} chars`);
    expect(system).toMatch(/FACT: .*must cite, in evidence_event_ids, events shown in your window/);
    expect(system).toMatch(/INFERENCE: .*confidence is required/);
    expect(system).toMatch(/permission gate checks it and may deny it/);
    expect(system).not.toContain('null chars');
  });
});

// ---------------------------------------------------------------------------------------

describe('replay adapter', () => {
  const SCHEMA_MISS = 'Sure! {"protocol": "nope"}';
  const MODEL_CALL = { adapter: 'openai' as const, model_id: 'test-model', params: { temperature: 0.2, top_p: 0.9, seed: 7, max_tokens: 512 } };

  function recordedStore() {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    const answered = s.push(draft('ModelOutputEvent.ModelAnswered', { wake_id: 'w1', ...MODEL_CALL, system_fingerprint: 'fp_1', latency_ms: 812, context: { window_events: 0, eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0 }, raw_output: VALID_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_estimated: false }));
    const violated = s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w1', ...MODEL_CALL, system_fingerprint: 'fp_1', latency_ms: 640, context: { window_events: 0, eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0 }, failure: 'schema_violation', detail: 'not JSON', raw_output: SCHEMA_MISS }));
    s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w1', ...MODEL_CALL, system_fingerprint: null, latency_ms: 0, context: null, failure: 'budget_exhausted', detail: 'no call left', raw_output: null }));
    s.push(d.wakeEnded('w1'));
    s.push(d.wakeStarted('w2'));
    s.push(draft('ModelOutputEvent.ModelCallFailed', { wake_id: 'w2', ...MODEL_CALL, system_fingerprint: null, latency_ms: 60_001, context: { window_events: 0, eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0 }, failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null }));
    s.push(d.wakeEnded('w2'));
    return { events: s.events, answered, violated };
  }

  test('recordedCallsFromEvents: seq order, numbered per wake, schema violations as answers, budget_exhausted skipped', () => {
    const { events } = recordedStore();
    const calls = recordedCallsFromEvents([...events].reverse());
    expect(calls).toEqual<RecordedModelCall[]>([
      { wake_id: 'w1', call_number: 1, outcome: { kind: 'answered', raw_output: VALID_TEXT, usage: { prompt_tokens: 900, completion_tokens: 120 }, usage_estimated: false, latency_ms: 812, system_fingerprint: 'fp_1' } },
      { wake_id: 'w1', call_number: 2, outcome: { kind: 'answered', raw_output: SCHEMA_MISS, usage: { prompt_tokens: 0, completion_tokens: estimateTokens(SCHEMA_MISS) }, usage_estimated: true, latency_ms: 640, system_fingerprint: 'fp_1' } },
      { wake_id: 'w2', call_number: 1, outcome: { kind: 'failed', failure: 'timeout', detail: 'no complete answer within timeoutMs 60000', raw_output: null, latency_ms: 60_001 } },
    ]);
  });

  /** Network handles (TCP, pipes, UDP, DNS look-ups) created while `run` runs. */
  async function networkHandlesDuring(run: () => Promise<void>): Promise<string[]> {
    const seen: string[] = [];
    const hook = createHook({ init: (_id, type) => { if (/^(TCP|PIPE|UDP|GETADDRINFO|TLS)/.test(type)) seen.push(type); } });
    hook.enable();
    try {
      await run();
    } finally {
      hook.disable();
    }
    return seen;
  }

  test('the network watch sees a real connection attempt (so its silence below means something)', async () => {
    const closed = await startServer(() => undefined);
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const seen = await networkHandlesDuring(async () => {
      const outcome = await adapterFor(closed).call(request(), 2_000);
      expect(outcome).toMatchObject({ kind: 'failed', failure: 'http_error' });
    });
    expect(seen).toContain('TCPWRAP');
  });

  test('serves the recordings in order with their latency, fails a call with no recording, and never opens a socket', async () => {
    const fetchStub = vi.fn(() => Promise.reject(new Error('the replay adapter must not fetch')));
    vi.stubGlobal('fetch', fetchStub);
    const seen = await networkHandlesDuring(async () => {
      const calls = recordedCallsFromEvents(recordedStore().events);
      const replay = new ReplayAdapter('test-model', calls);
      expect(replay.name).toBe('replay');
      expect(replay.model_id).toBe('test-model');

      const first = await replay.call(request({ wake_id: 'w1', call_number: 1 }), 1);
      expect(first).toEqual(calls[0]!.outcome);
      expect(first.latency_ms).toBe(812);
      const second = await replay.call(request({ wake_id: 'w1', call_number: 2 }), 1);
      expect(second).toEqual(calls[1]!.outcome);
      // The wake loop fails the replayed text the same way it failed the original.
      expect(second.kind === 'answered' && parseModelOutput(second.raw_output).ok).toBe(false);
      expect(replay.unservedCalls()).toEqual([{ wake_id: 'w2', call_number: 1 }]);
      const third = await replay.call(request({ wake_id: 'w2', call_number: 1 }), 1);
      expect(third).toMatchObject({ kind: 'failed', failure: 'timeout', latency_ms: 60_001 });

      const missing = await replay.call(request({ wake_id: 'w2', call_number: 2 }), 1);
      expect(missing).toEqual({ kind: 'failed', failure: 'http_error', detail: 'replay: no recorded call for wake w2 call 2', raw_output: null, latency_ms: 0 });
      expect(replay.unservedCalls()).toEqual([]);
    });

    expect(seen).toEqual([]);
    expect(fetchStub).not.toHaveBeenCalled();
  });

  test('a recording it cannot serve faithfully is refused, never guessed', () => {
    const { events, answered, violated } = recordedStore();
    const calls = recordedCallsFromEvents(events);
    expect(() => new ReplayAdapter('test-model', [...calls, calls[0]!])).toThrow(ReplayRecordingError);

    const forgedPayload = { ...answered, payload: { ...answered.payload, usage: { prompt_tokens: -1, completion_tokens: 0 } } };
    expect(() => recordedCallsFromEvents([forgedPayload])).toThrow(/seq \d+ .*fails its schema/);

    const noRawText = { ...violated, payload: { ...violated.payload, raw_output: null } };
    expect(() => recordedCallsFromEvents([noRawText])).toThrow(/schema_violation without its raw text/);

    const otherVersion = { ...answered, schema_version: '2.0.0' };
    expect(() => recordedCallsFromEvents([otherVersion])).toThrow(ReplayRecordingError);
  });
});
