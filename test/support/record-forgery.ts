// Forged RunRecords for oracle tests: copies of a real run's record with events edited,
// inserted or re-pointed in memory. Hashes and signatures are left stale on purpose: the
// oracle's detectors read what events say, so a forgery needs no re-hashing to be caught.
import { randomUUID } from 'node:crypto';
import type { RunRecord } from '../../oracle/run-record.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { schemaVersionOf, type EventType } from '../../schema/event-catalog.js';
import { GENESIS_HASH } from '../../schema/hash.js';

/** A deep copy: edits to it never reach the original. */
export function cloneRecord(record: RunRecord): RunRecord {
  return { ...record, events: structuredClone(record.events) as EventEnvelope[] };
}

/** The event at `seq`; throws when there is none (a test looking for the wrong thing). */
export function eventAt(record: RunRecord, seq: number): EventEnvelope {
  const event = record.events.find((e) => e.seq === seq);
  if (!event) throw new Error(`forgery: no event at seq ${seq}`);
  return event;
}

/** A copy with the payload of the event at `seq` changed by `edit`. */
export function editPayload(record: RunRecord, seq: number, edit: (payload: Record<string, unknown>) => void): RunRecord {
  const copy = cloneRecord(record);
  edit(eventAt(copy, seq).payload);
  return copy;
}

/** A new event of `type`, placed later by insertAfter (which gives it its seq). */
export function forgedEvent(record: RunRecord, type: EventType, payload: Record<string, unknown>, actor: EventEnvelope['actor'] = 'runtime'): EventEnvelope {
  const first = record.events[0];
  if (!first) throw new Error('forgery: the record has no events');
  return {
    event_id: randomUUID(),
    subject_id: first.subject_id,
    seq: 0,
    event_type: type,
    schema_version: schemaVersionOf(type),
    occurred_at: first.occurred_at,
    recorded_at: first.recorded_at,
    actor,
    causation_id: null,
    correlation_id: null,
    idempotency_key: null,
    previous_event_hash: GENESIS_HASH,
    payload,
    payload_hash: GENESIS_HASH,
    event_hash: GENESIS_HASH,
  };
}

/** A copy of an existing event under a new event_id (a replayed write, say). */
export function duplicateOf(event: EventEnvelope): EventEnvelope {
  return { ...structuredClone(event), event_id: randomUUID(), idempotency_key: null };
}

/**
 * A copy with `inserted` placed right after the event at `afterSeq`, every later event
 * renumbered; returns the seqs the inserted events got.
 */
export function insertAfter(record: RunRecord, afterSeq: number, inserted: readonly EventEnvelope[]): { record: RunRecord; seqs: number[] } {
  const events = structuredClone(record.events) as EventEnvelope[];
  const at = events.findIndex((e) => e.seq === afterSeq);
  if (at < 0) throw new Error(`forgery: no event at seq ${afterSeq}`);
  events.splice(at + 1, 0, ...structuredClone(inserted));
  events.forEach((e, i) => (e.seq = i + 1));
  return { record: { ...record, events }, seqs: inserted.map((_, i) => afterSeq + 1 + i) };
}
