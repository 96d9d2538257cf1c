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

  /** Reads seqs lastSeq+1 .. toSeq in bounded pages; returns how many were new. */
  async catchUp(client: WriterClient, toSeq: number): Promise<number> {
    const fromSeq = this.lastSeq + 1;
    if (toSeq < this.lastSeq) throw new EventReadError('seq_regressed', `visible_to_seq ${toSeq} is below seq ${this.lastSeq}, already observed`);
    if (toSeq > MAX_CACHED_EVENTS) throw new EventReadError('too_many_events', `the store holds more than ${MAX_CACHED_EVENTS} events; this runtime refuses to keep more`);
    const hello = client.hello!;
    if (hello.subject_id !== this.subjectId) throw new EventReadError('identity_mismatch', `the writer serves subject ${hello.subject_id}, this runtime was started for ${this.subjectId}`);
    const head = await client.head();
    if (head.seq < toSeq) throw new EventReadError('beyond_head', `visible_to_seq ${toSeq} is beyond the writer's head ${head.seq}`);
    const pageSize = Math.min(hello.limits.maxReadPage, WRITER_LIMITS.maxReadPage);
    const maxPages = Math.ceil((toSeq - fromSeq + 1) / pageSize);
    for (let page = 0; page < maxPages && this.lastSeq < toSeq; page += 1) {
      const nextSeq = this.lastSeq + 1;
      const limit = Math.min(pageSize, toSeq - nextSeq + 1);
      const result = await client.read({ from_seq: nextSeq, limit });
      if (result.events.length !== limit) throw new EventReadError('read_gap', `asked for ${limit} events from seq ${nextSeq}, the writer returned ${result.events.length}`);
      for (const [i, event] of result.events.entries()) {
        if (event.seq !== nextSeq + i) throw new EventReadError('read_gap', `expected seq ${nextSeq + i}, the writer returned seq ${event.seq}`);
        if (event.subject_id !== this.subjectId) throw new EventReadError('identity_mismatch', `event seq ${event.seq} belongs to subject ${event.subject_id}`);
      }
      this.list.push(...result.events);
    }
    if (this.lastSeq !== toSeq) throw new EventReadError('read_gap', `stopped at seq ${this.lastSeq}, short of ${toSeq}`);
    return toSeq - fromSeq + 1;
  }
}
