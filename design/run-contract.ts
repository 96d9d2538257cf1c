// The run contract: what the controller writes into a store, under which idempotency keys, in
// which order, for a given plan. One module, two readers: the controller takes what to write
// from it (controller/wake-sequence.ts, controller/controller-events.ts) and the run verifier
// checks a store against it (verification/). A key or a step changed here changes both sides
// together; docs/controller.md describes it in words.
//
// The order (every controller event with actor 'experiment'; OperatorResolved is an operator's):
//   SubjectInitialized at schedule.start_at, key `subject-initialized`; then per wake W, in
//   schedule order (wakeScriptOf):
//   a. inject — the world interventions not yet written with inject_minute ≤ W.at_minute, by
//      inject_minute then plan order: their planned events, each at inject_at, key
//      `intervention:<id>:<i>`, correlation_id = the intervention id;
//   b. deliver — InterventionDelivered {intervention_id, wake_id: W, event_ids} for those
//      delivered at W;
//   c. WakeStarted {wake_id, visible_to_seq = its seq − 1, budget};
//   d. the runtime's events (the contract leaves them to the runtime);
//   e. crash — on a crash wake: the crash's planned ProcessRestarted, then its InterventionDelivered;
//   e'. CheckpointRecorded (when the runtime reported one) and BudgetLedgerRecorded (always);
//   f. WakeEnded {outcome: 'crashed' on a crash wake, else 'completed'}, or 'stopped'.
import type { Intervention } from './intervention-plan.js';
import type { ExperimentPlan } from './experiment-plan.js';
import type { ScheduledWake } from './wake-schedule.js';

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

/** A planned intervention event's key, read back: which intervention, which of its events. */
export interface InterventionEventKey {
  readonly interventionId: string;
  readonly index: number;
}

/** The inverse of CONTROLLER_KEYS.interventionEvent; null for any other key. */
export function parseInterventionEventKey(key: string | null): InterventionEventKey | null {
  if (key === null) return null;
  const prefix = CONTROLLER_KEYS.interventionEvent('', 0).slice(0, -':0'.length);
  if (!key.startsWith(prefix)) return null;
  const at = key.lastIndexOf(':');
  const interventionId = key.slice(prefix.length, at);
  const index = key.slice(at + 1);
  if (interventionId === '' || !/^\d+$/.test(index)) return null;
  // Round trip: whatever the key scheme becomes, a parsed key is one the scheme makes.
  if (CONTROLLER_KEYS.interventionEvent(interventionId, Number(index)) !== key) return null;
  return { interventionId, index: Number(index) };
}

export type CrashIntervention = Extract<Intervention, { kind: 'runtime_crash' | 'writer_crash' }>;

/** Interventions whose events are written when the world changes (not at a crash, not an absence). */
export function isWorldIntervention(intervention: Intervention): boolean {
  return intervention.kind !== 'runtime_crash' && intervention.kind !== 'writer_crash' && intervention.kind !== 'long_absence';
}

/** The planned crashes: their events are written in their wake, when the process is restarted. */
export function isCrashIntervention(intervention: Intervention): intervention is CrashIntervention {
  return intervention.kind === 'runtime_crash' || intervention.kind === 'writer_crash';
}

/** Whether an InterventionDelivered is ever written for it: all but the long absence (the absence of wakes). */
export function isDeliveredByEvent(intervention: Intervention): boolean {
  return intervention.kind !== 'long_absence';
}

export type PlannedWakeOutcome = 'completed' | 'crashed';
export type WakeOutcome = PlannedWakeOutcome | 'stopped';

/** What the controller writes around one wake (steps a, b, e, f above). */
export interface WakeScript {
  readonly wake: ScheduledWake;
  /** a. World interventions whose events are written before this wake, in writing order. */
  readonly inject: readonly Intervention[];
  /** b. World interventions delivered at this wake (InterventionDelivered before WakeStarted). */
  readonly deliver: readonly Intervention[];
  /**
   * e. The planned crashes of this wake, in plan order: at most one in a plan the builder made
   * (design/plan-invariants.ts); a plan.json under check may say anything, so this is a list.
   */
  readonly crashes: readonly CrashIntervention[];
  /** f. The outcome WakeEnded records when the wake is not stopped. */
  readonly outcome: PlannedWakeOutcome;
}

/** The script of every wake of a plan, in schedule order. Pure. */
export function wakeScriptOf(plan: ExperimentPlan): WakeScript[] {
  const world = plan.interventions.filter(isWorldIntervention);
  const crashes = plan.interventions.filter(isCrashIntervention);
  const injected = new Set<string>();
  return plan.schedule.wakes.map((wake) => {
    // Stable sort: ties keep plan order.
    const inject = world.filter((iv) => !injected.has(iv.intervention_id) && iv.inject_minute <= wake.at_minute).sort((x, y) => x.inject_minute - y.inject_minute);
    for (const iv of inject) injected.add(iv.intervention_id);
    const deliver = world.filter((iv) => iv.deliver_wake_id === wake.wake_id && iv.events.length > 0);
    const here = crashes.filter((iv) => iv.deliver_wake_id === wake.wake_id);
    return { wake, inject, deliver, crashes: here, outcome: here.length > 0 ? 'crashed' : 'completed' };
  });
}
