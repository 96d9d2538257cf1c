import { describe, expect, test } from 'vitest';
import { canonicalJson } from '../../schema/canonical-json.js';
import { EventEnvelope } from '../../schema/envelope.js';
import { computeEventHash, computePayloadHash, eventIdFor } from '../../schema/envelope-hash.js';
import { DEFAULT_WRITERS, EVENT_CATEGORIES } from '../../schema/event-definition.js';
import { EVENT_TYPES, eventDefinition } from '../../schema/event-catalog.js';
import { GENESIS_HASH } from '../../schema/hash.js';
import { buildEnvelopeText, type EnvelopeFields } from '../../writer/envelope-text.js';

const PAYLOADS: Record<string, unknown>[] = [
  {},
  { text: 'plain' },
  { z: 1, a: [3, 2, 1], m: { y: null, x: true } },
  { unicode: 'é€😀 \u2028 \u0007 "quoted" \\', '\u20ac': 1, '\r': 2, '1': 3 },
  { numbers: [0, -0, 1e21, 1e-7, 123.456, -5, 2 ** 53] },
  { deep: { a: { b: { c: { d: ['x', { e: 'f' }] } } } } },
];

function fields(seq: number, nulls: boolean): EnvelopeFields {
  return {
    event_id: eventIdFor('subject-001', seq),
    subject_id: 'subject-001',
    seq,
    event_type: 'WorldEvent.MessageReceived',
    schema_version: '1.0.0',
    occurred_at: '2026-07-20T08:00:00.000Z',
    recorded_at: '2026-11-29T19:00:00.123Z',
    actor: 'experiment',
    causation_id: nulls ? null : eventIdFor('subject-001', 1),
    correlation_id: nulls ? null : 'wake-0007',
    idempotency_key: nulls ? null : 'op:write/notes/a.md#3',
    previous_event_hash: GENESIS_HASH,
  };
}

describe('the writer\'s envelope serialiser', () => {
  test.each(PAYLOADS.flatMap((p, i) => [[i, p, true] as const, [i, p, false] as const]))('payload %i (nulls %s) gives exactly JCS and the reference hashes', (i, payload, nulls) => {
    const f = fields(i + 2, nulls);
    const built = buildEnvelopeText(f, canonicalJson(payload));
    const envelope = EventEnvelope.parse(JSON.parse(built.text));
    expect(built.text).toBe(canonicalJson(envelope));
    expect(built.payloadHash).toBe(computePayloadHash(payload));
    expect(envelope.payload_hash).toBe(built.payloadHash);
    expect(built.eventHash).toBe(computeEventHash(envelope));
    expect(envelope.event_hash).toBe(built.eventHash);
  });

  test('envelopes keep every key, null where not applicable', () => {
    const built = buildEnvelopeText(fields(2, true), '{}');
    const keys = Object.keys(JSON.parse(built.text) as object).sort();
    expect(keys).toEqual(Object.keys(EventEnvelope.shape).sort());
    expect(EventEnvelope.safeParse({ ...JSON.parse(built.text), extra: 1 }).success).toBe(false);
    const { causation_id: _dropped, ...missing } = JSON.parse(built.text) as Record<string, unknown>;
    expect(EventEnvelope.safeParse(missing).success).toBe(false);
  });
});

describe('event ids', () => {
  test('are UUIDv8 derived from subject and seq: stable across runs, distinct across seqs and subjects', () => {
    const id = eventIdFor('subject-001', 42);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(eventIdFor('subject-001', 42)).toBe(id);
    const ids = new Set(Array.from({ length: 5_000 }, (_, i) => eventIdFor('subject-001', i + 1)));
    expect(ids.size).toBe(5_000);
    expect(eventIdFor('subject-002', 42)).not.toBe(id);
    // seq leads, so ids sort like seqs.
    expect(id.startsWith('00000000-002a-')).toBe(true);
    const sorted = Array.from({ length: 300 }, (_, i) => eventIdFor('subject-001', i * 977 + 1));
    expect([...sorted].sort()).toEqual(sorted);
    expect(() => eventIdFor('subject-001', 0)).toThrow(RangeError);
  });
});

describe('the event catalogue', () => {
  test('covers every category of DESIGN §4, each type with a semver schema_version', () => {
    const categories = new Set(EVENT_TYPES.map((t) => t.split('.')[0]));
    expect([...categories].sort()).toEqual([...EVENT_CATEGORIES].sort());
    for (const type of EVENT_TYPES) expect(eventDefinition(type)!.schemaVersion).toMatch(/^\d+\.\d+\.\d+$/);
  });

  test('payload schemas are strict: an unknown key is refused, never silently dropped', () => {
    for (const type of EVENT_TYPES) {
      const result = eventDefinition(type)!.payload.safeParse({ __unknown_key__: 1 });
      expect(result.success, type).toBe(false);
      expect(JSON.stringify(result.error?.issues), type).toMatch(/__unknown_key__|unrecognized/i);
    }
  });

  test('the runtime may not write World, System or Experiment events; only the writer writes StoreOpened and AppendRejected', () => {
    for (const type of EVENT_TYPES) {
      const definition = eventDefinition(type)!;
      if (['WorldEvent', 'SystemEvent', 'ExperimentEvent'].includes(definition.category)) expect(definition.writers, type).not.toContain('runtime');
    }
    expect(eventDefinition('SystemEvent.StoreOpened')!.writers).toEqual([]);
    expect(eventDefinition('SystemEvent.AppendRejected')!.writers).toEqual([]);
    expect(DEFAULT_WRITERS.MemoryEvent).toEqual(['runtime']);
  });
});
