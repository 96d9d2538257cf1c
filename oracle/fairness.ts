// The batch's fairness check (spec §5.2, §19.1; DESIGN §8): the groups of a replicate must have
// had the same plan, schedule, wake outcomes, deliveries, granted budgets, model calls and retries, and the
// whole batch one model build with one set of parameters. Any group-dependent difference voids
// the batch. What legitimately differs by behaviour (tokens and tool calls used) is reported,
// not voided: a subject that reads less uses fewer tokens, and that is the treatment's effect.
import { canonicalJson } from '../schema/canonical-json.js';
import { nonGroupDifferences } from '../design/manifest.js';
import { eventsOf, type RunRecord } from './run-record.js';
import type { Group } from '../design/groups.js';
import type { FairnessCheck } from './study-report.js';

export interface FairnessInstance {
  readonly group: Group;
  readonly replicate: number;
  readonly record: RunRecord;
}

/** At most this many differences are named per check; the count of the rest is stated. */
const MAX_NAMED_DIFFERENCES = 8;

function named(differences: readonly string[]): string {
  const shown = differences.slice(0, MAX_NAMED_DIFFERENCES).join('; ');
  return differences.length > MAX_NAMED_DIFFERENCES ? `${shown}; and ${differences.length - MAX_NAMED_DIFFERENCES} more` : shown;
}

/**
 * Transport retries are left out (issue 15, DESIGN §12): they follow the server's luck under one
 * pre-registered policy, recorded attempt by attempt, and are reported per group below instead.
 */
function ledgerRows(record: RunRecord): Array<{ wake_id: string; granted: string; model_calls: number }> {
  return eventsOf(record.events, 'ExperimentEvent.BudgetLedgerRecorded').map(({ p }) => ({ wake_id: p.wake_id, granted: canonicalJson(p.granted), model_calls: p.used.model_calls }));
}

function deliveries(record: RunRecord): string[] {
  return eventsOf(record.events, 'ExperimentEvent.InterventionDelivered').map(({ p }) => `${p.intervention_id}@${p.wake_id}×${p.event_ids.length}`);
}

/** Each wake's outcome, by its last WakeEnded (a stopped wake is ended 'stopped' and never run again). */
function wakeOutcomes(record: RunRecord): Map<string, string> {
  return new Map(eventsOf(record.events, 'ExperimentEvent.WakeEnded').map(({ p }) => [p.wake_id, p.outcome]));
}

/**
 * The wakes whose outcome differs between the groups of a replicate, named. A stop that cuts a
 * wake (a Ctrl-C, a time limit's grace run out) ends it 'stopped', and a resume goes on with the
 * next one: that instance's subject never had the rest of that wake, whichever group it is in.
 */
function wakeOutcomeDifferences(instances: readonly FairnessInstance[]): string[] {
  const out: string[] = [];
  const replicates = [...new Set(instances.map((i) => i.replicate))].sort((a, b) => a - b);
  for (const replicate of replicates) {
    const [first, ...rest] = instances.filter((i) => i.replicate === replicate);
    if (!first) continue;
    const reference = wakeOutcomes(first.record);
    for (const other of rest) {
      const outcomes = wakeOutcomes(other.record);
      const wakes = [...new Set([...reference.keys(), ...outcomes.keys()])].sort();
      const differing = wakes.filter((w) => reference.get(w) !== outcomes.get(w));
      const shown = differing.slice(0, MAX_NAMED_DIFFERENCES).map((w) => `${w} ended ${outcomes.get(w) ?? 'never'} in ${other.group}, ${reference.get(w) ?? 'never'} in ${first.group}`);
      if (differing.length > 0) out.push(`replicate ${replicate}: ${shown.join(', ')}${differing.length > shown.length ? `, and ${differing.length - shown.length} more wake(s)` : ''}${differing.some((w) => outcomes.get(w) === 'stopped' || reference.get(w) === 'stopped') ? ' (a wake cut by a stop is not run again)' : ''}`);
    }
  }
  return out;
}

function compareWithin(instances: readonly FairnessInstance[], what: (r: RunRecord) => unknown, label: string): string[] {
  const out: string[] = [];
  const byReplicate = new Map<number, FairnessInstance[]>();
  for (const i of instances) byReplicate.set(i.replicate, [...(byReplicate.get(i.replicate) ?? []), i]);
  for (const [replicate, group] of [...byReplicate].sort((a, b) => a[0] - b[0])) {
    const [first, ...rest] = group;
    if (!first) continue;
    const reference = canonicalJson(what(first.record));
    for (const other of rest) if (canonicalJson(what(other.record)) !== reference) out.push(`replicate ${replicate}: ${label} of ${other.group} differs from ${first.group}`);
  }
  return out;
}

export function checkFairness(instances: readonly FairnessInstance[]): { checks: FairnessCheck[]; voidReasons: string[] } {
  const checks: FairnessCheck[] = [];
  const add = (check: string, differences: readonly string[], okDetail: string): void => {
    checks.push({ check, ok: differences.length === 0, detail: differences.length === 0 ? okDetail : named(differences) });
  };

  add('same_plan_per_replicate', compareWithin(instances, (r) => [r.plan.seed, r.plan.schedule_hash, r.plan.intervention_plan_hash, r.plan.scenario_hash, r.preregSha256], 'seed, schedule, intervention plan, scenario or pre-registration'), 'every replicate: one seed, schedule, intervention plan, scenario and pre-registration for A, B and C');

  const manifestDiffs: string[] = [];
  for (const i of instances) if (i.record.manifest === null) manifestDiffs.push(`${i.group} replicate ${i.replicate}: no verified manifest (${i.record.manifestProblem ?? 'unknown'})`);
  const withManifest = instances.filter((i) => i.record.manifest !== null);
  for (const i of withManifest) {
    const peer = withManifest.find((o) => o.replicate === i.replicate && o !== i && o.group < i.group);
    if (!peer) continue;
    const diff = nonGroupDifferences(peer.record.manifest!, i.record.manifest!);
    if (diff.length > 0) manifestDiffs.push(`replicate ${i.replicate}: manifests of ${peer.group} and ${i.group} differ outside the group fields at ${diff.join(', ')}`);
  }
  add('manifests_differ_only_by_group', manifestDiffs, 'every replicate: the signed manifests differ only in the group fields and the start time');

  add('same_wakes_budgets_calls', compareWithin(instances, ledgerRows, 'the budget ledger (wakes, granted budget or model calls per wake)'), 'every replicate: the same wakes in the same order, the same granted budget and model calls per wake');
  add('same_wake_outcomes', wakeOutcomeDifferences(instances), 'every replicate: every wake ended the same way (completed, crashed as planned) for A, B and C; no wake cut by a stop in one group only');
  add('same_deliveries', compareWithin(instances, deliveries, 'the intervention deliveries (id, wake, event count)'), 'every replicate: the same interventions delivered at the same wakes with the same number of events');

  const models = new Set(withManifest.map((i) => canonicalJson(i.record.manifest!.model)));
  const fingerprints = new Set<string>();
  const params = new Set<string>();
  for (const i of instances) {
    // Failed calls too: a call that failed still ran on some build with some parameters.
    const answered = eventsOf(i.record.events, 'ModelOutputEvent.ModelAnswered');
    const failed = eventsOf(i.record.events, 'ModelOutputEvent.ModelCallFailed');
    // An answer came from some build: one that names none next to answers that do is a difference
    // too ("none" counts as one build). A failed call often reached no build at all (a refused
    // connection, a timeout before any header, a prompt never sent): its null says nothing, while
    // a fingerprint it does carry counts like an answer's.
    for (const { p } of answered) fingerprints.add(p.system_fingerprint ?? '(none reported)');
    for (const { p } of failed) if (p.system_fingerprint !== null) fingerprints.add(p.system_fingerprint);
    for (const { p } of [...answered, ...failed]) params.add(canonicalJson({ adapter: p.adapter, model_id: p.model_id, params: p.params }));
  }
  const modelDiffs: string[] = [];
  if (models.size > 1) modelDiffs.push(`${models.size} different model settings in the manifests: ${[...models].join(' | ')}`);
  if (fingerprints.size > 1) modelDiffs.push(`the model server reported ${fingerprints.size} builds (system_fingerprint): ${[...fingerprints].join(', ')}`);
  if (params.size > 1) modelDiffs.push(`model calls ran with ${params.size} different model ids or parameters: ${[...params].join(' | ')}`);
  add('one_model_build_and_parameters', modelDiffs, `one model setting for the batch${fingerprints.size === 1 ? ` (build: ${[...fingerprints][0]})` : ''}`);

  // Descriptive only: differences by behaviour, stated so nobody mistakes them for contamination.
  const usage = new Map<Group, { tokens: number; tool_calls: number; retries: number }>();
  for (const i of instances) {
    const u = usage.get(i.group) ?? { tokens: 0, tool_calls: 0, retries: 0 };
    for (const { p } of eventsOf(i.record.events, 'ExperimentEvent.BudgetLedgerRecorded')) {
      u.tokens += p.used.tokens;
      u.tool_calls += p.used.tool_calls;
      u.retries += p.used.retries;
    }
    usage.set(i.group, u);
  }
  checks.push({
    check: 'transport_retries (not voiding)',
    ok: true,
    detail: `transport attempts beyond the first, under the one pre-registered retry policy: ${[...usage].sort().map(([g, u]) => `${g} ${u.retries}`).join('; ')}`,
  });
  checks.push({
    check: 'usage_by_behaviour (not voiding)',
    ok: true,
    detail: `tokens and tool calls used differ with what each subject did, within the same granted budget: ${[...usage].sort().map(([g, u]) => `${g} ${u.tokens} tokens, ${u.tool_calls} tool calls`).join('; ')}`,
  });
  return { checks, voidReasons: checks.filter((c) => !c.ok).map((c) => `${c.check}: ${c.detail}`) };
}
