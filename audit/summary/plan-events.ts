// The audit desk's one-line summary of each PlanEvent (audit/event-summary.ts).
import type { CategoryHandlers } from '../../schema/category-handlers.js';

export const summarizePlanEvents: CategoryHandlers<'PlanEvent', void, string> = {
  'PlanEvent.PlanRevisionProposed': (p) => `plan revision ${p.proposal_id} for goal ${p.goal_id}: ${p.steps.length} step(s)`,
  'PlanEvent.PlanRevisionAccepted': (p) => `plan revision ${p.proposal_id} accepted`,
  'PlanEvent.PlanRevisionRejected': (p) => `plan revision ${p.proposal_id} rejected: ${p.reason_code}`,
};
