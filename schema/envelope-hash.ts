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

/** The three canonical texts a verifier needs of one envelope (see envelopeTexts). */
export interface EnvelopeTexts {
  /** canonicalJson(envelope): what a store holds. */
  readonly envelope: string;
  /** canonicalJson(envelope without event_hash): what event_hash hashes. */
  readonly withoutEventHash: string;
  /** canonicalJson(envelope.payload): what payload_hash hashes. */
  readonly payload: string;
}

/**
 * The texts computeEventHash and computePayloadHash hash, and the envelope's own canonical text,
 * with the payload (most of an event) serialised once instead of three times: by JCS's own
 * definition an object's text is its members' `"key":text`, sorted by key and joined by commas,
 * so each text is assembled from the same member texts. Each is byte for byte canonicalJson's
 * (test/schema/envelope-texts.test.ts holds them to it); a value canonicalJson refuses throws
 * the same NotJsonError here.
 */
export function envelopeTexts(envelope: EventEnvelope): EnvelopeTexts {
  const record = envelope as unknown as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let payload: string | null = null;
  const members: string[] = new Array<string>(keys.length);
  const without: string[] = [];
  try {
    for (let i = 0; i < keys.length; i += 1) {
      const key = keys[i]!;
      // As canonicalJson writes a member (its key checked as it checks one).
      if (!key.isWellFormed()) throw new RangeError('a key with a lone surrogate');
      const value = canonicalJson(record[key]);
      if (key === 'payload') payload = value;
      members[i] = `${JSON.stringify(key)}:${value}`;
      if (key !== 'event_hash') without.push(members[i]!);
    }
  } catch {
    // Refused somewhere: canonicalJson of the whole envelope throws the error, with its path from the envelope's root.
    canonicalJson(envelope);
    throw new Error('envelopeTexts: a member was refused that canonicalJson of the envelope accepts');
  }
  if (payload === null) throw new TypeError('envelopeTexts: the envelope has no payload');
  return { envelope: `{${members.join(',')}}`, withoutEventHash: `{${without.join(',')}}`, payload };
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
