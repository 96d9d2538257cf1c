// What the scorecard shows of the parts that grow with the run (scorecard-budget.ts fits them to
// the page's bound): the timeline cut into blocks, one per wake (and per time between two wakes),
// and how many of each block's entries, of the claims and of the chains the page shows.
import type { TimelineEntry } from './package-format.js';

/** What the page shows of the parts that grow with the run: a prefix of each wake's entries, of the claims, of the chains. */
export interface Shown {
  readonly blocks: readonly number[];
  readonly claims: number;
  readonly actions: number;
}

/** A run of timeline entries of one wake (or of the time between two wakes), [start, end). */
export interface Block {
  readonly start: number;
  readonly end: number;
  readonly wake: string | null;
}

export function blocksOf(timeline: readonly TimelineEntry[]): Block[] {
  const out: Block[] = [];
  for (let i = 0; i < timeline.length; ) {
    const wake = timeline[i]!.wake;
    let j = i;
    while (j < timeline.length && timeline[j]!.wake === wake) j++;
    out.push({ start: i, end: j, wake });
    i = j;
  }
  return out;
}

/** Timeline entries shown, over every block. */
export function shownEntries(shown: Shown): number {
  return shown.blocks.reduce((s, n) => s + n, 0);
}
