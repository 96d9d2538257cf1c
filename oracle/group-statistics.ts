// The few statistics the pre-registration names (spec §6.2, §8.2): median, range and the sample
// standard deviation. Nothing here tests significance: §8.2's thresholds are exploratory.
import { roundPoints } from './figure-rounding.js';

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((s, v) => s + v, 0) / values.length;
}

/** Sample standard deviation (n − 1 denominator; prereg expansion_rule.sd_kind 'sample'); null below 2 values. */
export function sampleSd(values: readonly number[]): number | null {
  if (values.length < 2) return null;
  const m = mean(values)!;
  return Math.sqrt(values.reduce((s, v) => s + (v - m) ** 2, 0) / (values.length - 1));
}

export function range(values: readonly number[]): number | null {
  return values.length === 0 ? null : Math.max(...values) - Math.min(...values);
}

/**
 * Points rounded to 6 decimals (POINTS_ROUNDING) before a rule compares them: 80.1 − 60.1 is
 * 19.999999999999993 in floating point, and a pre-registered "≥ 20" must not turn on the 15th decimal.
 */
export function comparable(points: number): number {
  return roundPoints(points);
}
