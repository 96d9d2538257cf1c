// The controller's writes a plan implies, one item per event, in the order the run contract
// (design/run-contract.ts) writes them: what the store walk (store-walk.ts) matches events
// against. Every key comes from CONTROLLER_KEYS and every step from wakeScriptOf, so a key or a
// step changed in the contract changes what is expected here too. Also how an item is named in
// a finding, and how missing items are summed up (a skipped wake or a 60-event burst is one
// line, not 60).
//
// A slot is what identifies an event in the store independently of its key, so that an event
// with a wrong key is still recognised and its key reported: a wake's events by their payload's
// wake_id (and intervention_id), an intervention's events by their key (nothing else names them).
import type { ExperimentPlan } from '../design/experiment-plan.js';
import type { Intervention, PlannedEvent } from '../design/intervention-plan.js';
import { CONTROLLER_KEYS, wakeScriptOf, type PlannedWakeOutcome } from '../design/run-contract.js';
import type { ScheduledWake } from '../design/wake-schedule.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { EventCategory } from '../schema/event-definition.js';
import { InterventionDelivered, WakeEnded, WakeStarted } from '../schema/events/experiment-events.js';
import { ProcessRestarted, SubjectInitialized } from '../schema/events/system-events.js';

/** How many wake ids a summary line names before it says "…". */
export const MAX_IDS_NAMED = 8;

export type ItemKind = 'subject-initialized' | 'intervention-event' | 'delivered' | 'started' | 'ended';

export interface ScriptItem {
  readonly kind: ItemKind;
  /** What identifies the event in the store (see slotOf). */
  readonly slot: string;
  readonly key: string;
  readonly event_type: string;
  readonly occurred_at: string;
  /** What occurred_at must equal, in words. */
  readonly occurred_at_is: string;
  /** null: the contract does not fix it. */
  readonly correlation_id: string | null;
  /** The wake whose steps write it; null for SubjectInitialized. */
  readonly wake_id: string | null;
  /** True for the steps after WakeStarted (crash events, WakeEnded): a stop abandons them. */
  readonly in_wake: boolean;
  readonly intervention_id: string | null;
  readonly index: number | null;
  readonly payload: PlannedEvent['payload'] | null;
  readonly wake: ScheduledWake | null;
  readonly outcome: PlannedWakeOutcome | null;
}

export function describe(item: ScriptItem): string {
  switch (item.kind) {
    case 'subject-initialized':
      return SubjectInitialized.type;
    case 'intervention-event':
      return `event ${item.index} (${item.event_type}) of intervention ${item.intervention_id}`;
    case 'delivered':
      return `InterventionDelivered of ${item.intervention_id} at ${item.wake_id}`;
    case 'started':
      return `WakeStarted of ${item.wake_id}`;
    case 'ended':
      return `WakeEnded of ${item.wake_id}`;
  }
}

// Slots of the events a wake's payload names (the verifier's own identities, not keys).
const startedSlot = (wakeId: string | null): string => `started:${wakeId}`;
const endedSlot = (wakeId: string | null): string => `ended:${wakeId}`;
const deliveredSlot = (wakeId: string | null, interventionId: string | null): string => `delivered:${wakeId}:${interventionId}`;
const SUBJECT_INITIALIZED_SLOT = 'subject-initialized';

/** Every controller event of a finished run, in the order the contract writes them. */
export function scriptOf(plan: ExperimentPlan): ScriptItem[] {
  const items: ScriptItem[] = [];
  const base = { correlation_id: null, intervention_id: null, index: null, payload: null, wake: null, outcome: null, in_wake: false } as const;
  items.push({
    ...base,
    kind: 'subject-initialized',
    slot: SUBJECT_INITIALIZED_SLOT,
    key: CONTROLLER_KEYS.subjectInitialized,
    event_type: SubjectInitialized.type,
    occurred_at: plan.schedule.start_at,
    occurred_at_is: 'schedule.start_at',
    wake_id: null,
  });
  const eventItems = (iv: Intervention, wake: ScheduledWake, occurredAt: string, occurredAtIs: string, inWake: boolean, correlation: string | null): ScriptItem[] =>
    iv.events.map((e, index) => ({
      ...base,
      kind: 'intervention-event' as const,
      slot: CONTROLLER_KEYS.interventionEvent(iv.intervention_id, index),
      key: CONTROLLER_KEYS.interventionEvent(iv.intervention_id, index),
      event_type: e.event_type,
      occurred_at: occurredAt,
      occurred_at_is: occurredAtIs,
      correlation_id: correlation,
      wake_id: wake.wake_id,
      in_wake: inWake,
      intervention_id: iv.intervention_id,
      index,
      payload: e.payload,
    }));
  const delivered = (iv: Intervention, wake: ScheduledWake, inWake: boolean): ScriptItem => ({
    ...base,
    kind: 'delivered',
    slot: deliveredSlot(wake.wake_id, iv.intervention_id),
    key: CONTROLLER_KEYS.delivered(wake.wake_id, iv.intervention_id),
    event_type: InterventionDelivered.type,
    occurred_at: wake.wake_at,
    occurred_at_is: `${wake.wake_id}'s wake_at`,
    wake_id: wake.wake_id,
    in_wake: inWake,
    intervention_id: iv.intervention_id,
    wake,
  });
  for (const step of wakeScriptOf(plan)) {
    const { wake } = step;
    for (const iv of step.inject) items.push(...eventItems(iv, wake, iv.inject_at, `${iv.intervention_id}'s inject_at`, false, iv.intervention_id));
    for (const iv of step.deliver) items.push(delivered(iv, wake, false));
    items.push({
      ...base,
      kind: 'started',
      slot: startedSlot(wake.wake_id),
      key: CONTROLLER_KEYS.wakeStarted(wake.wake_id),
      event_type: WakeStarted.type,
      occurred_at: wake.wake_at,
      occurred_at_is: `${wake.wake_id}'s wake_at`,
      wake_id: wake.wake_id,
      wake,
    });
    // A plan the builder made has at most one crash per wake; a forged plan.json may have more, and each is expected.
    for (const iv of step.crashes) {
      items.push(...eventItems(iv, wake, wake.wake_at, `${wake.wake_id}'s wake_at (a crash is written in its wake)`, true, null));
      items.push(delivered(iv, wake, true));
    }
    items.push({
      ...base,
      kind: 'ended',
      slot: endedSlot(wake.wake_id),
      key: CONTROLLER_KEYS.wakeEnded(wake.wake_id),
      event_type: WakeEnded.type,
      occurred_at: wake.wake_at,
      occurred_at_is: `${wake.wake_id}'s wake_at`,
      wake_id: wake.wake_id,
      in_wake: true,
      wake,
      outcome: step.outcome,
    });
  }
  return items;
}

/** A payload field read as a string, or null when it is anything else (a forged store may hold anything). */
export const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The category of a stored event's type (an envelope's type always has one: schema/envelope.ts). */
export function categoryOf(eventType: string): EventCategory | null {
  const parsed = EventCategory.safeParse(eventType.split('.')[0]);
  return parsed.success ? parsed.data : null;
}

/** The slot an event claims to fill, or null when it is no kind of event the contract writes. */
export function slotOf(env: EventEnvelope): string | null {
  // The raw payload, not a parsed one: a forged event must still be placed, and its payload is compared on match.
  const p = env.payload;
  switch (env.event_type) {
    case SubjectInitialized.type:
      return SUBJECT_INITIALIZED_SLOT;
    case WakeStarted.type:
      return startedSlot(str(p.wake_id));
    case WakeEnded.type:
      return endedSlot(str(p.wake_id));
    case InterventionDelivered.type:
      return deliveredSlot(str(p.wake_id), str(p.intervention_id));
    case ProcessRestarted.type:
      return env.idempotency_key ?? `unplanned:${env.seq}`;
    default:
      if (categoryOf(env.event_type) === 'WorldEvent') return env.idempotency_key ?? `unplanned:${env.seq}`;
      return null;
  }
}

export function nameIds(ids: readonly string[]): string {
  return ids.length <= MAX_IDS_NAMED ? ids.join(', ') : `${ids.slice(0, MAX_IDS_NAMED).join(', ')}, … (${ids.length})`;
}

export interface Gap {
  /** Wakes whose WakeStarted is missing; their WakeStarted and WakeEnded are not listed again (their deliveries are). */
  readonly wakes: string[];
  /** Interventions with missing events, one entry each rather than one per event. */
  readonly interventions: { id: string; span: string }[];
  readonly others: ScriptItem[];
}

/** Missing script items, grouped: a skipped wake or a 60-event burst is one line, not 60. */
export function summarize(items: readonly ScriptItem[]): Gap {
  const wakes = [...new Set(items.filter((i) => i.kind === 'started').map((i) => i.wake_id as string))];
  const skippedWakes = new Set(wakes);
  const byIntervention = new Map<string, ScriptItem[]>();
  const others: ScriptItem[] = [];
  for (const item of items) {
    if (item.kind === 'intervention-event') {
      const list = byIntervention.get(item.intervention_id as string) ?? [];
      list.push(item);
      byIntervention.set(item.intervention_id as string, list);
    } else if (!((item.kind === 'started' || item.kind === 'ended') && item.wake_id !== null && skippedWakes.has(item.wake_id))) others.push(item);
  }
  const interventions = [...byIntervention].map(([id, list]) => {
    const indexes = list.map((i) => i.index as number);
    const span = indexes.length === 1 ? `event ${indexes[0]}` : `events ${indexes[0]}–${indexes.at(-1)}`;
    return { id, span: `${span} (${list[0]?.event_type})` };
  });
  return { wakes, interventions, others };
}
