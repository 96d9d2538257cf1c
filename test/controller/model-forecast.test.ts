// The forecast's judgement (design/model-forecast.ts), on measurements built here: every refusal's
// advice is one the tool accepts — a timeout within the flag's bounds, an answer cap the judgement
// then passes — and following it passes the same measurement. The real servers' side of the check
// (a loopback llama.cpp-like server, a real llama-server by hand) is test/controller/model-check.test.ts
// and the notes; this file holds the arithmetic and its bounds.
import { describe, expect, it } from 'vitest';
import { judgeForecast, MIN_ADVISED_ANSWER_TOKENS, TIMEOUT_MARGIN, type ForecastInput } from '../../design/model-forecast.js';
import type { MeasuredSpeed, ModelMeasurement } from '../../runtime/model-adapter.js';
import { MAX_MODEL_TIMEOUT_MS, ModelTimeoutMs } from '../../runtime/protocol.js';

const CONTEXT = 16_384;
const FIRST = 5_387;
const LARGEST = 24_917;

/** A measurement at `promptPerS` and `generatedPerS`, timed by the server, with the largest sendable prompt timed at `largestPerS`. */
function measured(promptPerS: number, generatedPerS: number, largestPerS: number, cap: number): ModelMeasurement {
  const speed = (tokens: number, perS: number, generated: number): MeasuredSpeed => ({ prompt_tokens: tokens, prompt_ms: (tokens / perS) * 1000, generated_tokens: generated, generated_ms: (generated / generatedPerS) * 1000, source: 'server_timings', latency_ms: Math.round((tokens / perS + generated / generatedPerS) * 1000) });
  const largestSent = CONTEXT - cap - 256;
  return {
    context: { size: CONTEXT, source: 'GET /props' },
    counts: [
      { label: 'first', tokens: FIRST, source: 'server' },
      { label: 'largest', tokens: LARGEST, source: 'server' },
    ],
    speeds: [
      { label: 'typical', prompt_tokens: FIRST, speed: speed(FIRST, promptPerS, 64), failure: null, timed_out: false },
      { label: 'largest', prompt_tokens: largestSent, speed: speed(largestSent, largestPerS, 64), failure: null, timed_out: false },
    ],
    lines: [],
  };
}

function input(m: ModelMeasurement, callTimeoutMs: number, cap = 4_096): ForecastInput {
  return { measurement: m, firstCap: cap, largestCap: cap, largestWindow: { events: 18, tokensEstimated: 8_075 }, callTimeoutMs, wakes: 31 };
}

/** The advice's flags as numbers: `--model-timeout-ms N`, `--max-tokens N` or "at least N". */
function advisedOf(reason: string): { timeoutMs: number | null; maxTokens: number | null } {
  const timeout = /--model-timeout-ms (?:to at least )?(\d+)/.exec(reason);
  const tokens = /--max-tokens (\d+)/.exec(reason);
  return { timeoutMs: timeout ? Number(timeout[1]) : null, maxTokens: tokens ? Number(tokens[1]) : null };
}

describe('the forecast refuses a call that cannot fit its timeout, with advice the tool accepts', () => {
  it('a CPU server as measured here (~290 prompt tokens/s, ~160 generated, ~100 on the largest): refused at 60 s; the advised timeout is within the flag and passes', () => {
    const m = measured(290, 160, 100, 4_096);
    const refused = judgeForecast(input(m, 60_000));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    const advice = advisedOf(refused.reason);
    expect(advice.maxTokens).toBeNull();
    expect(ModelTimeoutMs.safeParse(advice.timeoutMs).success).toBe(true);
    const followed = judgeForecast(input(m, advice.timeoutMs!));
    expect(followed.ok).toBe(true);
    if (!followed.ok) return;
    expect(followed.forecast.predicted_largest_call_ms * TIMEOUT_MARGIN).toBeLessThanOrEqual(advice.timeoutMs!);
    // A second less than the advice would not do: the advice is the bound, rounded up to the second.
    expect(judgeForecast(input(m, advice.timeoutMs! - 1_000)).ok).toBe(false);
  });

  it('a server so slow that no timeout within the flag fits: the advice is the maximum timeout with the largest answer cap that fits at it, and following it passes', () => {
    // The local model's wall-clock rates before its engine was timed (4.4 generated tokens/s): 4,096 tokens take 931 s alone.
    const m = measured(365, 4.4, 262, 4_096);
    const refused = judgeForecast(input(m, 120_000));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.reason).toContain(`over the most the tool allows (${MAX_MODEL_TIMEOUT_MS})`);
    const advice = advisedOf(refused.reason);
    expect(advice.timeoutMs).toBe(MAX_MODEL_TIMEOUT_MS);
    expect(ModelTimeoutMs.safeParse(advice.timeoutMs).success).toBe(true);
    expect(advice.maxTokens).toBeGreaterThanOrEqual(MIN_ADVISED_ANSWER_TOKENS);
    expect(advice.maxTokens).toBeLessThan(4_096);
    const followed = judgeForecast(input(measured(365, 4.4, 262, advice.maxTokens!), advice.timeoutMs!, advice.maxTokens!));
    expect(followed.ok, followed.ok ? '' : followed.reason).toBe(true);
  });

  it('a server too slow even for the smallest advised cap: no flag is advised, a faster server or a smaller window is', () => {
    const m = measured(20, 0.5, 15, 4_096);
    const refused = judgeForecast(input(m, 120_000));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(advisedOf(refused.reason)).toEqual({ timeoutMs: null, maxTokens: null });
    expect(refused.reason).toContain(`even a ${MIN_ADVISED_ANSWER_TOKENS}-token answer cap does not fit`);
    expect(refused.reason).toContain('faster server');
  });

  it('a largest prompt not measurable at the maximum timeout advises no higher timeout', () => {
    const m = measured(290, 160, 100, 4_096);
    const unmeasured: ModelMeasurement = { ...m, speeds: [m.speeds[0]!, { label: 'largest', prompt_tokens: 12_032, speed: null, failure: 'timeout: no answer within timeoutMs 600000', timed_out: true }] };
    const atMax = judgeForecast(input(unmeasured, MAX_MODEL_TIMEOUT_MS));
    expect(atMax.ok).toBe(false);
    if (atMax.ok) return;
    expect(advisedOf(atMax.reason).timeoutMs).toBeNull();
    expect(atMax.reason).toContain('the most the tool allows');
    // Below the maximum the advice is a timeout the flag accepts.
    const below = judgeForecast(input(unmeasured, 400_000));
    expect(below.ok).toBe(false);
    if (below.ok) return;
    expect(ModelTimeoutMs.safeParse(advisedOf(below.reason).timeoutMs).success).toBe(true);
  });

  it('the first wake that cannot fit the context is refused with the context that would hold it', () => {
    const m = { ...measured(290, 160, 100, 4_096), context: { size: 2_048, source: 'GET /props' } };
    const refused = judgeForecast(input(m, 60_000));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.reason).toContain(`the first wake's prompt is ${FIRST} tokens`);
    expect(refused.reason).toContain(`a context of at least ${FIRST + 4_096} tokens`);
  });
});
