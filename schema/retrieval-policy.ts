// The pre-registered retrieval rule (DESIGN §6 step 3), identical for every group: fixed in the
// pre-registration, handed to the runtime at start.
import { z } from 'zod';
import { isEventType } from './event-catalog.js';

export const RetrievalPolicy = z.strictObject({
  window_events: z.number().int().min(1).max(100_000),
  token_cap: z.number().int().min(1),
  event_types: z
    .array(z.string().refine(isEventType, { message: 'not an event type of the catalogue (schema/event-catalog.ts)' }))
    .min(1)
    .refine((types) => new Set(types).size === types.length, { message: 'event_types lists a type twice' }),
  /**
   * Types shown at every wake to every group ahead of the window, never pushed out by it: the
   * subject's starting conditions (SystemEvent.SubjectInitialized: identity, first goal, first
   * task board, the journal's first page) are the scenario, identical for all groups, not a
   * memory one group keeps and another loses. At most MAX_PINNED_EVENTS such events are shown.
   */
  pinned_event_types: z
    .array(z.string().refine(isEventType, { message: 'not an event type of the catalogue (schema/event-catalog.ts)' }))
    .max(8)
    .default([]),
}).refine((p) => p.pinned_event_types.every((t) => !p.event_types.includes(t)), { message: 'a type is both pinned and in event_types: list it in one of them' });
export type RetrievalPolicy = z.infer<typeof RetrievalPolicy>;

/** More pinned events than this at one wake is refused: pinned events bypass the window and its token cap. */
export const MAX_PINNED_EVENTS = 8;
