// How each SystemEvent evolves the Subject (docs/projector.md §5). The store's own records (a
// refused append, a signed head, the seal) and a process restart change nothing: the seal ends the
// store, not the subject, and the writer (and a trigger) keep anything from following it.
import type { LifecycleState } from '../lifecycle.js';
import { own } from '../own.js';
import type { EvolveHandlers } from './evolve-step.js';
import { moveLifecycle, unheldLifecycle } from './transitions.js';

export const evolveSystemEvents: EvolveHandlers<'SystemEvent'> = {
  'SystemEvent.StoreOpened': (p, { state, event, refuse }) => {
    if (event.seq !== 1) throw refuse('store_opened_not_first', 'StoreOpened must be the first event');
    state.subject_id = p.subject_id;
    return true;
  },
  'SystemEvent.SubjectInitialized': (p, { state, event, refuse }) => {
    moveLifecycle(state, 'SystemEvent.SubjectInitialized', 'DORMANT', refuse);
    state.identity = p.identity;
    state.identity_schema_version = p.identity_schema_version;
    state.goals = [{ goal_id: p.goal.goal_id, description: p.goal.description, deadline_at: p.goal.deadline_at, status: 'active' }];
    state.current_state.current_goal_id = p.goal.goal_id;
    for (const task of p.tasks) {
      if (own(state.task_board, task.task_id)) throw refuse('id_exists', `task ${task.task_id} listed twice`);
      state.task_board[task.task_id] = { title: task.title, status: 'todo', priority: task.priority, depends_on: task.depends_on };
    }
    state.current_plan = p.tasks.map((t) => t.task_id);
    state.journal = { entries: 1, index: { [p.journal_first_page.entry_id]: event.seq } };
    return true;
  },
  'SystemEvent.Paused': (_p, { state, refuse }) => {
    moveLifecycle(state, 'SystemEvent.Paused', 'PAUSED', refuse);
    return true;
  },
  'SystemEvent.Resumed': (_p, { state, refuse }) => {
    moveLifecycle(state, 'SystemEvent.Resumed', unheldLifecycle(state), refuse);
    return true;
  },
  'SystemEvent.EmergencyStopped': (_p, { state, refuse }) => {
    moveLifecycle(state, 'SystemEvent.EmergencyStopped', 'STOPPED', refuse);
    state.cognitive_state = 'IDLE';
    state.current_wake_id = null;
    return true;
  },
  'SystemEvent.OperatorResolved': (p, { state, refuse }) => {
    const intent = own(state.open_intents, p.intent_event_id);
    if (!intent || intent.outcome !== 'unknown') throw refuse('nothing_to_resolve', `intent ${p.intent_event_id} has no unknown outcome to resolve`);
    delete state.open_intents[p.intent_event_id];
    const held = state.lifecycle_state === 'STOPPED' || state.lifecycle_state === 'PAUSED';
    const to: LifecycleState = held ? state.lifecycle_state : unheldLifecycle(state);
    moveLifecycle(state, 'SystemEvent.OperatorResolved', to, refuse);
    return true;
  },
  'SystemEvent.AppendRejected': () => false,
  'SystemEvent.ChainHeadSigned': () => false,
  'SystemEvent.StoreSealed': () => false,
  'SystemEvent.ProcessRestarted': () => false,
};
