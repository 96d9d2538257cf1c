// One event as stored, and everything that links to it: what it cites (a claim's or a
// checkpoint's evidence, with each item's eligibility), who cites it (back to the claims and
// checkpoints resting on it), the action chain it belongs to, the intervention that
// delivered it. Every event id in the envelope is a link, so causation can be walked.
import { evidenceEligibility } from '../../projector/evidence.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { AuditDesk, StoredEvent } from '../audit-desk.js';
import { summarizeEvent, typedEvent } from '../event-summary.js';
import { bounded } from '../../foundation/bounded-text.js';
import { html, query, SafeHtml } from '../html.js';
import { eventFindingsSection } from './findings-section.js';
import { eventLink, renderPage, stateLink } from './layout.js';

/** Links made inside one envelope; more ids are left as text (a FACT cites at most 64). */
const MAX_ID_LINKS = 256;
/** Claims and checkpoints listed as citing one event; more are counted. */
const MAX_CITATIONS_LISTED = 500;
/** Stored text shown for a row that does not read as an envelope. */
const MAX_UNREADABLE_CHARS = 65_536;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

function linkedJson(desk: AuditDesk, value: unknown, selfId: string): SafeHtml {
  const text = JSON.stringify(value, null, 2);
  let out = '';
  let at = 0;
  let links = 0;
  for (const match of text.matchAll(UUID)) {
    const id = match[0];
    const seq = id === selfId || links >= MAX_ID_LINKS ? null : desk.seqOfEventId(id);
    out += html`${text.slice(at, match.index)}`.text;
    out += seq === null ? html`${id}`.text : html`<a href="/event/${seq}" title="seq ${seq}">${id}</a>`.text;
    if (seq !== null) links += 1;
    at = match.index + id.length;
  }
  out += html`${text.slice(at)}`.text;
  if (links >= MAX_ID_LINKS) out += html`
[only the first ${MAX_ID_LINKS} event ids above are links]`.text;
  return new SafeHtml(out);
}

/** The evidence a claim or checkpoint at `citingSeq` cites; `allSound` is false when any item is missing, later, unreadable or ineligible. */
function evidenceTable(desk: AuditDesk, citingSeq: number, ids: readonly string[], refuted: Readonly<Record<string, string>>): { table: SafeHtml; allSound: boolean } {
  if (ids.length === 0) return { table: html`<p class="muted" id="evidence">No evidence cited.</p>`, allSound: false };
  let allSound = true;
  const table = html`<table id="evidence"><thead><tr><th>evidence</th><th>type</th><th>summary</th><th>eligible as evidence</th><th>refuted at the head</th></tr></thead><tbody>${ids.map((id) => {
    const seq = desk.seqOfEventId(id);
    const cited = seq === null ? null : desk.eventAt(seq);
    if (seq === null) {
      allSound = false;
      return html`<tr><td colspan="5" class="bad">${id}: not an event of this store</td></tr>`;
    }
    if (cited === null) {
      allSound = false;
      return html`<tr><td>${eventLink(seq)}</td><td colspan="4" class="bad">the stored row does not read as an event (see Chain &amp; signatures)</td></tr>`;
    }
    if (seq >= citingSeq) {
      allSound = false;
      return html`<tr class="evidence-row"><td>${eventLink(seq)}</td><td>${cited.event_type}</td><td>${summarizeEvent(cited)}</td><td colspan="2" class="bad">recorded after what cites it (seq ${citingSeq}): it cannot have justified it</td></tr>`;
    }
    const verdict = evidenceEligibility(cited);
    if (!verdict.eligible) allSound = false;
    const refuter = refuted[id];
    const refuterSeq = refuter === undefined ? null : desk.seqOfEventId(refuter);
    return html`<tr class="evidence-row"><td>${eventLink(seq)}</td><td>${cited.event_type}</td><td>${summarizeEvent(cited)}</td><td>${verdict.eligible ? html`<span class="ok">yes</span>` : html`<span class="bad">no: ${verdict.reason}</span>`}</td><td>${refuter === undefined ? 'no' : html`<span class="bad">refuted by ${refuterSeq === null ? refuter : eventLink(refuterSeq)}</span>`}</td></tr>`;
  })}</tbody></table>`;
  return { table, allSound };
}

interface HeadClaims {
  readonly claims: Readonly<Record<string, { status?: unknown; refuted_by?: { refuting_event_id?: unknown; via_event_id?: unknown } | null }>>;
  readonly refuted: Readonly<Record<string, string>>;
}

function headClaims(desk: AuditDesk): HeadClaims {
  const state = desk.headState().state as { claims?: HeadClaims['claims']; refuted_events?: Record<string, string> } | null;
  return { claims: state?.claims ?? {}, refuted: state?.refuted_events ?? {} };
}

function claimSection(desk: AuditDesk, event: EventEnvelope): SafeHtml {
  const typed = typedEvent(event);
  if (!typed.ok || typed.event.event_type !== 'MemoryEvent.ClaimRecorded') return html``;
  const claim = typed.event.payload;
  const head = headClaims(desk);
  const atHead = head.claims[claim.claim_id];
  const refutedBy = atHead?.refuted_by ?? null;
  const refutingSeq = typeof refutedBy?.refuting_event_id === 'string' ? desk.seqOfEventId(refutedBy.refuting_event_id) : null;
  const evidence = evidenceTable(desk, event.seq, claim.evidence_event_ids, head.refuted);
  return html`<section id="claim"><h2>Claim ${claim.claim_id} (${claim.claim_type})</h2>
    <p id="claim-statement">${claim.statement}</p>
    <p>Confidence: ${claim.confidence ?? '—'}${claim.alternatives.length > 0 ? html` · alternatives: ${claim.alternatives.join(' | ')}` : ''}</p>
    <p>At the head: <strong id="claim-status">${typeof atHead?.status === 'string' ? atHead.status : 'not in the projected state'}</strong>${refutingSeq !== null ? html` — refuted by ${eventLink(refutingSeq)}` : ''}
      · ${stateLink(event.seq, 'what the subject held right after this claim')}</p>
    <h3>What justifies it: the evidence it cites</h3>
    ${evidence.table}
    ${claim.claim_type !== 'FACT' ? '' : evidence.allSound ? html`<p class="muted">Every cited event was in the store before this FACT and is eligible evidence: the writer checks exactly that in the append's transaction.</p>` : html`<p class="alarm" id="fact-unsupported">This FACT is not supported as a FACT must be (see the table): the writer refuses such a FACT, so this store did not come from it unaltered — see Chain &amp; signatures.</p>`}
  </section>`;
}

function checkpointSection(desk: AuditDesk, event: EventEnvelope): SafeHtml {
  const typed = typedEvent(event);
  if (!typed.ok || typed.event.event_type !== 'ExperimentEvent.CheckpointRecorded') return html``;
  return html`<section id="checkpoint"><h2>Checkpoint evidence</h2>${evidenceTable(desk, event.seq, typed.event.payload.evidence_event_ids, headClaims(desk).refuted).table}</section>`;
}

function deliverySection(desk: AuditDesk, event: EventEnvelope): SafeHtml {
  const typed = typedEvent(event);
  if (!typed.ok || typed.event.event_type !== 'ExperimentEvent.InterventionDelivered') return html``;
  return html`<section id="delivered"><h2>Delivered events</h2><ul>${typed.event.payload.event_ids.map((id) => {
    const seq = desk.seqOfEventId(id);
    const delivered = seq === null ? null : desk.eventAt(seq);
    return html`<li>${seq === null || delivered === null ? html`<span class="bad">${id} not in this store</span>` : html`${eventLink(seq)} ${delivered.event_type}: ${summarizeEvent(delivered)}`}</li>`;
  })}</ul></section>`;
}

function citedBySection(desk: AuditDesk, event: EventEnvelope): SafeHtml {
  const citations = desk.index.cited_by.get(event.event_id) ?? [];
  if (citations.length === 0) return html`<section id="cited-by"><h2>Cited as evidence by</h2><p class="muted">No claim or checkpoint cites this event.</p></section>`;
  const listed = citations.slice(0, MAX_CITATIONS_LISTED);
  return html`<section id="cited-by"><h2>Cited as evidence by (${citations.length})</h2><ul>${listed.map((c) => {
    const citing = desk.eventAt(c.seq);
    return html`<li class="citation">${eventLink(c.seq)} ${c.kind}: ${citing ? summarizeEvent(citing) : ''}</li>`;
  })}</ul>${citations.length > listed.length ? html`<p class="warn">${citations.length - listed.length} more not listed (the first ${MAX_CITATIONS_LISTED} are).</p>` : ''}</section>`;
}

export function eventPage(desk: AuditDesk, event: EventEnvelope): string {
  const chainSeq = desk.index.chain_of_seq.get(event.seq);
  const deliveredAt = desk.index.delivered_by.get(event.event_id);
  const typed = typedEvent(event);
  const { seq } = event;
  const body = html`
    <p class="paging">${seq > 1 ? eventLink(seq - 1, '← previous') : ''} · ${seq < desk.index.head_seq ? eventLink(seq + 1, 'next →') : ''}
      · <a href="/timeline${query([['before', seq + 1]])}">timeline here</a> · ${stateLink(seq, 'state after this event')}</p>
    <p id="event-summary"><strong>${event.event_type}</strong> by ${event.actor} at ${event.occurred_at} (virtual; recorded ${event.recorded_at}): ${summarizeEvent(event)}</p>
    ${typed.ok ? '' : html`<div class="alarm">${typed.problem}</div>`}
    ${eventFindingsSection(desk, seq)}
    ${chainSeq === undefined ? '' : html`<p>Part of <a id="chain-link" href="/chain/${chainSeq}">the action chain of ${eventLink(chainSeq, `#${chainSeq}`)}</a>.</p>`}
    ${deliveredAt === undefined ? '' : html`<p>Delivered to the subject by ${eventLink(deliveredAt, `intervention delivery #${deliveredAt}`)}.</p>`}
    ${claimSection(desk, event)}${checkpointSection(desk, event)}${deliverySection(desk, event)}${citedBySection(desk, event)}
    <h2>Envelope as stored</h2><pre id="envelope">${linkedJson(desk, event, event.event_id)}</pre>`;
  return renderPage(desk, `Event #${seq}`, 'event', body);
}

/** A stored row that does not read as the event of its seq: what is wrong, and the text as stored. */
export function unreadableEventPage(desk: AuditDesk, row: StoredEvent): string {
  const { seq } = row;
  const body = html`
    <p class="paging">${seq > 1 ? eventLink(seq - 1, '← previous') : ''} · ${seq < desk.index.head_seq ? eventLink(seq + 1, 'next →') : ''} · <a href="/integrity">Chain &amp; signatures</a></p>
    ${eventFindingsSection(desk, seq)}
    <div class="alarm" id="unreadable">The row at seq ${seq} (filed as ${row.event_type}) does not read as an event: ${row.problem}. Verification lists what is wrong with it.</div>
    <h2>Stored text</h2><pre id="envelope">${bounded(row.text, MAX_UNREADABLE_CHARS)}</pre>`;
  return renderPage(desk, `Seq ${seq}: unreadable`, 'event', body);
}
