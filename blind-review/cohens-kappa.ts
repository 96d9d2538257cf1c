// Cohen's kappa (Cohen 1960) of two raters over the same items, each item given one category by
// each: κ = (p_o − p_e) / (1 − p_e), where p_o is the share of items both put in the same category
// and p_e = Σ_c p_1(c) · p_2(c) the share expected by chance from each rater's own category
// shares. Unweighted: every two different categories disagree equally. Undefined (null, said why)
// without items, and when p_e = 1: both raters put every item in one and the same category, so
// chance alone explains the (complete) agreement and the ratio is 0 / 0.
import { z } from 'zod';

export const Kappa = z.strictObject({
  /** Items both raters rated. */
  items: z.number().int().min(0),
  /** p_o: the share they put in the same category; null without items. */
  observed: z.number().min(0).max(1).nullable(),
  /** p_e: the share expected by chance. */
  expected: z.number().min(0).max(1).nullable(),
  /** κ, in [−1, 1]; null when undefined (see `note`). */
  kappa: z.number().min(-1).max(1).nullable(),
  /** Why κ is null, or '' when it is not. */
  note: z.string(),
});
export type Kappa = z.infer<typeof Kappa>;

/** Fixed decimals, so the same ratings always print and compare the same. */
function round6(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

/** κ of the pairs (rater 1's category, rater 2's category), one pair an item. */
export function cohensKappa(pairs: ReadonlyArray<readonly [string, string]>): Kappa {
  const n = pairs.length;
  if (n === 0) return { items: 0, observed: null, expected: null, kappa: null, note: 'no item was rated by both' };
  const first = new Map<string, number>();
  const second = new Map<string, number>();
  let same = 0;
  for (const [a, b] of pairs) {
    first.set(a, (first.get(a) ?? 0) + 1);
    second.set(b, (second.get(b) ?? 0) + 1);
    if (a === b) same += 1;
  }
  const observed = same / n;
  let expected = 0;
  for (const [category, count] of first) expected += (count / n) * ((second.get(category) ?? 0) / n);
  // p_e = 1 only when both raters used one category, the same one (then p_o = 1 too).
  if (Math.abs(1 - expected) < 1e-12) return { items: n, observed: round6(observed), expected: 1, kappa: null, note: `undefined: both put all ${n} item(s) in one category (${[...first.keys()][0]}), so chance explains the agreement` };
  const kappa = (observed - expected) / (1 - expected);
  return { items: n, observed: round6(observed), expected: round6(expected), kappa: round6(Math.max(-1, Math.min(1, kappa))), note: '' };
}
