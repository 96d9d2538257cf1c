// A wake's budget ledger (DESIGN §8, spec §5.2), counted from the store: what the runtime
// recorded between WakeStarted and now. The verifier compares ledgers across groups, so they
// must come from the record, never from a process's own account of itself.
import type { EventEnvelope } from '../schema/envelope.js';
import { eventIs } from '../schema/typed-event.js';
import { callWasMade } from '../schema/events/model-output-events.js';

/** What a wake used, as its ledger records it. */
export interface LedgerUse {
  readonly model_calls: number;
  readonly tokens: number;
  readonly tool_calls: number;
  readonly retries: number;
  /** The sum of the wake's call records' cost_nano_usd (issue 36); null when none carries one (not priced). */
  readonly cost_nano_usd: number | null;
}

/**
 * model_calls: ModelAnswered + ModelCallFailed except `budget_exhausted` (a call not made);
 * tokens: prompt + completion of every call whose record carries usage — answers, and answers
 * that failed the protocol or were cut (issue 15: a misbehaving model cannot look cheap);
 * tool_calls: permission decisions that allowed; retries: transport attempts beyond the first
 * (ModelCallAttemptFailed under the pre-registered policy), kept apart from the calls;
 * cost_nano_usd: the sum of the costs the wake's call records carry (budget_exhausted's 0
 * included), null when none carries one — the model is not priced, or the call is of a version
 * before costs were recorded.
 */
export function ledgerOf(wakeEvents: readonly EventEnvelope[]): LedgerUse {
  let modelCalls = 0;
  let tokens = 0;
  let toolCalls = 0;
  let retries = 0;
  let cost: number | null = null;
  for (const event of wakeEvents) {
    if (eventIs(event, 'ModelOutputEvent.ModelAnswered') || eventIs(event, 'ModelOutputEvent.ModelCallFailed')) {
      const callCost = event.payload['cost_nano_usd'];
      if (typeof callCost === 'number') cost = (cost ?? 0) + callCost;
    }
    if (eventIs(event, 'ModelOutputEvent.ModelAnswered') || (eventIs(event, 'ModelOutputEvent.ModelCallFailed') && callWasMade(event.payload.failure))) {
      modelCalls += 1;
      // A stored call of an earlier version (not upcast here) may lack usage or attempts: both are checked.
      const usage = event.payload['usage'] as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
      if (usage && typeof usage.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number') tokens += usage.prompt_tokens + usage.completion_tokens;
      const attempts = event.payload['attempts'];
      if (typeof attempts === 'number') retries += Math.max(0, attempts - 1);
    }
    if (eventIs(event, 'ActionEvent.PermissionDecided') && event.payload.decision === 'allow') toolCalls += 1;
  }
  return { model_calls: modelCalls, tokens, tool_calls: toolCalls, retries, cost_nano_usd: cost };
}
