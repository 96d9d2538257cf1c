// `npm run study -- --resume STUDY` (issue 16 item 7) and the study's bad input (item 2), against
// the real command: a real study (n = 1, reference model, --concurrency 2) in its own process
// group, stopped by SIGINT to the group as a terminal's Ctrl-C does, stopped again during its
// resume, then finished by a second resume — every instance sealed and verifying, the report
// written, --recompute agreeing. The finished study is then the fixture of the other cases
// (copied per case): nothing to do, an instance folder that cannot be resumed, refusals that
// leave the folder byte-identical, and the expansion round stopped and continued (in-process,
// its instances copies of the real ones, as test/study/study-runner.test.ts does).
// The pre-registration has a 12-hour wake period (6 wakes), so an instance takes seconds.
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { STUDY_REPORT_VERSION } from '../../oracle/study-report.js';
import { createRequire } from 'node:module';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { Group } from '../../controller/instance-runner.js';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import { lockPrereg } from '../../design/prereg.js';
import { StudyReport } from '../../oracle/study-report.js';
import { runStudy, type StudyOptions } from '../../study/study-runner.js';
import { STUDY_FILES, StudyPlan } from '../../study-contract/study-folder.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { recomputeStudy } from '../../study/study-recompute.js';
import { resumeStudy } from '../../study/study-resume.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { runCli, spawnCli, type CliResult } from '../support/cli.js';
import { REPO, SCENARIOS_DIR, TEST_START_AT, waitForOutput } from '../support/controller-run.js';
import { copyingRunner, type CopyCall } from '../support/copying-runner.js';
import { tempDir } from '../support/writer-fixture.js';
import { folderState } from '../support/folder-state.js';

/** Generous for a loaded 2-core machine: a 6-wake instance takes ~10 s there, a CLI start ~2 s. */
const WAIT_MS = 90_000;

let dir: string;
let keyDir: string;
let preregFile: string;
/** The real study, finished by --resume (never changed after the first test: copy it). */
let finished: string;
let finishedExit: number;

function studyReportOf(out: string): StudyReport {
  return StudyReport.parse(JSON.parse(readFileSync(path.join(out, STUDY_FILES.json), 'utf8')));
}


function copyOf(study: string, name: string): string {
  const to = path.join(dir, name);
  cpSync(study, to, { recursive: true });
  return to;
}

/** The one JSON object --json prints, whatever happened. */
function jsonOf(r: CliResult): Record<string, unknown> {
  const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
  expect(lines, r.stdout).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

/** A process holding `file` as a running ds-writer does (exclusive locking), until its stdin ends. */
function holdStore(file: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const script = `const D = require(${JSON.stringify(sqlite)}); const db = new D(${JSON.stringify(file)}); db.pragma('locking_mode = EXCLUSIVE'); db.exec('BEGIN EXCLUSIVE'); process.stdout.write('held\\n'); process.stdin.on('end', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); }); process.stdin.resume();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

beforeAll(() => {
  dir = tempDir('ds-study-resume-');
  keyDir = path.join(dir, 'keys');
  const key = loadOrCreateControllerKey(keyDir);
  const prereg = JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')) as Record<string, Record<string, unknown>>;
  // n = 1 first, up to 3 by the rule (the in-process expansion case runs n = 2 → 3 under this same file).
  prereg['expansion_rule']!['initial_n_per_group'] = 1;
  prereg['expansion_rule']!['expanded_n_per_group'] = 3;
  prereg['thresholds']!['c_instances_passing'] = [{ n: 1, at_least: 1 }, { n: 2, at_least: 2 }, { n: 3, at_least: 2 }];
  prereg['wake_schedule']!['base_period_sim_minutes'] = 720;
  preregFile = path.join(dir, 'prereg-resume.json');
  writeFileSync(preregFile, JSON.stringify(prereg, null, 2));
  const locked = lockPrereg(preregFile, key.keys, '2026-01-01T00:00:00.000Z');
  if (!locked.ok) throw new Error(`test setup: lock failed: ${locked.message}`);
});

describe('npm run study -- --resume', () => {
  test('Ctrl-C (SIGINT to the process group) stops the study (3); Ctrl-C during --resume stops it again (3); --resume then finishes it: every instance sealed and verifying, the report written, --recompute agrees', async () => {
    const out = path.join(dir, 'study');
    const resumeCommand = `npm run study -- --resume ${out}`;
    const started = spawnCli('study', ['--n', '1', '--seed', 'resume', '--prereg', preregFile, '--key-dir', keyDir, '--out', out, '--same-uid', 'test run in one uid', '--concurrency', '2'], { detached: true });
    // The block under way (A, B and C side by side, in lockstep; --concurrency counts blocks): stop it mid-run.
    // The screen shows wakes only as live lines on a terminal; every instance's own lines are in its processes.log.
    const logsOf = (): string => ['A-r1', 'B-r1'].map((name) => path.join(out, STUDY_FILES.instances, name, RUN_FILES.processLog)).map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : '')).join('\n');
    await waitForOutput(logsOf, /\[A-r1\] wake-0001 at[\s\S]*\[B-r1\] wake-0001 at/, WAIT_MS);
    process.kill(-started.child.pid!, 'SIGINT');
    expect(await started.exited, started.output()).toBe(3);
    const first = started.output();
    expect(first).toContain(`SIGINT: emergency stop — stopping every running instance (each stop recorded), then writing the report; continue later with ${resumeCommand}`);
    expect(first).toContain(`STOPPED: the study is not finished (stopped: A-r1, B-r1, C-r1; every stop recorded, nothing deleted); continue it with: ${resumeCommand}`);
    expect(first).toContain(`[A-r1] stop recorded; head signed at seq`);
    // Every message names the study's resume: an instance's own (npm run experiment -- --resume) would finish it outside the study.
    expect(first).not.toMatch(/npm run experiment -- --resume|--resume \S*instances/);
    expect(studyReportOf(out).instances.map((i) => [i.group, i.status])).toEqual([
      ['A', 'stopped'],
      ['B', 'stopped'],
      ['C', 'stopped'],
    ]);

    const again = spawnCli('study', ['--resume', out], { detached: true });
    // The block resumed: stopped at once, since a resumed
    // instance now finishes its remaining wakes within a second or two (issue 19), and one that
    // sealed before the Ctrl-C would no longer be a stop during --resume.
    await waitForOutput(again.output, /\[A-r1\] resuming at/, WAIT_MS);
    await waitForOutput(again.output, /\[B-r1\] resuming at/, WAIT_MS);
    process.kill(-again.child.pid!, 'SIGINT');
    expect(await again.exited, again.output()).toBe(3);
    expect(again.output()).toContain(`in ${out}: 0 instance(s) sealed (kept as they are), 3 stopped (resumed), 0 of the first 3 never started (started now)`);
    expect(again.output()).toContain(`continue it with: ${resumeCommand}`);

    // No --key-dir, no --same-uid: study.json says which key and isolation the study runs with.
    const done = await runCli('study', ['--resume', out, '--json']);
    const json = jsonOf(done);
    const { exit_code: exitCode, ...body } = json;
    const report = StudyReport.parse(body);
    expect(exitCode).toBe(done.code);
    expect(done.code, done.stderr.slice(-3000)).toBe(report.voided || report.verdict === 'insufficient evidence' ? 4 : 0);
    expect(done.stderr).toContain(`in ${out}: 0 instance(s) sealed (kept as they are), 3 stopped (resumed), 0 of the first 3 never started (started now)`);
    expect(report.instances.map((i) => [i.group, i.replicate, i.status, i.status_detail])).toEqual([
      ['A', 1, 'finished', null],
      ['B', 1, 'finished', null],
      ['C', 1, 'finished', null],
    ]);
    expect(report.notes.join(' ')).not.toMatch(/stopped by the operator/);
    expect(report).toEqual(studyReportOf(out));
    for (const file of [STUDY_FILES.json, STUDY_FILES.markdown, STUDY_FILES.html]) expect(existsSync(path.join(out, file)), file).toBe(true);
    for (const i of report.instances) {
      const runDir = path.join(out, i.dir);
      expect(verifyDirectory(runDir).ok, i.dir).toBe(true);
      const db = new Database(path.join(runDir, 'events.db'), { readonly: true });
      const resumed = (db.prepare("SELECT count(*) AS n FROM events WHERE event_type = 'SystemEvent.Resumed'").get() as { n: number }).n;
      db.close();
      // The whole block was resumed by both resumes (its three members side by side).
      expect(resumed, i.dir).toBe(2);
    }
    const recomputed = await runCli('study', ['--recompute', out]);
    expect(recomputed.stdout).toMatch(/^RECOMPUTED: every number of .* follows from its run folders/);
    expect(recomputed.code).toBe(0);
    finished = out;
    finishedExit = done.code;
  }, 300_000);

  test('a finished study: nothing to do, said so, the exit of the finished study, the folder byte-identical', async () => {
    const before = folderState(finished);
    const r = await runCli('study', ['--resume', finished, '--concurrency', '1']);
    expect(r.code, r.stderr).toBe(finishedExit);
    expect(r.stdout).toMatch(new RegExp(`^nothing to do: every instance of ${finished} is sealed and report.json follows from them \\(left as it was\\)\n`));
    expect(r.stdout).toContain(`VERDICT: ${studyReportOf(finished).verdict.toUpperCase()}`);
    expect(r.stderr).toContain('3 instance(s) sealed (kept as they are), 0 stopped (resumed), 0 of the first 3 never started');
    expect(folderState(finished)).toEqual(before);
  }, 60_000);

  test('an instance folder that cannot be resumed is reported, not dropped: the others kept, the study exits 1 naming it, its folder untouched', async () => {
    const out = copyOf(finished, 'broken-instance');
    const broken = path.join(out, STUDY_FILES.instances, 'B-r1');
    rmSync(broken, { recursive: true });
    mkdirSync(broken);
    writeFileSync(path.join(broken, 'notes.txt'), 'not a run folder\n');
    const r = await runCli('study', ['--resume', out]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/\[B-r1\] FAILED: .*controller\.pub is missing: .* is not a run folder this controller can resume/);
    expect(r.stdout).toContain(`NOT FINISHED: 1 instance(s) could not be started or resumed (B-r1; why: above and in report.json)`);
    expect(r.stdout).toContain(`then npm run study -- --resume ${out}`);
    const report = studyReportOf(out);
    expect(report.instances.map((i) => [i.group, i.status])).toEqual([
      ['A', 'finished'],
      ['B', 'failed'],
      ['C', 'finished'],
    ]);
    expect(readdirSync(broken)).toEqual(['notes.txt']);
  }, 60_000);

  test('refused before anything is written, the folder byte-identical: not a study (2), a damaged study.json (1), a study another process is running (1), instance folders the plan does not allow (1), a pre-registration changed since the start (1), flags that conflict with --resume (2)', async () => {
    const notStudy = path.join(dir, 'not-a-study');
    mkdirSync(notStudy);
    writeFileSync(path.join(notStudy, 'data.csv'), 'a,b\n1,2\n');
    const damaged = copyOf(finished, 'damaged-plan');
    writeFileSync(path.join(damaged, STUDY_FILES.plan), '{"study_version": "1.1.0", "seed": ');
    const changed = copyOf(finished, 'changed-prereg');
    // Another pre-registration, locked by the same key: it passes its lock, not the study's hash.
    const other = JSON.parse(readFileSync(preregFile, 'utf8')) as { thresholds: { c_median_min_score: number } };
    other.thresholds.c_median_min_score -= 1;
    const otherFile = path.join(dir, 'prereg-other.json');
    writeFileSync(otherFile, JSON.stringify(other, null, 2));
    expect(lockPrereg(otherFile, loadOrCreateControllerKey(keyDir).keys, '2026-01-02T00:00:00.000Z').ok).toBe(true);
    const plan = StudyPlan.parse(JSON.parse(readFileSync(path.join(changed, STUDY_FILES.plan), 'utf8')));
    writeFileSync(path.join(changed, STUDY_FILES.plan), `${JSON.stringify({ ...plan, prereg_file: otherFile }, null, 2)}\n`);
    const conflicting = copyOf(finished, 'conflicting-flags');
    // Instance folders the plan and its rule do not allow: beyond n_expanded, and an expansion round the rule does not call for.
    const beyond = copyOf(finished, 'beyond-plan');
    mkdirSync(path.join(beyond, STUDY_FILES.instances, 'A-r4'));
    writeFileSync(path.join(beyond, STUDY_FILES.instances, 'A-r4', 'x.txt'), 'x\n');
    const unexpanded = copyOf(finished, 'unexpanded');
    cpSync(path.join(unexpanded, STUDY_FILES.instances, 'A-r1'), path.join(unexpanded, STUDY_FILES.instances, 'A-r2'), { recursive: true });
    // Another process running the study: A-r1 not finished (its final head gone) and its store held as a running writer holds it.
    const inUse = copyOf(finished, 'in-use');
    const heads = path.join(inUse, STUDY_FILES.instances, 'A-r1', 'heads.jsonl');
    writeFileSync(heads, readFileSync(heads, 'utf8').trimEnd().split('\n').slice(0, -1).map((l) => `${l}\n`).join(''));
    // In a process of its own, as a writer is: a lock of this process would be dropped by any read of the file here (POSIX locks).
    const holder = holdStore(path.join(inUse, STUDY_FILES.instances, 'A-r1', 'events.db'));
    await waitForOutput(holder.output, /^held$/m, WAIT_MS);

    const cases: Array<{ args: string[]; folder: string; code: number; message: RegExp; json: string | null }> = [
      { args: ['--resume', notStudy, '--json'], folder: notStudy, code: 2, message: /study\.json is missing: .* is not a study folder of npm run study/, json: 'study_not_a_study' },
      { args: ['--resume', path.join(notStudy, 'data.csv')], folder: notStudy, code: 2, message: /data\.csv is a file, not a study folder of npm run study; nothing was changed/, json: null },
      { args: ['--resume', damaged, '--json'], folder: damaged, code: 1, message: /study\.json is not JSON .*: damaged or not written by npm run study; nothing was changed/, json: 'study_plan_unreadable' },
      { args: ['--resume', inUse, '--json'], folder: inUse, code: 1, message: /another process is running this study now \(a writer holds the store of A-r1\): this is safe and nothing was changed; wait for it to end/, json: 'study_in_use' },
      { args: ['--resume', beyond, '--json'], folder: beyond, code: 1, message: /A-r4 is beyond the n = 3 per group the study plans: the folder was changed after the study started; nothing was changed/, json: 'study_folder_changed' },
      { args: ['--resume', unexpanded, '--json'], folder: unexpanded, code: 1, message: /the expansion rule does not expand at n = 1, yet A-r2 exists in .*: the folder was changed after the study started .*; the report was not written/, json: 'study_folder_changed' },
      { args: ['--resume', changed, '--json'], folder: changed, code: 1, message: /refusing to resume the study: .*prereg-other\.json hashes to sha256:\w+, not the sha256:\w+ the study started under/, json: 'study_prereg_refused' },
      ...(
        [
          ['--n', '3'],
          ['--seed', 'other'],
          ['--out', path.join(dir, 'elsewhere')],
          ['--prereg', preregFile],
          ['--model', 'reference'],
        ] as const
      ).map(([flag, value]) => ({ args: ['--resume', conflicting, flag, value], folder: conflicting, code: 2, message: new RegExp(`${flag} cannot be combined with --resume: a resumed study keeps what it was started with`), json: null })),
    ];
    const before = new Map(cases.map((c) => [c.folder, folderState(c.folder)]));
    const results = await Promise.all(cases.map((c) => runCli('study', c.args)));
    holder.child.stdin!.end();
    expect(await holder.exited).toBe(0);
    cases.forEach((c, k) => {
      const r = results[k]!;
      expect(r.code, `${c.args.join(' ')}: ${r.stderr}`).toBe(c.code);
      expect(r.stderr).toMatch(c.message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      if (c.code === 2) expect(r.stderr).toContain('usage: npm run study');
      if (c.json !== null) expect(jsonOf(r)).toMatchObject({ ok: false, command: 'study', exit_code: c.code, error: { code: c.json } });
    });
    for (const [folder, state] of before) expect(folderState(folder), folder).toEqual(state);
    expect(existsSync(path.join(dir, 'elsewhere'))).toBe(false);
  }, 120_000);

  test('a new study refused for its input: exit 2 with the reason, no study folder left behind (not even its key folder), and a folder it did not make untouched', async () => {
    const fresh = path.join(dir, 'refused');
    mkdirSync(fresh);
    const keys = path.join(fresh, 'keys-never-made');
    const aFile = path.join(fresh, 'a-file.txt');
    writeFileSync(aFile, 'keep me\n');
    const notEmpty = path.join(fresh, 'not-empty');
    mkdirSync(notEmpty);
    writeFileSync(path.join(notEmpty, 'x.txt'), 'x\n');
    const common = ['--n', '1', '--prereg', preregFile, '--key-dir', keys];
    const cases: Array<{ args: string[]; message: RegExp; json: string }> = [
      { args: ['--start-at', 'tomorrow', '--out', path.join(fresh, 'new-study')], message: /--start-at must be an ISO 8601 instant in UTC such as 2026-03-02T08:00:00\.000Z, got "tomorrow"/, json: 'usage' },
      { args: ['--out', aFile], message: /a-file\.txt is a file: --out needs a new \(or empty\) folder for the study; nothing was changed/, json: 'study_out_is_a_file' },
      { args: ['--out', path.join(aFile, 'study')], message: /a-file\.txt is a file, so .*a-file\.txt\/study cannot be a folder/, json: 'study_out_is_a_file' },
      { args: ['--out', notEmpty], message: /not-empty is not empty and is not a study folder: a study needs a new \(or empty\) folder; nothing was changed/, json: 'study_out_not_empty' },
      { args: ['--out', finished], message: new RegExp(`holds a study already: a new study needs a new folder; continue that one with npm run study -- --resume ${finished}`), json: 'study_out_not_empty' },
      { args: ['--seed', 's'.repeat(101), '--out', path.join(fresh, 'new-study')], message: /--seed must be 1 to 100 characters, got 101/, json: 'usage' },
      { args: ['--study-id', '../escape', '--out', path.join(fresh, 'new-study')], message: /--study-id "\.\.\/escape": expected an identifier/, json: 'usage' },
    ];
    const before = { fresh: folderState(fresh), finished: folderState(finished) };
    const results = await Promise.all(cases.map((c) => runCli('study', [...common, ...c.args, '--json'])));
    cases.forEach((c, k) => {
      const r = results[k]!;
      expect(r.code, `${c.args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(c.message);
      expect(r.stderr).toContain('usage: npm run study');
      expect(r.stderr).not.toMatch(/\n\s+at |ZodError|ENOTDIR/);
      expect(jsonOf(r)).toMatchObject({ ok: false, command: 'study', exit_code: 2, error: { code: c.json } });
    });
    expect(folderState(fresh)).toEqual(before.fresh);
    expect(folderState(finished)).toEqual(before.finished);
    expect(existsSync(path.join(fresh, 'new-study'))).toBe(false);
  }, 120_000);
});

describe('the expansion round (spec §6.2), stopped and continued', () => {
  test('n = 2 → 3: the screen says how many instances are added and why; a stop during the round is continued by resumeStudy (a 1.0.0 study.json), and the report is the uninterrupted study\'s apart from wall-clock fields', async () => {
    const source = (g: Group, r: number): string => path.join(finished, STUDY_FILES.instances, `${g === 'A' && r === 2 ? 'C' : g}-r1`);
    const options = (outDir: string, overrides: Partial<StudyOptions>): StudyOptions => ({
      outDir,
      seed: 'resume',
      preregFile,
      keyDir,
      scenariosDir: SCENARIOS_DIR,
      concurrency: 1,
      n: 2,
      // Two first under a pre-registration of one: said so (issue 35), so the batch is not void but exploratory.
      exploratory: 'test: a first round of two so that the rule can expand it',
      startAt: TEST_START_AT,
      model: { adapter: 'reference' },
      studyId: studyReportOf(finished).study_id,
      operator: 'test',
      signal: new AbortController().signal,
      log: () => {},
      onProgress: () => {},
      ...overrides,
    });
    // Uninterrupted: 6 instances, A's range (C's run as A-r2) triggers the rule, 3 more.
    const whole = path.join(dir, 'expansion-whole');
    const wholeLines: string[] = [];
    const uninterrupted = await runStudy(options(whole, { runInstance: copyingRunner([], source), log: (l) => wholeLines.push(l) }));
    expect(uninterrupted.report.expanded).toBe(true);
    expect(wholeLines.filter((l) => l.startsWith('expansion rule'))).toEqual([expect.stringMatching(/^expansion rule \(spec §6\.2\): 3 instances added, every group from n = 2 to n = 3 \(9 in all\), because group A: score range \d+\.\d\d > 15 \(triggers expansion\)/)]);

    // Stopped once the round's first instance is in.
    const out = path.join(dir, 'expansion-stopped');
    const stop = new AbortController();
    const calls: CopyCall[] = [];
    const stopped = await runStudy(options(out, { signal: stop.signal, runInstance: copyingRunner(calls, source, (_dir, call) => call.replicate === 3 && stop.abort('operator signal SIGINT')) }));
    expect(calls.map((c) => `${c.group}-r${c.replicate}`)).toEqual(['A-r1', 'B-r1', 'C-r1', 'A-r2', 'B-r2', 'C-r2', 'A-r3']);
    expect(stopped.report.notes).toContain(`the study was stopped by the operator (operator signal SIGINT); continue it with npm run study -- --resume ${out}`);

    // A study.json of 1.0.0 (before --resume): no key_dir, no same_uid; still read.
    const planFile = path.join(out, STUDY_FILES.plan);
    const { key_dir: _k, same_uid: _s, ...older } = StudyPlan.parse(JSON.parse(readFileSync(planFile, 'utf8')));
    writeFileSync(planFile, `${JSON.stringify({ ...older, study_version: '1.0.0' }, null, 2)}\n`);
    const lines: string[] = [];
    const more: CopyCall[] = [];
    const resumed = await resumeStudy({ outDir: out, keyDir, scenariosDir: SCENARIOS_DIR, concurrency: null, operator: 'test', signal: new AbortController().signal, log: (l) => lines.push(l), onProgress: () => {}, runInstance: copyingRunner(more, source) });
    expect(more.map((c) => `${c.group}-r${c.replicate}`)).toEqual(['B-r3', 'C-r3']);
    expect(resumed.tally).toEqual({ kept: 7, resumed: 0, started: 2, notReached: 0 });
    expect(lines[0]).toBe(`[study] resuming ${older.study_id} in ${out}: 7 instance(s) sealed (kept as they are), 0 stopped (resumed), 0 of the first 6 never started (started now); the expansion round to n = 3 had begun (1 of its 3 instance folders exist)`);
    expect(lines.filter((l) => l.startsWith('expansion rule'))).toEqual([expect.stringMatching(/^expansion rule \(spec §6\.2\): 3 instances added \(continuing it: 1 of them were begun before\), every group from n = 2 to n = 3 \(9 in all\), because group A: score range/)]);
    expect(resumed.report.n).toBe(3);
    expect(resumed.report.instances).toHaveLength(9);
    expect(recomputeStudy(out, SCENARIOS_DIR).differences).toEqual([]);
    const comparable = (r: StudyReport): unknown => JSON.parse(JSON.stringify(r, (k, v: unknown) => (k === 'generated_at' || k === 'wall_ms' ? undefined : v)));
    // A study planned before blocks (1.0.0) is reported as one (this build's report, without blocks):
    // without the blocks and their two fairness lines, it is the uninterrupted study's report.
    expect(resumed.report.report_version).toBe(STUDY_REPORT_VERSION);
    expect(resumed.report.blocks).toBeUndefined();
    const { blocks: _blocks, ...withoutBlocks } = uninterrupted.report;
    const beforeBlocks = { ...withoutBlocks, fairness: { ...withoutBlocks.fairness, checks: withoutBlocks.fairness.checks.filter((c) => !/^(block_turns_as_drawn|load_confound)/.test(c.check)) } };
    expect(comparable(resumed.report)).toEqual(comparable(beforeBlocks));
  }, 180_000);
});
