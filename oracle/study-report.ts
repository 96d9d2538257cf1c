// report.json of a study (issue 6 item 0): the contract the study writes, `--json` prints,
// report.md / report.html render and `npm run study -- --recompute DIR` rebuilds from the run
// folders. Every number in it comes from oracle/ functions over the run folders.
import { z } from 'zod';
import { DIMENSIONS } from './continuity-score.js';
import { RoundingSection } from './report-rounding.js';
import { Group } from '../design/groups.js';
import { HardFailureId } from '../design/prereg.js';
import { ByFailure } from '../schema/usable-data.js';
import { PromptReuseSummary } from '../schema/prompt-reuse-summary.js';
import { CostSummary } from '../schema/cost-summary.js';
import { Exploratory } from '../study-contract/exploratory.js';

/**
 * 2.4.0 (issue 36 item 4): `cost` — what the model calls cost, summed from the call records'
 * cost_nano_usd (schema/cost-summary.ts), per instance (null when its events were not read), per
 * group (every instance of the group that was read) and for the study (`cost`: every instance).
 * 2.3.0 (issue 34): the groups' and instances' prompt_reuse.
 * 2.2.0 (issue 32 item 3): `rounding` — the rule of each kind of rounded figure and whether it was
 * computed from rounded figures (oracle/report-rounding.ts), with the points the thresholds and
 * the expansion rule compared, unrounded and rounded; beside the rounded figures their unrounded
 * values (`score_unrounded`, `dimensions_unrounded`, `per_wake[].value_unrounded`,
 * `blocks[].turns.mean_wait_ms_unrounded`). Every study is written as 2.2.0, `blocks` present when
 * it ran blocks. Nothing else changed: a 2.2.0 report less these is the 2.1.0 (2.0.0) report of
 * the same folders, which is how --recompute and --resume still hold an older report to its folders.
 * 2.1.0 (issue 31): `blocks` — per replicate, its block's turns held to the drawn order and its
 * groups' failed calls held to the pre-registered load-confound tolerance. Written for a study
 * that ran blocks; a study planned before blocks was reported as 2.0.0.
 * 2.0.0 (issue 15 item 8): usable data per instance and group, and rule 8 in the verdict.
 */
export const STUDY_REPORT_VERSION = '2.4.0';
/** Before the cost per instance, group and study (issue 36). */
export const STUDY_REPORT_VERSION_BEFORE_COST = '2.3.0';
/** Before the groups' and instances' prompt_reuse (issue 34). */
export const STUDY_REPORT_VERSION_BEFORE_REUSE = '2.2.0';
export const STUDY_REPORT_VERSION_BEFORE_ROUNDING = '2.1.0';
export const STUDY_REPORT_VERSION_BEFORE_BLOCKS = '2.0.0';
export const STUDY_REPORT_VERSIONS = [STUDY_REPORT_VERSION_BEFORE_BLOCKS, STUDY_REPORT_VERSION_BEFORE_ROUNDING, STUDY_REPORT_VERSION_BEFORE_REUSE, STUDY_REPORT_VERSION_BEFORE_COST, STUDY_REPORT_VERSION] as const;
export type StudyReportVersion = (typeof STUDY_REPORT_VERSIONS)[number];
/** The versions written before the rounding section: what a report of today's build is read back into for comparison. */
export type StudyReportVersionBeforeRounding = typeof STUDY_REPORT_VERSION_BEFORE_BLOCKS | typeof STUDY_REPORT_VERSION_BEFORE_ROUNDING;
export function isVersionBeforeRounding(version: unknown): version is StudyReportVersionBeforeRounding {
  return version === STUDY_REPORT_VERSION_BEFORE_BLOCKS || version === STUDY_REPORT_VERSION_BEFORE_ROUNDING;
}
/** The versions a report of today's build is read back into for comparison: every earlier one. */
export type OlderStudyReportVersion = StudyReportVersionBeforeRounding | typeof STUDY_REPORT_VERSION_BEFORE_REUSE | typeof STUDY_REPORT_VERSION_BEFORE_COST;
export function isOlderReportVersion(version: unknown): version is OlderStudyReportVersion {
  return isVersionBeforeRounding(version) || version === STUDY_REPORT_VERSION_BEFORE_REUSE || version === STUDY_REPORT_VERSION_BEFORE_COST;
}

export const Verdict = z.enum(['supported', 'rejected', 'insufficient evidence']);
export type Verdict = z.infer<typeof Verdict>;

const Points = z.number();
const DimensionValues = z.strictObject(Object.fromEntries(DIMENSIONS.map((d) => [d, Points])) as Record<(typeof DIMENSIONS)[number], typeof Points>);

export const ReportHardFailure = z.strictObject({ id: HardFailureId, seq: z.number().int().nullable(), detail: z.string() });

export const ReportInstance = z.strictObject({
  group: Group,
  replicate: z.number().int().min(1),
  seed: z.string(),
  /** The run folder, relative to the study folder. */
  dir: z.string(),
  /** finished: sealed, signed and verified; anything else is not scored. */
  status: z.enum(['finished', 'stopped', 'failed']),
  status_detail: z.string().nullable(),
  /** The computed Continuity Score; null when the instance could not be scored (status not finished). */
  score: Points.nullable(),
  /** 2.2.0: the score before its rounding (rounding.figures: instance_score); null with `score`. */
  score_unrounded: Points.nullable().optional(),
  /** What the statistics and the verdict use: 0 when a hard failure overrides the score, else `score`. */
  counted_score: Points.nullable(),
  dimensions: DimensionValues.nullable(),
  /** 2.2.0: each dimension before its rounding (rounding.figures: dimension); null with `dimensions`. */
  dimensions_unrounded: DimensionValues.nullable().optional(),
  hard_failures: z.array(ReportHardFailure),
  /** State-recovery value per scored wake (0–100), for the accuracy-over-time chart. */
  per_wake: z.array(z.strictObject({ wake_id: z.string(), at_minute: z.number().int(), value: Points, /** 2.2.0 */ value_unrounded: Points.optional() })),
  events: z.number().int().min(0),
  wall_ms: z.number().min(0).nullable(),
  /** Accepted answers k (ModelAnswered) of model calls made n (oracle/usable-data.ts); null when the instance's events were not read (not scored). */
  accepted: z.number().int().min(0).nullable(),
  calls: z.number().int().min(0).nullable(),
  /** accepted / calls; null without calls. */
  accepted_share: z.number().min(0).max(1).nullable(),
  by_failure: ByFailure.nullable(),
  /** 2.3.0 (issue 34): what the servers said they reused of its prompts; null when its events were not read (not scored). */
  prompt_reuse: PromptReuseSummary.nullable().optional(),
  /** 2.4.0 (issue 36): what its model calls cost; null when its events were not read (not scored). */
  cost: CostSummary.nullable().optional(),
  /** The instance counts as data: calls > 0 and accepted_share ≥ the pre-registered minimum. */
  usable: z.boolean(),
  usable_reason: z.string(),
});
export type ReportInstance = z.infer<typeof ReportInstance>;

const DimensionStats = z.strictObject({ values: z.array(Points), mean: Points.nullable(), sd: Points.nullable() });

export const GroupSummary = z.strictObject({
  n: z.number().int().min(0),
  scores: z.array(Points),
  median: Points.nullable(),
  min: Points.nullable(),
  max: Points.nullable(),
  range: Points.nullable(),
  /** Per dimension: the values of the instances, their mean and sample SD (null below 2 values). */
  dimensions: z.strictObject(Object.fromEntries(DIMENSIONS.map((d) => [d, DimensionStats])) as Record<(typeof DIMENSIONS)[number], typeof DimensionStats>),
  instances_at_or_above_pass: z.number().int().min(0),
  hard_failures: z.number().int().min(0),
  /** Of the n instances: how many count as data (scored and usable). */
  usable_instances: z.number().int().min(0),
  /** Accepted answers and model calls made, summed over the instances whose events were read. */
  accepted: z.number().int().min(0),
  calls: z.number().int().min(0),
  by_failure: ByFailure,
  /** 2.3.0 (issue 34): what the servers said they reused of the group's prompts, summed over its scored instances. */
  prompt_reuse: PromptReuseSummary.optional(),
  /** 2.4.0 (issue 36): what the model calls of every instance of the group that was read cost. */
  cost: CostSummary.optional(),
});
export type GroupSummary = z.infer<typeof GroupSummary>;

export const ThresholdCheck = z.strictObject({ id: z.string(), description: z.string(), required: z.string(), observed: z.string(), met: z.boolean().nullable() });
export type ThresholdCheck = z.infer<typeof ThresholdCheck>;

export const FairnessCheck = z.strictObject({ check: z.string(), ok: z.boolean(), detail: z.string() });
export type FairnessCheck = z.infer<typeof FairnessCheck>;

const PerGroup = <T extends z.ZodType>(value: T) => z.strictObject({ A: value, B: value, C: value });

/** One replicate's block (issue 31): how its turns went, and whether its groups' failures followed the server's load. */
export const BlockSummary = z.strictObject({
  replicate: z.number().int().min(1),
  /** The block's record (blocks/r<k>.jsonl) held to the order drawn from the replicate's seed (oracle/block-turns.ts). */
  turns: z.strictObject({
    recorded: z.number().int().min(0),
    /** Runs of the block (more than one: stopped and resumed; its members then did not all run side by side). */
    sessions: z.number().int().min(0),
    ok: z.boolean(),
    detail: z.string(),
    /** How many wakes each group's turn came first. */
    first: PerGroup(z.number().int().min(0)),
    mean_wait_ms: PerGroup(z.number().min(0).nullable()),
    /** 2.2.0: the mean wait before its rounding to whole milliseconds. */
    mean_wait_ms_unrounded: PerGroup(z.number().min(0).nullable()).optional(),
  }),
  /** The load-confound check (oracle/load-confound.ts): failed calls per kind and group against the pre-registered tolerance. */
  load: z.strictObject({
    checked: z.boolean(),
    confounded: z.boolean(),
    by_group: PerGroup(ByFailure.nullable()),
    over: z.array(z.string()),
    detail: z.string(),
  }),
});
export type BlockSummary = z.infer<typeof BlockSummary>;

export const StudyReport = z.strictObject({
  report_version: z.enum(STUDY_REPORT_VERSIONS),
  study_id: z.string(),
  /** Wall-clock time the report was made; the only field --recompute does not compare. */
  generated_at: z.iso.datetime(),
  prereg: z.strictObject({ sha256: z.string(), scoring_spec_version: z.string(), oracle_rules_version: z.string() }),
  seed: z.string(),
  model: z.strictObject({ adapter: z.string(), model_id: z.string(), build: z.string().nullable() }),
  verdict: Verdict,
  /** The verdict in words, as spec §17.3 demands: thresholds met or not, never "statistically significant". */
  verdict_statement: z.string(),
  dry_run: z.boolean(),
  dry_run_statement: z.string().nullable(),
  voided: z.boolean(),
  void_reasons: z.array(z.string()),
  /** Issue 35: the study knowingly departed from its pre-registration (study.json `exploratory`); its verdict statement begins by saying so. Absent: it did not. */
  exploratory: Exploratory.optional(),
  /** n per group the verdict rests on. */
  n: z.number().int().min(0),
  n_initial: z.number().int().min(1),
  expanded: z.boolean(),
  /** Why the batch was (or was not) expanded, each rule checked at n_initial. */
  expansion_reasons: z.array(z.string()),
  thresholds: z.array(ThresholdCheck),
  groups: z.strictObject({ A: GroupSummary, B: GroupSummary, C: GroupSummary }),
  fairness: z.strictObject({ ok: z.boolean(), checks: z.array(FairnessCheck) }),
  /**
   * Rule 8 (docs/oracle.md): every one of the n instances per group must be usable, else the
   * verdict is insufficient evidence; `shortfalls` names each group below n (empty: rule met).
   */
  usable_data: z.strictObject({ min_accepted_share: z.number().min(0).max(1).nullable(), required_per_group: z.number().int().min(0), shortfalls: z.array(z.string()) }),
  instances: z.array(ReportInstance),
  /** 2.4.0 (issue 36): what the study's model calls cost, every instance read (the groups' sum). */
  cost: CostSummary.optional(),
  /** One entry per replicate with instances: always in 2.1.0, never in 2.0.0, in 2.2.0 when the study ran blocks. */
  blocks: z.array(BlockSummary).optional(),
  /** 2.2.0: how each kind of figure was rounded (oracle/report-rounding.ts). */
  rounding: RoundingSection.optional(),
  notes: z.array(z.string()),
}).superRefine((r, ctx) => {
  for (const problem of versionProblems(r)) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
});
export type StudyReport = z.infer<typeof StudyReport>;

interface VersionProblem {
  readonly message: string;
  readonly path: (string | number)[];
}

/** What a report of its version must and must not carry beyond the fields every version has. */
function versionProblems(r: StudyReport): VersionProblem[] {
  const out: VersionProblem[] = [];
  const v = r.report_version;
  if (v === STUDY_REPORT_VERSION_BEFORE_BLOCKS && r.blocks !== undefined) out.push({ message: `report_version ${v} has no blocks (a study planned before blocks)`, path: ['blocks'] });
  if (v === STUDY_REPORT_VERSION_BEFORE_ROUNDING && r.blocks === undefined) out.push({ message: `report_version ${v} has blocks`, path: ['blocks'] });
  const rounding = v === STUDY_REPORT_VERSION;
  const has = (present: boolean, path: (string | number)[], what: string): void => {
    if (present !== rounding) out.push({ message: rounding ? `report_version ${v} carries ${what}` : `report_version ${v} has no ${what} (it came with ${STUDY_REPORT_VERSION})`, path });
  };
  has(r.rounding !== undefined, ['rounding'], 'the rounding section');
  r.instances.forEach((i, k) => {
    has(i.score_unrounded !== undefined, ['instances', k, 'score_unrounded'], 'score_unrounded for every instance');
    has(i.dimensions_unrounded !== undefined, ['instances', k, 'dimensions_unrounded'], 'dimensions_unrounded for every instance');
    i.per_wake.forEach((w, j) => has(w.value_unrounded !== undefined, ['instances', k, 'per_wake', j, 'value_unrounded'], 'value_unrounded for every wake'));
    if (rounding && (i.score_unrounded === null) !== (i.score === null)) out.push({ message: 'score_unrounded is null exactly when score is', path: ['instances', k, 'score_unrounded'] });
    if (rounding && (i.dimensions_unrounded === null) !== (i.dimensions === null)) out.push({ message: 'dimensions_unrounded is null exactly when dimensions are', path: ['instances', k, 'dimensions_unrounded'] });
  });
  (r.blocks ?? []).forEach((b, k) => has(b.turns.mean_wait_ms_unrounded !== undefined, ['blocks', k, 'turns', 'mean_wait_ms_unrounded'], 'mean_wait_ms_unrounded for every block'));
  // 2.4.0 and only it carries the cost, for the study, every group and every instance.
  const costed = v === STUDY_REPORT_VERSION;
  const costs: [boolean, (string | number)[]][] = [[r.cost !== undefined, ['cost']], ...Object.entries(r.groups).map(([g, s]): [boolean, (string | number)[]] => [s.cost !== undefined, ['groups', g, 'cost']]), ...r.instances.map((i, k): [boolean, (string | number)[]] => [i.cost !== undefined, ['instances', k, 'cost']])];
  for (const [present, path] of costs) if (present !== costed) out.push({ message: costed ? `report_version ${v} carries the cost of the study, every group and every instance` : `report_version ${v} has no cost (it came with ${STUDY_REPORT_VERSION})`, path });
  return out;
}

/**
 * A report of this build as the same folders were reported in an older version: the rounding
 * section and the unrounded values taken out, the version set. What --recompute and --resume
 * compare an older report.json with, so an old report still recomputes (its blocks, present or
 * not, are compared as they are: a mismatch there is a difference, not hidden).
 */
export function asOlderReportVersion(report: StudyReport, version: OlderStudyReportVersion): unknown {
  // Before 2.4.0: no cost, for the study, per group or per instance.
  const { cost: _cost, ...uncosted } = report;
  const withoutCost: StudyReport = {
    ...uncosted,
    report_version: version,
    instances: report.instances.map(({ cost: _c, ...i }) => i),
    groups: Object.fromEntries(Object.entries(report.groups).map(([g, { cost: _c, ...s }]) => [g, s])) as StudyReport['groups'],
  };
  if (version === STUDY_REPORT_VERSION_BEFORE_COST) return withoutCost;
  // Before 2.3.0: no prompt_reuse, per instance or per group.
  const withoutReuse: StudyReport = {
    ...withoutCost,
    instances: withoutCost.instances.map(({ prompt_reuse: _r, ...i }) => i),
    groups: Object.fromEntries(Object.entries(withoutCost.groups).map(([g, { prompt_reuse: _r, ...s }]) => [g, s])) as StudyReport['groups'],
  };
  if (!isVersionBeforeRounding(version)) return withoutReuse;
  const { rounding: _rounding, instances, blocks, ...rest } = withoutReuse;
  return {
    ...rest,
    instances: instances.map(({ score_unrounded: _s, dimensions_unrounded: _d, per_wake, ...i }) => ({ ...i, per_wake: per_wake.map(({ value_unrounded: _v, ...w }) => w) })),
    ...(blocks === undefined ? {} : { blocks: blocks.map(({ turns: { mean_wait_ms_unrounded: _m, ...turns }, ...b }) => ({ ...b, turns })) }),
  };
}
