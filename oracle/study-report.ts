// report.json of a study (issue 6 item 0): the contract the study writes, `--json` prints,
// report.md / report.html render and `npm run study -- --recompute DIR` rebuilds from the run
// folders. Every number in it comes from oracle/ functions over the run folders.
import { z } from 'zod';
import { DIMENSIONS } from './continuity-score.js';
import { HardFailureId } from '../design/prereg.js';
import { ByFailure } from '../schema/usable-data.js';

/**
 * 2.1.0 (issue 31): `blocks` — per replicate, its block's turns held to the drawn order and its
 * groups' failed calls held to the pre-registered load-confound tolerance. Written for every study
 * that ran blocks; a study planned before blocks is still reported (and recomputed) as 2.0.0.
 * 2.0.0 (issue 15 item 8): usable data per instance and group, and rule 8 in the verdict.
 */
export const STUDY_REPORT_VERSION = '2.1.0';
export const STUDY_REPORT_VERSION_BEFORE_BLOCKS = '2.0.0';
export const GROUPS = ['A', 'B', 'C'] as const;
export const Group = z.enum(GROUPS);
export type Group = z.infer<typeof Group>;

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
  /** What the statistics and the verdict use: 0 when a hard failure overrides the score, else `score`. */
  counted_score: Points.nullable(),
  dimensions: DimensionValues.nullable(),
  hard_failures: z.array(ReportHardFailure),
  /** State-recovery value per scored wake (0–100), for the accuracy-over-time chart. */
  per_wake: z.array(z.strictObject({ wake_id: z.string(), at_minute: z.number().int(), value: Points })),
  events: z.number().int().min(0),
  wall_ms: z.number().min(0).nullable(),
  /** Accepted answers k (ModelAnswered) of model calls made n (oracle/usable-data.ts); null when the instance's events were not read (not scored). */
  accepted: z.number().int().min(0).nullable(),
  calls: z.number().int().min(0).nullable(),
  /** accepted / calls; null without calls. */
  accepted_share: z.number().min(0).max(1).nullable(),
  by_failure: ByFailure.nullable(),
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
  report_version: z.enum([STUDY_REPORT_VERSION_BEFORE_BLOCKS, STUDY_REPORT_VERSION]),
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
  /** 2.1.0: one entry per replicate with instances (absent in 2.0.0: a study planned before blocks). */
  blocks: z.array(BlockSummary).optional(),
  notes: z.array(z.string()),
}).refine((r) => (r.blocks !== undefined) === (r.report_version === STUDY_REPORT_VERSION), { message: `blocks belong to report_version ${STUDY_REPORT_VERSION}, and ${STUDY_REPORT_VERSION} has them`, path: ['blocks'] });
export type StudyReport = z.infer<typeof StudyReport>;
