// What an export says about all its packages together (never per package: a per-package count of
// omitted plan decisions would tell which packages re-planned, a per-package count of cut pages
// which runs were longer): what the normalizer left out or rewrote, and what the scorecard pages
// left out to stay within their byte bound (scorecard-budget.ts).
import type { NormalizeStats } from './event-normalizer.js';
import { OMISSIONS, type OmissionReason } from './omissions.js';
import { PACKAGE_FILES } from './package-format.js';
import { MAX_SCORECARD_BYTES } from './scorecard-budget.js';

/** What the scorecard pages left out to stay within their bound, summed over the export. */
export interface PagesLeftOut {
  pages: number;
  timeline: number;
  claims: number;
  actions: number;
}

/** The export's note when scorecard pages reached their bound (none when none did): summed, never per package. */
export function scorecardBoundNote(left: PagesLeftOut, packages: number): string[] {
  if (left.pages === 0) return [];
  return [
    `${left.pages} of ${packages} scorecard page(s) reached their bound of ${MAX_SCORECARD_BYTES} bytes and leave out ${left.timeline} timeline entr${left.timeline === 1 ? 'y' : 'ies'}, ${left.claims} claim(s) and ${left.actions} action chain(s) in all: each page names what it leaves out where it would be, and every one is in the package's ${PACKAGE_FILES.timeline}, ${PACKAGE_FILES.claims} and ${PACKAGE_FILES.actions}`,
  ];
}

/** What the normalizer left out, cut or rewrote, summed over the packages. */
export function statsNotes(stats: NormalizeStats, packages: number): string[] {
  const omitted = (Object.keys(OMISSIONS) as OmissionReason[]).filter((r) => stats.omitted[r] > 0).map((r) => `${stats.omitted[r]} × ${r} (${OMISSIONS[r]})`);
  return [
    `over all ${packages} package(s), events left out of the timelines: ${omitted.length > 0 ? omitted.join('; ') : 'none'}`,
    ...(stats.textsCut > 0 ? [`${stats.textsCut} text(s) cut to their bound, each saying so ("… [cut: N more characters]")`] : []),
    ...(stats.refsToOmittedEvents > 0 ? [`${stats.refsToOmittedEvents} reference(s) to left-out or unknown events dropped from refs`] : []),
    ...(stats.idsInTextHidden > 0 ? [`${stats.idsInTextHidden} id(s) in text that name no timeline entry written as [id]`] : []),
    ...(stats.timesFromNeighbour > 0 ? [`${stats.timesFromNeighbour} write refusal(s) stamped by the writer's wall clock given the simulated time of the event before them`] : []),
  ];
}
