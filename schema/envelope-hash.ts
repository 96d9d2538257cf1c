// The hash definitions of DESIGN §4, written the slow, obvious way. Verifiers use these.
import { canonicalJson } from './canonical-json.js';
import type { EventEnvelope } from './envelope.js';
import { hashText, sha256Hex, type HashString } from './hash.js';

/** event_hash = sha256(JCS(envelope without the event_hash key)). */
export function computeEventHash(envelope: EventEnvelope): HashString {
  const { event_hash: _omitted, ...rest } = envelope;
  return hashText(canonicalJson(rest));
}

/** payload_hash = sha256(JCS(payload)). */
export function computePayloadHash(payload: unknown): HashString {
  return hashText(canonicalJson(payload));
}

/** Largest seq an event id can carry in its leading 48 bits. */
export const MAX_SEQ = 0xffff_ffff_ffff;

/**
 * event_id of the event at `seq` in the store of `subjectId`, a UUIDv8:
 *   ssssssss-ssss-8hhh-Vhhh-hhhhhhhhhhhh
 * s = seq as 12 hex digits; h = hex digits 0..2, 4..6 and 7..18 of
 * sha256("ds-event-id\n" + subject_id + "\n" + seq); V = 8 + (hex digit 3 & 3).
 * Derived, not random, so two runs of one seed give identical ids and state hashes;
 * seq first, so ids sort like seqs and every insert lands at the right edge of the
 * unique index (random ids halved batched insert speed).
 */
export function eventIdFor(subjectId: string, seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 1 || seq > MAX_SEQ) throw new RangeError(`seq ${seq} is outside 1..${MAX_SEQ}`);
  const s = seq.toString(16).padStart(12, '0');
  const h = sha256Hex(`ds-event-id\n${subjectId}\n${seq}`);
  const variant = ((parseInt(h[3]!, 16) & 0x3) | 0x8).toString(16);
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-8${h.slice(0, 3)}-${variant}${h.slice(4, 7)}-${h.slice(7, 19)}`;
}
