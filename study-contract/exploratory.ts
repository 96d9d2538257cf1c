// An exploratory study (issue 35 item 2): one that knowingly departs from its pre-registration
// (another n per group than pre-registered, a verdict the pre-registration cannot judge) and says
// so with `--exploratory "reason"`. Its study.json, its report (json, md, html) and its verdict
// state it, in these words; a study that departs without saying so is refused at plan time.
import { z } from 'zod';

/** The most characters of the reason a researcher gives (one or two sentences). */
export const MAX_EXPLORATORY_REASON_CHARS = 1_000;
/** A plan departs in a few ways at most (one per pre-registered rule it breaks). */
const MAX_DEPARTURES = 16;

export const ExploratoryReason = z.string().trim().min(1).max(MAX_EXPLORATORY_REASON_CHARS);

export const Exploratory = z.strictObject({
  /** The researcher's reason, as given to --exploratory. */
  reason: ExploratoryReason,
  /** Each way the plan departs from its pre-registration, in words (study/plan-validity.ts). */
  departures: z.array(z.string().min(1).max(2_000)).min(1).max(MAX_DEPARTURES),
});
export type Exploratory = z.infer<typeof Exploratory>;

/** How a report and a verdict name an exploratory study: its departures and its reason. */
export function exploratoryWords(e: Exploratory): string {
  return `${e.departures.join('; ')}; reason given: ${e.reason}`;
}
