// The study view's own pages (issue 35 item 5): the study at a glance — verdict, the report's
// findings each linked to its event, its instances by replicate and group — and a replicate's
// wakes, each linked to the page that shows A, B and C at that wake side by side. Each instance's
// own desk pages sit under /run/<G>-r<k>/ (study-server.ts).
import { GROUPS } from '../../design/groups.js';
import type { StudyReport } from '../../oracle/study-report.js';
import { html, type SafeHtml } from '../html.js';
import type { StudyInstance, StudyView } from '../study-view.js';
import { renderStudyFrame } from './layout.js';

/** Wakes listed on a replicate's page; a store of another shape lists its first ones. */
const MAX_LISTED_WAKES = 1_000;

export function runHref(key: string, rest = ''): string {
  return `/run/${encodeURIComponent(key)}/${rest}`;
}

export function wakeHref(replicate: number, wakeId: string): string {
  return `/wake/${replicate}/${encodeURIComponent(wakeId)}`;
}

export function studyHeader(view: StudyView): SafeHtml {
  const id = view.report?.ok === true ? view.report.value.study_id : view.studyDir;
  return html`<div id="study-banner"><strong>Study ${id}</strong> · ${view.instances.length} instance(s) · read-only</div>
    <nav><a href="/">Study</a>${view.report?.ok === true ? html` <a href="/report.html" id="report-link">report.html (linked to the desk)</a>` : ''}</nav>`;
}

function score(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : value.toFixed(2);
}

function verdictSection(view: StudyView): SafeHtml {
  const report = view.report;
  if (report === null) return html`<div class="warn" id="no-report">The study has no report.json yet (npm run study -- --resume DIR finishes it, --recompute DIR rebuilds it): instances are shown, findings are not.</div>`;
  if (!report.ok) return html`<div class="alarm" id="report-problem">${report.problem}</div>`;
  const r = report.value;
  return html`<section id="verdict"><p>Verdict: <strong id="verdict-label">${r.verdict}</strong>${r.dry_run ? ' (dry run)' : ''}${r.voided ? html` — <span class="bad">VOIDED</span>` : ''}</p><p>${r.verdict_statement}</p>
    ${r.void_reasons.length === 0 ? '' : html`<ul class="alarm" id="void-reasons">${r.void_reasons.map((v) => html`<li>${v}</li>`)}</ul>`}</section>`;
}

function findingsSection(view: StudyView): SafeHtml {
  if (view.report?.ok !== true) return html``;
  const rows = view.findings.map(({ key, finding, problem }) => {
    const seqCell = finding.seq === null ? html`—` : problem === null ? html`<a href="${runHref(key, `event/${finding.seq}`)}" class="finding-link">#${finding.seq}</a>` : html`<span class="bad">#${finding.seq}</span>`;
    return html`<tr class="${problem === null ? 'finding-row' : 'finding-row bad'}" data-instance="${key}" data-seq="${finding.seq ?? ''}"><td><a href="${runHref(key)}">${key}</a></td><td><code>${finding.id}</code></td><td>${seqCell}</td><td>${finding.detail}${problem === null ? '' : html`<div class="alarm finding-problem">Not shown at an event: ${problem}. report.json and the study folder disagree.</div>`}</td></tr>`;
  });
  return html`<h2>Hard failures the report lists (${view.findings.length})</h2>
    ${rows.length === 0 ? html`<p class="muted">None.</p>` : html`<table id="findings"><thead><tr><th>instance</th><th>hard failure</th><th>event</th><th>detail</th></tr></thead><tbody>${rows}</tbody></table>`}`;
}

function otherFindings(report: StudyReport): SafeHtml {
  const unmet = report.thresholds.filter((t) => t.met !== true);
  const unfair = report.fairness.checks.filter((c) => !c.ok);
  const items = [
    ...unmet.map((t) => html`<li>threshold <code>${t.id}</code> ${t.met === null ? 'not decidable' : 'not met'}: required ${t.required}, observed ${t.observed}</li>`),
    ...unfair.map((c) => html`<li>fairness check <code>${c.check}</code> FAILED: ${c.detail}</li>`),
    ...report.usable_data.shortfalls.map((s) => html`<li>usable data: ${s}</li>`),
  ];
  return html`<h2>The oracle's other findings</h2>${items.length === 0 ? html`<p class="muted">Every threshold met, every fairness check passed, every group's data usable.</p>` : html`<ul id="other-findings">${items}</ul>`}
    <h2>Notes</h2>${report.notes.length === 0 ? html`<p class="muted">None.</p>` : html`<ul id="notes">${report.notes.map((n) => html`<li>${n}</li>`)}</ul>`}`;
}

function instanceCell(instance: StudyInstance | undefined): SafeHtml {
  if (instance === undefined) return html`<td class="muted">—</td>`;
  const r = instance.reported;
  const failures = r?.hard_failures.length ?? 0;
  return html`<td class="instance" data-instance="${instance.key}">${instance.onDisk ? html`<a href="${runHref(instance.key)}">${instance.key}</a>` : html`<span class="bad">${instance.key} (not in the folder)</span>`}
    ${r === null ? html`<br><span class="muted">not in report.json</span>` : html`<br>${r.status} · score ${score(r.score)} · counted ${score(r.counted_score)}${failures > 0 ? html` · <span class="bad">${failures} hard failure(s)</span>` : ''}`}</td>`;
}

function instancesSection(view: StudyView): SafeHtml {
  const rows = view.replicates().map((k) => html`<tr><th><a href="/replicate/${k}">replicate ${k}</a></th>${GROUPS.map((g) => instanceCell(view.instances.find((i) => i.replicate === k && i.group === g)))}</tr>`);
  return html`<h2>Instances by replicate and group</h2><p>A replicate's A, B and C ran with the same seed; its page lists their wakes, each shown side by side.</p>
    <table id="instances"><thead><tr><th></th>${GROUPS.map((g) => html`<th>${g}</th>`)}</tr></thead><tbody>${rows}</tbody></table>`;
}

export function studyPage(view: StudyView): string {
  const problems = view.problems.length === 0 ? '' : html`<div class="alarm" id="study-problems"><p>What does not fit together in this study folder:</p><ul>${view.problems.map((p) => html`<li>${p}</li>`)}</ul>${view.problemsNotListed > 0 ? html`<p>… and ${view.problemsNotListed} more.</p>` : ''}</div>`;
  const body = html`<p>Study folder <code>${view.studyDir}</code> (read-only).</p>${problems}${verdictSection(view)}${findingsSection(view)}${view.report?.ok === true ? otherFindings(view.report.value) : ''}${instancesSection(view)}`;
  return renderStudyFrame('Study', studyHeader(view), body);
}

/** The wakes of replicate `k`: each wake id any of its instances has, with each group's outcome. */
export function replicatePage(view: StudyView, replicate: number, wakes: ReadonlyMap<string, ReadonlyMap<string, string>>, problems: readonly string[]): string {
  const members = GROUPS.map((g) => view.instances.find((i) => i.replicate === replicate && i.group === g));
  const ids = [...wakes.keys()];
  const rows = ids.slice(0, MAX_LISTED_WAKES).map((id) => html`<tr><td><a href="${wakeHref(replicate, id)}" class="wake-link">${id}</a></td>${members.map((m) => html`<td>${m === undefined ? '—' : (wakes.get(id)?.get(m.key) ?? html`<span class="bad">no such wake</span>`)}</td>`)}</tr>`);
  const body = html`${problems.length === 0 ? '' : html`<ul class="alarm">${problems.map((p) => html`<li>${p}</li>`)}</ul>`}
    ${ids.length > MAX_LISTED_WAKES ? html`<p class="warn">The first ${MAX_LISTED_WAKES} of ${ids.length} wakes are listed.</p>` : ''}
    <table id="wakes"><thead><tr><th>wake (A, B and C side by side)</th>${members.map((m, k) => html`<th>${m === undefined ? GROUPS[k] : html`<a href="${runHref(m.key)}">${m.key}</a>`}</th>`)}</tr></thead><tbody>${rows}</tbody></table>`;
  return renderStudyFrame(`Replicate ${replicate}: wakes`, studyHeader(view), body);
}
