// One instance's 72 simulated hours as marks on lanes, from its events and its plan alone (pure:
// no clock, no I/O). x is simulated hours since the plan's start, read from each event's
// occurred_at (the virtual clock's time); the plan gives hour 0, each intervention's kind, the
// scheduled wakes that never started and the long absence. The accuracy lane takes the oracle's
// per-wake values from the caller (the study's report, the desk's own scoring) — this file does
// not score. Nothing is dropped unsaid: an event whose payload does not read, a mark past the
// bound, a lane with nothing to draw from — each is a problem the picture prints.
import type { ExperimentPlan } from '../design/experiment-plan.js';
import { MINUTES_PER_HOUR, MS_PER_MINUTE } from '../design/wake-schedule.js';
import { bounded } from '../foundation/bounded-text.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { TypedEvent } from '../schema/event-catalog.js';
import { TIMELINE_EVENT_TYPES, type Lane } from './timeline-lanes.js';

/** Marks drawn for one instance; more are counted in `problems`, never silently left out. A 72-hour run draws about 150. */
export const MAX_TIMELINE_MARKS = 20_000;
/** Problems listed one by one; more are counted. */
const MAX_PROBLEMS_LISTED = 8;
/** Model text (a FACT's statement, a failure's detail) kept in a mark's tooltip. */
const MAX_TITLE_TEXT_CHARS = 160;
const MS_PER_HOUR = MS_PER_MINUTE * MINUTES_PER_HOUR;

export interface TimelineMark {
  readonly lane: Lane;
  /** A key of the lane's styles (timeline-lanes.ts MARK_STYLES). */
  readonly kind: string;
  /** The event the mark stands for: the page it links to. */
  readonly seq: number;
  /** Simulated hours since the plan's start (may lie outside 0–72: the picture clamps and the title says). */
  readonly hours: number;
  /** The accuracy lane's value in points (0–100); null on every other lane. */
  readonly points: number | null;
  /** Plain text: what the mark is (escaped where it is drawn). */
  readonly title: string;
  /** What names the mark's subject across the groups of a replicate (an intervention's id); null on other lanes. */
  readonly ref: string | null;
}

export interface TimelineSpan {
  readonly start_hours: number;
  readonly end_hours: number;
}

export interface InstanceTimeline {
  readonly start_at: string;
  readonly marks: readonly TimelineMark[];
  /** Scheduled wakes that have no WakeStarted (a stopped or unfinished run): drawn faint, not marks. */
  readonly planned_wakes: readonly { readonly wake_id: string; readonly hours: number }[];
  readonly long_absence: TimelineSpan | null;
  /** What the picture could not draw, or drew without something it needs; printed under it. */
  readonly problems: readonly string[];
}

/** The oracle's value of each scored wake, or why there is none. */
export type WakeAccuracy = { readonly per_wake: readonly { readonly wake_id: string; readonly at_minute: number; readonly value: number }[] } | { readonly unavailable: string };

export interface TimelineInput {
  /** The instance's events in seq order (others than TIMELINE_EVENT_TYPES are passed over). */
  readonly events: readonly EventEnvelope[];
  /** null: the run has no readable plan (hour 0 is then the first event's time, and the problems say so). */
  readonly plan: ExperimentPlan | null;
  readonly accuracy: WakeAccuracy;
}

const READ_TYPES: ReadonlySet<string> = new Set(TIMELINE_EVENT_TYPES);

class Marks {
  readonly marks: TimelineMark[] = [];
  readonly problems: string[] = [];
  private problemsNotListed = 0;
  private marksNotDrawn = 0;

  add(mark: TimelineMark): void {
    if (this.marks.length < MAX_TIMELINE_MARKS) this.marks.push(mark);
    else this.marksNotDrawn += 1;
  }

  problem(text: string): void {
    if (this.problems.length < MAX_PROBLEMS_LISTED) this.problems.push(text);
    else this.problemsNotListed += 1;
  }

  finish(): string[] {
    const out = [...this.problems];
    if (this.problemsNotListed > 0) out.push(`${this.problemsNotListed} more problem(s) not listed`);
    if (this.marksNotDrawn > 0) out.push(`${this.marksNotDrawn} mark(s) not drawn: the picture draws at most ${MAX_TIMELINE_MARKS}`);
    return out;
  }
}

function hoursOf(iso: string, startMs: number): number {
  return (Date.parse(iso) - startMs) / MS_PER_HOUR;
}

const hourText = (hours: number): string => `h${hours.toFixed(2)}`;

function markOf(typed: TypedEvent, event: EventEnvelope, hours: number, ended: ReadonlyMap<string, string>, kinds: ReadonlyMap<string, string>): Omit<TimelineMark, 'seq' | 'hours' | 'points' | 'ref'> | null {
  const at = `seq ${event.seq}, ${hourText(hours)}`;
  switch (typed.event_type) {
    case 'ExperimentEvent.WakeStarted': {
      const outcome = ended.get(typed.payload.wake_id) ?? 'open';
      return { lane: 'wakes', kind: outcome, title: `${typed.payload.wake_id}: ${outcome === 'open' ? 'never ended' : outcome} (${at})` };
    }
    case 'ExperimentEvent.InterventionDelivered': {
      const kind = kinds.get(typed.payload.intervention_id) ?? 'unplanned';
      return { lane: 'interventions', kind, title: `${typed.payload.intervention_id} (${kind}) delivered in ${typed.payload.wake_id}: ${typed.payload.event_ids.length} event(s) (${at})` };
    }
    case 'SystemEvent.ProcessRestarted':
      return { lane: 'crashes', kind: typed.payload.process, title: `${typed.payload.process} restarted: ${bounded(typed.payload.reason, MAX_TITLE_TEXT_CHARS)} (${at})` };
    case 'SystemEvent.EmergencyStopped':
      return { lane: 'stops', kind: 'stopped', title: `stopped by ${typed.payload.operator}: ${bounded(typed.payload.reason, MAX_TITLE_TEXT_CHARS)} (${at})` };
    case 'SystemEvent.Paused':
      return { lane: 'stops', kind: 'paused', title: `paused by ${typed.payload.operator}: ${bounded(typed.payload.reason, MAX_TITLE_TEXT_CHARS)} (${at})` };
    case 'SystemEvent.Resumed':
      return { lane: 'stops', kind: 'resumed', title: `resumed by ${typed.payload.operator}: ${bounded(typed.payload.reason, MAX_TITLE_TEXT_CHARS)} (${at})` };
    case 'ModelOutputEvent.ModelCallFailed':
      return { lane: 'model_failures', kind: typed.payload.failure, title: `${typed.payload.wake_id}: model call failed (${typed.payload.failure}): ${bounded(typed.payload.detail, MAX_TITLE_TEXT_CHARS)} (${at})` };
    case 'ActionEvent.PermissionDecided': {
      if (typed.payload.decision !== 'deny') return null;
      const failed = typed.payload.rules.filter((r) => !r.passed).map((r) => r.rule);
      return { lane: 'denials', kind: 'denied', title: `${typed.payload.proposal_id} denied${failed.length > 0 ? ` by ${failed.join(', ')}` : ''}${typed.payload.repeat_of_denied ? ' (a repeat of a denied action)' : ''} (${at})` };
    }
    case 'MemoryEvent.ClaimRecorded':
      if (typed.payload.claim_type !== 'FACT') return null;
      return { lane: 'facts', kind: 'fact', title: `FACT ${typed.payload.claim_id}: ${bounded(typed.payload.statement, MAX_TITLE_TEXT_CHARS)} (${at})` };
    default:
      return null;
  }
}

/** The marks of the accuracy lane: one per scored wake, linked to its checkpoint (or its WakeStarted when it has none). */
function accuracyMarks(out: Marks, accuracy: WakeAccuracy, checkpointSeq: ReadonlyMap<string, number>, wakeSeq: ReadonlyMap<string, number>): void {
  if ('unavailable' in accuracy) {
    out.problem(`checkpoint accuracy not drawn: ${accuracy.unavailable}`);
    return;
  }
  const notStarted: string[] = [];
  for (const wake of accuracy.per_wake) {
    const seq = checkpointSeq.get(wake.wake_id) ?? wakeSeq.get(wake.wake_id);
    const hours = wake.at_minute / MINUTES_PER_HOUR;
    if (seq === undefined) {
      notStarted.push(`${wake.wake_id} (${wake.value})`);
      continue;
    }
    const source = checkpointSeq.has(wake.wake_id) ? `checkpoint seq ${seq}` : `no checkpoint; seq ${seq} is its WakeStarted`;
    out.add({ lane: 'accuracy', kind: 'scored', seq, hours, points: wake.value, ref: null, title: `${wake.wake_id}: checkpoint accuracy ${wake.value} of 100 (${source}, ${hourText(hours)})` });
  }
  if (notStarted.length > 0) out.problem(`${notStarted.length} scored wake(s) have no WakeStarted here, so no event to draw their accuracy on: ${notStarted.slice(0, 3).join(', ')}${notStarted.length > 3 ? ', …' : ''} (points in brackets)`);
}

export function buildInstanceTimeline({ events, plan, accuracy }: TimelineInput): InstanceTimeline {
  const out = new Marks();
  const typedEvents: { event: EventEnvelope; typed: TypedEvent }[] = [];
  for (const event of events) {
    if (!READ_TYPES.has(event.event_type)) continue;
    const read = currentPayloadOf(event);
    if (read.ok) typedEvents.push({ event, typed: read.event });
    else out.problem(`seq ${event.seq} (${event.event_type}) is not drawn: ${read.reason}`);
  }
  const firstAt = typedEvents[0]?.event.occurred_at ?? events[0]?.occurred_at ?? new Date(0).toISOString();
  const startAt = plan?.schedule.start_at ?? firstAt;
  if (plan === null) out.problem('no plan: hour 0 is the first event\'s time, and intervention kinds and scheduled wakes are unknown');
  const startMs = Date.parse(startAt);
  const ended = new Map<string, string>();
  const wakeSeq = new Map<string, number>();
  const checkpointSeq = new Map<string, number>();
  for (const { event, typed } of typedEvents) {
    if (typed.event_type === 'ExperimentEvent.WakeEnded') ended.set(typed.payload.wake_id, typed.payload.outcome);
    if (typed.event_type === 'ExperimentEvent.WakeStarted') wakeSeq.set(typed.payload.wake_id, event.seq);
    if (typed.event_type === 'ExperimentEvent.CheckpointRecorded') checkpointSeq.set(typed.payload.wake_id, event.seq);
  }
  const kinds = new Map<string, string>((plan?.interventions ?? []).map((iv) => [iv.intervention_id, iv.kind]));
  for (const { event, typed } of typedEvents) {
    const hours = hoursOf(event.occurred_at, startMs);
    const mark = markOf(typed, event, hours, ended, kinds);
    const ref = typed.event_type === 'ExperimentEvent.InterventionDelivered' ? typed.payload.intervention_id : null;
    if (mark !== null) out.add({ ...mark, seq: event.seq, hours, points: null, ref });
  }
  accuracyMarks(out, accuracy, checkpointSeq, wakeSeq);
  const absence = plan?.schedule.long_absence ?? null;
  return {
    start_at: startAt,
    marks: out.marks,
    planned_wakes: (plan?.schedule.wakes ?? []).filter((w) => !wakeSeq.has(w.wake_id)).map((w) => ({ wake_id: w.wake_id, hours: w.at_minute / MINUTES_PER_HOUR })),
    long_absence: absence === null ? null : { start_hours: absence.start_minute / MINUTES_PER_HOUR, end_hours: absence.end_minute / MINUTES_PER_HOUR },
    problems: out.finish(),
  };
}
