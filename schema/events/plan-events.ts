import { z } from 'zod';
import { defineEvent, Identifier, LongText, ShortText } from '../event-definition.js';

/** Every group may output one; only the Capability Policy decides its fate (spec §5.2). */
export const PlanRevisionProposed = defineEvent('PlanEvent', 'PlanRevisionProposed', '1.0.0', z.strictObject({
  proposal_id: Identifier,
  reason: LongText,
  goal_id: Identifier,
  goal_description: LongText,
  deadline_at: z.iso.datetime().nullable(),
  steps: z.array(z.strictObject({ task_id: Identifier, title: ShortText })).min(1).max(32),
}));

export const PlanRevisionAccepted = defineEvent('PlanEvent', 'PlanRevisionAccepted', '1.0.0', z.strictObject({
  proposal_id: Identifier,
}));

export const PlanRevisionRejected = defineEvent('PlanEvent', 'PlanRevisionRejected', '1.0.0', z.strictObject({
  proposal_id: Identifier,
  reason_code: z.enum(['capability_disabled', 'invalid_plan']),
}));
