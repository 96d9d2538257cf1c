// Builds an envelope's JCS text and hashes without a generic canonicaliser: the hot
// path of every append. Equality with canonicalJson() is asserted by
// test/envelope-text.test.ts; the verifier always uses the generic one, so a bug here
// would be caught as "stored text is not canonical", never silently accepted.
//
// Correct only because every envelope string field is printable ASCII or a fixed
// format (uuid, ISO time, hash, enum), so JSON.stringify emits exactly JCS for it, and
// because the keys below are in JCS (UTF-16 code unit) order.
import { canonicalJson } from '../schema/canonical-json.js';
import type { Actor, EventEnvelope } from '../schema/envelope.js';
import { eventIdFor } from '../schema/envelope-hash.js';
import { hashText, type HashString } from '../schema/hash.js';
import type { EventDraft } from './protocol.js';

export interface EnvelopeFields {
  readonly event_id: string;
  readonly subject_id: string;
  readonly seq: number;
  readonly event_type: string;
  readonly schema_version: string;
  readonly occurred_at: string;
  readonly recorded_at: string;
  readonly actor: Actor;
  readonly causation_id: string | null;
  readonly correlation_id: string | null;
  readonly idempotency_key: string | null;
  readonly previous_event_hash: HashString;
}

export interface BuiltEnvelope {
  readonly text: string;
  readonly payloadHash: HashString;
  readonly eventHash: HashString;
}

const s = JSON.stringify;

/** `payloadText` must be the JCS text of the payload (canonicalJson). */
export function buildEnvelopeText(f: EnvelopeFields, payloadText: string): BuiltEnvelope {
  const payloadHash = hashText(payloadText);
  const head = `{"actor":${s(f.actor)},"causation_id":${s(f.causation_id)},"correlation_id":${s(f.correlation_id)},`;
  const tail =
    `"event_id":${s(f.event_id)},"event_type":${s(f.event_type)},"idempotency_key":${s(f.idempotency_key)},` +
    `"occurred_at":${s(f.occurred_at)},"payload":${payloadText},"payload_hash":"${payloadHash}",` +
    `"previous_event_hash":"${f.previous_event_hash}","recorded_at":${s(f.recorded_at)},` +
    `"schema_version":${s(f.schema_version)},"seq":${f.seq},"subject_id":${s(f.subject_id)}}`;
  const eventHash = hashText(head + tail);
  return { text: `${head}"event_hash":"${eventHash}",${tail}`, payloadHash, eventHash };
}

/** Where a draft lands in a store: its subject, the seq it takes, the hash it chains to, when it is recorded. */
export interface EnvelopePlace {
  readonly subjectId: string;
  readonly seq: number;
  readonly previousHash: HashString;
  readonly recordedAt: string;
}

/**
 * The envelope a draft becomes at its place in the chain, with its stored text: the one way a
 * draft is made an envelope (the store's append, the controller's dry run of a resolution, the
 * append bench). `payloadText`: the payload's JCS text when the caller has it already (a
 * validated draft), else computed here.
 */
export function envelopeOfDraft(draft: EventDraft & { readonly payloadText?: string }, place: EnvelopePlace): { readonly envelope: EventEnvelope; readonly text: string } {
  const fields: EnvelopeFields = {
    event_id: eventIdFor(place.subjectId, place.seq),
    subject_id: place.subjectId,
    seq: place.seq,
    event_type: draft.event_type,
    schema_version: draft.schema_version,
    occurred_at: draft.occurred_at,
    recorded_at: place.recordedAt,
    actor: draft.actor,
    causation_id: draft.causation_id,
    correlation_id: draft.correlation_id,
    idempotency_key: draft.idempotency_key,
    previous_event_hash: place.previousHash,
  };
  const built = buildEnvelopeText(fields, draft.payloadText ?? canonicalJson(draft.payload));
  return { envelope: { ...fields, payload: draft.payload, payload_hash: built.payloadHash, event_hash: built.eventHash }, text: built.text };
}
