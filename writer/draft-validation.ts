// Checks an append request before it reaches the store: limits, known event types,
// the caller's role, the actor it may claim, and the payload against its schema.
import { z } from 'zod';
import { canonicalJson, NotJsonError } from '../schema/canonical-json.js';
import type { Actor } from '../schema/envelope.js';
import type { WriterRole } from '../schema/event-definition.js';
import { eventDefinition } from '../schema/event-catalog.js';
import { WRITER_LIMITS, WriterError, type EventDraft } from './protocol.js';

/** Actors a role may put in the envelope: the runtime speaks for itself, its model and its tools. */
const ACTORS_BY_ROLE: Record<WriterRole, readonly Actor[]> = {
  runtime: ['runtime', 'model', 'tool'],
  experiment: ['experiment', 'user'],
};

/** A draft that passed every check, with its payload's canonical text computed once. */
export type ValidatedDraft = EventDraft & { readonly payloadText: string };

export function validateDrafts(drafts: readonly EventDraft[], role: WriterRole): ValidatedDraft[] {
  if (drafts.length > WRITER_LIMITS.maxBatchEvents) {
    throw new WriterError('limit_exceeded', `a batch holds at most ${WRITER_LIMITS.maxBatchEvents} events; got ${drafts.length}`, { limit: 'maxBatchEvents' });
  }
  return drafts.map((draft, index) => {
    // event_type passed the envelope's pattern but may still be one the catalogue lacks.
    const at = `event ${index} (${draft.event_type})`;
    const definition = eventDefinition(draft.event_type);
    if (!definition) throw new WriterError('schema', `${at}: unknown event type`, { index }, { recordNote: `event ${index}: unknown event type` });
    if (!definition.writers.includes(role)) {
      throw new WriterError('role_forbidden', `${at}: role ${role} may not append ${definition.category} events of this type`, { index });
    }
    if (!ACTORS_BY_ROLE[role].includes(draft.actor)) {
      throw new WriterError('role_forbidden', `${at}: role ${role} may not write actor ${JSON.stringify(draft.actor)} (allowed: ${ACTORS_BY_ROLE[role].join(', ')})`, { index });
    }
    if (draft.schema_version !== definition.schemaVersion) {
      throw new WriterError('schema', `${at}: schema_version ${draft.schema_version} is not the catalogue's ${definition.schemaVersion}`, { index });
    }
    // Size first, before the schema walks a payload of any size.
    let payloadText: string;
    try {
      payloadText = canonicalJson(draft.payload);
    } catch (error) {
      if (!(error instanceof NotJsonError)) throw error;
      throw new WriterError('schema', `${at}: payload has no canonical JSON form: ${error.message}`, { index }, { recordNote: `event ${index}: payload has no canonical JSON form` });
    }
    const payloadBytes = Buffer.byteLength(payloadText);
    if (payloadBytes > WRITER_LIMITS.maxPayloadBytes) {
      throw new WriterError('limit_exceeded', `${at}: payload is ${payloadBytes} bytes; the limit is ${WRITER_LIMITS.maxPayloadBytes}`, { index, limit: 'maxPayloadBytes' });
    }
    // Payload schemas only validate (strict objects, no defaults or transforms), so the
    // payload stored and hashed is exactly the one the caller sent.
    const parsed = definition.payload.safeParse(draft.payload);
    if (!parsed.success) {
      throw new WriterError('schema', `${at}: payload does not match its schema: ${z.prettifyError(parsed.error)}`, { index }, {
        recordNote: `event ${index}: payload does not match the ${definition.type} schema`,
      });
    }
    return { ...draft, payloadText };
  });
}
