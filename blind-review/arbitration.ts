// `npm run review -- arbitrate PKG_DIR FILE` (spec §8.5: "评审分差超过 15 分时进入第三方仲裁"):
// a third person's scorecard for an instance flagged for arbitration. Stored verbatim as
// review/arbitration/<blind id>.json; consolidation (review-state.ts) then takes the arbiter's
// totals, dimensions and hard-failure decisions for that instance, stated as "decided by
// arbitration" — the disagreement is decided, never averaged away.
//
// Refused: an instance that is not flagged (incomplete, or its reviewers agree), an arbiter who
// is one of that instance's reviewers, a second different arbitration of the same instance, and
// anything after the lock.
import path from 'node:path';
import type { HashString } from '../schema/hash.js';
import type { BlindId } from './package-format.js';
import {
  arbitrationFileName,
  consolidate,
  openReviewPackage,
  publishNewFile,
  readReviewFolder,
  readScoreArgument,
  refuseIfLocked,
  REVIEW_FILES,
  reviewerKey,
  ReviewRefusal,
  type InstanceState,
  type ReviewState,
} from './review-state.js';

export interface ArbitrationResult {
  readonly source: string;
  readonly stored_as: string;
  readonly blind_id: BlindId;
  readonly arbiter: string;
  readonly sha256: HashString;
  /** 'unchanged': this very scorecard already decided the instance; nothing was written. */
  readonly outcome: 'arbitrated' | 'unchanged';
  /** The disagreement it decided, as the state stated it before. */
  readonly decided: string;
  readonly instance: InstanceState;
  readonly state: ReviewState;
}

export function arbitrate(pkgDir: string, source: string): ArbitrationResult {
  const pkg = openReviewPackage(pkgDir);
  refuseIfLocked(pkg, 'arbitration');
  const read = readScoreArgument(source);
  if ('problem' in read) throw new ReviewRefusal('invalid-score-file', `arbitration refused: ${read.problem}`);
  const { scores, sha256, bytes } = read;
  if (!pkg.commitment.blind_ids.includes(scores.blind_id)) {
    throw new ReviewRefusal('unknown-blind-id', `arbitration refused: ${source} names ${scores.blind_id}, which is not one of the packages of the signed commitment (${pkg.commitment.blind_ids.join(', ')})`);
  }
  const before = consolidate(pkg, readReviewFolder(pkg));
  const instance = before.instances.find((i) => i.blind_id === scores.blind_id)!;
  const rel = `${REVIEW_FILES.arbitration}/${arbitrationFileName(scores.blind_id)}`;
  const base = { source, stored_as: rel, blind_id: scores.blind_id, arbiter: scores.reviewer, sha256 };

  if (instance.status === 'decided_by_arbitration') {
    const present = instance.arbiter!;
    if (present.sha256 === sha256) return { ...base, outcome: 'unchanged', decided: instance.summary, instance, state: before };
    throw new ReviewRefusal(
      'conflicting-arbitration',
      `arbitration refused: ${scores.blind_id} was already decided by ${present.reviewer} (review/${rel}, ${present.sha256}; this file ${sha256}); an arbitration is never replaced`,
    );
  }
  if (instance.status !== 'arbitration_required') {
    throw new ReviewRefusal('not-flagged', `arbitration refused: ${scores.blind_id} is not flagged for arbitration — it is ${instance.summary}; arbitration decides a score gap above 15 points or a differing hard-failure decision between ≥ 2 reviewers, nothing else`);
  }
  const reviewers = new Set(instance.reviewers.map((r) => reviewerKey(r.reviewer)));
  if (reviewers.has(reviewerKey(scores.reviewer))) {
    throw new ReviewRefusal('arbiter-is-reviewer', `arbitration refused: ${JSON.stringify(scores.reviewer)} is one of the reviewers of ${scores.blind_id} (${instance.reviewers.map((r) => r.reviewer).join(', ')}); the arbiter must be a third person`);
  }
  if (!publishNewFile(path.join(pkg.reviewDir, rel), bytes)) {
    throw new ReviewRefusal('conflicting-arbitration', `review/${rel} appeared while arbitrating (a concurrent arbitration?); run the command again to compare it`);
  }
  const state = consolidate(pkg, readReviewFolder(pkg));
  return { ...base, outcome: 'arbitrated', decided: instance.summary, instance: state.instances.find((i) => i.blind_id === scores.blind_id)!, state };
}
