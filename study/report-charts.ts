// The three inline SVG charts of report.html: scores per group (every instance a marker), the
// dimensions per group (mean bars, ±1 SD whiskers) and checkpoint accuracy over simulated time.
// Plain SVG text, no script and no reference outside the element, so the page stays one file.
// Groups differ by marker shape, line dash and a printed letter, never by colour alone.
// No free text from the report is written here (only group letters, dimension names and
// numbers), so nothing in a chart needs HTML escaping; report-html.ts escapes all report text.
import { DIMENSIONS, type Dimension } from '../oracle/continuity-score.js';
import { GROUPS, type Group } from '../design/groups.js';
import { type StudyReport } from '../oracle/study-report.js';
import { formatPoints } from './report-markdown.js';

const SCORE_MAX_POINTS = 100;
const SIMULATED_HOURS = 72;
const MINUTES_PER_HOUR = 60;
const HOURS_TICK_STEP = 12;
const POINTS_TICK_STEP = 20;
/** Used, and labelled as such, only when report.thresholds does not state the instance pass score. */
export const FALLBACK_PASS_SCORE_POINTS = 80;

const WIDTH_PX = 720;
const HEIGHT_PX = 392;
const MARGIN_PX = { top: 40, right: 36, bottom: 72, left: 64 } as const;
const PLOT_WIDTH_PX = WIDTH_PX - MARGIN_PX.left - MARGIN_PX.right;
const PLOT_HEIGHT_PX = HEIGHT_PX - MARGIN_PX.top - MARGIN_PX.bottom;
const MARKER_RADIUS_PX = 5;
/** Legend: the length of a line sample, and the distance between entries (room for the longest label). */
const LEGEND_SAMPLE_PX = 28;
const LEGEND_ENTRY_SPACING_PX = 360;
/** Instance markers of a group stay within this distance of the band's centre. */
const DOT_SPREAD_PX = 32;

type Marker = 'circle' | 'square' | 'triangle';
interface GroupMark {
  /** Okabe–Ito colours, distinguishable with the common colour-vision deficiencies. */
  readonly colour: string;
  readonly marker: Marker;
  /** stroke-dasharray of the group's line; 'none' draws it solid. */
  readonly dash: string;
  /** The dash in words, for captions. */
  readonly dashName: string;
}
export const GROUP_MARKS: Readonly<Record<Group, GroupMark>> = {
  A: { colour: '#D55E00', marker: 'square', dash: '2 4', dashName: 'dotted' },
  B: { colour: '#0072B2', marker: 'triangle', dash: '8 4', dashName: 'dashed' },
  C: { colour: '#009E73', marker: 'circle', dash: 'none', dashName: 'solid' },
};

export interface PassLine {
  readonly points: number;
  /** false: the fallback line, labelled as a fixed line, not as the pre-registered pass score. */
  readonly fromThresholds: boolean;
  readonly label: string;
}

/**
 * The threshold checks that state the instance pass score, in the order they are read: a check of
 * the pass score itself, then the count of passing C instances (oracle/verdict.ts writes
 * "C instances scoring ≥ P" as its description, "at least k of n" as required).
 */
const PASS_SCORE_CHECK_IDS = ['instance_pass_score', 'c_instances_passing'] as const;

/** The number after the last "≥" (or ">=") of a check's text; null when there is none. */
function scoreAfterAtLeast(text: string): number | null {
  const matches = [...text.matchAll(/(?:≥|>=)\s*(\d+(?:\.\d+)?)/g)];
  const last = matches.at(-1)?.[1];
  if (last === undefined) return null;
  const value = Number(last);
  return Number.isFinite(value) && value >= 0 && value <= SCORE_MAX_POINTS ? value : null;
}

/** The pass line of the scores chart: read from report.thresholds when it states it. */
export function passLine(report: StudyReport): PassLine {
  for (const id of PASS_SCORE_CHECK_IDS) {
    const check = report.thresholds.find((t) => t.id === id);
    const points = check === undefined ? null : (scoreAfterAtLeast(check.required) ?? scoreAfterAtLeast(check.description));
    if (points !== null) return { points, fromThresholds: true, label: `instance pass score ${formatPoints(points)}` };
  }
  return { points: FALLBACK_PASS_SCORE_POINTS, fromThresholds: false, label: `fixed ${FALLBACK_PASS_SCORE_POINTS} line (pass score not stated in the thresholds)` };
}

const px = (value: number): string => (Math.round(value * 10) / 10).toString();
const yOfPoints = (points: number): number => MARGIN_PX.top + (1 - Math.min(Math.max(points, 0), SCORE_MAX_POINTS) / SCORE_MAX_POINTS) * PLOT_HEIGHT_PX;

function markerSvg(group: Group, x: number, y: number, attributes: string, title: string): string {
  const { colour, marker } = GROUP_MARKS[group];
  const r = MARKER_RADIUS_PX;
  const paint = `fill="${colour}" stroke="#000" stroke-width="1"`;
  const tip = `<title>${title}</title>`;
  if (marker === 'circle') return `<circle ${attributes} cx="${px(x)}" cy="${px(y)}" r="${r}" ${paint}>${tip}</circle>`;
  if (marker === 'square') return `<rect ${attributes} x="${px(x - r)}" y="${px(y - r)}" width="${2 * r}" height="${2 * r}" ${paint}>${tip}</rect>`;
  const h = r * 1.2;
  return `<polygon ${attributes} points="${px(x)},${px(y - h)} ${px(x + h)},${px(y + h * 0.8)} ${px(x - h)},${px(y + h * 0.8)}" ${paint}>${tip}</polygon>`;
}

/** The svg element with its accessible name, a frame, the y axis in points and the axis titles. */
function chartFrame(id: string, title: string, xAxisTitle: string, yAxisTitle: string, body: readonly string[]): string {
  const yTicks: string[] = [];
  for (let points = 0; points <= SCORE_MAX_POINTS; points += POINTS_TICK_STEP) {
    const y = yOfPoints(points);
    yTicks.push(
      `<line x1="${MARGIN_PX.left}" x2="${MARGIN_PX.left + PLOT_WIDTH_PX}" y1="${px(y)}" y2="${px(y)}" stroke="#ddd"/>`,
      `<text x="${MARGIN_PX.left - 8}" y="${px(y + 4)}" text-anchor="end">${points}</text>`,
    );
  }
  const bottom = MARGIN_PX.top + PLOT_HEIGHT_PX;
  const yTitleX = 18;
  const yTitleY = MARGIN_PX.top + PLOT_HEIGHT_PX / 2;
  return [
    `<svg id="${id}" class="chart" role="img" aria-label="${title}" aria-labelledby="${id}-title" width="${WIDTH_PX}" height="${HEIGHT_PX}" viewBox="0 0 ${WIDTH_PX} ${HEIGHT_PX}" font-family="system-ui, sans-serif" font-size="12">`,
    `<title id="${id}-title">${title}</title>`,
    `<rect x="0" y="0" width="${WIDTH_PX}" height="${HEIGHT_PX}" fill="#fff"/>`,
    ...yTicks,
    `<line x1="${MARGIN_PX.left}" x2="${MARGIN_PX.left}" y1="${MARGIN_PX.top}" y2="${bottom}" stroke="#000"/>`,
    `<line x1="${MARGIN_PX.left}" x2="${MARGIN_PX.left + PLOT_WIDTH_PX}" y1="${bottom}" y2="${bottom}" stroke="#000"/>`,
    `<text class="axis-title" x="${yTitleX}" y="${yTitleY}" text-anchor="middle" transform="rotate(-90 ${yTitleX} ${yTitleY})">${yAxisTitle}</text>`,
    `<text class="axis-title" x="${MARGIN_PX.left + PLOT_WIDTH_PX / 2}" y="${HEIGHT_PX - 10}" text-anchor="middle">${xAxisTitle}</text>`,
    ...body,
    '</svg>',
  ].join('\n');
}

/** (a) Every scored instance as a marker per group, the group median and the pass line. */
export function scoresChartSvg(report: StudyReport): string {
  const bandPx = PLOT_WIDTH_PX / GROUPS.length;
  const body: string[] = [];
  const pass = passLine(report);
  const passY = yOfPoints(pass.points);
  // The legend sits above the plot, where no marker or median label can cover it.
  const legendY = MARGIN_PX.top - 22;
  const legendX = MARGIN_PX.left + 4;
  const medianEntryX = legendX + LEGEND_ENTRY_SPACING_PX;
  body.push(
    `<line class="pass-line" x1="${MARGIN_PX.left}" x2="${MARGIN_PX.left + PLOT_WIDTH_PX}" y1="${px(passY)}" y2="${px(passY)}" stroke="#000" stroke-width="1.5" stroke-dasharray="6 3"><title>${pass.label}</title></line>`,
    `<line x1="${legendX}" x2="${legendX + LEGEND_SAMPLE_PX}" y1="${legendY}" y2="${legendY}" stroke="#000" stroke-width="1.5" stroke-dasharray="6 3"/>`,
    `<text class="pass-label" x="${legendX + LEGEND_SAMPLE_PX + 6}" y="${legendY + 4}">${pass.label}</text>`,
    `<line x1="${medianEntryX}" x2="${medianEntryX + LEGEND_SAMPLE_PX}" y1="${legendY}" y2="${legendY}" stroke="#000" stroke-width="3"/>`,
    `<text x="${medianEntryX + LEGEND_SAMPLE_PX + 6}" y="${legendY + 4}">group median</text>`,
  );
  GROUPS.forEach((group, groupIndex) => {
    const centreX = MARGIN_PX.left + bandPx * (groupIndex + 0.5);
    // The counted score: what the medians and the verdict use (0 under a hard failure).
    const scored = report.instances.filter((i) => i.group === group && i.counted_score !== null);
    // Spread the markers side by side so equal scores stay visible, within ±DOT_SPREAD_PX of the
    // band's centre: the median's label sits to the right of that column.
    const stepPx = scored.length <= 1 ? 0 : Math.min(16, (2 * DOT_SPREAD_PX) / (scored.length - 1));
    scored.forEach((instance, k) => {
      const x = centreX + (k - (scored.length - 1) / 2) * stepPx;
      const score = instance.counted_score!;
      const attributes = `class="instance-dot" data-group="${group}" data-replicate="${instance.replicate}" data-usable="${instance.usable}"`;
      // A score without usable data is drawn where it lies, and its tip says it is not data (rule 8).
      body.push(markerSvg(group, x, yOfPoints(score), attributes, `${group} r${instance.replicate}: ${formatPoints(score)}${instance.usable ? '' : ' (no usable data)'}`));
    });
    const groupMedian = report.groups[group].median;
    if (groupMedian !== null) {
      const y = yOfPoints(groupMedian);
      const halfPx = bandPx * 0.38;
      body.push(
        `<line class="median-mark" data-group="${group}" x1="${px(centreX - halfPx)}" x2="${px(centreX + halfPx)}" y1="${px(y)}" y2="${px(y)}" stroke="#000" stroke-width="3"><title>${group} median ${formatPoints(groupMedian)}</title></line>`,
        `<text x="${px(centreX + DOT_SPREAD_PX + 8)}" y="${px(y - 5)}">median ${formatPoints(groupMedian)}</text>`,
      );
    } else {
      body.push(`<text x="${px(centreX)}" y="${px(MARGIN_PX.top + PLOT_HEIGHT_PX / 2)}" text-anchor="middle">no scored instance</text>`);
    }
    const notScored = report.instances.filter((i) => i.group === group && i.counted_score === null).length;
    const under = notScored === 0 ? '' : `, ${notScored} not scored`;
    // Rule 8's count on a line of its own under the group's label: a band is too narrow for both.
    const withoutData = scored.filter((i) => !i.usable).length;
    if (withoutData > 0) body.push(`<text class="no-usable-data" data-group="${group}" x="${px(centreX)}" y="${MARGIN_PX.top + PLOT_HEIGHT_PX + 32}" text-anchor="middle">${withoutData} without usable data</text>`);
    body.push(`<text x="${px(centreX)}" y="${MARGIN_PX.top + PLOT_HEIGHT_PX + 18}" text-anchor="middle" font-weight="bold">Group ${group} (${scored.length} scored${under})</text>`);
  });
  return chartFrame('chart-scores', 'Continuity Score of every instance per group, with group medians and the pass line', 'group', 'Continuity Score (points, 0–100)', body);
}

/** (b) Per dimension, one bar per group at the mean with a ±1 sample SD whisker. */
export function dimensionsChartSvg(report: StudyReport): string {
  const bandPx = PLOT_WIDTH_PX / DIMENSIONS.length;
  const barPx = bandPx / (GROUPS.length + 1.5);
  const baseY = yOfPoints(0);
  const body: string[] = [];
  DIMENSIONS.forEach((dimension: Dimension, dimensionIndex) => {
    const bandX = MARGIN_PX.left + bandPx * dimensionIndex;
    GROUPS.forEach((group, groupIndex) => {
      const { mean, sd } = report.groups[group].dimensions[dimension];
      const x = bandX + barPx * (0.75 + groupIndex);
      const centreX = x + barPx / 2;
      body.push(`<text x="${px(centreX)}" y="${px(baseY + 13)}" text-anchor="middle" font-weight="bold">${group}</text>`);
      if (mean === null) {
        body.push(`<text x="${px(centreX)}" y="${px(baseY - 4)}" text-anchor="middle">${formatPoints(null)}</text>`);
        return;
      }
      const { colour, dash } = GROUP_MARKS[group];
      const topY = yOfPoints(mean);
      const sdText = sd === null ? 'no SD (fewer than two values)' : `SD ${formatPoints(sd)}`;
      body.push(
        `<rect class="dimension-bar" data-group="${group}" data-dimension="${dimension}" x="${px(x)}" y="${px(topY)}" width="${px(barPx)}" height="${px(Math.max(baseY - topY, 0.5))}" fill="${colour}" fill-opacity="0.75" stroke="#000" stroke-dasharray="${dash}"><title>${group} ${dimension}: mean ${formatPoints(mean)}, ${sdText}</title></rect>`,
      );
      if (sd !== null) {
        const lowY = yOfPoints(mean - sd);
        const highY = yOfPoints(mean + sd);
        const capPx = barPx * 0.25;
        body.push(
          `<path class="sd-whisker" d="M${px(centreX)} ${px(lowY)}V${px(highY)}M${px(centreX - capPx)} ${px(lowY)}H${px(centreX + capPx)}M${px(centreX - capPx)} ${px(highY)}H${px(centreX + capPx)}" stroke="#000" stroke-width="1.5" fill="none"/>`,
        );
      }
    });
    const words = dimension.split('_');
    const labelX = bandX + bandPx / 2;
    const tspans = words.map((word, w) => `<tspan x="${px(labelX)}" dy="${w === 0 ? 0 : 13}">${word}</tspan>`).join('');
    body.push(`<text x="${px(labelX)}" y="${px(baseY + 28)}" text-anchor="middle">${tspans}</text>`);
  });
  body.push(`<text x="${MARGIN_PX.left + PLOT_WIDTH_PX}" y="${MARGIN_PX.top - 12}" text-anchor="end">bar: group mean (letter below); whisker: ±1 sample SD</text>`);
  return chartFrame('chart-dimensions', 'Mean of each Continuity Score dimension per group, with ±1 sample SD whiskers', 'dimension (bars lettered by group)', 'dimension value (points, 0–100)', body);
}

interface AccuracyPoint {
  readonly hours: number;
  readonly meanPoints: number;
  readonly instances: number;
}

/** Per wake, the mean per_wake value of the group's finished instances, in time order. */
export function groupAccuracyOverTime(report: StudyReport, group: Group): AccuracyPoint[] {
  const byWake = new Map<string, { minute: number; sum: number; count: number }>();
  for (const instance of report.instances) {
    if (instance.group !== group || instance.status !== 'finished') continue;
    for (const wake of instance.per_wake) {
      const entry = byWake.get(wake.wake_id) ?? { minute: wake.at_minute, sum: 0, count: 0 };
      entry.sum += wake.value;
      entry.count += 1;
      byWake.set(wake.wake_id, entry);
    }
  }
  return [...byWake.values()].sort((a, b) => a.minute - b.minute).map((e) => ({ hours: e.minute / MINUTES_PER_HOUR, meanPoints: e.sum / e.count, instances: e.count }));
}

/** (c) Checkpoint accuracy by wake over the 72 simulated hours: one line per group; `marks` draws more along the plot's foot (study/accuracy-chart-marks.ts). */
export function accuracyChartSvg(report: StudyReport, marks: (xOfHours: (hours: number) => number, floorPx: number) => string[] = () => []): string {
  const xOfHours = (hours: number): number => MARGIN_PX.left + (Math.min(Math.max(hours, 0), SIMULATED_HOURS) / SIMULATED_HOURS) * PLOT_WIDTH_PX;
  const body: string[] = [];
  const bottom = MARGIN_PX.top + PLOT_HEIGHT_PX;
  for (let hours = 0; hours <= SIMULATED_HOURS; hours += HOURS_TICK_STEP) {
    const x = xOfHours(hours);
    body.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${bottom}" y2="${bottom + 5}" stroke="#000"/>`, `<text x="${px(x)}" y="${bottom + 18}" text-anchor="middle">${hours}</text>`);
  }
  const legendX = MARGIN_PX.left + 12;
  GROUPS.forEach((group, groupIndex) => {
    const points = groupAccuracyOverTime(report, group);
    const { colour, dash } = GROUP_MARKS[group];
    // One legend row above the plot, the groups side by side.
    const legendY = MARGIN_PX.top - 22;
    const entryX = legendX + groupIndex * (LEGEND_ENTRY_SPACING_PX / 2);
    const lineEnd = entryX + LEGEND_SAMPLE_PX;
    body.push(
      `<g class="legend-entry" data-group="${group}"><line x1="${entryX}" x2="${lineEnd}" y1="${legendY}" y2="${legendY}" stroke="${colour}" stroke-width="2.5" stroke-dasharray="${dash}"/>`,
      markerSvg(group, entryX + 14, legendY, 'class="legend-marker"', `Group ${group}`),
      `<text x="${lineEnd + 6}" y="${legendY + 4}">Group ${group}${points.length === 0 ? ' (no scored wake)' : ''}</text></g>`,
    );
    if (points.length === 0) return;
    const coordinates = points.map((p) => `${px(xOfHours(p.hours))},${px(yOfPoints(p.meanPoints))}`).join(' ');
    body.push(`<polyline class="accuracy-line" data-group="${group}" points="${coordinates}" fill="none" stroke="${colour}" stroke-width="2" stroke-dasharray="${dash}"/>`);
    for (const p of points) {
      body.push(markerSvg(group, xOfHours(p.hours), yOfPoints(p.meanPoints), `class="accuracy-point" data-group="${group}"`, `${group} at h${formatPoints(p.hours)}: ${formatPoints(p.meanPoints)} (mean of ${p.instances})`));
    }
    const last = points.at(-1)!;
    body.push(`<text x="${px(xOfHours(last.hours) + 10)}" y="${px(yOfPoints(last.meanPoints) + 4)}" font-weight="bold">${group}</text>`);
  });
  body.push(...marks(xOfHours, bottom));
  return chartFrame('chart-accuracy', 'Checkpoint accuracy over simulated time: per group, the mean state-recovery value of its instances at each scored wake', 'simulated time (hours, 0–72)', 'checkpoint accuracy (points, 0–100)', body);
}
