// The events the controller writes, as drafts (pure: times and ids come in as data). Every
// draft carries the deterministic idempotency key the run contract (design/run-contract.ts)
// gives it, so a controller that dies between an append and its answer — or is resumed with
// --resume — re-sends the very same draft and the writer answers with the original event
// instead of writing it twice (DESIGN §7's exactly-once, applied to the controller's own side
// effects). Each draft is typed by its event's payload (writer/event-draft.ts).
import type { Intervention } from '../design/intervention-plan.js';
import type { ScheduledWake } from '../design/wake-schedule.js';
import { CONTROLLER_KEYS, type WakeOutcome } from '../design/run-contract.js';
import type { LedgerUse } from '../design/budget-ledger.js';
import type { EventType, PayloadOf } from '../schema/event-catalog.js';
import { draftOf } from '../writer/event-draft.js';
import type { EventDraft } from '../writer/protocol.js';

/** The controller's own draft: actor `experiment`, no cause. */
function controllerDraft<T extends EventType>(eventType: T, occurredAt: string, idempotencyKey: string | null, payload: PayloadOf<T>, correlationId: string | null = null): EventDraft {
  return draftOf(eventType, payload, { occurred_at: occurredAt, actor: 'experiment', idempotency_key: idempotencyKey, correlation_id: correlationId });
}

export function subjectInitializedDraft(startAt: string, payload: PayloadOf<'SystemEvent.SubjectInitialized'>): EventDraft {
  return controllerDraft('SystemEvent.SubjectInitialized', startAt, CONTROLLER_KEYS.subjectInitialized, payload);
}

/** The planned events of one intervention, at its injection time (crash events: at the crash wake). */
export function interventionDrafts(intervention: Intervention, occurredAt: string): EventDraft[] {
  return intervention.events.map((event, index) =>
    controllerDraft(event.event_type, occurredAt, CONTROLLER_KEYS.interventionEvent(intervention.intervention_id, index), event.payload, intervention.intervention_id),
  );
}

export function deliveredDraft(wake: ScheduledWake, intervention: Intervention, eventIds: readonly string[]): EventDraft {
  return controllerDraft(
    'ExperimentEvent.InterventionDelivered',
    wake.wake_at,
    CONTROLLER_KEYS.delivered(wake.wake_id, intervention.intervention_id),
    { intervention_id: intervention.intervention_id, wake_id: wake.wake_id, event_ids: [...eventIds] },
    intervention.intervention_id,
  );
}

export function wakeStartedDraft(wake: ScheduledWake, visibleToSeq: number): EventDraft {
  return controllerDraft('ExperimentEvent.WakeStarted', wake.wake_at, CONTROLLER_KEYS.wakeStarted(wake.wake_id), { wake_id: wake.wake_id, visible_to_seq: visibleToSeq, budget: { ...wake.budget } });
}

export function wakeEndedDraft(wake: ScheduledWake, outcome: WakeOutcome): EventDraft {
  return controllerDraft('ExperimentEvent.WakeEnded', wake.wake_at, CONTROLLER_KEYS.wakeEnded(wake.wake_id), { wake_id: wake.wake_id, outcome });
}

/** Stops and resumes are operator acts: no idempotency key (two stops are two events). */
export function emergencyStoppedDraft(occurredAt: string, operator: string, reason: string): EventDraft {
  return controllerDraft('SystemEvent.EmergencyStopped', occurredAt, null, { operator, reason });
}

/** `costCapRaisedToUsd`: this instance's cost cap from this resume on, raised by the operator (design/cost-cap.ts); null: unchanged. */
export function resumedDraft(occurredAt: string, operator: string, reason: string, costCapRaisedToUsd: number | null = null): EventDraft {
  return controllerDraft('SystemEvent.Resumed', occurredAt, null, { operator, reason, cost_cap_raised_to_usd: costCapRaisedToUsd });
}

/**
 * An operator's statement about an unknown tool outcome (DESIGN §7; `npm run repair`,
 * controller/operator-resolution.ts). Actor `user`, not `experiment`: the envelope's actor
 * says whose word the event is — the runtime role writes `model` and `tool` for what its
 * model said and its tools observed — and this is a person's word about the workspace that
 * no part of the apparatus observed or checked. The controller's own acts (stops, resumes,
 * heads) stay `experiment`, with the operator named in the payload. Caused by the
 * ToolOutcomeUnknown it answers.
 */
export function operatorResolvedDraft(occurredAt: string, unknownOutcomeEventId: string, payload: PayloadOf<'SystemEvent.OperatorResolved'>): EventDraft {
  return draftOf('SystemEvent.OperatorResolved', { ...payload }, { occurred_at: occurredAt, actor: 'user', idempotency_key: CONTROLLER_KEYS.operatorResolved(payload.intent_event_id), causation_id: unknownOutcomeEventId });
}

/** The subject's checkpoint of a wake (spec §9.4), as the runtime reported it: recorded for every group at the same step. */
export function checkpointDraft(wake: ScheduledWake, checkpoint: Omit<PayloadOf<'ExperimentEvent.CheckpointRecorded'>, 'wake_id'>): EventDraft {
  return controllerDraft('ExperimentEvent.CheckpointRecorded', wake.wake_at, CONTROLLER_KEYS.checkpoint(wake.wake_id), { wake_id: wake.wake_id, ...checkpoint });
}

/** The wake's budget ledger, counted by the controller from the store (never taken from the runtime's word). */
export function ledgerDraft(wake: ScheduledWake, used: LedgerUse): EventDraft {
  return controllerDraft('ExperimentEvent.BudgetLedgerRecorded', wake.wake_at, CONTROLLER_KEYS.ledger(wake.wake_id), { wake_id: wake.wake_id, granted: { ...wake.budget }, used: { ...used } });
}
