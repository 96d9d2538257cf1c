// report.json's `rounding` section (report 2.2.0, issue 32 item 3): for each kind of figure, the
// rule that rounded it (oracle/figure-rounding.ts, copied in as data), whether it was computed
// from figures that were themselves rounded, and where its unrounded value stands beside it — so
// "agrees to the last digit" is something a scorer can check, not guess. What each figure is
// computed from is said here once, next to the rules; oracle/rounded-figures-check.ts holds a
// report to it.
import { z } from 'zod';
import { DIMENSIONS, type Dimension } from './continuity-score.js';
import { NumberRoundingRule, POINTS_ROUNDING, POINTS_TEXT_ROUNDING, TextRoundingRule, WHOLE_MS_ROUNDING } from './figure-rounding.js';

/** The rules by name, as report.json carries them. */
export const RoundingRules = z.strictObject({ points: NumberRoundingRule, whole_ms: NumberRoundingRule, points_text: TextRoundingRule });
export type RoundingRules = z.infer<typeof RoundingRules>;
export const ROUNDING_RULES: RoundingRules = { points: POINTS_ROUNDING, whole_ms: WHOLE_MS_ROUNDING, points_text: POINTS_TEXT_ROUNDING };

export const FIGURE_KINDS = ['wake_value', 'dimension', 'instance_score', 'group_statistic', 'threshold_point', 'expansion_point', 'block_mean_wait', 'points_text', 'share_text'] as const;
export type FigureKind = (typeof FIGURE_KINDS)[number];

export const RoundedFigure = z.strictObject({
  kind: z.enum(FIGURE_KINDS),
  /** For kind dimension: which one (their inputs differ); null otherwise. */
  dimension: z.enum(DIMENSIONS).nullable(),
  /** Where these figures stand in report.json (`[]` any element, `<g>` a group, `<d>` a dimension). */
  fields: z.array(z.string()).min(1),
  /** Whether the figure is rounded at all (false: reported as computed, every digit). */
  rounded: z.boolean(),
  /** The rule of `rules` that rounded it; null when not rounded, or rounded outside this section (said in `computed_from`). */
  rule: RoundingRules.keyof().nullable(),
  /** Whether it is computed from figures that were themselves rounded (which ones: `computed_from`). */
  from_rounded_inputs: z.boolean(),
  computed_from: z.string(),
  /** Where the value before this figure's own rounding stands beside it; null: not carried (or nothing was rounded). */
  unrounded_at: z.string().nullable(),
});
export type RoundedFigure = z.infer<typeof RoundedFigure>;

/** A point a pre-registered rule compares with its limit: as computed, and as rounded before the comparison. */
export const ComparisonPoint = z.strictObject({
  /** threshold points: median_A … c_minus_a; expansion points: the words its reason begins with ("group A: score range"). */
  point: z.string(),
  /** The threshold id(s) or the expansion rule's limit that compare it. */
  compared_by: z.string(),
  /** null: not computable (no scored instance, or fewer than 2 values for an SD). */
  unrounded: z.number().nullable(),
  rounded: z.number().nullable(),
});
export type ComparisonPoint = z.infer<typeof ComparisonPoint>;

export const RoundingSection = z.strictObject({
  rules: RoundingRules,
  figures: z.array(RoundedFigure),
  threshold_points: z.array(ComparisonPoint),
  /** At the first n per group, as the expansion rule was applied; empty when it was not (not decided, or nothing to expand to). */
  expansion_points: z.array(ComparisonPoint),
});
export type RoundingSection = z.infer<typeof RoundingSection>;

const SUM_IN_ORDER = 'summed left to right from 0';

const DIMENSION_INPUTS: Readonly<Record<Dimension, { fromRounded: boolean; computedFrom: string }>> = {
  state_recovery: { fromRounded: true, computedFrom: `the ROUNDED wake values of the oracle's scored wakes (a wake without a checkpoint counts 0), ${SUM_IN_ORDER} in wake order, divided by their count; 0 when no wake is scored` },
  re_planning: {
    fromRounded: true,
    computedFrom: `each goal_change intervention's value — 50 × (the first scored checkpoint after the delivery wake names the new goal and the expected next action: 1, else 0) + 50 × (the share of the scored checkpoints after the delivery wake that do), ROUNDED by rule points — ${SUM_IN_ORDER} in plan order, divided by their count; 0 without such an intervention`,
  },
  experience_influence: { fromRounded: false, computedFrom: '100 × (applicable probes passed) / (applicable probes), whole counts; 0 when none applies' },
  evidence_integrity: { fromRounded: false, computedFrom: '100 × (claims − bad claims) / claims, whole counts; 0 without a claim' },
  recovery: {
    fromRounded: true,
    computedFrom: `per crash, the ROUNDED wake value of the first scored wake after it (0 when a side-effect problem without a seq, or with a seq from the crash wake's start to that wake's end, exists, or when no scored wake follows), ${SUM_IN_ORDER} in plan order, divided by their count; 0 without a crash`,
  },
};

/** What every report 2.2.0 says of its figures: constant, so --recompute compares it like any other field. */
export const ROUNDED_FIGURES: readonly RoundedFigure[] = [
  {
    kind: 'wake_value',
    dimension: null,
    fields: ['instances[].per_wake[].value'],
    rounded: true,
    rule: 'points',
    from_rounded_inputs: false,
    computed_from: `(Σ of the pre-registered checkpoint_field_weights of the fields that match the oracle's checkpoint) / (Σ of all of them), each sum ${SUM_IN_ORDER} in field order, then × 100; 0 for a wake without a checkpoint`,
    unrounded_at: 'instances[].per_wake[].value_unrounded',
  },
  ...DIMENSIONS.map((d): RoundedFigure => ({
    kind: 'dimension',
    dimension: d,
    fields: [`instances[].dimensions.${d}`, `groups.<g>.dimensions.${d}.values[]`],
    rounded: true,
    rule: 'points',
    from_rounded_inputs: DIMENSION_INPUTS[d].fromRounded,
    computed_from: DIMENSION_INPUTS[d].computedFrom,
    unrounded_at: `instances[].dimensions_unrounded.${d}`,
  })),
  {
    kind: 'instance_score',
    dimension: null,
    fields: ['instances[].score', 'instances[].counted_score (the score, or 0 when a hard failure overrides it)', 'groups.<g>.scores[] (counted scores)'],
    rounded: true,
    rule: 'points',
    from_rounded_inputs: true,
    computed_from: `the ROUNDED dimensions: s = 0, then s = s + (weight × dimension) / 100 for ${DIMENSIONS.join(', ')} in that order, with the pre-registered weights`,
    unrounded_at: 'instances[].score_unrounded',
  },
  {
    kind: 'group_statistic',
    dimension: null,
    fields: ['groups.<g>.median', 'groups.<g>.min', 'groups.<g>.max', 'groups.<g>.range', 'groups.<g>.dimensions.<d>.mean', 'groups.<g>.dimensions.<d>.sd'],
    rounded: false,
    rule: null,
    from_rounded_inputs: true,
    computed_from: `the group's counted scores (groups.<g>.scores) and rounded dimension values (groups.<g>.dimensions.<d>.values), in report order, every digit kept: median = the middle of the sorted values, for an even count (a + b) / 2 of the two middle ones; range = max − min; mean = the values ${SUM_IN_ORDER} / count; sd = sqrt(Σ (v − mean)² / (count − 1)), the squares ${SUM_IN_ORDER}, null below 2 values`,
    unrounded_at: null,
  },
  {
    kind: 'threshold_point',
    dimension: null,
    fields: ['rounding.threshold_points[].rounded', 'thresholds[].observed of c_median, c_minus_b, c_minus_a (the rounded point written by rule points_text)', 'verdict_statement (likewise)'],
    rounded: true,
    rule: 'points',
    from_rounded_inputs: true,
    computed_from: "median_<g>: the group's median of its counted scores (groups.<g>.median), rounded; c_minus_b, c_minus_a: ROUNDED median C − ROUNDED median B (A), rounded again; each threshold compares the rounded point with its limit",
    unrounded_at: 'rounding.threshold_points[].unrounded',
  },
  {
    kind: 'expansion_point',
    dimension: null,
    fields: ['rounding.expansion_points[].rounded', 'expansion_reasons[] (the reason beginning with the point, the rounded point written by rule points_text)'],
    rounded: true,
    rule: 'points',
    from_rounded_inputs: true,
    computed_from: "at the first n per group: the range (max − min) of the group's counted scores, and per dimension the sample SD of its rounded values (as group_statistic), each rounded; a rounded point above its limit triggers expansion",
    unrounded_at: 'rounding.expansion_points[].unrounded',
  },
  {
    kind: 'block_mean_wait',
    dimension: null,
    fields: ['blocks[].turns.mean_wait_ms.<g>'],
    rounded: true,
    rule: 'whole_ms',
    from_rounded_inputs: true,
    computed_from: `the group's recorded waited_ms (whole milliseconds) in the block's record, ${SUM_IN_ORDER} in record order, divided by their count`,
    unrounded_at: 'blocks[].turns.mean_wait_ms_unrounded.<g>',
  },
  {
    kind: 'points_text',
    dimension: null,
    fields: ['notes[] ("its score … is overridden")', 'thresholds[].observed', 'expansion_reasons[]', 'verdict_statement'],
    rounded: true,
    rule: 'points_text',
    from_rounded_inputs: true,
    computed_from: 'an instance score, or a threshold or expansion point, already rounded by rule points',
    unrounded_at: 'the figure written: instances[].score, rounding.threshold_points[].rounded, rounding.expansion_points[].rounded',
  },
  {
    kind: 'share_text',
    dimension: null,
    fields: ['instances[].usable_reason', 'verdict_statement'],
    rounded: true,
    rule: null,
    from_rounded_inputs: false,
    computed_from: 'a share of model calls written as a percent, Math.round(share × 10000) / 100 then " %" (schema/usable-data.ts formatShare: schema/ sits inside oracle/ and cannot use its rules)',
    unrounded_at: 'instances[].accepted_share, usable_data.min_accepted_share',
  },
];

/** The section of a report: the rules and figures as this build defines them, the points as the rules computed them. */
export function roundingSection(thresholdPoints: readonly ComparisonPoint[], expansionPoints: readonly ComparisonPoint[]): RoundingSection {
  return RoundingSection.parse({ rules: ROUNDING_RULES, figures: ROUNDED_FIGURES, threshold_points: thresholdPoints, expansion_points: expansionPoints });
}
