// The envelopes of a run's store, read-only, for assertions in end-to-end tests.
import path from 'node:path';
import type { EventEnvelope } from '../../schema/envelope.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { openStoreReadOnly } from '../../writer/store-reader.js';

export type StoredEvent = EventEnvelope;

export function storedEvents(runDir: string): StoredEvent[] {
  const db = openStoreReadOnly(path.join(runDir, RUN_FILES.store));
  try {
    return (db.prepare('select envelope from events order by seq').all() as { envelope: string }[]).map((r) => JSON.parse(r.envelope) as StoredEvent);
  } finally {
    db.close();
  }
}

export const ofType = (events: readonly StoredEvent[], type: string): StoredEvent[] => events.filter((e) => e.event_type === type);
