// How each ExperimentEvent evolves the Subject (docs/projector.md §5): a wake starts and ends. The
// schedule, deliveries, the ledger and the checkpoint change nothing; the checkpoint is a read-only
// scoring view that never writes back (spec §9.4).
import type { LifecycleState } from '../lifecycle.js';
import type { EvolveHandlers } from './evolve-step.js';
import { moveCognition, moveLifecycle } from './transitions.js';

export const evolveExperimentEvents: EvolveHandlers<'ExperimentEvent'> = {
  'ExperimentEvent.WakeStarted': (p, { state, event, refuse }) => {
    if (state.current_wake_id !== null) throw refuse('wake_not_ended', `wake ${state.current_wake_id} has not ended`);
    moveLifecycle(state, 'ExperimentEvent.WakeStarted', state.lifecycle_state === 'RECOVERING' ? 'RECOVERING' : 'AWAKE', refuse);
    moveCognition(state, 'ExperimentEvent.WakeStarted', refuse);
    state.current_wake_id = p.wake_id;
    state.current_state.last_observation_at = event.occurred_at;
    state.resource_budget = { wake_id: p.wake_id, granted: { ...p.budget }, remaining: { ...p.budget }, overruns: { model_calls: 0, tokens: 0, tool_calls: 0 } };
    state.proposals = {};
    return true;
  },
  'ExperimentEvent.WakeEnded': (p, { state, refuse }) => {
    if (state.current_wake_id !== p.wake_id) throw refuse('other_wake', `wake ${p.wake_id} is not the one in progress (${String(state.current_wake_id)})`);
    const to: LifecycleState = state.lifecycle_state === 'RECOVERING' || state.lifecycle_state === 'PAUSED' ? state.lifecycle_state : 'DORMANT';
    moveLifecycle(state, 'ExperimentEvent.WakeEnded', to, refuse);
    moveCognition(state, 'ExperimentEvent.WakeEnded', refuse);
    state.current_wake_id = null;
    state.proposals = {};
    return true;
  },
  'ExperimentEvent.WakeScheduled': () => false,
  'ExperimentEvent.InterventionDelivered': () => false,
  'ExperimentEvent.CheckpointRecorded': () => false,
  'ExperimentEvent.BudgetLedgerRecorded': () => false,
};
