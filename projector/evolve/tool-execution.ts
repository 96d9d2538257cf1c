// The rules of carrying out an allowed proposal (DESIGN §7): each allowed proposal is executed at
// most once, by its own tool; a file operation's intent stays open until its outcome closes it,
// and an unknown outcome only an operator closes. Reads (projector 1.2.0) are executions too.
import type { ToolName } from '../../schema/tools.js';
import type { PayloadOf } from '../../schema/event-catalog.js';
import { hashText } from '../../schema/hash.js';
import type { CognitiveTrigger } from '../cognition.js';
import { own } from '../own.js';
import type { SubjectState } from '../subject-state.js';
import type { Refuse } from './evolve-step.js';
import { moveCognition } from './transitions.js';

/**
 * What a read intent must say (projector 1.2.0). The gate judged a read (its size, not its
 * content), so a read permission must not become a write and a write permission not a read;
 * and a read changes nothing, so it names one path and intends the hash it starts from.
 */
export function checkReadIntent(proposalOp: string, p: PayloadOf<'ActionEvent.ExecutionIntentRecorded'>, refuse: Refuse): void {
  if ((proposalOp === 'read') !== (p.op === 'read')) throw refuse('read_op_mismatch', `intent op ${p.op} does not execute proposal ${p.proposal_id}'s op ${proposalOp}: a read is allowed as a read only`);
  if (p.op !== 'read') return;
  if (p.to_path !== null) throw refuse('read_with_to_path', 'a read intent names one path: to_path must be null');
  if (p.intended_post_hash !== p.pre_hash) throw refuse('read_changes_file', 'a read changes nothing: intended_post_hash must equal pre_hash');
}

/**
 * A ToolSucceeded carries content exactly when its intent is a read, and then the content is
 * what observed_post_hash hashes: evidence that cites the event cites that text.
 */
export function checkSucceededContent(intent: SubjectState['open_intents'][string], p: PayloadOf<'ActionEvent.ToolSucceeded'>, refuse: Refuse): void {
  if (intent.op !== 'read') {
    if (p.content !== null) throw refuse('content_without_read', `a ${intent.op} returns no content: content must be null`);
    return;
  }
  if (p.content === null) throw refuse('read_without_content', 'a read that succeeded carries the content it read');
  if (p.observed_post_hash !== hashText(p.content)) throw refuse('content_hash_mismatch', 'observed_post_hash is not the hash of the content read');
}

/** A tool operation must execute an allowed, not yet executed proposal for that tool. */
export function consumeAllowedProposal(state: SubjectState, proposalId: string, tool: ToolName, refuse: Refuse): void {
  const proposal = own(state.proposals, proposalId);
  if (!proposal) throw refuse('unknown_proposal', `proposal ${proposalId} is unknown in this wake: every tool execution needs its permission decision`);
  if (proposal.tool !== tool) throw refuse('wrong_tool', `proposal ${proposalId} is for tool ${proposal.tool}, not ${tool}`);
  if (proposal.decision !== 'allow') throw refuse('proposal_not_allowed', `proposal ${proposalId} was not allowed (decision ${proposal.decision})`);
  if (proposal.executed) throw refuse('already_executed', `proposal ${proposalId} was already executed: a second execution would duplicate a side effect`);
  proposal.executed = true;
}

export function closeIntent(state: SubjectState, intentEventId: string, refuse: Refuse): void {
  const intent = own(state.open_intents, intentEventId);
  if (!intent) throw refuse('no_open_intent', `no open execution intent ${intentEventId}`);
  // An unknown outcome is resolved only by an operator's statement (DESIGN §7).
  if (intent.outcome !== 'pending') throw refuse('outcome_unknown', `intent ${intentEventId} has an unknown outcome: only SystemEvent.OperatorResolved may close it`);
  delete state.open_intents[intentEventId];
}

/** Tool outcomes move cognition only inside the executing wake; after a restart they reconcile silently in state. */
export function afterToolOutcome(state: SubjectState, trigger: CognitiveTrigger, refuse: Refuse): void {
  if (state.cognitive_state === 'EXECUTING') moveCognition(state, trigger, refuse);
}
