// Where a model configuration's prices reach the code that needs them (issue 36 item 4): the
// runtime's start configuration (runtime/protocol.ts RuntimeModelConfig, which the start message
// carries) and a model choice (design/model-choice.ts) both hold `prices` on the adapters that
// may be priced. One accessor, so no caller switches over adapters to find them: an adapter whose
// configuration gains `prices` is priced here without a change.
import type { ModelPrices } from '../schema/model-prices.js';

type MaybePriced = { readonly adapter: string; readonly prices?: ModelPrices | undefined } | { readonly adapter: string };

/** The prices a model configuration states; null: none (not priced, so no cost can be counted or capped). */
export function configuredPricesOf(model: MaybePriced): ModelPrices | null {
  return 'prices' in model && model.prices !== undefined ? model.prices : null;
}
