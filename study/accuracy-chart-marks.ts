// The interventions and crashes drawn along the foot of report.html's accuracy-over-time chart,
// from the same strips as the 72-hour pictures (instance-timelines.ts), so a dip in a group's
// accuracy can be read against what happened at that hour. An intervention is one mark per
// replicate and id (A, B and C of a replicate get it at the same hour: their plan is one); a crash is
// one mark per restart of each instance. Shape and letter as in the pictures' key.
import { letterSvg, px, shapeSvg } from '../timeline/mark-shapes.js';
import { markStyle, type Lane } from '../timeline/timeline-lanes.js';
import { escapeHtml } from '../foundation/html-escape.js';
import type { ReportTimelines } from './instance-timelines.js';

const MARK_PX = 8;
/** Heights above the plot's floor of the two rows, and the step of marks stacked at one hour. */
const ROW_ABOVE_FLOOR_PX: Readonly<Record<'interventions' | 'crashes', number>> = { interventions: 9, crashes: 23 };
const STACK_STEP_PX = 5;
/** The note on the marks sits between the hour labels and the axis title. */
const NOTE_BELOW_FLOOR_PX = 36;

interface ChartMark {
  readonly lane: 'interventions' | 'crashes';
  readonly kind: string;
  readonly hours: number;
  readonly replicate: number;
  readonly groups: string[];
  readonly title: string;
}

function chartMarks(timelines: ReportTimelines): ChartMark[] {
  const marks = new Map<string, ChartMark>();
  for (const strip of timelines.strips) {
    for (const mark of strip.timeline?.marks ?? []) {
      if (mark.lane !== 'interventions' && mark.lane !== 'crashes') continue;
      // An intervention: one per replicate and intervention id; a crash: one per instance's restart.
      const key = mark.lane === 'interventions' ? `i|${strip.replicate}|${mark.ref ?? `seq ${mark.seq}`}` : `c|${strip.group}|${strip.replicate}|${mark.seq}`;
      const known = marks.get(key);
      if (known !== undefined) known.groups.push(strip.group);
      else marks.set(key, { lane: mark.lane, kind: mark.kind, hours: mark.hours, replicate: strip.replicate, groups: [strip.group], title: mark.title });
    }
  }
  return [...marks.values()].sort((a, b) => a.hours - b.hours);
}

/** The marks' SVG for a chart whose x is `xOfHours` and whose plot ends at `floorPx`; none without strips. */
export function accuracyChartMarks(timelines: ReportTimelines | null): (xOfHours: (hours: number) => number, floorPx: number) => string[] {
  return (xOfHours, floorPx) => {
    if (timelines === null) return [];
    const stacked = new Map<string, number>();
    return chartMarks(timelines).map((mark) => {
      const x = xOfHours(mark.hours);
      const slot = `${mark.lane}|${Math.round(x / MARK_PX)}`;
      const level = stacked.get(slot) ?? 0;
      stacked.set(slot, level + 1);
      const y = floorPx - ROW_ABOVE_FLOOR_PX[mark.lane] - level * STACK_STEP_PX;
      const style = markStyle(mark.lane as Lane, mark.kind);
      const who = `replicate ${mark.replicate}, ${mark.lane === 'interventions' ? `groups ${mark.groups.join(', ')}` : `group ${mark.groups.join(', ')}`}`;
      const cls = mark.lane === 'interventions' ? 'chart-intervention' : 'chart-crash';
      return `<g class="${cls}" data-replicate="${mark.replicate}" data-kind="${escapeHtml(mark.kind)}" data-groups="${escapeHtml(mark.groups.join(''))}"><title>${escapeHtml(`${style.meaning} at h${mark.hours.toFixed(2)} (${who}): ${mark.title}`)}</title>${shapeSvg(style, x, y, MARK_PX)}${letterSvg(style, x, y, MARK_PX)}</g>`;
    }).concat(timelines.strips.length === 0 ? [] : [`<text x="${px(xOfHours(0))}" y="${px(floorPx + NOTE_BELOW_FLOOR_PX)}" font-size="10" fill="#333">foot of the plot: ◆ interventions (letter: kind), ✕ crashes — see the 72-hour strips' key</text>`]);
  };
}
