// Snapshot vs replay (spec §16.1): every stored snapshot with its own checks, and on request
// one of them — or the stored projection row — against a replay of the events alone, with the
// paths where the two states differ. Snapshots are a cache; this page shows whether the
// cache still tells the truth.
import type { AuditDesk, Comparison } from '../audit-desk.js';
import { html, query, type SafeHtml } from '../html.js';
import type { StateDiff } from '../state-diff.js';
import { renderPage, stateLink, status } from './layout.js';

function diffTable(diff: StateDiff | null): SafeHtml {
  if (diff === null) return html``;
  return html`<h3>Where they differ (stored → replayed)</h3><table id="state-diff"><thead><tr><th>path</th><th>stored</th><th>replayed</th></tr></thead><tbody>${diff.differences.map(
    (d) => html`<tr><td><code>${d.path}</code></td><td><code>${d.left ?? '(absent)'}</code></td><td><code>${d.right ?? '(absent)'}</code></td></tr>`,
  )}</tbody></table>${diff.not_listed > 0 ? html`<p class="warn">${diff.not_listed} more difference(s) not listed.</p>` : ''}`;
}

function verdict(title: string, c: Comparison, more: SafeHtml): SafeHtml {
  return html`<section id="comparison"><h2>${title}</h2>
    <p>Result: <span id="comparison-result">${status(c.match, 'identical', c.replay_state_hash === null ? 'CANNOT BE CONFIRMED' : 'DIFFERENT')}</span> · stored state hashes to its state_hash: ${status(c.hash_ok, 'yes', 'no (corrupt or edited)')}</p>
    <p>stored state_hash <code>${c.stored_state_hash ?? '—'}</code><br>replayed state_hash <code>${c.replay_state_hash ?? '—'}</code></p>
    ${c.note ? html`<p class="bad" id="comparison-note">${c.note}</p>` : ''}${diffTable(c.diff)} ${more}</section>`;
}

export type SnapshotRequest = { readonly kind: 'list' } | { readonly kind: 'snapshot'; readonly seq: number } | { readonly kind: 'projection' };

export function snapshotPage(desk: AuditDesk, request: SnapshotRequest): string {
  const { found, malformed } = desk.snapshots();
  let comparison: SafeHtml = html``;
  if (request.kind === 'snapshot') {
    const c = desk.compareSnapshot(request.seq);
    comparison = c === null ? html`<div class="alarm" id="comparison">No snapshot at seq ${request.seq}.</div>` : verdict(`Snapshot at seq ${request.seq} vs replay of seq 1–${request.seq}`, c, html`${stateLink(request.seq, 'the replayed state at this seq')}`);
  } else if (request.kind === 'projection') {
    const c = desk.compareProjection();
    comparison = verdict(`Stored projection (covers seq ${c.covers_seq ?? '—'}) vs replay of every event (seq 1–${desk.index.head_seq})`, c, html``);
  }
  const body = html`
    <p>Replay recomputes a state from the events alone; a snapshot or the stored projection that differs from it is wrong (the events are the record). Comparing replays seq 1 to the snapshot's seq, which takes a moment on a large store.</p>
    ${comparison}
    <p><a href="/snapshots${query([['compare', 'projection']])}" id="compare-projection">Compare the stored projection (seq ${desk.index.head_seq}) with a full replay</a></p>
    <h2>Snapshots (${found.length})</h2>
    ${malformed.length > 0 ? html`<div class="alarm">Malformed snapshot rows at seq ${malformed.join(', ')}: never used.</div>` : ''}
    <table id="snapshots"><thead><tr><th>seq</th><th>projection</th><th>projector</th><th>state machine</th><th>event schema</th><th>state_hash (as stored)</th><th></th></tr></thead><tbody>${found.map(
      (m) => html`<tr><td>${m.seq}</td><td>${m.versions.projection}</td><td>${m.versions.projector_version}</td><td>${m.versions.state_machine_version}</td><td>${m.versions.event_schema_version}</td><td><code>${m.state_hash}</code></td><td><a href="/snapshots${query([['seq', m.seq]])}" class="compare-snapshot">compare with replay</a></td></tr>`,
    )}</tbody></table>`;
  return renderPage(desk, 'Snapshot vs replay', 'snapshots', body);
}
