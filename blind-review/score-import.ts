// `npm run review -- import PKG_DIR FILES…` (spec §8.5): copies reviewers' scorecards into
// PKG_DIR/review/scores/ and recomputes the consolidated state (review-state.ts).
//
// All or nothing: every file is checked first (a scorecard; a blind id of the signed commitment;
// no different scorecard of the same reviewer for the same instance; the instance not already
// decided by arbitration; the review not locked), and one bad file means nothing is written, with
// every problem listed. A scorecard identical to the one stored is a no-op that says so.
import path from 'node:path';
import type { HashString } from '../schema/hash.js';
import type { BlindId } from './package-format.js';
import {
  consolidate,
  openReviewPackage,
  publishNewFile,
  readReviewFolder,
  readScoreArgument,
  refuseIfLocked,
  REVIEW_FILES,
  REVIEW_LIMITS,
  ReviewInputError,
  reviewerKey,
  ReviewRefusal,
  scoreFileName,
  settingsFor,
  settingsText,
  type ReviewProblem,
  type ReviewSettings,
  type ReviewState,
} from './review-state.js';

export interface ImportOptions {
  /** --prereg: the pre-registration the study used; null = the recorded one, or the bundled default at the first import. */
  readonly preregFile: string | null;
  /**
   * The bundled pre-registration, read at the first import when no --prereg is given. Given by the
   * command (cli/run-defaults.ts DEFAULT_PREREG): the bundle is the commands' (cli/).
   */
  readonly defaultPreregFile: string;
  /** Wall clock, for review.json's started_at at the first import. */
  readonly now: string;
}

export interface ImportedFile {
  readonly source: string;
  /** Relative to review/. */
  readonly stored_as: string;
  readonly blind_id: BlindId;
  readonly reviewer: string;
  readonly sha256: HashString;
  /** 'unchanged': the very same scorecard was imported before; nothing was written. */
  readonly outcome: 'imported' | 'unchanged';
}

export interface ImportResult {
  readonly files: readonly ImportedFile[];
  readonly settings: ReviewSettings;
  /** True when this import started the review (wrote review.json). */
  readonly started: boolean;
  readonly state: ReviewState;
}

export function importScores(pkgDir: string, sources: readonly string[], options: ImportOptions): ImportResult {
  if (sources.length === 0) throw new ReviewInputError('give at least one scorecard file to import');
  if (sources.length > REVIEW_LIMITS.maxFilesPerImport) throw new ReviewInputError(`${sources.length} files in one import, more than ${REVIEW_LIMITS.maxFilesPerImport}; import them in several calls`);
  const pkg = openReviewPackage(pkgDir);
  refuseIfLocked(pkg, 'importing scores');
  const folder = readReviewFolder(pkg);
  const { settings, isNew } = settingsFor(pkg, folder.settings, options.preregFile, options.defaultPreregFile, options.now);
  const before = consolidate(pkg, folder);
  const committed = new Set(pkg.commitment.blind_ids);
  const stored = new Map(folder.scores.map((s) => [s.file, s]));
  const problems: { problem: ReviewProblem; line: string }[] = [];
  const refuse = (problem: ReviewProblem, line: string): void => {
    problems.push({ problem, line });
  };
  const planned = new Map<string, { source: string; sha256: HashString; bytes: Buffer }>();
  const files: ImportedFile[] = [];
  const newReviewers = new Map<string, Set<string>>();

  for (const source of sources) {
    const read = readScoreArgument(source);
    if ('problem' in read) {
      refuse('invalid-score-file', read.problem);
      continue;
    }
    const { scores, sha256, bytes } = read;
    if (reviewerKey(scores.reviewer) === '') {
      refuse('invalid-score-file', `${source}: the reviewer's name is blank; the scorecard must name who scored`);
      continue;
    }
    if (!committed.has(scores.blind_id)) {
      refuse('unknown-blind-id', `${source}: blind id ${scores.blind_id} is not one of the ${committed.size} packages of the signed commitment (${pkg.commitment.blind_ids.join(', ')}); was the scorecard saved from another export?`);
      continue;
    }
    const rel = `${REVIEW_FILES.scores}/${scoreFileName(scores.blind_id, scores.reviewer)}`;
    const existing = stored.get(rel);
    if (existing) {
      if (existing.sha256 === sha256) {
        files.push({ source, stored_as: rel, blind_id: scores.blind_id, reviewer: scores.reviewer, sha256, outcome: 'unchanged' });
      } else {
        refuse(
          'conflicting-score',
          `${source}: ${JSON.stringify(scores.reviewer)} already has a different scorecard for ${scores.blind_id} (review/${rel}, ${existing.sha256}; this file ${sha256}); a stored scorecard is never overwritten: if the reviewer revised it, that is for arbitration or a new review, not a silent replacement`,
        );
      }
      continue;
    }
    const twin = planned.get(rel);
    if (twin) {
      if (twin.sha256 !== sha256) refuse('conflicting-score', `${source} and ${twin.source} are two different scorecards of ${JSON.stringify(scores.reviewer)} for ${scores.blind_id} (${sha256} vs ${twin.sha256}); import the one the reviewer stands by`);
      continue;
    }
    const instance = before.instances.find((i) => i.blind_id === scores.blind_id)!;
    if (instance.status === 'decided_by_arbitration') {
      refuse('already-arbitrated', `${source}: ${scores.blind_id} was decided by arbitration (arbiter ${instance.arbiter!.reviewer}) between ${instance.reviewers.map((r) => r.reviewer).join(', ')}; a further scorecard would not be covered by that decision, so it is refused`);
      continue;
    }
    if (instance.reviewers.length + (newReviewers.get(scores.blind_id)?.size ?? 0) >= REVIEW_LIMITS.maxReviewersPerInstance) {
      refuse('too-many', `${source}: ${scores.blind_id} already has ${REVIEW_LIMITS.maxReviewersPerInstance} reviewers, the most one instance can have`);
      continue;
    }
    newReviewers.set(scores.blind_id, (newReviewers.get(scores.blind_id) ?? new Set()).add(reviewerKey(scores.reviewer)));
    planned.set(rel, { source, sha256, bytes });
    files.push({ source, stored_as: rel, blind_id: scores.blind_id, reviewer: scores.reviewer, sha256, outcome: 'imported' });
  }
  if (problems.length > 0) {
    // The first problem names the refusal; every problem is listed.
    throw new ReviewRefusal(problems[0]!.problem, `import refused: ${problems.length} problem(s) with the ${sources.length} file(s) given, so none was imported; fix or leave out these and import again`, problems.map((p) => p.line));
  }

  if (isNew && !publishNewFile(path.join(pkg.reviewDir, REVIEW_FILES.settings), settingsText(settings))) {
    // Another import started the review meanwhile: its settings stand; ours are re-checked on the next run.
    throw new ReviewRefusal('inconsistent-review-folder', `${path.join(pkg.reviewDir, REVIEW_FILES.settings)} appeared while importing (a concurrent import?); nothing was imported: run the import again`);
  }
  for (const [rel, plan] of planned) {
    if (!publishNewFile(path.join(pkg.reviewDir, rel), plan.bytes)) {
      throw new ReviewRefusal('conflicting-score', `review/${rel} appeared while importing ${plan.source} (a concurrent import?); run the import again to compare it`);
    }
  }
  const state = consolidate(pkg, readReviewFolder(pkg));
  return { files, settings, started: isNew, state };
}
