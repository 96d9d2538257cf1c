// The immutable event timeline (spec §16.1), a page at a time, filtered by event type.
// Paging is by seq (after / before), so a page of a 100,000-event store reads one page.
import { TIMELINE_PAGE_EVENTS, type AuditDesk } from '../audit-desk.js';
import { html, query } from '../html.js';
import { eventTable, renderPage } from './layout.js';

export interface TimelineRequest {
  /** null: every type. */
  readonly types: readonly string[] | null;
  readonly position: { readonly afterSeq: number } | { readonly beforeSeq: number };
  readonly limit: number;
}

export function timelinePage(desk: AuditDesk, request: TimelineRequest): string {
  const { types, position, limit } = request;
  const known = [...desk.index.type_counts.keys()].sort();
  const unknownTypes = (types ?? []).filter((t) => !desk.index.type_counts.has(t));
  const page = desk.timeline(position, limit, types);
  const typePairs = (types ?? []).map((t) => ['type', t] as const);
  const first = page.rows[0]?.seq;
  const last = page.rows.at(-1)?.seq;
  const link = (pairs: readonly (readonly [string, string | number])[]): string => `/timeline${query([...typePairs, ...pairs, ['limit', limit === TIMELINE_PAGE_EVENTS.default ? null : limit]])}`;
  const paging = html`<p class="paging">
    ${page.earlier_before !== null ? html`<a id="prev-page" href="${link([['before', page.earlier_before]])}">← earlier</a>` : html`<span class="muted">start</span>`}
    · showing ${page.rows.length} event(s)${first !== undefined ? ` (seq ${first}–${last})` : ''} ·
    ${page.later_after !== null ? html`<a id="next-page" href="${link([['after', page.later_after]])}">later →</a>` : html`<span class="muted">end</span>`}
  </p>`;
  const byCategory = new Map<string, string[]>();
  for (const type of known) {
    const category = type.split('.')[0] ?? type;
    byCategory.set(category, [...(byCategory.get(category) ?? []), type]);
  }
  const selected = new Set(types ?? []);
  const form = html`<form method="get" action="/timeline" id="filter">
    ${[...byCategory.entries()].map(
      ([category, list]) => html`<fieldset><legend>${category}</legend>${list.map(
        (t) => html`<label><input type="checkbox" name="type" value="${t}" ${selected.has(t) ? html`checked` : ''}> ${t.slice(category.length + 1)} <span class="muted">(${desk.index.type_counts.get(t) ?? 0})</span></label>`,
      )}</fieldset>`,
    )}
    <label>from seq <input type="number" name="after_seq" min="1" max="${desk.index.head_seq}" id="from-seq"></label>
    <label>per page <input type="number" name="limit" min="1" max="${TIMELINE_PAGE_EVENTS.max}" value="${limit}"></label>
    <button type="submit" id="apply-filter">Show</button> <a href="/timeline">clear</a>
  </form>`;
  const body = html`
    <p>${types === null ? 'All event types.' : html`Only: <span id="active-filter">${types.join(', ')}</span>.`} Events are shown as stored; nothing here can change them.</p>
    ${unknownTypes.length > 0 ? html`<div class="warn">No event of type ${unknownTypes.join(', ')} is in this store.</div>` : ''}
    ${form}${paging}${eventTable(page.rows)}${paging}`;
  return renderPage(desk, 'Timeline', 'timeline', body);
}
