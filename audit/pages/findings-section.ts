// The study report's findings on the desk's pages (issue 35 item 5): on an event's page, every
// hard failure report.json lists at that seq; on the overview, all of the run's, each linked to
// its event — and one naming a seq the store does not hold is said so, not left out.
import type { AuditDesk } from '../audit-desk.js';
import { html, type SafeHtml } from '../html.js';
import type { ReportFinding } from '../report-findings.js';
import { eventLink } from './layout.js';

/** Why `seq` names no event of this store; null when it does. */
export function missingSeq(desk: AuditDesk, seq: number): string | null {
  if (seq < 1 || seq > desk.index.head_seq) return `seq ${seq} is not in this store (it holds seq 1 to ${desk.index.head_seq})`;
  return desk.rowAt(seq) === null ? `the store has no row at seq ${seq} (a gap)` : null;
}

function findingItem(finding: ReportFinding, where: SafeHtml | string): SafeHtml {
  return html`<li class="finding" data-finding="${finding.id}" data-seq="${finding.seq ?? ''}"><strong>${finding.id}</strong> ${where}: ${finding.detail}</li>`;
}

/** The findings the report lists at `seq`, as an alarm on the event's page; a report that cannot be read is said so. */
export function eventFindingsSection(desk: AuditDesk, seq: number): SafeHtml | string {
  const { findings } = desk;
  if (findings === null) return '';
  if (!findings.ok) return html`<div class="warn" id="findings-unknown">The study's findings cannot be shown: ${findings.problem}</div>`;
  const here = findings.value.findings.filter((f) => f.seq === seq);
  if (here.length === 0) return '';
  return html`<section id="findings" class="alarm"><h2>The study report's findings at this event (${here.length})</h2>
    <ul>${here.map((f) => findingItem(f, 'at this event'))}</ul>
    <p class="muted">As ${findings.value.report_path} lists them for ${findings.value.instance}; <a href="/">the overview</a> lists all of this run's.</p></section>`;
}

/** Every finding of the run, each linked to its event, on the overview. */
export function runFindingsSection(desk: AuditDesk): SafeHtml | string {
  const { findings } = desk;
  if (findings === null) return '';
  if (!findings.ok) return html`<div class="warn" id="findings-unknown">The study's findings cannot be shown: ${findings.problem}</div>`;
  const { findings: list, instance, report_path: reportPath } = findings.value;
  const items = list.map((f) => {
    if (f.seq === null) return findingItem(f, 'about the run folder (no event)');
    const missing = missingSeq(desk, f.seq);
    return missing === null ? findingItem(f, html`at ${eventLink(f.seq)}`) : html`<li class="finding bad" data-finding="${f.id}" data-seq="${f.seq}">${f.id} at seq ${f.seq}: ${missing} — report.json and this store disagree: ${f.detail}</li>`;
  });
  return html`<section id="run-findings"><h2>The study report's findings (${list.length})</h2>
    ${list.length === 0 ? html`<p class="muted">${reportPath} lists no hard failure for ${instance}.</p>` : html`<ul class="alarm">${items}</ul>`}</section>`;
}
