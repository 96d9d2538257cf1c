// Where an instance stands, read back from its own store: which controller steps are
// already recorded (by idempotency key), whether a wake is open, whether the instance was
// stopped or sealed. `--resume DIR` continues from exactly this, so the store — not a side
// file the controller might have failed to write — is the one account of progress.
import type { EventEnvelope } from '../schema/envelope.js';
import { eventIs } from '../schema/typed-event.js';
import type { WriterClient } from '../writer/client.js';
import type { Head } from '../writer/protocol.js';

export interface RecordedEvent {
  readonly seq: number;
  readonly event_id: string;
}

export interface InstanceProgress {
  readonly head: Head;
  /** Controller events by idempotency key. */
  readonly byKey: ReadonlyMap<string, RecordedEvent>;
  /** A WakeStarted without its WakeEnded: the wake the instance was in when it stopped. */
  readonly openWakeId: string | null;
  /** The last EmergencyStopped is not followed by a Resumed. */
  readonly stopped: boolean;
  readonly sealed: boolean;
  /** occurred_at of the last event: the virtual time the instance had reached. */
  readonly lastOccurredAt: string | null;
}

/** Folds envelopes (in seq order) into the progress; pure. */
export function progressOf(envelopes: Iterable<EventEnvelope>, head: Head): InstanceProgress {
  const byKey = new Map<string, RecordedEvent>();
  let openWakeId: string | null = null;
  let stopped = false;
  let sealed = false;
  let lastOccurredAt: string | null = null;
  for (const e of envelopes) {
    if (e.idempotency_key !== null && e.actor === 'experiment') byKey.set(e.idempotency_key, { seq: e.seq, event_id: e.event_id });
    if (eventIs(e, 'ExperimentEvent.WakeStarted')) openWakeId = e.payload.wake_id;
    if (eventIs(e, 'ExperimentEvent.WakeEnded') && e.payload.wake_id === openWakeId) openWakeId = null;
    if (eventIs(e, 'SystemEvent.EmergencyStopped')) stopped = true;
    if (eventIs(e, 'SystemEvent.Resumed')) stopped = false;
    if (eventIs(e, 'SystemEvent.StoreSealed')) sealed = true;
    lastOccurredAt = e.occurred_at;
  }
  return { head, byKey, openWakeId, stopped, sealed, lastOccurredAt };
}

/** Reads the whole store through the controller's connection (WriterClient.readRange: bounded pages). */
export async function readProgress(client: WriterClient): Promise<InstanceProgress> {
  const head = await client.head();
  return progressOf(await client.readRange(1, head.seq), head);
}
