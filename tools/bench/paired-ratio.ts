// Ratios from interleaved pairs (issue 34 item 5). A ratio "ours / raw" of two medians taken
// over rounds measured at different moments measures the machine as much as the code: one run
// of append_single read 3.28 (the writer faster than raw SQLite) because the raw case's rounds
// were 551, 596 and 5,349 events/s — two of them under someone else's load. Here raw and ours
// run back to back, in an order that alternates from pair to pair, so a change of load lands on
// both sides of a pair; each pair gives its own ratio, the figure is the median of those, and
// their spread (min, quartiles, max) is reported beside it so a noisy run shows as one.
import { z } from 'zod';

/** One pair: the two sides' rates (work per second, the same work on both sides), measured back to back. */
export interface RatePair {
  readonly raw: number;
  readonly ours: number;
}

export const PairedRatio = z.strictObject({
  /** The figure: the median of the pair ratios (ours / raw). */
  median: z.number(),
  min: z.number(),
  /** Quartiles of the pair ratios (linear between ranks), the spread read beside the median. */
  q1: z.number(),
  q3: z.number(),
  max: z.number(),
  pairs: z.number().int().positive(),
  /** Every pair's ratio, in the order measured. */
  ratios: z.array(z.number()),
});
export type PairedRatio = z.infer<typeof PairedRatio>;

/** Linear interpolation between closest ranks (p in [0, 1]) of an ascending list. */
export function quantileOfSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0 || !(p >= 0 && p <= 1)) throw new Error(`quantile ${p} of ${sorted.length} values`);
  const at = p * (sorted.length - 1);
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

/** Median of the per-pair ratios ours / raw, and their spread. Throws on no pair or a rate that is not a positive number: a ratio of nothing is not a figure. */
export function pairedRatio(pairs: readonly RatePair[]): PairedRatio {
  if (pairs.length === 0) throw new Error('a paired ratio needs at least one pair');
  const ratios = pairs.map((p, i) => {
    if (!(p.raw > 0 && p.ours > 0 && Number.isFinite(p.raw) && Number.isFinite(p.ours))) throw new Error(`pair ${i + 1}: rates must be positive and finite, got raw ${p.raw}, ours ${p.ours}`);
    return p.ours / p.raw;
  });
  const sorted = [...ratios].sort((a, b) => a - b);
  return PairedRatio.parse({
    median: quantileOfSorted(sorted, 0.5),
    min: sorted[0],
    q1: quantileOfSorted(sorted, 0.25),
    q3: quantileOfSorted(sorted, 0.75),
    max: sorted[sorted.length - 1],
    pairs: pairs.length,
    ratios,
  });
}

/**
 * The order of the cases in interleaved group `index` (from 0): as given in even groups,
 * reversed in odd ones. With two cases raw goes first in every other pair and ours in the rest
 * (a case that always ran second would always meet the disk and caches the first one left);
 * with ours in the middle of three, it runs next to each of the other two in every group.
 */
export function interleavedOrder<T>(cases: readonly T[], index: number): T[] {
  if (!Number.isInteger(index) || index < 0) throw new Error(`group index ${index}`);
  return index % 2 === 0 ? [...cases] : [...cases].reverse();
}

/** "0.412 (0.38-0.45 over 18 pairs)": the figure and its spread, for the text output. */
export function pairedText(r: PairedRatio, digits = 3): string {
  return `${r.median.toFixed(digits)} (${r.min.toFixed(digits)}-${r.max.toFixed(digits)}, IQR ${r.q1.toFixed(digits)}-${r.q3.toFixed(digits)}, ${r.pairs} pair${r.pairs === 1 ? '' : 's'})`;
}

/**
 * For a ratio that is not an aim but has the same physical bound (ours does strictly more work
 * than raw, so at most `atMost`): '' when every pair is within it, else what is beyond, so an
 * informational figure cannot be impossible in silence.
 */
export function beyondBoundText(r: PairedRatio, atMost: number): string {
  if (r.median > atMost) return ` - beyond ${atMost}, impossible: noise, not the code`;
  const beyond = r.ratios.filter((x) => x > atMost).length;
  return beyond === 0 ? '' : `; ${beyond} of ${r.pairs} pairs beyond ${atMost}, impossible: noise in those pairs`;
}
