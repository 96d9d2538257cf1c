// How each ActionEvent evolves the Subject (docs/projector.md §5, DESIGN §7): a proposal awaits its
// permission decision; an allowed file operation is executed once, through an intent its outcome
// closes; an outcome that cannot be confirmed makes the subject RECOVERING until an operator speaks.
import type { PayloadOf } from '../../schema/event-catalog.js';
import { actionFingerprint } from '../action-fingerprint.js';
import { own } from '../own.js';
import { SUBJECT_LIMITS } from '../subject-state.js';
import { spend } from './budget-spending.js';
import type { EvolveHandlers, EvolveStep } from './evolve-step.js';
import { afterToolOutcome, checkReadIntent, checkSucceededContent, closeIntent, consumeAllowedProposal } from './tool-execution.js';
import { moveCognition, moveLifecycle, requireWake } from './transitions.js';

function decidePermission(p: PayloadOf<'ActionEvent.PermissionDecided'>, { state, event, refuse }: EvolveStep): boolean {
  requireWake(state, refuse, { sideEffect: false });
  const proposal = own(state.proposals, p.proposal_id);
  if (!proposal || proposal.decision !== 'pending') throw refuse('proposal_not_pending', `proposal ${p.proposal_id} is not awaiting a decision`);
  const denied = own(state.denied_actions, proposal.fingerprint);
  if (p.repeat_of_denied !== (denied !== undefined)) throw refuse('repeat_of_denied_untrue', `repeat_of_denied is ${p.repeat_of_denied} but the action was ${denied ? '' : 'never '}denied before`);
  if (p.decision === 'allow') {
    if (state.lifecycle_state !== 'AWAKE') throw refuse('read_only', `lifecycle ${state.lifecycle_state} is read-only: nothing may be allowed`);
    if (state.resource_budget.remaining.tool_calls < 1) throw refuse('no_tool_calls_left', 'no tool calls left in this wake: the permission gate must deny');
    spend(state, 'tool_calls', 1);
  } else if (denied) {
    denied.repeats += 1;
  } else {
    if (Object.keys(state.denied_actions).length >= SUBJECT_LIMITS.maxDeniedActions) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxDeniedActions} distinct denied actions`);
    state.denied_actions[proposal.fingerprint] = { proposal_id: p.proposal_id, seq: event.seq, repeats: 0 };
  }
  proposal.decision = p.decision;
  proposal.decision_event_id = event.event_id;
  moveCognition(state, p.decision === 'allow' ? 'ActionEvent.PermissionDecided:allow' : 'ActionEvent.PermissionDecided:deny', refuse);
  return true;
}

function recordIntent(p: PayloadOf<'ActionEvent.ExecutionIntentRecorded'>, { state, event, refuse }: EvolveStep): boolean {
  requireWake(state, refuse, { sideEffect: true });
  consumeAllowedProposal(state, p.proposal_id, 'files', refuse);
  const proposal = own(state.proposals, p.proposal_id)!;
  if (proposal.decision_event_id !== p.permission_event_id) {
    throw refuse('not_the_decision', `permission_event_id ${p.permission_event_id} is not the decision on proposal ${p.proposal_id}`);
  }
  checkReadIntent(proposal.op, p, refuse);
  if (Object.keys(state.open_intents).length >= SUBJECT_LIMITS.maxOpenIntents) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxOpenIntents} open execution intents`);
  moveCognition(state, 'ActionEvent.ExecutionIntentRecorded', refuse);
  state.open_intents[event.event_id] = {
    proposal_id: p.proposal_id,
    op: p.op,
    path: p.path,
    to_path: p.to_path,
    pre_hash: p.pre_hash,
    intended_post_hash: p.intended_post_hash,
    seq: event.seq,
    outcome: 'pending',
  };
  return true;
}

export const evolveActionEvents: EvolveHandlers<'ActionEvent'> = {
  'ActionEvent.ActionProposed': (p, { state, refuse }) => {
    requireWake(state, refuse, { sideEffect: false });
    if (own(state.proposals, p.proposal_id)) throw refuse('id_exists', `proposal ${p.proposal_id} exists in this wake`);
    if (Object.keys(state.proposals).length >= SUBJECT_LIMITS.maxProposalsPerWake) throw refuse('limit_exceeded', `more than ${SUBJECT_LIMITS.maxProposalsPerWake} proposals in one wake`);
    moveCognition(state, 'ActionEvent.ActionProposed', refuse);
    state.proposals[p.proposal_id] = { tool: p.tool, op: p.op, fingerprint: actionFingerprint(p.tool, p.op, p.args), decision: 'pending', decision_event_id: null, executed: false };
    return true;
  },
  'ActionEvent.PermissionDecided': decidePermission,
  'ActionEvent.ExecutionIntentRecorded': recordIntent,
  'ActionEvent.ToolSucceeded': (p, { state, refuse }) => {
    // Kept before closeIntent deletes it; closeIntent refuses a missing or unknown intent first.
    const intent = own(state.open_intents, p.intent_event_id);
    closeIntent(state, p.intent_event_id, refuse);
    checkSucceededContent(intent!, p, refuse);
    afterToolOutcome(state, 'ActionEvent.ToolSucceeded', refuse);
    return true;
  },
  'ActionEvent.ToolFailed': (p, { state, refuse }) => {
    closeIntent(state, p.intent_event_id, refuse);
    afterToolOutcome(state, 'ActionEvent.ToolFailed', refuse);
    return true;
  },
  'ActionEvent.ToolReconciled': (p, { state, refuse }) => {
    const intent = own(state.open_intents, p.intent_event_id);
    if (!intent || intent.outcome !== 'pending') throw refuse('intent_not_pending', `intent ${p.intent_event_id} is not open and pending (unknown outcomes are resolved by an operator)`);
    delete state.open_intents[p.intent_event_id];
    return true;
  },
  'ActionEvent.ToolOutcomeUnknown': (p, { state, refuse }) => {
    const intent = own(state.open_intents, p.intent_event_id);
    if (!intent || intent.outcome !== 'pending') throw refuse('intent_not_pending', `intent ${p.intent_event_id} is not open and pending`);
    intent.outcome = 'unknown';
    afterToolOutcome(state, 'ActionEvent.ToolOutcomeUnknown', refuse);
    moveLifecycle(state, 'ActionEvent.ToolOutcomeUnknown', 'RECOVERING', refuse);
    return true;
  },
};
