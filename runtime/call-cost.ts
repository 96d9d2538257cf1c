// What one model call cost (issue 36 item 4), computed from what its record holds — its usage,
// the cache counts its provider reported — at the configured prices. Pure: the wake loop records
// it in every call record (cost_nano_usd), the verifier recomputes it from the record and the
// manifest's prices, and the cost cap asks what the next call could cost at most.
//
// Integer billionths of a dollar: a price is US dollars per million tokens, so one token at price
// p costs p × 1,000 nano-USD; with at most 6 decimals in p each token's cost is a multiple of a
// millionth of a nano-dollar, and the call's sum is rounded once, half up, to a whole nano-USD.
import type { ModelPrices } from '../schema/model-prices.js';
import type { RuntimeModelConfig } from './protocol.js';

/** The counts a call's cost is computed from, as its record holds them. */
export interface CostedUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  /** Part of prompt_tokens: read from the provider's cache (null: not reported, billed as input). */
  readonly cache_read_tokens: number | null;
  /** Part of prompt_tokens: written to the provider's cache (null: not reported, billed as input). */
  readonly cache_write_tokens: number | null;
}

/** Nano-USD per token at `usdPerMillion`, scaled by 1e6 to stay an integer (at most 6 decimals, schema/model-prices.ts). */
function microNanoPerToken(usdPerMillion: number): number {
  return Math.round(usdPerMillion * 1e6) * 1_000;
}

/**
 * The call's cost in nano-USD: fresh input, cache reads, cache writes and output, each at its
 * price. Cache counts larger than the prompt (a provider contradicting itself) are not trusted
 * beyond it: the fresh input never goes below 0. Null usage (no server evaluated anything) costs 0.
 */
export function callCostNanoUsd(usage: CostedUsage | null, prices: ModelPrices): number {
  if (usage === null) return 0;
  const cacheRead = Math.min(usage.cache_read_tokens ?? 0, usage.prompt_tokens);
  const cacheWrite = Math.min(usage.cache_write_tokens ?? 0, usage.prompt_tokens - cacheRead);
  const fresh = usage.prompt_tokens - cacheRead - cacheWrite;
  const scaled = fresh * microNanoPerToken(prices.input) + cacheRead * microNanoPerToken(prices.cache_read) + cacheWrite * microNanoPerToken(prices.cache_write) + usage.completion_tokens * microNanoPerToken(prices.output);
  return Math.round(scaled / 1e6);
}

/**
 * The most a call of `promptTokens` (as counted before it is sent) and an answer cap of
 * `maxAnswerTokens` can cost: every prompt token at the dearer of the input and cache-write
 * prices (a provider may write the whole prompt to its cache), every answer token at the output
 * price. What the cost cap holds against what is left.
 */
export function worstCallCostNanoUsd(promptTokens: number, maxAnswerTokens: number, prices: ModelPrices): number {
  const dearestInput = Math.max(prices.input, prices.cache_write);
  return callCostNanoUsd({ prompt_tokens: promptTokens, completion_tokens: maxAnswerTokens, cache_read_tokens: 0, cache_write_tokens: 0 }, { ...prices, input: dearestInput });
}

