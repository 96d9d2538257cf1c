// The desk's first page: which run this is (from the signed manifest), what the subject's
// lifecycle is at the head, what the store holds by event type, and every wake with the
// state at its end one click away.
import { WakeEnded, WakeStarted } from '../../schema/events/experiment-events.js';
import type { AuditDesk } from '../audit-desk.js';
import { html, query } from '../html.js';
import { runFindingsSection } from './findings-section.js';
import { eventLink, renderPage, stateLink, status } from './layout.js';

/** A 72-hour run has ~31 wakes; a store of another shape lists its first ones and links the rest. */
const MAX_OVERVIEW_WAKES = 500;

export function overviewPage(desk: AuditDesk): string {
  const { folder, index } = desk;
  const manifest = folder.manifest.ok ? folder.manifest.value.manifest : null;
  const head = desk.headState();
  const lifecycle = typeof head.state === 'object' && head.state !== null ? (head.state as { lifecycle_state?: unknown }).lifecycle_state : undefined;
  const identity = manifest
    ? html`<table id="manifest"><tbody>
        <tr><th>experiment</th><td>${manifest.experiment_id}</td></tr>
        <tr><th>group (blind id)</th><td>${manifest.group_blind_id}</td></tr>
        <tr><th>capabilities</th><td>persistent state: ${manifest.capabilities.persistent_state ? 'on' : 'off'} · autonomous re-planning: ${manifest.capabilities.autonomous_replanning ? 'on' : 'off'}</td></tr>
        <tr><th>seed</th><td>${manifest.random_seed}</td></tr>
        <tr><th>intervention script</th><td>${manifest.intervention_script_version}</td></tr>
        <tr><th>model</th><td>${manifest.model.adapter} · ${manifest.model_id}</td></tr>
        <tr><th>isolation</th><td>${manifest.isolation.mode === 'same-uid' ? `same-uid: ${manifest.isolation.reason}` : 'separate uids'}</td></tr>
        <tr><th>versions</th><td>runtime ${manifest.runtime_version} · events ${manifest.event_schema_version} · projector ${manifest.projector_version} · state machine ${manifest.state_machine_version}</td></tr>
        <tr><th>started</th><td>${manifest.started_at}</td></tr>
      </tbody></table>`
    : html`<div class="alarm">No verified manifest: ${folder.manifest.ok ? '' : folder.manifest.problem}</div>`;
  const counts = [...index.type_counts.entries()].sort((a, b) => a[0].localeCompare(b[0]));
  const body = html`
    <p>Run folder <code>${folder.runDir}</code>, store <code>${folder.storePath}</code> (opened read-only).
    ${desk.versions === null ? html`<span class="bad">No projection row: states cannot be replayed.</span>` : `Projection ${desk.versions.projection}@${desk.versions.projector_version}, state machine ${desk.versions.state_machine_version}.`}</p>
    ${identity}
    ${runFindingsSection(desk)}
    <h2>At the head (seq ${index.head_seq})</h2>
    <p>Lifecycle: <strong id="head-lifecycle">${typeof lifecycle === 'string' ? lifecycle : '—'}</strong> (${head.source}${head.problem ? html` — <span class="bad">${head.problem}</span>` : ''}) · ${stateLink(index.head_seq, 'the whole state at the head')}
    · chain & signatures: ${status(desk.verify.ok, 'verified', 'FAILED')}
    · open unknown outcomes: ${index.unknown_outcomes.filter((u) => u.closed_seq === null).length}</p>
    <h2>Events by type</h2>
    <table id="type-counts"><thead><tr><th>type</th><th>events</th></tr></thead><tbody>${counts.map(
      ([type, n]) => html`<tr><td><a href="/timeline${query([['type', type]])}">${type}</a></td><td>${n}</td></tr>`,
    )}</tbody></table>
    <h2>Wakes (${index.wakes.length})</h2>
    ${index.wakes.length > MAX_OVERVIEW_WAKES ? html`<p class="warn">The first ${MAX_OVERVIEW_WAKES} are listed; every wake is on <a href="/timeline${query([['type', WakeStarted.type], ['type', WakeEnded.type]])}">the timeline</a>.</p>` : ''}
    <table id="wakes"><thead><tr><th>wake</th><th>started</th><th>ended</th><th>outcome</th><th>state</th></tr></thead><tbody>${index.wakes.slice(0, MAX_OVERVIEW_WAKES).map(
      (w) => html`<tr><td>${w.wake_id}</td><td>${eventLink(w.started_seq)}</td><td>${w.ended_seq === null ? html`<span class="bad">never ended</span>` : eventLink(w.ended_seq)}</td><td>${w.outcome ?? '—'}</td><td>${stateLink(w.started_seq, 'at start')} · ${w.ended_seq === null ? '' : stateLink(w.ended_seq, 'at end')}</td></tr>`,
    )}</tbody></table>`;
  return renderPage(desk, 'Overview', 'overview', body);
}
