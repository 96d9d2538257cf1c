// report.html's section of 72-hour pictures (timeline/): one strip per instance, the strips of a
// replicate stacked A, B, C on one hour scale, so the same wake — the replicate's one plan — lines
// up down the three groups. Each mark has its tooltip; it is a link to its event only in the
// report the study desk serves (`eventHref`), never in the file, where such a link leads nowhere. Strips not drawn say why; replicates past the bound are counted.
import { GROUPS } from '../design/groups.js';
import { escapeHtml } from '../foundation/html-escape.js';
import type { StudyReport } from '../oracle/study-report.js';
import type { FindingHref } from './finding-href.js';
import type { InstanceTimeline } from '../timeline/instance-timeline.js';
import { timelineLegendSvg } from '../timeline/timeline-legend.js';
import { timelineSvg } from '../timeline/timeline-svg.js';
import { MAX_REPLICATES_DRAWN, type InstanceStrip, type ReportTimelines } from './instance-timelines.js';

/** Kept with the section so report-html.ts's own style is untouched: strips stay whole on a printed page. */
const STYLE = `<style>
section.replicate-strips { margin: 0.8rem 0 1.2rem; }
.strip-label { font-weight: bold; margin: 0.3rem 0 0; font-size: 0.9rem; }
svg.timeline, svg.timeline-legend { max-width: 100%; height: auto; border: 1px solid #ddd; }
@media print { section.replicate-strips { break-inside: avoid; } }
</style>`;

/** `eventHref`: where the served report links an instance's event (the study desk); absent: no links. */
export function timelineSection(report: StudyReport, timelines: ReportTimelines | null, eventHref?: FindingHref): string {
  const out = ['<section id="timelines" aria-label="The 72 hours of each instance">', '<h2>The 72 hours of each instance</h2>', STYLE];
  if (timelines === null) return [...out, '<p id="timelines-not-drawn">Not drawn: this report was rendered without its study folder, so no run was read.</p>', '</section>'].join('\n');
  const drawn = timelines.strips.map((s) => s.timeline).filter((t): t is InstanceTimeline => t !== null);
  out.push(
    '<p>One strip per instance; the three groups of a replicate share its plan, so a wake, an intervention and a crash sit at the same hour in A, B and C. Hover a mark for what it is and its seq; the audit desk (<code>npm run audit -- DIR</code>) opens each event.</p>',
    `<figure>${timelineLegendSvg('timeline-legend', drawn)}<figcaption>Key: each mark is a shape with a letter, so the strips read in print and without colour.</figcaption></figure>`,
  );
  const replicates = [...new Set(timelines.strips.map((s) => s.replicate))].sort((a, b) => a - b);
  for (const replicate of replicates) {
    out.push(`<section class="replicate-strips" data-replicate="${replicate}" aria-label="Replicate ${replicate}"><h3>Replicate ${replicate}</h3>`);
    for (const group of GROUPS) {
      const strip = timelines.strips.find((s) => s.replicate === replicate && s.group === group);
      const label = `Group ${group}, replicate ${replicate}`;
      if (strip === undefined) {
        out.push(`<p class="strip-label strip-missing" data-group="${group}">${escapeHtml(label)}: no instance in the report</p>`);
        continue;
      }
      out.push(`<p class="strip-label">${escapeHtml(`${label} (${strip.dir})`)}</p>`);
      if (strip.timeline === null) out.push(`<p class="strip-problem failed" data-group="${group}">${escapeHtml(strip.problem ?? 'not drawn')}</p>`);
      else out.push(timelineSvg(strip.timeline, { id: `strip-${group}-r${replicate}`, title: `The 72 hours of ${label}`, hrefOf: stripHref(report, strip, eventHref), compact: true, data: { group, replicate: String(replicate) } }));
    }
    out.push('</section>');
  }
  if (timelines.replicates_not_drawn > 0) out.push(`<p id="timelines-left-out">${timelines.replicates_not_drawn} replicate(s) not drawn: the report draws the first ${MAX_REPLICATES_DRAWN}; the audit desk draws any instance.</p>`);
  if (report.instances.length === 0) out.push('<p>No instance.</p>');
  out.push('</section>');
  return out.join('\n');
}

function stripHref(report: StudyReport, strip: InstanceStrip, eventHref: FindingHref | undefined): ((seq: number) => string) | null {
  const instance = report.instances.find((i) => i.group === strip.group && i.replicate === strip.replicate);
  return eventHref === undefined || instance === undefined ? null : (seq) => eventHref(instance, seq);
}
