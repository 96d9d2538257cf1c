// An instance's 72-hour picture as one inline SVG element: a lane per row (timeline-lanes.ts),
// simulated hours 0–72 across, the long absence shaded and labelled, each mark a shape with its
// letter and a <title> saying what it is; in the audit desk each mark is a link to its event's
// page. No script, no reference outside the element, no colour-only meaning; every text from
// the run (FACT statements, failure details, ids) is escaped here, because model text is hostile.
import { SIMULATED_HOURS } from '../design/wake-schedule.js';
import { escapeHtml } from '../foundation/html-escape.js';
import type { InstanceTimeline, TimelineMark } from './instance-timeline.js';
import { letterSvg, px, shapeSvg } from './mark-shapes.js';
import { LANE_LABELS, LANES, markStyle, type Lane } from './timeline-lanes.js';

export interface TimelineSvgOptions {
  /** The svg element's id (unique in its page). */
  readonly id: string;
  /** Its accessible name and <title>. */
  readonly title: string;
  /** Where a mark links; null: marks are not links (a report opened from a file). */
  readonly hrefOf: ((seq: number) => string) | null;
  /** Compact: lower lanes and smaller marks, for a strip among many (the study report). */
  readonly compact: boolean;
  /** Extra attributes' values on the svg element (data-group, data-replicate…), escaped here. */
  readonly data?: Readonly<Record<string, string>>;
}

const WIDTH_PX = 960;
const LABEL_COLUMN_PX = 150;
const RIGHT_MARGIN_PX = 24;
const TOP_PX = 8;
const AXIS_PX = 30;
const PROBLEM_LINE_PX = 14;
const HOURS_GRID_STEP = 6;
const HOURS_LABEL_STEP = 12;
/** Marks of a lane closer than this many pixels are drawn one above another, up to STACK_LEVELS. */
const STACK_GAP_PX = 6;
const STACK_LEVELS = 3;
const SIZES = { full: { lanePx: 30, markPx: 9 }, compact: { lanePx: 16, markPx: 6 } } as const;

const PLOT_WIDTH_PX = WIDTH_PX - LABEL_COLUMN_PX - RIGHT_MARGIN_PX;
const xOfHours = (hours: number): number => LABEL_COLUMN_PX + (Math.min(Math.max(hours, 0), SIMULATED_HOURS) / SIMULATED_HOURS) * PLOT_WIDTH_PX;

function laneTop(lane: Lane, lanePx: number): number {
  return TOP_PX + LANES.indexOf(lane) * lanePx;
}

/** The vertical offset of each mark: a mark close to the one before it in its lane moves up a level. */
function stackLevels(marks: readonly TimelineMark[]): number[] {
  const lastX = new Map<Lane, { x: number; level: number }>();
  return marks.map((mark) => {
    const x = xOfHours(mark.hours);
    const previous = lastX.get(mark.lane);
    const level = previous !== undefined && Math.abs(x - previous.x) < STACK_GAP_PX ? (previous.level + 1) % STACK_LEVELS : 0;
    lastX.set(mark.lane, { x, level });
    return level;
  });
}

function markSvg(mark: TimelineMark, level: number, options: TimelineSvgOptions): string {
  const { lanePx, markPx } = SIZES[options.compact ? 'compact' : 'full'];
  const style = markStyle(mark.lane, mark.kind);
  const x = xOfHours(mark.hours);
  const top = laneTop(mark.lane, lanePx);
  const attributes = `class="mark" data-lane="${mark.lane}" data-kind="${escapeHtml(mark.kind)}" data-seq="${mark.seq}"`;
  const title = `<title>${escapeHtml(`#${mark.seq} ${style.meaning}: ${mark.title}`)}</title>`;
  let drawn: string;
  if (mark.lane === 'accuracy' && mark.points !== null) {
    // A bar from the lane's floor, its height the value: 0 points still leaves a visible stub.
    const floor = top + lanePx - 2;
    const height = Math.max(1.5, ((lanePx - 4) * Math.min(Math.max(mark.points, 0), 100)) / 100);
    drawn = `<rect x="${px(x - markPx / 3)}" y="${px(floor - height)}" width="${px((2 * markPx) / 3)}" height="${px(height)}" fill="${style.colour}" stroke="#000" stroke-width="0.6"/>`;
  } else {
    const y = top + lanePx / 2 - level * (markPx / 2 + 1);
    drawn = shapeSvg(style, x, y, markPx) + letterSvg(style, x, y, markPx);
  }
  const group = `<g ${attributes}>${title}${drawn}</g>`;
  return options.hrefOf === null ? group : `<a href="${escapeHtml(options.hrefOf(mark.seq))}">${group}</a>`;
}

function frameSvg(timeline: InstanceTimeline, options: TimelineSvgOptions, plotBottom: number): string[] {
  const { lanePx, markPx } = SIZES[options.compact ? 'compact' : 'full'];
  const out: string[] = [];
  const absence = timeline.long_absence;
  if (absence !== null) {
    const x1 = xOfHours(absence.start_hours);
    const x2 = xOfHours(absence.end_hours);
    out.push(`<g class="long-absence"><title>${escapeHtml(`long absence: h${absence.start_hours.toFixed(2)} to h${absence.end_hours.toFixed(2)} (no wake)`)}</title><rect x="${px(x1)}" y="${TOP_PX}" width="${px(x2 - x1)}" height="${px(plotBottom - TOP_PX)}" fill="#eee" stroke="#999" stroke-dasharray="3 2"/><text x="${px((x1 + x2) / 2)}" y="${px(plotBottom - 3)}" text-anchor="middle" font-size="9" fill="#444">long absence</text></g>`);
  }
  for (let hours = 0; hours <= SIMULATED_HOURS; hours += HOURS_GRID_STEP) {
    const x = xOfHours(hours);
    out.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${TOP_PX}" y2="${px(plotBottom + 4)}" stroke="${hours % HOURS_LABEL_STEP === 0 ? '#bbb' : '#e4e4e4'}"/>`);
    if (hours % HOURS_LABEL_STEP === 0) out.push(`<text x="${px(x)}" y="${px(plotBottom + 16)}" text-anchor="middle">${hours}</text>`);
  }
  out.push(`<text x="${px(LABEL_COLUMN_PX + PLOT_WIDTH_PX / 2)}" y="${px(plotBottom + 28)}" text-anchor="middle" class="axis-title">simulated hours since the start</text>`);
  for (const lane of LANES) {
    const top = laneTop(lane, lanePx);
    out.push(
      `<line x1="${LABEL_COLUMN_PX}" x2="${LABEL_COLUMN_PX + PLOT_WIDTH_PX}" y1="${px(top + lanePx)}" y2="${px(top + lanePx)}" stroke="#ddd"/>`,
      `<text class="lane-label" x="${LABEL_COLUMN_PX - 6}" y="${px(top + lanePx / 2 + 4)}" text-anchor="end">${LANE_LABELS[lane]}</text>`,
    );
  }
  const wakesY = laneTop('wakes', lanePx) + lanePx / 2;
  for (const planned of timeline.planned_wakes) {
    const x = xOfHours(planned.hours);
    out.push(`<g class="planned-wake"><title>${escapeHtml(`${planned.wake_id}: scheduled at h${planned.hours.toFixed(2)}, never started`)}</title><rect x="${px(x - markPx / 2)}" y="${px(wakesY - markPx / 2)}" width="${px(markPx)}" height="${px(markPx)}" fill="none" stroke="#999" stroke-dasharray="2 1"/></g>`);
  }
  return out;
}

/** The picture of one instance; `timeline.problems` are printed under the axis, in the element. */
export function timelineSvg(timeline: InstanceTimeline, options: TimelineSvgOptions): string {
  const { lanePx } = SIZES[options.compact ? 'compact' : 'full'];
  const plotBottom = TOP_PX + LANES.length * lanePx;
  const problemsTop = plotBottom + AXIS_PX + 6;
  const height = problemsTop + timeline.problems.length * PROBLEM_LINE_PX + 4;
  const levels = stackLevels(timeline.marks);
  const data = Object.entries(options.data ?? {}).map(([key, value]) => ` data-${escapeHtml(key)}="${escapeHtml(value)}"`).join('');
  return [
    `<svg id="${escapeHtml(options.id)}" class="timeline" role="img" aria-label="${escapeHtml(options.title)}"${data} width="${WIDTH_PX}" height="${px(height)}" viewBox="0 0 ${WIDTH_PX} ${px(height)}" font-family="system-ui, sans-serif" font-size="${options.compact ? 10 : 12}">`,
    `<title>${escapeHtml(options.title)}</title>`,
    `<rect x="0" y="0" width="${WIDTH_PX}" height="${px(height)}" fill="#fff"/>`,
    ...frameSvg(timeline, options, plotBottom),
    ...timeline.marks.map((mark, i) => markSvg(mark, levels[i] ?? 0, options)),
    ...timeline.problems.map((p, i) => `<text class="timeline-problem" x="4" y="${px(problemsTop + (i + 1) * PROBLEM_LINE_PX - 3)}" fill="#a40000">${escapeHtml(`⚠ ${p}`)}</text>`),
    '</svg>',
  ].join('\n');
}
