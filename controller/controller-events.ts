// The events the controller writes, as drafts (pure: times and ids come in as data).
// Every draft carries a deterministic idempotency key, so a controller that dies between
// an append and its answer — or is resumed with --resume — re-sends the very same draft and
// the writer answers with the original event instead of writing it twice (DESIGN §7's
// exactly-once, applied to the controller's own side effects). The key scheme is the
// contract controller/plan-conformance.ts checks: docs/controller.md lists it.
import type { Intervention, PlannedEvent } from './intervention-plan.js';
import type { ScheduledWake } from './wake-schedule.js';
import { schemaVersionOf, type EventType, type PayloadOf } from '../schema/event-catalog.js';
import type { EventDraft } from '../writer/protocol.js';

export const CONTROLLER_KEYS = {
  subjectInitialized: 'subject-initialized',
  interventionEvent: (interventionId: string, index: number) => `intervention:${interventionId}:${index}`,
  delivered: (wakeId: string, interventionId: string) => `wake:${wakeId}:delivered:${interventionId}`,
  wakeStarted: (wakeId: string) => `wake:${wakeId}:started`,
  wakeEnded: (wakeId: string) => `wake:${wakeId}:ended`,
  checkpoint: (wakeId: string) => `wake:${wakeId}:checkpoint`,
  ledger: (wakeId: string) => `wake:${wakeId}:ledger`,
  /** One statement per intent: `npm run repair` repeated is answered with the recorded one. */
  operatorResolved: (intentEventId: string) => `operator-resolved:${intentEventId}`,
} as const;

export type WakeOutcome = 'completed' | 'crashed' | 'stopped';

/** Interventions whose events are written when the world changes (not at a crash, not an absence). */
export function isWorldIntervention(intervention: Intervention): boolean {
  return intervention.kind !== 'runtime_crash' && intervention.kind !== 'writer_crash' && intervention.kind !== 'long_absence';
}

export function isCrashIntervention(intervention: Intervention): intervention is Extract<Intervention, { kind: 'runtime_crash' | 'writer_crash' }> {
  return intervention.kind === 'runtime_crash' || intervention.kind === 'writer_crash';
}

function draft(eventType: EventType, occurredAt: string, idempotencyKey: string, payload: Record<string, unknown>, correlationId: string | null = null): EventDraft {
  return {
    event_type: eventType,
    schema_version: schemaVersionOf(eventType),
    occurred_at: occurredAt,
    actor: 'experiment',
    causation_id: null,
    correlation_id: correlationId,
    idempotency_key: idempotencyKey,
    payload,
  };
}

export function subjectInitializedDraft(startAt: string, payload: Record<string, unknown>): EventDraft {
  return draft('SystemEvent.SubjectInitialized', startAt, CONTROLLER_KEYS.subjectInitialized, payload);
}

/** The planned events of one intervention, at its injection time (crash events: at the crash wake). */
export function interventionDrafts(intervention: Intervention, occurredAt: string): EventDraft[] {
  const planned: readonly PlannedEvent[] = intervention.events;
  return planned.map((event, index) =>
    draft(event.event_type, occurredAt, CONTROLLER_KEYS.interventionEvent(intervention.intervention_id, index), event.payload, intervention.intervention_id),
  );
}

export function deliveredDraft(wake: ScheduledWake, intervention: Intervention, eventIds: readonly string[]): EventDraft {
  return draft(
    'ExperimentEvent.InterventionDelivered',
    wake.wake_at,
    CONTROLLER_KEYS.delivered(wake.wake_id, intervention.intervention_id),
    { intervention_id: intervention.intervention_id, wake_id: wake.wake_id, event_ids: [...eventIds] },
    intervention.intervention_id,
  );
}

export function wakeStartedDraft(wake: ScheduledWake, visibleToSeq: number): EventDraft {
  return draft('ExperimentEvent.WakeStarted', wake.wake_at, CONTROLLER_KEYS.wakeStarted(wake.wake_id), { wake_id: wake.wake_id, visible_to_seq: visibleToSeq, budget: { ...wake.budget } });
}

export function wakeEndedDraft(wake: ScheduledWake, outcome: WakeOutcome): EventDraft {
  return draft('ExperimentEvent.WakeEnded', wake.wake_at, CONTROLLER_KEYS.wakeEnded(wake.wake_id), { wake_id: wake.wake_id, outcome });
}

/** Stops and resumes are operator acts: no idempotency key (two stops are two events). */
export function emergencyStoppedDraft(occurredAt: string, operator: string, reason: string): EventDraft {
  return { ...draft('SystemEvent.EmergencyStopped', occurredAt, '', { operator, reason }), idempotency_key: null };
}

export function resumedDraft(occurredAt: string, operator: string, reason: string): EventDraft {
  return { ...draft('SystemEvent.Resumed', occurredAt, '', { operator, reason }), idempotency_key: null };
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
  return {
    ...draft('SystemEvent.OperatorResolved', occurredAt, CONTROLLER_KEYS.operatorResolved(payload.intent_event_id), { ...payload }),
    actor: 'user',
    causation_id: unknownOutcomeEventId,
  };
}

/** The subject's checkpoint of a wake (spec §9.4), as the runtime reported it: recorded for every group at the same step. */
export function checkpointDraft(wake: ScheduledWake, checkpoint: Record<string, unknown>): EventDraft {
  return draft('ExperimentEvent.CheckpointRecorded', wake.wake_at, CONTROLLER_KEYS.checkpoint(wake.wake_id), { wake_id: wake.wake_id, ...checkpoint });
}

export interface LedgerUse {
  readonly model_calls: number;
  readonly tokens: number;
  readonly tool_calls: number;
  readonly retries: number;
}

/** The wake's budget ledger, counted by the controller from the store (never taken from the runtime's word). */
export function ledgerDraft(wake: ScheduledWake, used: LedgerUse): EventDraft {
  return draft('ExperimentEvent.BudgetLedgerRecorded', wake.wake_at, CONTROLLER_KEYS.ledger(wake.wake_id), { wake_id: wake.wake_id, granted: { ...wake.budget }, used: { ...used } });
}
