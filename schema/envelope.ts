// The event envelope of spec §10.2 / DESIGN §4: every key always present, null where
// not applicable, stored as its RFC 8785 text.
import { z } from 'zod';
import { HashString } from './hash.js';
import { EVENT_CATEGORIES, SemVer } from './event-definition.js';

export const ACTORS = ['runtime', 'user', 'model', 'tool', 'experiment'] as const;
export const Actor = z.enum(ACTORS);
export type Actor = z.infer<typeof Actor>;

export const EventTypeName = z
  .string()
  .max(96)
  .regex(new RegExp(`^(${EVENT_CATEGORIES.join('|')})\\.[A-Z][A-Za-z0-9]*$`), 'expected "<Category>.<Name>" with a known category');

// Printable ASCII only: JSON.stringify and JCS agree on such strings, which lets the
// writer build the envelope text without a generic canonicaliser (see envelope-text.ts).
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;
export const IdempotencyKey = z.string().min(1).max(200).regex(PRINTABLE_ASCII, 'printable ASCII without spaces');
export const CorrelationId = z.string().min(1).max(128).regex(PRINTABLE_ASCII, 'printable ASCII without spaces');
export const SubjectId = z.string().min(1).max(128).regex(PRINTABLE_ASCII, 'printable ASCII without spaces');
export const JsonObject = z.record(z.string(), z.unknown());

export const EventEnvelope = z.strictObject({
  event_id: z.uuid(),
  subject_id: SubjectId,
  seq: z.number().int().min(1),
  event_type: EventTypeName,
  schema_version: SemVer,
  occurred_at: z.iso.datetime(),
  recorded_at: z.iso.datetime(),
  actor: Actor,
  causation_id: z.uuid().nullable(),
  correlation_id: CorrelationId.nullable(),
  idempotency_key: IdempotencyKey.nullable(),
  previous_event_hash: HashString,
  payload: JsonObject,
  payload_hash: HashString,
  event_hash: HashString,
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;
