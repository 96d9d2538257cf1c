// `npm run study` as a user runs it: real ds-controller, ds-writer and ds-runtime processes,
// one real replicate per group, the three report files, and --recompute on the result.
// One replicate per group keeps this under a minute; the pre-registration copy carries a
// passing-count row for n = 1 so that a verdict can be reached (the bundled one starts at 3).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import { lockPrereg } from '../../design/prereg.js';
import { StudyReport } from '../../oracle/study-report.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli } from '../support/cli.js';
import { REPO } from '../support/controller-run.js';
import { tempDir } from '../support/writer-fixture.js';

describe('npm run study', () => {
  test.each([
    [['--n', '0'], /--n must be a whole number from 1 to 10000/],
    [['--concurrency', 'two'], /--concurrency must be a whole number/],
    [['--no-such-flag'], /Unknown option '--no-such-flag'/],
    [['--recompute', '/tmp', '--n', '3'], /--n cannot be combined with --recompute/],
    [['--model', 'openai'], /--model openai needs --base-url URL and --model-id ID/],
  ])('misuse %j: exit 2 with the reason and the usage', async (args, reason) => {
    const r = await runCli('study', args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(reason);
    expect(r.stderr).toContain('usage: npm run study');
  });

  test('--recompute on a folder that is not a study: exit 2 (a path of the wrong kind), saying so', async () => {
    const dir = tempDir('ds-not-a-study-');
    const r = await runCli('study', ['--recompute', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/study\.json is missing: .* is not a study folder of npm run study/);
  });

  test('a real study with one replicate per group: a verdict, three report files, verified instances, recomputable', async () => {
    const dir = tempDir('ds-study-cli-');
    const keyDir = path.join(dir, 'keys');
    const key = loadOrCreateControllerKey(keyDir);
    const prereg = JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    prereg['expansion_rule']!['initial_n_per_group'] = 1;
    prereg['expansion_rule']!['expanded_n_per_group'] = 2;
    prereg['thresholds']!['c_instances_passing'] = [{ n: 1, at_least: 1 }, { n: 2, at_least: 2 }];
    const preregFile = path.join(dir, 'prereg-n1.json');
    writeFileSync(preregFile, JSON.stringify(prereg, null, 2));
    const locked = lockPrereg(preregFile, key.keys, '2026-01-01T00:00:00.000Z');
    expect(locked.ok).toBe(true);
    const out = path.join(dir, 'study');
    const r = await runCli('study', ['--n', '1', '--seed', 'cli', '--prereg', preregFile, '--key-dir', keyDir, '--out', out, '--same-uid', 'test', '--json']);
    expect(r.stderr).toMatch(/study \(n = 1 per group\): 3\/3 finished/);
    // Off a terminal the screen is plain records, one per line: no control code, no child's line
    // (those are in each instance's processes.log), a summary line per instance.
    expect(r.stderr).not.toMatch(/[\x1b\r]/);
    expect(r.stderr).not.toMatch(/^\[ds-(writer|runtime)/m);
    for (const g of ['A', 'B', 'C']) expect(r.stderr).toMatch(new RegExp(`^${g}-r1 started\n(.*\n)*${g}-r1 finished: 31/31 wakes to h72:00 in [\\d.]+ s; scored `, 'm'));
    expect(r.stderr.split('\n').length, r.stderr).toBeLessThan(40);
    for (const g of ['A', 'B', 'C']) expect(readFileSync(path.join(out, 'instances', `${g}-r1`, RUN_FILES.processLog), 'utf8')).toMatch(/^\[ds-runtime \d+\] started for subject /m);
    const { exit_code: exitCode, ...body } = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(exitCode).toBe(r.code);
    const report = StudyReport.parse(body);
    expect([0, 4]).toContain(r.code);
    expect(r.code).toBe(report.voided || report.verdict === 'insufficient evidence' ? 4 : 0);
    expect(report.n).toBe(1);
    expect(report.instances.map((i) => [i.group, i.status])).toEqual([
      ['A', 'finished'],
      ['B', 'finished'],
      ['C', 'finished'],
    ]);
    expect(report.dry_run).toBe(true);
    expect(report.fairness.ok).toBe(true);
    // Rule 8: the reference policy's every call is accepted, so each instance counts as data.
    for (const i of report.instances) expect(i, `${i.group}`).toMatchObject({ usable: true, accepted_share: 1, accepted: i.calls });
    expect(report.instances.every((i) => (i.calls ?? 0) > 0)).toBe(true);
    expect(report.usable_data).toEqual({ min_accepted_share: 0.8, required_per_group: 1, shortfalls: [] });
    for (const file of ['report.json', 'report.md', 'report.html']) expect(existsSync(path.join(out, file)), file).toBe(true);
    for (const i of report.instances) expect(verifyDirectory(path.join(out, i.dir)).ok, i.dir).toBe(true);
    // n = 1: no SD, no range; the rule is checked and says so.
    expect(report.expanded).toBe(false);
    const again = await runCli('study', ['--recompute', out]);
    expect(again.stdout).toMatch(/^RECOMPUTED: every number of .* follows from its run folders/);
    expect(again.code).toBe(0);
  }, 150_000);
});
