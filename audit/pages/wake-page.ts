// One wake of one replicate, A, B and C side by side (issue 35 item 5): for each group what the
// subject was shown (the seq its view reached, the interventions delivered, each call's context
// counts) and what it answered (each call's answer as stored, or its failure), then the wake's
// events, each a link to its page in that instance's desk.
import { GROUPS } from '../../design/groups.js';
import { summarizeEvent } from '../event-summary.js';
import { html, type SafeHtml } from '../html.js';
import type { StoredEvent } from '../audit-desk.js';
import type { StudyInstance, StudyView } from '../study-view.js';
import type { WakeCall, WakeRecord } from '../wake-record.js';
import { renderStudyFrame } from './layout.js';
import { runHref, studyHeader } from './study-pages.js';

/** One group's column: its wake, or why it has none to show. */
export type WakeColumn = { readonly instance: StudyInstance; readonly record: WakeRecord } | { readonly instance: StudyInstance | null; readonly problem: string };

function link(key: string, seq: number, label = `#${seq}`): SafeHtml {
  return html`<a href="${runHref(key, `event/${seq}`)}">${label}</a>`;
}

function callBlock(key: string, call: WakeCall): SafeHtml {
  const c = call.context;
  const shown = c === null ? 'no context (the call was never made)' : `window ${c.window_events} of ${c.eligible_total} eligible events (${c.omitted_by_count} left out by count, ${c.omitted_by_token_cap} by the token cap, ${c.not_eligible} not eligible; ~${c.tokens_estimated} tokens)`;
  return html`<div class="call" data-seq="${call.seq}"><p>Call ${link(key, call.seq)}: shown ${shown}</p>
    ${call.failure === null ? '' : html`<p class="bad">failed — ${call.failure}</p>`}
    ${call.raw_output === null ? html`<p class="muted">no answer text</p>` : html`<pre class="answer">${call.raw_output}</pre>`}</div>`;
}

function eventRows(key: string, rows: readonly StoredEvent[], className: string): SafeHtml {
  return html`<table class="${className}"><tbody>${rows.map((r) => html`<tr><td>${link(key, r.seq)}</td><td>${r.event_type}</td><td>${r.event === null ? html`<span class="bad">unreadable: ${r.problem}</span>` : summarizeEvent(r.event)}</td></tr>`)}</tbody></table>`;
}

function column(column: WakeColumn): SafeHtml {
  if ('problem' in column) return html`<td class="wake-column" data-instance="${column.instance?.key ?? ''}"><div class="alarm">${column.problem}</div></td>`;
  const { instance, record } = column;
  const key = instance.key;
  const outcome = record.span.outcome ?? 'never ended';
  return html`<td class="wake-column" data-instance="${key}" data-group="${instance.group}">
    <h3><a href="${runHref(key)}">${key}</a>: ${outcome}</h3>
    <h4>Shown</h4>
    <p>Wake started at ${link(key, record.span.started_seq)}; the subject's view reached seq ${record.visible_to_seq === null ? '—' : link(key, record.visible_to_seq, String(record.visible_to_seq))}.</p>
    ${record.deliveries.length === 0 ? html`<p class="muted">No intervention delivered for this wake.</p>` : html`<ul class="deliveries">${record.deliveries.map((d) => html`<li>Intervention <strong>${d.intervention_id}</strong> (${link(key, d.seq)}): ${d.delivered.map((e) => (e.event === null ? html`<span class="bad">${e.id} not in this store</span> ` : html`${link(key, e.event.seq)} ${summarizeEvent(e.event)} `))}</li>`)}</ul>`}
    <p>New since the previous wake (${record.arrived.length}${record.arrived_not_read > 0 ? html`, <span class="warn">${record.arrived_not_read} earlier not shown</span>` : ''}):</p>
    ${eventRows(key, record.arrived, 'arrived-events')}
    <h4>Answered (${record.calls.length} call(s))</h4>
    ${record.calls.length === 0 ? html`<p class="muted">No model call in this wake.</p>` : record.calls.map((c) => callBlock(key, c))}
    <h4>Events of the wake (${record.rows.length})</h4>
    ${record.not_read > 0 ? html`<p class="warn">${record.not_read} later event(s) of this wake are not shown here: see the instance's timeline.</p>` : ''}
    ${eventRows(key, record.rows, 'wake-events')}</td>`;
}

export function wakePage(view: StudyView, replicate: number, wakeId: string, columns: readonly WakeColumn[]): string {
  const body = html`<p>Replicate ${replicate} ran A, B and C with the same seed: the same world, the same interventions, the same wake schedule. <a href="/replicate/${replicate}">All wakes of replicate ${replicate}</a>.</p>
    <p class="muted">What a model was shown is recorded as what its prompt was built from — the events up to the seq the wake's view reached, and the call's window counts — not as the prompt's text; what it answered is stored as it came.</p>
    <table id="side-by-side"><thead><tr>${GROUPS.map((g) => html`<th>${g}</th>`)}</tr></thead><tbody><tr>${columns.map(column)}</tr></tbody></table>`;
  return renderStudyFrame(`Wake ${wakeId}, replicate ${replicate}`, studyHeader(view), body);
}
