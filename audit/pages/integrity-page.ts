// Chain and signature status: what `npm run verify` finds (hash chain, payload hashes,
// signed heads, manifest, seal), each signed head against the event at its seq, and whether
// the store follows its plan. Computed once when the desk opened, on the files as they were.
import { computeEventHash } from '../../schema/envelope-hash.js';
import type { AuditDesk } from '../audit-desk.js';
import { html, type SafeHtml } from '../html.js';
import { eventLink, renderPage, status } from './layout.js';

function findingList(id: string, findings: readonly { seq: number | null; text: string }[]): SafeHtml {
  return html`<ul id="${id}">${findings.map((f) => html`<li>${f.seq === null ? '' : html`${eventLink(f.seq)} `}${f.text}</li>`)}</ul>`;
}

export function integrityPage(desk: AuditDesk): string {
  const { verify, folder, planCheck, opened } = desk;
  const heads = folder.heads;
  const headRows = heads.ok
    ? heads.value.map((line) => {
        if (line.head === null) return html`<tr><td>${line.line}</td><td colspan="4" class="bad">${line.problem}</td></tr>`;
        const event = line.head.seq <= desk.index.head_seq ? desk.eventAt(line.head.seq) : null;
        // Recomputed, not the envelope's own event_hash field: an edit that leaves that field alone must not pass.
        const matches = event !== null && computeEventHash(event) === line.head.event_hash;
        return html`<tr class="signed-head"><td>${line.line}</td><td>${line.head.kind}</td><td>${event ? eventLink(line.head.seq) : line.head.seq}</td><td>${line.head.signed_at}</td><td>${status(matches, 'signature valid; names the stored event', event ? 'signature valid but the stored event hashes otherwise' : 'names a seq beyond the store')}</td></tr>`;
      })
    : [];
  const body = html`
    <h2>Hash chain and signatures: <span id="verify-result">${status(verify.ok, 'verified', 'FAILED')}</span></h2>
    <p>${verify.stores} store(s), ${verify.events} event(s) checked in ${Math.round(opened.verify_ms)} ms when the desk opened (the same checks as <code>npm run verify -- ${folder.runDir} --open</code>).</p>
    ${verify.failures.length > 0 ? html`<h3>Failures (${verify.failures.length})</h3>${findingList('verify-failures', verify.failures.map((f) => ({ seq: f.seq, text: `${f.store}: ${f.reason}` })))}` : ''}
    ${verify.warnings.length > 0 ? html`<h3>Warnings (${verify.warnings.length})</h3>${findingList('verify-warnings', verify.warnings.map((f) => ({ seq: f.seq, text: `${f.store}: ${f.reason}` })))}` : ''}
    <h2>Signed manifest</h2>
    <p id="manifest-status">${folder.manifest.ok ? html`<span class="ok">signature valid</span>; sha256 <code>${folder.manifest.value.sha256}</code> (the hash the store's first event names)` : html`<span class="bad">${folder.manifest.problem}</span>`}</p>
    <h2>Signed chain heads (${heads.ok ? heads.value.length : 0})</h2>
    ${heads.ok ? html`<table id="signed-heads"><thead><tr><th>line</th><th>kind</th><th>seq</th><th>signed at</th><th>check</th></tr></thead><tbody>${headRows}</tbody></table>` : html`<p class="bad">${heads.problem}</p>`}
    <h2>Plan conformance</h2>
    ${planCheck.ok
      ? html`<p id="plan-status">${status(planCheck.value.ok, 'the store follows its plan', `${planCheck.value.failures.length} departure(s) from the plan`)}</p>
          ${planCheck.value.failures.length > 0 ? findingList('plan-failures', planCheck.value.failures.map((f) => ({ seq: f.seq, text: `${f.file}: ${f.message}` }))) : ''}
          ${planCheck.value.notes.length > 0 ? html`<h3>Notes</h3>${findingList('plan-notes', planCheck.value.notes.map((f) => ({ seq: f.seq, text: `${f.file}: ${f.message}` })))}` : ''}`
      : html`<p class="warn" id="plan-status">${planCheck.problem}</p>`}`;
  return renderPage(desk, 'Chain & signatures', 'integrity', body);
}
