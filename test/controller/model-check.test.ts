// The model's check before hour 0, with the plan in hand (issue 31 items 3 and 5;
// controller/model-check.ts), against real HTTP servers on loopback: the scripted llama.cpp-like
// server (test/support/llamacpp-like-server.ts: /props, /tokenize, timings, one slot) built from
// the default pre-registration's real plan.
//
// - A healthy server: the first and the largest prompt counted by its tokenizer (held to an
//   independent count of the same prompts), its speed from its own timings (the rates it was given),
//   the predicted call and instance times.
// - Every refusal names its cause and gives advice the tool accepts; the table follows each advice
//   (a larger context, another dialect, a longer timeout, the served model id, a running server)
//   and sees the check pass. Forged cases: a 2,048-token context; a server that ignores OpenAI's
//   json_schema form and writes prose to the cap (refused as a constraint ignored, not as a cap to
//   raise — and the facts of the refused probe kept); a server too slow for the timeout; a context
//   that fits the first wake but not the largest (a warning, not a refusal).
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { buildExperimentPlan } from '../../design/experiment-plan.js';
import { resolveModel, type ModelChoice } from '../../design/model-choice.js';
import { PreRegistration, modelCallRulesOf } from '../../design/prereg.js';
import { loadScenario } from '../../design/scenario.js';
import { checkModelBeforeStart, type ModelCheck } from '../../controller/model-check.js';
import { ModelCheckError } from '../../controller/model-check-error.js';
import { promptBoundsOf } from '../../controller/prompt-bounds.js';
import { startLlamaLikeServer, tokensOf, type LlamaLikeOptions, type LlamaLikeServer } from '../support/llamacpp-like-server.js';
import { closedBaseUrl } from '../runtime/openai-loopback-server.js';
import { REPO, SCENARIOS_DIR, TEST_START_AT } from '../support/controller-run.js';
import type { StructuredOutputDialect } from '../../schema/model-call-policy.js';

const prereg = PreRegistration.parse(JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')));
const scenario = loadScenario(path.join(SCENARIOS_DIR, prereg.scenario.id));
const plan = buildExperimentPlan({ prereg, scenario, seed: 'check-1', startAt: TEST_START_AT });
const bounds = promptBoundsOf(plan, scenario, prereg);
const FIRST_TOKENS = tokensOf(bounds.first.system) + tokensOf(bounds.first.user);
const LARGEST_TOKENS = tokensOf(bounds.largest.system) + tokensOf(bounds.largest.user);

const servers: LlamaLikeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function server(options: LlamaLikeOptions = {}): Promise<LlamaLikeServer> {
  const s = await startLlamaLikeServer(options);
  servers.push(s);
  return s;
}

interface Settings {
  readonly baseUrl: string;
  readonly modelId: string;
  readonly dialect: StructuredOutputDialect;
  readonly timeoutMs: number;
}

function check(settings: Settings): Promise<ModelCheck | null> {
  const choice: ModelChoice = { adapter: 'openai', base_url: settings.baseUrl, model_id: settings.modelId, api_key_env: null, params: { temperature: 0, top_p: null, seed: 7, max_tokens: null }, dialect: settings.dialect, stream: true, context_size: null, timeout_ms: settings.timeoutMs, config_file: null, config_sha256: null };
  // Pre-registered strip (issue 36): the json_schema/llamacpp subsets do not hold the answer schema, so a refuse pre-registration would not start.
  const model = resolveModel(choice, modelCallRulesOf(prereg)!.transport_retry, 'strip');
  return checkModelBeforeStart({ plan, scenario, prereg, model: model.runtime, protocol: model.protocol, schemaSubset: model.subsetChoice, log: () => undefined });
}

async function refusal(settings: Settings): Promise<ModelCheckError> {
  const error = await check(settings).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof ModelCheckError)) throw new Error(`expected a ModelCheckError, got ${String(error)}`);
  return error;
}

describe('the check before hour 0, with the plan in hand', () => {
  test('a healthy server: the plan\'s first and largest prompts counted by its tokenizer, its speed from its own timings, the predictions', async () => {
    const s = await server({ nCtx: 65_536, promptTokensPerS: 40_000, generatedTokensPerS: 20_000 });
    const result = (await check({ baseUrl: s.baseUrl, modelId: s.alias, dialect: 'llamacpp', timeoutMs: 30_000 }))!;
    const f = result.forecast;
    // The adapter counts each message with /tokenize: the server's own count of the same texts.
    expect(f.first_wake_prompt_tokens).toBe(FIRST_TOKENS);
    expect(f.largest_prompt_tokens).toBe(LARGEST_TOKENS);
    expect(f.prompt_count_source).toBe('tokenizer');
    expect(f.largest_prompt_tokens).toBeGreaterThan(f.first_wake_prompt_tokens * 2);
    expect(f.largest_window.tokens_estimated).toBeGreaterThan(prereg.retrieval_policy.token_cap);
    expect(f.context_size).toBe(65_536);
    expect(f.late_wakes_fit).toBe(true);
    expect(f.speed.source).toBe('server_timings');
    // The rates the server was given, read back from its timings.
    expect(f.speed.prompt_tokens_per_s).toBeCloseTo(40_000, -1);
    expect(f.speed.generated_tokens_per_s).toBeCloseTo(20_000, -1);
    const expectedLargestMs = Math.round((f.largest_prompt_tokens / 40_000) * 1000 + (f.answer_cap_tokens / 20_000) * 1000);
    expect(Math.abs(f.predicted_largest_call_ms - expectedLargestMs)).toBeLessThanOrEqual(2);
    expect(f.predicted_instance_ms.low).toBeLessThan(f.predicted_instance_ms.high);
    expect(f.predicted_instance_ms.high).toBe(f.wakes * f.predicted_largest_call_ms);
    expect(f.warnings).toEqual([]);
    // Two speed calls, the first wake's size and the largest sendable: each with a nonce first (no
    // prefix cache serves them) and no wake line (they are no wakes).
    const speedCalls = s.chats.filter((c) => c.system.startsWith('speed check '));
    expect(speedCalls.map((c) => c.system.slice(0, 20))).toEqual([expect.stringMatching(/^speed check typical-/), expect.stringMatching(/^speed check largest-/)]);
    for (const c of speedCalls) expect(c.user).not.toMatch(/^WAKE /m);
    expect(tokensOf(speedCalls[0]!.system) + tokensOf(speedCalls[0]!.user)).toBeLessThanOrEqual(FIRST_TOKENS + 40);
    expect(f.largest_prompt_timed?.prompt_tokens).toBeGreaterThan(FIRST_TOKENS * 2);
    expect(s.maxQueued()).toBe(1);
  });

  test('a context that holds the first wake but not the largest window: a warning, said and kept in the forecast', async () => {
    const s = await server({ nCtx: FIRST_TOKENS + 4_096 + 500 });
    const result = (await check({ baseUrl: s.baseUrl, modelId: s.alias, dialect: 'llamacpp', timeoutMs: 30_000 }))!;
    expect(result.forecast.late_wakes_fit).toBe(false);
    expect(result.forecast.warnings).toEqual([expect.stringMatching(new RegExp(`^late wakes may not fit: the largest prompt the plan allows .* is ${LARGEST_TOKENS} tokens`))]);
    expect(result.lines.some((l) => l.startsWith('warning: late wakes may not fit'))).toBe(true);
  });

  test('a server that ignores the constraint is refused for that, not for its cap; the refused probe\'s facts are kept', async () => {
    const s = await server({ ignoresOpenAiJsonSchema: true });
    const error = await refusal({ baseUrl: s.baseUrl, modelId: s.alias, dialect: 'json_schema', timeoutMs: 30_000 });
    expect(error.errorCode).toBe('model_check_refused');
    expect(error.message).toMatch(/the server ignored the constraint \(dialect json_schema\): the answer is not JSON/);
    expect(error.message).toMatch(/try dialect llamacpp .*--structured-output llamacpp/);
    expect(error.message).not.toMatch(/raise (params\.)?max_tokens/);
    expect(error.facts['probe_finish_reason']).toBe('length');
    expect(String(error.facts['probe_raw_output'])).toMatch(/^Once upon a time/);
    expect(JSON.parse(String(error.facts['probe_timings']))).toMatchObject({ prompt_n: expect.any(Number), predicted_n: expect.any(Number) });
  });
});

describe('every refusal\'s advice is one the tool accepts: following it, the check passes', () => {
  interface Row {
    readonly name: string;
    /** The server and settings that are refused. */
    readonly refused: () => Promise<{ settings: Settings; options: LlamaLikeOptions }>;
    readonly code: string;
    readonly message: RegExp;
    /** The advice applied: the server and settings it names. */
    readonly follow: (advice: RegExpMatchArray, refused: { settings: Settings; options: LlamaLikeOptions }) => Promise<Settings>;
  }
  const rows: Row[] = [
    {
      name: 'a 2,048-token context: refused naming the first wake\'s prompt size; a server with the context it names',
      refused: async () => {
        const s = await server({ nCtx: 2_048 });
        return { settings: { baseUrl: s.baseUrl, modelId: s.alias, dialect: 'llamacpp', timeoutMs: 30_000 }, options: { nCtx: 2_048 } };
      },
      code: 'model_check_forecast',
      message: new RegExp(`the first wake's prompt is ${FIRST_TOKENS} tokens \\(counted by the tokenizer\\);.*over the model's context of 2048.*a context of at least (\\d+) tokens \\(llama-server -c`),
      follow: async (advice, r) => {
        const s = await server({ ...r.options, nCtx: Number(advice[1]) });
        return { ...r.settings, baseUrl: s.baseUrl };
      },
    },
    {
      name: 'prose instead of JSON under OpenAI\'s form: the dialect it names',
      refused: async () => {
        const s = await server({ ignoresOpenAiJsonSchema: true });
        return { settings: { baseUrl: s.baseUrl, modelId: s.alias, dialect: 'json_schema', timeoutMs: 30_000 }, options: { ignoresOpenAiJsonSchema: true } };
      },
      code: 'model_check_refused',
      message: /--structured-output (\w+)/,
      follow: async (advice, r) => ({ ...r.settings, dialect: advice[1] as StructuredOutputDialect }),
    },
    {
      name: 'a server too slow for the timeout: the timeout it names',
      refused: async () => {
        const options = { promptTokensPerS: 12_000, generatedTokensPerS: 20_000 };
        const s = await server(options);
        return { settings: { baseUrl: s.baseUrl, modelId: s.alias, dialect: 'llamacpp', timeoutMs: 1_000 }, options };
      },
      code: 'model_check_forecast',
      message: /(?:predicted to take [\d.]+ s at the measured speed, over|not even evaluated within) the call timeout of 1\.0 s.*Raise --model-timeout-ms to at least (\d+)/,
      follow: async (advice, r) => ({ ...r.settings, timeoutMs: Number(advice[1]) }),
    },
    {
      name: 'another model id than the server serves: the id it names',
      refused: async () => {
        const s = await server({ alias: 'stories260K' });
        return { settings: { baseUrl: s.baseUrl, modelId: 'stories15M', dialect: 'llamacpp', timeoutMs: 30_000 }, options: {} };
      },
      code: 'model_check_refused',
      message: /set the model id to "([^"]+)"/,
      follow: async (advice, r) => ({ ...r.settings, modelId: advice[1]! }),
    },
    {
      name: 'no server: started, at the base URL given',
      refused: async () => ({ settings: { baseUrl: await closedBaseUrl(), modelId: 'stories260K', dialect: 'llamacpp', timeoutMs: 30_000 }, options: {} }),
      code: 'model_check_refused',
      message: /the model server does not answer.*(Start the server), or check the base URL/,
      follow: async (_advice, r) => {
        const s = await server();
        return { ...r.settings, baseUrl: s.baseUrl };
      },
    },
  ];

  test.each(rows.map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const refused = await row.refused();
    const error = await refusal(refused.settings);
    expect(error.errorCode).toBe(row.code);
    expect(error.message).toMatch(/Nothing was written/);
    const advice = row.message.exec(error.message);
    expect(advice, error.message).not.toBeNull();
    const followed = await row.follow(advice!, refused);
    const passed = await check(followed);
    expect(passed?.forecast.forecast_version).toBe('1.0.0');
  });
});
