// One line per event for the desk's lists: what an auditor scans for. An exhaustive switch
// over the event catalogue, so a new event type does not compile until it says how it reads.
// The full envelope is always on the event's own page; a summary is never the evidence.
import { currentPayloadOf } from '../schema/current-payload.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { eventDefinition, type TypedEvent } from '../schema/event-catalog.js';

const SUMMARY_TEXT_CHARS = 160;

function short(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= SUMMARY_TEXT_CHARS ? line : `${line.slice(0, SUMMARY_TEXT_CHARS)}…`;
}

/**
 * The payload as the current catalogue reads it, or why it cannot be read as its type: an event
 * of an earlier version is checked against its own schema and lifted by the built-in upcasters
 * (schema/current-payload.ts), so the desk reads it like every other reader of the run does.
 */
export function typedEvent(event: EventEnvelope): { ok: true; event: TypedEvent } | { ok: false; problem: string } {
  const read = currentPayloadOf(event);
  return read.ok ? read : { ok: false, problem: read.reason };
}

/** Says when the summary reads a lifted copy: the envelope as stored is at another version. */
function liftedNote(event: EventEnvelope): string {
  const current = eventDefinition(event.event_type)?.schemaVersion;
  return current === undefined || current === event.schema_version ? '' : ` [recorded as ${event.schema_version}, read as ${current}: what it did not record shows as unknown]`;
}

export function summarizeEvent(event: EventEnvelope): string {
  const typed = typedEvent(event);
  if (!typed.ok) return `⚠ ${short(typed.problem)}`;
  return `${summaryOf(typed.event)}${liftedNote(event)}`;
}

function summaryOf(e: TypedEvent): string {
  switch (e.event_type) {
    case 'SystemEvent.StoreOpened':
      return `store opened for experiment ${e.payload.experiment_id}, subject ${e.payload.subject_id}, projection ${e.payload.projection.name}@${e.payload.projection.version}`;
    case 'SystemEvent.AppendRejected':
      return `refused append (${e.payload.reason}) from ${e.payload.role ?? 'unauthenticated'}: ${short(e.payload.message)}`;
    case 'SystemEvent.StoreSealed':
      return `store sealed by ${e.payload.sealed_by}: ${short(e.payload.reason)}`;
    case 'SystemEvent.SubjectInitialized':
      return `subject ${e.payload.identity.name} initialised: goal ${e.payload.goal.goal_id}, ${e.payload.tasks.length} task(s)`;
    case 'SystemEvent.Paused':
      return `paused by ${e.payload.operator}: ${short(e.payload.reason)}`;
    case 'SystemEvent.Resumed':
      return `resumed by ${e.payload.operator}: ${short(e.payload.reason)}`;
    case 'SystemEvent.ChainHeadSigned':
      return `${e.payload.head.kind} head signed at seq ${e.payload.head.seq}`;
    case 'SystemEvent.ProcessRestarted':
      return `${e.payload.process} restarted (exit ${e.payload.previous_exit.signal ?? e.payload.previous_exit.code ?? '?'}): ${short(e.payload.reason)}`;
    case 'SystemEvent.EmergencyStopped':
      return `emergency stop by ${e.payload.operator}: ${short(e.payload.reason)}`;
    case 'SystemEvent.OperatorResolved':
      return `operator ${e.payload.operator} resolved an unknown outcome: ${e.payload.resolution} — ${short(e.payload.note)}`;
    case 'WorldEvent.MessageReceived':
      return `message from ${e.payload.from}: ${short(e.payload.subject)}`;
    case 'WorldEvent.GoalChanged':
      return `goal changed to ${e.payload.goal_id}${e.payload.deadline_at ? ` (deadline ${e.payload.deadline_at})` : ''}: ${short(e.payload.description)}`;
    case 'WorldEvent.FileChangedExternally':
      return `${e.payload.path} ${e.payload.change} by someone else`;
    case 'WorldEvent.InformationPublished':
      return `information from ${e.payload.source}${e.payload.refutes_event_ids.length > 0 ? ` (refutes ${e.payload.refutes_event_ids.length} event(s))` : ''}: ${short(e.payload.body)}`;
    case 'WorldEvent.DistractorOccurred':
      return `distractor on ${e.payload.channel}: ${short(e.payload.body)}`;
    case 'ModelOutputEvent.ModelAnswered':
      return `model ${e.payload.model_id} answered (${e.payload.usage.prompt_tokens}+${e.payload.usage.completion_tokens} tokens${e.payload.usage_source === 'server' ? '' : `, counted by ${e.payload.usage_source}`}; finish ${e.payload.finish_reason ?? 'unknown'}; window ${e.payload.context.window_events} of ${e.payload.context.eligible_total})`;
    case 'ModelOutputEvent.ModelCallFailed':
      return `model call failed: ${e.payload.failure} — ${short(e.payload.detail)}`;
    case 'ModelOutputEvent.ModelCallAttemptFailed':
      return `model call ${e.payload.call_number} attempt ${e.payload.attempt} brought no answer (${e.payload.kind})${e.payload.backoff_ms === null ? '' : `; retried after ${e.payload.backoff_ms} ms`}`;
    case 'ActionEvent.ActionProposed':
      return `proposes ${e.payload.tool}.${e.payload.op} (${e.payload.proposal_id})${typeof e.payload.args.path === 'string' ? ` ${e.payload.args.path}` : ''}`;
    case 'ActionEvent.PermissionDecided': {
      const failed = e.payload.rules.filter((r) => !r.passed).map((r) => r.rule);
      return `${e.payload.decision} ${e.payload.proposal_id}${failed.length > 0 ? ` (failed: ${failed.join(', ')})` : ''}${e.payload.repeat_of_denied ? ' — repeat of a denied action' : ''}`;
    }
    case 'ActionEvent.ExecutionIntentRecorded':
      return `intent: ${e.payload.op} ${e.payload.path}${e.payload.to_path ? ` → ${e.payload.to_path}` : ''} (${e.payload.proposal_id})`;
    case 'ActionEvent.ToolSucceeded':
      return `succeeded${e.payload.content !== null ? `, read ${e.payload.content.length} characters` : ''}`;
    case 'ActionEvent.ToolFailed':
      return `failed: ${short(e.payload.error)}`;
    case 'ActionEvent.ToolOutcomeUnknown':
      return `outcome UNKNOWN: ${short(e.payload.detail)}`;
    case 'ActionEvent.ToolReconciled':
      return `reconciled after a restart: ${e.payload.outcome === 'happened' ? 'it happened' : 'it did not happen'}`;
    case 'MemoryEvent.ClaimRecorded':
      return `${e.payload.claim_type} ${e.payload.claim_id} (${e.payload.evidence_event_ids.length} evidence): ${short(e.payload.statement)}`;
    case 'MemoryEvent.FocusUpdated':
      return `attends to ${e.payload.attention_target ?? '—'}; waits for ${e.payload.waiting_condition ?? '—'}`;
    case 'MemoryEvent.JournalEntryWritten':
      return `journal ${e.payload.entry_id}: ${short(e.payload.text)}`;
    case 'MemoryEvent.TaskBoardChanged':
      return `task ${e.payload.task_id} ${e.payload.op}${e.payload.status ? ` → ${e.payload.status}` : ''}`;
    case 'PlanEvent.PlanRevisionProposed':
      return `plan revision ${e.payload.proposal_id} for goal ${e.payload.goal_id}: ${e.payload.steps.length} step(s)`;
    case 'PlanEvent.PlanRevisionAccepted':
      return `plan revision ${e.payload.proposal_id} accepted`;
    case 'PlanEvent.PlanRevisionRejected':
      return `plan revision ${e.payload.proposal_id} rejected: ${e.payload.reason_code}`;
    case 'ExperimentEvent.WakeScheduled':
      return `wake ${e.payload.wake_id} scheduled at ${e.payload.wake_at}`;
    case 'ExperimentEvent.WakeStarted':
      return `wake ${e.payload.wake_id} starts; sees events up to seq ${e.payload.visible_to_seq}`;
    case 'ExperimentEvent.WakeEnded':
      return `wake ${e.payload.wake_id} ended: ${e.payload.outcome}`;
    case 'ExperimentEvent.InterventionDelivered':
      return `intervention ${e.payload.intervention_id} delivered at ${e.payload.wake_id} (${e.payload.event_ids.length} event(s))`;
    case 'ExperimentEvent.CheckpointRecorded':
      return `checkpoint ${e.payload.wake_id}: goal ${e.payload.current_goal_id ?? '—'} (${e.payload.goal_status ?? '—'}), next: ${short(e.payload.next_action ?? '—')}`;
    case 'ExperimentEvent.BudgetLedgerRecorded':
      return `ledger ${e.payload.wake_id}: ${e.payload.used.model_calls}/${e.payload.granted.model_calls} calls, ${e.payload.used.tool_calls}/${e.payload.granted.tool_calls} tool calls, ${e.payload.used.retries} retries`;
    default: {
      const unhandled: never = e;
      return String(unhandled);
    }
  }
}
