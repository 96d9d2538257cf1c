// Whether an operator's statement about an unknown outcome may be appended (controller/operator-resolution.ts):
// every state in which it must not be, or could not be, is refused from the stopped store before any
// writer is asked — the store sealed, a wake left open, the id not an intent, the intent closed or
// pending — and the Subject projector itself folds the statement into the stored state (dry run):
// whether the lifecycle may move is the table's answer (LIFECYCLE_TABLE), not a list kept here.
import path from 'node:path';
import { LIFECYCLE_TABLE, type LifecycleState, type LifecycleTrigger } from '../projector/lifecycle.js';
import { ProjectionRefusal } from '../projector/projection.js';
import { subjectProjection } from '../projector/subject-projection.js';
import type { SubjectState } from '../projector/subject-state.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { PayloadOf } from '../schema/event-catalog.js';
import { OperatorResolved } from '../schema/events/system-events.js';
import { eventIs } from '../schema/typed-event.js';
import { envelopeOfDraft } from '../writer/envelope-text.js';
import type { EventDraft, Head } from '../writer/protocol.js';
import { resumedDraft } from './controller-events.js';
import { OperatorResolutionRefusal } from './operator-resolution-refusal.js';
import type { StoreScan } from './stopped-store-scan.js';

export function describeEvent(e: EventEnvelope): string {
  return `${e.event_type} at seq ${e.seq}`;
}

/** The recorded statement under this repair's key: the same one (a repeat) or another (refused). */
export function sameStatement(recorded: EventEnvelope, statement: PayloadOf<'SystemEvent.OperatorResolved'>): boolean {
  if (!eventIs(recorded, OperatorResolved.type)) return false;
  const p = recorded.payload;
  return p.intent_event_id === statement.intent_event_id && p.resolution === statement.resolution && p.operator === statement.operator && p.note === statement.note;
}

/**
 * Refuses (OperatorResolutionRefusal) every state in which the statement must not, or could
 * not, be appended; returns the ToolOutcomeUnknown it answers and the intent.
 */
export function checkResolvable(scan: StoreScan, state: SubjectState, intentEventId: string, storeFile: string): { unknown: EventEnvelope; intent: EventEnvelope } {
  const id = intentEventId;
  if (scan.sealSeq !== null) {
    throw new OperatorResolutionRefusal('sealed', `${storeFile} is sealed (SystemEvent.StoreSealed at seq ${scan.sealSeq}): its record is final — nothing may follow the seal, a repair included; the unknown outcome stays unresolved in this run's record`);
  }
  const wake = scan.openWake ?? (state.current_wake_id === null ? null : { wake_id: state.current_wake_id, seq: null });
  if (wake !== null) {
    // A running controller holds the store (refused as locked, above), and a Ctrl-C ends the
    // wake it is in (WakeEnded 'stopped') before it records the stop: a wake is left open only
    // by a controller that died inside it (killed, crashed, or a second Ctrl-C: exit 130).
    const runDir = path.dirname(storeFile);
    throw new OperatorResolutionRefusal(
      'wake_in_progress',
      `${wake.wake_id}${wake.seq === null ? '' : ` (WakeStarted at seq ${wake.seq})`} has not ended and no stop is recorded after it: the controller ended inside the subject's wake without recording either (killed, crashed, or abandoned by a second Ctrl-C; one Ctrl-C records WakeEnded 'stopped' and SystemEvent.EmergencyStopped). ` +
        `An operator's statement is made between wakes, never inside one. Resume the instance (npm run experiment -- --resume ${runDir}): it ends that wake as 'stopped' and records the missing stop; ` +
        `then stop it with Ctrl-C (an emergency stop, recorded; the wakes it runs before that are read-only, RECOVERING, while an unknown outcome is open) and run this repair again. See docs/controller.md, "Manual repair"`,
    );
  }
  if (scan.named === null) throw new OperatorResolutionRefusal('not_an_intent', `no event of ${storeFile} has event_id ${id}: give the event_id of the ActionEvent.ExecutionIntentRecorded whose outcome is unknown (the intent_event_id of its ActionEvent.ToolOutcomeUnknown)`);
  if (!eventIs(scan.named, 'ActionEvent.ExecutionIntentRecorded')) {
    const hint = eventIs(scan.named, 'ActionEvent.ToolOutcomeUnknown') ? `; its intent is ${scan.named.payload.intent_event_id}` : '';
    throw new OperatorResolutionRefusal('not_an_intent', `${id} is ${describeEvent(scan.named)}, not an ActionEvent.ExecutionIntentRecorded: only an execution intent has an outcome to resolve${hint}`);
  }
  const intent = scan.named;
  const open = state.open_intents[id];
  if (open === undefined) {
    const closedBy = scan.outcomes.at(-1);
    const by = closedBy ? describeEvent(closedBy) + (eventIs(closedBy, OperatorResolved.type) ? ` (operator ${closedBy.payload.operator}, ${closedBy.payload.resolution})` : '') : 'an event this check could not find';
    throw new OperatorResolutionRefusal('intent_closed', `intent ${id} (seq ${intent.seq}) is closed: its outcome was recorded by ${by}; there is nothing to resolve`);
  }
  if (open.outcome === 'pending') {
    throw new OperatorResolutionRefusal(
      'intent_pending',
      `intent ${id} (seq ${intent.seq}, ${open.op} ${open.path}) is pending, not unknown: no ActionEvent.ToolOutcomeUnknown was recorded for it. The runtime reconciles a pending intent itself when the instance is resumed (by the file's hash); an operator resolves only what it could not`,
    );
  }
  if (scan.lastUnknown === null) throw new OperatorResolutionRefusal('projection_refused', `the stored projection says intent ${id} has an unknown outcome, but no ActionEvent.ToolOutcomeUnknown names it: check the store with npm run replay`);
  return { unknown: scan.lastUnknown, intent };
}

/** The envelope a writer would store for `draft` after `head` (recorded_at is the wall clock: it is never projected). */
function envelopeAfter(head: Head, subjectId: string, draft: EventDraft): EventEnvelope {
  return envelopeOfDraft(draft, { subjectId, seq: head.seq + 1, previousHash: head.event_hash, recordedAt: new Date().toISOString() }).envelope;
}

/** Whether a row of the lifecycle table takes `trigger` from `from` (to whatever state). */
function tableHasRow(from: LifecycleState, trigger: LifecycleTrigger): boolean {
  return LIFECYCLE_TABLE.some(([f, t]) => f === from && t === trigger);
}

/** The envelope the writer would store, folded into the stored state: the projector's own verdict, before any writer is asked. */
export function dryRun(state: SubjectState, draft: EventDraft, scan: StoreScan): SubjectState {
  try {
    return subjectProjection.apply(state, envelopeAfter(scan.head, scan.opened.subject_id, draft));
  } catch (error) {
    if (!(error instanceof ProjectionRefusal)) throw error;
    const from = state.lifecycle_state;
    if (!tableHasRow(from, OperatorResolved.type)) {
      const takers = [...new Set(LIFECYCLE_TABLE.filter(([, t]) => t === OperatorResolved.type).map(([f]) => f))].join(', ');
      throw new OperatorResolutionRefusal(
        'lifecycle',
        `the subject is ${from}, and no row of the lifecycle table (state machine ${subjectProjection.stateMachineVersion}, projector/lifecycle.ts) takes SystemEvent.OperatorResolved from ${from} (rows exist from ${takers}), so the writer would refuse it (nothing was appended): ${error.message}`,
      );
    }
    throw new OperatorResolutionRefusal('projection_refused', `the Subject projector would refuse the statement, so the writer would too (nothing was appended): ${error.message}`);
  }
}

/** The last event a state has applied: where a further event would be chained, and the run's virtual now. */
export interface StateHead extends Head {
  readonly subject_id: string;
  readonly occurred_at: string;
}

/**
 * Where a SystemEvent.Resumed appended after `head` would take the subject in state `after`,
 * by the projector; null when the subject is not held (the table takes no Resumed from its state).
 */
export function lifecycleOnResume(after: SubjectState, head: StateHead): LifecycleState | null {
  if (!tableHasRow(after.lifecycle_state, 'SystemEvent.Resumed')) return null;
  const draft = resumedDraft(head.occurred_at, 'npm run repair', 'what a resume would find (not appended)');
  try {
    return subjectProjection.apply(after, envelopeAfter(head, head.subject_id, draft)).lifecycle_state;
  } catch (error) {
    if (!(error instanceof ProjectionRefusal)) throw error;
    return null;
  }
}
