// The `openai` adapter's check before hour 0 (issue 15 item 5; docs/model-protocol.md
// "openai"), against REAL HTTP servers on loopback: the server answers and serves the
// configured model, its context size and tokenizer are learnt, and one probe call in the
// configured dialect shows the constraint honoured — else a refusal with a reason a person can
// act on. And the checker behind the probe, fed forged answers.
import { afterEach, describe, expect, test } from 'vitest';
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';
import { answerJsonSchema, specialisedAnswerSchema } from '../../runtime/answer-schema.js';
import { OpenAiAdapter } from '../../runtime/model-adapters/openai-adapter.js';
import { PROBE_MESSAGES } from '../../runtime/model-adapters/probe-messages.js';
import type { OpenAiAdapterOptions } from '../../runtime/model-adapters/openai-options.js';
import type { ConstraintShownEarlier } from '../../runtime/protocol.js';
import { checkConstrainedAnswer } from '../../runtime/model-adapters/structured-output.js';
import { closeAllLoopbacks, closedBaseUrl, completion, json, llamaProps, llamaTokenize, MODEL, modelList, pieces, sse, startLoopback, streamChunks, vllmModelList, vllmTokenize, type Handler, type LoopbackServer } from './openai-loopback-server.js';

const API_KEY = 'sk-test-SECRET-preflight-0c1d2e3f';
const CHAT = '/v1/chat/completions';
const SCHEMA = answerJsonSchema('ds-model-output/2');

/** The shortest valid ds-model-output/2 answer: what a constrained model writes. */
const MINIMAL = JSON.stringify(EMPTY_ANSWER);

function adapterFor(server: { baseUrl: string }, overrides: Partial<OpenAiAdapterOptions> = {}): OpenAiAdapter {
  return new OpenAiAdapter({ baseUrl: server.baseUrl, modelId: MODEL, apiKey: API_KEY, params: { temperature: 0, top_p: null, seed: 1, max_tokens: null }, dialect: 'llamacpp', retry: { max_attempts: 2, backoff_ms: [20] }, contextSize: null, ...overrides });
}

function llamaServer(chat: Handler, models: Handler = modelList(MODEL)): Promise<LoopbackServer> {
  return startLoopback({ chat, models, props: llamaProps(2_048), tokenize: llamaTokenize });
}

async function preflight(adapter: OpenAiAdapter, schema: Readonly<Record<string, unknown>> = SCHEMA, timeoutMs = 5_000, shownEarlier: ConstraintShownEarlier | null = null) {
  const result = await adapter.preflight(schema, timeoutMs, shownEarlier);
  expect(JSON.stringify(result)).not.toContain(API_KEY);
  expect(result.lines.length).toBeGreaterThan(0);
  return result;
}

afterEach(closeAllLoopbacks);

describe('preflight against a live server', () => {
  test('ok: the model served, the context and tokenizer learnt, the probe answer valid under the constraint; the facts say so; calls do not probe again', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks(pieces(MINIMAL), { usage: { prompt_tokens: 30, completion_tokens: 70 } })));
    const adapter = adapterFor(server);
    const result = await preflight(adapter);
    expect(result.ok ? 'ok' : result.reason).toBe('ok');
    if (!result.ok) return;
    expect(result.facts).toMatchObject({
      served_model: MODEL,
      models_listed: 1,
      context_size: 2_048,
      server_build: 'b4748-test',
      tokenize: 'llamacpp',
      dialect: 'llamacpp',
      stream: true,
      probe_finish_reason: 'stop',
      probe_prompt_tokens: 30,
      probe_completion_tokens: 70,
      probe_usage_source: 'server',
      probe_response_model: MODEL,
      probe_attempts: 1,
      probe_schema_valid: true,
      probe_raw_output: MINIMAL,
    });
    expect(result.facts.probe_latency_ms).toEqual(expect.any(Number));
    expect(result.lines.join('\n')).toContain('the constraint is honoured (dialect llamacpp)');
    expect(result.lines.join('\n')).toContain('context size: 2048 tokens');

    // The probe: the configured dialect's fields, the default cap, and the schema NOT shown to the model.
    const probe = server.to(CHAT)[0]!.json!;
    expect(probe.response_format).toEqual({ type: 'json_object', schema: SCHEMA });
    expect(probe.json_schema).toEqual(SCHEMA);
    // The cap a study call gets (4,096), within what the context (2,048 here) leaves after the probe's reserve of 256 tokens.
    expect(probe.max_tokens).toBe(2_048 - 256);
    expect(probe.messages).toEqual([
      { role: 'system', content: PROBE_MESSAGES.system },
      { role: 'user', content: PROBE_MESSAGES.user },
    ]);
    expect(JSON.stringify(probe.messages)).not.toContain('ds-model-output');
    for (const seen of server.seen) expect(seen.headers.authorization).toBe(`Bearer ${API_KEY}`);

    // What preflight learnt serves the calls: no /props, no tokenizer search again.
    const before = server.seen.length;
    const call = await adapter.call({ wake_id: 'w1', call_number: 1, bundle: null as never, system: 'sys', user: 'usr', max_tokens: 100, answer_schema: SCHEMA }, 5_000);
    expect(call.kind).toBe('answered');
    expect(server.seen.slice(before).map((s) => `${s.method} ${s.url}`)).toEqual(['POST /tokenize', 'POST /tokenize', `POST ${CHAT}`]);
  });

  test('a vLLM-shaped server: max_model_len is the context, its tokenizer is found, dialect json_schema', async () => {
    const server = await startLoopback({ chat: (_s, res) => sse(res, streamChunks([MINIMAL])), models: vllmModelList(MODEL, 32_768), tokenize: vllmTokenize });
    const result = await preflight(adapterFor(server, { dialect: 'json_schema', contextSize: 4_096 }));
    expect(result.ok ? 'ok' : result.reason).toBe('ok');
    if (!result.ok) return;
    expect(result.facts).toMatchObject({ context_size: 32_768, tokenize: 'vllm', dialect: 'json_schema' });
    expect(String(result.facts.context_source)).toContain('max_model_len');
    expect(result.lines.join('\n')).toContain('the configured contextSize 4096 differs from the server\'s 32768');
    expect(server.to(CHAT)[0]!.json!.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true, schema: SCHEMA } });
  });

  test('the model is not served: one other model listed → the refusal names it; several → lists them; no probe call', async () => {
    const one = await llamaServer((_s, res) => sse(res, streamChunks([MINIMAL])), modelList('/models/stories260K.gguf'));
    const a = await preflight(adapterFor(one));
    expect(a.ok).toBe(false);
    expect(!a.ok && a.reason).toContain('serves one model, "/models/stories260K.gguf", not the configured "test-model"');
    expect(!a.ok && a.reason).toContain('--alias');
    expect(one.to(CHAT)).toHaveLength(0);

    const many = await llamaServer((_s, res) => sse(res, streamChunks([MINIMAL])), modelList('a', 'b', 'c'));
    const b = await preflight(adapterFor(many));
    expect(!b.ok && b.reason).toContain('does not serve the configured model "test-model": it lists 3 model(s): "a", "b", "c"');
    expect(many.to(CHAT)).toHaveLength(0);

    const noList = await startLoopback({ chat: (_s, res) => sse(res, streamChunks([MINIMAL])) });
    const c = await preflight(adapterFor(noList));
    expect(!c.ok && c.reason).toContain('not with a model list');
  });

  test('the server is down: refused after the retry policy\'s attempts, each in the lines', async () => {
    const baseUrl = await closedBaseUrl();
    const result = await preflight(adapterFor({ baseUrl }));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain('does not answer');
    expect(!result.ok && result.reason).toContain('ECONNREFUSED');
    expect(!result.ok && result.reason).toContain('2 attempt(s)');
    expect(result.lines.filter((l) => l.includes('connection_refused'))).toHaveLength(2);
  });

  test('a server still loading (503) and then up: the retry policy carries the preflight through', async () => {
    let lists = 0;
    const server = await llamaServer(
      (_s, res) => sse(res, streamChunks([MINIMAL])),
      (s, res) => {
        lists += 1;
        if (lists === 1) return json(res, 503, { error: { code: 503, message: 'Loading model' } });
        modelList(MODEL)(s, res, undefined as never);
      },
    );
    const result = await preflight(adapterFor(server));
    expect(result.ok ? 'ok' : result.reason).toBe('ok');
    expect(result.lines.join('\n')).toContain('attempt 1 brought no answer (http_503)');
  });

  test('the constraint ignored: a server that answers prose (or JSON off the schema) under llamacpp / json_schema is refused, naming the dialect', async () => {
    const prose = await llamaServer((_s, res) => sse(res, streamChunks(['Once upon a time, there was a little dog named Spot.'])));
    const a = await preflight(adapterFor(prose));
    expect(a.ok).toBe(false);
    expect(!a.ok && a.reason).toContain('the server ignored the constraint (dialect llamacpp)');
    expect(!a.ok && a.reason).toContain('Once upon a time');

    const offSchema = await llamaServer((_s, res) => json(res, 200, completion(JSON.stringify({ answer: 'hello' }))));
    const b = await preflight(adapterFor(offSchema, { dialect: 'json_schema' }));
    expect(!b.ok && b.reason).toContain('the server ignored the constraint (dialect json_schema): the answer is JSON but does not satisfy the schema');
  });

  test('dialect none: no probe call; the lines say the probe is skipped and why', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks(['prose'])));
    const result = await preflight(adapterFor(server, { dialect: 'none' }));
    expect(result.ok).toBe(true);
    expect(result.lines.join('\n')).toContain('dialect none: no constraint is sent');
    expect(result.lines.join('\n')).toContain('probe call is skipped');
    expect(server.to(CHAT)).toHaveLength(0);
    expect(result.ok && result.facts.probe_finish_reason).toBeNull();
  });

  test('dialect json_object: a JSON object off the schema passes (the dialect promises JSON only), and the facts say the schema failed', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks([JSON.stringify({ answer: 'hello' })])));
    const result = await preflight(adapterFor(server, { dialect: 'json_object' }));
    expect(result.ok).toBe(true);
    expect(result.ok && result.facts.probe_schema_valid).toBe(false);
    expect(result.lines.join('\n')).toContain('json_object does not promise the schema');
  });

  test('the probe cut at its cap: refused, saying the study\'s answers get that cap too', async () => {
    const server = await llamaServer((_s, res) => sse(res, streamChunks([MINIMAL.slice(0, 60)], { finish_reason: 'length' })));
    const result = await preflight(adapterFor(server, { params: { temperature: 0, top_p: null, seed: 1, max_tokens: 40 } }));
    expect(!result.ok && result.reason).toContain('cut at its token cap (max_tokens 40, finish_reason length)');
    expect(server.to(CHAT)[0]!.json!.max_tokens).toBe(40);
  });

  test('the probe call fails (the server rejects the dialect\'s fields): refused with the failure and the hint', async () => {
    const server = await llamaServer((_s, res) => json(res, 400, { error: { code: 400, message: 'JSON schema conversion failed' } }));
    const result = await preflight(adapterFor(server));
    expect(!result.ok && result.reason).toContain('the probe call in dialect llamacpp failed (http_error)');
    expect(!result.ok && result.reason).toContain('JSON schema conversion failed');
    expect(!result.ok && result.reason).toContain('may not accept dialect llamacpp');
  });
});

describe('a restart\'s check (issue 34): no probe call where this very server showed the constraint honoured', () => {
  const served = (s: { seen: readonly { url: string }[] }) => s.seen.filter((r) => r.url === CHAT).length;
  const minimal = () => llamaServer((_s, res) => sse(res, streamChunks(pieces(MINIMAL), { usage: { prompt_tokens: 30, completion_tokens: 70 } })));

  test('the same build and dialect: the side requests are made, the probe call is not (it would evict the study\'s prompt from the cache), and the lines and facts say so', async () => {
    const server = await minimal();
    const result = await preflight(adapterFor(server), SCHEMA, 5_000, { server_build: 'b4748-test', dialect: 'llamacpp' });
    expect(result.ok ? 'ok' : result.reason).toBe('ok');
    expect(served(server)).toBe(0);
    expect(server.seen.map((r) => r.url)).toEqual(expect.arrayContaining(['/v1/models', '/props', '/tokenize']));
    expect(result.facts?.probe_skipped).toMatch(/^this server \(build b4748-test\) showed the constraint honoured in dialect llamacpp at this run's earlier start/);
    expect(result.facts?.probe_schema_valid).toBeNull();
    expect(result.lines.at(-1)).toMatch(/^probe call skipped: this server \(build b4748-test\)/);
  });

  test('forged: another build, another dialect, or a server that reports no build is probed again; a first start (nothing shown) is probed', async () => {
    for (const shown of [{ server_build: 'b4749-other', dialect: 'llamacpp' as const }, { server_build: 'b4748-test', dialect: 'json_schema' as const }, null]) {
      const server = await minimal();
      const result = await preflight(adapterFor(server), SCHEMA, 5_000, shown);
      expect(result.ok ? 'ok' : result.reason, JSON.stringify(shown)).toBe('ok');
      expect(served(server), JSON.stringify(shown)).toBe(1);
      expect(result.facts?.probe_skipped).toBeNull();
      expect(result.facts?.probe_schema_valid).toBe(true);
    }
    const bare = await startLoopback({ chat: (_s, res) => sse(res, streamChunks(pieces(MINIMAL))), models: modelList(MODEL) });
    const result = await preflight(adapterFor(bare), SCHEMA, 5_000, { server_build: 'b4748-test', dialect: 'llamacpp' });
    expect(result.ok ? 'ok' : result.reason).toBe('ok');
    expect(served(bare)).toBe(1);
    expect(result.facts?.server_build).toBeNull();
  });
});

describe('the constraint check, fed forged answers', () => {
  const schema = specialisedAnswerSchema('ds-model-output/2', [3, 5]);
  const valid = JSON.parse(MINIMAL) as Record<string, unknown>;
  const withClaim = (seqs: number[]) => JSON.stringify({ ...valid, claims: [{ claim_type: 'FACT', statement: 'x', evidence_seqs: seqs }] });

  test('a valid answer passes, checked with the JSON Schema sent and the protocol\'s zod schema', () => {
    const verdict = checkConstrainedAnswer('llamacpp', schema, withClaim([3]));
    expect(verdict).toMatchObject({ honoured: true, schema_valid: true });
    expect(verdict.checked_with).toBe('the JSON Schema sent and the ds-model-output/2 zod schema');
  });

  const forged: [string, string, RegExp][] = [
    ['prose', 'Once upon a time', /not JSON/],
    ['a fenced answer (no constrained decoder writes fences)', `\`\`\`json\n${MINIMAL}\n\`\`\``, /not JSON/],
    ['prose around the JSON', `Sure! ${MINIMAL}`, /not JSON/],
    ['a key the schema does not have', JSON.stringify({ ...valid, extra: 1 }), /does not satisfy the schema/],
    ['the other protocol', JSON.stringify({ ...valid, protocol: 'ds-model-output/1' }), /does not satisfy the schema/],
    ['a seq the wake did not show (outside the enum sent)', withClaim([4]), /does not satisfy the schema/],
    ['a missing required field', JSON.stringify({ ...valid, checkpoint: undefined }), /does not satisfy the schema/],
    ['a string over its maxLength', JSON.stringify({ ...valid, focus: { attention_target: 'x'.repeat(101), waiting_condition: null } }), /does not satisfy the schema/],
  ];
  test.each(forged)('%s is caught under llamacpp and json_schema', (_what, raw, reason) => {
    for (const dialect of ['llamacpp', 'json_schema'] as const) {
      const verdict = checkConstrainedAnswer(dialect, schema, raw);
      expect(verdict.honoured).toBe(false);
      expect(!verdict.honoured && verdict.reason).toMatch(reason);
      expect(!verdict.honoured && verdict.reason).toContain(`dialect ${dialect}`);
    }
  });

  test('json_object: JSON that is not an object is caught; an object off the schema is honoured with schema_valid false', () => {
    expect(checkConstrainedAnswer('json_object', schema, '[1, 2]')).toMatchObject({ honoured: false });
    expect(checkConstrainedAnswer('json_object', schema, '"text"')).toMatchObject({ honoured: false });
    expect(checkConstrainedAnswer('json_object', schema, 'prose')).toMatchObject({ honoured: false });
    expect(checkConstrainedAnswer('json_object', schema, '{"a":1}')).toMatchObject({ honoured: true, schema_valid: false });
  });

  test('dialect none promises nothing, so nothing is ever seen honoured', () => {
    expect(checkConstrainedAnswer('none', schema, MINIMAL)).toMatchObject({ honoured: false, schema_valid: true });
  });

  test('a schema that names no protocol is checked with the JSON Schema alone', () => {
    const tiny = { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'], additionalProperties: false };
    expect(checkConstrainedAnswer('json_schema', tiny, '{"n":2}')).toMatchObject({ honoured: true, checked_with: 'the JSON Schema sent' });
    expect(checkConstrainedAnswer('json_schema', tiny, '{"n":0}')).toMatchObject({ honoured: false });
  });
});
