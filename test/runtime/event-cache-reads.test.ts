// The runtime's reads through the head (runtime/event-cache.ts catchUp, readToHead): one read per
// page with no head request of its own (issue 19), the visible events cached and the rest handed
// back, and every page checked — a short page, a seq out of place, another subject's event and a
// visible_to_seq beyond the head each refused, typed, with nothing cached.
import { describe, expect, test } from 'vitest';
import { EventCache, EventReadError, readToHead } from '../../runtime/event-cache.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { WriterClient } from '../../writer/client.js';
import type { ReadResult } from '../../writer/protocol.js';

const SUBJECT = 'subject-001';

function event(seq: number, subject = SUBJECT): EventEnvelope {
  return { seq, subject_id: subject } as EventEnvelope;
}

/** A writer holding seqs 1..head; `forge` may change the page it answers. */
function fakeClient(head: number, pageSize: number, forge: (page: EventEnvelope[], from: number) => EventEnvelope[] = (p) => p): WriterClient & { reads: number } {
  const client = {
    reads: 0,
    hello: { subject_id: SUBJECT, limits: { maxReadPage: pageSize } },
    read: async ({ from_seq, limit }: { from_seq: number; limit: number }): Promise<ReadResult> => {
      client.reads += 1;
      const page: EventEnvelope[] = [];
      for (let seq = from_seq; seq <= Math.min(head, from_seq + limit - 1); seq += 1) page.push(event(seq));
      return { events: forge(page, from_seq), next_seq: from_seq + page.length, head: { seq: head, event_hash: 'sha256:x' } } as ReadResult;
    },
  };
  return client as unknown as WriterClient & { reads: number };
}

describe('reads through the head', () => {
  test('catchUp caches up to visible_to_seq and hands back the rest through the head, one read per page and no head request', async () => {
    const cache = new EventCache(SUBJECT);
    const client = fakeClient(25, 10);
    const beyond = await cache.catchUp(client, 22);
    expect(cache.lastSeq).toBe(22);
    expect(cache.events.map((e) => e.seq)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
    expect(beyond.map((e) => e.seq)).toEqual([23, 24, 25]);
    expect(client.reads).toBe(3);
    expect(cache.since(20).map((e) => e.seq)).toEqual([21, 22]);
    // The next wake reads only what is new.
    const next = fakeClient(30, 10);
    expect((await cache.catchUp(next, 30)).length).toBe(0);
    expect(next.reads).toBe(1);
    expect(cache.lastSeq).toBe(30);
  });

  test('a page that ends at the head exactly needs no further read; an empty tail is one read', async () => {
    expect((await readToHead(fakeClient(10, 10), 1, SUBJECT)).length).toBe(10);
    const empty = fakeClient(10, 10);
    expect(await readToHead(empty, 11, SUBJECT)).toEqual([]);
    expect(empty.reads).toBe(1);
  });

  test('forged: visible_to_seq beyond the head, a short page, a seq out of place, another subject\'s event — each refused, nothing cached', async () => {
    const cases: [string, () => Promise<unknown>, string][] = [
      ['beyond', () => new EventCache(SUBJECT).catchUp(fakeClient(5, 10), 6), 'beyond_head'],
      ['short', () => new EventCache(SUBJECT).catchUp(fakeClient(5, 10, (p) => p.slice(0, -1)), 5), 'read_gap'],
      ['out of place', () => new EventCache(SUBJECT).catchUp(fakeClient(5, 10, (p) => [p[1]!, p[0]!, ...p.slice(2)]), 5), 'read_gap'],
      ['other subject', () => new EventCache(SUBJECT).catchUp(fakeClient(5, 10, (p) => [...p.slice(0, -1), event(5, 'subject-999')]), 5), 'identity_mismatch'],
      ['tail of another subject', () => readToHead(fakeClient(5, 10, (p) => [...p.slice(0, -1), event(5, 'subject-999')]), 1, SUBJECT), 'identity_mismatch'],
    ];
    for (const [what, run, code] of cases) {
      const error = await run().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, what).toBeInstanceOf(EventReadError);
      expect((error as EventReadError).code, what).toBe(code);
    }
    const cache = new EventCache(SUBJECT);
    await expect(cache.catchUp(fakeClient(5, 10, (p) => p.slice(0, -1)), 5)).rejects.toThrow(EventReadError);
    expect(cache.lastSeq).toBe(0);
  });
});
