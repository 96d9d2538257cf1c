// The rounding rules of every rounded figure of a study (issue 32 item 3): each rule once, as
// data a scorer in another language can follow to the last digit, and as the one function that
// applies it. report.json names, per kind of figure, which rule rounded it (oracle/report-rounding.ts);
// the oracle's own helpers (continuity-score, group-statistics, block-turns, verdict, expansion)
// round only through here, so the data and the figures cannot drift apart.
import { z } from 'zod';

/**
 * Numbers: ECMAScript `Math.round(x * 10^d) / 10^d`, whose ties go toward +∞ (2.5 → 3, −2.5 → −2),
 * NOT away from zero and NOT to even. Said in full in ROUND_HALF_TOWARD_POSITIVE_INFINITY.
 */
export const NUMBER_ROUNDING_METHOD = 'scaled_round_half_toward_positive_infinity';
/** Text: ECMAScript `x.toFixed(d)`. Said in full in TO_FIXED_STATEMENT. */
export const TEXT_ROUNDING_METHOD = 'to_fixed';

const ROUND_HALF_TOWARD_POSITIVE_INFINITY =
  'In IEEE-754 binary64 arithmetic: y = x × 10^decimals (one rounding to the nearest double, ties to even); n = the integer nearest to y, and when y lies exactly halfway between two integers the one toward +infinity (ECMAScript Math.round: 2.5 → 3, −2.5 → −2, 0.49999999999999994 → 0); the figure = n / 10^decimals (one rounding to the nearest double). report.json prints that double as the shortest decimal that reads back as it (ECMAScript Number::toString), so 53.5714285714… becomes the double nearest 53.571429, printed 53.571429 (and −0, from a negative figure that rounds to zero, is printed 0).';
const TO_FIXED_STATEMENT =
  'ECMAScript Number.prototype.toFixed(decimals) of a figure already rounded by another rule: the exact binary64 value of |x| to the nearest multiple of 10^−decimals (when two are equally near, the larger), written with exactly `decimals` digits after the point, "-" before the digits when x < 0 (so -0.001 is written "-0.00"), and "n/a" for a figure that does not exist.';

export const NumberRoundingRule = z.strictObject({
  method: z.literal(NUMBER_ROUNDING_METHOD),
  decimals: z.number().int().min(0).max(15),
  /** The rule as ECMAScript, for a reader; `statement` says it for any language. */
  formula: z.string(),
  statement: z.string(),
});
export type NumberRoundingRule = z.infer<typeof NumberRoundingRule>;

export const TextRoundingRule = z.strictObject({
  method: z.literal(TEXT_ROUNDING_METHOD),
  decimals: z.number().int().min(0).max(15),
  formula: z.string(),
  statement: z.string(),
});
export type TextRoundingRule = z.infer<typeof TextRoundingRule>;

function numberRule(decimals: number): NumberRoundingRule {
  const scale = decimals === 0 ? 'x' : `x * 1e${decimals}`;
  return NumberRoundingRule.parse({ method: NUMBER_ROUNDING_METHOD, decimals, formula: decimals === 0 ? 'Math.round(x)' : `Math.round(${scale}) / 1e${decimals}`, statement: ROUND_HALF_TOWARD_POSITIVE_INFINITY });
}

/** Points (0–100) of wake values, dimensions, instance scores and the points a rule compares: 6 decimals. */
export const POINTS_ROUNDING = numberRule(6);
/** A mean of whole-millisecond readings (a block's mean wait): whole milliseconds. */
export const WHOLE_MS_ROUNDING = numberRule(0);
/** Points written into text (a threshold's `observed`, the expansion reasons, a note): 2 decimals. */
export const POINTS_TEXT_ROUNDING = TextRoundingRule.parse({ method: TEXT_ROUNDING_METHOD, decimals: 2, formula: 'x.toFixed(2)', statement: TO_FIXED_STATEMENT });

/** The one application of a number rule: what every rounded figure of report.json went through. */
export function roundByRule(rule: NumberRoundingRule, value: number): number {
  if (!Number.isFinite(value)) throw new Error(`roundByRule: ${value} is not a finite number; a figure is never NaN or infinite`);
  const scale = 10 ** rule.decimals;
  // 10 ** d is exact in binary64 for d ≤ 22, so `x * scale` is the statement's y for every allowed d.
  return Math.round(value * scale) / scale;
}

/** The one application of a text rule; null (a figure that does not exist) is "n/a". */
export function formatByRule(rule: TextRoundingRule, value: number | null): string {
  return value === null ? 'n/a' : value.toFixed(rule.decimals);
}

/** Points to 6 decimals (POINTS_ROUNDING). */
export function roundPoints(value: number): number {
  return roundByRule(POINTS_ROUNDING, value);
}

/** Points written with 2 decimals (POINTS_TEXT_ROUNDING). */
export function formatPoints(value: number | null): string {
  return formatByRule(POINTS_TEXT_ROUNDING, value);
}
