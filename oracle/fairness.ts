// The batch's fairness check (spec §5.2, §19.1; DESIGN §8): the groups of a replicate must have
// had the same plan, schedule, wake outcomes, deliveries, granted budgets, model calls and retries, and the
// whole batch one model build with one set of parameters. Any group-dependent difference voids
// the batch. What legitimately differs by behaviour (tokens and tool calls used) is reported,
// not voided: a subject that reads less uses fewer tokens, and that is the treatment's effect.
// The check reads each instance through its FairnessFacts (fairnessFactsOf): the few figures of
// its record it compares, so a merge of thousands of instances holds those, never their events.
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import { sha256Hex } from '../schema/hash.js';
import { InstanceManifest, nonGroupDifferences } from '../design/manifest.js';
import { eventsOf, type RunRecord } from './run-record.js';
import type { Group } from '../design/groups.js';
import type { FairnessCheck } from './study-report.js';

export interface FairnessInstance {
  readonly group: Group;
  readonly replicate: number;
  readonly record: RunRecord;
}

/** At most this many distinct builds or parameter sets are kept per instance (one is the rule; more are named as differences). */
const MAX_DISTINCT_PER_INSTANCE = 64;

/**
 * What the fairness check compares of one instance, reduced from its record once. Lists that are
 * only compared for equality are kept as the sha256 of their canonical JSON; what a difference
 * names (the wake outcomes, the manifest, the builds and parameters) is kept as it is.
 */
export const FairnessFacts = z.strictObject({
  /** [seed, schedule, intervention plan, scenario, pre-registration]: canonical JSON. */
  plan: z.string(),
  manifest: InstanceManifest.nullable(),
  manifest_problem: z.string().nullable(),
  /** sha256 of the canonical budget ledger rows (ledgerRows). */
  ledger_sha256: z.string(),
  /** sha256 of the canonical intervention deliveries (deliveries). */
  deliveries_sha256: z.string(),
  /** [wake_id, outcome] by each wake's last WakeEnded, in the order the wakes first ended. */
  wake_outcomes: z.array(z.tuple([z.string(), z.string()])).max(100_000),
  /** The builds the model server reported, in first-seen order (answers first, then failed calls). */
  fingerprints: z.array(z.string()).max(MAX_DISTINCT_PER_INSTANCE),
  /** Canonical {adapter, model_id, params} of every call, distinct, in first-seen order. */
  params: z.array(z.string()).max(MAX_DISTINCT_PER_INSTANCE),
  usage: z.strictObject({ tokens: z.number(), tool_calls: z.number(), retries: z.number() }),
});
export type FairnessFacts = z.infer<typeof FairnessFacts>;

export interface FairnessFactsInstance {
  readonly group: Group;
  readonly replicate: number;
  readonly facts: FairnessFacts;
}

/** Distinct values in first-seen order, at most MAX_DISTINCT_PER_INSTANCE (one more says how many were left out). */
function distinct(values: Iterable<string>): string[] {
  const seen = new Set<string>();
  for (const v of values) seen.add(v);
  const all = [...seen];
  return all.length <= MAX_DISTINCT_PER_INSTANCE ? all : [...all.slice(0, MAX_DISTINCT_PER_INSTANCE - 1), `(and ${all.length - MAX_DISTINCT_PER_INSTANCE + 1} more)`];
}

/** The instance's FairnessFacts: everything checkFairnessOf reads of it. */
export function fairnessFactsOf(record: RunRecord): FairnessFacts {
  // Failed calls too: a call that failed still ran on some build with some parameters.
  const answered = eventsOf(record.events, 'ModelOutputEvent.ModelAnswered');
  const failed = eventsOf(record.events, 'ModelOutputEvent.ModelCallFailed');
  // An answer came from some build: one that names none next to answers that do is a difference
  // too ("none" counts as one build). A failed call often reached no build at all (a refused
  // connection, a timeout before any header, a prompt never sent): its null says nothing, while
  // a fingerprint it does carry counts like an answer's.
  const fingerprints = [...answered.map(({ p }) => p.system_fingerprint ?? '(none reported)'), ...failed.flatMap(({ p }) => (p.system_fingerprint === null ? [] : [p.system_fingerprint]))];
  const params = [...answered, ...failed].map(({ p }) => canonicalJson({ adapter: p.adapter, model_id: p.model_id, params: p.params }));
  const usage = { tokens: 0, tool_calls: 0, retries: 0 };
  for (const { p } of eventsOf(record.events, 'ExperimentEvent.BudgetLedgerRecorded')) {
    usage.tokens += p.used.tokens;
    usage.tool_calls += p.used.tool_calls;
    usage.retries += p.used.retries;
  }
  return {
    plan: canonicalJson([record.plan.seed, record.plan.schedule_hash, record.plan.intervention_plan_hash, record.plan.scenario_hash, record.preregSha256]),
    manifest: record.manifest,
    manifest_problem: record.manifestProblem,
    ledger_sha256: sha256Hex(canonicalJson(ledgerRows(record))),
    deliveries_sha256: sha256Hex(canonicalJson(deliveries(record))),
    wake_outcomes: [...wakeOutcomes(record)],
    fingerprints: distinct(fingerprints),
    params: distinct(params),
    usage,
  };
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
function wakeOutcomeDifferences(instances: readonly FairnessFactsInstance[]): string[] {
  const out: string[] = [];
  const replicates = [...new Set(instances.map((i) => i.replicate))].sort((a, b) => a - b);
  for (const replicate of replicates) {
    const [first, ...rest] = instances.filter((i) => i.replicate === replicate);
    if (!first) continue;
    const reference = new Map(first.facts.wake_outcomes);
    for (const other of rest) {
      const outcomes = new Map(other.facts.wake_outcomes);
      const wakes = [...new Set([...reference.keys(), ...outcomes.keys()])].sort();
      const differing = wakes.filter((w) => reference.get(w) !== outcomes.get(w));
      const shown = differing.slice(0, MAX_NAMED_DIFFERENCES).map((w) => `${w} ended ${outcomes.get(w) ?? 'never'} in ${other.group}, ${reference.get(w) ?? 'never'} in ${first.group}`);
      if (differing.length > 0) out.push(`replicate ${replicate}: ${shown.join(', ')}${differing.length > shown.length ? `, and ${differing.length - shown.length} more wake(s)` : ''}${differing.some((w) => outcomes.get(w) === 'stopped' || reference.get(w) === 'stopped') ? ' (a wake cut by a stop is not run again)' : ''}`);
    }
  }
  return out;
}

function compareWithin(instances: readonly FairnessFactsInstance[], what: (f: FairnessFacts) => string, label: string): string[] {
  const out: string[] = [];
  const byReplicate = new Map<number, FairnessFactsInstance[]>();
  for (const i of instances) byReplicate.set(i.replicate, [...(byReplicate.get(i.replicate) ?? []), i]);
  for (const [replicate, group] of [...byReplicate].sort((a, b) => a[0] - b[0])) {
    const [first, ...rest] = group;
    if (!first) continue;
    const reference = what(first.facts);
    for (const other of rest) if (what(other.facts) !== reference) out.push(`replicate ${replicate}: ${label} of ${other.group} differs from ${first.group}`);
  }
  return out;
}

/** The fairness check of records at hand (a live study, a test): checkFairnessOf their facts. */
export function checkFairness(instances: readonly FairnessInstance[]): { checks: FairnessCheck[]; voidReasons: string[] } {
  return checkFairnessOf(instances.map((i) => ({ group: i.group, replicate: i.replicate, facts: fairnessFactsOf(i.record) })));
}

export function checkFairnessOf(instances: readonly FairnessFactsInstance[]): { checks: FairnessCheck[]; voidReasons: string[] } {
  const checks: FairnessCheck[] = [];
  const add = (check: string, differences: readonly string[], okDetail: string): void => {
    checks.push({ check, ok: differences.length === 0, detail: differences.length === 0 ? okDetail : named(differences) });
  };

  add('same_plan_per_replicate', compareWithin(instances, (f) => f.plan, 'seed, schedule, intervention plan, scenario or pre-registration'), 'every replicate: one seed, schedule, intervention plan, scenario and pre-registration for A, B and C');

  const manifestDiffs: string[] = [];
  for (const i of instances) if (i.facts.manifest === null) manifestDiffs.push(`${i.group} replicate ${i.replicate}: no verified manifest (${i.facts.manifest_problem ?? 'unknown'})`);
  const withManifest = instances.filter((i) => i.facts.manifest !== null);
  for (const i of withManifest) {
    const peer = withManifest.find((o) => o.replicate === i.replicate && o !== i && o.group < i.group);
    if (!peer) continue;
    const diff = nonGroupDifferences(peer.facts.manifest!, i.facts.manifest!);
    if (diff.length > 0) manifestDiffs.push(`replicate ${i.replicate}: manifests of ${peer.group} and ${i.group} differ outside the group fields at ${diff.join(', ')}`);
  }
  add('manifests_differ_only_by_group', manifestDiffs, 'every replicate: the signed manifests differ only in the group fields and the start time');

  add('same_wakes_budgets_calls', compareWithin(instances, (f) => f.ledger_sha256, 'the budget ledger (wakes, granted budget or model calls per wake)'), 'every replicate: the same wakes in the same order, the same granted budget and model calls per wake');
  add('same_wake_outcomes', wakeOutcomeDifferences(instances), 'every replicate: every wake ended the same way (completed, crashed as planned) for A, B and C; no wake cut by a stop in one group only');
  add('same_deliveries', compareWithin(instances, (f) => f.deliveries_sha256, 'the intervention deliveries (id, wake, event count)'), 'every replicate: the same interventions delivered at the same wakes with the same number of events');

  const models = new Set(withManifest.map((i) => canonicalJson(i.facts.manifest!.model)));
  const fingerprints = new Set<string>();
  const params = new Set<string>();
  for (const i of instances) {
    for (const f of i.facts.fingerprints) fingerprints.add(f);
    for (const p of i.facts.params) params.add(p);
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
    u.tokens += i.facts.usage.tokens;
    u.tool_calls += i.facts.usage.tool_calls;
    u.retries += i.facts.usage.retries;
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
