// The cost of one call from its recorded counts and the configured prices (runtime/call-cost.ts):
// integer nano-USD, each kind of token at its own price, rounded once; the worst case the cost
// cap holds against what is left.
import { describe, expect, test } from 'vitest';
import { callCostNanoUsd, worstCallCostNanoUsd } from '../../runtime/call-cost.js';
import { ModelPrices } from '../../schema/model-prices.js';

// Prices as a provider lists them (US dollars per million tokens): input 3, output 15, cache read 0.30, cache write 3.75.
const PRICES = ModelPrices.parse({ input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 });

describe('the cost of a call', () => {
  test('each kind of token at its own price, the cache counts taken out of the prompt', () => {
    // 1,000 prompt tokens of which 800 read from the cache and 100 written to it; 200 generated.
    const usage = { prompt_tokens: 1_000, completion_tokens: 200, cache_read_tokens: 800, cache_write_tokens: 100 };
    // fresh 100 × 3,000 + read 800 × 300 + write 100 × 3,750 + out 200 × 15,000 nano-USD.
    expect(callCostNanoUsd(usage, PRICES)).toBe(100 * 3_000 + 800 * 300 + 100 * 3_750 + 200 * 15_000);
    // Not reported: every prompt token billed as input.
    expect(callCostNanoUsd({ ...usage, cache_read_tokens: null, cache_write_tokens: null }, PRICES)).toBe(1_000 * 3_000 + 200 * 15_000);
  });

  test('a call that reached no server costs nothing; a provider whose cache counts exceed its prompt is held to the prompt', () => {
    expect(callCostNanoUsd(null, PRICES)).toBe(0);
    // Forged: a cache read larger than the prompt cannot make the fresh input negative.
    expect(callCostNanoUsd({ prompt_tokens: 10, completion_tokens: 0, cache_read_tokens: 50, cache_write_tokens: 50 }, PRICES)).toBe(10 * 300);
  });

  test('fractions of a nano-dollar are rounded once, for the whole call', () => {
    const cheap = ModelPrices.parse({ input: 0.000001, output: 0.000001, cache_read: 0, cache_write: 0 });
    // 0.001 nano-USD per token: 499 tokens round to 0, 500 to 1 (half up), never 0 per token summed.
    expect(callCostNanoUsd({ prompt_tokens: 499, completion_tokens: 0, cache_read_tokens: null, cache_write_tokens: null }, cheap)).toBe(0);
    expect(callCostNanoUsd({ prompt_tokens: 300, completion_tokens: 200, cache_read_tokens: null, cache_write_tokens: null }, cheap)).toBe(1);
  });

  test('the worst case prices every prompt token at the dearer of input and cache write, every allowed answer token at output', () => {
    expect(worstCallCostNanoUsd(1_000, 512, PRICES)).toBe(1_000 * 3_750 + 512 * 15_000);
    expect(worstCallCostNanoUsd(1_000, 512, { ...PRICES, cache_write: 1 })).toBe(1_000 * 3_000 + 512 * 15_000);
  });

  test('a price is refused with more than 6 decimals, below 0 or above a million dollars per million tokens', () => {
    for (const bad of [0.0000001, -1, 1_000_001]) expect(ModelPrices.safeParse({ ...PRICES, input: bad }).success).toBe(false);
  });
});
