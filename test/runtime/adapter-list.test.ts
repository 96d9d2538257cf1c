// The one list of model adapters (issue 33 item 4, runtime/model-adapters/adapter-list.ts): one
// entry per variant of the start message, the names the manifest and the recorded calls may hold,
// and each adapter's stated facts held to what it does — the adapter its definition makes, the
// manifest's call timeout (what the controller waits for a stopping runtime), and who counted
// the tokens of real calls: the reference policy, a replay, the openai adapter against a REAL
// HTTP server on loopback, and the local adapter on the REAL tiny model.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import type { z } from 'zod';
import { ModelAdapter as ManifestModelAdapter, ModelInfo } from '../../design/manifest.js';
import { ModelChoice, resolveModel } from '../../design/model-choice.js';
import { ContextBundle } from '../../runtime/context-bundle.js';
import type { ModelAdapter, ModelAdapterName, ModelCallOutcome, ModelConfigs, ModelRequest } from '../../runtime/model-adapter.js';
import { adapterOf, callTimeoutMsOf, MODEL_ADAPTER_NAMES, MODEL_ADAPTERS, modelAdapterFor, recordedAdapterOf } from '../../runtime/model-adapters/adapter-list.js';
import { answerJsonSchema } from '../../runtime/answer-schema.js';
import { MODEL_PROTOCOL_V2 } from '../../runtime/model-protocol.js';
import { renderPrompt } from '../../runtime/prompt.js';
import { RuntimeModelConfig } from '../../runtime/protocol.js';
import { ModelAnswered, ModelCallFailed } from '../../schema/events/model-output-events.js';
import { startLoopback } from './openai-loopback-server.js';
import { startAnthropicLikeServer } from '../support/anthropic-like-server.js';

const MODEL_FILE = fileURLToPath(new URL('../../../shared/models/stories260K.gguf', import.meta.url));
const NO_PARAMS = { temperature: null, top_p: null, seed: null, max_tokens: null };
const RETRY = { max_attempts: 1, backoff_ms: [] };
/** The anthropic adapter reads its key from the environment when it is made; a key of the test's own. */
const ANTHROPIC_KEY_ENV = 'DS_TEST_ADAPTER_LIST_ANTHROPIC_KEY';
process.env[ANTHROPIC_KEY_ENV] = 'sk-ant-test-adapter-list';
/** The gemini sample's key, in the variable its configuration names (the adapter reads it when made). */
process.env['DS_ADAPTER_LIST_GEMINI_KEY'] = 'sample-gemini-key';

/** One start configuration per adapter of the list (a new adapter needs one here: the type demands it). */
const SAMPLES: { readonly [N in ModelAdapterName]: ModelConfigs[N] } = {
  reference: { adapter: 'reference' },
  openai: { adapter: 'openai', base_url: 'http://127.0.0.1:9/v1', model_id: 'served-model', api_key_env: null, params: NO_PARAMS, dialect: 'json_schema', stream: false, context_size: null, timeout_ms: 4_321, retry: RETRY },
  anthropic: { adapter: 'anthropic', base_url: 'http://127.0.0.1:9', model_id: 'claude-test', api_key_env: ANTHROPIC_KEY_ENV, params: NO_PARAMS, dialect: 'anthropic_json', stream: true, context_size: null, timeout_ms: 5_432, count_tokens: false, retry: RETRY },
  gemini: { adapter: 'gemini', base_url: 'http://127.0.0.1:9', model_id: 'gemini-sample', api_key_env: 'DS_ADAPTER_LIST_GEMINI_KEY', params: NO_PARAMS, dialect: 'gemini_json_schema', stream: true, context_size: null, timeout_ms: 5_432, count_tokens: false, retry: RETRY },
  replay: { adapter: 'replay', source_model_id: 'recorded-model', calls: [] },
  local: { adapter: 'local', model_file: MODEL_FILE, model_id: 'stories260K', params: { ...NO_PARAMS, seed: 7 }, threads: 1, context_size: 2_048, timeout_ms: 8_765, kv_reuse: true },
};

const made: ModelAdapter[] = [];
afterAll(async () => {
  for (const a of made) await a.close?.().catch(() => undefined);
});

function sample<N extends ModelAdapterName>(name: N): ModelConfigs[N] {
  return SAMPLES[name];
}

const namesOf = (options: readonly { readonly shape: { readonly adapter: { readonly value: string } } }[]): string[] => options.map((o) => o.shape.adapter.value).sort();

describe('the list: one entry per adapter, and the names the stored formats hold', () => {
  test('its names are the start message\'s variants and the model choice\'s, each once', () => {
    expect([...MODEL_ADAPTER_NAMES].sort()).toEqual(namesOf(RuntimeModelConfig.options));
    expect([...MODEL_ADAPTER_NAMES].sort()).toEqual(namesOf(ModelChoice.options));
    expect(new Set(MODEL_ADAPTER_NAMES).size).toBe(MODEL_ADAPTER_NAMES.length);
    for (const name of MODEL_ADAPTER_NAMES) expect(MODEL_ADAPTERS[name].name).toBe(name);
  });

  test('the manifest\'s names (manifest 1.x) are the list\'s and `none`; the current recorded calls can name every adapter (older versions keep their own)', () => {
    expect([...ManifestModelAdapter.options].sort()).toEqual([...MODEL_ADAPTER_NAMES, 'none'].sort());
    for (const event of [ModelAnswered, ModelCallFailed]) expect(MODEL_ADAPTER_NAMES.filter((n) => !event.payload.shape.adapter.options.includes(n))).toEqual([]);
    // The earlier versions stay as they were written, not widened with the list: three adapters before issue 15, four before issue 36.
    for (const [event, version] of [[ModelAnswered, '1.2.0'], [ModelCallFailed, '1.1.0']] as const) {
      expect((event.earlier[version] as z.ZodObject<{ adapter: z.ZodEnum }>).shape.adapter.options).toEqual(['reference', 'openai', 'replay']);
    }
    for (const [event, version] of [[ModelAnswered, '1.4.0'], [ModelCallFailed, '1.3.0']] as const) {
      expect((event.earlier[version] as z.ZodObject<{ adapter: z.ZodEnum }>).shape.adapter.options).toEqual(['reference', 'openai', 'replay', 'local']);
    }
  });

  test('a name of a record finds its adapter; `none` (no model) and a name of no adapter find none', () => {
    for (const name of MODEL_ADAPTER_NAMES) expect(recordedAdapterOf(name)).toBe(MODEL_ADAPTERS[name]);
    expect(recordedAdapterOf('none')).toBeNull();
    expect(recordedAdapterOf('mistral')).toBeNull();
    expect(recordedAdapterOf('toString')).toBeNull();
  });
});

describe('docs/model-protocol.md: the table of what each adapter states', () => {
  test('one row per adapter of the list, in its order, each cell the adapter\'s fact', () => {
    const page = readFileSync(fileURLToPath(new URL('../../docs/model-protocol.md', import.meta.url)), 'utf8');
    const header = '| adapter | calls a model | usage counted by | prompt counted by | call timeout | checked before hour 0 | served over HTTP | build pinned by its check |';
    const lines = page.split('\n');
    const at = lines.indexOf(header);
    expect(at).toBeGreaterThan(-1);
    const rows: string[] = [];
    for (const line of lines.slice(at + 2)) {
      if (!line.startsWith('| `')) break;
      rows.push(line);
    }
    const yes = (b: boolean): string => (b ? 'yes' : 'no');
    expect(rows).toEqual(MODEL_ADAPTER_NAMES.map((name) => {
      const d = adapterOf(name);
      const timeout = callTimeoutMsOf(sample(name)) === null ? 'none' : '`timeout_ms`';
      return `| \`${name}\` | ${yes(d.callsModel)} | ${d.usageCountedBy.join(', ')} | ${d.promptCountedBy.join(', ')} | ${timeout} | ${yes(d.checkedBeforeStart)} | ${yes(d.answeredByServer)} | ${yes(d.preflightReportsBuild)} |`;
    }));
  });
});

describe('each adapter\'s facts, held to what it does', () => {
  test.each(MODEL_ADAPTER_NAMES)('%s: its definition makes it; checked before hour 0 exactly when it has a preflight and a measurement, and then waited for; served over HTTP or build-pinned only as a model', (name) => {
    const definition = adapterOf(name);
    const config = sample(name);
    const adapter = modelAdapterFor(config);
    made.push(adapter);
    expect(adapter.name).toBe(name);
    expect(definition.checkedBeforeStart).toBe(typeof adapter.preflight === 'function' && typeof adapter.measure === 'function');
    if (definition.checkedBeforeStart) expect(callTimeoutMsOf(config)).not.toBeNull();
    if (definition.answeredByServer || definition.preflightReportsBuild) expect(definition.callsModel).toBe(true);
    // The timeout is the configuration's own, where it has one: never a default chosen by name.
    expect(callTimeoutMsOf(config)).toBe('timeout_ms' in config ? config.timeout_ms : null);
  });

  test('the manifest takes each adapter\'s call timeout as its call_timeout_ms (what the controller waits for a stopping runtime is what the runtime waits for its call), with parameters exactly then', () => {
    for (const name of MODEL_ADAPTER_NAMES) {
      const timeoutMs = callTimeoutMsOf(sample(name));
      const info = { adapter: name, model_id: 'm', build: null, params: timeoutMs === null ? null : NO_PARAMS, call_timeout_ms: timeoutMs };
      expect(ModelInfo.safeParse(info).success, name).toBe(true);
      // Forged: the other way round, the manifest refuses it.
      const flipped = { ...info, params: timeoutMs === null ? NO_PARAMS : null, call_timeout_ms: timeoutMs === null ? 1_000 : null };
      expect(ModelInfo.safeParse(flipped).success, `${name} flipped`).toBe(false);
    }
    // Resolved as a run records it: the manifest's figure is the runtime's.
    const { retry: _retry, ...openai } = SAMPLES.openai;
    const choices: ModelChoice[] = [{ adapter: 'reference' }, { ...openai, config_file: null, config_sha256: null }, { ...SAMPLES.local, config_file: null, config_sha256: null }];
    for (const choice of choices) {
      const resolved = resolveModel(choice, RETRY, 'strip');
      expect(resolved.info.call_timeout_ms, choice.adapter).toBe(callTimeoutMsOf(resolved.runtime));
    }
  });
});

// ---------------------------------------------------------------------------------------
// who counted the tokens: real calls

const BUNDLE: ContextBundle = ContextBundle.parse({
  wake: { wake_id: 'wake-001', wake_at: '2026-07-20T09:00:00.000Z', budget: { model_calls: 1, tokens: 8_000, tool_calls: 4 }, visible_to_seq: 1 },
  state: { source: 'persistent', goal: null, tasks: [], attention_target: null, waiting_condition: null, journal_entries: 0, denied_actions: [] },
  window: { events: [], eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0, statement: 'window 0 of 0 eligible events' },
  workspace: [],
});

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  const prompt = renderPrompt(BUNDLE);
  return { wake_id: 'wake-001', call_number: 1, bundle: BUNDLE, system: prompt.system, user: prompt.user, max_tokens: 64, answer_schema: answerJsonSchema(MODEL_PROTOCOL_V2), ...overrides };
}

function expectCountedAsStated(name: ModelAdapterName, outcome: ModelCallOutcome): void {
  const definition = adapterOf(name);
  expect(outcome.usage_source, `${name}: ${JSON.stringify(outcome).slice(0, 300)}`).not.toBeNull();
  expect(definition.usageCountedBy).toContain(outcome.usage_source);
  expect(definition.promptCountedBy).toContain(outcome.prompt_count_source);
}

describe('who counts the tokens: each adapter\'s calls say what its definition states', () => {
  test('the reference policy: the estimate, both', async () => {
    const outcome = await modelAdapterFor(SAMPLES.reference).call(request(), 1_000);
    expectCountedAsStated('reference', outcome);
  });

  test('a replay: as its source recorded them (a server\'s count served as such)', async () => {
    const recorded = { kind: 'answered' as const, raw_output: '{}', usage: { prompt_tokens: 10, completion_tokens: 2 }, usage_source: 'server' as const, latency_ms: 5, system_fingerprint: null, finish_reason: 'stop', response_model: null, prompt_tokens_counted: 10, prompt_count_source: 'tokenizer' as const, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null };
    const replay = modelAdapterFor({ ...SAMPLES.replay, calls: [{ wake_id: 'wake-001', call_number: 1, outcome: recorded }] });
    expectCountedAsStated('replay', await replay.call(request(), 1_000));
  });

  test('openai on loopback: the server\'s usage and its tokenizer when it has them, else the estimate', async () => {
    const answer = (usage: boolean) => (_seen: unknown, res: import('node:http').ServerResponse): void => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'served-model', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: '{}' } }], ...(usage ? { usage: { prompt_tokens: 30, completion_tokens: 1, total_tokens: 31 } } : {}) }));
    };
    const tokenize = (_seen: unknown, res: import('node:http').ServerResponse): void => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ tokens: [1, 2, 3] }));
    };
    const counted = await startLoopback({ chat: answer(true), tokenize });
    const bare = await startLoopback({ chat: answer(false) });
    try {
      const withCounts = await modelAdapterFor({ ...SAMPLES.openai, base_url: counted.baseUrl }).call(request(), 5_000);
      expect([withCounts.usage_source, withCounts.prompt_count_source]).toEqual(['server', 'tokenizer']);
      expectCountedAsStated('openai', withCounts);
      const estimated = await modelAdapterFor({ ...SAMPLES.openai, base_url: bare.baseUrl }).call(request(), 5_000);
      expect([estimated.usage_source, estimated.prompt_count_source]).toEqual(['estimate', 'estimate']);
      expectCountedAsStated('openai', estimated);
    } finally {
      await counted.close();
      await bare.close();
    }
  });

  test('anthropic on the loopback Messages server: the API\'s usage, the prompt by count_tokens when configured, else the estimate', async () => {
    const server = await startAnthropicLikeServer({ apiKey: process.env[ANTHROPIC_KEY_ENV]!, models: ['claude-test'], schemaSubsetCheck: false });
    try {
      const counted = await modelAdapterFor({ ...SAMPLES.anthropic, base_url: server.baseUrl, count_tokens: true }).call(request(), 5_000);
      expect([counted.usage_source, counted.prompt_count_source]).toEqual(['server', 'server']);
      expectCountedAsStated('anthropic', counted);
      const estimated = await modelAdapterFor({ ...SAMPLES.anthropic, base_url: server.baseUrl }).call(request(), 5_000);
      expect([estimated.usage_source, estimated.prompt_count_source]).toEqual(['server', 'estimate']);
      expectCountedAsStated('anthropic', estimated);
    } finally {
      await server.close();
    }
  });

  test('local on the real tiny model: its own tokenizer, both', async () => {
    const local = modelAdapterFor(SAMPLES.local);
    made.push(local);
    const outcome = await local.call(request({ system: 'Answer with one JSON object.', user: 'Nothing happened.', max_tokens: 32 }), 60_000);
    expectCountedAsStated('local', outcome);
  }, 120_000);
});
