// Checks an append request before it reaches the store: limits, known event types,
// the caller's role, the actor it may claim, and the payload against its schema.
import { z } from 'zod';
import type { Actor } from '../schema/envelope.js';
import type { WriterRole } from '../schema/event-definition.js';
import { eventDefinition } from '../schema/event-catalog.js';
import { WRITER_LIMITS, WriterError, type EventDraft } from './protocol.js';

/** Actors a role may put in the envelope: the runtime speaks for itself, its model and its tools. */
const ACTORS_BY_ROLE: Record<WriterRole, readonly Actor[]> = {
  runtime: ['runtime', 'model', 'tool'],
  experiment: ['experiment', 'user'],
};

export function validateDrafts(drafts: readonly EventDraft[], role: WriterRole): EventDraft[] {
  if (drafts.length > WRITER_LIMITS.maxBatchEvents) {
    throw new WriterError('limit_exceeded', `a batch holds at most ${WRITER_LIMITS.maxBatchEvents} events; got ${drafts.length}`, { limit: 'maxBatchEvents' });
  }
  return drafts.map((draft, index) => {
    const at = `event ${index} (${draft.event_type})`;
    const definition = eventDefinition(draft.event_type);
    if (!definition) throw new WriterError('schema', `${at}: unknown event type`, { index });
    if (!definition.writers.includes(role)) {
      throw new WriterError('role_forbidden', `${at}: role ${role} may not append ${definition.category} events of this type`, { index });
    }
    if (!ACTORS_BY_ROLE[role].includes(draft.actor)) {
      throw new WriterError('role_forbidden', `${at}: role ${role} may not write actor ${JSON.stringify(draft.actor)} (allowed: ${ACTORS_BY_ROLE[role].join(', ')})`, { index });
    }
    if (draft.schema_version !== definition.schemaVersion) {
      throw new WriterError('schema', `${at}: schema_version ${draft.schema_version} is not the catalogue's ${definition.schemaVersion}`, { index });
    }
    const payloadBytes = Buffer.byteLength(JSON.stringify(draft.payload));
    if (payloadBytes > WRITER_LIMITS.maxPayloadBytes) {
      throw new WriterError('limit_exceeded', `${at}: payload is ${payloadBytes} bytes; the limit is ${WRITER_LIMITS.maxPayloadBytes}`, { index, limit: 'maxPayloadBytes' });
    }
    const parsed = definition.payload.safeParse(draft.payload);
    if (!parsed.success) throw new WriterError('schema', `${at}: payload does not match its schema: ${z.prettifyError(parsed.error)}`, { index });
    return { ...draft, payload: parsed.data as Record<string, unknown> };
  });
}
