// `npm run study -- --merge STUDY` and `--expand STUDY` (issue 18 items 3 and 4) against a real
// batch study: planned by key 1 (n = 1), its three instances run as three task processes on
// their own scratch, beside two foreign runs made the same way — index 0 of a study with the same
// id and seed planned and run under key 2, and index 0 of another study (other id) under key 1.
// The merge trusts no folder: each forged case is a copy of the finished study with one folder
// swapped, damaged, duplicated, added or removed, or a forged expansion plan, and each is refused
// (exit 2; a missing instance: exit 3 with the command that runs it) with no report written and
// the folder byte-identical. The good case writes the report, --recompute agrees, --status says
// every instance is done, and --expand decides the rule consistently with the merge.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { ControllerKey } from '../../controller/key-store.js';
import { mergeBatchStudy, type MergeFinding } from '../../study/batch/batch-merge.js';
import { signStudyFile } from '../../study/batch/batch-plan-writer.js';
import { BATCH_FILES, EXPANSION_VERSION, plannedReplicates, type ExpansionPlan } from '../../study-contract/batch-plan.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { StudyReport } from '../../oracle/study-report.js';
import { hashText } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { TypedError } from '../../foundation/typed-error.js';
import { asPlanBeforeBlocks, CALL_TIMEOUT_MS, errorCodeOf, errorMessageOf, jsonOf, lockCopy, makeKey, planStudy, study, taskEnv, writeLockedPrereg, type StudyCall } from '../support/batch-study.js';
import { SCENARIOS_DIR } from '../support/controller-run.js';
import { folderState } from '../support/folder-state.js';
import { tempDir } from '../support/writer-fixture.js';

let dir: string;
let env: NodeJS.ProcessEnv;
let k1: ControllerKey;
let keys1: string;
/** The finished study (never changed: copy it). */
let finished: string;
/** Index 0 of a study with the same id and seed, planned and run under key 2. */
let foreignKeyRun: string;
/** Index 0 of another study under key 1. */
let otherStudyRun: string;

interface MergeJson {
  findings: MergeFinding[];
  leftovers: string[];
  report: StudyReport | null;
  expansion: string;
  verified: number;
  planned: number;
  exit_code: number;
}

function copyOf(source: string, name: string): string {
  const to = path.join(dir, name);
  cpSync(source, to, { recursive: true });
  return to;
}

const instance = (study: string, name: string): string => path.join(study, STUDY_FILES.instances, name);

/** Runs --merge on `studyDir` and holds it to a refusal (or an incomplete study): the exit, no report, the folder byte-identical. */
async function mergeRefused(studyDir: string, exit: number): Promise<MergeJson> {
  const before = folderState(studyDir);
  const r = await study(['--merge', studyDir, '--key-dir', keys1, '--json'], env);
  expect(r.code, `${r.stdout.slice(0, 3000)}${r.stderr.slice(-2000)}`).toBe(exit);
  expect(existsSync(path.join(studyDir, STUDY_FILES.json))).toBe(false);
  expect(folderState(studyDir), `--merge changed ${studyDir}`).toEqual(before);
  return jsonOf(r) as unknown as MergeJson;
}

async function refusedCall(studyDir: string, args: readonly string[], code: string, message: RegExp): Promise<StudyCall> {
  const before = folderState(studyDir);
  const r = await study([...args, '--json'], env);
  expect(r.code, r.stdout + r.stderr.slice(-2000)).toBe(2);
  expect(errorCodeOf(r)).toBe(code);
  expect(errorMessageOf(r)).toMatch(message);
  expect(existsSync(path.join(studyDir, STUDY_FILES.json))).toBe(false);
  expect(folderState(studyDir)).toEqual(before);
  return r;
}

/** The merge in process (what the command calls) refusing the study's expansion plan: typed, exit 2, nothing written. */
async function expansionRefused(studyDir: string, code: string, message: RegExp): Promise<void> {
  const before = folderState(studyDir);
  const caught = await mergeBatchStudy(studyDir, k1.keys.publicKey, SCENARIOS_DIR, () => undefined).then(
    () => null,
    (error: unknown) => error,
  );
  expect(caught, studyDir).toBeInstanceOf(TypedError);
  expect((caught as TypedError).errorCode, studyDir).toBe(code);
  expect((caught as TypedError).exitCode).toBe(2);
  expect((caught as Error).message).toMatch(message);
  expect(folderState(studyDir)).toEqual(before);
}

/** A task of the plan as a scheduler runs it: its own process, its own node-local scratch. */
async function runTask(studyDir: string, index: number, keyDir: string, prereg: string | null = null): Promise<void> {
  const r = await study(['--instance', String(index), '--out', studyDir, '--key-dir', keyDir, '--scratch', path.join(dir, `scratch-${path.basename(studyDir)}-${index}`), ...(prereg ? ['--prereg', prereg] : [])], env);
  if (r.code !== 0) throw new Error(`test setup: task ${index} of ${studyDir} exited ${r.code}: ${r.stderr.slice(-4000)}`);
}

/** An expansion plan as --expand would write it, for `instances`, signed (or not) by the planner. */
function writeExpansion(studyDir: string, instances: ExpansionPlan['instances'], sign: ControllerKey | null, overrides: Partial<ExpansionPlan> = {}): void {
  const expansion: ExpansionPlan = {
    expansion_version: EXPANSION_VERSION,
    study_id: 'bm-main',
    study_sha256: hashText(readFileSync(path.join(studyDir, STUDY_FILES.plan))),
    n_from: 1,
    n_to: 2,
    reasons: ['group A: score range 30.00 > 15 (triggers expansion)'],
    decided_at: '2026-03-10T00:00:00.000Z',
    instances,
    ...overrides,
  };
  writeFileSync(path.join(studyDir, BATCH_FILES.expansion), `${JSON.stringify(expansion, null, 2)}\n`);
  if (sign) signStudyFile(studyDir, BATCH_FILES.expansion, BATCH_FILES.expansionSignature, 'bm-main', sign);
}

beforeAll(async () => {
  dir = tempDir('ds-batch-merge-');
  env = taskEnv(path.join(dir, 'xdg'));
  keys1 = path.join(dir, 'keys1');
  const keys2 = path.join(dir, 'keys2');
  k1 = makeKey(keys1);
  const k2 = makeKey(keys2);
  const prereg1 = writeLockedPrereg(path.join(dir, 'prereg.json'), k1);
  const prereg2 = lockCopy(prereg1, path.join(dir, 'prereg-k2.json'), k2);
  finished = path.join(dir, 'study');
  const foreign = path.join(dir, 'foreign-key-study');
  const other = path.join(dir, 'other-study');
  await Promise.all([
    planStudy({ out: finished, keyDir: keys1, prereg: prereg1, studyId: 'bm-main', seed: 'merge' }, env),
    planStudy({ out: foreign, keyDir: keys2, prereg: prereg2, studyId: 'bm-main', seed: 'merge' }, env),
    planStudy({ out: other, keyDir: keys1, prereg: prereg1, studyId: 'bm-other', seed: 'merge' }, env),
  ]);
  // The per-instance tasks of a plan made before blocks (study_version 1.2.0, still run as they
  // were); a block task is merged in test/cluster/slurm-study.test.ts.
  asPlanBeforeBlocks(finished, k1);
  asPlanBeforeBlocks(foreign, k2);
  asPlanBeforeBlocks(other, k1);
  // Five tasks at once, as an array job would start them.
  await Promise.all([runTask(finished, 0, keys1), runTask(finished, 1, keys1), runTask(finished, 2, keys1), runTask(foreign, 0, keys2, prereg2), runTask(other, 0, keys1)]);
  foreignKeyRun = instance(foreign, 'A-r1');
  otherStudyRun = instance(other, 'A-r1');
}, 240_000);

describe('--merge refuses what the plan does not allow (exit 2), writing nothing', () => {
  test('a folder signed by a key not on the allow-list (same study id and seed, key 2): however self-consistent', async () => {
    const out = copyOf(finished, 'foreign-key');
    rmSync(instance(out, 'A-r1'), { recursive: true });
    cpSync(foreignKeyRun, instance(out, 'A-r1'), { recursive: true });
    const json = await mergeRefused(out, 2);
    expect(json.findings).toEqual([expect.objectContaining({ kind: 'refused', index: 0, instance: 'A-r1', detail: expect.stringMatching(/signed by key [0-9a-f]{16}…, which is not on the plan's allow-list/), rerun: null })]);
    expect(json.verified).toBe(2);
    expect(json.report).toBeNull();
  });

  test('a folder of another study (same key, other study id)', async () => {
    const out = copyOf(finished, 'other-study-folder');
    rmSync(instance(out, 'A-r1'), { recursive: true });
    cpSync(otherStudyRun, instance(out, 'A-r1'), { recursive: true });
    const json = await mergeRefused(out, 2);
    expect(json.findings).toHaveLength(1);
    expect(json.findings[0]).toMatchObject({ kind: 'refused', index: 0, instance: 'A-r1' });
    expect(json.findings[0]!.detail).toContain('a folder of another study (bm-other), not of bm-main');
  });

  test('a half-copied folder: events.db truncated, or heads.jsonl missing', async () => {
    const truncated = copyOf(finished, 'half-copied-store');
    const store = path.join(instance(truncated, 'B-r1'), RUN_FILES.store);
    truncateSync(store, Math.floor(statSync(store).size / 2));
    const headless = copyOf(finished, 'half-copied-heads');
    rmSync(path.join(instance(headless, 'C-r1'), RUN_FILES.heads));
    const [a, b] = await Promise.all([mergeRefused(truncated, 2), mergeRefused(headless, 2)]);
    expect(a.findings).toEqual([expect.objectContaining({ kind: 'refused', index: 1, instance: 'B-r1', detail: expect.stringMatching(/does not verify against the plan: verify: /) })]);
    expect(b.findings).toEqual([expect.objectContaining({ kind: 'refused', index: 2, instance: 'C-r1', detail: expect.stringMatching(/heads\.jsonl/) })]);
  });

  test('a copy of A-r1 placed as B-r1: the same run twice, and not the plan entry of B-r1', async () => {
    const out = copyOf(finished, 'duplicated');
    rmSync(instance(out, 'B-r1'), { recursive: true });
    cpSync(instance(out, 'A-r1'), instance(out, 'B-r1'), { recursive: true });
    const json = await mergeRefused(out, 2);
    const onB = json.findings.filter((f) => f.instance === 'B-r1');
    expect(onB.map((f) => f.kind).sort()).toEqual(['duplicated', 'refused']);
    expect(onB.find((f) => f.kind === 'duplicated')!.detail).toMatch(/is the same run as A-r1 \(same experiment and instance id\)/);
    expect(onB.find((f) => f.kind === 'refused')!.detail).toMatch(/its signed manifest has the capabilities of group .*, the plan's entry/);
    expect(json.findings.filter((f) => f.instance !== 'B-r1')).toEqual([]);
  });

  test('folders the plan has no index for (instances/A-r9, instances/junk)', async () => {
    const out = copyOf(finished, 'not-planned');
    cpSync(instance(out, 'A-r1'), instance(out, 'A-r9'), { recursive: true });
    mkdirSync(instance(out, 'junk'));
    writeFileSync(path.join(instance(out, 'junk'), 'notes.txt'), 'mine\n');
    const json = await mergeRefused(out, 2);
    expect(json.findings.map((f) => [f.kind, f.instance, f.index])).toEqual([
      ['not_planned', 'A-r9', null],
      ['not_planned', 'junk', null],
    ]);
    for (const f of json.findings) expect(f.detail).toMatch(/is no instance of the plan .*: move it away/);
  });

  test('a forged expansion plan, signed by the planner: round 2 for only some groups, or with seeds of its own: expansion_refused', async () => {
    const some = copyOf(finished, 'expansion-some-groups');
    // A and B get a second replicate, C does not (spec §6.2: all groups or none).
    const round2 = plannedReplicates('merge', 2, 2, 2);
    writeExpansion(some, [round2[0]!, round2[1]!, round2[0]!], k1);
    await refusedCall(some, ['--merge', some, '--key-dir', keys1], 'batch_plan_expansion_refused', /expansion\.json: entry 2 is .*"group":"A".*the plan's rule makes it .*"group":"C"/);
    const seeds = copyOf(finished, 'expansion-other-seeds');
    writeExpansion(seeds, plannedReplicates('chosen', 2, 2, 2), k1);
    await expansionRefused(seeds, 'batch_plan_expansion_refused', /expansion\.json: entry 0 is .*chosen-r2/);
  });

  test('a forged expansion plan: not signed, of another plan, for another n, not JSON: refused (exit 2)', async () => {
    const unsigned = copyOf(finished, 'expansion-unsigned');
    writeExpansion(unsigned, plannedReplicates('merge', 2, 2, 2), null);
    await refusedCall(unsigned, ['--merge', unsigned, '--key-dir', keys1], 'batch_plan_plan_unsigned', /expansion\.sig\.dsse\.json is missing: expansion\.json carries no planner signature/);
    const cases: [string, (at: string) => void, RegExp][] = [
      ['expansion-other-plan', (at) => writeExpansion(at, plannedReplicates('merge', 2, 2, 2), k1, { study_sha256: hashText('another plan') }), /expands another plan/],
      ['expansion-other-n', (at) => writeExpansion(at, plannedReplicates('merge', 2, 3, 2), k1, { n_to: 3 }), /expands n = 1 → 3, the plan's rule n = 1 → 2/],
      ['expansion-not-json', (at) => writeFileSync(path.join(at, BATCH_FILES.expansion), '{"expansion_version": '), /is not JSON/],
    ];
    for (const [name, forge, message] of cases) {
      const out = copyOf(finished, name);
      forge(out);
      await expansionRefused(out, 'batch_plan_expansion_refused', message);
    }
  });

  test('a round 2 the pre-registered rule does not call for (signed by the planner, every group): refused, not waited for', async () => {
    // n = 1 per group: a range of one value is 0 and no SD exists, so the rule cannot expand;
    // an expansion plan anyway is more data than was pre-registered.
    const out = copyOf(finished, 'expansion-not-called-for');
    writeExpansion(out, plannedReplicates('merge', 2, 2, 2), k1);
    await refusedCall(out, ['--merge', out, '--key-dir', keys1], 'batch_plan_expansion_refused', /rule/);
  });
});

describe('--merge of a study that is not complete (exit 3), writing nothing', () => {
  test('a missing instance: exit 3 with the command that runs it', async () => {
    const out = copyOf(finished, 'missing');
    rmSync(instance(out, 'C-r1'), { recursive: true });
    const json = await mergeRefused(out, 3);
    expect(json.findings).toEqual([{ kind: 'missing', index: 2, instance: 'C-r1', detail: expect.stringMatching(/its last task recorded done but published nothing/), rerun: `npm run study -- --instance 2 --out ${out}` }]);
  });

  test('running (claimed) and failed instances, and a published file that is no folder, are said as such', async () => {
    const out = copyOf(finished, 'not-done-kinds');
    rmSync(instance(out, 'A-r1'), { recursive: true });
    rmSync(instance(out, 'B-r1'), { recursive: true });
    writeFileSync(path.join(out, BATCH_FILES.tasks, '0.claim'), `${JSON.stringify({ index: 0, task_id: 'slurm:9_0', host: 'node-3', pid: 11, since: '2026-03-02T09:00:00.000Z' })}\n`);
    const record = JSON.parse(readFileSync(path.join(out, BATCH_FILES.tasks, '1.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(path.join(out, BATCH_FILES.tasks, '1.json'), `${JSON.stringify({ ...record, state: 'failed', exit_code: 1, detail: 'the writer could not start' })}\n`);
    const before = folderState(out);
    const outcome = await mergeBatchStudy(out, k1.keys.publicKey, SCENARIOS_DIR, () => undefined);
    expect(outcome.exitCode).toBe(3);
    expect(outcome.report).toBeNull();
    expect(outcome.check.findings.map((f) => [f.kind, f.index, f.rerun])).toEqual([
      ['running', 0, null],
      ['failed', 1, `npm run study -- --instance 1 --out ${out}`],
    ]);
    expect(outcome.check.findings[1]!.detail).toContain('its last task failed with exit 1: the writer could not start');
    expect(folderState(out)).toEqual(before);
    const file = copyOf(finished, 'published-file');
    rmSync(instance(file, 'C-r1'), { recursive: true });
    writeFileSync(instance(file, 'C-r1'), 'not a folder\n');
    const refused = await mergeBatchStudy(file, k1.keys.publicKey, SCENARIOS_DIR, () => undefined);
    expect(refused.exitCode).toBe(2);
    expect(refused.check.findings).toEqual([expect.objectContaining({ kind: 'refused', index: 2, detail: expect.stringMatching(/is a file, not a run folder/) })]);
    expect(existsSync(path.join(file, STUDY_FILES.json))).toBe(false);
  });
});

describe('the finished study', () => {
  test('--status: every instance done; --expand decides the rule on round 1; --merge agrees with it and writes the report (0 or 4); --recompute agrees (0)', async () => {
    const out = copyOf(finished, 'good');
    // A publish a crash cut short leaves a dot-folder: said, not data.
    cpSync(instance(out, 'A-r1'), instance(out, '.publishing-A-r1-0badf00d'), { recursive: true });
    const statusCall = await study(['--status', out, '--json'], env);
    expect(statusCall.code, statusCall.stderr).toBe(0);
    const status = jsonOf(statusCall) as { counts: Record<string, number>; instances: { state: string }[]; next: string };
    expect(status.counts).toEqual({ done: 3, running: 0, stopped: 0, missing: 0, failed: 0 });
    expect(status.instances.map((i) => i.state)).toEqual(['done', 'done', 'done']);
    expect(status.next).toBe(`round 1 is done: npm run study -- --expand ${out} (plans round 2 if the pre-registered rule calls for it), then npm run study -- --merge ${out}`);

    const beforeExpand = folderState(out);
    const expandCall = await study(['--expand', out, '--key-dir', keys1, '--json'], env);
    expect(expandCall.code, expandCall.stderr).toBe(0);
    const expand = jsonOf(expandCall) as { expand: boolean; array: string | null; reasons: string[]; findings: unknown[] };
    expect(expand.findings).toEqual([]);
    expect(expand.reasons.length).toBeGreaterThan(0);
    // --expand writes only when the rule expands.
    if (!expand.expand) expect(folderState(out)).toEqual(beforeExpand);
    const mergeCall = await study(['--merge', out, '--key-dir', keys1, '--json'], env);
    const merged = jsonOf(mergeCall) as unknown as MergeJson;
    if (expand.expand) {
      // Round 2 planned for every group: the merge waits for it.
      expect(expand.array).toBe('3-5');
      expect(existsSync(path.join(out, BATCH_FILES.expansion))).toBe(true);
      expect(mergeCall.code).toBe(3);
      expect(merged.findings.map((f) => [f.kind, f.index])).toEqual([
        ['missing', 3],
        ['missing', 4],
        ['missing', 5],
      ]);
      expect(existsSync(path.join(out, STUDY_FILES.json))).toBe(false);
      return;
    }
    // Not expanded: nothing written by --expand, and the merge builds the report on round 1.
    expect(expand.array).toBeNull();
    expect(expand.reasons[expand.reasons.length - 1]).toMatch(/no expansion$/);
    expect([0, 4], mergeCall.stderr.slice(-3000)).toContain(mergeCall.code);
    const report = StudyReport.parse(merged.report);
    expect(mergeCall.code).toBe(report.voided || report.verdict === 'insufficient evidence' ? 4 : 0);
    expect(merged.exit_code).toBe(mergeCall.code);
    expect(merged.expansion).toBe('not_triggered');
    expect(merged.findings).toEqual([]);
    expect(merged.verified).toBe(3);
    expect(merged.leftovers).toEqual([instance(out, '.publishing-A-r1-0badf00d')]);
    expect(report.n).toBe(1);
    expect(report.expanded).toBe(false);
    expect(report.instances.map((i) => [i.group, i.replicate, i.status])).toEqual([
      ['A', 1, 'finished'],
      ['B', 1, 'finished'],
      ['C', 1, 'finished'],
    ]);
    expect(report.expansion_reasons).toEqual(expand.reasons);
    for (const file of [STUDY_FILES.json, STUDY_FILES.markdown, STUDY_FILES.html]) expect(existsSync(path.join(out, file)), file).toBe(true);
    expect(StudyReport.parse(JSON.parse(readFileSync(path.join(out, STUDY_FILES.json), 'utf8')))).toEqual(report);
    const text = await study(['--merge', out, '--key-dir', keys1], env);
    expect(text.code).toBe(mergeCall.code);
    expect(text.stdout).toMatch(/^merge of bm-main: 3 of 3 planned instance\(s\) verified against the plan/);
    expect(text.stdout).toContain('is a publish a crash cut short (not data, ignored): remove it');
    expect(text.stdout).toContain(`MERGED: report written (verdict ${report.verdict}`);
    const recomputed = await study(['--recompute', out], env);
    expect(recomputed.stdout).toMatch(/^RECOMPUTED: every number of .* follows from its run folders/);
    expect(recomputed.code, recomputed.stdout).toBe(0);
    // Four CLI calls (--status, --expand, --merge, --recompute), each bounded by CALL_TIMEOUT_MS; the
    // 60 s default was exceeded once on this machine under load (60.1 s, a timeout, not a finding).
  }, 4 * CALL_TIMEOUT_MS);
});
