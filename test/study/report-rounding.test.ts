// report.json's rounding (issue 32 item 3) on a real reference-policy study: the report carries
// the rounding section and the unrounded values beside the rounded figures, and every rounded
// figure is its rule applied to its unrounded value (oracle/rounded-figures-check.ts). Forged
// reports — a figure rounded by another rule, a score computed from the unrounded dimensions, a
// group median rounded, a threshold written otherwise, a section whose rule was changed — are
// caught, by the check and by --recompute. A report written in an older version (2.1.0, before
// the section) still recomputes, and a resume that finds it complete leaves it as it is.
// Three real instances (A, B, C) are run once; the study's instances are copies (as in
// study-runner.test.ts), A-r2 a copy of C's run so the expansion rule is applied to a spread.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { Group } from '../../controller/instance-runner.js';
import { DIMENSIONS, type Dimension } from '../../oracle/continuity-score.js';
import { POINTS_ROUNDING, roundByRule } from '../../oracle/figure-rounding.js';
import { ROUNDED_FIGURES, ROUNDING_RULES } from '../../oracle/report-rounding.js';
import { checkRoundedFigures } from '../../oracle/rounded-figures-check.js';
import { STUDY_REPORT_VERSION, StudyReport } from '../../oracle/study-report.js';
import { PreRegistration, readPreregJson } from '../../design/prereg.js';
import { recomputeStudy } from '../../study/study-recompute.js';
import { resumeStudy } from '../../study/study-resume.js';
import { runStudy, type StudyOptions } from '../../study/study-runner.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { runCli } from '../support/cli.js';
import { controllerSetup, newInstanceOptions, runInstance, SCENARIOS_DIR, type ControllerSetup } from '../support/controller-run.js';
import { copiedStudyOptions, copyingRunner } from '../support/copying-runner.js';
import { folderState } from '../support/folder-state.js';
import { tempDir } from '../support/writer-fixture.js';

const SEED = 'rounding-test';
let setup: ControllerSetup;
let weights: Record<Dimension, number>;
const source: Partial<Record<Group, string>> = {};
let studyDir: string;
let report: StudyReport;
let reportText: string;

function studyOptions(outDir: string): StudyOptions {
  // A's replicate 2 is C's run: A's range is C − A, so the expansion rule compares a real spread.
  const from = (g: Group, r: number): string => source[g === 'A' && r === 2 ? 'C' : g]!;
  return copiedStudyOptions(setup, outDir, SEED, 'exp-rounding-test', { runInstance: copyingRunner([], from) });
}

beforeAll(async () => {
  setup = controllerSetup();
  const prereg = PreRegistration.parse(readPreregJson(setup.preregFile));
  weights = Object.fromEntries(DIMENSIONS.map((d) => [d, prereg.scoring.dimensions[d].weight])) as Record<Dimension, number>;
  await Promise.all(
    (['A', 'B', 'C'] as const).map(async (group) => {
      const result = await runInstance(newInstanceOptions(setup, { group, name: `source-${group}`, seed: `${SEED}-r1`, experimentId: 'exp-rounding-test' }));
      expect(result.status).toBe('finished');
      source[group] = result.runDir;
    }),
  );
  studyDir = path.join(tempDir('ds-rounding-'), 'study');
  report = (await runStudy(studyOptions(studyDir))).report;
  reportText = readFileSync(path.join(studyDir, STUDY_FILES.json), 'utf8');
}, 240_000);

/** report.json as written, parsed afresh (each forge edits its own copy). */
const written = (): StudyReport => StudyReport.parse(JSON.parse(reportText));

/** The first (instance, dimension) whose rounding to 2 decimals differs from its rounding by the report's rule: a figure a wrong rule changes. */
function figureAnotherRuleChanges(r: StudyReport): { instance: number; dimension: Dimension } {
  for (const [k, i] of r.instances.entries()) {
    for (const d of DIMENSIONS) if (i.dimensions !== null && Math.round(i.dimensions_unrounded![d] * 100) / 100 !== i.dimensions[d]) return { instance: k, dimension: d };
  }
  throw new Error('no dimension of the study has more than 2 decimals: the forge would change nothing');
}

describe('report.json carries its rounding, and every rounded figure follows its rule', () => {
  test('a real study: report 2.2.0 with the section as defined, unrounded values beside the rounded ones, all agreeing', () => {
    expect(report.report_version).toBe(STUDY_REPORT_VERSION);
    expect(report.expanded).toBe(true);
    const section = report.rounding!;
    expect(section.rules).toEqual(ROUNDING_RULES);
    expect(section.rules.points).toMatchObject({ decimals: 6, formula: 'Math.round(x * 1e6) / 1e6' });
    expect(section.figures).toEqual(ROUNDED_FIGURES);
    expect(section.figures.find((f) => f.kind === 'instance_score')).toMatchObject({ rule: 'points', from_rounded_inputs: true, unrounded_at: 'instances[].score_unrounded' });
    expect(section.figures.find((f) => f.kind === 'group_statistic')).toMatchObject({ rounded: false, rule: null, from_rounded_inputs: true });
    // Every point the thresholds compare, and the expansion rule's 3 × (range + 5 SDs) at n = 3.
    expect(section.threshold_points.map((p) => p.point)).toEqual(['median_A', 'median_B', 'median_C', 'c_minus_b', 'c_minus_a']);
    expect(section.expansion_points).toHaveLength(3 * (1 + DIMENSIONS.length));
    expect(section.expansion_points.find((p) => p.point === 'group A: score range')!.rounded).toBeGreaterThan(15);
    for (const i of report.instances) {
      expect(i.score_unrounded).not.toBeNull();
      expect(i.per_wake.every((w) => typeof w.value_unrounded === 'number')).toBe(true);
    }
    expect(report.blocks!.every((b) => b.turns.mean_wait_ms_unrounded !== undefined)).toBe(true);

    // The rounding is not idle on this data: some figures have more digits than their rule keeps.
    const wakeDigits = report.instances.flatMap((i) => i.per_wake.filter((w) => w.value_unrounded !== w.value));
    const dimensionDigits = report.instances.flatMap((i) => DIMENSIONS.filter((d) => i.dimensions_unrounded![d] !== i.dimensions![d]));
    expect(wakeDigits.length + dimensionDigits.length).toBeGreaterThan(0);

    const check = checkRoundedFigures(report, weights);
    expect(check.problems).toEqual([]);
    expect(check.unchecked).toBeNull();
    const wakes = report.instances.reduce((s, i) => s + i.per_wake.length, 0);
    // At least: every wake value, dimension (and its state_recovery input), score (and its inputs) and counted score.
    expect(check.checked).toBeGreaterThan(wakes + report.instances.length * (DIMENSIONS.length + 4));

    const recomputed = recomputeStudy(studyDir, SCENARIOS_DIR);
    expect(recomputed.differences).toEqual([]);
    expect(recomputed.rounding).toMatchObject({ problems: [], unchecked: null, checked: check.checked });
    // report.md says how its 2-decimal numbers relate to report.json's.
    expect(readFileSync(path.join(studyDir, STUDY_FILES.markdown), 'utf8')).toContain('rounded to 6 decimals (Math.round(x \\* 1e6) / 1e6, an exact half toward +infinity), each score from the rounded dimensions');
  });

  test('npm run study -- --recompute prints how many figures the check held to their rule', async () => {
    const r = await runCli('study', ['--recompute', studyDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^RECOMPUTED: every number of .* follows from its run folders/);
    expect(r.stdout).toContain(`rounded figures agree with their rule: ${checkRoundedFigures(report, weights).checked} figure(s) checked, all agree`);
  }, 60_000);

  test('forged: a dimension rounded by another rule (2 decimals) is named, by the check and by --recompute', () => {
    const forged = written();
    const at = figureAnotherRuleChanges(forged);
    const i = forged.instances[at.instance]!;
    i.dimensions![at.dimension] = Math.round(i.dimensions_unrounded![at.dimension] * 100) / 100;
    const problems = checkRoundedFigures(forged, weights).problems;
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^instances ${i.group}-r${i.replicate}\\.dimensions\\.${at.dimension}: .* is not Math\\.round\\(x \\* 1e6\\) / 1e6 of its unrounded`)));
    writeFileSync(path.join(studyDir, STUDY_FILES.json), JSON.stringify(forged));
    try {
      const recomputed = recomputeStudy(studyDir, SCENARIOS_DIR);
      expect(recomputed.differences).toContainEqual(expect.stringMatching(new RegExp(`^rounded figures agree with their rule: instances ${i.group}-r${i.replicate}\\.dimensions\\.${at.dimension}:`)));
      expect(recomputed.differences).toContainEqual(expect.stringMatching(new RegExp(`^instances\\.${at.instance}\\.dimensions\\.${at.dimension}: report.json has`)));
    } finally {
      writeFileSync(path.join(studyDir, STUDY_FILES.json), reportText);
    }
  });

  test('forged: a score computed from the UNROUNDED dimensions (the other reading) is caught by its inputs', () => {
    const forged = written();
    const k = forged.instances.findIndex((i) => DIMENSIONS.some((d) => i.dimensions_unrounded![d] !== i.dimensions![d]));
    expect(k, 'an instance with a dimension that has more than 6 decimals').toBeGreaterThanOrEqual(0);
    const i = forged.instances[k]!;
    const fromUnrounded = DIMENSIONS.reduce((s, d) => s + (weights[d] * i.dimensions_unrounded![d]) / 100, 0);
    expect(fromUnrounded).not.toBe(i.score_unrounded);
    i.score_unrounded = fromUnrounded;
    i.score = roundByRule(POINTS_ROUNDING, fromUnrounded);
    if (i.hard_failures.length === 0) i.counted_score = i.score;
    expect(checkRoundedFigures(forged, weights).problems).toContainEqual(expect.stringMatching(new RegExp(`^instances ${i.group}-r${i.replicate}\\.score_unrounded: .*, but computed from its rounded dimensions and the pre-registered weights it is`)));
    // Without the weights (report.json alone) that one check is left out, and says nothing false.
    expect(checkRoundedFigures(forged, null).problems.filter((p) => p.includes('score_unrounded'))).toEqual([]);
  });

  test('forged: a group median, a dimension SD rounded; a threshold written with 1 decimal; mean waits floored', () => {
    const forged = written();
    const g = (['A', 'B', 'C'] as const).find((x) => forged.groups[x].dimensions.state_recovery.sd !== null && Math.round(forged.groups[x].dimensions.state_recovery.sd! * 100) / 100 !== forged.groups[x].dimensions.state_recovery.sd)!;
    expect(g, 'a group SD with more than 2 decimals').toBeDefined();
    forged.groups[g].dimensions.state_recovery.sd = Math.round(forged.groups[g].dimensions.state_recovery.sd! * 100) / 100;
    forged.groups.C.median = forged.groups.C.median! + 1e-7;
    const observed = forged.thresholds.find((t) => t.id === 'c_median')!;
    observed.observed = Number(observed.observed).toFixed(1);
    // Floored after taking half off: never what Math.round gives.
    const block = forged.blocks![0]!;
    for (const x of ['A', 'B', 'C'] as const) if (block.turns.mean_wait_ms_unrounded![x] !== null) block.turns.mean_wait_ms[x] = Math.floor(block.turns.mean_wait_ms_unrounded![x]! - 0.5);
    const problems = checkRoundedFigures(forged, weights).problems;
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^groups\\.${g}\\.dimensions\\.state_recovery\\.sd: .*, but computed from its values, unrounded`)));
    expect(problems).toContainEqual(expect.stringMatching(/^groups\.C\.median: .*, but computed from its scores, unrounded/));
    // The forged median no longer is the threshold point's unrounded value.
    expect(problems).toContainEqual(expect.stringMatching(/^rounding\.threshold_points median_C\.unrounded: .* computed from groups\.C\.median/));
    expect(problems).toContainEqual(expect.stringMatching(/^thresholds c_median\.observed: ".*" is not x\.toFixed\(2\) of its rounded point/));
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^blocks r${block.replicate}\\.turns\\.mean_wait_ms\\.[ABC]: .* is not Math\\.round\\(x\\) of its unrounded`)));
  });

  test('forged: an expansion point not from the first round, and a reason that writes another point', () => {
    const forged = written();
    const range = forged.rounding!.expansion_points.find((p) => p.point === 'group A: score range')!;
    range.unrounded = range.unrounded! + 0.25;
    range.rounded = roundByRule(POINTS_ROUNDING, range.unrounded);
    const problems = checkRoundedFigures(forged, weights).problems;
    expect(problems).toContainEqual(expect.stringMatching(/^rounding\.expansion_points "group A: score range"\.unrounded: .*, but computed from the counted scores and rounded dimensions of A's first 3 replicate\(s\)/));
    // Its reason still writes the true range: no reason begins with the forged one.
    expect(problems).toContainEqual(expect.stringMatching(/^expansion_reasons: none begins "group A: score range \d+\.\d\d"/));
  });

  test('forged: the section names another rule (4 decimals) — the figures then disagree with it, and --recompute names the rule', () => {
    const forged = written();
    forged.rounding!.rules.points = { ...forged.rounding!.rules.points, decimals: 4, formula: 'Math.round(x * 1e4) / 1e4' };
    const problems = checkRoundedFigures(forged, weights).problems;
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.every((p) => !p.includes('1e6'))).toBe(true);
    writeFileSync(path.join(studyDir, STUDY_FILES.json), JSON.stringify(forged));
    try {
      expect(recomputeStudy(studyDir, SCENARIOS_DIR).differences).toContainEqual(expect.stringMatching(/^rounding\.rules\.points\.decimals: report\.json has 4, recomputed 6/));
    } finally {
      writeFileSync(path.join(studyDir, STUDY_FILES.json), reportText);
    }
  });

  test('a report written before the section (2.1.0) still recomputes, is still held to its folders, and a resume leaves it as it is', async () => {
    // What a 2.1.0 build wrote: this report less the section and the unrounded values, taken out by hand.
    const old = JSON.parse(reportText) as Record<string, unknown> & { instances: Record<string, unknown>[]; blocks: { turns: Record<string, unknown> }[] };
    old['report_version'] = '2.1.0';
    delete old['rounding'];
    for (const i of old.instances) {
      delete i['score_unrounded'];
      delete i['dimensions_unrounded'];
      for (const w of i['per_wake'] as Record<string, unknown>[]) delete w['value_unrounded'];
    }
    for (const b of old.blocks) delete b.turns['mean_wait_ms_unrounded'];
    // Nor had it the prompt reuse of 2.3.0 (issue 34).
    for (const i of old.instances) delete i['prompt_reuse'];
    for (const g of Object.values(old['groups'] as Record<string, Record<string, unknown>>)) delete g['prompt_reuse'];
    // Nor the cost of 2.4.0 (issue 36).
    delete old['cost'];
    for (const i of old.instances) delete i['cost'];
    for (const g of Object.values(old['groups'] as Record<string, Record<string, unknown>>)) delete g['cost'];
    expect(StudyReport.safeParse(old).success).toBe(true);
    const oldText = `${JSON.stringify(old, null, 2)}\n`;
    const file = path.join(studyDir, STUDY_FILES.json);
    try {
      writeFileSync(file, oldText);
      const recomputed = recomputeStudy(studyDir, SCENARIOS_DIR);
      expect(recomputed.differences).toEqual([]);
      expect(recomputed.report.report_version).toBe('2.1.0');
      expect(recomputed.rounding).toMatchObject({ checked: 0, unchecked: expect.stringMatching(/^report_version 2\.1\.0 carries no rounding section/) });

      // Still held to its folders: a score changed in the old report is a difference.
      const forged = JSON.parse(oldText) as { instances: { score: number }[] };
      forged.instances[0]!.score += 0.000001;
      writeFileSync(file, JSON.stringify(forged));
      expect(recomputeStudy(studyDir, SCENARIOS_DIR).differences).toContainEqual(expect.stringMatching(/^instances\.0\.score: report\.json has/));

      // A resume of the complete study finds nothing to do and leaves the 2.1.0 report byte for byte.
      writeFileSync(file, oldText);
      const before = folderState(studyDir);
      const resumed = await resumeStudy({ outDir: studyDir, keyDir: setup.keyDir, scenariosDir: SCENARIOS_DIR, concurrency: null, operator: 'test', signal: new AbortController().signal, log: () => {}, onProgress: () => {}, runInstance: copyingRunner([], () => source.A!) });
      expect(resumed.nothingToDo).toBe(true);
      expect(resumed.report.report_version).toBe('2.1.0');
      expect(folderState(studyDir)).toEqual(before);
    } finally {
      writeFileSync(file, reportText);
    }
  }, 120_000);
});
