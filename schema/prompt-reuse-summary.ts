// What a run's (or a group's) model calls say the servers reused of their prompts (issue 34
// item 1), summed from the calls' records (schema/events/model-output-events.ts PromptReuse). The
// share re-evaluated is over the calls that reported reuse only; the calls that reported none are
// counted beside it, never folded in as zero reuse or as full evaluation. Pure.
import { z } from 'zod';
import { PromptReuseSource, type PromptReuse } from './events/model-output-events.js';

const Count = z.number().int().min(0);

export const PromptReuseSummary = z.strictObject({
  /** Calls whose record says what a cache served. */
  calls_reported: Count,
  /** Calls that reached a model and said nothing of reuse (a server without timings or cached_tokens, records before issue 34). */
  calls_unreported: Count,
  reused_tokens: Count,
  evaluated_tokens: Count,
  /** evaluated / (reused + evaluated) over the reported calls; null when none reported. */
  reevaluated_share: z.number().min(0).max(1).nullable(),
  /** Who reported, each source once, in PromptReuseSource order. */
  sources: z.array(PromptReuseSource),
});
export type PromptReuseSummary = z.infer<typeof PromptReuseSummary>;

/** The summary of calls' prompt_reuse fields (null: that call reported none). */
export function summarizePromptReuse(records: readonly (PromptReuse | null)[]): PromptReuseSummary {
  const reported = records.filter((r): r is PromptReuse => r !== null);
  const reused = reported.reduce((sum, r) => sum + r.reused_tokens, 0);
  const evaluated = reported.reduce((sum, r) => sum + r.evaluated_tokens, 0);
  const seen = new Set(reported.map((r) => r.source));
  return {
    calls_reported: reported.length,
    calls_unreported: records.length - reported.length,
    reused_tokens: reused,
    evaluated_tokens: evaluated,
    reevaluated_share: reused + evaluated === 0 ? null : evaluated / (reused + evaluated),
    sources: PromptReuseSource.options.filter((s) => seen.has(s)),
  };
}

/** What a model call's record says for the summary: its prompt_reuse, whether it reached a model (usage recorded), and whether its adapter calls one. */
export interface CallReuseFacts {
  readonly prompt_reuse: PromptReuse | null;
  readonly reached: boolean;
  readonly adapterCallsModel: boolean;
}

/** The calls a summary counts: those that reached a model, of an adapter that calls one — or that report reuse anyway (a replay serves its source's records). */
export function summarizeCallsReuse(calls: readonly CallReuseFacts[]): PromptReuseSummary {
  return summarizePromptReuse(calls.filter((c) => c.reached && (c.prompt_reuse !== null || c.adapterCallsModel)).map((c) => c.prompt_reuse));
}

/** The summaries of several instances as one (a group's). */
export function combinePromptReuse(summaries: readonly PromptReuseSummary[]): PromptReuseSummary {
  const reused = summaries.reduce((sum, s) => sum + s.reused_tokens, 0);
  const evaluated = summaries.reduce((sum, s) => sum + s.evaluated_tokens, 0);
  const seen = new Set(summaries.flatMap((s) => s.sources));
  return {
    calls_reported: summaries.reduce((sum, s) => sum + s.calls_reported, 0),
    calls_unreported: summaries.reduce((sum, s) => sum + s.calls_unreported, 0),
    reused_tokens: reused,
    evaluated_tokens: evaluated,
    reevaluated_share: reused + evaluated === 0 ? null : evaluated / (reused + evaluated),
    sources: PromptReuseSource.options.filter((s) => seen.has(s)),
  };
}

/** One line for a screen: "re-evaluated 23.4 % of 98,000 prompt tokens (31 calls, server_timings); 2 calls reported no reuse". */
export function describePromptReuse(s: PromptReuseSummary): string {
  const unreported = s.calls_unreported === 0 ? '' : `; ${s.calls_unreported} call(s) reported no reuse`;
  if (s.reevaluated_share === null) return `prompt reuse: not reported by any call${unreported}`;
  const total = s.reused_tokens + s.evaluated_tokens;
  return `prompt reuse: re-evaluated ${(s.reevaluated_share * 100).toFixed(1)} % of ${total.toLocaleString('en-US')} prompt tokens (${s.calls_reported} call(s), ${s.sources.join(', ')})${unreported}`;
}
