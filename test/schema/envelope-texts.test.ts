// envelopeTexts (schema/envelope-hash.ts) builds the three texts a verify needs of an envelope
// from one serialisation of its payload; each must be byte for byte what canonicalJson makes of
// the envelope, of the envelope without event_hash, and of the payload, so the hashes a verify
// compares are the hashes of DESIGN §4. Held to canonicalJson on generated envelopes, and on the
// values canonicalJson refuses (the same error, the same path).
import seedrandom from 'seedrandom';
import { describe, expect, test } from 'vitest';
import { canonicalJson, NotJsonError } from '../../schema/canonical-json.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { computeEventHash, computePayloadHash, envelopeTexts } from '../../schema/envelope-hash.js';
import { GENESIS_HASH, hashText } from '../../schema/hash.js';

const KEY_CHARS = ['a', 'B', 'z', '_', 'é', '\u{1F600}', 'ﬀ', '0', '"', '\\', '\n'];

function randomValue(rng: () => number, depth: number): unknown {
  const r = rng();
  if (depth > 3 || r < 0.3) return [null, true, false, 0, -0.5, 1e21, 123456789.125, 'x', 'ü\u2028"\\', ''][Math.floor(rng() * 10)];
  if (r < 0.6) return Array.from({ length: Math.floor(rng() * 4) }, () => randomValue(rng, depth + 1));
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(rng() * 5); i > 0; i -= 1) out[Array.from({ length: 1 + Math.floor(rng() * 3) }, () => KEY_CHARS[Math.floor(rng() * KEY_CHARS.length)]).join('')] = randomValue(rng, depth + 1);
  return out;
}

function envelopeWith(payload: Record<string, unknown>, seq: number): EventEnvelope {
  return {
    event_id: '00000000-0001-8abc-8def-0123456789ab',
    subject_id: 'subject-1',
    seq,
    event_type: 'MemoryEvent.FactRecorded',
    schema_version: '1.0.0',
    occurred_at: '2026-03-01T08:00:00.000Z',
    recorded_at: '2026-03-01T08:00:00.001Z',
    actor: 'runtime',
    causation_id: null,
    correlation_id: 'c-1',
    idempotency_key: null,
    previous_event_hash: GENESIS_HASH,
    payload,
    payload_hash: GENESIS_HASH,
    event_hash: GENESIS_HASH,
  };
}

describe('envelopeTexts', () => {
  test('each text is canonicalJson\'s, and the hashes of the texts are computeEventHash and computePayloadHash, on 500 generated envelopes', () => {
    const rng = seedrandom('envelope-texts');
    let nonEmpty = 0;
    for (let i = 1; i <= 500; i += 1) {
      const payload = randomValue(rng, 0);
      const env = envelopeWith(payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : { value: payload }, i);
      const texts = envelopeTexts(env);
      const { event_hash: _omitted, ...rest } = env;
      expect(texts.envelope).toBe(canonicalJson(env));
      expect(texts.withoutEventHash).toBe(canonicalJson(rest));
      expect(texts.payload).toBe(canonicalJson(env.payload));
      expect(hashText(texts.withoutEventHash)).toBe(computeEventHash(env));
      expect(hashText(texts.payload)).toBe(computePayloadHash(env.payload));
      if (Object.keys(env.payload).length > 0) nonEmpty += 1;
    }
    // Not a test of empty payloads only.
    expect(nonEmpty).toBeGreaterThan(300);
  });

  test('forged: a value canonicalJson refuses is refused the same way, at the same path', () => {
    for (const payload of [{ text: 'a\ud800b' }, { n: Number.NaN }, { deep: { f: () => 1 } }]) {
      const env = envelopeWith(payload as Record<string, unknown>, 1);
      let expected: unknown = null;
      try {
        canonicalJson(env);
      } catch (error) {
        expected = error;
      }
      expect(expected).toBeInstanceOf(NotJsonError);
      expect(() => envelopeTexts(env)).toThrow((expected as Error).message);
    }
  });
});
