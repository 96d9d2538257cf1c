// How each PlanEvent evolves the Subject (docs/projector.md §2, §5): a proposed revision waits; an
// accepted one becomes the goal and the plan (its steps join the task board); a rejected one goes.
import type { PayloadOf } from '../../schema/event-catalog.js';
import { own } from '../own.js';
import { SUBJECT_LIMITS, type SubjectState } from '../subject-state.js';
import type { EvolveHandlers, EvolveStep, Refuse } from './evolve-step.js';
import { moveCognition, requireWake } from './transitions.js';

function adoptPlan(state: SubjectState, proposal: SubjectState['plan_proposals'][string], refuse: Refuse): void {
  const existing = state.goals.find((g) => g.goal_id === proposal.goal_id);
  for (const goal of state.goals) if (goal.goal_id !== proposal.goal_id && goal.status === 'active') goal.status = 'superseded';
  if (existing) {
    existing.description = proposal.goal_description;
    existing.deadline_at = proposal.deadline_at;
    existing.status = 'active';
  } else {
    if (state.goals.length >= SUBJECT_LIMITS.maxGoals) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxGoals} goals`);
    state.goals.push({ goal_id: proposal.goal_id, description: proposal.goal_description, deadline_at: proposal.deadline_at, status: 'active' });
  }
  state.current_state.current_goal_id = proposal.goal_id;
  for (const step of proposal.steps) {
    if (own(state.task_board, step.task_id)) continue;
    if (Object.keys(state.task_board).length >= SUBJECT_LIMITS.maxTasks) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxTasks} tasks`);
    state.task_board[step.task_id] = { title: step.title, status: 'todo', priority: 0, depends_on: [] };
  }
  state.current_plan = proposal.steps.map((s) => s.task_id);
}

function acceptPlan(p: PayloadOf<'PlanEvent.PlanRevisionAccepted'>, { state, refuse }: EvolveStep): boolean {
  requireWake(state, refuse, { sideEffect: false });
  const proposal = own(state.plan_proposals, p.proposal_id);
  if (!proposal) throw refuse('unknown_plan_proposal', `no pending plan proposal ${p.proposal_id}`);
  moveCognition(state, 'PlanEvent.PlanRevisionAccepted', refuse);
  adoptPlan(state, proposal, refuse);
  delete state.plan_proposals[p.proposal_id];
  state.plan_revisions.accepted += 1;
  return true;
}

export const evolvePlanEvents: EvolveHandlers<'PlanEvent'> = {
  'PlanEvent.PlanRevisionProposed': (p, { state, refuse }) => {
    requireWake(state, refuse, { sideEffect: false });
    if (own(state.plan_proposals, p.proposal_id)) throw refuse('id_exists', `plan proposal ${p.proposal_id} exists`);
    if (Object.keys(state.plan_proposals).length >= SUBJECT_LIMITS.maxPendingPlanProposals) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxPendingPlanProposals} pending plan proposals`);
    moveCognition(state, 'PlanEvent.PlanRevisionProposed', refuse);
    state.plan_proposals[p.proposal_id] = { goal_id: p.goal_id, goal_description: p.goal_description, deadline_at: p.deadline_at, steps: p.steps };
    return true;
  },
  'PlanEvent.PlanRevisionAccepted': acceptPlan,
  'PlanEvent.PlanRevisionRejected': (p, { state, refuse }) => {
    requireWake(state, refuse, { sideEffect: false });
    if (!own(state.plan_proposals, p.proposal_id)) throw refuse('unknown_plan_proposal', `no pending plan proposal ${p.proposal_id}`);
    moveCognition(state, 'PlanEvent.PlanRevisionRejected', refuse);
    delete state.plan_proposals[p.proposal_id];
    state.plan_revisions.rejected += 1;
    return true;
  },
};
