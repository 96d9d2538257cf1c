// Why one file: the review folder and the state it implies are one record, recomputed from the files on every command; the readers, the settings and the consolidation rule share its limits, its refusals and its schemas (a split would put the consolidation in review-consolidation.ts — a candidate, not done in issue 17).
// The review folder of a blind-review package (DESIGN §10, spec §8.5) and the consolidated state
// it implies. Everything the review decides is recomputed from the files of `PKG_DIR/review/`
// on every command: the folder is the record, and nothing else holds state that could drift.
//
// PKG_DIR/
//   commitment.dsse.json, controller.pub     the exporter's signed commitment (blind-map.ts)
//   review/
//     review.json                 the review's settings: the pre-registration's sha256 and its
//                                 dimension weights, and the commitment reviewed against
//     scores/<blind id>--<reviewer slug>-<hash>.json
//                                 each reviewer's scorecard, verbatim as imported (ReviewerScores)
//     arbitration/<blind id>.json the arbiter's scorecard for a flagged instance (ReviewerScores)
//     lock.dsse.json              the signed lock (review-lock.ts); never replaced
//     unblinded.json              the group ↔ blind id map joined with the locked scores (unblinding.ts)
//
// Consolidation (spec §8.5: "评审分差超过 15 分时进入第三方仲裁；不得用简单平均掩盖分类分歧"):
// a reviewer's total is Σ weight × dimension / 100 with the pre-registered weights; an instance
// with fewer than 2 reviewers is incomplete; a gap between any two totals above 15 points, or ANY
// difference in a hard-failure decision, requires arbitration and produces no average; otherwise
// the consolidated score is the mean of the totals and of each dimension, and the hard-failure
// decisions are the ones all reviewers agree on. An arbiter's scorecard replaces the disagreement.
import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { publishFile } from '../foundation/publish-file.js';
import { describeIssues, HARD_FAILURE_IDS, PreregInputError, PreRegistration, readPreregJson } from '../design/prereg.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { verifyDsse } from '../schema/dsse.js';
import { KeyFormatError, parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { hashCanonical, hashText, HashString, sha256Hex } from '../schema/hash.js';
import { DIMENSIONS, type Dimension } from '../oracle/continuity-score.js';
import { BLIND_REVIEW_FILES, BlindCommitment, COMMITMENT_PAYLOAD_TYPE } from './blind-map.js';
import { ReviewerScores, type BlindId } from './package-format.js';

export const REVIEW_FORMAT_VERSION = '1.0.0';

export const REVIEW_FILES = {
  settings: 'review.json',
  scores: 'scores',
  arbitration: 'arbitration',
  lock: 'lock.dsse.json',
  unblinded: 'unblinded.json',
} as const;

/** Spec §8.5: at least two reviewers per instance. */
export const MIN_REVIEWERS = 2;
/** Spec §8.5: a gap above this many points (not at it) goes to arbitration. */
export const MAX_SCORE_GAP_POINTS = 15;

export const REVIEW_LIMITS = {
  /** A scorecard's comments are ≤ 16 384 characters (≤ 64 KiB in UTF-8); the rest is small. */
  maxScoreFileBytes: 256 * 1024,
  /** More reviewers than this on one instance is a mistake in the import, not a review. */
  maxReviewersPerInstance: 16,
  /** Files named in one `import`. */
  maxFilesPerImport: 512,
  /** Entries of review/scores: every instance (≤ 99, blind-map.ts) × the reviewers bound. */
  maxScoreFiles: 99 * 16,
  maxSettingsBytes: 64 * 1024,
  maxCommitmentBytes: 64 * 1024,
} as const;

export type ReviewProblem =
  | 'not-a-package'
  | 'bad-commitment'
  | 'invalid-prereg'
  | 'prereg-mismatch'
  | 'invalid-score-file'
  | 'unknown-blind-id'
  | 'conflicting-score'
  | 'too-many'
  | 'locked'
  | 'already-arbitrated'
  | 'not-flagged'
  | 'arbiter-is-reviewer'
  | 'conflicting-arbitration'
  | 'inconsistent-review-folder'
  | 'not-ready'
  | 'already-locked'
  | 'wrong-key'
  | 'not-locked'
  | 'lock-invalid'
  | 'changed-after-lock'
  | 'no-map'
  | 'key-mismatch'
  | 'map-mismatch'
  | 'report-changed'
  | 'package-changed'
  | 'already-unblinded';

/** A review step that must not happen as asked; the message says what to do instead. */
export class ReviewRefusal extends TypedErrorOf('review', EXIT_CODES.failed) {
  override readonly name = 'ReviewRefusal';
  override get ownCode(): string {
    return this.problem;
  }
  override get screenText(): string {
    return `REFUSED (${this.problem}): ${this.message}${this.details.map((d) => `\n  ${d}`).join('')}`;
  }
  override get endingDetails(): Readonly<Record<string, unknown>> {
    return { problem: this.problem, details: this.details };
  }
  constructor(
    readonly problem: ReviewProblem,
    message: string,
    /** One line per item when several things are wrong at once (all of them, never the first only). */
    readonly details: readonly string[] = [],
  ) {
    super(message);
  }
}

/** The command itself cannot run (a folder or file that does not exist): misuse, not a refusal. */
export class ReviewInputError extends TypedErrorOf('review_input', EXIT_CODES.misused) {
  override readonly name = 'ReviewInputError';
}

const Weight = z.number().int().min(0).max(100);
export const DimensionWeights = z.strictObject(Object.fromEntries(DIMENSIONS.map((d) => [d, Weight])) as Record<Dimension, typeof Weight>);
export type DimensionWeights = z.infer<typeof DimensionWeights>;

/** review/review.json: fixed by the first import; every later step weighs scores with it. */
export const ReviewSettings = z.strictObject({
  review_format_version: z.literal(REVIEW_FORMAT_VERSION),
  /** sha256(JCS(pre-registration)), the hash its lock and every run's manifest carry. */
  prereg_sha256: HashString,
  /** The file it was read from, as given (for a person; the hash identifies it). */
  prereg_file: z.string().min(1).max(4096),
  weights: DimensionWeights,
  /** The commitment (blind-map.ts) this review is done against. */
  commitment: HashString,
  started_at: z.iso.datetime(),
});
export type ReviewSettings = z.infer<typeof ReviewSettings>;

export const HardFailureDecisions = ReviewerScores.shape.hard_failures;
export type HardFailureDecisions = z.infer<typeof HardFailureDecisions>;
export const DimensionScores = ReviewerScores.shape.dimensions;
export type DimensionScores = z.infer<typeof DimensionScores>;

export const Points = z.number().min(0).max(100);

/**
 * How an instance was decided and its scores: the consolidated state, the signed lock and the
 * unblinded table carry the same fields, defined once here.
 */
export const DECIDED_SCORE_FIELDS = {
  /** 'reviewers_mean': reviewers agreed within the rules; 'arbitration': the arbiter's scorecard. */
  decided_by: z.enum(['reviewers_mean', 'arbitration']),
  score: Points,
  dimensions: z.record(z.enum(DIMENSIONS), Points),
  hard_failures: z.record(z.enum(HARD_FAILURE_IDS), z.boolean()),
};

export const ReviewerEntry = z.strictObject({
  reviewer: z.string(),
  /** Relative to review/. */
  file: z.string(),
  sha256: HashString,
  total: Points,
});

export const Disagreement = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('score_gap'), gap: z.number() }),
  z.strictObject({ kind: z.literal('hard_failure'), id: z.enum(HARD_FAILURE_IDS), found_by: z.array(z.string()), not_found_by: z.array(z.string()) }),
]);
export type Disagreement = z.infer<typeof Disagreement>;

export const Consolidated = z.strictObject(DECIDED_SCORE_FIELDS);
export type Consolidated = z.infer<typeof Consolidated>;

export const InstanceStatus = z.enum(['incomplete', 'arbitration_required', 'consolidated', 'decided_by_arbitration']);
export type InstanceStatus = z.infer<typeof InstanceStatus>;

export const InstanceState = z.strictObject({
  blind_id: z.string(),
  status: InstanceStatus,
  reviewers: z.array(ReviewerEntry),
  /** max − min of the reviewers' totals; null with fewer than two reviewers. */
  score_gap: z.number().nullable(),
  disagreements: z.array(Disagreement),
  arbiter: ReviewerEntry.nullable(),
  /** null while incomplete or awaiting arbitration: a disagreement is never averaged. */
  consolidated: Consolidated.nullable(),
  /** One line a person reads: "arbitration required (score gap 15.01)". */
  summary: z.string(),
});
export type InstanceState = z.infer<typeof InstanceState>;

export const ReviewState = z.strictObject({
  blind_ids: z.number().int(),
  prereg_sha256: HashString.nullable(),
  weights: DimensionWeights.nullable(),
  instances: z.array(InstanceState),
  counts: z.strictObject({ incomplete: z.number().int(), arbitration_required: z.number().int(), consolidated: z.number().int(), decided_by_arbitration: z.number().int() }),
  ready_to_lock: z.boolean(),
  locked: z.boolean(),
});
export type ReviewState = z.infer<typeof ReviewState>;

/** A package folder opened for review: its signed commitment checked against its controller.pub. */
export interface ReviewPackage {
  readonly pkgDir: string;
  readonly reviewDir: string;
  readonly publicKey: Uint8Array;
  readonly commitment: BlindCommitment;
}

/** A score file as stored in review/. */
export interface StoredScore {
  /** Relative to review/, with forward slashes. */
  readonly file: string;
  readonly sha256: HashString;
  readonly scores: ReviewerScores;
}

export interface ReviewFolder {
  readonly settings: ReviewSettings | null;
  readonly scores: readonly StoredScore[];
  readonly arbitrations: readonly StoredScore[];
  /** Every file the lock covers (settings, scores, arbitrations), sorted by path. */
  readonly files: readonly { readonly path: string; readonly sha256: HashString }[];
  readonly locked: boolean;
}

// ---------------------------------------------------------------------------------------------
// The package

/**
 * Opens PKG_DIR: its controller.pub and its commitment.dsse.json, whose signature must verify
 * with that key. Every review step starts here, so that blind ids always come from a signed list.
 */
export function openReviewPackage(pkgDir: string): ReviewPackage {
  const dir = path.resolve(pkgDir);
  if (!existsSync(dir) || !lstatSync(dir).isDirectory()) throw new ReviewInputError(`${dir} is not a folder; give the package folder the exporter wrote (it holds ${BLIND_REVIEW_FILES.commitment} and ${BLIND_REVIEW_FILES.publicKey})`);
  const keyFile = path.join(dir, BLIND_REVIEW_FILES.publicKey);
  const commitmentFile = path.join(dir, BLIND_REVIEW_FILES.commitment);
  const missing = [keyFile, commitmentFile].filter((f) => !existsSync(f));
  if (missing.length > 0) throw new ReviewRefusal('not-a-package', `${dir} is not a blind-review package folder: ${missing.map((f) => path.basename(f)).join(' and ')} missing; give the folder the exporter wrote, or export the study first`);
  let publicKey: Uint8Array;
  try {
    publicKey = parsePublicKeyHex(readBounded(keyFile, 1024).toString('utf8'));
  } catch (error) {
    if (error instanceof KeyFormatError) throw new ReviewRefusal('bad-commitment', `${keyFile} is malformed: ${error.message}`);
    throw error;
  }
  const envelope = parseJsonFile(commitmentFile, REVIEW_LIMITS.maxCommitmentBytes, 'bad-commitment');
  const verified = verifyDsse(envelope, COMMITMENT_PAYLOAD_TYPE, publicKey);
  if (!verified.ok) throw new ReviewRefusal('bad-commitment', `${commitmentFile} does not verify with ${keyFile}: ${verified.reason}; the commitment was not signed by this package's controller key (or was altered): nothing in this package can be reviewed or unblinded until the controller re-publishes it`);
  const body = BlindCommitment.safeParse(verified.body);
  if (!body.success) throw new ReviewRefusal('bad-commitment', `${commitmentFile} is signed but its body is not a blinding commitment: ${describeIssues(body.error).join('; ')}`);
  if (new Set(body.data.blind_ids).size !== body.data.blind_ids.length) throw new ReviewRefusal('bad-commitment', `${commitmentFile} lists a blind id more than once; the controller must re-publish it`);
  return { pkgDir: dir, reviewDir: path.join(dir, BLIND_REVIEW_FILES.reviewDir), publicKey, commitment: body.data };
}

// ---------------------------------------------------------------------------------------------
// The pre-registration

export interface ReviewPrereg {
  readonly file: string;
  readonly sha256: HashString;
  readonly weights: DimensionWeights;
}

/** Reads a pre-registration for its weights; ReviewInputError when missing or not JSON, a refusal when invalid. */
export function readReviewPrereg(file: string): ReviewPrereg {
  let content: unknown;
  try {
    content = readPreregJson(file);
  } catch (error) {
    if (error instanceof PreregInputError) throw new ReviewInputError(error.message);
    throw error;
  }
  const parsed = PreRegistration.safeParse(content);
  if (!parsed.success) throw new ReviewRefusal('invalid-prereg', `${file} fails the pre-registration schema; give the pre-registration the study ran under`, describeIssues(parsed.error));
  const weights = Object.fromEntries(DIMENSIONS.map((d) => [d, parsed.data.scoring.dimensions[d].weight])) as DimensionWeights;
  return { file, sha256: hashCanonical(content), weights };
}

/**
 * The settings a step uses: the recorded ones when the review has started (a --prereg given
 * anyway must be the same pre-registration), else new ones from `preregFile` or, without one, the
 * bundled default the command names (`defaultPreregFile`).
 */
export function settingsFor(pkg: ReviewPackage, recorded: ReviewSettings | null, preregFile: string | null, defaultPreregFile: string, now: string): { settings: ReviewSettings; isNew: boolean } {
  if (recorded) {
    if (preregFile !== null) {
      const given = readReviewPrereg(preregFile);
      if (given.sha256 !== recorded.prereg_sha256) {
        throw new ReviewRefusal('prereg-mismatch', `this review weighs scores with the pre-registration ${recorded.prereg_sha256} (${recorded.prereg_file}, recorded in ${REVIEW_FILES.settings} by the first import); ${preregFile} is ${given.sha256}: drop --prereg, or give the same pre-registration`);
      }
    }
    return { settings: recorded, isNew: false };
  }
  const prereg = readReviewPrereg(preregFile ?? defaultPreregFile);
  // The commitment names the pre-registration before review: the weights cannot be chosen after.
  if (prereg.sha256 !== pkg.commitment.prereg_sha256) {
    throw new ReviewRefusal('prereg-mismatch', `the commitment signed before review names the pre-registration ${pkg.commitment.prereg_sha256}; ${prereg.file} is ${prereg.sha256}: give the pre-registration the study ran under with --prereg`);
  }
  const settings = ReviewSettings.parse({ review_format_version: REVIEW_FORMAT_VERSION, prereg_sha256: prereg.sha256, prereg_file: prereg.file, weights: prereg.weights, commitment: pkg.commitment.commitment, started_at: now });
  return { settings, isNew: true };
}

// ---------------------------------------------------------------------------------------------
// File names

/** How reviewer names are compared: "Alice" and " alice" are one person (else one person could count twice). */
export function reviewerKey(name: string): string {
  return name.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();
}

/** scores/<blind id>--<slug>-<16 hex of sha256(reviewer key)>.json: readable, and unique per reviewer key. */
export function scoreFileName(blindId: BlindId, reviewer: string): string {
  const key = reviewerKey(reviewer);
  const slug = key.replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 32) || 'reviewer';
  return `${blindId}--${slug}-${sha256Hex(key).slice(0, 16)}.json`;
}

export function arbitrationFileName(blindId: BlindId): string {
  return `${blindId}.json`;
}

// ---------------------------------------------------------------------------------------------
// Reading the review folder

/** Entries review/ may hold; anything else is reported, never ignored. */
const REVIEW_ENTRIES = new Set<string>(Object.values(REVIEW_FILES));

/**
 * Reads review/ whole and checks it: every score file parses, is named after its content, names a
 * committed blind id; at most one arbitration per instance. Any other entry is an inconsistency
 * (stated with the file), because the lock must cover exactly what the review consists of.
 */
export function readReviewFolder(pkg: ReviewPackage): ReviewFolder {
  const dir = pkg.reviewDir;
  if (!existsSync(dir)) return { settings: null, scores: [], arbitrations: [], files: [], locked: false };
  const problems: string[] = [];
  const entries = readdirSync(dir).sort();
  for (const name of entries) if (!REVIEW_ENTRIES.has(name)) problems.push(`review/${name}: not part of a review folder (a leftover of an interrupted write, or put there by hand); move it out of ${dir}`);
  const files: { path: string; sha256: HashString }[] = [];
  let settings: ReviewSettings | null = null;
  const settingsFile = path.join(dir, REVIEW_FILES.settings);
  if (existsSync(settingsFile)) {
    const bytes = readBounded(settingsFile, REVIEW_LIMITS.maxSettingsBytes);
    const parsed = ReviewSettings.safeParse(parseJsonBytes(bytes, settingsFile, 'inconsistent-review-folder'));
    if (!parsed.success) problems.push(`review/${REVIEW_FILES.settings}: ${describeIssues(parsed.error).join('; ')}`);
    else if (parsed.data.commitment !== pkg.commitment.commitment) problems.push(`review/${REVIEW_FILES.settings}: the review was started against the commitment ${parsed.data.commitment}, the package now carries ${pkg.commitment.commitment}; the commitment was replaced during review`);
    else settings = parsed.data;
    files.push({ path: REVIEW_FILES.settings, sha256: hashText(bytes) });
  }
  const committed = new Set(pkg.commitment.blind_ids);
  const readScoreDir = (sub: string, expectedName: (s: ReviewerScores) => string): StoredScore[] => {
    const subDir = path.join(dir, sub);
    if (!existsSync(subDir)) return [];
    const names = readdirSync(subDir).sort();
    if (names.length > REVIEW_LIMITS.maxScoreFiles) {
      throw new ReviewRefusal('too-many', `${subDir} holds ${names.length} entries, more than the ${REVIEW_LIMITS.maxScoreFiles} a review of at most 99 instances × ${REVIEW_LIMITS.maxReviewersPerInstance} reviewers can have; remove what does not belong there`);
    }
    const stored: StoredScore[] = [];
    for (const name of names) {
      const rel = `${sub}/${name}`;
      const file = path.join(subDir, name);
      if (/\.tmp-\d+-[0-9a-f]+$/.test(name)) {
        problems.push(`review/${rel}: a leftover of an interrupted write (nothing refers to it); delete it`);
        continue;
      }
      if (!lstatSync(file).isFile()) {
        problems.push(`review/${rel}: not a regular file`);
        continue;
      }
      const bytes = readBounded(file, REVIEW_LIMITS.maxScoreFileBytes);
      const sha256 = hashText(bytes);
      files.push({ path: rel, sha256 });
      const parsed = ReviewerScores.safeParse(parseJsonBytes(bytes, file, 'inconsistent-review-folder'));
      if (!parsed.success) {
        problems.push(`review/${rel}: not a reviewer's scorecard: ${describeIssues(parsed.error).join('; ')}`);
        continue;
      }
      if (name !== expectedName(parsed.data)) {
        problems.push(`review/${rel}: holds ${parsed.data.blind_id} by ${JSON.stringify(parsed.data.reviewer)}, which is stored as ${sub}/${expectedName(parsed.data)}; files here are written by \`npm run review -- ${sub === REVIEW_FILES.scores ? 'import' : 'arbitrate'}\` only`);
        continue;
      }
      if (!committed.has(parsed.data.blind_id)) {
        problems.push(`review/${rel}: blind id ${parsed.data.blind_id} is not in the signed commitment`);
        continue;
      }
      stored.push({ file: rel, sha256, scores: parsed.data });
    }
    return stored;
  };
  const scores = readScoreDir(REVIEW_FILES.scores, (s) => scoreFileName(s.blind_id, s.reviewer));
  const arbitrations = readScoreDir(REVIEW_FILES.arbitration, (s) => arbitrationFileName(s.blind_id));
  if (settings === null && problems.length === 0 && scores.length + arbitrations.length > 0) {
    problems.push(`review/${REVIEW_FILES.settings} is missing but scores are present: the weights they were imported under are unknown; restore ${REVIEW_FILES.settings}`);
  }
  if (problems.length > 0) throw new ReviewRefusal('inconsistent-review-folder', `${dir} is not a consistent review folder (${problems.length} problem(s)); nothing was changed`, problems);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { settings, scores, arbitrations, files, locked: existsSync(path.join(dir, REVIEW_FILES.lock)) };
}

// ---------------------------------------------------------------------------------------------
// Consolidation

/** Fixed decimals (as the oracle's scores): the same files always give the same numbers and comparisons. */
export function round6(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

export function totalOf(dimensions: DimensionScores, weights: DimensionWeights): number {
  return round6(DIMENSIONS.reduce((sum, d) => sum + (weights[d] * dimensions[d]) / 100, 0));
}

function entryOf(s: StoredScore, weights: DimensionWeights): z.infer<typeof ReviewerEntry> {
  return { reviewer: s.scores.reviewer, file: s.file, sha256: s.sha256, total: totalOf(s.scores.dimensions, weights) };
}

/** "score gap 20; hard-failure decision differs: a, b". */
export function describeDisagreements(list: readonly Disagreement[]): string {
  const gap = list.find((d) => d.kind === 'score_gap');
  const ids = list.flatMap((d) => (d.kind === 'hard_failure' ? [d.id] : []));
  return [gap ? `score gap ${gap.gap}` : null, ids.length > 0 ? `hard-failure decision differs: ${ids.join(', ')}` : null].filter((x) => x !== null).join('; ');
}

function foundList(decisions: HardFailureDecisions): string {
  const found = HARD_FAILURE_IDS.filter((id) => decisions[id]);
  return found.length === 0 ? 'none found' : `found ${found.join(', ')}`;
}

/** The state of one instance from its reviewers' and (if any) arbiter's scorecards. */
export function consolidateInstance(blindId: BlindId, reviewerScores: readonly StoredScore[], arbitration: StoredScore | null, weights: DimensionWeights): InstanceState {
  const sorted = [...reviewerScores].sort((a, b) => (reviewerKey(a.scores.reviewer) < reviewerKey(b.scores.reviewer) ? -1 : 1));
  const reviewers = sorted.map((s) => entryOf(s, weights));
  const names = reviewers.map((r) => r.reviewer).join(', ');
  const arbiter = arbitration ? entryOf(arbitration, weights) : null;
  if (reviewers.length < MIN_REVIEWERS) {
    if (arbitration) throw new ReviewRefusal('inconsistent-review-folder', `review/${arbitration.file} arbitrates ${blindId}, which has ${reviewers.length} reviewer(s): an arbitration without two scorecards to decide between; move it out`);
    return { blind_id: blindId, status: 'incomplete', reviewers, score_gap: null, disagreements: [], arbiter: null, consolidated: null, summary: `incomplete (${reviewers.length} of ${MIN_REVIEWERS} reviewers${names ? `: ${names}` : ''})` };
  }
  const totals = reviewers.map((r) => r.total);
  const gap = round6(Math.max(...totals) - Math.min(...totals));
  const disagreements: Disagreement[] = [];
  if (gap > MAX_SCORE_GAP_POINTS) disagreements.push({ kind: 'score_gap', gap });
  for (const id of HARD_FAILURE_IDS) {
    const found = sorted.filter((s) => s.scores.hard_failures[id]).map((s) => s.scores.reviewer);
    if (found.length > 0 && found.length < sorted.length) disagreements.push({ kind: 'hard_failure', id, found_by: found, not_found_by: sorted.filter((s) => !s.scores.hard_failures[id]).map((s) => s.scores.reviewer) });
  }
  const base = { blind_id: blindId, reviewers, score_gap: gap, disagreements };
  if (disagreements.length === 0) {
    if (arbitration) throw new ReviewRefusal('inconsistent-review-folder', `review/${arbitration.file} arbitrates ${blindId}, but its reviewers agree (gap ${gap}, same hard-failure decisions); an arbitration is only for a flagged instance: move it out`);
    const n = sorted.length;
    const dimensions = Object.fromEntries(DIMENSIONS.map((d) => [d, round6(sorted.reduce((s, r) => s + r.scores.dimensions[d], 0) / n)])) as DimensionScores;
    const score = round6(totals.reduce((s, t) => s + t, 0) / n);
    // No disagreement: every reviewer made the same decision on every id.
    const hardFailures = sorted[0]!.scores.hard_failures;
    return { ...base, status: 'consolidated', arbiter: null, consolidated: { decided_by: 'reviewers_mean', score, dimensions, hard_failures: { ...hardFailures } }, summary: `consolidated ${score} (mean of ${names}; gap ${gap}); hard failures: ${foundList(hardFailures)}` };
  }
  const why = describeDisagreements(disagreements);
  if (!arbitration) return { ...base, status: 'arbitration_required', arbiter: null, consolidated: null, summary: `arbitration required (${why}); reviewers ${reviewers.map((r) => `${r.reviewer} ${r.total}`).join(', ')}` };
  const a = arbitration.scores;
  return {
    ...base,
    status: 'decided_by_arbitration',
    arbiter,
    consolidated: { decided_by: 'arbitration', score: arbiter!.total, dimensions: { ...a.dimensions }, hard_failures: { ...a.hard_failures } },
    summary: `decided by arbitration: ${arbiter!.total} by ${a.reviewer} (reviewers ${names} disagreed: ${why}); hard failures: ${foundList(a.hard_failures)}`,
  };
}

/** The consolidated state of every committed instance, in the commitment's (sorted) order. */
export function consolidate(pkg: ReviewPackage, folder: ReviewFolder): ReviewState {
  const byId = new Map<string, StoredScore[]>();
  for (const s of folder.scores) byId.set(s.scores.blind_id, [...(byId.get(s.scores.blind_id) ?? []), s]);
  const arbitrations = new Map(folder.arbitrations.map((a) => [a.scores.blind_id, a]));
  const weights = folder.settings?.weights ?? null;
  const instances = pkg.commitment.blind_ids.map((id) => {
    const list = byId.get(id) ?? [];
    // Without settings there are no scores (readReviewFolder refuses that), so no weights are needed.
    return consolidateInstance(id, list, arbitrations.get(id) ?? null, weights ?? (Object.fromEntries(DIMENSIONS.map((d) => [d, 0])) as DimensionWeights));
  });
  const count = (status: InstanceStatus): number => instances.filter((i) => i.status === status).length;
  const counts = { incomplete: count('incomplete'), arbitration_required: count('arbitration_required'), consolidated: count('consolidated'), decided_by_arbitration: count('decided_by_arbitration') };
  return ReviewState.parse({
    blind_ids: instances.length,
    prereg_sha256: folder.settings?.prereg_sha256 ?? null,
    weights,
    instances,
    counts,
    ready_to_lock: counts.incomplete === 0 && counts.arbitration_required === 0,
    locked: folder.locked,
  });
}

/** Lines a person reads: one per instance, then the counts. */
export function describeState(state: ReviewState): string[] {
  const lines = state.instances.map((i) => `  ${i.blind_id}  ${i.summary}`);
  const c = state.counts;
  lines.push(
    `${c.consolidated + c.decided_by_arbitration} of ${state.blind_ids} instance(s) decided (${c.consolidated} by the reviewers' mean, ${c.decided_by_arbitration} by arbitration); ${c.incomplete} incomplete; ${c.arbitration_required} awaiting arbitration${state.locked ? '; LOCKED' : state.ready_to_lock ? '; ready to lock' : ''}`,
  );
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Files

/** Reads at most `limit` bytes through one descriptor, refusing a larger file rather than truncating it. */
export function readBounded(file: string, limit: number): Buffer {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const size = fstatSync(fd).size;
    if (size > limit) throw new ReviewRefusal('too-many', `${file} has ${size} bytes, more than the ${limit} such a file can have; it is not what this step expects`);
    const buffer = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, buffer, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

export function parseJsonBytes(bytes: Buffer, file: string, problem: ReviewProblem): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch (error) {
    throw new ReviewRefusal(problem, `${file} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function parseJsonFile(file: string, limit: number, problem: ReviewProblem): unknown {
  return parseJsonBytes(readBounded(file, limit), file, problem);
}

/**
 * Writes `bytes` as a new file (foundation/publish-file.ts), making its folder first: nothing is
 * ever replaced, and readers never see a half-written file. Returns false (writing nothing) when
 * `file` already exists.
 */
export function publishNewFile(file: string, bytes: string | Uint8Array, mode = 0o644): boolean {
  mkdirSync(path.dirname(file), { recursive: true });
  return publishFile(file, bytes, mode);
}

/** The settings as stored: written once, by the first import. */
export function settingsText(settings: ReviewSettings): string {
  return `${JSON.stringify(settings, null, 2)}\n`;
}

/** Refuses every change once the lock exists: the lock signed exactly the files present then. */
export function refuseIfLocked(pkg: ReviewPackage, what: string): void {
  const lockFile = path.join(pkg.reviewDir, REVIEW_FILES.lock);
  if (existsSync(lockFile)) throw new ReviewRefusal('locked', `the review of ${pkg.pkgDir} is locked (${lockFile}): ${what} after the lock is refused; a locked review is final — unblind it with \`npm run review -- unblind ${pkg.pkgDir} --study STUDY_DIR\``);
}

/** Reads one reviewer's scorecard file given on the command line. */
export function readScoreArgument(file: string): { bytes: Buffer; sha256: HashString; scores: ReviewerScores } | { problem: string } {
  if (!existsSync(file)) return { problem: `${file}: does not exist` };
  if (!lstatSync(file).isFile()) return { problem: `${file}: not a regular file` };
  let bytes: Buffer;
  try {
    bytes = readBounded(file, REVIEW_LIMITS.maxScoreFileBytes);
  } catch (error) {
    if (error instanceof ReviewRefusal) return { problem: error.message };
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    return { problem: `${file}: not JSON (${error instanceof Error ? error.message : String(error)}); give the file the scorecard page saved` };
  }
  const parsed = ReviewerScores.safeParse(json);
  if (!parsed.success) return { problem: `${file}: not a reviewer's scorecard: ${describeIssues(parsed.error).join('; ')}` };
  return { bytes, sha256: hashText(bytes), scores: parsed.data };
}
