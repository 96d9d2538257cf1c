// The scorecard by wake: the timeline, the claims and the action chains are each shown as one
// collapsible block per wake (and per time between two wakes), all open when the timeline is short
// enough to read in one scroll and all closed otherwise (a followed link opens its block).
import { plural } from './scorecard-bound-text.js';
import type { ScorecardInput } from './scorecard-input.js';
import { htmlText } from './visible-text.js';

/** A timeline of at most this many entries reads in one scroll: its wake blocks start open; a longer one starts collapsed. */
export const OPEN_TIMELINE_UP_TO_ENTRIES = 150;

/** Whether the page's wake blocks start open. */
export const blocksStartOpen = (input: ScorecardInput): boolean => input.timeline.length <= OPEN_TIMELINE_UP_TO_ENTRIES;

/** A wake as an entry, card or report names it ("between wakes" when outside one). */
export const wakeText = (wake: string | null): string => (wake === null ? 'between wakes' : wake);
/** A wake as a block's heading starts. */
export const wakeTitle = (wake: string | null): string => (wake === null ? 'Between wakes' : `Wake ${wake}`);

/** Consecutive items of one wake (claims and chains come in timeline order), as [wake, items] runs. */
function byWake<T extends { readonly wake: string | null }>(items: readonly T[]): Array<{ wake: string | null; items: Array<{ item: T; k: number }> }> {
  const out: Array<{ wake: string | null; items: Array<{ item: T; k: number }> }> = [];
  items.forEach((item, k) => {
    const last = out[out.length - 1];
    if (last !== undefined && last.wake === item.wake) last.items.push({ item, k });
    else out.push({ wake: item.wake, items: [{ item, k }] });
  });
  return out;
}

/** One collapsible group per wake, open when the timeline is short (as its blocks). */
export function wakeGroups<T extends { readonly wake: string | null }>(input: ScorecardInput, items: readonly T[], what: [string, string], listClass: string, card: (item: T, k: number) => string): string[] {
  const open = blocksStartOpen(input);
  return byWake(items).flatMap((g) => [
    `<details class="by-wake"${open ? ' open' : ''}><summary>${htmlText(`${wakeTitle(g.wake)}: ${plural(g.items.length, what[0], what[1])}`)}</summary>`,
    `<ul class="${listClass}">`,
    ...g.items.map(({ item, k }) => card(item, k)),
    '</ul>',
    '</details>',
  ]);
}
