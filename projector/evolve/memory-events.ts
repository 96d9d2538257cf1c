// How each MemoryEvent evolves the Subject (docs/projector.md §5, §8): the task board and the
// journal change only by executing an allowed proposal for them; claims and focus are the
// subject's own thinking, within a wake. A FACT is indexed under its evidence for refutation.
import type { PayloadOf } from '../../schema/event-catalog.js';
import { own } from '../own.js';
import { indexFact, refuteEvent } from '../refutation.js';
import { SUBJECT_LIMITS } from '../subject-state.js';
import type { EvolveHandlers, EvolveStep } from './evolve-step.js';
import { consumeAllowedProposal } from './tool-execution.js';
import { moveCognition, requireWake } from './transitions.js';

function changeTaskBoard(p: PayloadOf<'MemoryEvent.TaskBoardChanged'>, { state, refuse }: EvolveStep): boolean {
  requireWake(state, refuse, { sideEffect: true });
  consumeAllowedProposal(state, p.proposal_id, 'task_board', refuse);
  moveCognition(state, 'MemoryEvent.TaskBoardChanged', refuse);
  const task = own(state.task_board, p.task_id);
  switch (p.op) {
    case 'add':
      if (task) throw refuse('id_exists', `task ${p.task_id} exists`);
      if (Object.keys(state.task_board).length >= SUBJECT_LIMITS.maxTasks) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxTasks} tasks`);
      if (p.title === null) throw refuse('task_without_title', 'a new task needs a title');
      state.task_board[p.task_id] = { title: p.title, status: p.status ?? 'todo', priority: p.priority ?? 0, depends_on: p.depends_on };
      return true;
    case 'update':
    case 'complete':
      if (!task) throw refuse('unknown_task', `no task ${p.task_id}`);
      if (p.title !== null) task.title = p.title;
      if (p.priority !== null) task.priority = p.priority;
      task.status = p.op === 'complete' ? 'done' : (p.status ?? task.status);
      task.depends_on = p.depends_on;
      return true;
    case 'remove':
      if (!task) throw refuse('unknown_task', `no task ${p.task_id}`);
      delete state.task_board[p.task_id];
      state.current_plan = state.current_plan.filter((id) => id !== p.task_id);
      return true;
    default: {
      const unhandled: never = p.op;
      throw refuse('unknown_task_op', `unknown task op ${String(unhandled)}`);
    }
  }
}

function recordClaim(p: PayloadOf<'MemoryEvent.ClaimRecorded'>, { state, event, refuse }: EvolveStep): boolean {
  requireWake(state, refuse, { sideEffect: false });
  if (own(state.claims, p.claim_id)) throw refuse('id_exists', `claim ${p.claim_id} exists`);
  if (Object.keys(state.claims).length >= SUBJECT_LIMITS.maxClaims) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxClaims} claims`);
  if (p.claim_type === 'FACT' && p.evidence_event_ids.length === 0) throw refuse('fact_without_evidence', 'a FACT needs evidence_event_ids');
  if (p.claim_type === 'INFERENCE' && p.confidence === null) throw refuse('inference_without_confidence', 'an INFERENCE carries a confidence');
  moveCognition(state, 'MemoryEvent.ClaimRecorded', refuse);
  const bornRefuted = p.claim_type === 'FACT' ? indexFact(state, p.claim_id, event.event_id, p.evidence_event_ids) : null;
  state.claims[p.claim_id] = {
    claim_type: p.claim_type,
    statement: p.statement,
    claim_event_id: event.event_id,
    evidence_event_ids: p.evidence_event_ids,
    confidence: p.confidence,
    alternatives: p.alternatives,
    seq: event.seq,
    status: bornRefuted ? 'refuted' : 'active',
    refuted_by: bornRefuted,
  };
  // A FACT resting on refuted evidence is itself refuted, and so is whatever rests on it.
  if (bornRefuted) refuteEvent(state, event.event_id, bornRefuted.refuting_event_id, event);
  return true;
}

export const evolveMemoryEvents: EvolveHandlers<'MemoryEvent'> = {
  'MemoryEvent.TaskBoardChanged': changeTaskBoard,
  'MemoryEvent.JournalEntryWritten': (p, { state, event, refuse }) => {
    requireWake(state, refuse, { sideEffect: true });
    consumeAllowedProposal(state, p.proposal_id, 'journal', refuse);
    if (own(state.journal.index, p.entry_id) !== undefined) throw refuse('id_exists', `journal entry ${p.entry_id} exists: the journal is append-only`);
    if (state.journal.entries >= SUBJECT_LIMITS.maxJournalEntries) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxJournalEntries} journal entries`);
    moveCognition(state, 'MemoryEvent.JournalEntryWritten', refuse);
    state.journal.index[p.entry_id] = event.seq;
    state.journal.entries += 1;
    return true;
  },
  'MemoryEvent.ClaimRecorded': recordClaim,
  'MemoryEvent.FocusUpdated': (p, { state, refuse }) => {
    requireWake(state, refuse, { sideEffect: false });
    moveCognition(state, 'MemoryEvent.FocusUpdated', refuse);
    state.current_state.attention_target = p.attention_target;
    state.current_state.waiting_condition = p.waiting_condition;
    return true;
  },
};
