// `npm run review -- unblind PKG_DIR --study STUDY_DIR` (DESIGN §10, spec §8.5): reveals the
// group ↔ blind id map — only after the review is locked — and only the map the controller
// committed to before review.
//
// Order matters: the lock is checked first (review-lock.ts verifyReviewLock: it exists, verifies
// with the package's controller.pub, was made against the current commitment, still covers exactly
// the files of review/), and the sealed map is not even read before that. The map must then hash
// to the commitment inside the signed commitment.dsse.json (commitmentOf: salt and entries) and
// list exactly the committed blind ids: a map with two groups swapped, another salt, or another
// set of packages is refused, as is a commitment that does not verify with controller.pub, and a
// run folder of the study that carries another controller key than the package.
//
// With the groups it reports how far the review agrees with the oracle and with itself
// (review-agreement.ts; issue 32): every locked scorecard against the oracle's figures of the
// same instance in the committed report.json, per dimension and per hard failure, and every two
// reviewers of the same packages with each other (Cohen's kappa), each disagreement by name. Its
// notes name every scorecard that decided a hard failure otherwise than the oracle, and every
// locked "no hard failure" where the oracle found some: never silent.
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { GROUPS } from '../design/groups.js';
import { describeIssues } from '../design/prereg.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { KeyFormatError, keyIdOf, parsePublicKeyHex, toHex } from '../schema/ed25519-keys.js';
import { HashString, hashText } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { STUDY_FILES } from '../study-contract/study-folder.js';
import { BLIND_REVIEW_FILES, BlindMap, commitmentOf } from './blind-map.js';
import { BlindId } from './package-format.js';
import { packageDigest, PackageDigestError } from './package-digest.js';
import { Agreement, agreementNotes, OracleFigures, oracleFromReport, reviewAgreement } from './review-agreement.js';
import { verifyReviewLock } from './review-lock.js';
import { DECIDED_SCORE_FIELDS, parseJsonBytes, Points, publishNewFile, readBounded, REVIEW_FILES, ReviewInputError, ReviewRefusal, round6 } from './review-state.js';

/** 1.1.0 (issue 32): each instance carries the oracle's figures, and the file the review's agreement with them. 1.0.0 had neither. */
export const UNBLINDED_FORMAT_VERSION = '1.1.0';
const MAX_MAP_BYTES = 256 * 1024;
/**
 * unblinded.json as read back (an unblinding run again): the map and 99 instances are small; the
 * agreement's lists are bounded (MAX_LISTED_DISAGREEMENTS each, ~300 bytes an item) but there is one
 * pair of lists per two reviewers (16 reviewers: 120 pairs), so the bound is generous.
 */
const MAX_UNBLINDED_BYTES = 64 * 1024 * 1024;
const MAX_STUDY_PLAN_BYTES = 4 * 1024 * 1024;
/** study.json of npm run study (study/study-runner.ts STUDY_FILES.plan), read for its prereg_sha256 only. */
const STUDY_PLAN_FILE = 'study.json';

export const UnblindedInstance = z.strictObject({
  blind_id: BlindId,
  group: z.enum(GROUPS),
  replicate: z.number().int().min(1),
  dir: z.string(),
  ...DECIDED_SCORE_FIELDS,
  /** The oracle's figures of the same instance (report.json); null when it has none (agreement.oracle.missing says why). */
  oracle: OracleFigures.nullable(),
});
export type UnblindedInstance = z.infer<typeof UnblindedInstance>;

export const UnblindedGroup = z.strictObject({
  group: z.enum(GROUPS),
  n: z.number().int().min(0),
  /** By replicate. */
  scores: z.array(z.strictObject({ blind_id: BlindId, replicate: z.number().int(), score: Points })),
  /** Descriptive only (spec §8.2: exploratory thresholds, no significance test); null when n = 0. */
  mean: Points.nullable(),
  median: Points.nullable(),
  min: Points.nullable(),
  max: Points.nullable(),
  /** Instances with at least one hard failure found in the locked decisions. */
  instances_with_hard_failure: z.number().int().min(0),
});
export type UnblindedGroup = z.infer<typeof UnblindedGroup>;

/** review/unblinded.json. */
export const Unblinded = z.strictObject({
  unblinded_format_version: z.literal(UNBLINDED_FORMAT_VERSION),
  commitment: HashString,
  committed_at: z.iso.datetime(),
  /** sha256 of review/lock.dsse.json as read. */
  lock_sha256: HashString,
  locked_at: z.iso.datetime(),
  prereg_sha256: HashString,
  /** Whether the study's study.json names the same pre-registration the review weighed scores with. */
  study_prereg_check: z.string(),
  /** Whether the run folders of the map carry the key that signed the commitment and the lock. */
  controller_key_check: z.string(),
  /** The revealed map, salt included: anyone can recompute the commitment from it. */
  map: BlindMap,
  instances: z.array(UnblindedInstance),
  groups: z.array(UnblindedGroup),
  /** The review against the oracle and against itself (review-agreement.ts). */
  agreement: Agreement,
  /** What was not as expected but did not stop the unblinding (the sealed map's file mode; every hard-failure disagreement with the oracle, by name). */
  notes: z.array(z.string()),
  unblinded_at: z.iso.datetime(),
});
export type Unblinded = z.infer<typeof Unblinded>;

export interface UnblindResult {
  readonly file: string;
  /** 'unchanged': an earlier unblinding wrote the same result; the file was kept. */
  readonly outcome: 'written' | 'unchanged';
  readonly unblinded: Unblinded;
}

export function unblind(pkgDir: string, studyDir: string, now: string): UnblindResult {
  const study = path.resolve(studyDir);
  if (!existsSync(study) || !lstatSync(study).isDirectory()) throw new ReviewInputError(`${study} is not a folder; give the study folder the packages were exported from (it holds ${BLIND_REVIEW_FILES.sealedMap})`);
  // The lock first: before it verifies, the map is not read at all.
  const { lock, lock_sha256, pkg, folder } = verifyReviewLock(pkgDir);
  const notes: string[] = [];

  const mapFile = path.join(study, BLIND_REVIEW_FILES.sealedMap);
  if (!existsSync(mapFile)) throw new ReviewRefusal('no-map', `${mapFile} does not exist; give the study folder the packages of ${pkg.pkgDir} were exported from`);
  const mode = lstatSync(mapFile).mode & 0o777;
  if ((mode & 0o077) !== 0) notes.push(`${BLIND_REVIEW_FILES.sealedMap} has mode ${mode.toString(8).padStart(4, '0')}, not 0600: others on this machine could have read the map during review`);
  const parsed = BlindMap.safeParse(parseJsonBytes(readBounded(mapFile, MAX_MAP_BYTES), mapFile, 'map-mismatch'));
  if (!parsed.success) throw new ReviewRefusal('map-mismatch', `${mapFile} is not a blind map; it cannot be checked against the commitment`, describeIssues(parsed.error));
  const map = parsed.data;

  const committed = pkg.commitment;
  const recomputed = commitmentOf(map);
  const mapIds = map.entries.map((e) => e.blind_id).sort();
  const problems: string[] = [];
  if (recomputed !== committed.commitment) problems.push(`the map hashes to ${recomputed}, the signed commitment (${committed.committed_at}) is ${committed.commitment}: its entries or salt differ from the map committed before review`);
  if (new Set(mapIds).size !== mapIds.length) problems.push(`the map lists a blind id more than once: ${mapIds.filter((id, i) => mapIds.indexOf(id) !== i).join(', ')}`);
  if (canonicalJson(mapIds) !== canonicalJson(committed.blind_ids)) {
    const missing = committed.blind_ids.filter((id) => !mapIds.includes(id));
    const extra = mapIds.filter((id) => !committed.blind_ids.includes(id));
    problems.push(`the map's blind ids are not the committed ones${missing.length > 0 ? `; missing ${missing.join(', ')}` : ''}${extra.length > 0 ? `; not committed ${extra.join(', ')}` : ''}`);
  }
  if (problems.length > 0) {
    throw new ReviewRefusal('map-mismatch', `${mapFile} does not match the commitment the controller signed before review; refusing to reveal groups from it (a wrong study folder, or a map altered after the export)`, problems);
  }

  // The packages must hold what the commitment fixed: contents swapped or edited after it would
  // credit one group's material to another.
  const changed: string[] = [];
  for (const id of committed.blind_ids) {
    const dir = path.join(pkg.pkgDir, id);
    let digest: string;
    try {
      digest = existsSync(dir) ? packageDigest(dir) : 'missing';
    } catch (error) {
      digest = error instanceof PackageDigestError ? error.message : String(error);
    }
    if (digest !== committed.package_digests[id]) changed.push(`${id}: ${digest === 'missing' ? 'the package folder is missing' : `its files hash to ${digest}, committed ${committed.package_digests[id]}`}`);
  }
  if (changed.length > 0) throw new ReviewRefusal('package-changed', `${changed.length} package(s) in ${pkg.pkgDir} are not what the commitment fixed before review; refusing to reveal groups for material that may have been swapped`, changed);
  // The study's report (its expansion decision) must be the one committed to before review.
  const reportFile = path.join(study, STUDY_FILES.json);
  const reportText = existsSync(reportFile) ? readFileSync(reportFile, 'utf8') : null;
  const reportSha256 = reportText === null ? null : hashText(reportText);
  if (reportSha256 !== committed.study_report_sha256) {
    throw new ReviewRefusal('report-changed', `${reportFile} ${reportSha256 === null ? 'is missing' : `hashes to ${reportSha256}`}, but the commitment signed before review names ${committed.study_report_sha256}: the study's report (and its expansion decision) changed after review began; refusing to unblind`);
  }
  const studyPrereg = studyPreregCheck(study, lock.prereg_sha256);
  const keyCheck = controllerKeyCheck(study, map, pkg.publicKey);

  const oracle = oracleFromReport(reportText!, reportFile, map.entries);
  const byId = new Map(lock.instances.map((i) => [i.blind_id, i]));
  const instances: UnblindedInstance[] = [...map.entries]
    .sort((a, b) => (a.blind_id < b.blind_id ? -1 : 1))
    .map((e) => {
      const locked = byId.get(e.blind_id)!;
      const figures = oracle.byBlindId.get(e.blind_id);
      return { blind_id: e.blind_id, group: e.group, replicate: e.replicate, dir: e.dir, decided_by: locked.decided_by, score: locked.score, dimensions: locked.dimensions, hard_failures: locked.hard_failures, oracle: figures === undefined || 'missing' in figures ? null : figures };
    });
  const groups = GROUPS.map((group) => groupSummary(group, instances.filter((i) => i.group === group)));
  // The locked review has settings (scores exist); its weights make each scorecard's total.
  const cards = [...folder.scores.map((s) => ({ role: 'reviewer' as const, scores: s.scores })), ...folder.arbitrations.map((s) => ({ role: 'arbiter' as const, scores: s.scores }))];
  const agreement = reviewAgreement(map.entries, cards, folder.settings!.weights, oracle);
  notes.push(...agreementNotes(agreement, instances, oracle));
  const unblinded = Unblinded.parse({
    unblinded_format_version: UNBLINDED_FORMAT_VERSION,
    commitment: committed.commitment,
    committed_at: committed.committed_at,
    lock_sha256,
    locked_at: lock.locked_at,
    prereg_sha256: lock.prereg_sha256,
    study_prereg_check: studyPrereg,
    controller_key_check: keyCheck,
    map,
    instances,
    groups,
    agreement,
    notes,
    unblinded_at: now,
  });

  const file = path.join(pkg.reviewDir, REVIEW_FILES.unblinded);
  if (existsSync(file)) {
    const previous = Unblinded.safeParse(parseJsonBytes(readBounded(file, MAX_UNBLINDED_BYTES), file, 'already-unblinded'));
    const same = previous.success && canonicalJson({ ...previous.data, unblinded_at: null }) === canonicalJson({ ...unblinded, unblinded_at: null });
    if (same) return { file, outcome: 'unchanged', unblinded: previous.data };
    throw new ReviewRefusal('already-unblinded', `${file} exists and holds another result than this unblinding; it is never replaced: move it aside (and find out why the result changed) before unblinding again`);
  }
  if (!publishNewFile(file, `${JSON.stringify(unblinded, null, 2)}\n`)) throw new ReviewRefusal('already-unblinded', `${file} appeared while unblinding (a concurrent unblind?); run the command again`);
  return { file, outcome: 'written', unblinded };
}

/**
 * The review weighed scores with one pre-registration; the study ran under one. A study folder of
 * npm run study records its hash in study.json; a different hash is refused, a missing one noted.
 */
function studyPreregCheck(study: string, reviewed: HashString): string {
  const file = path.join(study, STUDY_PLAN_FILE);
  if (!existsSync(file)) return `not checked: ${STUDY_PLAN_FILE} is absent from the study folder`;
  const plan = parseJsonBytes(readBounded(file, MAX_STUDY_PLAN_BYTES), file, 'prereg-mismatch');
  const recorded = typeof plan === 'object' && plan !== null ? (plan as Record<string, unknown>)['prereg_sha256'] : undefined;
  if (typeof recorded !== 'string') return `not checked: ${STUDY_PLAN_FILE} names no prereg_sha256`;
  if (recorded !== reviewed) {
    throw new ReviewRefusal('prereg-mismatch', `the study ran under the pre-registration ${recorded} (${file}), the review weighed scores with ${reviewed}: the locked totals do not use the study's weights; a locked review is final, so this review cannot be unblinded for this study`);
  }
  return `matches ${STUDY_PLAN_FILE}`;
}

/**
 * The package's controller.pub verified the commitment and the lock; a package folder re-keyed
 * wholesale (key, commitment and lock replaced together) would pass that. The run folders of the
 * study carry the key that signed their manifests: where present, it must be the same key.
 */
function controllerKeyCheck(study: string, map: BlindMap, publicKey: Uint8Array): string {
  const absent: string[] = [];
  let matched = 0;
  for (const entry of map.entries) {
    const file = path.join(study, entry.dir, RUN_FILES.publicKey);
    if (!existsSync(file)) {
      absent.push(entry.dir);
      continue;
    }
    let key: Uint8Array;
    try {
      key = parsePublicKeyHex(readBounded(file, 1024).toString('utf8'));
    } catch (error) {
      if (error instanceof KeyFormatError) throw new ReviewRefusal('key-mismatch', `${file} is malformed (${error.message}); the run folder's key cannot be compared with the package's`);
      throw error;
    }
    if (toHex(key) !== toHex(publicKey)) {
      throw new ReviewRefusal('key-mismatch', `${file} holds the key ${keyIdOf(key).slice(0, 16)}…, but the package's commitment and lock were signed by ${keyIdOf(publicKey).slice(0, 16)}…: the package was not published by the controller that ran this study (a wrong study folder, or a re-keyed package)`);
    }
    matched += 1;
  }
  if (matched === 0) return `not checked: no run folder of the map holds ${RUN_FILES.publicKey}`;
  return `${matched} of ${map.entries.length} run folder(s) carry the package's key${absent.length > 0 ? `; absent in ${absent.join(', ')}` : ''}`;
}

function groupSummary(group: (typeof GROUPS)[number], members: readonly UnblindedInstance[]): UnblindedGroup {
  const scores = [...members].sort((a, b) => a.replicate - b.replicate).map((m) => ({ blind_id: m.blind_id, replicate: m.replicate, score: m.score }));
  const values = scores.map((s) => s.score).sort((a, b) => a - b);
  const n = values.length;
  const median = n === 0 ? null : n % 2 === 1 ? values[(n - 1) / 2]! : round6((values[n / 2 - 1]! + values[n / 2]!) / 2);
  return {
    group,
    n,
    scores,
    mean: n === 0 ? null : round6(values.reduce((s, v) => s + v, 0) / n),
    median,
    min: n === 0 ? null : values[0]!,
    max: n === 0 ? null : values[n - 1]!,
    instances_with_hard_failure: members.filter((m) => Object.values(m.hard_failures).some(Boolean)).length,
  };
}
