// The audit desk's one-line summary of each ExperimentEvent (audit/event-summary.ts).
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import { short } from './short-text.js';

export const summarizeExperimentEvents: CategoryHandlers<'ExperimentEvent', void, string> = {
  'ExperimentEvent.WakeScheduled': (p) => `wake ${p.wake_id} scheduled at ${p.wake_at}`,
  'ExperimentEvent.WakeStarted': (p) => `wake ${p.wake_id} starts; sees events up to seq ${p.visible_to_seq}`,
  'ExperimentEvent.WakeEnded': (p) => `wake ${p.wake_id} ended: ${p.outcome}`,
  'ExperimentEvent.InterventionDelivered': (p) => `intervention ${p.intervention_id} delivered at ${p.wake_id} (${p.event_ids.length} event(s))`,
  'ExperimentEvent.CheckpointRecorded': (p) => `checkpoint ${p.wake_id}: goal ${p.current_goal_id ?? '—'} (${p.goal_status ?? '—'}), next: ${short(p.next_action ?? '—')}`,
  'ExperimentEvent.BudgetLedgerRecorded': (p) =>
    `ledger ${p.wake_id}: ${p.used.model_calls}/${p.granted.model_calls} calls, ${p.used.tool_calls}/${p.granted.tool_calls} tool calls, ${p.used.retries} retries`,
};
