// One request of an adapter at a time (issue 31 item 8), and no tokens for a call no server
// evaluated (item 7), against REAL HTTP servers on loopback that record, per request, when it
// arrived and when its connection closed.
//
// - Across calls that include a timeout (mid-stream: the server still "decoding"), a transport
//   retry (HTTP 503, then an answer) and every tokenizer request (/tokenize answers slowly, so
//   two of them sent at once would overlap), the server never holds two requests of one adapter:
//   each request's connection is closed before the next one arrives. The same holds through the
//   model check before hour 0 (controller/model-check.ts: its preflight, the tokenizing of the
//   plan's first and largest prompts and its speed calls — answered, or timed out) against the
//   scripted llama.cpp-like server, and through a whole real instance (its runtime process) against
//   it. The server counts, as it happens, how many requests and how
//   many connections it holds at once (test/support/request-overlap.ts): never more than one.
// - Forged: the same observation catches two raw requests made at once without the gate, and two
//   adapters (each one at a time) called at once; the gate's own invariants (its bound on
//   waiters, one exchange open) throw a typed InternalError when broken.
// - A request that never reached the server whole (the server accepts the connection but reads
//   nothing, and the request is larger than the connection's buffers) is no answer — retried,
//   ending `transport` with usage null and the reason in its detail — not a `timeout` with an
//   estimate.
import { EMPTY_ANSWER } from '../../faults/scripted-model-server.js';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { checkModelBeforeStart } from '../../controller/model-check.js';
import { ModelCheckError } from '../../controller/model-check-error.js';
import { buildExperimentPlan } from '../../design/experiment-plan.js';
import { resolveModel, type ModelChoice } from '../../design/model-choice.js';
import { PreRegistration, modelCallRulesOf } from '../../design/prereg.js';
import { loadScenario } from '../../design/scenario.js';
import { InternalError } from '../../foundation/typed-error.js';
import { specialisedAnswerSchema } from '../../runtime/answer-schema.js';
import { NO_TOKENS_RECORDED, type ModelRequest, type TransportFailure } from '../../runtime/model-adapter.js';
import { ExchangeGate, HTTP_EXCHANGE_LIMITS, HttpExchangeInvariantError } from '../../runtime/model-adapters/http-exchange.js';
import { controllerSetupWith, newInstanceOptions, REPO, runInstance, SCENARIOS_DIR, TEST_START_AT } from '../support/controller-run.js';
import { startLlamaLikeServer, type LlamaLikeOptions, type LlamaLikeServer } from '../support/llamacpp-like-server.js';
import { OpenAiAdapter } from '../../runtime/model-adapters/openai-adapter.js';
import { closeAllLoopbacks, json, llamaProps, llamaTokenize, MODEL, modelList, sse, sseEvent, startLoopback, startSse, streamChunks, type Seen } from './openai-loopback-server.js';

const CHAT = '/v1/chat/completions';
const SCHEMA = specialisedAnswerSchema('ds-model-output/2', [1]);
const ANSWER = JSON.stringify(EMPTY_ANSWER);
const RETRY = { max_attempts: 3, backoff_ms: [30, 60] };
const TIMEOUT_MS = 400;

function request(user: string, onTransportFailure?: (f: TransportFailure) => Promise<void>): ModelRequest {
  // The bundle is not read by this adapter (it sends system and user as they are).
  return { wake_id: 'wake-0001', call_number: 1, bundle: undefined as never, system: 'You are a subject in a study.', user, max_tokens: 300, answer_schema: SCHEMA, ...(onTransportFailure ? { onTransportFailure } : {}) };
}

function adapterFor(baseUrl: string): OpenAiAdapter {
  return new OpenAiAdapter({ baseUrl, modelId: MODEL, apiKey: null, params: { temperature: 0, top_p: null, seed: 1, max_tokens: 300 }, dialect: 'llamacpp', retry: RETRY, contextSize: null });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `holds`, at most `boundMs` (then the assertion after it fails, saying what). */
async function until(holds: () => boolean, boundMs: number): Promise<void> {
  const end = performance.now() + boundMs;
  while (!holds() && performance.now() < end) await sleep(10);
}

/**
 * When the server was done with a request: its response ended (finished), or — for one the client
 * gave up on — its connection closed, which is when a server learns the client left.
 */
function endOf(s: Seen): number | null {
  return s.finished ? s.closedAt : s.socketClosedAt;
}

/**
 * Pairs of requests the server held at once: request b arrived before request a ended (a arrived
 * first). Empty: one at a time.
 */
function overlaps(seen: readonly Seen[]): string[] {
  const byArrival = [...seen].sort((a, b) => a.arrivedAt - b.arrivedAt);
  const out: string[] = [];
  for (let i = 0; i + 1 < byArrival.length; i += 1) {
    const a = byArrival[i]!;
    const b = byArrival[i + 1]!;
    const end = endOf(a);
    if (end === null || end > b.arrivedAt) out.push(`${a.method} ${a.url} (arrived ${a.arrivedAt.toFixed(1)}, ended ${end?.toFixed(1) ?? 'never'}) still open when ${b.method} ${b.url} arrived at ${b.arrivedAt.toFixed(1)}`);
  }
  return out;
}

afterEach(closeAllLoopbacks);

describe('one request of an adapter at a time', () => {
  test('calls with a mid-stream timeout, a retried 503 and every tokenizer request: the server never holds two of them; each connection closed before the next request arrives', async () => {
    let chats = 0;
    const server = await startLoopback({
      props: llamaProps(8_192),
      models: modelList(MODEL),
      // Slow enough that two counts sent at once would be open together on the server.
      tokenize: async (seen, res, req) => {
        await sleep(40);
        llamaTokenize(seen, res, req);
      },
      chat: (_seen, res) => {
        chats += 1;
        // 1: starts streaming, then stalls past the timeout (the server still "decoding").
        if (chats === 1) {
          startSse(res);
          sseEvent(res, streamChunks(['{"protocol":'])[1]!);
          return;
        }
        // 2: no answer now (retried), 3: the retry's answer; 4: the next call's answer.
        if (chats === 2) return json(res, 503, { error: { code: 503, message: 'Loading model' } });
        sse(res, streamChunks([ANSWER], { usage: { prompt_tokens: 50, completion_tokens: 30 } }));
      },
    });
    const adapter = adapterFor(server.baseUrl);
    const timedOut = await adapter.call(request('first wake: the user message counted by the tokenizer'), TIMEOUT_MS);
    expect(timedOut).toMatchObject({ kind: 'failed', failure: 'timeout', raw_output: '{"protocol":', prompt_count_source: 'tokenizer', usage_source: 'estimate' });
    const failures: TransportFailure[] = [];
    const retried = await adapter.call(request('second wake: asked again after a 503', async (f) => void failures.push(f)), 5_000);
    expect(retried).toMatchObject({ kind: 'answered', attempts: 2, prompt_count_source: 'tokenizer' });
    expect(failures.map((f) => f.kind)).toEqual(['http_503']);
    expect(await adapter.call(request('third wake'), 5_000)).toMatchObject({ kind: 'answered', attempts: 1 });

    // What the server saw: the side requests (props once, tokenize per message), four chat requests.
    expect(server.to(CHAT)).toHaveLength(4);
    expect(server.to('/tokenize').length).toBeGreaterThanOrEqual(6);
    expect(server.to('/props')).toHaveLength(1);
    // The timed-out request was closed by the client (the server had not finished it).
    expect(server.to(CHAT)[0]!.finished).toBe(false);
    expect(server.seen.every((s) => s.socketClosedAt !== null)).toBe(true);
    expect(overlaps(server.seen)).toEqual([]);
    // Counted by the server as it happened: one request, one connection at a time, never two.
    expect(server.overlap.requests).toHaveLength(server.seen.length);
    expect(server.overlap.maxRequestsOpen()).toBe(1);
    expect(server.overlap.maxConnectionsOpen()).toBe(1);
    expect(server.overlap.connectionOverlaps()).toEqual([]);
    // Stricter than the rule: each request had a connection of its own, closed before the next arrived.
    const byArrival = [...server.seen].sort((a, b) => a.arrivedAt - b.arrivedAt);
    for (let i = 0; i + 1 < byArrival.length; i += 1) expect(byArrival[i]!.socketClosedAt!, `${i}: ${byArrival[i]!.url}`).toBeLessThanOrEqual(byArrival[i + 1]!.arrivedAt);
  });

  test('forged: two adapters called at once do overlap on the server, and the checker says so', async () => {
    const server = await startLoopback({
      props: llamaProps(8_192),
      models: modelList(MODEL),
      tokenize: async (seen, res, req) => {
        await sleep(40);
        llamaTokenize(seen, res, req);
      },
      chat: async (_seen, res) => {
        await sleep(40);
        sse(res, streamChunks([ANSWER]));
      },
    });
    await Promise.all([adapterFor(server.baseUrl).call(request('one'), 5_000), adapterFor(server.baseUrl).call(request('two'), 5_000)]);
    expect(overlaps(server.seen).length).toBeGreaterThan(0);
    expect(server.overlap.maxRequestsOpen()).toBe(2);
    expect(server.overlap.maxConnectionsOpen()).toBe(2);
  });

  test('forged: two raw requests made at once, without the gate, are caught by the same observation (two requests and two connections held at once)', async () => {
    const server = await startLoopback({ models: async (seen, res, req) => {
      await sleep(60);
      modelList(MODEL)(seen, res, req);
    } });
    const raw = (): Promise<number> => new Promise((resolve, reject) => {
      const r = httpRequest(`${server.baseUrl}/models`, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      r.on('error', reject);
      r.end();
    });
    expect(await Promise.all([raw(), raw()])).toEqual([200, 200]);
    expect(server.overlap.maxRequestsOpen()).toBe(2);
    expect(server.overlap.maxConnectionsOpen()).toBe(2);
    expect(server.overlap.connectionOverlaps()).toHaveLength(1);
    expect(overlaps(server.seen)).toHaveLength(1);
  });

  test('forged: the gate\'s own invariants — more waiters than its bound, or an exchange still open when the next starts — throw a typed InternalError', async () => {
    const server = await slowModelsServer(100);
    const gate = new ExchangeGate();
    const get = gatedModelsGet(gate, server.baseUrl, 5_000);
    // One runs, maxWaiting wait; one more is a bug (an adapter makes one request at a time).
    const running = get();
    await sleep(20);
    const admitted = [running, ...Array.from({ length: HTTP_EXCHANGE_LIMITS.maxWaiting }, get)];
    const over = get();
    await expect(over).rejects.toBeInstanceOf(HttpExchangeInvariantError);
    await expect(over).rejects.toBeInstanceOf(InternalError);
    await expect(over).rejects.toThrow(/already wait for one adapter's connection/);
    expect(await Promise.all(admitted)).toEqual(admitted.map(() => 200));
    expect(server.overlap.maxConnectionsOpen()).toBe(1);

    // Forged: the count of open exchanges says one is still open (as if an exchange had not been closed).
    (gate as unknown as { open: number }).open = 1;
    await expect(get()).rejects.toThrow(HttpExchangeInvariantError);
    await expect(get()).rejects.toThrow(/still open when the next starts/);
  });

  test('the gate itself: two exchanges started at once run one after the other, the first one\'s connection closed before the second arrives', async () => {
    const server = await slowModelsServer(60);
    const gate = new ExchangeGate();
    const get = gatedModelsGet(gate, server.baseUrl, 2_000);
    expect(await Promise.all([get(), get(), get()])).toEqual([200, 200, 200]);
    expect(gate.started).toBe(3);
    expect(server.seen).toHaveLength(3);
    expect(overlaps(server.seen)).toEqual([]);
  });
});

const prereg = PreRegistration.parse(JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')));
const scenario = loadScenario(path.join(SCENARIOS_DIR, prereg.scenario.id));
const plan = buildExperimentPlan({ prereg, scenario, seed: 'one-request-1', startAt: TEST_START_AT });

describe('the model check before hour 0 keeps one request at a time too', () => {
  const servers: LlamaLikeServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function checkAgainst(options: LlamaLikeOptions, timeoutMs: number): Promise<{ server: LlamaLikeServer; error: unknown }> {
    const server = await startLlamaLikeServer(options);
    servers.push(server);
    const choice: ModelChoice = { adapter: 'openai', base_url: server.baseUrl, model_id: server.alias, api_key_env: null, params: { temperature: 0, top_p: null, seed: 7, max_tokens: null }, dialect: 'llamacpp', stream: true, context_size: null, timeout_ms: timeoutMs, config_file: null, config_sha256: null };
    // Pre-registered strip (issue 36): the json_schema/llamacpp subsets do not hold the answer schema, so a refuse pre-registration would not start.
    const model = resolveModel(choice, modelCallRulesOf(prereg)!.transport_retry, 'strip');
    try {
      await checkModelBeforeStart({ plan, scenario, prereg, model: model.runtime, protocol: model.protocol, schemaSubset: model.subsetChoice, log: () => undefined });
      return { server, error: null };
    } catch (error) {
      return { server, error };
    }
  }

  test.each([
    { name: 'a healthy server: preflight, the plan\'s prompts tokenized, its speed calls answered', options: { nCtx: 65_536, promptTokensPerS: 40_000, generatedTokensPerS: 20_000 }, timeoutMs: 30_000, passes: true },
    { name: 'a server too slow for the timeout: a speed call times out (its connection closed, the slot freed)', options: { promptTokensPerS: 9_000, generatedTokensPerS: 20_000 }, timeoutMs: 1_000, passes: false },
  ])('$name: the server never holds two of its requests', async ({ options, timeoutMs, passes }) => {
    const { server, error } = await checkAgainst(options, timeoutMs);
    if (passes) expect(error).toBeNull();
    else expect(error).toBeInstanceOf(ModelCheckError);
    const routes = new Set(server.overlap.requests.map((r) => `${r.method} ${r.url}`));
    // Every kind of request the check makes was made, several tokenizer counts among them.
    expect([...routes].sort()).toEqual(['GET /props', 'GET /v1/models', 'POST /tokenize', 'POST /v1/chat/completions']);
    expect(server.overlap.requests.filter((r) => r.url === '/tokenize').length).toBeGreaterThanOrEqual(4);
    expect(server.chats.length).toBeGreaterThanOrEqual(2);
    if (!passes) {
      // The check gave up on its largest speed call; the server learns it at its next tick and frees the slot (as b4748 does a request it is decoding).
      expect(String(error)).toContain('no complete answer from POST');
      await until(() => server.chats.some((c) => c.freed), 2_000);
      expect(server.chats.filter((c) => c.clientLeft && c.freed)).toHaveLength(1);
    }
    expectOneRequestAtATime(server);
  }, 60_000);
});

/** A loopback server that answers GET /models after `delayMs`. */
function slowModelsServer(delayMs: number): ReturnType<typeof startLoopback> {
  return startLoopback({ models: async (seen, res, req) => {
    await sleep(delayMs);
    modelList(MODEL)(seen, res, req);
  } });
}

/** GET /models through `gate`: its status (the body is not read). */
function gatedModelsGet(gate: ExchangeGate, baseUrl: string, timeoutMs: number): () => Promise<number> {
  return () => gate.run({ method: 'GET', url: `${baseUrl}/models`, headers: {}, timeoutMs, connectTimeoutMs: timeoutMs }, async (exchange) => {
    const opened = await exchange.opened;
    if (opened.kind !== 'response') throw new Error(`no response: ${opened.kind}`);
    await opened.response.body?.cancel();
    return opened.response.status;
  });
}

/** What the llama.cpp-like server counted as it happened: one request and one connection at a time, never one queued behind another. */
function expectOneRequestAtATime(server: LlamaLikeServer): void {
  expect(server.overlap.maxRequestsOpen()).toBe(1);
  expect(server.overlap.maxConnectionsOpen()).toBe(1);
  expect(server.overlap.connectionOverlaps()).toEqual([]);
  expect(server.maxQueued()).toBe(1);
}

describe('a real instance keeps one request at a time', () => {
  let server: LlamaLikeServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  test('a whole instance (its runtime process: the check before hour 0, then every wake\'s counts and call) against the llama.cpp-like server: never two of its requests held at once', async () => {
    server = await startLlamaLikeServer({});
    // A 4-hour wake period: 16 wakes over the 72 hours, every one a real call through the runtime process.
    // schema_subset strip: llama.cpp's converter skips number bounds, so the llamacpp subset does not hold the answer schema (issue 36).
    const setup = controllerSetupWith('prereg-4h', (prereg) => {
      prereg['wake_schedule']!['base_period_sim_minutes'] = 240;
      prereg['model_calls']!['schema_subset'] = 'strip';
    });
    const model: ModelChoice = { adapter: 'openai', base_url: server.baseUrl, model_id: server.alias, api_key_env: null, params: { temperature: 0, top_p: null, seed: 7, max_tokens: null }, dialect: 'llamacpp', stream: true, context_size: null, timeout_ms: 30_000, config_file: null, config_sha256: null };
    const result = await runInstance(newInstanceOptions(setup, { name: 'one-request', model }));
    expect(result.status).toBe('finished');
    expect(result.wakesRun).toBe(result.wakesTotal);
    // Every wake's call reached the server (and the check's speed calls), each after its prompt was counted.
    expect(server.chats.length).toBeGreaterThanOrEqual(result.wakesTotal);
    expect(server.overlap.requests.filter((r) => r.url === '/tokenize').length).toBeGreaterThanOrEqual(2 * result.wakesTotal);
    expectOneRequestAtATime(server);
  }, 240_000);
});

describe('a call no server evaluated records no tokens (issue 31 item 7)', () => {
  let raw: Server | null = null;

  afterEach(async () => {
    const s = raw;
    raw = null;
    if (s) await new Promise<void>((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });
  });

  test('the server takes the connection but reads nothing of the chat request: not delivered, so no answer — retried, `transport`, usage null, the reason in the detail (never a timeout with an estimate)', async () => {
    let chats = 0;
    raw = createServer((req, res) => {
      if ((req.url ?? '').startsWith(CHAT)) {
        // Never read: the connection's buffers fill and the rest of the request is never sent.
        chats += 1;
        req.pause();
        return;
      }
      req.resume();
      json(res, 404, { error: 'not found' });
    });
    await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
    const failures: TransportFailure[] = [];
    // Larger than what the loopback connection buffers (client send + server receive buffers, a few MiB each).
    const outcome = await adapterFor(baseUrl).call(request('x'.repeat(40 * 1024 * 1024), async (f) => void failures.push(f)), TIMEOUT_MS);
    expect(outcome).toMatchObject({ kind: 'failed', failure: 'transport', usage: null, usage_source: null, raw_output: null, attempts: RETRY.max_attempts });
    expect(failures.map((f) => f.kind)).toEqual(['send_timeout', 'send_timeout', 'send_timeout']);
    expect(chats).toBe(RETRY.max_attempts);
    const detail = outcome.kind === 'failed' ? outcome.detail : '';
    expect(detail).toContain('never reached a server that could evaluate it');
    expect(detail).toContain(`${NO_TOKENS_RECORDED}: no attempt brought an answer`);
  }, 30_000);

  test('a prompt refused before sending (over the context) and a refused connection: usage null, the reason in the detail; a delivered request that timed out keeps its estimate, said to be one', async () => {
    const tight = await startLoopback({ props: llamaProps(50), tokenize: llamaTokenize, models: modelList(MODEL), chat: (_s, res) => sse(res, streamChunks([ANSWER])) });
    const notSent = await adapterFor(tight.baseUrl).call(request('a prompt too long for a context of fifty tokens, with its answer cap of three hundred'), 2_000);
    expect(notSent).toMatchObject({ kind: 'failed', failure: 'truncated_prompt', usage: null, usage_source: null });
    expect(notSent.kind === 'failed' && notSent.detail).toContain(`${NO_TOKENS_RECORDED}: the prompt was refused before it was sent`);
    expect(tight.to(CHAT)).toHaveLength(0);

    const gone = await startLoopback({});
    const goneUrl = gone.baseUrl;
    await gone.close();
    const refused = await adapterFor(goneUrl).call(request('nobody listens'), 2_000);
    expect(refused).toMatchObject({ kind: 'failed', failure: 'transport', usage: null });
    expect(refused.kind === 'failed' && refused.detail).toContain('ECONNREFUSED');
    expect(refused.kind === 'failed' && refused.detail).toContain(NO_TOKENS_RECORDED);

    const hung = await startLoopback({ props: llamaProps(8_192), tokenize: llamaTokenize, models: modelList(MODEL), chat: () => undefined });
    const late = await adapterFor(hung.baseUrl).call(request('queued behind others'), TIMEOUT_MS);
    expect(late).toMatchObject({ kind: 'failed', failure: 'timeout', usage_source: 'estimate', prompt_count_source: 'tokenizer' });
    expect(late.kind === 'failed' && late.usage?.prompt_tokens).toBe(late.prompt_tokens_counted);
    expect(late.kind === 'failed' && late.detail).toContain('may have queued or evaluated it');
    expect(late.kind === 'failed' && late.detail).not.toContain(NO_TOKENS_RECORDED);
  });
});
