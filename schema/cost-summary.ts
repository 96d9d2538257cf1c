// What a set of model calls cost (issue 36 item 4), summed from their records' cost_nano_usd:
// one shape for an instance (the run summary, the ledger's wake), a group and a study (the study
// report), with how many of the calls were priced — a sum over calls some of which were not
// priced is not the cost, and says so.
import { z } from 'zod';
import { NANO_USD_PER_USD } from './model-prices.js';

const Count = z.number().int().min(0);

export const CostSummary = z.strictObject({
  /** Every model call record counted (ModelAnswered and ModelCallFailed). */
  calls: Count,
  /** Those whose record carries a cost (cost_nano_usd not null). */
  priced_calls: Count,
  /** The sum of the priced calls' costs, in billionths of a US dollar (exact: integers). */
  nano_usd: Count,
});
export type CostSummary = z.infer<typeof CostSummary>;

export const NO_CALLS: CostSummary = { calls: 0, priced_calls: 0, nano_usd: 0 };

/** The summary of calls whose records carry these costs (null: not priced). */
export function summarizeCosts(costs: readonly (number | null)[]): CostSummary {
  const priced = costs.filter((c): c is number => c !== null);
  return { calls: costs.length, priced_calls: priced.length, nano_usd: priced.reduce((sum, c) => sum + c, 0) };
}

/** The summary of several sets of calls (a group's instances, a study's groups). */
export function addCosts(parts: readonly CostSummary[]): CostSummary {
  return parts.reduce((sum, p) => ({ calls: sum.calls + p.calls, priced_calls: sum.priced_calls + p.priced_calls, nano_usd: sum.nano_usd + p.nano_usd }), NO_CALLS);
}

/** Whether every call counted carries its cost. */
export function allPriced(summary: CostSummary): boolean {
  return summary.priced_calls === summary.calls;
}

/** US dollars to the millionth (`$0.004212`): what a few calls of a small model cost shows. */
export function usdText(nanoUsd: number): string {
  return `$${(nanoUsd / NANO_USD_PER_USD).toFixed(6)}`;
}

/** One line for a screen or a report: the sum, and whether it covers every call. */
export function describeCost(summary: CostSummary): string {
  if (summary.calls === 0) return 'cost: no model calls';
  if (summary.priced_calls === 0) return `cost: not priced (none of ${summary.calls} call(s) carries a cost: the model configuration states no prices)`;
  const cover = allPriced(summary) ? `every one of ${summary.calls} call(s) priced` : `only ${summary.priced_calls} of ${summary.calls} call(s) priced: the sum leaves the others out`;
  return `cost: ${usdText(summary.nano_usd)} (${cover})`;
}
