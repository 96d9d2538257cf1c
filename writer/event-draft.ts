// Building a draft of one event type: the type's payload is required by the compiler (from the
// zod catalogue), its schema version is the catalogue's. Every production draft is made here,
// so a misspelt payload key or event type fails `tsc`, not the writer at run time.
import type { Actor } from '../schema/envelope.js';
import { schemaVersionOf, type EventType, type PayloadOf } from '../schema/event-catalog.js';
import type { EventDraft } from './protocol.js';

/** The envelope fields a draft's author decides (the writer adds the rest). */
export interface DraftFields {
  readonly occurred_at: string;
  readonly actor: Actor;
  readonly idempotency_key: string | null;
  readonly causation_id?: string | null;
  readonly correlation_id?: string | null;
}

/** A draft of `eventType` with that type's payload. */
export function draftOf<T extends EventType>(eventType: T, payload: PayloadOf<T>, fields: DraftFields): EventDraft {
  return {
    event_type: eventType,
    schema_version: schemaVersionOf(eventType),
    occurred_at: fields.occurred_at,
    actor: fields.actor,
    causation_id: fields.causation_id ?? null,
    correlation_id: fields.correlation_id ?? null,
    idempotency_key: fields.idempotency_key,
    payload: payload as Record<string, unknown>,
  };
}
