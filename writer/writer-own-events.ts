// The events the writer writes on its own, never a client's draft (writer/event-store.ts): the
// store's opening, a refusal it records, and the seal. They carry the wall clock, so a reader that
// wants a run's virtual time (the repair: controller/operator-resolution.ts) passes over them.
import { AppendRejected, StoreOpened, StoreSealed } from '../schema/events/system-events.js';

export const WRITER_OWN_EVENT_TYPES = [StoreOpened.type, AppendRejected.type, StoreSealed.type] as const;
export type WriterOwnEventType = (typeof WRITER_OWN_EVENT_TYPES)[number];

/** Whether an event of this type was written by the writer on its own (on the wall clock). */
export function isWriterOwnEvent(eventType: string): eventType is WriterOwnEventType {
  return (WRITER_OWN_EVENT_TYPES as readonly string[]).includes(eventType);
}
