// The frame of every desk page: what run this is, whether its chain and signatures verified,
// and the navigation. Pages carry no script at all; the Content-Security-Policy sent with
// them allows only this one stylesheet (by hash) and forms submitting back to the desk.
import { cspHash } from '../../foundation/csp-hash.js';
import type { AuditDesk, StoredEvent } from '../audit-desk.js';
import { summarizeEvent } from '../event-summary.js';
import { html, query, SafeHtml } from '../html.js';

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{background:#20303f;color:#fff;padding:8px 16px}
header a{color:#cfe3ff}
nav{display:flex;flex-wrap:wrap;gap:12px;margin-top:6px}
nav a.active{font-weight:bold;text-decoration:none;color:#fff}
main{padding:12px 16px}
table{border-collapse:collapse;margin:8px 0;background:#fff}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#eef2f6}
pre{background:#fff;border:1px solid #ddd;padding:8px;overflow:auto;max-height:70vh;white-space:pre-wrap;word-break:break-word}
.ok{color:#176b2c;font-weight:bold}
.bad{color:#a40000;font-weight:bold}
.warn{background:#fff4d6;border:1px solid #e0b84c;padding:6px 10px;margin:8px 0}
.alarm{background:#ffe3e3;border:1px solid #c33;padding:6px 10px;margin:8px 0}
.muted{color:#666}
form.inline{display:inline}
fieldset{border:1px solid #ddd;margin:6px 0}
label{margin-right:10px;white-space:nowrap}
svg.timeline,svg.timeline-legend{max-width:100%;height:auto;border:1px solid #ddd}
figure{margin:8px 0}
@media print{header nav,form{display:none}body{background:#fff}header{background:#fff;color:#000}}
#side-by-side{table-layout:fixed;width:100%}
#side-by-side > tbody > tr > td{overflow-wrap:anywhere}
#side-by-side td table{width:100%}
`;

/** Sent as a header with every page: no script, no fetch, no frame, nothing from anywhere else. */
export const PAGE_CSP = `default-src 'none'; style-src ${cspHash(STYLE)}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;

export type NavKey = 'overview' | 'timeline' | 'hours' | 'state' | 'snapshots' | 'chains' | 'claims' | 'recovery' | 'interventions' | 'integrity' | 'event';

const NAV: readonly (readonly [NavKey, string, string])[] = [
  ['overview', '/', 'Overview'],
  ['timeline', '/timeline', 'Timeline'],
  ['hours', '/hours', '72 hours'],
  ['state', '/state', 'State at seq'],
  ['snapshots', '/snapshots', 'Snapshot vs replay'],
  ['chains', '/chains', 'Action chains'],
  ['claims', '/claims', 'Claims'],
  ['recovery', '/recovery', 'Intents & recovery'],
  ['interventions', '/interventions', 'Interventions'],
  ['integrity', '/integrity', 'Chain & signatures'],
];

export function eventLink(seq: number, label?: string): SafeHtml {
  return html`<a href="/event/${seq}" data-seq="${seq}">${label ?? `#${seq}`}</a>`;
}

export function stateLink(seq: number, label = 'state'): SafeHtml {
  return html`<a href="/state${query([['seq', seq]])}">${label}</a>`;
}

/** A link to the event with this id, or the id marked as not in this store. */
export function eventIdLink(desk: AuditDesk, eventId: string): SafeHtml {
  const seq = desk.seqOfEventId(eventId);
  return seq === null ? html`<span class="bad" title="not an event of this store">${eventId} (not in this store)</span>` : eventLink(seq);
}

/** Rows of events: seq, virtual time, type, actor, summary, state after it; a row that does not read as its event says why. */
export function eventTable(rows: readonly StoredEvent[]): SafeHtml {
  return html`<table class="events"><thead><tr><th>seq</th><th>occurred (virtual)</th><th>type</th><th>actor</th><th>summary</th><th></th></tr></thead><tbody>${rows.map((row) => {
    const e = row.event;
    if (e === null) return html`<tr data-type="${row.event_type}" class="unreadable"><td>${eventLink(row.seq)}</td><td></td><td>${row.event_type}</td><td></td><td class="bad">unreadable: ${row.problem} (see <a href="/integrity">Chain &amp; signatures</a>)</td><td></td></tr>`;
    return html`<tr data-type="${e.event_type}"><td>${eventLink(e.seq)}</td><td>${e.occurred_at}</td><td>${e.event_type}</td><td>${e.actor}</td><td>${summarizeEvent(e)}</td><td>${stateLink(e.seq, 'state after')}</td></tr>`;
  })}</tbody></table>`;
}

export function status(ok: boolean, good: string, bad: string): SafeHtml {
  return ok ? html`<span class="ok">${good}</span>` : html`<span class="bad">${bad}</span>`;
}

function banner(desk: AuditDesk): SafeHtml {
  const { index, verify, folder } = desk;
  const grown = desk.grownTo();
  const manifest = folder.manifest.ok ? folder.manifest.value.manifest : null;
  const verifyText = verify.ok ? `chain & signatures verified${verify.warnings.length > 0 ? ` (${verify.warnings.length} warning(s))` : ''}` : `VERIFICATION FAILED: ${verify.failures.length} failure(s)`;
  return html`<div id="run-banner">
    <strong>${manifest ? `${manifest.experiment_id} · ${manifest.group_blind_id}` : folder.runDir}</strong>
    · ${index.head_seq} events · ${index.sealed_seq !== null ? `sealed at seq ${index.sealed_seq}` : 'not sealed'}
    · <a href="/integrity" id="verify-status">${verifyText}</a> · read-only
  </div>${index.unreadable_seqs.length === 0 ? '' : html`<div class="alarm" id="unreadable-rows">${index.unreadable_seqs.length + index.unreadable_not_listed} stored row(s) are not event envelopes (first at ${eventLink(index.unreadable_seqs[0]!)}): see Chain &amp; signatures.</div>`}${grown === null ? '' : html`<div class="alarm" id="store-grown">The store has grown since the desk indexed it (seq ${index.head_seq} → ${grown}): events after seq ${index.head_seq} are not shown. Restart the desk to index them.</div>`}`;
}

export function renderPage(desk: AuditDesk, title: string, active: NavKey, body: SafeHtml): string {
  const nav = NAV.map(([key, href, label]) => html`<a href="${href}" class="${key === active ? 'active' : ''}">${label}</a>`);
  return `<!doctype html>${html`<html lang="en"><head><meta charset="utf-8"><title>${title} — audit desk</title><style>${new SafeHtml(STYLE)}</style></head><body><header>${banner(desk)}<nav>${nav}</nav></header><main><h1>${title}</h1>${body}</main></body></html>`.text}`;
}

/** A page of the study view (no one run's banner): the desk's style, a header of the caller's. */
export function renderStudyFrame(title: string, header: SafeHtml, body: SafeHtml): string {
  return `<!doctype html>${html`<html lang="en"><head><meta charset="utf-8"><title>${title} — audit desk</title><style>${new SafeHtml(STYLE)}</style></head><body><header>${header}</header><main><h1>${title}</h1>${body}</main></body></html>`.text}`;
}

/** A refusal that says nothing about the run (wrong host, method, size): no banner, no navigation. */
export function renderRefusal(title: string, message: string): string {
  return `<!doctype html>${html`<html lang="en"><head><meta charset="utf-8"><title>${title} — audit desk</title><style>${new SafeHtml(STYLE)}</style></head><body><main><h1>${title}</h1><div class="alarm" id="problem">${message}</div></main></body></html>`.text}`;
}

/** A page for a request the desk cannot answer (bad seq, unknown id): the status and why. */
export function renderProblem(desk: AuditDesk, title: string, message: string): string {
  return renderPage(desk, title, 'overview', html`<div class="alarm" id="problem">${message}</div>`);
}
