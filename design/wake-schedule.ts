// The shared wake schedule (spec §5.2, §7.1): every group of a batch gets exactly this list.
//
// Rule, in simulated minutes from the start (the pre-registration fixes the numbers):
// - wake-0001 at minute 0, so the subject reads its goal before anything happens;
// - then one wake per base period k·P (k = 1, 2, …, k·P < 72 h), each moved by a seeded
//   uniform offset in [-jitter, +jitter]; jitter < P/2 (checked by the pre-registration), so
//   wakes never swap order;
// - one long absence [absenceStart, absenceStart + L), absenceStart a seeded whole minute in
//   [earliest, latest] hours; jittered wakes inside it are dropped (half-open, so a wake may
//   fall exactly at its end);
// - a final wake at exactly 72 h for the report; a jittered wake at or past 72 h is dropped.
// Draw order: the absence start first, then one jitter per base period whether or not the
// wake survives, so the draws never depend on which wakes were dropped.
import { z } from 'zod';
import type { PreRegistration } from './prereg.js';
import type { SeededRandom } from './seeded-random.js';
import { Budget } from '../schema/events/experiment-events.js';
import { Identifier, Timestamp } from '../schema/event-definition.js';

export const SIMULATED_HOURS = 72;
export const MINUTES_PER_HOUR = 60;
export const MS_PER_MINUTE = 60_000;
export const SCENARIO_MINUTES = SIMULATED_HOURS * MINUTES_PER_HOUR;
/** One wake per simulated minute at most, plus the first and the final wake. */
export const MAX_WAKES = SCENARIO_MINUTES + 2;

export const ScheduledWake = z.strictObject({
  wake_id: Identifier,
  wake_at: Timestamp,
  /** Minutes since the start; redundant with wake_at, kept so readers need no date arithmetic. */
  at_minute: z.number().int().min(0).max(SCENARIO_MINUTES),
  budget: Budget,
});
export type ScheduledWake = z.infer<typeof ScheduledWake>;

export const LongAbsence = z.strictObject({
  start_at: Timestamp,
  end_at: Timestamp,
  start_minute: z.number().int().min(0).max(SCENARIO_MINUTES),
  /** Exclusive: a wake at end_minute is allowed. */
  end_minute: z.number().int().min(0).max(SCENARIO_MINUTES),
});
export type LongAbsence = z.infer<typeof LongAbsence>;

export const WakeSchedule = z.strictObject({
  start_at: Timestamp,
  long_absence: LongAbsence,
  wakes: z.array(ScheduledWake).min(2).max(MAX_WAKES),
});
export type WakeSchedule = z.infer<typeof WakeSchedule>;

export function wakeIdOf(index: number): string {
  return `wake-${String(index + 1).padStart(4, '0')}`;
}

export function isoAtMinute(startMs: number, minute: number): string {
  return new Date(startMs + minute * MS_PER_MINUTE).toISOString();
}

export function buildWakeSchedule(prereg: PreRegistration, random: SeededRandom, startAt: string): WakeSchedule {
  const startMs = Date.parse(Timestamp.parse(startAt));
  const rule = prereg.wake_schedule;
  const periodMinutes = rule.base_period_sim_minutes;
  const jitterMinutes = rule.jitter_sim_minutes;
  const absenceStartMinute = random.intBetween(rule.long_absence_start_sim_hours.earliest * MINUTES_PER_HOUR, rule.long_absence_start_sim_hours.latest * MINUTES_PER_HOUR);
  const absenceEndMinute = absenceStartMinute + rule.long_absence_sim_minutes;
  if (absenceEndMinute > SCENARIO_MINUTES) throw new RangeError(`long absence ends at minute ${absenceEndMinute}, after hour ${SIMULATED_HOURS}`);

  const minutes: number[] = [0];
  const periods = Math.ceil(SCENARIO_MINUTES / periodMinutes) - 1; // k·P < 72 h
  for (let k = 1; k <= periods; k += 1) {
    const atMinute = k * periodMinutes + random.intBetween(-jitterMinutes, jitterMinutes);
    const inAbsence = atMinute >= absenceStartMinute && atMinute < absenceEndMinute;
    if (atMinute > 0 && atMinute < SCENARIO_MINUTES && !inAbsence) minutes.push(atMinute);
  }
  minutes.push(SCENARIO_MINUTES);

  const budget = { ...prereg.budgets_per_wake };
  return WakeSchedule.parse({
    start_at: new Date(startMs).toISOString(),
    long_absence: { start_at: isoAtMinute(startMs, absenceStartMinute), end_at: isoAtMinute(startMs, absenceEndMinute), start_minute: absenceStartMinute, end_minute: absenceEndMinute },
    wakes: minutes.map((atMinute, i) => ({ wake_id: wakeIdOf(i), wake_at: isoAtMinute(startMs, atMinute), at_minute: atMinute, budget: { ...budget } })),
  });
}

/** The first wake at or after `atMinute` (never earlier); undefined when none is left. */
export function firstWakeAtOrAfter(schedule: WakeSchedule, atMinute: number): ScheduledWake | undefined {
  return schedule.wakes.find((w) => w.at_minute >= atMinute);
}
