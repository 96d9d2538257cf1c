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
import { lockReview } from '../../blind-review/review-lock.js';
import { ReviewRefusal } from '../../blind-review/review-state.js';
import { importScores } from '../../blind-review/score-import.js';
import { unblind } from '../../blind-review/unblinding.js';
import { GROUP_CAPABILITIES } from '../../design/manifest.js';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import { DIMENSIONS } from '../../oracle/continuity-score.js';
import { loadRunRecord } from '../../oracle/run-record.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { copyStudy, makeBlindStudy, type BlindStudy } from '../support/blind-study.js';
import { launchChromium, openOffline } from '../support/chromium.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';
import { DEFAULT_PREREG } from '../../experiments/cli/run-defaults.js';

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
});
