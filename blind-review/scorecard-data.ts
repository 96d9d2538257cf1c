// What the reviewer scorecard page shows: one package's parsed contents. The exporter builds it,
// scorecard-html.ts renders it into a self-contained page.
import type { ActionChains, ClaimsWithEvidence, ExpectedCheckpoints, Interventions, PackageManifest, RecoveryReports, StateCheckpoints, TimelineEntry } from './package-format.js';

export interface ScorecardData {
  readonly manifest: PackageManifest;
  readonly timeline: readonly TimelineEntry[];
  readonly checkpoints: StateCheckpoints;
  readonly interventions: Interventions;
  readonly claims: ClaimsWithEvidence;
  readonly actions: ActionChains;
  readonly recovery: RecoveryReports;
  /** What each scored wake's checkpoint is compared with (expected_checkpoints.json). */
  readonly expected: ExpectedCheckpoints;
}
