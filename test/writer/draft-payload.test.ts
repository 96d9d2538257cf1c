// EventDraft's payload check (protocol.ts DraftPayload): one predicate in place of a record
// schema on the append hot path, so it must still refuse everything that is not a JSON object.
import { describe, expect, test } from 'vitest';
import { EventDraft } from '../../writer/protocol.js';

const draft = (payload: unknown): unknown => ({
  event_type: 'WorldEvent.MessageReceived',
  schema_version: '1.0.0',
  occurred_at: '2026-07-20T08:00:00.000Z',
  actor: 'experiment',
  causation_id: null,
  correlation_id: 'wake-0001',
  idempotency_key: null,
  payload,
});

describe('EventDraft payload', () => {
  test('a plain object (also one without a prototype) passes, and is the very object given', () => {
    const payload = { from: 'reviewer', subject: 's', body: 'b', in_reply_to: null };
    const parsed = EventDraft.parse(draft(payload));
    expect(parsed.payload).toEqual(payload);
    expect(EventDraft.safeParse(draft(Object.assign(Object.create(null), { a: 1 }))).success).toBe(true);
  });

  test.each([
    ['an array', [1, 2]],
    ['null', null],
    ['a string', 'payload'],
    ['a number', 3],
    ['a Date', new Date(0)],
    ['a Map', new Map()],
    ['missing', undefined],
  ])('refuses %s', (_name, payload) => {
    const result = EventDraft.safeParse(draft(payload));
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['payload']);
  });
});
