// The 72-hour pictures' input for report.html: for each instance of the report, its run folder's
// plan and the rows of the types the picture reads (timeline/), and the accuracy the report
// already holds (per_wake, the oracle's values). Read when the report is written, from the study
// folder; the replicates drawn are bounded (a 300-instance study draws its first ones and says how
// many are left out), and a folder that cannot be read is a strip that says why, never a gap.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ExperimentPlan } from '../design/experiment-plan.js';
import type { Group } from '../design/groups.js';
import type { ReportInstance, StudyReport } from '../oracle/study-report.js';
import { EventEnvelope } from '../schema/envelope.js';
import { RUN_FILES } from '../schema/run-files.js';
import { buildInstanceTimeline, type InstanceTimeline, type WakeAccuracy } from '../timeline/instance-timeline.js';
import { TIMELINE_EVENT_TYPES } from '../timeline/timeline-lanes.js';
import { StoreReader } from '../writer/store-reader.js';

/** Replicates drawn in report.html (three strips each); the rest are counted under the strips. */
export const MAX_REPLICATES_DRAWN = 20;
/** Rows of the picture's types read from one store: a 72-hour run has about 200. */
const MAX_ROWS_READ = 200_000;
const ROWS_PER_READ = 1_000;
/** A plan.json larger than this is not read (a plan is about 40 KB). */
const MAX_PLAN_BYTES = 16 * 1024 * 1024;

export interface InstanceStrip {
  readonly group: Group;
  readonly replicate: number;
  readonly dir: string;
  /** null: not drawn, and `problem` says why. */
  readonly timeline: InstanceTimeline | null;
  readonly problem: string | null;
}

export interface ReportTimelines {
  readonly strips: readonly InstanceStrip[];
  /** Replicates of the report not drawn (past MAX_REPLICATES_DRAWN). */
  readonly replicates_not_drawn: number;
}

function readPlan(runDir: string): ExperimentPlan {
  const file = path.join(runDir, RUN_FILES.plan);
  if (!existsSync(file)) throw new Error(`no ${RUN_FILES.plan} in ${runDir}`);
  // The bound is checked before the read, so an oversized plan is never loaded whole.
  const bytes = statSync(file).size;
  if (bytes > MAX_PLAN_BYTES) throw new Error(`${file} is ${bytes} bytes, over ${MAX_PLAN_BYTES}`);
  const text = readFileSync(file, 'utf8');
  const parsed = ExperimentPlan.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${file} is not an experiment plan`);
  return parsed.data;
}

/** The row's text as the envelope of `seq`; null when it is not one (verify names what is wrong). */
function envelopeOf(text: string, seq: number): EventEnvelope | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = EventEnvelope.safeParse(raw);
  return parsed.success && parsed.data.seq === seq ? parsed.data : null;
}

function readTimelineEvents(runDir: string): { events: EventEnvelope[]; problems: string[] } {
  const reader = StoreReader.open(path.join(runDir, RUN_FILES.store));
  const events: EventEnvelope[] = [];
  const problems: string[] = [];
  let unreadable = 0;
  try {
    let after = 0;
    // Bounded: each read moves `after` past its last row; at most MAX_ROWS_READ rows in all.
    while (events.length + unreadable < MAX_ROWS_READ) {
      const rows = reader.eventsPage(after, 'after', ROWS_PER_READ, TIMELINE_EVENT_TYPES);
      for (const row of rows) {
        const event = envelopeOf(row.envelope, row.seq);
        if (event === null) unreadable += 1;
        else events.push(event);
      }
      if (rows.length < ROWS_PER_READ) break;
      after = rows.at(-1)!.seq;
    }
    if (events.length + unreadable >= MAX_ROWS_READ) problems.push(`only the first ${MAX_ROWS_READ} rows of the picture's types were read`);
  } finally {
    reader.close();
  }
  if (unreadable > 0) problems.push(`${unreadable} row(s) do not read as events and are not drawn (npm run verify says why)`);
  return { events, problems };
}

function accuracyOf(instance: ReportInstance): WakeAccuracy {
  if (instance.status !== 'finished') return { unavailable: `the instance is ${instance.status}, not scored` };
  return { per_wake: instance.per_wake };
}

function stripOf(outDir: string, instance: ReportInstance): InstanceStrip {
  const base = { group: instance.group, replicate: instance.replicate, dir: instance.dir };
  const runDir = path.join(outDir, instance.dir);
  try {
    const plan = readPlan(runDir);
    const read = readTimelineEvents(runDir);
    const timeline = buildInstanceTimeline({ events: read.events, plan, accuracy: accuracyOf(instance) });
    return { ...base, timeline: { ...timeline, problems: [...read.problems, ...timeline.problems] }, problem: null };
  } catch (error) {
    return { ...base, timeline: null, problem: `not drawn: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The strips of the report's first MAX_REPLICATES_DRAWN replicates, read from the study folder `outDir`. */
export function readReportTimelines(outDir: string, report: StudyReport): ReportTimelines {
  const replicates = [...new Set(report.instances.map((i) => i.replicate))].sort((a, b) => a - b);
  const drawn = new Set(replicates.slice(0, MAX_REPLICATES_DRAWN));
  const strips = report.instances.filter((i) => drawn.has(i.replicate)).map((i) => stripOf(outDir, i));
  return { strips, replicates_not_drawn: replicates.length - drawn.size };
}
