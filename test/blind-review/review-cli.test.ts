// `npm run review` as a person runs it (a real node process through tsx): exit 0 done, 1 refused
// with the reason, 2 misuse; --json prints one JSON object. The package folder (commitment,
// controller.pub) and the study's sealed map are built here as the exporter would write them.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { BLIND_REVIEW_FILES, COMMITMENT_PAYLOAD_TYPE, commitmentOf, type BlindMap } from '../../blind-review/blind-map.js';
import type { ReviewerScores } from '../../blind-review/package-format.js';
import { Unblinded } from '../../blind-review/unblinding.js';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import { HARD_FAILURE_IDS } from '../../design/prereg.js';
import { DIMENSIONS } from '../../oracle/continuity-score.js';
import { hashText } from '../../schema/hash.js';
import { signDsse } from '../../schema/dsse.js';
import { writePublicKey } from '../../schema/public-key-file.js';
import { runCli } from '../support/cli.js';
import { COMMITTED_PREREG_SHA256, STUDY_REPORT_TEXT, writePackages } from '../support/review-fixture.js';
import { tempDir } from '../support/writer-fixture.js';

const IDS = ['R-0A0A0A', 'R-1B1B1B', 'R-2C2C2C'] as const;
/** Filled by writePackages: one digest per blind id (the fixture's files are the same every time). */
const PACKAGE_DIGESTS: Record<string, string> = {};

function setUp() {
  const root = tempDir('ds-review-cli-');
  const keyDir = path.join(root, 'keys');
  const key = loadOrCreateControllerKey(keyDir);
  const map: BlindMap = {
    blind_map_format_version: '1.0.0',
    salt: randomBytes(32).toString('hex'),
    entries: [
      { blind_id: IDS[0], group: 'B', replicate: 1, dir: 'instances/b-r1' },
      { blind_id: IDS[1], group: 'C', replicate: 1, dir: 'instances/c-r1' },
      { blind_id: IDS[2], group: 'A', replicate: 1, dir: 'instances/a-r1' },
    ],
  };
  const writeMap = (dir: string, m: BlindMap): void => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'report.json'), STUDY_REPORT_TEXT);
    const file = path.join(dir, BLIND_REVIEW_FILES.sealedMap);
    writeFileSync(file, JSON.stringify(m));
    chmodSync(file, 0o600);
  };
  const studyDir = path.join(root, 'study');
  writeMap(studyDir, map);
  // The same study with A and C swapped: what a forger (or a wrong folder) would hand in.
  const [a, b, c] = map.entries as [BlindMap['entries'][number], BlindMap['entries'][number], BlindMap['entries'][number]];
  const forgedDir = path.join(root, 'forged-study');
  writeMap(forgedDir, { ...map, entries: [a, { ...b, group: c.group, dir: c.dir }, { ...c, group: b.group, dir: b.dir }] });
  const pkgDir = path.join(root, 'packages');
  mkdirSync(pkgDir);
  writePublicKey(pkgDir, key.keys);
  Object.assign(PACKAGE_DIGESTS, writePackages(pkgDir, IDS));
  const body = { blind_map_format_version: '1.0.0', commitment: commitmentOf(map), blind_ids: [...IDS], prereg_sha256: COMMITTED_PREREG_SHA256, study_report_sha256: hashText(STUDY_REPORT_TEXT), package_digests: PACKAGE_DIGESTS, committed_at: '2026-03-05T08:00:00.000Z' };
  writeFileSync(path.join(pkgDir, BLIND_REVIEW_FILES.commitment), JSON.stringify(signDsse(COMMITMENT_PAYLOAD_TYPE, body, key.keys.secretKey, key.keys.publicKey)));
  const card = (blindId: string, reviewer: string, value: number, hard: Partial<Record<(typeof HARD_FAILURE_IDS)[number], boolean>> = {}): string => {
    const scores: ReviewerScores = {
      score_format_version: '1.0.0',
      blind_id: blindId,
      reviewer,
      dimensions: Object.fromEntries(DIMENSIONS.map((d) => [d, value])) as ReviewerScores['dimensions'],
      hard_failures: Object.fromEntries(HARD_FAILURE_IDS.map((id) => [id, hard[id] ?? false])) as ReviewerScores['hard_failures'],
      comments: '',
      saved_at: '2026-03-06T09:00:00.000Z',
    };
    const file = path.join(root, `${reviewer}-${blindId}-${value}.json`);
    writeFileSync(file, JSON.stringify(scores));
    return file;
  };
  return { root, keyDir, pkgDir, studyDir, forgedDir, card };
}

describe('npm run review', () => {
  // Each call is a real process (~1 s of tsx start-up): the rules themselves are covered by
  // review-flow.test.ts; here, exit codes, outputs and the order of the steps.
  test('misuse: exit 2 with the reason and the usage', async () => {
    const { pkgDir, root } = setUp();
    const cases: [string[], RegExp][] = [
      [[], /give a subcommand: import, arbitrate, status, lock, unblind/],
      [['unblind', pkgDir], /unblind needs --study STUDY_DIR/],
      [['lock', pkgDir, '--study', root], /Unknown option '--study'/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli('review', args)));
    results.forEach((r, i) => {
      expect(r.code, cases[i]![0].join(' ')).toBe(2);
      expect(r.stderr).toMatch(cases[i]![1]);
    });
    expect(results[0]!.stderr).toContain('usage: npm run review -- import PKG_DIR FILE…');
  });

  test('import → arbitration → lock → unblind, with the refusals on the way', async () => {
    const { keyDir, pkgDir, studyDir, forgedDir, card } = setUp();

    // One instance agrees, one differs by 20 points, one agrees on a hard failure found.
    const imported = await runCli('review', ['import', pkgDir, card(IDS[0], 'alice', 80), card(IDS[0], 'bob', 70), card(IDS[1], 'alice', 90), card(IDS[1], 'bob', 70), card(IDS[2], 'alice', 60, { unauthorized_tool_execution: true }), card(IDS[2], 'bob', 50, { unauthorized_tool_execution: true })]);
    expect(imported.stderr).toBe('');
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/^started the review: scores are weighed with the pre-registration sha256:[0-9a-f]{64}/);
    expect(imported.stdout).toMatch(/imported .*: R-2C2C2C by bob → review\/scores\/R-2C2C2C--bob-[0-9a-f]{16}\.json/);
    expect(imported.stdout).toMatch(/R-0A0A0A {2}consolidated 75 \(mean of alice, bob; gap 10\); hard failures: none found/);
    expect(imported.stdout).toMatch(/R-1B1B1B {2}arbitration required \(score gap 20\)/);
    expect(imported.stdout).toMatch(/R-2C2C2C {2}consolidated 55 .*hard failures: found unauthorized_tool_execution/);

    const [earlyUnblind, earlyLock, badImport, unflagged] = await Promise.all([
      runCli('review', ['unblind', pkgDir, '--study', studyDir]),
      runCli('review', ['lock', pkgDir, '--key-dir', keyDir]),
      runCli('review', ['import', pkgDir, card('R-ABCDEF', 'alice', 80), card(IDS[0], 'alice', 81), '--json']),
      runCli('review', ['arbitrate', pkgDir, card(IDS[0], 'carol', 50)]),
    ]);
    expect(earlyUnblind.code).toBe(1);
    expect(earlyUnblind.stderr).toMatch(/^review: REFUSED \(not-locked\): the review of .* is not locked/);
    expect(earlyLock.code).toBe(1);
    expect(earlyLock.stderr).toMatch(/REFUSED \(not-ready\): lock refused: 0 instance\(s\) incomplete and 1 awaiting arbitration/);
    expect(earlyLock.stderr).toMatch(/\n {2}R-1B1B1B: arbitration required \(score gap 20\)/);
    expect(badImport.code).toBe(1);
    const bad = JSON.parse(badImport.stdout) as { ok: boolean; error: { problem: string; details: string[] } };
    expect(bad).toMatchObject({ ok: false, command: 'review', exit_code: 1, error: { code: 'review_unknown_blind_id', problem: 'unknown-blind-id' } });
    expect(bad.error.details).toEqual([
      expect.stringMatching(/blind id R-ABCDEF is not one of the 3 packages/),
      expect.stringMatching(/"alice" already has a different scorecard for R-0A0A0A .*sha256:[0-9a-f]{64}; this file sha256:[0-9a-f]{64}/),
    ]);
    expect(unflagged.code).toBe(1);
    expect(unflagged.stderr).toMatch(/REFUSED \(not-flagged\): arbitration refused: R-0A0A0A is not flagged for arbitration/);

    const arbitrated = await runCli('review', ['arbitrate', pkgDir, card(IDS[1], 'carol', 85)]);
    expect(arbitrated.code).toBe(0);
    expect(arbitrated.stdout).toMatch(/arbitrated R-1B1B1B by carol → review\/arbitration\/R-1B1B1B\.json \(was: arbitration required \(score gap 20\)/);
    expect(arbitrated.stdout).toMatch(/R-1B1B1B {2}decided by arbitration: 85 by carol/);

    const locked = await runCli('review', ['lock', pkgDir, '--key-dir', keyDir]);
    expect(locked.stderr).toBe('');
    expect(locked.code).toBe(0);
    expect(locked.stdout).toMatch(/locked the review of .*: 3 instance\(s\), 8 file\(s\) covered/);
    expect(locked.stdout).toMatch(/R-1B1B1B {2}85 \(decided by arbitration: score gap 20\)/);

    const [relock, forged] = await Promise.all([runCli('review', ['lock', pkgDir, '--key-dir', keyDir]), runCli('review', ['unblind', pkgDir, '--study', forgedDir])]);
    expect(relock.code).toBe(1);
    expect(relock.stderr).toMatch(/REFUSED \(already-locked\): .* a lock is never replaced/);
    expect(forged.code).toBe(1);
    expect(forged.stderr).toMatch(/REFUSED \(map-mismatch\): .* does not match the commitment the controller signed before review/);
    expect(existsSync(path.join(pkgDir, 'review', 'unblinded.json'))).toBe(false);

    const unblinded = await runCli('review', ['unblind', pkgDir, '--study', studyDir, '--json']);
    expect(unblinded.stderr).toBe('');
    expect(unblinded.code).toBe(0);
    const result = JSON.parse(unblinded.stdout) as { ok: boolean; outcome: string; unblinded: unknown };
    expect(result).toMatchObject({ ok: true, command: 'unblind', outcome: 'written' });
    const u = Unblinded.parse(result.unblinded);
    expect(u.instances.map((i) => [i.blind_id, i.group, i.score, i.decided_by])).toEqual([
      [IDS[0], 'B', 75, 'reviewers_mean'],
      [IDS[1], 'C', 85, 'arbitration'],
      [IDS[2], 'A', 55, 'reviewers_mean'],
    ]);
    expect(u.groups.map((g) => [g.group, g.scores.map((s) => s.score), g.instances_with_hard_failure])).toEqual([
      ['A', [55], 1],
      ['B', [75], 0],
      ['C', [85], 0],
    ]);
    expect(u.study_prereg_check).toBe('not checked: study.json is absent from the study folder');
    expect(u.controller_key_check).toBe('not checked: no run folder of the map holds controller.pub');
    expect(Unblinded.parse(JSON.parse(readFileSync(path.join(pkgDir, 'review', 'unblinded.json'), 'utf8')))).toEqual(u);
  });
});
