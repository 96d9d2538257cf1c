// The whole blind review on a real study (issue 7's "done when"): export → leak check →
// two reviewers' scorecards → import → lock → unblind, and the unblinded map is the study's own
// (every blind id back to the group whose signed manifest ran it). Plus the two refusals that
// guard the order: unblinding before the lock, and with a map that is not the committed one.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { BLIND_REVIEW_FILES, BlindMap } from '../../blind-review/blind-map.js';
import { exportStudy } from '../../blind-review/exporter.js';
import { checkLeaks, readLeakContext } from '../../blind-review/leak-check.js';
import { PACKAGE_FILES, PackageManifest, ReviewerScores } from '../../blind-review/package-format.js';
import { arbitrate } from '../../blind-review/arbitration.js';
import { lockReview } from '../../blind-review/review-lock.js';
import { ReviewRefusal } from '../../blind-review/review-state.js';
import { importScores } from '../../blind-review/score-import.js';
import { Unblinded, unblind } from '../../blind-review/unblinding.js';
import { StudyReport } from '../../oracle/study-report.js';
import { runCli } from '../support/cli.js';
import { GROUP_CAPABILITIES } from '../../design/manifest.js';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import { DIMENSIONS } from '../../oracle/continuity-score.js';
import { loadRunRecord } from '../../oracle/run-record.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { copyStudy, makeBlindStudy, type BlindStudy } from '../support/blind-study.js';
import { launchChromium, openOffline } from '../support/chromium.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';
import { DEFAULT_PREREG } from '../../cli/run-defaults.js';

const NOW = '2026-03-10T09:00:00.000Z';
let study: BlindStudy;

beforeAll(async () => {
  study = await makeBlindStudy();
}, 180_000);

function scorecard(blindId: string, reviewer: string, points: number): ReviewerScores {
  return {
    score_format_version: '1.0.0',
    blind_id: blindId,
    reviewer,
    dimensions: Object.fromEntries(DIMENSIONS.map((d) => [d, points])) as ReviewerScores['dimensions'],
    hard_failures: Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, false])) as ReviewerScores['hard_failures'],
    comments: `scored by ${reviewer}`,
    saved_at: NOW,
  };
}

/** Opens an exported scorecard in Chromium (network blocked), fills every field with `points`, saves, and returns the saved file. */
async function scoreInBrowser(scorecardFile: string, outDir: string, reviewer: string, points: number): Promise<string> {
  const browser = await launchChromium();
  try {
    const { page, context, offFileRequests } = await openOffline(browser, scorecardFile, 10_000, { acceptDownloads: true });
    for (const d of DIMENSIONS) await page.fill(`#dim-${d}`, String(points));
    for (const id of HARD_FAILURE_IDS) await page.check(`#hf-${id}-no`);
    await page.fill('#reviewer', reviewer);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save-scores')]);
    const saved = ReviewerScores.parse(JSON.parse(readFileSync(await download.path(), 'utf8')));
    expect(offFileRequests).toEqual([]);
    await context.close();
    const file = path.join(outDir, `${saved.blind_id}-${reviewer}.json`);
    writeFileSync(file, JSON.stringify(saved));
    return file;
  } finally {
    await browser.close();
  }
}

function refusalOf(run: () => unknown): ReviewRefusal {
  try {
    run();
  } catch (error) {
    if (error instanceof ReviewRefusal) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('blind review of a real study', () => {
  test('export passes its leak check; review (one card saved from the real scorecard in Chromium), lock and unblind give back exactly the study’s groups', async () => {
    const studyDir = copyStudy(study.studyDir);
    const pkgDir = path.join(tempDir('ds-e2e-pkg-'), 'packages');
    const exported = exportStudy(studyDir, pkgDir, { scenariosDir: SCENARIOS_DIR, keys: study.setup.key.keys });
    expect(exported.packages).toHaveLength(3);
    expect(exported.leakCheck.findings).toEqual([]);
    // The leak check run again from outside on the published folder agrees.
    expect(checkLeaks(pkgDir, readLeakContext(studyDir, SCENARIOS_DIR)).findings).toEqual([]);
    for (const p of exported.packages) {
      const manifest = PackageManifest.parse(JSON.parse(readFileSync(path.join(pkgDir, p.blind_id, PACKAGE_FILES.manifest), 'utf8')));
      expect(manifest.blind_id).toBe(p.blind_id);
    }

    // Two reviewers per package, within 15 points of each other: no arbitration. Reviewer "ada"
    // scores the first package in its real exported scorecard, in Chromium (the saved file is
    // what gets imported); the other cards are written directly.
    const cards = path.join(tempDir('ds-e2e-cards-'));
    const files: string[] = [await scoreInBrowser(path.join(pkgDir, exported.packages[0]!.blind_id, PACKAGE_FILES.scorecard), cards, 'ada', 60)];
    for (const [k, p] of exported.packages.entries()) {
      for (const [reviewer, points] of [['ada', 60 + k * 10], ['bo', 65 + k * 10]] as const) {
        if (k === 0 && reviewer === 'ada') continue;
        const file = path.join(cards, `${p.blind_id}-${reviewer}.json`);
        writeFileSync(file, JSON.stringify(scorecard(p.blind_id, reviewer, points)));
        files.push(file);
      }
    }

    // Before the lock nothing is revealed.
    expect(refusalOf(() => unblind(pkgDir, studyDir, NOW)).message).toMatch(/lock/i);
    importScores(pkgDir, files, { preregFile: study.setup.preregFile, defaultPreregFile: DEFAULT_PREREG, now: NOW });
    expect(refusalOf(() => unblind(pkgDir, studyDir, NOW)).message).toMatch(/lock/i);
    lockReview(pkgDir, study.setup.key.keys, NOW);

    const result = unblind(pkgDir, studyDir, NOW);
    const map = BlindMap.parse(JSON.parse(readFileSync(path.join(studyDir, BLIND_REVIEW_FILES.sealedMap), 'utf8')));
    expect(result.unblinded.instances.map((i) => [i.blind_id, i.group, i.replicate])).toEqual(
      [...map.entries].sort((a, b) => (a.blind_id < b.blind_id ? -1 : 1)).map((e) => [e.blind_id, e.group, e.replicate]),
    );
    // Each revealed group is the group whose signed capabilities ran that folder.
    for (const i of result.unblinded.instances) {
      const record = loadRunRecord(path.join(studyDir, i.dir), SCENARIOS_DIR);
      expect(canonicalJson(record.manifest!.capabilities)).toBe(canonicalJson(GROUP_CAPABILITIES[i.group]));
    }
    expect(new Set(result.unblinded.instances.map((i) => i.group))).toEqual(new Set(['A', 'B', 'C']));
  }, 120_000);

  test('after the lock, a map that is not the committed one (two groups swapped) reveals nothing', () => {
    const studyDir = copyStudy(study.studyDir);
    const pkgDir = path.join(tempDir('ds-e2e-pkg-'), 'packages');
    const exported = exportStudy(studyDir, pkgDir, { scenariosDir: SCENARIOS_DIR, keys: study.setup.key.keys });
    const cards = tempDir('ds-e2e-cards-');
    const files = exported.packages.flatMap((p) =>
      ['ada', 'bo'].map((reviewer) => {
        const file = path.join(cards, `${p.blind_id}-${reviewer}.json`);
        writeFileSync(file, JSON.stringify(scorecard(p.blind_id, reviewer, 70)));
        return file;
      }),
    );
    importScores(pkgDir, files, { preregFile: study.setup.preregFile, defaultPreregFile: DEFAULT_PREREG, now: NOW });
    lockReview(pkgDir, study.setup.key.keys, NOW);
    const mapFile = path.join(studyDir, BLIND_REVIEW_FILES.sealedMap);
    const map = BlindMap.parse(JSON.parse(readFileSync(mapFile, 'utf8')));
    const [a, b, ...rest] = map.entries;
    writeFileSync(mapFile, JSON.stringify({ ...map, entries: [{ ...a!, group: b!.group }, { ...b!, group: a!.group }, ...rest] }));
    const r = refusalOf(() => unblind(pkgDir, studyDir, NOW));
    expect(r.problem).toBe('map-mismatch');
  }, 120_000);

  test('unblinding reports agreement with the oracle per dimension and hard failure, and between reviewers (kappa), each disagreement by name; the command prints it as a table', async () => {
    const studyDir = copyStudy(study.studyDir);
    // The real study's oracle found one hard failure: A (no state kept) stated a FACT from a source the run had refuted.
    const report = StudyReport.parse(JSON.parse(readFileSync(path.join(studyDir, 'report.json'), 'utf8')));
    expect(report.instances.map((i) => [i.group, i.hard_failures.map((h) => h.id)])).toEqual([['A', ['fact_contradicts_store']], ['B', []], ['C', []]]);
    const pkgDir = path.join(tempDir('ds-e2e-pkg-'), 'packages');
    exportStudy(studyDir, pkgDir, { scenariosDir: SCENARIOS_DIR, keys: study.setup.key.keys });
    const map = BlindMap.parse(JSON.parse(readFileSync(path.join(studyDir, BLIND_REVIEW_FILES.sealedMap), 'utf8')));
    const idOf = (group: string): string => map.entries.find((e) => e.group === group)!.blind_id;
    const oracleOf = (blindId: string) => report.instances.find((i) => i.group === map.entries.find((e) => e.blind_id === blindId)!.group)!;

    // ada and bo score every package near the oracle's own dimensions and find no hard failure, except: bo finds a
    // duplicate side effect in B's package (forged: the oracle found none; arbitrated by cy, who finds none), and bo
    // puts C's state_recovery 30 points below the oracle's. Nobody finds A's contradicting FACT.
    const cards = tempDir('ds-e2e-cards-');
    const write = (name: string, c: ReviewerScores): string => {
      const file = path.join(cards, name);
      writeFileSync(file, JSON.stringify(c));
      return file;
    };
    const near = (blindId: string, reviewer: string, shift: number, extra: Partial<ReviewerScores['dimensions']> = {}, found: Partial<ReviewerScores['hard_failures']> = {}): ReviewerScores => {
      const o = oracleOf(blindId).dimensions!;
      const dimensions = Object.fromEntries(DIMENSIONS.map((d) => [d, Math.max(0, Math.min(100, o[d] + shift))])) as ReviewerScores['dimensions'];
      return { ...scorecard(blindId, reviewer, 0), dimensions: { ...dimensions, ...extra }, hard_failures: { ...scorecard(blindId, reviewer, 0).hard_failures, ...found } };
    };
    const [a, b, c] = [idOf('A'), idOf('B'), idOf('C')];
    const cState = Math.max(0, oracleOf(c).dimensions!.state_recovery - 30);
    const files = [
      write('a-ada.json', near(a, 'ada', 2)),
      write('a-bo.json', near(a, 'bo', -2)),
      write('b-ada.json', near(b, 'ada', 1)),
      write('b-bo.json', near(b, 'bo', 0, {}, { duplicate_side_effect: true })),
      write('c-ada.json', near(c, 'ada', 0)),
      write('c-bo.json', near(c, 'bo', 0, { state_recovery: cState })),
    ];
    importScores(pkgDir, files, { preregFile: study.setup.preregFile, defaultPreregFile: DEFAULT_PREREG, now: NOW });
    arbitrate(pkgDir, write('b-cy.json', near(b, 'cy', 0)));
    lockReview(pkgDir, study.setup.key.keys, NOW);

    const printed = await runCli('review', ['unblind', pkgDir, '--study', studyDir]);
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    const u = Unblinded.parse(JSON.parse(readFileSync(path.join(pkgDir, 'review', 'unblinded.json'), 'utf8')));
    const ag = u.agreement;
    expect(ag.oracle.instances).toBe(3);
    expect(ag.oracle.missing).toEqual([]);
    expect(u.instances.find((i) => i.blind_id === a)!.oracle!.hard_failures.fact_contradicts_store).toBe(1);

    // Per hard failure: 7 scorecards (3 packages × 2 reviewers, and cy's arbitration).
    const contradicting = ag.reviewer_oracle.hard_failures.find((r) => r.id === 'fact_contradicts_store')!;
    expect(contradicting).toMatchObject({ pairs: 7, agree: 5, reviewer_found: 0, oracle_found: 2 });
    expect(contradicting.disagreements.map((d) => [d.blind_id, d.group, d.reviewer, d.reviewer_found, d.oracle_found, d.oracle_entries])).toEqual([
      [a, 'A', 'ada', false, true, 1],
      [a, 'A', 'bo', false, true, 1],
    ]);
    const duplicate = ag.reviewer_oracle.hard_failures.find((r) => r.id === 'duplicate_side_effect')!;
    expect(duplicate).toMatchObject({ pairs: 7, agree: 6, reviewer_found: 1, oracle_found: 0 });
    expect(duplicate.disagreements).toEqual([{ blind_id: b, group: 'B', replicate: 1, reviewer: 'bo', role: 'reviewer', reviewer_found: true, oracle_found: false, oracle_entries: 0 }]);
    for (const id of ['unauthorized_tool_execution', 'replay_cannot_restore_state', 'configuration_changed_after_start']) {
      expect(ag.reviewer_oracle.hard_failures.find((r) => r.id === id)).toMatchObject({ pairs: 7, agree: 7, disagreements: [] });
    }
    // Per dimension: bo's state_recovery of C, and nothing else, is further than 15 points from the oracle.
    const state = ag.reviewer_oracle.dimensions.find((r) => r.dimension === 'state_recovery')!;
    expect(state.pairs).toBe(7);
    {
      expect(state.disagreements.map((d) => [d.blind_id, d.reviewer, d.reviewer_value, d.oracle_value])).toEqual([[c, 'bo', cState, oracleOf(c).dimensions!.state_recovery]]);
    }
    for (const r of ag.reviewer_oracle.dimensions.filter((r) => r.dimension !== 'state_recovery' && r.dimension !== 'total')) expect(r.disagreements, r.dimension).toEqual([]);
    // Reviewer with reviewer: ada × bo over 3 packages; the one differing decision named.
    expect(ag.reviewer_reviewer).toHaveLength(1);
    const pair = ag.reviewer_reviewer[0]!;
    expect(pair.reviewers).toEqual(['ada', 'bo']);
    expect(pair.packages).toBe(3);
    expect(pair.hard_failures.kappa.items).toBe(15);
    expect(pair.hard_failures.disagreements).toEqual([{ blind_id: b, group: 'B', replicate: 1, id: 'duplicate_side_effect', found_by: 'bo', not_found_by: 'ada' }]);

    // The notes name every scorecard that decided a hard failure otherwise than the oracle, and the locked "none" the oracle contradicts.
    expect(u.notes).toContain(`${a} (group A, replicate 1): reviewer "ada" marked fact_contradicts_store not found; the oracle found it (1 entry)`);
    expect(u.notes).toContain(`${a} (group A, replicate 1): reviewer "bo" marked fact_contradicts_store not found; the oracle found it (1 entry)`);
    expect(u.notes).toContain(`${b} (group B, replicate 1): reviewer "bo" marked duplicate_side_effect found; the oracle did not`);
    expect(u.notes).toContain(`${a} (group A, replicate 1): the locked review decision finds no hard failure; the oracle found 1 entry (fact_contradicts_store 1)`);

    // The command prints the same as a table, every disagreement by name.
    const out = printed.stdout;
    expect(out).toMatch(/agreement with the oracle \(.*report\.json .*; 3 instance\(s\) compared; a difference over 15 points is a disagreement/);
    expect(out).toMatch(/\n {2}dimension +pairs +mean \|Δ\| +max \|Δ\| +within 15 +κ \(bands\)\n/);
    expect(out).toMatch(/\n {2}fact_contradicts_store +7 +5\/7 +0 +2 +/);
    expect(out).toContain(`    ${a} group A r1  reviewer "ada"  fact_contradicts_store: not found, the oracle found 1`);
    expect(out).toContain(`    ${c} group C r1  reviewer "bo"  state_recovery: ${cState} vs the oracle's ${oracleOf(c).dimensions!.state_recovery} (-30)`);
    expect(out).toContain(`    ${b} group B r1  reviewer "bo"  duplicate_side_effect: found, the oracle none`);
    expect(out).toMatch(/\n {2}ada × bo +3 +/);
    expect(out).toContain(`    ${b} group B r1  duplicate_side_effect: found by "bo", not by "ada"`);
    expect(out).toContain(`note: ${a} (group A, replicate 1): the locked review decision finds no hard failure`);
  }, 120_000);
});
