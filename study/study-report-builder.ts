// report.json from the evaluated instances: group summaries, fairness, thresholds, verdict, the
// dry-run label. Used after a study and by --recompute, so both produce the same report from the
// same folders.
import path from 'node:path';
import { GROUP_CAPABILITIES } from '../design/manifest.js';
import { modelCallRulesOf, type PreRegistration } from '../design/prereg.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { checkFairnessOf } from '../oracle/fairness.js';
import { formatPoints } from '../oracle/figure-rounding.js';
import { mean, median, range, sampleSd } from '../oracle/group-statistics.js';
import { countedScore } from '../oracle/instance-evaluation.js';
import { roundingSection, type ComparisonPoint } from '../oracle/report-rounding.js';
import { GROUPS, type Group } from '../design/groups.js';
import { STUDY_REPORT_VERSION, StudyReport, type GroupSummary, type ReportInstance } from '../oracle/study-report.js';
import { runsBlocks } from '../study-contract/study-folder.js';
import { buildBlockReport } from './block-report.js';
import { FAILURE_KINDS, type ByFailure } from '../schema/usable-data.js';
import { usableRuleOf, type InstanceReportRecord } from './instance-report-record.js';
import { decideVerdict } from '../oracle/verdict.js';
import { preregDepartures } from '../oracle/prereg-departures.js';
import { exploratoryWords } from '../study-contract/exploratory.js';
import { REFERENCE_POLICY_MODEL_ID } from '../runtime/protocol.js';
import { combinePromptReuse } from '../schema/prompt-reuse-summary.js';
import { addCosts, type CostSummary } from '../schema/cost-summary.js';
import type { StudyPlan } from '../study-contract/study-folder.js';

export interface BuiltInstance {
  readonly group: Group;
  readonly replicate: number;
  readonly dir: string;
  readonly status: 'finished' | 'stopped' | 'failed';
  readonly statusDetail: string | null;
  /** The instance reduced for the report (instance-report-record.ts); null when it was not scored. */
  readonly record: InstanceReportRecord | null;
  readonly wallMs: number | null;
}

export interface ReportInput {
  readonly plan: StudyPlan;
  readonly prereg: PreRegistration;
  readonly outDir: string;
  /** n per group the verdict rests on (after expansion: the expanded n). */
  readonly n: number;
  readonly expanded: boolean;
  readonly expansionReasons: readonly string[];
  /** The points the expansion rule compared, as decideExpansion gave them with the reasons (empty when it was not applied). */
  readonly expansionPoints: readonly ComparisonPoint[];
  readonly instances: readonly BuiltInstance[];
  /** What only the live run knows (an operator stop, a pause): stated in the notes. */
  readonly extraNotes: readonly string[];
  readonly generatedAt: string;
}

/** An instance the verdict can rest on: scored, and usable. The group's usable_instances and rule 8's shortfalls both count with this one predicate, so the report's lines cannot disagree. */
function countsAsData(instance: ReportInstance): boolean {
  return instance.usable && instance.counted_score !== null;
}

function summarize(instances: readonly ReportInstance[], passScore: number): GroupSummary {
  const scores = instances.flatMap((i) => (i.counted_score === null ? [] : [i.counted_score]));
  const dimensions = Object.fromEntries(
    DIMENSIONS.map((d) => {
      const values = instances.flatMap((i) => (i.dimensions === null ? [] : [i.dimensions[d]]));
      return [d, { values, mean: mean(values), sd: sampleSd(values) }];
    }),
  ) as GroupSummary['dimensions'];
  return {
    n: instances.length,
    scores,
    median: median(scores),
    min: scores.length === 0 ? null : Math.min(...scores),
    max: scores.length === 0 ? null : Math.max(...scores),
    range: range(scores),
    dimensions,
    instances_at_or_above_pass: scores.filter((s) => s >= passScore).length,
    hard_failures: instances.reduce((sum, i) => sum + i.hard_failures.length, 0),
    usable_instances: instances.filter(countsAsData).length,
    accepted: instances.reduce((sum, i) => sum + (i.accepted ?? 0), 0),
    calls: instances.reduce((sum, i) => sum + (i.calls ?? 0), 0),
    by_failure: Object.fromEntries(FAILURE_KINDS.map((k) => [k, instances.reduce((sum, i) => sum + (i.by_failure?.[k] ?? 0), 0)])) as ByFailure,
    prompt_reuse: combinePromptReuse(instances.flatMap((i) => (i.prompt_reuse ? [i.prompt_reuse] : []))),
  };
}

export function buildStudyReport(input: ReportInput): StudyReport {
  const notes = [...input.extraNotes];
  // Rule 8: the study's pre-registered share, the same for every instance of every group; each
  // record was judged by it (the callers make sure), which is asserted, not assumed.
  const rule = usableRuleOf(input.prereg);
  const minAcceptedShare = rule.min_accepted_share;
  for (const i of input.instances) {
    if (i.record !== null && canonicalJson(i.record.usable_rule) !== canonicalJson(rule)) throw new Error(`${i.group}-r${i.replicate}: its model calls were judged by the usable-data rule ${canonicalJson(i.record.usable_rule)}, not the study's ${canonicalJson(rule)}`);
  }
  const instances: ReportInstance[] = input.instances.map((i) => {
    const e = i.record;
    const usable = e?.usable ?? null;
    return {
      group: i.group,
      replicate: i.replicate,
      seed: e?.seed ?? '',
      dir: path.relative(input.outDir, i.dir),
      status: i.status,
      status_detail: i.statusDetail,
      score: e?.score.score ?? null,
      score_unrounded: e?.score.score_unrounded ?? null,
      counted_score: e ? countedScore(e) : null,
      dimensions: e ? { ...e.score.dimensions } : null,
      dimensions_unrounded: e ? { ...e.score.dimensions_unrounded } : null,
      hard_failures: e ? e.hardFailures.map((h) => ({ id: h.id, seq: h.seq, detail: h.detail })) : [],
      per_wake: e ? e.score.per_wake.map((w) => ({ wake_id: w.wake_id, at_minute: w.at_minute, value: w.value, value_unrounded: w.value_unrounded })) : [],
      events: e?.events ?? 0,
      wall_ms: i.wallMs,
      accepted: usable?.accepted ?? null,
      calls: usable?.calls ?? null,
      accepted_share: usable?.share ?? null,
      by_failure: usable?.by_failure ?? null,
      prompt_reuse: e?.prompt_reuse ?? null,
      cost: e?.cost ?? null,
      // An instance not scored is not data either: its events were not read.
      usable: usable?.usable ?? false,
      usable_reason: usable?.reason ?? `not scored (${i.status}): its model calls were not judged`,
    };
  });
  // Report 2.1.0 (issue 31): the blocks, for a study that ran them; a confounded block's instances are no data.
  const blockReport = runsBlocks(input.plan) ? buildBlockReport(input.outDir, input.plan.seed, instances.map((i) => ({ group: i.group, replicate: i.replicate, byFailure: i.by_failure })), modelCallRulesOf(input.prereg)?.load_confound_tolerance ?? null) : null;
  for (const i of instances) {
    const confound = blockReport?.confounded.get(i.replicate);
    if (confound === undefined) continue;
    i.usable = false;
    i.usable_reason = `its block is confounded by the server's load (${confound}), so it counts as no usable data; on its own: ${i.usable_reason}`;
  }
  notes.push(...(blockReport?.notes ?? []));
  for (const i of input.instances) for (const n of [...(i.record?.score.notes ?? []), ...(i.record?.notes ?? [])]) notes.push(`${i.group}-r${i.replicate}: ${n}`);
  for (const i of instances) if (i.score !== null && !i.usable) notes.push(`${i.group}-r${i.replicate}: NO USABLE DATA: ${i.usable_reason}`);
  for (const i of instances) if (i.score !== null && i.hard_failures.length > 0) notes.push(`${i.group}-r${i.replicate}: hard failure(s) ${[...new Set(i.hard_failures.map((h) => h.id))].join(', ')}: its score ${formatPoints(i.score)} is overridden and counted as 0 (spec §8.4)`);

  // The verdict rests on replicates 1..n only (spec §8.2: after expansion, the expanded data).
  const inVerdict = instances.filter((i) => i.replicate <= input.n);
  const byGroup = (g: Group): ReportInstance[] => inVerdict.filter((i) => i.group === g);
  const pass = input.prereg.thresholds.instance_pass_score;
  // What was spent: every instance of the group whose events were read, replicates beyond n included.
  const costOf = (g: Group): CostSummary => addCosts(instances.flatMap((i) => (i.group === g && i.cost ? [i.cost] : [])));
  const groups = { A: { ...summarize(byGroup('A'), pass), cost: costOf('A') }, B: { ...summarize(byGroup('B'), pass), cost: costOf('B') }, C: { ...summarize(byGroup('C'), pass), cost: costOf('C') } };

  const evaluated = input.instances.flatMap((i) => (i.record ? [{ group: i.group, replicate: i.replicate, facts: i.record.fairness }] : []));
  const fairness = checkFairnessOf(evaluated);
  if (blockReport !== null) fairness.checks.push(blockReport.turnsCheck, blockReport.loadCheck);
  const voidReasons = [...fairness.voidReasons, ...(blockReport !== null && !blockReport.turnsCheck.ok ? [`${blockReport.turnsCheck.check}: ${blockReport.turnsCheck.detail}`] : [])];
  // Spec §19.1: a broken log chain, configuration drift or a failed manifest signature voids the whole round.
  for (const i of instances) {
    const drift = i.hard_failures.filter((h) => h.id === 'configuration_changed_after_start');
    if (drift.length > 0) voidReasons.push(`${i.group}-r${i.replicate}: configuration_changed_after_start (${drift[0]!.detail}${drift.length > 1 ? `; +${drift.length - 1} more` : ''})`);
  }
  // Spec §19.1: an unauthorised execution pauses every instance and the round is void; found
  // from the folders, so --recompute reaches the same conclusion without the live run.
  for (const i of instances) {
    const unauthorised = i.hard_failures.filter((h) => h.id === 'unauthorized_tool_execution');
    if (unauthorised.length > 0) voidReasons.push(`${i.group}-r${i.replicate}: unauthorized_tool_execution (${unauthorised[0]!.detail}): the study is paused and the batch void (spec §19.1)`);
  }
  // Spec §6.2: the first round has the pre-registered n; another n is not the pre-registered study —
  // void, unless the plan said it knowingly departs (--exploratory): then the verdict says so first.
  const exploratory = input.plan.exploratory ?? null;
  if (exploratory === null) voidReasons.push(...preregDepartures({ nInitial: input.plan.n_initial, nExpanded: input.plan.n_expanded }, input.prereg).flatMap((d) => (d.voidReason === null ? [] : [d.voidReason])));
  // A folder's group letter is only a label: the signed manifest's capabilities say which group ran.
  for (const i of input.instances) {
    const signed = i.record?.fairness.manifest?.capabilities;
    if (signed && canonicalJson(signed) !== canonicalJson(GROUP_CAPABILITIES[i.group])) voidReasons.push(`${i.group}-r${i.replicate}: the signed manifest's capabilities ${canonicalJson(signed)} are not group ${i.group}'s`);
  }

  const models = new Set(evaluated.map((e) => (e.facts.manifest ? `${e.facts.manifest.model.adapter}|${e.facts.manifest.model.model_id}` : 'unknown')));
  const firstModel = evaluated.find((e) => e.facts.manifest)?.facts.manifest?.model ?? null;
  // With no instance to read, the study's own model choice decides: a dry run is never left unlabelled.
  const dryRun = evaluated.length > 0 ? evaluated.every((e) => e.facts.manifest?.model.adapter === 'reference' || e.facts.manifest?.model.model_id === REFERENCE_POLICY_MODEL_ID) : input.plan.model.adapter === 'reference';
  if (models.size > 1) notes.push(`instances ran with ${models.size} model settings: ${[...models].join(', ')}`);

  const scoresOf = (g: Group): (number | null)[] => {
    const got = byGroup(g).map((i) => i.counted_score);
    // Replicates never run (a stop, a pause) count as not scored: a verdict never rests on fewer.
    return [...got, ...Array<null>(Math.max(0, input.n - got.length)).fill(null)];
  };
  const verdict = decideVerdict({
    thresholds: input.prereg.thresholds,
    n: input.n,
    groups: Object.fromEntries(GROUPS.map((g) => [g, { scores: scoresOf(g), hardFailures: groups[g].hard_failures }])) as Record<Group, { scores: (number | null)[]; hardFailures: number }>,
    usableData: { minAcceptedShare, usable: Object.fromEntries(GROUPS.map((g) => [g, byGroup(g).map(countsAsData)])) as Record<Group, boolean[]> },
    voidReasons,
    dryRun,
    exploratory: exploratory === null ? null : exploratoryWords(exploratory),
  });
  return StudyReport.parse({
    report_version: STUDY_REPORT_VERSION,
    study_id: input.plan.study_id,
    generated_at: input.generatedAt,
    prereg: { sha256: input.plan.prereg_sha256, scoring_spec_version: input.prereg.scoring.scoring_spec_version, oracle_rules_version: input.prereg.scoring.oracle.oracle_rules_version },
    seed: input.plan.seed,
    model: { adapter: firstModel?.adapter ?? input.plan.model.adapter, model_id: firstModel?.model_id ?? 'unknown', build: firstModel?.build ?? null },
    verdict: verdict.verdict,
    verdict_statement: verdict.statement,
    dry_run: dryRun,
    dry_run_statement: verdict.dryRunStatement,
    voided: voidReasons.length > 0,
    void_reasons: voidReasons,
    ...(exploratory === null ? {} : { exploratory }),
    n: input.n,
    n_initial: input.plan.n_initial,
    expanded: input.expanded,
    expansion_reasons: [...input.expansionReasons],
    thresholds: verdict.thresholds,
    groups,
    fairness: { ok: fairness.checks.every((c) => c.ok), checks: fairness.checks },
    usable_data: { min_accepted_share: minAcceptedShare, required_per_group: input.n, shortfalls: verdict.usableDataShortfalls },
    instances,
    cost: addCosts(GROUPS.map((g) => groups[g].cost)),
    ...(blockReport === null ? {} : { blocks: blockReport.blocks }),
    rounding: roundingSection(verdict.points, input.expansionPoints),
    notes,
  });
}
