// The run's 72 simulated hours as one picture (timeline/): wakes by how they ended,
// interventions by kind, crashes, stops, failed model calls, denials, FACT claims and checkpoint
// accuracy, each mark a link to its event's page; under it the key, and the marks counted per
// lane beside the store's own count of the events they stand for.
import { timelineLegendSvg } from '../../timeline/timeline-legend.js';
import { timelineSvg } from '../../timeline/timeline-svg.js';
import { LANE_LABELS, LANES } from '../../timeline/timeline-lanes.js';
import type { AuditDesk } from '../audit-desk.js';
import { deskTimeline } from '../desk-timeline.js';
import { html, SafeHtml } from '../html.js';
import { renderPage } from './layout.js';

export function hoursPage(desk: AuditDesk): string {
  const timeline = deskTimeline(desk);
  const manifest = desk.folder.manifest.ok ? desk.folder.manifest.value.manifest : null;
  const name = manifest === null ? desk.folder.runDir : `${manifest.experiment_id} · ${manifest.group_blind_id}`;
  const svg = timelineSvg(timeline, { id: 'hours-timeline', title: `The 72 simulated hours of ${name}`, hrefOf: (seq) => `/event/${seq}`, compact: false });
  const counts = LANES.map((lane) => html`<tr data-lane="${lane}"><td>${LANE_LABELS[lane]}</td><td class="num">${timeline.marks.filter((m) => m.lane === lane).length}</td></tr>`);
  const body = html`
    <p>Hour 0 is the plan's start (${timeline.start_at}); each mark sits at its event's virtual time and opens that event. Hover a mark for what it is. The <a href="/timeline">event table</a> lists every event by seq.</p>
    ${timeline.problems.length === 0 ? '' : html`<div class="warn" id="hours-problems">${timeline.problems.length} thing(s) the picture could not draw as asked are listed under it.</div>`}
    <figure>${new SafeHtml(svg)}</figure>
    <h2>Key</h2>
    ${new SafeHtml(timelineLegendSvg('hours-legend', [timeline]))}
    <p class="muted">Checkpoint accuracy is the oracle's state-recovery value of each scored wake, computed from this folder as the study's report computes it (bar height: 0–100 points).</p>
    <h2>Marks per lane</h2>
    <table id="hours-counts"><thead><tr><th>lane</th><th>marks</th></tr></thead><tbody>${counts}</tbody></table>`;
  return renderPage(desk, '72 hours', 'hours', body);
}
