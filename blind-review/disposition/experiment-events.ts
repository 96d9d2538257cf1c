// How each ExperimentEvent reads in a blind-review package (blind-review/event-normalizer.ts):
// wakes, checkpoints and ledgers are kept; the schedule and deliveries are not timeline entries.
import { keep, type DispositionHandlers } from './disposition.js';

export const disposeExperimentEvents: DispositionHandlers<'ExperimentEvent'> = {
  'ExperimentEvent.WakeScheduled': () => ({ omit: 'wake_schedule' }),
  'ExperimentEvent.InterventionDelivered': () => ({ omit: 'intervention_delivery' }),
  'ExperimentEvent.WakeStarted': (p) =>
    keep('wake_started', 'apparatus', (c) => ({
      summary: `${c.wake(p.wake_id)} started (budget: ${p.budget.model_calls} model call(s), ${p.budget.tokens} tokens, ${p.budget.tool_calls} tool call(s))`,
      detail: { budget: { ...p.budget }, visible_up_to: c.refAtOrBefore(p.visible_to_seq) },
      refs: [],
    })),
  'ExperimentEvent.WakeEnded': (p) => keep('wake_ended', 'apparatus', (c) => ({ summary: `${c.wake(p.wake_id)} ended: ${p.outcome}`, detail: { outcome: p.outcome }, refs: [] })),
  'ExperimentEvent.CheckpointRecorded': (p) =>
    keep('checkpoint', 'apparatus', (c) => {
      const evidence = c.refs(p.evidence_event_ids);
      return {
        summary: `checkpoint ${c.wake(p.wake_id)}: goal ${p.current_goal_id ?? 'none'} (${p.goal_status ?? 'no status'}); next: ${p.next_action ?? 'none'}`,
        detail: {
          current_goal_id: p.current_goal_id,
          goal_status: p.goal_status === null ? null : c.text(p.goal_status),
          attention_target: p.attention_target === null ? null : c.text(p.attention_target),
          waiting_condition: p.waiting_condition === null ? null : c.text(p.waiting_condition),
          next_action: p.next_action === null ? null : c.text(p.next_action),
          observed_up_to: c.refAtOrBefore(p.observed_event_seq),
          evidence,
        },
        refs: evidence,
      };
    }),
  // used.tokens includes the prompt tokens, whose count depends on the state setting: dropped.
  'ExperimentEvent.BudgetLedgerRecorded': (p) =>
    keep('budget_ledger', 'apparatus', (c) => ({
      summary: `${c.wake(p.wake_id)} used ${p.used.model_calls}/${p.granted.model_calls} model call(s), ${p.used.tool_calls}/${p.granted.tool_calls} tool call(s)`,
      detail: { granted: { ...p.granted }, used: { model_calls: p.used.model_calls, tool_calls: p.used.tool_calls, retries: p.used.retries } },
      refs: [],
    })),
};
