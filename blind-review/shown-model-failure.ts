// How a failed model call reads in a blind-review package: the kinds a reviewer may see, and the
// detail that stands in for apparatus text (the normalizer's ModelCallFailed handler,
// blind-review/disposition/model-output-events.ts).
import { z } from 'zod';
import type { MODEL_CALL_FAILURES } from '../schema/events/model-output-events.js';

/** What the detail of a failure not about the subject's answer reads in a package (see the ModelCallFailed handler). */
export const MODEL_FAILURE_DETAIL_WITHHELD = '(withheld: apparatus or server text, which may quote the size of the prompt)';

/** A model call's failure as a package shows it. */
export const ShownModelFailure = z.enum(['no_answer', 'schema_violation', 'length', 'refusal', 'budget_exhausted']);
export type ShownModelFailure = z.infer<typeof ShownModelFailure>;
/**
 * Each recorded failure kind → the kind a package shows. The apparatus decides `truncated_prompt`
 * (does the prompt fit the context), `timeout`, `transport`, `stream_broken` and `http_error`, and
 * the prompt's size sways them (a longer prompt fits less often and takes longer to read); the
 * prompts of groups that keep state are longer by construction, so which of them happened says
 * something about the group: every package shows them as one kind, `no_answer`. A schema
 * violation, an answer cut at its token cap (`length`) and a refusal are about the subject's own
 * answer; `budget_exhausted` is the wake's grant, the same schedule for every group. A new
 * failure kind is a compile error here until someone decides what a reviewer sees of it.
 */
export const SHOWN_MODEL_FAILURE = {
  timeout: 'no_answer',
  transport: 'no_answer',
  http_error: 'no_answer',
  truncated_prompt: 'no_answer',
  stream_broken: 'no_answer',
  schema_violation: 'schema_violation',
  length: 'length',
  refusal: 'refusal',
  budget_exhausted: 'budget_exhausted',
  // Held back by the cost cap: the prompt's size decides how soon the cap is reached, and the prompts of groups that keep state are longer, so it is shown like the failures the prompt's size sways.
  cost_cap: 'no_answer',
} as const satisfies Record<(typeof MODEL_CALL_FAILURES)[number], ShownModelFailure>;
