// Event types and payloads as the compiler sees them. An envelope read from a store says its
// type as a plain string (old stores, foreign tools); these helpers are how code asks about it,
// so that every event type named in code is checked against the catalogue's union: a misspelt
// type, or a payload key the type does not have, is a compile error rather than a refusal the
// writer records forever as an AppendRejected.
import type { EventEnvelope } from './envelope.js';
import type { EventType, PayloadOf } from './event-catalog.js';

/** An envelope known to be of type T, with T's payload (as the catalogue's schema gives it). */
export type EnvelopeOf<T extends EventType> = Omit<EventEnvelope, 'event_type' | 'payload'> & { readonly event_type: T; readonly payload: PayloadOf<T> };

/**
 * Whether `event` is of type `type`; narrows its payload to that type's. The payload is not
 * parsed here: a store's events were checked against their schema when they were written (and
 * an old one is upcast when read), so this trusts what the writer accepted.
 */
export function eventIs<T extends EventType>(event: Pick<EventEnvelope, 'event_type' | 'payload'>, type: T): event is EnvelopeOf<T> {
  return event.event_type === type;
}

/** Whether `event` is of one of `types`. */
export function eventIsOneOf<T extends EventType>(event: Pick<EventEnvelope, 'event_type' | 'payload'>, types: readonly T[]): event is EnvelopeOf<T> {
  return (types as readonly string[]).includes(event.event_type);
}
