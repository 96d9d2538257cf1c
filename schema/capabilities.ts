// The group switches (DESIGN §1), shared by the controller (manifest) and the runtime (its
// start message): the runtime is handed these flags, never the group letter.
import { z } from 'zod';

/** A false/false, B true/false, C true/true. Re-planning without persistent state is no group of the study. */
export const Capabilities = z
  .strictObject({ persistent_state: z.boolean(), autonomous_replanning: z.boolean() })
  .refine((c) => !c.autonomous_replanning || c.persistent_state, { message: 'autonomous_replanning requires persistent_state (no group has one without the other)' });
export type Capabilities = z.infer<typeof Capabilities>;
