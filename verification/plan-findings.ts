// What the run verifier reports: one finding per thing wrong (file, seq, message), the counts of
// what it checked, and the report of one run. The schemas are the one source of these types and
// of the `plans` part of `npm run verify --json` (docs/format.md). The Findings collector bounds
// the list, like npm run verify does: a broken store must not bury the report, and a list cut
// short always says by how much.
import { z } from 'zod';
import { RUN_FILES } from '../schema/run-files.js';

/** Failures listed per run; beyond it one more finding says how many were left out. */
const MAX_FAILURES_PER_RUN = 1_000;

export const PlanFinding = z.strictObject({
  /** The file concerned, relative to the run folder (or to the verified folder, in checkPlansUnder). */
  file: z.string(),
  seq: z.number().int().min(1).nullable(),
  message: z.string(),
});
export type PlanFinding = z.infer<typeof PlanFinding>;

export const PlanConformanceCounts = z.strictObject({
  events_read: z.number().int().min(0),
  /** Controller events compared with the contract (runtime events and writer refusals are not). */
  controller_events_checked: z.number().int().min(0),
  wakes_planned: z.number().int().min(0),
  wakes_started: z.number().int().min(0),
  wakes_ended: z.number().int().min(0),
  /** Interventions delivered by an InterventionDelivered event (all but the long absence). */
  interventions_planned: z.number().int().min(0),
  interventions_delivered: z.number().int().min(0),
  emergency_stops: z.number().int().min(0),
  sealed: z.boolean(),
  manifest_checked: z.boolean(),
  prereg_checked: z.boolean(),
  /** The plan was rebuilt from prereg + scenario + seed + start time and compared. */
  plan_rebuilt: z.boolean(),
});
export type PlanConformanceCounts = z.infer<typeof PlanConformanceCounts>;

export const PlanConformanceReport = z.strictObject({
  ok: z.boolean(),
  failures: z.array(PlanFinding),
  /** Not failures, but not to pass unseen: an unfinished run, a check that could not apply. */
  notes: z.array(PlanFinding),
  checked: PlanConformanceCounts,
});
export type PlanConformanceReport = z.infer<typeof PlanConformanceReport>;

export function emptyCounts(): PlanConformanceCounts {
  return {
    events_read: 0,
    controller_events_checked: 0,
    wakes_planned: 0,
    wakes_started: 0,
    wakes_ended: 0,
    interventions_planned: 0,
    interventions_delivered: 0,
    emergency_stops: 0,
    sealed: false,
    manifest_checked: false,
    prereg_checked: false,
    plan_rebuilt: false,
  };
}

/** The findings of one run, in the order they were found; the checker never stops at the first. */
export class Findings {
  readonly failures: PlanFinding[] = [];
  readonly notes: PlanFinding[] = [];
  private failureCount = 0;
  fail(file: string, seq: number | null, message: string): void {
    this.failureCount += 1;
    if (this.failureCount <= MAX_FAILURES_PER_RUN) this.failures.push({ file, seq, message });
  }
  note(file: string, seq: number | null, message: string): void {
    this.notes.push({ file, seq, message });
  }
  /** Says how many failures were not listed, so a long list is never cut silently. */
  finish(): PlanFinding[] {
    if (this.failureCount > MAX_FAILURES_PER_RUN) {
      this.failures.push({ file: RUN_FILES.store, seq: null, message: `${this.failureCount - MAX_FAILURES_PER_RUN} more plan failures were not listed (limit ${MAX_FAILURES_PER_RUN})` });
    }
    return this.failures;
  }
}
