// One wake of one run as the side-by-side page shows it (issue 35 item 5): what the subject was
// shown — the seq its view reached, what arrived since its previous wake (world events, the
// interventions delivered), each call's context counts — and what it answered: each model call's answer as stored (raw_output) or its failure.
// The prompt's text itself is not in the record (a call records what it was built from and its
// counts; runtime/prompt.ts rebuilds it), so the page says that rather than show a rebuilt copy.
import type { EventEnvelope } from '../schema/envelope.js';
import type { PayloadOf } from '../schema/event-catalog.js';
import { eventIs } from '../schema/typed-event.js';
import type { AuditDesk, StoredEvent } from './audit-desk.js';
import type { WakeSpan } from './store-index.js';

/** Events of one wake read for its page; a wake of more is shown in part, and says so. */
export const MAX_WAKE_EVENTS = 2_000;
/** Events between the previous wake and this one read for its page (the first wake follows the whole set-up). */
export const MAX_ARRIVED_EVENTS = 200;

export interface WakeCall {
  readonly seq: number;
  readonly answered: boolean;
  readonly context: PayloadOf<'ModelOutputEvent.ModelAnswered'>['context'] | null;
  /** The answer as stored (a failed call's partial output, or null). */
  readonly raw_output: string | null;
  /** The failure kind and detail of a failed call; null for an answer. */
  readonly failure: string | null;
}

export interface WakeDelivery {
  readonly seq: number;
  readonly intervention_id: string;
  /** The delivered events, by seq (null: an id the store does not hold). */
  readonly delivered: readonly { readonly id: string; readonly event: EventEnvelope | null }[];
}

export interface WakeRecord {
  readonly span: WakeSpan;
  /** The events recorded since the run's previous wake ended (what is new in this wake's view: world events, deliveries), the last MAX_ARRIVED_EVENTS of them. */
  readonly arrived: readonly StoredEvent[];
  /** Events that arrived before those, not read. */
  readonly arrived_not_read: number;
  readonly visible_to_seq: number | null;
  readonly deliveries: readonly WakeDelivery[];
  readonly calls: readonly WakeCall[];
  readonly rows: readonly StoredEvent[];
  /** Events of the wake beyond MAX_WAKE_EVENTS, not read. */
  readonly not_read: number;
}

function callOf(event: EventEnvelope): WakeCall | null {
  if (eventIs(event, 'ModelOutputEvent.ModelAnswered')) {
    const p = event.payload as PayloadOf<'ModelOutputEvent.ModelAnswered'>;
    return { seq: event.seq, answered: true, context: p.context, raw_output: p.raw_output, failure: null };
  }
  if (eventIs(event, 'ModelOutputEvent.ModelCallFailed')) {
    const p = event.payload as PayloadOf<'ModelOutputEvent.ModelCallFailed'>;
    return { seq: event.seq, answered: false, context: p.context, raw_output: p.raw_output, failure: `${p.failure}: ${p.detail}` };
  }
  return null;
}

function deliveryOf(desk: AuditDesk, event: EventEnvelope): WakeDelivery | null {
  if (!eventIs(event, 'ExperimentEvent.InterventionDelivered')) return null;
  const p = event.payload as PayloadOf<'ExperimentEvent.InterventionDelivered'>;
  const delivered = p.event_ids.map((id) => {
    const seq = desk.seqOfEventId(id);
    return { id, event: seq === null ? null : desk.eventAt(seq) };
  });
  return { seq: event.seq, intervention_id: p.intervention_id, delivered };
}

/** The wake `wakeId` of the desk's run, read from its store; null when the run has no such wake. Call inside desk.within. */
export function wakeRecord(desk: AuditDesk, wakeId: string): WakeRecord | null {
  const at = desk.index.wakes.findIndex((w) => w.wake_id === wakeId);
  const span = desk.index.wakes[at];
  if (span === undefined) return null;
  const arrivedFrom = (desk.index.wakes[at - 1]?.ended_seq ?? 0) + 1;
  const firstRead = Math.max(arrivedFrom, span.started_seq - MAX_ARRIVED_EVENTS);
  const arrived: StoredEvent[] = [];
  const last = span.ended_seq ?? desk.index.head_seq;
  const end = Math.min(last, span.started_seq + MAX_WAKE_EVENTS - 1);
  const rows: StoredEvent[] = [];
  const calls: WakeCall[] = [];
  const deliveries: WakeDelivery[] = [];
  let visible: number | null = null;
  for (let seq = firstRead; seq <= end; seq += 1) {
    const row = desk.rowAt(seq);
    if (row === null) continue;
    (seq < span.started_seq ? arrived : rows).push(row);
    const event = row.event;
    if (event === null) continue;
    if (eventIs(event, 'ExperimentEvent.WakeStarted')) visible = (event.payload as PayloadOf<'ExperimentEvent.WakeStarted'>).visible_to_seq;
    const call = callOf(event);
    if (call !== null) calls.push(call);
    const delivery = deliveryOf(desk, event);
    if (delivery !== null) deliveries.push(delivery);
  }
  return { span, arrived, arrived_not_read: firstRead - arrivedFrom, visible_to_seq: visible, deliveries, calls, rows, not_read: last - end };
}
