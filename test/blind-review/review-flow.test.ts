// The review flow at library level (spec §8.5, DESIGN §10): import, consolidation (≥ 2 reviewers,
// gap > 15 → arbitration, a differing hard-failure decision → arbitration and no average),
// arbitration, the signed lock, and unblinding against the commitment signed before review.
// The package folder (commitment.dsse.json, controller.pub) and the study's sealed map are built
// here, as the exporter would write them, so that this flow does not depend on the exporter.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { arbitrate } from '../../blind-review/arbitration.js';
import { BLIND_REVIEW_FILES, COMMITMENT_PAYLOAD_TYPE, commitmentOf, type BlindCommitment, type BlindMap } from '../../blind-review/blind-map.js';
import type { ReviewerScores } from '../../blind-review/package-format.js';
import { lockReview, REVIEW_LOCK_PAYLOAD_TYPE, ReviewLock } from '../../blind-review/review-lock.js';
import { consolidate, openReviewPackage, readReviewFolder, REVIEW_FILES, ReviewRefusal, scoreFileName, type ReviewState } from '../../blind-review/review-state.js';
import { importScores } from '../../blind-review/score-import.js';
import { Unblinded, unblind } from '../../blind-review/unblinding.js';
import { loadOrCreateControllerKey, type ControllerKey } from '../../controller/key-store.js';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import { DIMENSIONS, type Dimension } from '../../oracle/continuity-score.js';
import { signDsse, verifyDsse } from '../../schema/dsse.js';
import { generateKeyPair, type Ed25519KeyPair } from '../../schema/ed25519-keys.js';
import { hashCanonical, hashText } from '../../schema/hash.js';
import { writePublicKey } from '../../schema/public-key-file.js';
import { COMMITTED_PREREG_SHA256, STUDY_REPORT_TEXT, writePackages } from '../support/review-fixture.js';
import { tempDir } from '../support/writer-fixture.js';
import { DEFAULT_PREREG } from '../../cli/run-defaults.js';

const IDS = ['R-0A0A0A', 'R-1B1B1B', 'R-2C2C2C'] as const;
/** Filled by writePackages: one digest per blind id (the fixture's files are the same every time). */
const PACKAGE_DIGESTS: Record<string, string> = {};
const NOW = '2026-03-06T10:00:00.000Z';

interface Fixture {
  readonly root: string;
  readonly pkgDir: string;
  readonly studyDir: string;
  readonly key: ControllerKey;
  readonly map: BlindMap;
}

/** A package folder with 3 blind ids, its signed commitment and controller.pub, and a study folder with the sealed map. */
function fixture(): Fixture {
  const root = tempDir('ds-review-');
  const key = loadOrCreateControllerKey(path.join(root, 'keys'));
  const map: BlindMap = {
    blind_map_format_version: '1.0.0',
    salt: randomBytes(32).toString('hex'),
    entries: [
      { blind_id: IDS[0], group: 'C', replicate: 1, dir: 'instances/c-r1' },
      { blind_id: IDS[1], group: 'A', replicate: 1, dir: 'instances/a-r1' },
      { blind_id: IDS[2], group: 'B', replicate: 1, dir: 'instances/b-r1' },
    ],
  };
  const studyDir = path.join(root, 'study');
  mkdirSync(studyDir);
  writeMap(studyDir, map);
  const pkgDir = path.join(root, 'packages');
  mkdirSync(pkgDir);
  writePublicKey(pkgDir, key.keys);
  Object.assign(PACKAGE_DIGESTS, writePackages(pkgDir, IDS));
  writeCommitment(pkgDir, commitmentBody(map), key.keys);
  return { root, pkgDir, studyDir, key, map };
}

function writeMap(studyDir: string, map: BlindMap): void {
  writeFileSync(path.join(studyDir, 'report.json'), STUDY_REPORT_TEXT);
  const file = path.join(studyDir, BLIND_REVIEW_FILES.sealedMap);
  writeFileSync(file, JSON.stringify(map, null, 2));
  chmodSync(file, 0o600);
}

function commitmentBody(map: BlindMap): BlindCommitment {
  return { blind_map_format_version: '1.0.0', commitment: commitmentOf(map), blind_ids: map.entries.map((e) => e.blind_id).sort(), prereg_sha256: COMMITTED_PREREG_SHA256, study_report_sha256: hashText(STUDY_REPORT_TEXT), package_digests: PACKAGE_DIGESTS, committed_at: '2026-03-05T08:00:00.000Z' };
}

function writeCommitment(pkgDir: string, body: BlindCommitment, keys: Ed25519KeyPair): void {
  writeFileSync(path.join(pkgDir, BLIND_REVIEW_FILES.commitment), JSON.stringify(signDsse(COMMITMENT_PAYLOAD_TYPE, body, keys.secretKey, keys.publicKey), null, 2));
}

type Hard = Partial<Record<(typeof HARD_FAILURE_IDS)[number], boolean>>;

/** A scorecard: every dimension `value`, or per dimension. */
function card(blindId: string, reviewer: string, value: number | Record<Dimension, number>, hard: Hard = {}, comments = ''): ReviewerScores {
  const dimensions = typeof value === 'number' ? (Object.fromEntries(DIMENSIONS.map((d) => [d, value])) as Record<Dimension, number>) : value;
  const hard_failures = Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, hard[id] ?? false])) as ReviewerScores['hard_failures'];
  return { score_format_version: '1.0.0', blind_id: blindId, reviewer, dimensions, hard_failures, comments, saved_at: '2026-03-06T09:00:00.000Z' };
}

let counter = 0;
function save(f: Fixture, scores: ReviewerScores): string {
  counter += 1;
  const dir = path.join(f.root, 'inbox');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${counter}-${scores.reviewer}-${scores.blind_id}.json`);
  writeFileSync(file, JSON.stringify(scores, null, 2));
  return file;
}

function importCards(f: Fixture, ...cards: ReviewerScores[]): ReviewState {
  return importScores(f.pkgDir, cards.map((c) => save(f, c)), { preregFile: null, defaultPreregFile: DEFAULT_PREREG, now: NOW }).state;
}

function instance(state: ReviewState, blindId: string) {
  return state.instances.find((i) => i.blind_id === blindId)!;
}

function refusal(fn: () => unknown): ReviewRefusal {
  try {
    fn();
  } catch (error) {
    if (error instanceof ReviewRefusal) return error;
    throw error;
  }
  throw new Error('expected a refusal, but the call succeeded');
}

/** Every instance scored by alice and bob within the rules; R-2C2C2C disagrees on a hard failure and is arbitrated by carol. */
function lockedReview(): Fixture {
  const f = fixture();
  importCards(
    f,
    card(IDS[0], 'alice', 90),
    card(IDS[0], 'bob', 80),
    card(IDS[1], 'alice', 40),
    card(IDS[1], 'bob', 50),
    card(IDS[2], 'alice', 70, { duplicate_side_effect: true }),
    card(IDS[2], 'bob', 70),
  );
  arbitrate(f.pkgDir, save(f, card(IDS[2], 'carol', 60, { duplicate_side_effect: true })));
  lockReview(f.pkgDir, f.key.keys, NOW);
  return f;
}

describe('import and consolidation', () => {
  test('two reviewers agreeing: the mean of their totals and dimensions, and the decisions they agree on', () => {
    const f = fixture();
    const dims1 = { state_recovery: 80, re_planning: 60, experience_influence: 70, evidence_integrity: 90, recovery: 50 };
    const dims2 = { state_recovery: 70, re_planning: 70, experience_influence: 80, evidence_integrity: 80, recovery: 60 };
    const state = importCards(f, card(IDS[0], 'alice', dims1, { fact_contradicts_store: true }), card(IDS[0], 'bob', dims2, { fact_contradicts_store: true }));
    const i = instance(state, IDS[0]);
    // Default weights 40/15/15/20/10: alice 32 + 9 + 10.5 + 18 + 5 = 74.5; bob 28 + 10.5 + 12 + 16 + 6 = 72.5.
    expect(i.reviewers.map((r) => [r.reviewer, r.total])).toEqual([
      ['alice', 74.5],
      ['bob', 72.5],
    ]);
    expect(i.status).toBe('consolidated');
    expect(i.score_gap).toBe(2);
    expect(i.consolidated).toEqual({
      decided_by: 'reviewers_mean',
      score: 73.5,
      dimensions: { state_recovery: 75, re_planning: 65, experience_influence: 75, evidence_integrity: 85, recovery: 55 },
      hard_failures: { ...card(IDS[0], 'x', 0).hard_failures, fact_contradicts_store: true },
    });
    expect(i.summary).toBe('consolidated 73.5 (mean of alice, bob; gap 2); hard failures: found fact_contradicts_store');
    expect(instance(state, IDS[1]).summary).toBe('incomplete (0 of 2 reviewers)');
    expect(state.counts).toEqual({ incomplete: 2, arbitration_required: 0, consolidated: 1, decided_by_arbitration: 0 });
    expect(state.ready_to_lock).toBe(false);
    // The pre-registration is recorded by the first import.
    const settings = JSON.parse(readFileSync(path.join(f.pkgDir, 'review', REVIEW_FILES.settings), 'utf8')) as { prereg_sha256: string; weights: unknown };
    expect(settings.prereg_sha256).toBe(hashCanonical(JSON.parse(readFileSync(DEFAULT_PREREG, 'utf8'))));
    expect(settings.weights).toEqual({ state_recovery: 40, re_planning: 15, experience_influence: 15, evidence_integrity: 20, recovery: 10 });
  });

  test('one reviewer only: incomplete, whatever they scored', () => {
    const f = fixture();
    const state = importCards(f, card(IDS[1], 'alice', 55));
    expect(instance(state, IDS[1])).toMatchObject({ status: 'incomplete', consolidated: null, summary: 'incomplete (1 of 2 reviewers: alice)' });
  });

  test('a gap of 15.01 points requires arbitration and produces no average; exactly 15 does not', () => {
    const f = fixture();
    const state = importCards(f, card(IDS[0], 'alice', 80), card(IDS[0], 'bob', 64.99), card(IDS[1], 'alice', 80), card(IDS[1], 'bob', 65));
    const flagged = instance(state, IDS[0]);
    expect(flagged.reviewers.map((r) => r.total)).toEqual([80, 64.99]);
    expect(flagged).toMatchObject({ status: 'arbitration_required', score_gap: 15.01, consolidated: null, disagreements: [{ kind: 'score_gap', gap: 15.01 }] });
    expect(flagged.summary).toMatch(/^arbitration required \(score gap 15\.01\)/);
    const exact = instance(state, IDS[1]);
    expect(exact).toMatchObject({ status: 'consolidated', score_gap: 15, disagreements: [] });
    expect(exact.consolidated!.score).toBe(72.5);
  });

  test('a gap between any two of three reviewers counts, not only the first two', () => {
    const f = fixture();
    const state = importCards(f, card(IDS[0], 'alice', 70), card(IDS[0], 'bob', 75), card(IDS[0], 'dora', 90));
    expect(instance(state, IDS[0])).toMatchObject({ status: 'arbitration_required', score_gap: 20 });
  });

  test('a differing hard-failure decision requires arbitration even with equal scores: never averaged', () => {
    const f = fixture();
    const state = importCards(f, card(IDS[0], 'alice', 85, { duplicate_side_effect: true }), card(IDS[0], 'bob', 85));
    const i = instance(state, IDS[0]);
    expect(i.status).toBe('arbitration_required');
    expect(i.score_gap).toBe(0);
    expect(i.consolidated).toBeNull();
    expect(i.disagreements).toEqual([{ kind: 'hard_failure', id: 'duplicate_side_effect', found_by: ['alice'], not_found_by: ['bob'] }]);
    expect(i.summary).toMatch(/^arbitration required \(hard-failure decision differs: duplicate_side_effect\)/);
  });

  test('a score for a blind id outside the commitment is refused, and nothing of that import is written', () => {
    const f = fixture();
    const r = refusal(() => importScores(f.pkgDir, [save(f, card(IDS[0], 'alice', 80)), save(f, card('R-FFFFFF', 'alice', 80))], { preregFile: null, defaultPreregFile: DEFAULT_PREREG, now: NOW }));
    expect(r.problem).toBe('unknown-blind-id');
    expect(r.details.join('\n')).toMatch(/blind id R-FFFFFF is not one of the 3 packages of the signed commitment/);
    expect(existsSync(path.join(f.pkgDir, 'review'))).toBe(false);
  });

  test('a different scorecard of the same reviewer for the same instance is refused with both hashes; an identical one is a no-op', () => {
    const f = fixture();
    const first = card(IDS[0], 'alice', 80);
    importCards(f, first);
    const again = importScores(f.pkgDir, [save(f, first)], { preregFile: null, defaultPreregFile: DEFAULT_PREREG, now: NOW });
    expect(again.files).toMatchObject([{ outcome: 'unchanged', reviewer: 'alice', blind_id: IDS[0] }]);
    const changed = save(f, card(IDS[0], ' Alice', 81));
    const r = refusal(() => importScores(f.pkgDir, [changed], { preregFile: null, defaultPreregFile: DEFAULT_PREREG, now: NOW }));
    expect(r.problem).toBe('conflicting-score');
    const stored = path.join(f.pkgDir, 'review', 'scores', scoreFileName(IDS[0], 'alice'));
    expect(r.details[0]).toContain(hashText(readFileSync(stored)));
    expect(r.details[0]).toContain(hashText(readFileSync(changed)));
    expect(JSON.parse(readFileSync(stored, 'utf8'))).toEqual(first);
  });

  test('a file that is not a scorecard is refused, naming the file and the field', () => {
    const f = fixture();
    const bad = save(f, { ...card(IDS[0], 'alice', 80), dimensions: { ...card(IDS[0], 'alice', 80).dimensions, recovery: 101 } });
    const r = refusal(() => importScores(f.pkgDir, [bad], { preregFile: null, defaultPreregFile: DEFAULT_PREREG, now: NOW }));
    expect(r.problem).toBe('invalid-score-file');
    expect(r.details[0]).toMatch(/not a reviewer's scorecard: dimensions\.recovery/);
  });

  test('the weights come from the pre-registration the commitment names: another one is refused, first or later', () => {
    const f = fixture();
    const prereg = JSON.parse(readFileSync(DEFAULT_PREREG, 'utf8')) as { scoring: { dimensions: Record<string, { weight: number }> } };
    prereg.scoring.dimensions['state_recovery']!.weight = 20;
    prereg.scoring.dimensions['recovery']!.weight = 30;
    const other = path.join(f.root, 'other-prereg.json');
    writeFileSync(other, JSON.stringify(prereg));
    const dims = { state_recovery: 100, re_planning: 0, experience_influence: 0, evidence_integrity: 0, recovery: 0 };
    // Weights chosen after the export (here: state recovery halved) are refused at the first import.
    const first = refusal(() => importScores(f.pkgDir, [save(f, card(IDS[0], 'alice', dims)), save(f, card(IDS[0], 'bob', dims))], { preregFile: other, defaultPreregFile: DEFAULT_PREREG, now: NOW }));
    expect(first.problem).toBe('prereg-mismatch');
    expect(first.message).toContain(COMMITTED_PREREG_SHA256);
    const state = importScores(f.pkgDir, [save(f, card(IDS[0], 'alice', dims)), save(f, card(IDS[0], 'bob', dims))], { preregFile: DEFAULT_PREREG, defaultPreregFile: DEFAULT_PREREG, now: NOW }).state;
    expect(instance(state, IDS[0]).consolidated!.score).toBe(40);
    expect(state.prereg_sha256).toBe(COMMITTED_PREREG_SHA256);
    const later = refusal(() => importScores(f.pkgDir, [save(f, card(IDS[1], 'alice', 50))], { preregFile: other, defaultPreregFile: DEFAULT_PREREG, now: NOW }));
    expect(later.problem).toBe('prereg-mismatch');
  });

  test('a file dropped into review/scores by hand is reported, not silently used', () => {
    const f = fixture();
    importCards(f, card(IDS[0], 'alice', 80));
    writeFileSync(path.join(f.pkgDir, 'review', 'scores', 'bob.json'), JSON.stringify(card(IDS[0], 'bob', 80)));
    const pkg = openReviewPackage(f.pkgDir);
    const r = refusal(() => readReviewFolder(pkg));
    expect(r.problem).toBe('inconsistent-review-folder');
    expect(r.details[0]).toMatch(/review\/scores\/bob\.json: holds R-0A0A0A by "bob", which is stored as scores\/R-0A0A0A--bob-/);
  });
});

describe('arbitration', () => {
  test('an arbiter decides a flagged instance; the decision is stated as by arbitration', () => {
    const f = fixture();
    importCards(f, card(IDS[0], 'alice', 85, { duplicate_side_effect: true }), card(IDS[0], 'bob', 85));
    const r = arbitrate(f.pkgDir, save(f, card(IDS[0], 'carol', 60, { duplicate_side_effect: true })));
    expect(r.outcome).toBe('arbitrated');
    expect(r.decided).toMatch(/^arbitration required \(hard-failure decision differs: duplicate_side_effect\)/);
    expect(r.instance).toMatchObject({ status: 'decided_by_arbitration', arbiter: { reviewer: 'carol', total: 60 } });
    expect(r.instance.consolidated).toMatchObject({ decided_by: 'arbitration', score: 60, hard_failures: { duplicate_side_effect: true } });
    expect(r.instance.summary).toMatch(/^decided by arbitration: 60 by carol \(reviewers alice, bob disagreed: hard-failure decision differs: duplicate_side_effect\)/);
    // The same arbitration again: a no-op; another one: refused; a further reviewer: refused.
    expect(arbitrate(f.pkgDir, save(f, card(IDS[0], 'carol', 60, { duplicate_side_effect: true }))).outcome).toBe('unchanged');
    expect(refusal(() => arbitrate(f.pkgDir, save(f, card(IDS[0], 'dora', 70)))).problem).toBe('conflicting-arbitration');
    expect(refusal(() => importCards(f, card(IDS[0], 'erin', 85))).problem).toBe('already-arbitrated');
  });

  test('refused for an instance not flagged (reviewers agree, or incomplete), and for an arbiter who reviewed it', () => {
    const f = fixture();
    importCards(f, card(IDS[0], 'alice', 80), card(IDS[0], 'bob', 70), card(IDS[1], 'alice', 80), card(IDS[2], 'alice', 90), card(IDS[2], 'bob', 50));
    const agreed = refusal(() => arbitrate(f.pkgDir, save(f, card(IDS[0], 'carol', 60))));
    expect(agreed.problem).toBe('not-flagged');
    expect(agreed.message).toMatch(/R-0A0A0A is not flagged for arbitration — it is consolidated 75/);
    expect(refusal(() => arbitrate(f.pkgDir, save(f, card(IDS[1], 'carol', 60)))).problem).toBe('not-flagged');
    const self = refusal(() => arbitrate(f.pkgDir, save(f, card(IDS[2], 'BOB', 60))));
    expect(self.problem).toBe('arbiter-is-reviewer');
    expect(readdirSync(path.join(f.pkgDir, 'review')).includes('arbitration')).toBe(false);
  });
});

describe('lock', () => {
  test('refused while an instance is incomplete or awaits arbitration, listing them', () => {
    const f = fixture();
    expect(refusal(() => lockReview(f.pkgDir, f.key.keys, NOW)).problem).toBe('not-ready');
    importCards(f, card(IDS[0], 'alice', 80), card(IDS[0], 'bob', 80), card(IDS[1], 'alice', 80), card(IDS[1], 'bob', 50), card(IDS[2], 'alice', 80));
    const r = refusal(() => lockReview(f.pkgDir, f.key.keys, NOW));
    expect(r.problem).toBe('not-ready');
    expect(r.message).toMatch(/1 instance\(s\) incomplete and 1 awaiting arbitration/);
    expect(r.details).toEqual([expect.stringMatching(/^R-1B1B1B: arbitration required \(score gap 30\)/), 'R-2C2C2C: incomplete (1 of 2 reviewers: alice)']);
    importCards(f, card(IDS[2], 'bob', 80));
    expect(refusal(() => lockReview(f.pkgDir, f.key.keys, NOW)).details).toEqual([expect.stringMatching(/^R-1B1B1B: arbitration required/)]);
    expect(existsSync(path.join(f.pkgDir, 'review', REVIEW_FILES.lock))).toBe(false);
  });

  test('signs the consolidated scores, decisions, file hashes and prereg hash; never replaced; no change after it', () => {
    const f = lockedReview();
    const envelope = JSON.parse(readFileSync(path.join(f.pkgDir, 'review', REVIEW_FILES.lock), 'utf8')) as unknown;
    const verified = verifyDsse(envelope, REVIEW_LOCK_PAYLOAD_TYPE, f.key.keys.publicKey);
    expect(verified.ok).toBe(true);
    const lock = ReviewLock.parse((verified as { body: unknown }).body);
    expect(lock.commitment).toBe(commitmentOf(f.map));
    expect(lock.prereg_sha256).toBe(hashCanonical(JSON.parse(readFileSync(DEFAULT_PREREG, 'utf8'))));
    expect(lock.locked_at).toBe(NOW);
    expect(lock.files.map((x) => x.path)).toEqual(['arbitration/R-2C2C2C.json', 'review.json', ...IDS.flatMap((id) => [`scores/${scoreFileName(id, 'alice')}`, `scores/${scoreFileName(id, 'bob')}`])].sort());
    for (const x of lock.files) expect(x.sha256).toBe(hashText(readFileSync(path.join(f.pkgDir, 'review', x.path))));
    expect(lock.instances.map((i) => [i.blind_id, i.decided_by, i.score, i.hard_failures.duplicate_side_effect, i.arbitration_reason])).toEqual([
      [IDS[0], 'reviewers_mean', 85, false, null],
      [IDS[1], 'reviewers_mean', 45, false, null],
      [IDS[2], 'arbitration', 60, true, 'hard-failure decision differs: duplicate_side_effect'],
    ]);
    expect(refusal(() => lockReview(f.pkgDir, f.key.keys, NOW)).problem).toBe('already-locked');
    expect(refusal(() => importCards(f, card(IDS[0], 'dora', 80))).problem).toBe('locked');
    expect(refusal(() => arbitrate(f.pkgDir, save(f, card(IDS[0], 'dora', 80)))).problem).toBe('locked');
    expect(consolidate(openReviewPackage(f.pkgDir), readReviewFolder(openReviewPackage(f.pkgDir))).locked).toBe(true);
  });

  test('refused with a key other than the package controller.pub', () => {
    const f = fixture();
    importCards(f, ...IDS.flatMap((id) => [card(id, 'alice', 80), card(id, 'bob', 80)]));
    const r = refusal(() => lockReview(f.pkgDir, generateKeyPair(), NOW));
    expect(r.problem).toBe('wrong-key');
    expect(r.message).toMatch(/use the --key-dir of the controller that exported the package/);
  });
});

describe('unblind', () => {
  test('refused before the lock, without reading the map', () => {
    const f = fixture();
    importCards(f, ...IDS.flatMap((id) => [card(id, 'alice', 80), card(id, 'bob', 80)]));
    writeFileSync(path.join(f.studyDir, BLIND_REVIEW_FILES.sealedMap), 'not even JSON');
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('not-locked');
    expect(r.message).toMatch(/is not locked .* run `npm run review -- lock /);
    expect(existsSync(path.join(f.pkgDir, 'review', REVIEW_FILES.unblinded))).toBe(false);
  });

  test('reveals the map joined with the locked scores and writes unblinded.json', () => {
    const f = lockedReview();
    writeFileSync(path.join(f.studyDir, 'study.json'), JSON.stringify({ prereg_sha256: hashCanonical(JSON.parse(readFileSync(DEFAULT_PREREG, 'utf8'))) }));
    mkdirSync(path.join(f.studyDir, 'instances', 'c-r1'), { recursive: true });
    writePublicKey(path.join(f.studyDir, 'instances', 'c-r1'), f.key.keys);
    const r = unblind(f.pkgDir, f.studyDir, NOW);
    expect(r.outcome).toBe('written');
    const u = Unblinded.parse(JSON.parse(readFileSync(path.join(f.pkgDir, 'review', REVIEW_FILES.unblinded), 'utf8')));
    expect(u).toEqual(r.unblinded);
    expect(u.map).toEqual(f.map);
    expect(u.study_prereg_check).toBe('matches study.json');
    expect(u.controller_key_check).toBe("1 of 3 run folder(s) carry the package's key; absent in instances/a-r1, instances/b-r1");
    expect(u.instances.map((i) => [i.blind_id, i.group, i.replicate, i.score, i.decided_by])).toEqual([
      [IDS[0], 'C', 1, 85, 'reviewers_mean'],
      [IDS[1], 'A', 1, 45, 'reviewers_mean'],
      [IDS[2], 'B', 1, 60, 'arbitration'],
    ]);
    expect(u.groups.map((g) => [g.group, g.n, g.scores.map((s) => s.score), g.mean, g.instances_with_hard_failure])).toEqual([
      ['A', 1, [45], 45, 0],
      ['B', 1, [60], 60, 1],
      ['C', 1, [85], 85, 0],
    ]);
    // This fixture's report.json is no study report: nothing is compared with the oracle, and the notes say so.
    expect(u.agreement.oracle.instances).toBe(0);
    expect(u.agreement.oracle.missing.map((m) => m.blind_id)).toEqual([...IDS]);
    expect(u.instances.every((i) => i.oracle === null)).toBe(true);
    expect(u.agreement.reviewer_oracle.dimensions.every((d) => d.pairs === 0)).toBe(true);
    expect(u.notes).toEqual([expect.stringMatching(/^reviewer–oracle agreement not compared: .*report\.json is not a study report this build reads/)]);
    // Reviewers with each other: alice and bob scored all three; they differ on one hard failure of 15 decisions (κ 0: alice's one "found" is no better than chance), never by more than 15 points.
    expect(u.agreement.reviewer_reviewer).toHaveLength(1);
    const pair = u.agreement.reviewer_reviewer[0]!;
    expect(pair.reviewers).toEqual(['alice', 'bob']);
    expect(pair.packages).toBe(3);
    expect(pair.hard_failures.kappa).toMatchObject({ items: 15, observed: 0.933333, kappa: 0 });
    expect(pair.hard_failures.disagreements).toEqual([{ blind_id: IDS[2], group: 'B', replicate: 1, id: 'duplicate_side_effect', found_by: 'alice', not_found_by: 'bob' }]);
    expect(pair.dimensions).toMatchObject({ mean_abs_diff: 6.666667, within_tolerance: 15, disagreements: [] });
    expect(pair.dimensions.kappa).toMatchObject({ items: 15, observed: 1, kappa: 1 });
    // Again: the same result, the file kept.
    expect(unblind(f.pkgDir, f.studyDir, '2026-03-07T00:00:00.000Z').outcome).toBe('unchanged');
  });

  test('a forged map (groups swapped between two blind ids) is refused as not matching the commitment', () => {
    const f = lockedReview();
    const [a, b, c] = f.map.entries as [BlindMap['entries'][number], BlindMap['entries'][number], BlindMap['entries'][number]];
    writeMap(f.studyDir, { ...f.map, entries: [{ ...a, group: b.group, dir: b.dir }, { ...b, group: a.group, dir: a.dir }, c] });
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('map-mismatch');
    expect(r.message).toMatch(/does not match the commitment the controller signed before review/);
    expect(r.details[0]).toMatch(new RegExp(`the map hashes to sha256:[0-9a-f]{64}, the signed commitment .* is ${commitmentOf(f.map)}`));
    expect(existsSync(path.join(f.pkgDir, 'review', REVIEW_FILES.unblinded))).toBe(false);
  });

  test('a study report changed after the export (its expansion decision) is refused', () => {
    const f = lockedReview();
    writeFileSync(path.join(f.studyDir, 'report.json'), STUDY_REPORT_TEXT.replace('before review', 'after review'));
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('report-changed');
    expect(r.message).toMatch(/the study's report \(and its expansion decision\) changed after review began/);
    expect(existsSync(path.join(f.pkgDir, 'review', REVIEW_FILES.unblinded))).toBe(false);
  });

  test('package contents swapped between two blind ids after the commitment are refused', () => {
    const f = lockedReview();
    const [x, y] = [path.join(f.pkgDir, IDS[0], 'manifest.json'), path.join(f.pkgDir, IDS[1], 'manifest.json')];
    const [a, b] = [readFileSync(x, 'utf8'), readFileSync(y, 'utf8')];
    writeFileSync(x, b);
    writeFileSync(y, a);
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('package-changed');
    expect(r.details).toHaveLength(2);
    expect(r.details[0]).toMatch(new RegExp(`^${IDS[0]}: its files hash to sha256:[0-9a-f]{64}, committed ${PACKAGE_DIGESTS[IDS[0]]}`));
  });

  test('a map with another salt is refused', () => {
    const f = lockedReview();
    writeMap(f.studyDir, { ...f.map, salt: randomBytes(32).toString('hex') });
    expect(refusal(() => unblind(f.pkgDir, f.studyDir, NOW)).problem).toBe('map-mismatch');
  });

  test('a map without one of the committed blind ids is refused, naming it', () => {
    const f = lockedReview();
    writeMap(f.studyDir, { ...f.map, entries: f.map.entries.slice(0, 2) });
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('map-mismatch');
    expect(r.details.join('\n')).toMatch(/missing R-2C2C2C/);
  });

  test('a commitment signed by another key is refused', () => {
    const f = lockedReview();
    writeCommitment(f.pkgDir, commitmentBody(f.map), generateKeyPair());
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('bad-commitment');
    expect(r.message).toMatch(/does not verify with .*controller\.pub: no signature by the trusted key/);
  });

  test('a package re-keyed wholesale (another controller.pub and commitment) no longer verifies the lock', () => {
    const f = lockedReview();
    const other = generateKeyPair();
    writePublicKey(f.pkgDir, other);
    writeCommitment(f.pkgDir, commitmentBody(f.map), other);
    expect(refusal(() => unblind(f.pkgDir, f.studyDir, NOW)).problem).toBe('lock-invalid');
  });

  test("a run folder of the study carrying another controller key than the package's is refused", () => {
    const f = lockedReview();
    mkdirSync(path.join(f.studyDir, 'instances', 'a-r1'), { recursive: true });
    writePublicKey(path.join(f.studyDir, 'instances', 'a-r1'), generateKeyPair());
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('key-mismatch');
    expect(r.message).toMatch(/the package was not published by the controller that ran this study/);
  });

  test('a score file edited after the lock is refused', () => {
    const f = lockedReview();
    const file = path.join(f.pkgDir, 'review', 'scores', scoreFileName(IDS[1], 'bob'));
    writeFileSync(file, JSON.stringify(card(IDS[1], 'bob', 95)));
    const r = refusal(() => unblind(f.pkgDir, f.studyDir, NOW));
    expect(r.problem).toBe('changed-after-lock');
    expect(r.details).toEqual([expect.stringMatching(new RegExp(`^review/scores/${scoreFileName(IDS[1], 'bob')}: changed after the lock \\(locked sha256:`))]);
  });

  test('the study ran under another pre-registration than the review weighed with: refused', () => {
    const f = lockedReview();
    writeFileSync(path.join(f.studyDir, 'study.json'), JSON.stringify({ prereg_sha256: `sha256:${'1'.repeat(64)}` }));
    expect(refusal(() => unblind(f.pkgDir, f.studyDir, NOW)).problem).toBe('prereg-mismatch');
  });
});
