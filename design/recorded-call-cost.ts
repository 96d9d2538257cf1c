// What a call record's cost must be (issue 36 item 4): the counts the record holds — its usage
// and the cache reads and writes its provider reported — at the prices the manifest pins,
// computed by the same function the wake loop priced the call with (runtime/call-cost.ts). Here,
// in design, so that the checks that hold a run to its manifest (verification/) can recompute a
// cost without reaching into the runtime's room.
import { callCostNanoUsd } from '../runtime/call-cost.js';
import type { ModelPrices } from '../schema/model-prices.js';

/** The fields of a ModelAnswered or ModelCallFailed a cost is computed from, as stored. */
export interface CostedRecord {
  readonly usage: { readonly prompt_tokens: number; readonly completion_tokens: number } | null;
  readonly cache_read_tokens: number | null;
  readonly cache_write_tokens: number | null;
}

/** The cost in nano-USD the record must carry at `prices`. */
export function recordedCallCostNanoUsd(record: CostedRecord, prices: ModelPrices): number {
  const u = record.usage;
  return callCostNanoUsd(u === null ? null : { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, cache_read_tokens: record.cache_read_tokens, cache_write_tokens: record.cache_write_tokens }, prices);
}
