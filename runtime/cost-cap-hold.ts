// The cost cap's hold on one model call (issue 36 item 4): before the call is sent, what the
// instance has spent (counted from the store by the controller and sent in the wake,
// runtime/protocol.ts RuntimeWake cost_cap) plus the most this call could cost is held against the
// cap in force. The most a call could cost has to be an upper bound, not an estimate, or a call
// let through could take the instance over its cap (the verifier checks it never does,
// design/cost-cap.ts): the prompt at one token per UTF-8 byte (every token of a byte-level
// tokenizer covers at least one byte) plus a margin for the chat template's own tokens, every
// prompt token at the dearer of the input and cache-write prices, and the answer at its cap.
import type { ModelPrices } from '../schema/model-prices.js';
import { usdText } from '../schema/model-prices.js';
import { worstCallCostNanoUsd } from './call-cost.js';
import type { WakeCostCap } from './protocol.js';

/** The chat template's tokens around the two messages (role markers, separators, a BOS): far fewer than this in every template known. */
export const CHAT_TEMPLATE_MARGIN_TOKENS = 256;

/** The most tokens the prompt of `system` and `user` can be counted as. */
export function worstPromptTokens(system: string, user: string): number {
  return Buffer.byteLength(system, 'utf8') + Buffer.byteLength(user, 'utf8') + CHAT_TEMPLATE_MARGIN_TOKENS;
}

/**
 * Why the call must not be made (the ModelCallFailed `cost_cap` detail: spent, cap and worst
 * case), or null when it may. `cap` null: no cap in force. Without prices a cap cannot be held,
 * and the call is held back too (the start refuses such a run; this is the runtime's own guard).
 */
export function costCapHold(cap: WakeCostCap | null, prices: ModelPrices | null, prompt: { readonly system: string; readonly user: string }, answerCapTokens: number): string | null {
  if (cap === null) return null;
  if (prices === null) return `a cost cap of ${usdText(cap.cap_nano_usd)} is in force but the model configuration states no prices: the call's cost cannot be counted, so it is not made`;
  const promptTokens = worstPromptTokens(prompt.system, prompt.user);
  const worst = worstCallCostNanoUsd(promptTokens, answerCapTokens, prices);
  if (cap.spent_nano_usd + worst <= cap.cap_nano_usd) return null;
  return `not made: the instance has spent ${usdText(cap.spent_nano_usd)} of its cost cap of ${usdText(cap.cap_nano_usd)} (${cap.spent_nano_usd} of ${cap.cap_nano_usd} nano-USD), and this call could cost up to ${usdText(worst)} (${worst} nano-USD: a prompt of at most ${promptTokens} tokens and an answer of at most ${answerCapTokens}), which could exceed the cap`;
}
