// ActionProposal → PermissionDecision → ToolExecution (spec §16.1): every proposal the
// subject made, what the permission gate decided and by which rules, the execution intent,
// and the outcome (succeeded, failed, unknown, reconciled after a restart, or resolved by an
// operator). A denied proposal shows no execution because there was none.
import type { EventEnvelope } from '../../schema/envelope.js';
import type { AuditDesk } from '../audit-desk.js';
import { summarizeEvent, typedEvent } from '../event-summary.js';
import { bounded } from '../../foundation/bounded-text.js';
import { html, query, type SafeHtml } from '../html.js';
import type { ActionChain } from '../store-index.js';
import { eventLink, renderPage, stateLink } from './layout.js';

export const CHAINS_PER_PAGE = 100;
/** A proposal's arguments shown on its chain (a write's text can be 64 KiB); the event page has them whole. */
const MAX_ARGS_CHARS = 2_000;
/** Events that name a chain step but fit no chain, listed on the chains page; more are counted. */
const MAX_ORPHANS_LISTED = 200;
export const CHAIN_FILTERS = ['all', 'denied', 'executed', 'failed', 'unknown'] as const;
export type ChainFilter = (typeof CHAIN_FILTERS)[number];

function matches(chain: ActionChain, filter: ChainFilter): boolean {
  switch (filter) {
    case 'all':
      return true;
    case 'denied':
      return chain.decision === 'deny';
    case 'executed':
      return chain.intent_seq !== null || chain.effects.length > 0;
    case 'failed':
      return chain.outcomes.some((o) => o.event_type === 'ActionEvent.ToolFailed');
    case 'unknown':
      return chain.outcomes.some((o) => o.event_type === 'ActionEvent.ToolOutcomeUnknown');
    default: {
      const unhandled: never = filter;
      return unhandled;
    }
  }
}

const shortType = (type: string): string => type.split('.')[1] ?? type;

export function chainsPage(desk: AuditDesk, filter: ChainFilter, afterSeq: number): string {
  const all = desk.index.chains.filter((c) => matches(c, filter));
  const start = all.findIndex((c) => c.proposed_seq > afterSeq);
  const shown = start < 0 ? [] : all.slice(start, start + CHAINS_PER_PAGE);
  const last = shown.at(-1);
  const more = start >= 0 && start + CHAINS_PER_PAGE < all.length;
  const orphans = desk.index.orphan_steps;
  const orphanCount = orphans.length + desk.index.orphan_steps_not_listed;
  const orphanNote = orphanCount === 0 ? html`` : html`<div class="alarm" id="orphan-steps">${orphanCount} event(s) name a proposal, permission decision or intent that no chain holds — an execution without its decision is an unauthorised execution (spec §8.4): ${orphans.slice(0, MAX_ORPHANS_LISTED).map((o) => html`${eventLink(o.seq, `#${o.seq} ${shortType(o.event_type)}`)} `)}${orphanCount > MAX_ORPHANS_LISTED ? html`… ${orphanCount - MAX_ORPHANS_LISTED} more` : ''}</div>`;
  const body = html`${orphanNote}
    <p>${all.length} chain(s)${filter === 'all' ? '' : ` (${filter})`} of ${desk.index.chains.length}. Filter: ${CHAIN_FILTERS.map(
      (f) => html`<a href="/chains${query([['only', f === 'all' ? null : f]])}" class="${f === filter ? 'active' : ''}">${f}</a> `,
    )}</p>
    <table id="chains"><thead><tr><th>proposal</th><th>wake</th><th>action</th><th>decision</th><th>intent</th><th>outcome</th><th>effect</th><th></th></tr></thead><tbody>${shown.map(
      (c) => html`<tr class="chain-row"><td>${eventLink(c.proposed_seq)} ${c.proposal_id}</td><td>${c.wake_id ?? '—'}</td><td>${c.tool}.${c.op}</td>
        <td class="${c.decision === 'deny' ? 'bad' : ''}">${c.decision ?? html`<span class="bad">no decision</span>`}</td>
        <td>${c.intent_seq === null ? '—' : eventLink(c.intent_seq)}</td>
        <td>${c.outcomes.map((o) => html`${eventLink(o.seq, shortType(o.event_type))} `)}</td>
        <td>${c.effects.map((o) => html`${eventLink(o.seq, shortType(o.event_type))} `)}</td>
        <td><a href="/chain/${c.proposed_seq}" class="open-chain">open chain</a></td></tr>`,
    )}</tbody></table>
    ${more && last ? html`<p><a id="next-page" href="/chains${query([['only', filter === 'all' ? null : filter], ['after', last.proposed_seq]])}">more →</a></p>` : ''}`;
  return renderPage(desk, 'Action chains', 'chains', body);
}

function stepDetail(event: EventEnvelope): SafeHtml {
  const typed = typedEvent(event);
  if (!typed.ok) return html`<div class="alarm">${typed.problem}</div>`;
  const e = typed.event;
  switch (e.event_type) {
    case 'ActionEvent.ActionProposed':
      return html`<p>Arguments: <code>${bounded(JSON.stringify(e.payload.args), MAX_ARGS_CHARS)}</code></p><p>Rationale: ${e.payload.rationale}</p>`;
    case 'ActionEvent.PermissionDecided':
      return html`<table class="rules"><thead><tr><th>rule</th><th>passed</th><th>detail</th></tr></thead><tbody>${e.payload.rules.map(
        (r) => html`<tr><td>${r.rule}</td><td class="${r.passed ? 'ok' : 'bad'}">${r.passed ? 'yes' : 'no'}</td><td>${r.detail}</td></tr>`,
      )}</tbody></table>${e.payload.repeat_of_denied ? html`<p class="bad">A repeat of an action denied before.</p>` : ''}`;
    case 'ActionEvent.ExecutionIntentRecorded':
      return html`<p>${e.payload.op} <code>${e.payload.path}</code>${e.payload.to_path ? html` → <code>${e.payload.to_path}</code>` : ''}<br>pre-hash <code>${e.payload.pre_hash ?? 'none (absent)'}</code><br>intended post-hash <code>${e.payload.intended_post_hash ?? 'none (absent)'}</code></p>`;
    case 'ActionEvent.ToolSucceeded':
      return html`<p>observed post-hash <code>${e.payload.observed_post_hash ?? 'none'}</code>${e.payload.content !== null ? html`<br>read ${e.payload.content.length} characters` : ''}</p>`;
    case 'ActionEvent.ToolFailed':
      return html`<p>${e.payload.error} · observed <code>${e.payload.observed_hash ?? 'none'}</code></p>`;
    case 'ActionEvent.ToolOutcomeUnknown':
      return html`<p class="bad">${e.payload.detail} · found <code>${e.payload.observed_hash ?? 'nothing'}</code>. Read-only (RECOVERING) until an operator resolves it.</p>`;
    case 'ActionEvent.ToolReconciled':
      return html`<p>${e.payload.outcome} · observed <code>${e.payload.observed_hash ?? 'nothing'}</code></p>`;
    case 'SystemEvent.OperatorResolved':
      return html`<p>Operator ${e.payload.operator}: ${e.payload.resolution}. ${e.payload.note}</p>`;
    default:
      return html`<p>${summarizeEvent(event)}</p>`;
  }
}

export function chainPage(desk: AuditDesk, chain: ActionChain): string {
  const seqs = [chain.proposed_seq, chain.decision_seq, chain.intent_seq, ...chain.outcomes.map((o) => o.seq), ...chain.effects.map((o) => o.seq)].filter((s): s is number => s !== null).sort((a, b) => a - b);
  const rows = seqs.map((seq) => desk.rowAt(seq));
  const missing = chain.decision_seq === null ? 'no permission decision was recorded for this proposal' : chain.decision === 'allow' && chain.intent_seq === null && chain.effects.length === 0 ? 'allowed, but no execution was recorded' : chain.intent_seq !== null && chain.outcomes.length === 0 ? 'the intent has no outcome: it is open' : null;
  const body = html`<p>Proposal ${chain.proposal_id} in ${chain.wake_id ?? 'no wake'}: ${chain.tool}.${chain.op} — ${chain.decision ?? 'undecided'}.</p>
    ${missing ? html`<div class="warn" id="chain-gap">${missing}</div>` : ''}
    <ol id="chain-steps">${rows.map((row, i) => {
      const e = row?.event ?? null;
      if (e === null) return html`<li class="chain-step bad">${eventLink(seqs[i]!)}: the stored row does not read as an event (see Chain &amp; signatures)</li>`;
      return html`<li class="chain-step" data-type="${e.event_type}"><h3>${eventLink(e.seq)} ${e.event_type} <span class="muted">(${e.actor}, ${e.occurred_at})</span> ${stateLink(e.seq, 'state after')}</h3>${stepDetail(e)}</li>`;
    })}</ol>
    <p><a href="/chains">all chains</a></p>`;
  return renderPage(desk, `Action chain #${chain.proposed_seq}`, 'chains', body);
}
