// Open execution intents, unknown outcomes and how recovery handled them (spec §16.1): what
// is still open at the head, every outcome nobody could confirm and what closed it, and every
// restart, reconciliation, stop, pause and refused append in order. The desk repairs nothing;
// for an open unknown outcome it names the separate command that appends the operator's
// statement through the writer (spec §16.2).
import type { AuditDesk } from '../audit-desk.js';
import { summarizeEvent } from '../event-summary.js';
import { SubjectState } from '../../projector/subject-state.js';
import { html, type SafeHtml } from '../html.js';
import { eventIdLink, eventLink, renderPage } from './layout.js';

interface OpenIntentView {
  readonly outcome?: unknown;
  readonly op?: unknown;
  readonly path?: unknown;
}

export function recoveryPage(desk: AuditDesk): string {
  const head = desk.headState();
  const state = head.state as { lifecycle_state?: unknown; open_intents?: Record<string, OpenIntentView> } | null;
  const tracksIntents = SubjectState.safeParse(head.state).success;
  const open = Object.entries(state?.open_intents ?? {});
  const { index } = desk;
  const sealed = index.sealed_seq !== null;
  const howToClose = (id: string): SafeHtml | string =>
    sealed
      ? html`nothing now: the store is sealed (seq ${index.sealed_seq ?? ''}), its record is final — this outcome stays unresolved in this run's record`
      : html`only an operator's statement, appended through the writer (the desk cannot; stop the instance first if it runs): <code>npm run repair -- ${desk.folder.runDir} --resolve-intent ${id} --resolution happened|did_not_happen --operator NAME --note TEXT</code>`;
  const body = html`
    <p>At the head (seq ${head.seq}, ${head.source}): lifecycle <strong id="recovery-lifecycle">${String(state?.lifecycle_state ?? '—')}</strong>${head.problem ? html` — <span class="bad">${head.problem}</span>` : ''}.</p>
    <h2>Open execution intents (${open.length})</h2>
    ${!tracksIntents ? html`<p class="warn" id="open-intents">This store's projection (${desk.versions?.projection ?? 'none'}) does not track execution intents; the events below are all there is.</p>` : open.length === 0 ? html`<p class="muted" id="open-intents">None: every intent has a recorded outcome.</p>` : html`<table id="open-intents"><thead><tr><th>intent</th><th>outcome</th><th>op</th><th>path</th><th>how it can be closed</th></tr></thead><tbody>${open.map(
      ([id, intent]) => html`<tr><td>${eventIdLink(desk, id)}</td><td class="${intent.outcome === 'unknown' ? 'bad' : ''}">${String(intent.outcome)}</td><td>${String(intent.op)}</td><td>${String(intent.path)}</td><td>${
        intent.outcome === 'unknown' ? howToClose(id) : sealed ? 'nothing now: the store is sealed with this intent open' : 'reconciled by the runtime at its next start (hash check)'
      }</td></tr>`,
    )}</tbody></table>`}
    <h2>Unknown outcomes (${index.unknown_outcomes.length})</h2>
    ${index.unknown_outcomes.length === 0 ? html`<p class="muted">None recorded.</p>` : html`<table id="unknown-outcomes"><thead><tr><th>intent</th><th>recorded unknown</th><th>closed</th></tr></thead><tbody>${index.unknown_outcomes.map(
      (u) => html`<tr><td>${eventIdLink(desk, u.intent_event_id)}</td><td>${eventLink(u.unknown_seq)}</td><td>${u.closed_seq === null ? html`<span class="bad">still open</span>` : html`${eventLink(u.closed_seq)} by ${u.closed_by}${u.closed_by === 'SystemEvent.OperatorResolved' ? '' : html` <span class="bad">(not an operator: an automatic retry?)</span>`}`}</td></tr>`,
    )}</tbody></table>`}
    <h2>Recovery events (${index.recovery.length + index.recovery_not_listed})</h2>
    <p class="muted">Restarts, reconciliations, unknown outcomes, operator resolutions, emergency stops, pauses and resumes, wakes that did not complete, refused appends.</p>
    ${index.recovery_not_listed > 0 ? html`<div class="warn">${index.recovery_not_listed} more not listed; use the timeline's type filter.</div>` : ''}
    <table id="recovery-events"><thead><tr><th>seq</th><th>type</th><th>summary</th></tr></thead><tbody>${index.recovery.map((r) => {
      const event = desk.eventAt(r.seq);
      return html`<tr><td>${eventLink(r.seq)}</td><td>${r.event_type}</td><td>${event ? summarizeEvent(event) : ''}</td></tr>`;
    })}</tbody></table>`;
  return renderPage(desk, 'Intents & recovery', 'recovery', body);
}
