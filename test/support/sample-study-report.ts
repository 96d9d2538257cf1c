// Hand-built StudyReports for the report renderers' tests, validated with StudyReport.parse so a
// schema change breaks the fixture, not silently the renderers. The instance numbers are written
// by hand; the group summaries and threshold checks are derived from them here (with the default
// pre-registration's weights and thresholds) so every table and chart of a rendered report agrees
// with its instances. Wake minutes come from a real plan of the default pre-registration.
import { addCosts } from '../../schema/cost-summary.js';
import { DIMENSIONS, type Dimension } from '../../oracle/continuity-score.js';
import { roundByRule, roundPoints, WHOLE_MS_ROUNDING } from '../../oracle/figure-rounding.js';
import { mean, median, range, sampleSd } from '../../oracle/group-statistics.js';
import { roundingSection, type ComparisonPoint } from '../../oracle/report-rounding.js';
import { GROUPS, type Group } from '../../design/groups.js';
import { STUDY_REPORT_VERSION, StudyReport, type BlockSummary, type GroupSummary, type ReportInstance, type ThresholdCheck, type Verdict } from '../../oracle/study-report.js';
import { describeFailures, FAILURE_KINDS, formatShare, type ByFailure } from '../../schema/usable-data.js';

/** experiments/prereg/default.json: dimension weights (sum 100) and thresholds. */
const WEIGHTS: Readonly<Record<Dimension, number>> = { state_recovery: 40, re_planning: 15, experience_influence: 15, evidence_integrity: 20, recovery: 10 };
const INSTANCE_PASS_SCORE = 80;
const C_MEDIAN_MIN_SCORE = 80;
const C_MINUS_B_MIN_POINTS = 10;
const C_MINUS_A_MIN_POINTS = 20;
const MAX_GROUP_RANGE_POINTS = 15;
const MAX_DIMENSION_SD_POINTS = 10;
const C_PASSING_AT_LEAST: Readonly<Record<number, number>> = { 3: 2, 5: 4 };

/** The wake minutes of a real schedule (long absence 1868–2588); two are planned crash wakes, not scored. */
const WAKE_MINUTES = [0, 118, 234, 355, 480, 615, 732, 848, 947, 1085, 1201, 1325, 1437, 1561, 1681, 1796, 2627, 2771, 2882, 2987, 3128, 3245, 3370, 3491, 3606, 3706, 3853, 3968, 4093, 4194, 4320];
const PLANNED_CRASH_WAKES = new Set(['wake-0012', 'wake-0023']);
const LONG_ABSENCE_END_MINUTE = 2588;
/** Per-wake wobble around an instance's level; multiples of 5 like the checkpoint field weights. */
const WAKE_OFFSETS_POINTS = [0, -15, 10, 5, -20, 15, 0, -5, 10, -10, 5, 0, -25, 10, 5, -5, 15];

interface HandInstance {
  readonly group: Group;
  readonly replicate: number;
  /** Typical checkpoint accuracy before the long absence, and how much it drops after it. */
  readonly level: number;
  readonly absenceDrop: number;
  readonly re_planning: number;
  readonly experience_influence: number;
  readonly evidence_integrity: number;
  readonly recovery: number;
  readonly events: number;
  readonly wallMs: number;
  readonly dir: string;
  readonly status?: ReportInstance['status'];
  readonly statusDetail?: string;
  readonly hardFailures?: ReportInstance['hard_failures'];
  /** Model calls: accepted of made, and the failures by kind; default every one of MODEL_CALLS accepted. */
  readonly modelCalls?: { readonly accepted: number; readonly byFailure: Partial<ByFailure> };
}

/** One model call per wake of WAKE_MINUTES. */
const MODEL_CALLS = 31;
/** The default pre-registration's model_calls.usable_data.min_accepted_share. */
const MIN_ACCEPTED_SHARE = 0.8;

function perWake(hand: HandInstance): ReportInstance['per_wake'] {
  const out: ReportInstance['per_wake'] = [];
  WAKE_MINUTES.forEach((minute, index) => {
    const wakeId = `wake-${String(index + 1).padStart(4, '0')}`;
    if (PLANNED_CRASH_WAKES.has(wakeId)) return;
    const drop = minute >= LONG_ABSENCE_END_MINUTE ? hand.absenceDrop : 0;
    const raw = hand.level - drop + WAKE_OFFSETS_POINTS[(index + hand.replicate * 4) % WAKE_OFFSETS_POINTS.length]!;
    const value = Math.min(100, Math.max(0, Math.round(raw / 5) * 5));
    out.push({ wake_id: wakeId, at_minute: minute, value, value_unrounded: value });
  });
  return out;
}

function instanceOf(hand: HandInstance, studySeed: string): ReportInstance {
  const status = hand.status ?? 'finished';
  const base = { group: hand.group, replicate: hand.replicate, seed: `${studySeed}/${hand.group}/${hand.replicate}`, dir: hand.dir, status, status_detail: hand.statusDetail ?? null, hard_failures: hand.hardFailures ?? [], events: hand.events };
  if (status !== 'finished') return { ...base, score: null, score_unrounded: null, counted_score: null, dimensions: null, dimensions_unrounded: null, per_wake: [], wall_ms: null, accepted: null, calls: null, accepted_share: null, by_failure: null, cost: null, usable: false, usable_reason: `not scored (${status}): its model calls were not judged` };
  const wakes = perWake(hand);
  // As oracle/continuity-score.ts: each dimension rounded, the score from the rounded dimensions (hand values are already 6-decimal).
  const dimensionsUnrounded = {
    state_recovery: wakes.reduce((s, w) => s + w.value, 0) / wakes.length,
    re_planning: hand.re_planning,
    experience_influence: hand.experience_influence,
    evidence_integrity: hand.evidence_integrity,
    recovery: hand.recovery,
  };
  const dimensions = Object.fromEntries(DIMENSIONS.map((d) => [d, roundPoints(dimensionsUnrounded[d])])) as Record<Dimension, number>;
  const scoreUnrounded = DIMENSIONS.reduce((s, d) => s + (WEIGHTS[d] * dimensions[d]) / 100, 0);
  const score = roundPoints(scoreUnrounded);
  const byFailure = Object.fromEntries(FAILURE_KINDS.map((k) => [k, hand.modelCalls?.byFailure[k] ?? 0])) as ByFailure;
  const accepted = hand.modelCalls?.accepted ?? MODEL_CALLS;
  const calls = accepted + FAILURE_KINDS.reduce((sum, k) => sum + byFailure[k], 0);
  const share = accepted / calls;
  const usable = share >= MIN_ACCEPTED_SHARE;
  // oracle/usable-data.ts's wording.
  const usableReason = `${accepted} of ${calls} model calls gave accepted answers (${formatShare(share)}), ${usable ? 'at least' : 'below'} the pre-registered ${formatShare(MIN_ACCEPTED_SHARE)}; failed: ${describeFailures(byFailure)}`;
  // A hard failure overrides the score (spec §8.4): the statistics count 0.
  return { ...base, score, score_unrounded: scoreUnrounded, counted_score: base.hard_failures.length > 0 ? 0 : score, dimensions, dimensions_unrounded: dimensionsUnrounded, per_wake: wakes, wall_ms: hand.wallMs, accepted, calls, accepted_share: share, by_failure: byFailure, cost: { calls, priced_calls: calls, nano_usd: calls * SAMPLE_CALL_NANO_USD }, usable, usable_reason: usableReason };
}

function summaryOf(instances: readonly ReportInstance[], group: Group): GroupSummary {
  const mine = instances.filter((i) => i.group === group);
  const scored = mine.filter((i) => i.counted_score !== null && i.dimensions !== null);
  const scores = scored.map((i) => i.counted_score!);
  const min = scores.length === 0 ? null : Math.min(...scores);
  const max = scores.length === 0 ? null : Math.max(...scores);
  const dimensions = Object.fromEntries(
    DIMENSIONS.map((d) => {
      const values = scored.map((i) => i.dimensions![d]);
      // Unrounded, as the report builder gives them.
      return [d, { values, mean: mean(values), sd: sampleSd(values) }];
    }),
  ) as GroupSummary['dimensions'];
  return {
    n: scored.length,
    scores,
    median: median(scores),
    min,
    max,
    range: range(scores),
    dimensions,
    instances_at_or_above_pass: scores.filter((s) => s >= INSTANCE_PASS_SCORE).length,
    hard_failures: mine.reduce((s, i) => s + i.hard_failures.length, 0),
    usable_instances: mine.filter((i) => i.usable).length,
    accepted: mine.reduce((s, i) => s + (i.accepted ?? 0), 0),
    calls: mine.reduce((s, i) => s + (i.calls ?? 0), 0),
    by_failure: Object.fromEntries(FAILURE_KINDS.map((k) => [k, mine.reduce((s, i) => s + (i.by_failure?.[k] ?? 0), 0)])) as ByFailure,
    cost: addCosts(mine.flatMap((i) => (i.cost ? [i.cost] : []))),
  };
}

/** What each sample call cost: an example figure (about 2,000 prompt and 150 answer tokens at $0.75 and $4.50 per million). */
const SAMPLE_CALL_NANO_USD = 2_175_000;

/** As oracle/verdict.ts and oracle/expansion.ts print a number: two decimals. */
const f2 = (value: number | null): string => (value === null ? 'n/a' : value.toFixed(2));

/** As oracle/verdict.ts: each median rounded, the differences of the rounded medians rounded again. */
function thresholdPoints(groups: StudyReport['groups']): ComparisonPoint[] {
  const medianPoint = (g: Group): ComparisonPoint => ({ point: `median_${g}`, compared_by: g === 'C' ? 'c_median, c_minus_b, c_minus_a' : `c_minus_${g.toLowerCase()}`, unrounded: groups[g].median, rounded: groups[g].median === null ? null : roundPoints(groups[g].median) });
  const medians = { A: medianPoint('A'), B: medianPoint('B'), C: medianPoint('C') };
  const minus = (g: 'A' | 'B'): ComparisonPoint => {
    const raw = medians.C.rounded === null || medians[g].rounded === null ? null : medians.C.rounded - medians[g].rounded;
    return { point: `c_minus_${g.toLowerCase()}`, compared_by: `c_minus_${g.toLowerCase()}`, unrounded: raw, rounded: raw === null ? null : roundPoints(raw) };
  };
  return [medians.A, medians.B, medians.C, minus('B'), minus('A')];
}

function thresholdChecks(groups: StudyReport['groups']): ThresholdCheck[] {
  const { C } = groups;
  const points = thresholdPoints(groups);
  const rounded = (point: string): number | null => points.find((p) => p.point === point)!.rounded;
  const [cMedian, cMinusB, cMinusA] = [rounded('median_C'), rounded('c_minus_b'), rounded('c_minus_a')];
  const atLeast = C_PASSING_AT_LEAST[C.n] ?? C.n;
  // The ids and wording of oracle/verdict.ts, so the renderers meet the checks a study writes.
  return [
    { id: 'c_median', description: 'median Continuity Score of C', required: `≥ ${C_MEDIAN_MIN_SCORE}`, observed: f2(cMedian), met: cMedian === null ? null : cMedian >= C_MEDIAN_MIN_SCORE },
    { id: 'c_minus_b', description: 'median C − median B', required: `≥ ${C_MINUS_B_MIN_POINTS}`, observed: f2(cMinusB), met: cMinusB === null ? null : cMinusB >= C_MINUS_B_MIN_POINTS },
    { id: 'c_minus_a', description: 'median C − median A', required: `≥ ${C_MINUS_A_MIN_POINTS}`, observed: f2(cMinusA), met: cMinusA === null ? null : cMinusA >= C_MINUS_A_MIN_POINTS },
    {
      id: 'c_instances_passing',
      description: `C instances scoring ≥ ${INSTANCE_PASS_SCORE}`,
      required: `at least ${atLeast} of ${C.n}`,
      observed: `${C.instances_at_or_above_pass} of ${C.n}`,
      met: C.instances_at_or_above_pass >= atLeast,
    },
    { id: 'c_hard_failures', description: 'hard failures in C instances', required: '≤ 0', observed: String(C.hard_failures), met: C.hard_failures === 0 },
  ];
}

interface Variant {
  readonly studyId: string;
  readonly seed: string;
  readonly hands: readonly HandInstance[];
  readonly dryRun: boolean;
  readonly model: StudyReport['model'];
  readonly voidReasons?: readonly string[];
  readonly expandedFrom?: number;
  readonly fairness: StudyReport['fairness'];
  readonly notes: readonly string[];
}

const DRY_RUN_STATEMENT = 'Apparatus dry run: the model is the deterministic reference policy, not a language model. These numbers test the apparatus (schedule, record, oracle, scoring, report); they are not evidence about subjects.';
const REFERENCE_MODEL: StudyReport['model'] = { adapter: 'reference', model_id: 'reference-policy', build: null };
const OPENAI_MODEL: StudyReport['model'] = { adapter: 'openai', model_id: 'qwen2.5-7b-instruct', build: 'sha256:5e1f0c2b9a7d4e3f8c6b1a0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f' };
const FAIR: StudyReport['fairness'] = {
  ok: true,
  checks: [
    { check: 'same_schedule', ok: true, detail: 'every instance ran schedule sha256:1b9e…c04a (31 wakes, long absence h31.1–h43.1)' },
    { check: 'same_intervention_plan', ok: true, detail: 'every instance ran intervention plan sha256:77d2…e910' },
    { check: 'same_model', ok: true, detail: 'one model and build for all groups' },
    { check: 'same_budgets', ok: true, detail: '4 model calls, 24000 tokens, 8 tool calls per wake in every group' },
  ],
};

function hands(group: Group, rows: readonly (readonly [level: number, drop: number, rp: number, ex: number, ev: number, rc: number])[], dirTag: string): HandInstance[] {
  return rows.map(([level, absenceDrop, rp, ex, ev, rc], k) => ({
    group,
    replicate: k + 1,
    level,
    absenceDrop,
    re_planning: rp,
    experience_influence: ex,
    evidence_integrity: ev,
    recovery: rc,
    events: 1800 + level * 7 + k * 31,
    wallMs: 410_000 + k * 12_345,
    dir: `${group}-r${k + 1}-inst-${dirTag}${group.charCodeAt(0).toString(16)}${k + 1}`,
  }));
}

/** 3 instances per group: A forgets across the long absence, B partly, C barely. */
const BASE_HANDS: readonly HandInstance[] = [
  ...hands('A', [[70, 35, 50, 33.333333, 84, 50], [65, 30, 50, 33.333333, 80, 50], [72, 40, 50, 33.333333, 86, 50]], '3a'),
  ...hands('B', [[82, 15, 75, 66.666667, 90, 50], [80, 10, 75, 66.666667, 88, 50], [85, 15, 75, 66.666667, 92, 50]], '7c'),
  ...hands('C', [[92, 0, 100, 100, 95, 100], [90, 5, 100, 100, 96, 100], [94, 0, 100, 100, 93, 100]], 'e1'),
];

/**
 * The expansion rule of the default pre-registration, checked on the first `nInitial` replicates,
 * in oracle/expansion.ts's words: every group's range and every dimension's SD, triggered or not.
 */
function expansionPoints(instances: readonly ReportInstance[], nInitial: number): ComparisonPoint[] {
  const initial = instances.filter((i) => i.replicate <= nInitial);
  const point = (name: string, limit: string, raw: number | null): ComparisonPoint => ({ point: name, compared_by: `expansion_rule.${limit}`, unrounded: raw, rounded: raw === null ? null : roundPoints(raw) });
  return GROUPS.flatMap((g) => {
    const summary = summaryOf(initial, g);
    return [point(`group ${g}: score range`, 'max_group_range_points', summary.range), ...DIMENSIONS.map((d) => point(`group ${g}: ${d} sample SD`, 'max_dimension_within_group_sd_points', summary.dimensions[d].sd))];
  });
}

function expansionReasons(instances: readonly ReportInstance[], nInitial: number, expanded: boolean, n: number): string[] {
  const points = expansionPoints(instances, nInitial);
  const rounded = (name: string): number | null => points.find((p) => p.point === name)!.rounded;
  const reasons = GROUPS.flatMap((g) => {
    const range = rounded(`group ${g}: score range`);
    const rangeReason = range !== null && range > MAX_GROUP_RANGE_POINTS ? `group ${g}: score range ${f2(range)} > ${MAX_GROUP_RANGE_POINTS} (triggers expansion)` : `group ${g}: score range ${f2(range)} ≤ ${MAX_GROUP_RANGE_POINTS}`;
    const sdReasons = DIMENSIONS.map((d) => {
      const sd = rounded(`group ${g}: ${d} sample SD`);
      if (sd === null) return `group ${g}: ${d} sample SD n/a (fewer than 2 values)`;
      return sd > MAX_DIMENSION_SD_POINTS ? `group ${g}: ${d} sample SD ${f2(sd)} > ${MAX_DIMENSION_SD_POINTS} (triggers expansion)` : `group ${g}: ${d} sample SD ${f2(sd)} ≤ ${MAX_DIMENSION_SD_POINTS}`;
    });
    return [rangeReason, ...sdReasons];
  });
  reasons.push(expanded ? `expand all groups from n = ${nInitial} to n = ${n}` : `no group's range exceeds ${MAX_GROUP_RANGE_POINTS} and no dimension's within-group SD exceeds ${MAX_DIMENSION_SD_POINTS}: no expansion`);
  return reasons;
}

/** What study/study-report-builder.ts notes for an instance whose hard failure overrides its score. */
function overrideNotes(instances: readonly ReportInstance[]): string[] {
  return instances.flatMap((i) => (i.score !== null && i.hard_failures.length > 0 ? [`${i.group}-r${i.replicate}: hard failure(s) ${[...new Set(i.hard_failures.map((h) => h.id))].join(', ')}: its score ${i.score.toFixed(2)} is overridden and counted as 0 (spec §8.4)`] : []));
}

/** What the builder notes for a scored instance without usable data. */
function noUsableDataNotes(instances: readonly ReportInstance[]): string[] {
  return instances.flatMap((i) => (i.score !== null && !i.usable ? [`${i.group}-r${i.replicate}: NO USABLE DATA: ${i.usable_reason}`] : []));
}

function build(variant: Variant): StudyReport {
  const instances = variant.hands.map((h) => instanceOf(h, variant.seed));
  const groups = { A: summaryOf(instances, 'A'), B: summaryOf(instances, 'B'), C: summaryOf(instances, 'C') };
  const thresholds = thresholdChecks(groups);
  const voided = (variant.voidReasons ?? []).length > 0;
  const allMet = thresholds.every((t) => t.met === true);
  const n = Math.max(...GROUPS.map((g) => groups[g].n));
  // Rule 8 as oracle/verdict.ts words it: every one of the n instances of each group usable.
  const shortfalls = GROUPS.filter((g) => groups[g].usable_instances < n).map((g) => `group ${g}: ${groups[g].usable_instances} of ${n} instances have usable data`);
  const verdict: Verdict = voided || shortfalls.length > 0 ? 'insufficient evidence' : allMet ? 'supported' : 'rejected';
  const failedIds = thresholds.filter((t) => t.met !== true).map((t) => t.id);
  const verdictStatement = voided
    ? 'Insufficient evidence: the study is voided, so no threshold is judged.'
    : shortfalls.length > 0
      ? `insufficient evidence — too few instances with usable data (${shortfalls.join('; ')}; an instance counts as data only when at least ${formatShare(MIN_ACCEPTED_SHARE)} of its model calls gave accepted answers, and the verdict needs all n = ${n} of each group).`
      : allMet
      ? `Supported: every pre-registered exploratory threshold is met at n = ${n} per group. These are effect thresholds fixed in advance, not a significance test.`
      : `Rejected: ${failedIds.join(', ')} not met at n = ${n} per group. These are effect thresholds fixed in advance, not a significance test.`;
  return StudyReport.parse({
    report_version: STUDY_REPORT_VERSION,
    study_id: variant.studyId,
    generated_at: '2026-03-05T09:12:44.000Z',
    prereg: { sha256: 'sha256:4c1d9a0e6b2f7d3c8e5a1b9f0d2c4e6a8b0d1f3e5c7a9b2d4f6e8a0c1e3b5d7f', scoring_spec_version: '1.0.0', oracle_rules_version: '1.0.0' },
    seed: variant.seed,
    model: variant.model,
    verdict,
    verdict_statement: verdictStatement,
    dry_run: variant.dryRun,
    dry_run_statement: variant.dryRun ? DRY_RUN_STATEMENT : null,
    voided,
    void_reasons: [...(variant.voidReasons ?? [])],
    n,
    n_initial: variant.expandedFrom ?? n,
    expanded: variant.expandedFrom !== undefined,
    expansion_reasons: expansionReasons(instances, variant.expandedFrom ?? n, variant.expandedFrom !== undefined, n),
    thresholds,
    groups,
    fairness: variant.fairness,
    usable_data: { min_accepted_share: MIN_ACCEPTED_SHARE, required_per_group: n, shortfalls },
    instances,
    cost: addCosts(GROUPS.map((g) => groups[g].cost!)),
    blocks: sampleBlocks(instances),
    rounding: roundingSection(thresholdPoints(groups), expansionPoints(instances, variant.expandedFrom ?? n)),
    notes: [...variant.notes, ...noUsableDataNotes(instances), ...overrideNotes(instances)],
  });
}

const THRESHOLDS_NOTE = 'The thresholds of §8.2 are exploratory effect thresholds; no result is called statistically significant.';

/** 3 × 3 finished instances, a dry run with the reference policy; every threshold is met. */
export function sampleStudyReport(): StudyReport {
  return build({
    studyId: 'study-20260302-4c1d9a',
    seed: 'study-seed-4c1d9a',
    hands: BASE_HANDS,
    dryRun: true,
    model: REFERENCE_MODEL,
    fairness: FAIR,
    notes: [THRESHOLDS_NOTE, 'A r2 recorded no checkpoint at wake-0019: scored 0 there.'],
  });
}

/** A language-model study whose spread at n = 3 expanded it to 5 instances per group. */
export function expandedStudyReport(): StudyReport {
  const spread: HandInstance[] = [
    ...hands('A', [[70, 35, 50, 33.333333, 84, 50], [45, 20, 25, 0, 70, 0], [72, 40, 25, 33.333333, 86, 50], [60, 30, 50, 33.333333, 78, 50], [68, 25, 50, 66.666667, 82, 50]], '51'),
    ...hands('B', [[82, 15, 75, 66.666667, 90, 50], [62, 10, 50, 33.333333, 75, 50], [85, 15, 50, 66.666667, 92, 50], [78, 10, 75, 66.666667, 86, 100], [80, 15, 50, 66.666667, 89, 50]], '52'),
    ...hands('C', [[92, 0, 100, 100, 95, 100], [88, 5, 75, 66.666667, 94, 100], [94, 0, 75, 100, 93, 100], [90, 0, 100, 100, 96, 100], [86, 5, 75, 66.666667, 91, 50]], '53'),
  ];
  return build({
    studyId: 'study-20260410-9b7e21',
    seed: 'study-seed-9b7e21',
    hands: spread,
    dryRun: false,
    model: OPENAI_MODEL,
    expandedFrom: 3,
    fairness: { ok: true, checks: FAIR.checks.map((c) => (c.check === 'same_model' ? { ...c, detail: 'qwen2.5-7b-instruct, one build for all groups' } : c)) },
    notes: [THRESHOLDS_NOTE],
  });
}

/** A study voided because a configuration changed after the start; one B instance failed. */
export function voidedStudyReport(): StudyReport {
  const withFailed = BASE_HANDS.map((h) =>
    h.group === 'B' && h.replicate === 3 ? { ...h, status: 'failed' as const, statusDetail: 'the writer exited with code 1 during wake-0017; the record is not sealed' } : h,
  );
  return build({
    studyId: 'study-20260302-void01',
    seed: 'study-seed-void01',
    hands: withFailed,
    dryRun: true,
    model: REFERENCE_MODEL,
    voidReasons: ['configuration_changed_after_start: C-r2 ran prereg.json sha256:90aa…17 while the study locked sha256:4c1d…7f', 'B r3 failed: 2 of 3 B instances finished, below the n = 3 the plan requires'],
    fairness: { ok: false, checks: FAIR.checks.map((c) => (c.check === 'same_schedule' ? { ...c, ok: false, detail: 'C r2 ran a different pre-registration, hence a different schedule' } : c)) },
    notes: [THRESHOLDS_NOTE],
  });
}

/** Hard failures in C (a duplicated write) and A (a FACT against the store): rejected. */
export function hardFailureStudyReport(): StudyReport {
  const failing = BASE_HANDS.map((h) => {
    if (h.group === 'C' && h.replicate === 2) return { ...h, hardFailures: [{ id: 'duplicate_side_effect' as const, seq: 2214, detail: 'files/write report/draft.md executed twice for intent int-0193 (ToolSucceeded at seq 2209 and 2214)' }] };
    if (h.group === 'A' && h.replicate === 3) return { ...h, hardFailures: [{ id: 'fact_contradicts_store' as const, seq: 977, detail: 'FACT claim clm-041 says the reviewer sent the dataset; no MessageReceived from the reviewer precedes seq 977' }] };
    return h;
  });
  return build({
    studyId: 'study-20260302-hf0c2a',
    seed: 'study-seed-hf0c2a',
    hands: failing,
    dryRun: true,
    model: REFERENCE_MODEL,
    fairness: FAIR,
    notes: [THRESHOLDS_NOTE],
  });
}

/**
 * A real-model study in which B's subject rarely gave an accepted answer: B r2 and B r3 fall below
 * the pre-registered 80 % (schema violations, answers cut at their token cap, timeouts), so B has
 * 1 of 3 usable instances and the verdict is insufficient evidence — though every threshold on
 * the scores is met.
 */
export function noUsableDataStudyReport(): StudyReport {
  const sparse = BASE_HANDS.map((h) => {
    if (h.group === 'B' && h.replicate === 2) return { ...h, modelCalls: { accepted: 4, byFailure: { schema: 20, length: 5, timeout: 2 } } };
    if (h.group === 'B' && h.replicate === 3) return { ...h, modelCalls: { accepted: 0, byFailure: { schema: 25, transport: 6 } } };
    if (h.group === 'C' && h.replicate === 1) return { ...h, modelCalls: { accepted: 25, byFailure: { truncated: 3, other: 3 } } };
    return h;
  });
  return build({
    studyId: 'study-20260412-nud0b2',
    seed: 'study-seed-nud0b2',
    hands: sparse,
    dryRun: false,
    model: OPENAI_MODEL,
    fairness: FAIR,
    notes: [THRESHOLDS_NOTE],
  });
}

/** One block per replicate: its turns as drawn (31 wakes and the start), its load within tolerance. */
function sampleBlocks(instances: readonly ReportInstance[]): BlockSummary[] {
  const replicates = [...new Set(instances.map((i) => i.replicate))].sort((a, b) => a - b);
  return replicates.map((replicate) => {
    const byGroup = Object.fromEntries(GROUPS.map((g) => [g, instances.find((i) => i.group === g && i.replicate === replicate)?.by_failure ?? null])) as BlockSummary['load']['by_group'];
    const meanWaitUnrounded = { A: 20_500.25, B: 21_899.5, C: 19_800 };
    const meanWait = { A: roundByRule(WHOLE_MS_ROUNDING, meanWaitUnrounded.A), B: roundByRule(WHOLE_MS_ROUNDING, meanWaitUnrounded.B), C: roundByRule(WHOLE_MS_ROUNDING, meanWaitUnrounded.C) };
    return {
      replicate,
      turns: { recorded: 96, sessions: 1, ok: true, detail: `replicate ${replicate}: 96 turn(s) in 1 session(s), each in the order drawn from the seed; first at a wake: A 11, B 10, C 11`, first: { A: 11, B: 10, C: 11 }, mean_wait_ms: meanWait, mean_wait_ms_unrounded: meanWaitUnrounded },
      load: { checked: true, confounded: false, by_group: byGroup, over: [], detail: `replicate ${replicate}: within tolerance (compared timeout, transport, truncated; not compared (tolerance null): length, schema)` },
    };
  });
}
