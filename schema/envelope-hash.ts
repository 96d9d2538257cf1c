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

/**
 * event_id of the event at `seq` in the store of `subjectId`: a UUIDv8 from
 * sha256("ds-event-id\n" + subject_id + "\n" + seq). Derived, not random, so two runs of
 * the same seed give identical ids and therefore identical state hashes.
 */
export function eventIdFor(subjectId: string, seq: number): string {
  const hex = sha256Hex(`ds-event-id\n${subjectId}\n${seq}`).slice(0, 32).split('');
  hex[12] = '8';
  hex[16] = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  const h = hex.join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
