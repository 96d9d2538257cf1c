// An event's payload as the current catalogue reads it (issue 15): checked against the schema of
// the version it was written under (a definition's `earlier` map), then lifted by the built-in
// upcasters to the current version and checked again. Every reader of recorded runs that types
// payloads (replay, scoring, blind review, the audit desk) goes through this, so an event of an
// earlier version is read the same way everywhere — never skipped as "not matching its schema".
// Pure: no I/O; the stored envelope is not changed.
import { deepFrozen } from '../foundation/deep-frozen.js';
import type { EventEnvelope } from './envelope.js';
import { eventDefinition, type EventType, type TypedEvent } from './event-catalog.js';
import { BUILT_IN_UPCASTERS, upcasterKey } from './upcasters.js';

export type CurrentPayload = { readonly ok: true; readonly event: TypedEvent } | { readonly ok: false; readonly reason: string };

/** At most this many upcast steps: more than any chain of versions this build knows. */
const MAX_UPCAST_STEPS = 8;

/**
 * Answers already given for frozen envelopes (a verify's kept events, writer/verified-events.ts,
 * which every check of a merged folder reads many times over): a frozen envelope cannot change,
 * and its answer is frozen too, so no reader can change it for the next. Others are read afresh.
 */
const ANSWERED = new WeakMap<object, CurrentPayload>();

export function currentPayloadOf(event: Pick<EventEnvelope, 'event_type' | 'schema_version' | 'payload' | 'seq'> & Partial<EventEnvelope>): CurrentPayload {
  if (!Object.isFrozen(event) || !Object.isFrozen(event.payload)) return readCurrentPayload(event);
  const known = ANSWERED.get(event);
  if (known !== undefined) return known;
  const answer = deepFrozen(readCurrentPayload(event));
  ANSWERED.set(event, answer);
  return answer;
}

function readCurrentPayload(event: Pick<EventEnvelope, 'event_type' | 'schema_version' | 'payload' | 'seq'> & Partial<EventEnvelope>): CurrentPayload {
  const definition = eventDefinition(event.event_type);
  if (!definition) return { ok: false, reason: `unknown event type ${event.event_type}` };
  const own = event.schema_version === definition.schemaVersion ? definition.payload : definition.earlier[event.schema_version];
  if (own === undefined) return { ok: false, reason: `schema version ${event.schema_version} of ${event.event_type} is not one this build reads (${[definition.schemaVersion, ...Object.keys(definition.earlier)].join(', ')})` };
  const checked = own.safeParse(event.payload);
  if (!checked.success) return { ok: false, reason: `the payload of ${event.event_type} ${event.schema_version} fails its schema: ${checked.error.issues[0]?.message ?? 'unknown issue'} at ${checked.error.issues[0]?.path.join('.') ?? '(root)'}` };
  let version = event.schema_version;
  let payload = event.payload as Record<string, unknown>;
  for (let step = 0; version !== definition.schemaVersion; step += 1) {
    const upcaster = BUILT_IN_UPCASTERS.get(upcasterKey(event.event_type, version));
    if (upcaster === undefined || step >= MAX_UPCAST_STEPS) return { ok: false, reason: `no upcaster lifts ${event.event_type} ${version} to ${definition.schemaVersion}` };
    const lifted = upcaster({ ...(event as EventEnvelope), schema_version: version, payload });
    version = lifted.schema_version;
    payload = lifted.payload;
  }
  const current = definition.payload.safeParse(payload);
  if (!current.success) return { ok: false, reason: `the payload of ${event.event_type} ${event.schema_version}, lifted to ${definition.schemaVersion}, fails its schema: ${current.error.issues[0]?.message ?? 'unknown issue'}` };
  return { ok: true, event: { event_type: event.event_type as EventType, payload: current.data } as TypedEvent };
}
