// What a server's cache served, as a call records it (issue 34 item 1): read from llama.cpp's
// timings (with cache_n, and b4748's without it), from OpenAI-style cached_tokens, never guessed
// (each inconsistent report is forged and gives null); and end to end, an openai-adapter call to a
// llama.cpp-like server on loopback that keeps its last prompt records what it reused.
import { afterEach, describe, expect, test } from 'vitest';
import { OpenAiAdapter } from '../../runtime/model-adapters/openai-adapter.js';
import { cachedTokensOf, promptReuseOf } from '../../runtime/model-adapters/prompt-reuse.js';
import { answerJsonSchema } from '../../runtime/answer-schema.js';
import { MODEL_PROTOCOL_V2 } from '../../runtime/model-protocol.js';
import { startLlamaLikeServer, TEMPLATE_TOKENS, TOKEN_CHARS, type LlamaLikeServer } from '../support/llamacpp-like-server.js';

const timings = (extra: Record<string, number> = {}) => ({ prompt_n: 300, prompt_ms: 1_000, predicted_n: 20, predicted_ms: 200, ...extra });

describe('promptReuseOf', () => {
  test('llama.cpp with cache_n: its own split', () => {
    expect(promptReuseOf({ prompt_tokens: 1_000 }, timings({ cache_n: 700 }))).toEqual({ reused_tokens: 700, evaluated_tokens: 300, source: 'server_timings' });
  });

  test('llama.cpp b4748 (no cache_n): the prompt count less what it evaluated', () => {
    expect(promptReuseOf({ prompt_tokens: 1_000, completion_tokens: 20 }, timings())).toEqual({ reused_tokens: 700, evaluated_tokens: 300, source: 'server_timings' });
  });

  test('OpenAI / vLLM: usage.prompt_tokens_details.cached_tokens', () => {
    expect(promptReuseOf({ prompt_tokens: 2_048, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 1_920 } }, undefined)).toEqual({ reused_tokens: 1_920, evaluated_tokens: 128, source: 'server_usage' });
  });

  test('forged or missing reports give null, never a guess', () => {
    expect(promptReuseOf(undefined, undefined)).toBeNull();
    expect(promptReuseOf({ prompt_tokens: 100, completion_tokens: 1 }, undefined)).toBeNull();
    // More cached than the prompt, a negative or fractional count, timings that evaluated more than the prompt.
    expect(promptReuseOf({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 101 } }, undefined)).toBeNull();
    expect(promptReuseOf({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: -1 } }, undefined)).toBeNull();
    expect(promptReuseOf({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 1.5 } }, undefined)).toBeNull();
    expect(promptReuseOf({ prompt_tokens: 100 }, timings())).toBeNull();
  });
});

describe('cachedTokensOf: what a provider bills at its cache-read price (issue 36)', () => {
  test('OpenAI / vLLM usage.prompt_tokens_details.cached_tokens; none, or a forged count, gives null', () => {
    expect(cachedTokensOf({ prompt_tokens: 2_048, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 1_920 } })).toBe(1_920);
    expect(cachedTokensOf({ prompt_tokens: 2_048, completion_tokens: 9 })).toBeNull();
    expect(cachedTokensOf({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 101 } })).toBeNull();
    expect(cachedTokensOf({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: -1 } })).toBeNull();
    expect(cachedTokensOf(undefined)).toBeNull();
  });
});

describe('an openai-adapter call records what a llama.cpp-like server reused', () => {
  let server: LlamaLikeServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  test('the second of two prompts sharing their start: the shared part is reused, only the rest evaluated', async () => {
    server = await startLlamaLikeServer({ prefixCache: true, promptTokensPerS: 100_000, generatedTokensPerS: 100_000 });
    const adapter = new OpenAiAdapter({ baseUrl: server.baseUrl, modelId: server.alias, apiKey: null, params: { temperature: 0, top_p: null, seed: 1, max_tokens: 256 }, dialect: 'json_object', retry: { max_attempts: 1, backoff_ms: [] }, contextSize: null });
    const system = 'S'.repeat(3_000);
    const call = (user: string) => adapter.call({ wake_id: 'wake-001', call_number: 1, bundle: {} as never, system, user, max_tokens: 256, answer_schema: answerJsonSchema(MODEL_PROTOCOL_V2) }, 10_000);
    const first = await call('events 1-10; WAKE 1');
    const second = await call('events 1-10; then 11-12; WAKE 2');
    for (const o of [first, second]) expect(o.kind, JSON.stringify(o)).toBe('answered');
    if (first.kind !== 'answered' || second.kind !== 'answered') return;
    expect(first.prompt_reuse).toEqual({ reused_tokens: 0, evaluated_tokens: first.usage.prompt_tokens, source: 'server_timings' });
    const shared = Math.floor((system.length + 1 + 'events 1-10; '.length) / TOKEN_CHARS);
    expect(second.prompt_reuse).toEqual({ reused_tokens: shared, evaluated_tokens: second.usage.prompt_tokens - shared, source: 'server_timings' });
    expect(second.usage.prompt_tokens).toBeGreaterThan(shared + TEMPLATE_TOKENS - 1);
  });
});
