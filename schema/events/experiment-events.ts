import { z } from 'zod';
import { defineEvent, EventId, Identifier, ShortText, Timestamp } from '../event-definition.js';

export const Budget = z.strictObject({
  model_calls: z.number().int().min(0),
  tokens: z.number().int().min(0),
  tool_calls: z.number().int().min(0),
});

export const WakeScheduled = defineEvent('ExperimentEvent', 'WakeScheduled', '1.0.0', z.strictObject({
  wake_id: Identifier,
  wake_at: Timestamp,
  budget: Budget,
}));

/** The wake's budget is granted here, identical for every group (spec §5.2). */
export const WakeStarted = defineEvent('ExperimentEvent', 'WakeStarted', '1.0.0', z.strictObject({
  wake_id: Identifier,
  visible_to_seq: z.number().int().min(1),
  budget: Budget,
}));

export const WakeEnded = defineEvent('ExperimentEvent', 'WakeEnded', '1.0.0', z.strictObject({
  wake_id: Identifier,
  outcome: z.enum(['completed', 'budget_exhausted', 'crashed', 'stopped']),
}));

export const InterventionDelivered = defineEvent('ExperimentEvent', 'InterventionDelivered', '1.0.0', z.strictObject({
  intervention_id: Identifier,
  wake_id: Identifier,
  event_ids: z.array(EventId).min(1).max(512),
}));

/** The scoring view of spec §9.4: same fields, same moment, for every group. */
export const CheckpointRecorded = defineEvent('ExperimentEvent', 'CheckpointRecorded', '1.0.0', z.strictObject({
  wake_id: Identifier,
  current_goal_id: Identifier.nullable(),
  goal_status: ShortText.nullable(),
  attention_target: ShortText.nullable(),
  waiting_condition: ShortText.nullable(),
  next_action: ShortText.nullable(),
  observed_event_seq: z.number().int().min(0),
  evidence_event_ids: z.array(EventId).max(64),
}));

const LedgerUsed = Budget.extend({ retries: z.number().int().min(0) });
const LedgerRecordedV1 = z.strictObject({ wake_id: Identifier, granted: Budget, used: LedgerUsed });

/**
 * 1.1.0 (catalogue 1.3.0, issue 36): `used.cost_nano_usd`, the sum of the wake's call records'
 * costs (design/budget-ledger.ts); null when none of its calls carries one (the model is not
 * priced). 1.0.0 ledgers are lifted with null (schema/upcasters.ts).
 */
export const BudgetLedgerRecorded = defineEvent(
  'ExperimentEvent',
  'BudgetLedgerRecorded',
  '1.1.0',
  z.strictObject({
    wake_id: Identifier,
    granted: Budget,
    used: LedgerUsed.extend({ cost_nano_usd: z.number().int().min(0).nullable() }),
  }),
  undefined,
  { '1.0.0': LedgerRecordedV1 },
);
