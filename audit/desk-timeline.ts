// The 72-hour picture of the desk's run: the rows of the types the picture reads (timeline/),
// read a page at a time by the desk's own paging, the run's plan, and the checkpoint accuracy
// scored exactly as the study scores it (oracle/instance-evaluation.ts: same oracle, same
// folder). Built once per desk: the store of an indexed desk does not change under it (a grown
// store is announced on every page and needs a restart). A row that does not read as an event,
// rows past the bound, a run that cannot be scored: each is a problem printed with the picture.
import { evaluateInstance } from '../oracle/instance-evaluation.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { buildInstanceTimeline, type InstanceTimeline, type WakeAccuracy } from '../timeline/instance-timeline.js';
import { TIMELINE_EVENT_TYPES } from '../timeline/timeline-lanes.js';
import { TIMELINE_PAGE_EVENTS, type AuditDesk } from './audit-desk.js';

/** Rows the picture reads from one store; a 72-hour run has about 200 of its types. */
export const MAX_TIMELINE_ROWS = 200_000;

const BUILT = new WeakMap<AuditDesk, InstanceTimeline>();

interface ReadRows {
  readonly events: EventEnvelope[];
  readonly problems: string[];
}

function readTimelineRows(desk: AuditDesk): ReadRows {
  const events: EventEnvelope[] = [];
  const problems: string[] = [];
  let after = 0;
  let unreadable = 0;
  // Bounded: each page moves `after` forward by at least one row; MAX_TIMELINE_ROWS rows at most.
  for (let read = 0; read < MAX_TIMELINE_ROWS; ) {
    const page = desk.timeline({ afterSeq: after }, TIMELINE_PAGE_EVENTS.max, TIMELINE_EVENT_TYPES);
    for (const row of page.rows) {
      if (row.event === null) unreadable += 1;
      else events.push(row.event);
    }
    read += page.rows.length;
    const last = page.rows.at(-1);
    if (last === undefined || page.later_after === null) break;
    after = last.seq;
    if (read >= MAX_TIMELINE_ROWS) problems.push(`rows after seq ${after} are not read: the picture reads at most ${MAX_TIMELINE_ROWS} rows of its types`);
  }
  if (unreadable > 0) problems.push(`${unreadable} row(s) of the picture's types do not read as events and are not drawn (see Chain & signatures)`);
  return { events, problems };
}

function accuracyOf(desk: AuditDesk): WakeAccuracy {
  // The study scores finished runs only; an unfinished one would score its wakes to come as 0.
  if (desk.index.sealed_seq === null) return { unavailable: 'the run is not finished (its store is not sealed): a study scores finished runs only' };
  try {
    const evaluation = evaluateInstance(desk.folder.runDir, { scenariosDir: desk.scenariosDir, expectedPreregSha256: null });
    return { per_wake: evaluation.score.per_wake };
  } catch (error) {
    return { unavailable: `the run cannot be scored: ${error instanceof Error ? error.message : String(error)}` };
  }
}

export function deskTimeline(desk: AuditDesk): InstanceTimeline {
  const built = BUILT.get(desk);
  if (built !== undefined) return built;
  const rows = readTimelineRows(desk);
  const plan = desk.folder.plan.ok ? desk.folder.plan.value : null;
  const timeline = buildInstanceTimeline({ events: rows.events, plan, accuracy: accuracyOf(desk) });
  const planProblem = desk.folder.plan.ok ? [] : [`plan.json not read: ${desk.folder.plan.problem}`];
  const whole = { ...timeline, problems: [...planProblem, ...rows.problems, ...timeline.problems] };
  BUILT.set(desk, whole);
  return whole;
}
