// The intervention timeline (spec §16.1): the plan's interventions with the script version
// and seed that produced them, and where the store shows each delivered. A delivery the plan
// does not name, or a planned one never delivered, is marked.
import type { AuditDesk } from '../audit-desk.js';
import { html } from '../html.js';
import { eventIdLink, eventLink, renderPage } from './layout.js';

function hoursMinutes(minute: number): string {
  return `h${Math.floor(minute / 60)}:${String(minute % 60).padStart(2, '0')}`;
}

export function interventionsPage(desk: AuditDesk): string {
  const { plan, manifest } = desk.folder;
  const byId = new Map<string, typeof desk.index.deliveries[number][]>();
  for (const d of desk.index.deliveries) byId.set(d.intervention_id, [...(byId.get(d.intervention_id) ?? []), d]);
  const planned = plan.ok ? plan.value.interventions : null;
  const plannedIds = new Set((planned ?? []).map((i) => i.intervention_id));
  const unplanned = desk.index.deliveries.filter((d) => !plannedIds.has(d.intervention_id));
  const signed = manifest.ok ? manifest.value.manifest : null;
  const body = html`
    ${plan.ok
      ? html`<table id="plan-identity"><tbody>
          <tr><th>seed</th><td id="plan-seed">${plan.value.seed}</td></tr>
          <tr><th>intervention script version</th><td id="plan-script-version">${plan.value.intervention_script_version}</td></tr>
          <tr><th>intervention plan hash</th><td><code>${plan.value.intervention_plan_hash}</code></td></tr>
          <tr><th>schedule hash</th><td><code>${plan.value.schedule_hash}</code> (${plan.value.schedule.wakes.length} wakes from ${plan.value.schedule.start_at})</td></tr>
          <tr><th>signed manifest pins</th><td>${signed ? html`seed ${signed.random_seed} · script ${signed.intervention_script_version} · plan <code>${signed.intervention_plan_hash}</code>${signed.random_seed === plan.value.seed && signed.intervention_plan_hash === plan.value.intervention_plan_hash && signed.intervention_script_version === plan.value.intervention_script_version ? html` <span class="ok">= plan.json</span>` : html` <span class="bad">≠ plan.json</span>`}` : html`<span class="bad">no verified manifest</span>`}</td></tr>
        </tbody></table>`
      : html`<div class="alarm">No plan to show: ${plan.problem}. Deliveries recorded in the store are listed below.</div>`}
    ${planned
      ? html`<h2>Planned interventions (${planned.length})</h2><table id="interventions"><thead><tr><th>intervention</th><th>kind</th><th>injected (virtual)</th><th>delivered at wake</th><th>planned events</th><th>in the store</th></tr></thead><tbody>${planned.map((i) => {
          const delivered = byId.get(i.intervention_id) ?? [];
          return html`<tr class="intervention"><td>${i.intervention_id}</td><td>${i.kind}</td><td>${i.inject_at} (${hoursMinutes(i.inject_minute)})</td><td>${i.deliver_wake_id}</td><td>${i.events.length}</td><td>${
            delivered.length === 0
              ? html`<span class="muted">no InterventionDelivered${desk.index.sealed_seq === null ? ' (yet)' : ''}</span>`
              : delivered.map((d) => html`delivered ${eventLink(d.seq)} at ${d.wake_id}: ${d.event_ids.map((id) => html`${eventIdLink(desk, id)} `)}`)
          }</td></tr>`;
        })}</tbody></table>`
      : ''}
    ${unplanned.length > 0 ? html`<div class="alarm" id="unplanned">Delivered but not in the plan: ${unplanned.map((d) => html`${d.intervention_id} at ${eventLink(d.seq)} `)}</div>` : ''}
    <p class="muted">Crash interventions (runtime/writer kill, long absence) show as ProcessRestarted events and wake outcomes on the recovery page.</p>`;
  return renderPage(desk, 'Interventions', 'interventions', body);
}
