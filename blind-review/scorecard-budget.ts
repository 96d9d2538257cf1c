// How much of a package the reviewer's page shows (issue 32: one scorecard was 774 KB and 79,476
// px tall). The page is held to MAX_SCORECARD_BYTES; what does not fit is left out visibly, in
// place, and stays in the package's JSON files. The parts that grow with the run — the timeline
// of each wake, the claims, the action chains — share what the fixed parts (overview,
// instructions, checkpoints, interventions, recovery, the form) leave, by weighted water-filling:
// every list gets its share (the timeline half, split equally among the wakes; the claims and the
// chains a quarter each), a list smaller than its share is shown whole and its unused bytes go to
// the others. Each list then shows its longest prefix within its share, so every wake shows its
// first entries rather than the first wakes showing everything and the last nothing.

/** The most bytes (UTF-8) a reviewer_scorecard.html may have. */
export const MAX_SCORECARD_BYTES = 1024 * 1024;

export interface BudgetList {
  /** The size in bytes of each item, in the order they would be shown. */
  readonly sizes: readonly number[];
  /** Its part of the budget relative to the others (a list of weight 2 gets twice the share of one of weight 1). */
  readonly weight: number;
}

/** Items shown per list (a prefix of each), within `budgetBytes` in all. */
export function fitLists(lists: readonly BudgetList[], budgetBytes: number): number[] {
  const totals = lists.map((l) => l.sizes.reduce((s, n) => s + n, 0));
  const allowance = new Array<number>(lists.length).fill(0);
  let left = Math.max(0, budgetBytes);
  let open = lists.map((_, i) => i).filter((i) => totals[i]! > 0 && lists[i]!.weight > 0);
  // Weighted water-filling: each round either settles every open list (none fits its share) or
  // settles at least one that fits whole, so it ends within lists.length rounds.
  for (let round = 0; round <= lists.length && open.length > 0; round += 1) {
    const weights = open.reduce((s, i) => s + lists[i]!.weight, 0);
    const shareOf = (i: number): number => (left * lists[i]!.weight) / weights;
    const fitting = open.filter((i) => totals[i]! <= shareOf(i));
    if (fitting.length === 0) {
      for (const i of open) allowance[i] = shareOf(i);
      break;
    }
    for (const i of fitting) {
      allowance[i] = totals[i]!;
      left -= totals[i]!;
    }
    open = open.filter((i) => !fitting.includes(i));
  }
  return lists.map((l, i) => {
    let used = 0;
    let n = 0;
    while (n < l.sizes.length && used + l.sizes[n]! <= allowance[i]!) used += l.sizes[n++]!;
    return n;
  });
}
