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
});
export type RetrievalPolicy = z.infer<typeof RetrievalPolicy>;
