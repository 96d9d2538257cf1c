// Every MemoryClaim with the events it cites (spec §16.1: claim ↔ evidence both ways). The
// claim's own page (its event page) shows each evidence event's eligibility and status; each
// evidence event's page lists the claims resting on it, back here.
import { ClaimRecorded } from '../../schema/events/memory-events.js';
import type { AuditDesk } from '../audit-desk.js';
import { typedEvent } from '../event-summary.js';
import { bounded } from '../../foundation/bounded-text.js';
import { html, query } from '../html.js';
import { eventIdLink, eventLink, renderPage } from './layout.js';

export const CLAIMS_PER_PAGE = 100;
const STATEMENT_CHARS = 240;

export function claimsPage(desk: AuditDesk, afterSeq: number): string {
  const page = desk.timeline({ afterSeq }, CLAIMS_PER_PAGE, [ClaimRecorded.type]);
  const head = desk.headState().state as { claims?: Record<string, { status?: unknown }> } | null;
  const total = desk.index.type_counts.get(ClaimRecorded.type) ?? 0;
  const body = html`<p>${total} claim(s) recorded. Status is the projection's at the head (a FACT is refuted when an event it rests on is refuted).</p>
    <table id="claims"><thead><tr><th>claim</th><th>type</th><th>status at head</th><th>statement</th><th>evidence</th></tr></thead><tbody>${page.rows.map((row) => {
      const typed = row.event === null ? ({ ok: false, problem: `unreadable: ${row.problem ?? ''}` } as const) : typedEvent(row.event);
      if (!typed.ok || typed.event.event_type !== 'MemoryEvent.ClaimRecorded') return html`<tr><td>${eventLink(row.seq)}</td><td colspan="4" class="bad">${typed.ok ? 'not a claim' : typed.problem}</td></tr>`;
      const event = row.event!;
      const c = typed.event.payload;
      const statusAtHead = head?.claims?.[c.claim_id]?.status;
      return html`<tr class="claim-row"><td>${eventLink(event.seq, `#${event.seq} ${c.claim_id}`)}</td><td>${c.claim_type}</td><td class="${statusAtHead === 'refuted' ? 'bad' : ''}">${typeof statusAtHead === 'string' ? statusAtHead : '—'}</td><td>${bounded(c.statement, STATEMENT_CHARS)}</td><td>${c.evidence_event_ids.map((id) => html`${eventIdLink(desk, id)} `)}</td></tr>`;
    })}</tbody></table>
    ${page.later_after !== null ? html`<p><a id="next-page" href="/claims${query([['after', page.later_after]])}">more →</a></p>` : ''}`;
  return renderPage(desk, 'Claims', 'claims', body);
}
