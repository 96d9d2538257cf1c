// How each PlanEvent reads in a blind-review package (blind-review/event-normalizer.ts): a revision
// proposed is shown; whether it was accepted or rejected is not, since only some capability
// settings produce each (OMISSIONS.plan_decision).
import { keep, type DispositionHandlers } from './disposition.js';

export const disposePlanEvents: DispositionHandlers<'PlanEvent'> = {
  'PlanEvent.PlanRevisionProposed': (p) =>
    keep('plan_revision_proposed', 'subject', (c) => ({
      summary: `proposed a plan revision for goal ${p.goal_id} (${p.steps.length} step(s))`,
      detail: { reason: c.text(p.reason), goal_id: p.goal_id, goal_description: c.text(p.goal_description), deadline: p.deadline_at === null ? null : c.time(p.deadline_at), steps: p.steps.map((s) => ({ task_id: s.task_id, title: c.text(s.title) })) },
      refs: [],
    })),
  'PlanEvent.PlanRevisionAccepted': () => ({ omit: 'plan_decision' }),
  'PlanEvent.PlanRevisionRejected': () => ({ omit: 'plan_decision' }),
};
