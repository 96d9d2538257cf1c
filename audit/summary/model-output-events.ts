// The audit desk's one-line summary of each ModelOutputEvent (audit/event-summary.ts).
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import { short } from './short-text.js';

export const summarizeModelOutputEvents: CategoryHandlers<'ModelOutputEvent', void, string> = {
  'ModelOutputEvent.ModelAnswered': (p) =>
    `model ${p.model_id} answered (${p.usage.prompt_tokens}+${p.usage.completion_tokens} tokens${p.usage_source === 'server' ? '' : `, counted by ${p.usage_source}`}; finish ${p.finish_reason ?? 'unknown'}; window ${p.context.window_events} of ${p.context.eligible_total})`,
  'ModelOutputEvent.ModelCallFailed': (p) => `model call failed: ${p.failure} — ${short(p.detail)}`,
  'ModelOutputEvent.ModelCallAttemptFailed': (p) => `model call ${p.call_number} attempt ${p.attempt} brought no answer (${p.kind})${p.backoff_ms === null ? '' : `; retried after ${p.backoff_ms} ms`}`,
};
