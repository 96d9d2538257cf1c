// `npm run review -- lock PKG_DIR` (spec §8.5: "组别在评分、硬失败判断…全部锁定后解盲"): signs
// the consolidated scores and hard-failure decisions of every instance, with the sha256 of every
// file of the review folder they follow from, into review/lock.dsse.json (DSSE, controller key).
// Refused while an instance is incomplete or awaits arbitration; a lock is never replaced.
//
// verifyReviewLock is what unblinding relies on: the lock verifies with the package's
// controller.pub, was made against the package's current commitment, still covers exactly the
// files in review/ (a scorecard changed, added or removed after the lock is refused), and its
// signed results still follow from those files.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../design/prereg.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { signDsse, verifyDsse } from '../schema/dsse.js';
import { keyIdOf, toHex, type Ed25519KeyPair } from '../schema/ed25519-keys.js';
import { hashText, HashString } from '../schema/hash.js';
import { BLIND_REVIEW_FILES, BlindCommitment } from './blind-map.js';
import { BlindId } from './package-format.js';
import {
  consolidate,
  DECIDED_SCORE_FIELDS,
  describeDisagreements,
  DimensionWeights,
  MAX_SCORE_GAP_POINTS,
  MIN_REVIEWERS,
  openReviewPackage,
  publishNewFile,
  readBounded,
  readReviewFolder,
  REVIEW_FILES,
  ReviewRefusal,
  parseJsonBytes,
  Points,
  type ReviewFolder,
  type ReviewPackage,
  type ReviewState,
} from './review-state.js';

export const REVIEW_LOCK_PAYLOAD_TYPE = 'application/vnd.digital-subject.review-lock+json';
export const REVIEW_LOCK_FORMAT_VERSION = '1.0.0';
const MAX_LOCK_BYTES = 4 * 1024 * 1024;

const LockedReviewer = z.strictObject({ reviewer: z.string(), file: z.string(), sha256: HashString, total: Points });

const { decided_by, ...decidedScores } = DECIDED_SCORE_FIELDS;
export const LockedInstance = z.strictObject({
  blind_id: BlindId,
  decided_by,
  reviewers: z.array(LockedReviewer).min(MIN_REVIEWERS),
  arbiter: LockedReviewer.nullable(),
  /** What the arbitration decided ("score gap 20; hard-failure decision differs: …"); null without one. */
  arbitration_reason: z.string().nullable(),
  ...decidedScores,
});
export type LockedInstance = z.infer<typeof LockedInstance>;

/** The signed body of review/lock.dsse.json. */
export const ReviewLock = z.strictObject({
  review_lock_format_version: z.literal(REVIEW_LOCK_FORMAT_VERSION),
  /** The blinding commitment (blind-map.ts) the review was done against, the packages it covers and the pre-registration it fixed: the commitment's own fields. */
  commitment: BlindCommitment.shape.commitment,
  blind_ids: BlindCommitment.shape.blind_ids,
  prereg_sha256: BlindCommitment.shape.prereg_sha256,
  weights: DimensionWeights,
  /** The rules applied (spec §8.5), so that a reader need not know this code's constants. */
  rules: z.strictObject({ min_reviewers: z.literal(MIN_REVIEWERS), arbitration_above_gap_points: z.literal(MAX_SCORE_GAP_POINTS), hard_failure_disagreement: z.literal('arbitration') }),
  /** Every file of review/ the results follow from (review.json, scores/*, arbitration/*), sorted by path. */
  files: z.array(z.strictObject({ path: z.string(), sha256: HashString })).min(1).max(2 * 99 * 16 + 1),
  instances: z.array(LockedInstance).min(1).max(99),
  locked_at: z.iso.datetime(),
});
export type ReviewLock = z.infer<typeof ReviewLock>;

export interface LockResult {
  readonly lock_file: string;
  readonly lock: ReviewLock;
  readonly keyid: string;
}

function lockedInstances(state: ReviewState): LockedInstance[] {
  return state.instances.map((i) => {
    const c = i.consolidated!;
    const reason = i.status === 'decided_by_arbitration' ? describeDisagreements(i.disagreements) : null;
    return { blind_id: i.blind_id, decided_by: c.decided_by, reviewers: i.reviewers, arbiter: i.arbiter, arbitration_reason: reason, score: c.score, dimensions: c.dimensions, hard_failures: c.hard_failures };
  });
}

export function lockReview(pkgDir: string, keys: Ed25519KeyPair, lockedAt: string): LockResult {
  const pkg = openReviewPackage(pkgDir);
  const lockFile = path.join(pkg.reviewDir, REVIEW_FILES.lock);
  if (existsSync(lockFile)) throw new ReviewRefusal('already-locked', `${lockFile} exists: the review is already locked and a lock is never replaced; unblind it with \`npm run review -- unblind ${pkg.pkgDir} --study STUDY_DIR\``);
  if (toHex(keys.publicKey) !== toHex(pkg.publicKey)) {
    throw new ReviewRefusal('wrong-key', `the controller key given (keyid ${keyIdOf(keys.publicKey).slice(0, 16)}…) is not the key of this package's ${BLIND_REVIEW_FILES.publicKey} (keyid ${keyIdOf(pkg.publicKey).slice(0, 16)}…), which signed its commitment; a lock by another key could not be verified at unblinding: use the --key-dir of the controller that exported the package`);
  }
  const folder = readReviewFolder(pkg);
  const state = consolidate(pkg, folder);
  if (!state.ready_to_lock || folder.settings === null) {
    const waiting = state.instances.filter((i) => i.status === 'incomplete' || i.status === 'arbitration_required');
    throw new ReviewRefusal(
      'not-ready',
      `lock refused: ${state.counts.incomplete} instance(s) incomplete and ${state.counts.arbitration_required} awaiting arbitration; import the missing scorecards (\`npm run review -- import\`) and arbitrate the flagged instances (\`npm run review -- arbitrate\`) first`,
      waiting.map((i) => `${i.blind_id}: ${i.summary}`),
    );
  }
  const lock = ReviewLock.parse({
    review_lock_format_version: REVIEW_LOCK_FORMAT_VERSION,
    commitment: pkg.commitment.commitment,
    blind_ids: pkg.commitment.blind_ids,
    prereg_sha256: folder.settings.prereg_sha256,
    weights: folder.settings.weights,
    rules: { min_reviewers: MIN_REVIEWERS, arbitration_above_gap_points: MAX_SCORE_GAP_POINTS, hard_failure_disagreement: 'arbitration' },
    files: folder.files,
    instances: lockedInstances(state),
    locked_at: lockedAt,
  });
  const envelope = signDsse(REVIEW_LOCK_PAYLOAD_TYPE, lock, keys.secretKey, keys.publicKey);
  if (!publishNewFile(lockFile, `${JSON.stringify(envelope, null, 2)}\n`)) {
    throw new ReviewRefusal('already-locked', `${lockFile} appeared while locking (a concurrent lock?): a lock is never replaced`);
  }
  return { lock_file: lockFile, lock, keyid: keyIdOf(keys.publicKey) };
}

export interface VerifiedLock {
  readonly lock: ReviewLock;
  readonly lock_sha256: HashString;
  readonly pkg: ReviewPackage;
  /** The review folder the lock was checked against (its scorecards are the locked ones). */
  readonly folder: ReviewFolder;
}

/**
 * The lock of PKG_DIR, checked as unblinding needs it; ReviewRefusal ('not-locked', 'lock-invalid',
 * 'changed-after-lock', 'bad-commitment') naming what differs otherwise.
 */
export function verifyReviewLock(pkgDir: string): VerifiedLock {
  const pkg = openReviewPackage(pkgDir);
  const lockFile = path.join(pkg.reviewDir, REVIEW_FILES.lock);
  if (!existsSync(lockFile)) {
    throw new ReviewRefusal('not-locked', `the review of ${pkg.pkgDir} is not locked (${lockFile} does not exist); groups are revealed only after every score and hard-failure decision is locked: run \`npm run review -- lock ${pkg.pkgDir}\` first`);
  }
  const bytes = readBounded(lockFile, MAX_LOCK_BYTES);
  const verified = verifyDsse(parseJsonBytes(bytes, lockFile, 'lock-invalid'), REVIEW_LOCK_PAYLOAD_TYPE, pkg.publicKey);
  if (!verified.ok) throw new ReviewRefusal('lock-invalid', `${lockFile} does not verify with the package's ${BLIND_REVIEW_FILES.publicKey}: ${verified.reason}; the lock was altered or signed by another key`);
  const body = ReviewLock.safeParse(verified.body);
  if (!body.success) throw new ReviewRefusal('lock-invalid', `${lockFile} is signed but its body is not a review lock`, describeIssues(body.error));
  const lock = body.data;
  if (lock.commitment !== pkg.commitment.commitment || canonicalJson(lock.blind_ids) !== canonicalJson(pkg.commitment.blind_ids)) {
    throw new ReviewRefusal('lock-invalid', `${lockFile} was made against the commitment ${lock.commitment}, but the package's signed commitment is now ${pkg.commitment.commitment}${canonicalJson(lock.blind_ids) !== canonicalJson(pkg.commitment.blind_ids) ? ' (with other blind ids)' : ''}; the commitment was replaced after the review`);
  }
  const folder = readReviewFolder(pkg);
  const now = new Map(folder.files.map((f) => [f.path, f.sha256]));
  const then = new Map(lock.files.map((f) => [f.path, f.sha256]));
  const differences: string[] = [];
  for (const [p, sha] of then) {
    const current = now.get(p);
    if (current === undefined) differences.push(`review/${p}: removed after the lock (locked ${sha})`);
    else if (current !== sha) differences.push(`review/${p}: changed after the lock (locked ${sha}, now ${current})`);
  }
  for (const p of now.keys()) if (!then.has(p)) differences.push(`review/${p}: added after the lock`);
  if (differences.length > 0) {
    throw new ReviewRefusal('changed-after-lock', `the review folder no longer matches its lock (${differences.length} difference(s)): the locked scores cannot be trusted; restore the files as locked (their sha256 are in ${lockFile})`, differences);
  }
  const recomputed = lockedInstances(consolidate(pkg, folder));
  if (canonicalJson(recomputed) !== canonicalJson(lock.instances)) {
    throw new ReviewRefusal('lock-invalid', `${lockFile} signs results that do not follow from the files it covers (same files, other consolidation): the lock was made by another version of the review rules; compare its instances with \`npm run review -- status ${pkg.pkgDir} --json\``);
  }
  return { lock, lock_sha256: hashText(bytes), pkg, folder };
}
