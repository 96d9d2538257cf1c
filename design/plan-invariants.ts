// Checks a schedule and an intervention plan against the rules they are built by, so that a
// plan read back from a manifest (or a forged one) can be checked with the same code the
// builder uses. Returns every broken rule, one line each; empty means the plan holds.
import type { PreRegistration } from './prereg.js';
import { INTERVENTION_KINDS, REPLY_DELAY_HOURS, type InterventionPlan } from './intervention-plan.js';
import { MINUTES_PER_HOUR, SCENARIO_MINUTES, type WakeSchedule } from './wake-schedule.js';

export function planProblems(prereg: PreRegistration, schedule: WakeSchedule, plan: InterventionPlan): string[] {
  const problems: string[] = [];
  const wakes = schedule.wakes;
  const byId = new Map(wakes.map((w) => [w.wake_id, w]));
  const startMs = Date.parse(schedule.start_at);
  const { start_minute: absenceStart, end_minute: absenceEnd } = schedule.long_absence;

  wakes.forEach((w, i) => {
    if (Date.parse(w.wake_at) !== startMs + w.at_minute * 60_000) problems.push(`${w.wake_id}: wake_at does not match at_minute`);
    if (i > 0 && w.at_minute <= (wakes[i - 1]?.at_minute ?? -1)) problems.push(`${w.wake_id}: not after the previous wake`);
    if (w.at_minute < 0 || w.at_minute > SCENARIO_MINUTES) problems.push(`${w.wake_id}: outside the 72 h`);
    if (w.at_minute >= absenceStart && w.at_minute < absenceEnd) problems.push(`${w.wake_id}: inside the long absence`);
    const b = prereg.budgets_per_wake;
    if (w.budget.model_calls !== b.model_calls || w.budget.tokens !== b.tokens || w.budget.tool_calls !== b.tool_calls) problems.push(`${w.wake_id}: budget differs from the pre-registration`);
  });
  if (wakes.at(-1)?.at_minute !== SCENARIO_MINUTES) problems.push('the final wake is not at hour 72');
  if (absenceEnd - absenceStart !== prereg.wake_schedule.long_absence_sim_minutes) problems.push('the long absence does not have the pre-registered length');
  const window = prereg.wake_schedule.long_absence_start_sim_hours;
  if (absenceStart < window.earliest * MINUTES_PER_HOUR || absenceStart > window.latest * MINUTES_PER_HOUR) problems.push('the long absence starts outside its pre-registered window');

  for (const kind of INTERVENTION_KINDS) {
    const count = plan.filter((iv) => iv.kind === kind).length;
    if (count !== 1) problems.push(`kind ${kind} appears ${count} times, expected once`);
  }
  if (new Set(plan.map((iv) => iv.intervention_id)).size !== plan.length) problems.push('an intervention_id appears twice');

  const burstWake = plan.find((iv) => iv.kind === 'distractor_burst')?.deliver_wake_id ?? null;
  for (const iv of plan) {
    const wake = byId.get(iv.deliver_wake_id);
    if (!wake) {
      problems.push(`${iv.intervention_id}: deliver_wake_id ${iv.deliver_wake_id} is not a scheduled wake`);
      continue;
    }
    if (Date.parse(iv.inject_at) !== startMs + iv.inject_minute * 60_000) problems.push(`${iv.intervention_id}: inject_at does not match inject_minute`);
    if (wake.at_minute < iv.inject_minute) problems.push(`${iv.intervention_id}: delivered before it is injected`);
    // The *first* wake at or after injection: no group may be made to wait longer.
    const first = wakes.find((w) => w.at_minute >= iv.inject_minute);
    if (first?.wake_id !== iv.deliver_wake_id) problems.push(`${iv.intervention_id}: not delivered at the first wake at or after injection`);
    switch (iv.kind) {
      case 'awaited_reply': {
        const delay = iv.inject_minute - (byId.get(iv.waiting_since_wake_id)?.at_minute ?? Number.NaN);
        if (!(delay >= REPLY_DELAY_HOURS.min * MINUTES_PER_HOUR && delay <= REPLY_DELAY_HOURS.max * MINUTES_PER_HOUR)) problems.push(`${iv.intervention_id}: reply ${delay} minutes after the ask, outside ${REPLY_DELAY_HOURS.min}–${REPLY_DELAY_HOURS.max} h`);
        if (iv.deliver_wake_id === burstWake) problems.push(`${iv.intervention_id}: delivered at ${burstWake} with the distractor burst`);
        break;
      }
      case 'distractor_burst':
        if (iv.events.length <= prereg.retrieval_policy.window_events) problems.push(`${iv.intervention_id}: ${iv.events.length} events do not exceed the retrieval window of ${prereg.retrieval_policy.window_events}`);
        break;
      case 'runtime_crash':
      case 'writer_crash':
        if (iv.crash_wake_id !== iv.deliver_wake_id || wake.at_minute !== iv.inject_minute) problems.push(`${iv.intervention_id}: a crash must happen during its own wake`);
        break;
      case 'goal_change':
      case 'refutation':
        // Delivered with the burst, it would leave every group's window at the wake it arrives.
        if (iv.deliver_wake_id === burstWake) problems.push(`${iv.intervention_id}: delivered at ${burstWake} with the distractor burst`);
        break;
      case 'long_absence':
        if (iv.inject_minute !== absenceStart || iv.end_minute !== absenceEnd) problems.push(`${iv.intervention_id}: does not match the schedule's long absence`);
        break;
      default:
        break;
    }
  }
  const crashWakes = plan.filter((iv) => iv.kind === 'runtime_crash' || iv.kind === 'writer_crash').map((iv) => iv.deliver_wake_id);
  if (new Set(crashWakes).size !== crashWakes.length) problems.push('two crashes share one wake');
  return problems;
}
