// The key to the 72-hour picture: for each lane, the kinds of mark the pictures on the page hold,
// each as its shape, its letter and its meaning in words. One key serves a page of many strips
// (the study report), so it lists what those strips hold, not every kind there is.
import { escapeHtml } from '../foundation/html-escape.js';
import type { InstanceTimeline } from './instance-timeline.js';
import { letterSvg, px, shapeSvg } from './mark-shapes.js';
import { LANE_LABELS, LANES, markStyle } from './timeline-lanes.js';

const WIDTH_PX = 960;
const ROW_PX = 18;
const ENTRY_PX = 200;
const LABEL_PX = 150;
const MARK_PX = 9;

export function timelineLegendSvg(id: string, timelines: readonly InstanceTimeline[]): string {
  const rows: string[] = [];
  let y = ROW_PX;
  for (const lane of LANES) {
    const kinds = [...new Set(timelines.flatMap((t) => t.marks.filter((m) => m.lane === lane).map((m) => m.kind)))].sort();
    if (kinds.length === 0) continue;
    const perRow = Math.max(1, Math.floor((WIDTH_PX - LABEL_PX) / ENTRY_PX));
    rows.push(`<text x="${LABEL_PX - 6}" y="${px(y + 4)}" text-anchor="end" font-weight="bold">${LANE_LABELS[lane]}</text>`);
    kinds.forEach((kind, i) => {
      const style = markStyle(lane, kind);
      const x = LABEL_PX + (i % perRow) * ENTRY_PX + MARK_PX;
      const rowY = y + Math.floor(i / perRow) * ROW_PX;
      rows.push(`<g class="legend-entry" data-lane="${lane}" data-kind="${escapeHtml(kind)}">${shapeSvg(style, x, rowY, MARK_PX)}${letterSvg(style, x, rowY, MARK_PX)}<text x="${px(x + MARK_PX + 8)}" y="${px(rowY + 4)}">${escapeHtml(style.meaning)}</text></g>`);
    });
    y += Math.ceil(kinds.length / perRow) * ROW_PX;
  }
  rows.push(`<rect x="${LABEL_PX}" y="${px(y - 5)}" width="24" height="10" fill="#eee" stroke="#999" stroke-dasharray="3 2"/><text x="${LABEL_PX + 32}" y="${px(y + 4)}">long absence (from the plan)</text>`);
  rows.push(`<rect x="${LABEL_PX + ENTRY_PX * 1.5}" y="${px(y - 4)}" width="${MARK_PX}" height="${MARK_PX}" fill="none" stroke="#999" stroke-dasharray="2 1"/><text x="${px(LABEL_PX + ENTRY_PX * 1.5 + MARK_PX + 8)}" y="${px(y + 4)}">scheduled wake that never started</text>`);
  const height = y + ROW_PX / 2 + 4;
  return [
    `<svg id="${escapeHtml(id)}" class="timeline-legend" role="img" aria-label="Key to the 72-hour timeline" width="${WIDTH_PX}" height="${px(height)}" viewBox="0 0 ${WIDTH_PX} ${px(height)}" font-family="system-ui, sans-serif" font-size="11">`,
    '<title>Key to the 72-hour timeline</title>',
    `<rect x="0" y="0" width="${WIDTH_PX}" height="${px(height)}" fill="#fff"/>`,
    ...rows,
    '</svg>',
  ].join('\n');
}
