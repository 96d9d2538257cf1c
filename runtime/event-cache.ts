// The events a runtime has observed, in seq order, kept in this process between wakes so a
// wake reads only what is new. It is a cache of the store, not the subject's memory: group A's
// subject still sees only its window (context-bundle.ts decides what reaches the model). It
// dies with the process; a restarted runtime reads everything again on its first wake.
import { CodedInternalError } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { WriterClient } from '../writer/client.js';
import { WRITER_LIMITS } from '../writer/protocol.js';

/** More events than this in one store is beyond what one 72-hour instance can produce: refuse loudly. */
export const MAX_CACHED_EVENTS = 500_000;

export type ReadFailureCode = 'seq_regressed' | 'beyond_head' | 'read_gap' | 'identity_mismatch' | 'too_many_events';

export class EventReadError extends CodedInternalError<ReadFailureCode> {
  override readonly name = 'EventReadError';
}

export class EventCache {
  private readonly list: EventEnvelope[] = [];

  constructor(private readonly subjectId: string) {}

  get events(): readonly EventEnvelope[] {
    return this.list;
  }

  get lastSeq(): number {
    return this.list.length;
  }

  /** The cached events after `seq` (the list holds seq 1..lastSeq at index 0..lastSeq-1): what a fold kept beside the cache has not seen. */
  since(seq: number): readonly EventEnvelope[] {
    return this.list.slice(Math.max(0, Math.min(seq, this.list.length)));
  }

  /**
   * Reads seqs lastSeq+1 .. toSeq into the cache, and on through the writer's head in the same
   * bounded pages: returns the events after toSeq (the controller's WakeStarted, deliveries) that
   * a wake folds into its state but does not observe, uncached. One read per page, no separate
   * head request: every page carries the head (issue 19: a round trip less per wake).
   */
  async catchUp(client: WriterClient, toSeq: number): Promise<EventEnvelope[]> {
    if (toSeq < this.lastSeq) throw new EventReadError('seq_regressed', `visible_to_seq ${toSeq} is below seq ${this.lastSeq}, already observed`);
    if (toSeq > MAX_CACHED_EVENTS) throw new EventReadError('too_many_events', `the store holds more than ${MAX_CACHED_EVENTS} events; this runtime refuses to keep more`);
    const hello = client.hello!;
    if (hello.subject_id !== this.subjectId) throw new EventReadError('identity_mismatch', `the writer serves subject ${hello.subject_id}, this runtime was started for ${this.subjectId}`);
    const read = await readToHead(client, this.lastSeq + 1, this.subjectId, (head) => {
      if (head < toSeq) throw new EventReadError('beyond_head', `visible_to_seq ${toSeq} is beyond the writer's head ${head}`);
    });
    const firstBeyond = read.findIndex((event) => event.seq > toSeq);
    const cached = firstBeyond < 0 ? read : read.slice(0, firstBeyond);
    const beyond = firstBeyond < 0 ? [] : read.slice(firstBeyond);
    // Bounded by MAX_CACHED_EVENTS (checked above): push in slices, not one spread of a long list.
    for (let i = 0; i < cached.length; i += PUSH_SLICE) this.list.push(...cached.slice(i, i + PUSH_SLICE));
    if (this.lastSeq !== toSeq) throw new EventReadError('read_gap', `stopped at seq ${this.lastSeq}, short of ${toSeq}`);
    return beyond;
  }
}

const PUSH_SLICE = 10_000;

/**
 * Every event from `fromSeq` through the writer's head, in bounded pages, each checked to follow
 * the one before and to be of `subjectId`. `onHead` sees the head of the first page before
 * anything is kept (a caller's own refusal). Bounded: the pages are counted from that head.
 */
export async function readToHead(client: WriterClient, fromSeq: number, subjectId: string, onHead: (headSeq: number) => void = () => undefined): Promise<EventEnvelope[]> {
  const hello = client.hello!;
  const pageSize = Math.min(hello.limits.maxReadPage, WRITER_LIMITS.maxReadPage);
  const events: EventEnvelope[] = [];
  let maxPages = 1;
  for (let page = 0; page < maxPages; page += 1) {
    const nextSeq = fromSeq + events.length;
    const result = await client.read({ from_seq: nextSeq, limit: pageSize });
    if (page === 0) {
      onHead(result.head.seq);
      maxPages = Math.max(1, Math.ceil((result.head.seq - fromSeq + 1) / pageSize));
    }
    const expected = Math.min(pageSize, Math.max(0, result.head.seq - nextSeq + 1));
    if (result.events.length !== expected) throw new EventReadError('read_gap', `asked for ${expected} events from seq ${nextSeq} (head ${result.head.seq}), the writer returned ${result.events.length}`);
    for (const [i, event] of result.events.entries()) {
      if (event.seq !== nextSeq + i) throw new EventReadError('read_gap', `expected seq ${nextSeq + i}, the writer returned seq ${event.seq}`);
      if (event.subject_id !== subjectId) throw new EventReadError('identity_mismatch', `event seq ${event.seq} belongs to subject ${event.subject_id}`);
    }
    for (const event of result.events) events.push(event);
    if (nextSeq + result.events.length > result.head.seq) break;
  }
  return events;
}
