// What the scorecard page is given, checked before anything is rendered (scorecard-html.ts): the
// package data in its schemas, a timeline of bounded length with unique refs (the page's link
// targets), and a manifest whose dimensions and hard failures make a form the review flow accepts.
import { z } from 'zod';
import { HARD_FAILURE_IDS } from '../design/prereg.js';
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { ActionChains, ClaimsWithEvidence, ExpectedCheckpoints, Interventions, PackageManifest, RecoveryReports, StateCheckpoints, TimelineEntry } from './package-format.js';
import type { ScorecardData } from './scorecard-data.js';

/**
 * 72 simulated hours produce a few thousand entries. The page shows what fits its byte bound of any
 * timeline; this bound only keeps the measuring of every entry (to fit them) bounded: more is refused.
 */
export const MAX_TIMELINE_ENTRIES = 200_000;

const DIMENSION_SET: ReadonlySet<string> = new Set(DIMENSIONS);
const HARD_FAILURE_SET: ReadonlySet<string> = new Set(HARD_FAILURE_IDS);

export const ScorecardInput = z.strictObject({
  manifest: PackageManifest,
  timeline: z.array(TimelineEntry).max(MAX_TIMELINE_ENTRIES),
  checkpoints: StateCheckpoints,
  interventions: Interventions,
  claims: ClaimsWithEvidence,
  actions: ActionChains,
  recovery: RecoveryReports,
  expected: ExpectedCheckpoints,
});
export type ScorecardInput = z.infer<typeof ScorecardInput>;

/** Fails loudly on a package the page could not show faithfully or whose scores could not be saved valid. */
export function checkScorecardInput(data: ScorecardData): ScorecardInput {
  if (data.timeline.length > MAX_TIMELINE_ENTRIES) throw new RangeError(`the timeline has ${data.timeline.length} entries; the scorecard shows at most ${MAX_TIMELINE_ENTRIES}`);
  const input = ScorecardInput.parse(data);
  const m = input.manifest;
  // ReviewerScores needs every dimension and every hard-failure id exactly once; a manifest
  // without them would give the reviewer a form whose file the review flow then refuses.
  const dims = m.dimensions.map((d) => d.name);
  if (dims.length !== DIMENSION_SET.size || new Set(dims).size !== dims.length) throw new Error(`manifest.dimensions must list each of ${DIMENSIONS.join(', ')} exactly once; it lists ${dims.join(', ') || 'none'}`);
  const failures = m.hard_failures.map((h) => h.id);
  if (failures.length !== HARD_FAILURE_SET.size || new Set(failures).size !== failures.length) throw new Error(`manifest.hard_failures must list each of ${HARD_FAILURE_IDS.join(', ')} exactly once; it lists ${failures.join(', ') || 'none'}`);
  if (m.timeline_entries !== input.timeline.length) throw new Error(`manifest.timeline_entries is ${m.timeline_entries} but the timeline has ${input.timeline.length} entries`);
  const seen = new Set<string>();
  for (const e of input.timeline) {
    if (seen.has(e.ref)) throw new Error(`timeline ref ${e.ref} appears twice; refs are the page's link targets and must be unique`);
    seen.add(e.ref);
  }
  return input;
}
