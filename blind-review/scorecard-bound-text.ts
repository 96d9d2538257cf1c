// What the scorecard says about its byte bound (scorecard-budget.ts): in the overview, what the
// page shows of the run and where the rest is; in place of what a list leaves out, how much, which
// refs and the package file that holds them. With the counting words those sentences use.
import { PACKAGE_FILES } from './package-format.js';
import { MAX_SCORECARD_BYTES } from './scorecard-budget.js';
import type { ScorecardInput } from './scorecard-input.js';
import { shownEntries, type Shown } from './scorecard-shown.js';
import { htmlText } from './visible-text.js';

/** The thousands separated, for a reader: 1,048,576. */
export const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
export const plural = (n: number, one: string, many: string): string => `${grouped(n)} ${n === 1 ? one : many}`;

/** What the page shows of the run, and where the rest is: stated whether or not the bound was hit. */
export function pageBoundText(input: ScorecardInput, shown: Shown): string {
  const entries = shownEntries(shown);
  const bound = `This page is held to at most ${grouped(MAX_SCORECARD_BYTES)} bytes.`;
  if (entries === input.timeline.length && shown.claims === input.claims.length && shown.actions === input.actions.length) return `${bound} Everything of this package is shown.`;
  return `${bound} This run is larger: the page shows ${grouped(entries)} of ${plural(input.timeline.length, 'timeline entry', 'timeline entries')} (the first ones of every wake), ${grouped(shown.claims)} of ${plural(input.claims.length, 'claim', 'claims')} and ${grouped(shown.actions)} of ${plural(input.actions.length, 'action chain', 'action chains')}. What is left out is named where it would be, and is in the package's files: ${PACKAGE_FILES.timeline} (every entry, one a line), ${PACKAGE_FILES.claims} and ${PACKAGE_FILES.actions}. An entry left out reads "(not shown here)" where it is cited.`;
}

/** "3 more entries of this wake (E0412–E0414) are not shown …": what a list leaves out, and where it is. */
export function leftOutText(count: number, what: [string, string], refs: readonly string[], where: string, file: string): string {
  const range = refs.length === 0 ? '' : refs.length === 1 ? ` (${refs[0]})` : ` (${refs[0]}–${refs[refs.length - 1]})`;
  return `${plural(count, what[0], what[1])}${range} ${count === 1 ? 'is' : 'are'} not shown ${where}: this page is held to ${grouped(MAX_SCORECARD_BYTES)} bytes. ${count === 1 ? 'It is' : 'They are'} in ${file} of this package.`;
}

/** leftOutText as the paragraph standing where the left-out items would be. */
export function leftOutParagraph(count: number, what: [string, string], refs: readonly string[], where: string, file: string): string {
  return `<p class="left-out">${htmlText(leftOutText(count, what, refs, where, file))}</p>`;
}
