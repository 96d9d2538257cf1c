// What a model's calls cost (issue 36 item 4): the prices a model configuration states, in US
// dollars per million tokens, one per kind of token a provider bills apart. The manifest pins
// them (design/manifest.ts ModelInfo.prices), every call record carries the cost computed from
// its recorded usage at these prices (runtime/call-cost.ts), and a pre-registered cost cap is
// held against the sum. Defined once here: the start message, the manifest and the verifier
// read the same schema.
import { z } from 'zod';

/** One price: US dollars per million tokens, at most 1,000,000 (no model costs a dollar a token), at most 6 decimals (a millionth of a dollar per million tokens is below any provider's grain). */
export const UsdPerMillionTokens = z
  .number()
  .min(0)
  .max(1_000_000)
  .refine((p) => Number.isInteger(Math.round(p * 1e6)) && Math.abs(p * 1e6 - Math.round(p * 1e6)) < 1e-6, { message: 'a price has at most 6 decimals (US dollars per million tokens)' });

/**
 * The prices a configuration states. `input`: prompt tokens evaluated afresh; `output`: generated
 * tokens (Gemini's thinking tokens are billed as output); `cache_read`: prompt tokens served from
 * the provider's prompt cache; `cache_write`: prompt tokens written to it (Anthropic bills a write
 * above the input price). A provider that bills no cache apart states the input price for both.
 */
export const ModelPrices = z.strictObject({
  input: UsdPerMillionTokens,
  output: UsdPerMillionTokens,
  cache_read: UsdPerMillionTokens,
  cache_write: UsdPerMillionTokens,
});
export type ModelPrices = z.infer<typeof ModelPrices>;

/** The prices in the order `--prices` lists them (cli/model-flags.ts and its inverse design/model-choice-flags.ts). */
export const PRICE_KINDS = ModelPrices.keyof().options;

/** A cost as recorded: billionths of a US dollar, an integer, so sums never drift with the order they are added in. */
export const NANO_USD_PER_USD = 1_000_000_000;

/** A cost cap in US dollars (the pre-registration's model_calls.cost_cap_usd_per_instance, or a resume's raise of it): above 0, at most a million. */
export const CostCapUsd = z.number().gt(0).max(1_000_000);

/** `usd` in nano-USD, the unit costs are recorded and summed in. */
export function nanoUsdOf(usd: number): number {
  return Math.round(usd * NANO_USD_PER_USD);
}

/** A nano-USD amount as dollars for people: "$0.001234". */
export function usdText(nanoUsd: number): string {
  return `$${(nanoUsd / NANO_USD_PER_USD).toFixed(6)}`;
}
