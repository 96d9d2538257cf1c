// The Subject State after any seq (spec §16.1): what the subject held at that point — goals,
// focus, task board, journal, claims with their status, open intents — computed from the
// nearest usable snapshot plus the events after it, with that provenance on the page.
import { SubjectState } from '../../projector/subject-state.js';
import type { AuditDesk } from '../audit-desk.js';
import { html, query, type SafeHtml } from '../html.js';
import type { StateAtSeq } from '../state-at-seq.js';
import type { ReplayMode } from '../../writer/replay.js';
import { eventIdLink, eventLink, renderPage } from './layout.js';

/** Rows per section; the whole state is always one link away as JSON. */
export const MAX_STATE_SECTION_ROWS = 500;

function bounded<T>(items: readonly T[], seq: number, render: (item: T) => SafeHtml): SafeHtml {
  const shown = items.slice(0, MAX_STATE_SECTION_ROWS);
  const rest = items.length - shown.length;
  return html`${shown.map(render)}${rest > 0 ? html`<tr><td colspan="9" class="warn">${rest} more not listed here: <a href="/state.json${query([['seq', seq]])}">the whole state as JSON</a></td></tr>` : ''}`;
}

function subjectSections(desk: AuditDesk, s: SubjectState, seq: number): SafeHtml {
  const claims = Object.entries(s.claims).sort((a, b) => b[1].seq - a[1].seq);
  const tasks = Object.entries(s.task_board);
  const journal = Object.entries(s.journal.index).sort((a, b) => b[1] - a[1]);
  const intents = Object.entries(s.open_intents);
  return html`
    <table id="state-summary"><tbody>
      <tr><th>lifecycle</th><td id="state-lifecycle">${s.lifecycle_state}</td></tr>
      <tr><th>cognitive state</th><td>${s.cognitive_state}</td></tr>
      <tr><th>current goal</th><td id="state-goal">${s.current_state.current_goal_id ?? '—'}</td></tr>
      <tr><th>attention</th><td>${s.current_state.attention_target ?? '—'}</td></tr>
      <tr><th>waiting for</th><td>${s.current_state.waiting_condition ?? '—'}</td></tr>
      <tr><th>last observation</th><td>${s.current_state.last_observation_at ?? '—'}</td></tr>
      <tr><th>current wake</th><td>${s.current_wake_id ?? 'none (between wakes)'}</td></tr>
      <tr><th>current plan</th><td>${s.current_plan.join(' → ') || '—'}</td></tr>
      <tr><th>budget left</th><td>${s.resource_budget.remaining.model_calls} model calls · ${s.resource_budget.remaining.tokens} tokens · ${s.resource_budget.remaining.tool_calls} tool calls${s.resource_budget.overruns.model_calls + s.resource_budget.overruns.tokens + s.resource_budget.overruns.tool_calls > 0 ? html` · <span class="bad">overruns ${JSON.stringify(s.resource_budget.overruns)}</span>` : ''}</td></tr>
      <tr><th>plan revisions</th><td>${s.plan_revisions.accepted} accepted · ${s.plan_revisions.rejected} rejected</td></tr>
    </tbody></table>
    <h2>Goals (${s.goals.length})</h2>
    <table id="state-goals"><thead><tr><th>goal</th><th>status</th><th>deadline</th><th>description</th></tr></thead><tbody>${s.goals.map(
      (g) => html`<tr><td>${g.goal_id}</td><td>${g.status}</td><td>${g.deadline_at ?? '—'}</td><td>${g.description}</td></tr>`,
    )}</tbody></table>
    <h2>Claims (${claims.length})</h2>
    <table id="state-claims"><thead><tr><th>claim</th><th>type</th><th>status</th><th>recorded</th><th>statement</th></tr></thead><tbody>${bounded(
      claims,
      seq,
      ([id, c]) => html`<tr class="state-claim"><td>${id}</td><td>${c.claim_type}</td><td class="${c.status === 'refuted' ? 'bad' : ''}">${c.status}${c.refuted_by ? html` by ${eventIdLink(desk, c.refuted_by.refuting_event_id)}` : ''}</td><td>${eventLink(c.seq)}</td><td>${c.statement}</td></tr>`,
    )}</tbody></table>
    <h2>Task board (${tasks.length})</h2>
    <table id="state-tasks"><thead><tr><th>task</th><th>status</th><th>priority</th><th>depends on</th><th>title</th></tr></thead><tbody>${bounded(
      tasks,
      seq,
      ([id, t]) => html`<tr><td>${id}</td><td>${t.status}</td><td>${t.priority}</td><td>${t.depends_on.join(', ') || '—'}</td><td>${t.title}</td></tr>`,
    )}</tbody></table>
    <h2>Journal (${s.journal.entries} entries)</h2>
    <table id="state-journal"><thead><tr><th>entry</th><th>written</th></tr></thead><tbody>${bounded(journal, seq, ([id, at]) => html`<tr><td>${id}</td><td>${eventLink(at)}</td></tr>`)}</tbody></table>
    <h2>Open execution intents (${intents.length})</h2>
    <table id="state-intents"><thead><tr><th>intent</th><th>outcome</th><th>op</th><th>path</th></tr></thead><tbody>${bounded(
      intents,
      seq,
      ([id, i]) => html`<tr><td>${eventIdLink(desk, id)}</td><td class="${i.outcome === 'unknown' ? 'bad' : ''}">${i.outcome}</td><td>${i.op}</td><td>${i.path}${i.to_path ? ` → ${i.to_path}` : ''}</td></tr>`,
    )}</tbody></table>
    <h2>Refuted events (${Object.keys(s.refuted_events).length})</h2>
    <table id="state-refuted"><thead><tr><th>event</th><th>refuted by</th></tr></thead><tbody>${bounded(
      Object.entries(s.refuted_events),
      seq,
      ([id, by]) => html`<tr><td>${eventIdLink(desk, id)}</td><td>${eventIdLink(desk, by)}</td></tr>`,
    )}</tbody></table>`;
}

function provenance(computed: StateAtSeq): SafeHtml {
  // A snapshot is a cache: one forged consistently (state and hash) would seed this state unseen,
  // so the page links the check that replays the events alone.
  return html`<p id="state-provenance">State after seq ${computed.seq}${computed.mode === 'strict' ? '' : html` <strong class="bad">(replay mode ${computed.mode}: this store was recorded under other versions)</strong>`}: ${computed.from_snapshot_seq === null ? `replayed from seq 1 (${computed.events_replayed} events)` : html`snapshot at seq ${computed.from_snapshot_seq} (<a href="/snapshots${query([['seq', computed.from_snapshot_seq]])}">check it against a replay</a>) + ${computed.events_replayed} event(s) replayed`}
    · state_hash <code>${computed.state_hash}</code> · ${computed.versions.projection}@${computed.versions.projector_version}</p>
    ${computed.snapshots_passed_over.length > 0 ? html`<div class="warn" id="snapshots-passed-over">Snapshots not used: <ul>${computed.snapshots_passed_over.map((p) => html`<li>${p}</li>`)}</ul></div>` : ''}`;
}

export function stateForm(desk: AuditDesk, seq: number | null): SafeHtml {
  return html`<form method="get" action="/state" id="state-form"><label>State after seq <input type="number" name="seq" id="state-seq" min="1" max="${desk.index.head_seq}" value="${seq ?? desk.index.head_seq}"></label> <button type="submit" id="show-state">Show</button></form>`;
}

export function statePage(desk: AuditDesk, seq: number, mode: ReplayMode = 'strict'): string {
  const computed = desk.stateAt(seq, mode);
  const wake = [...desk.index.wakes].reverse().find((w) => w.started_seq <= seq);
  const inWake = wake && (wake.ended_seq === null || wake.ended_seq >= seq);
  const event = desk.eventAt(seq);
  const parsed = SubjectState.safeParse(computed.state);
  const modeParam = mode === 'strict' ? null : mode;
  const body = html`${stateForm(desk, seq)}
    ${provenance(computed)}
    <p>The event at seq ${seq}: ${eventLink(seq)} ${event?.event_type ?? ''}.
      ${wake ? (inWake ? html`It falls in wake ${wake.wake_id} (started at ${eventLink(wake.started_seq)}).` : html`It falls after wake ${wake.wake_id} (ended at ${eventLink(wake.ended_seq ?? wake.started_seq)}).`) : 'It comes before the first wake.'}
      · <a href="/state.json${query([['seq', seq], ['mode', modeParam]])}" id="state-json">the whole state as JSON</a>
      ${seq > 1 ? html`· <a href="/state${query([['seq', seq - 1], ['mode', modeParam]])}">seq ${seq - 1}</a>` : ''} ${seq < desk.index.head_seq ? html`· <a href="/state${query([['seq', seq + 1], ['mode', modeParam]])}">seq ${seq + 1}</a>` : ''}</p>
    ${desk.folder.manifest.ok && !desk.folder.manifest.value.manifest.capabilities.persistent_state ? html`<div class="warn">This instance runs without persistent state: the runtime rebuilds its state from the retrieval window at every wake. What is shown is the store's projection of its events — the record, not what the subject carried between wakes.</div>` : ''}
    ${parsed.success ? subjectSections(desk, parsed.data, seq) : html`<p class="muted">This projection (${computed.versions.projection}) is not the Subject state; shown as stored.</p><pre>${JSON.stringify(computed.state, null, 2)}</pre>`}`;
  return renderPage(desk, `State after seq ${seq}`, 'state', body);
}
