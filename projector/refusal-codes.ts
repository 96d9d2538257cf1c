// Why the Subject projector refused an event, as a code (issue 33 item 5): one per rule, so a test
// or a caller asks which rule refused without reading the message, whose words are for people and
// name the ids and states involved. The code is not in any stored record or command output: a
// refusal still ends a command as `projection_refused` (docs/errors.md) with the message as before.
import { z } from 'zod';

export const PROJECTION_REFUSAL_CODES = [
  /** The event's seq is not the one after the last applied ("expected seq N"). */
  'seq_not_next',
  /** The event's type is not in the catalogue. */
  'unknown_event_type',
  /** StoreOpened anywhere but at seq 1. */
  'store_opened_not_first',
  /** The lifecycle table (projector/lifecycle.ts) has no row for the move the event implies. */
  'illegal_lifecycle_transition',
  /** The cognitive table (projector/cognition.ts) has no row for the event in the current state. */
  'illegal_cognitive_transition',
  /** A runtime event while no wake is in progress. */
  'no_wake',
  /** A runtime event during a wake while the subject does not act (PAUSED). */
  'subject_not_acting',
  /** A side effect, or an allow, while the subject is read-only (RECOVERING). */
  'read_only',
  /** WakeStarted while another wake has not ended. */
  'wake_not_ended',
  /** The event names a wake that is not the one in progress (WakeEnded, a model call or its attempt). */
  'other_wake',
  /** An id already in use where a new one is needed: a task, a proposal of this wake, a journal entry, a claim, a plan proposal. */
  'id_exists',
  /** A bound of SUBJECT_LIMITS (projector/subject-state.ts) would be passed; the message names it. */
  'limit_exceeded',
  /** A tool execution names a proposal this wake does not know. */
  'unknown_proposal',
  /** A permission decision on a proposal that is unknown or already decided. */
  'proposal_not_pending',
  /** A tool execution of a proposal made for another tool. */
  'wrong_tool',
  /** A tool execution of a proposal that was not allowed (pending or denied). */
  'proposal_not_allowed',
  /** A second execution of one allowed proposal: it would duplicate a side effect. */
  'already_executed',
  /** An execution intent's permission_event_id is not the decision on its proposal. */
  'not_the_decision',
  /** PermissionDecided's repeat_of_denied does not say whether the same action was denied before. */
  'repeat_of_denied_untrue',
  /** An allow with no tool call left in the wake: the permission gate must deny. */
  'no_tool_calls_left',
  /** A read intent for a proposal that is not a read, or the reverse. */
  'read_op_mismatch',
  /** A read intent with a to_path: a read names one path. */
  'read_with_to_path',
  /** A read intent whose intended_post_hash is not its pre_hash: a read changes nothing. */
  'read_changes_file',
  /** A ToolSucceeded with content for an intent that is not a read. */
  'content_without_read',
  /** A ToolSucceeded of a read without the content it read. */
  'read_without_content',
  /** A ToolSucceeded of a read whose observed_post_hash is not the hash of its content. */
  'content_hash_mismatch',
  /** A tool outcome for an execution intent that is not open. */
  'no_open_intent',
  /** ToolSucceeded or ToolFailed for an intent whose outcome is unknown: only an operator closes it. */
  'outcome_unknown',
  /** ToolReconciled or ToolOutcomeUnknown for an intent that is not open and pending. */
  'intent_not_pending',
  /** OperatorResolved for an intent that has no unknown outcome. */
  'nothing_to_resolve',
  /** A task board update, completion or removal of a task that does not exist. */
  'unknown_task',
  /** A task added without a title. */
  'task_without_title',
  /** A task board op the projector does not know (the schema allows none: a guard against a catalogue change). */
  'unknown_task_op',
  /** A FACT claim that cites no evidence. */
  'fact_without_evidence',
  /** An INFERENCE claim without a confidence. */
  'inference_without_confidence',
  /** A plan decision on a plan proposal that is not pending. */
  'unknown_plan_proposal',
] as const;
export const ProjectionRefusalCode = z.enum(PROJECTION_REFUSAL_CODES);
export type ProjectionRefusalCode = z.infer<typeof ProjectionRefusalCode>;
