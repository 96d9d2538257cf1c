// The study part of `npm run bench` (bench.ts runs it last): the whole A/B/C study on this
// machine — groups A, B and C × n replicates with the reference model, through runStudy as
// `npm run study` runs it (bounded concurrency, each instance scored as it ends, then the
// report) — and what it costs:
//   study wall          runStudy from call to report written
//   instance wall       each instance's runNewInstance inside the study (report wall_ms)
//   parallel efficiency sum of instance walls / (slots × study wall), slots = min(concurrency,
//                       instances): 1.0 when every slot ran an instance all the time
//   scoring             evaluateInstance on one finished folder, timed apart (median of 3)
//   contention          informational: group C's instance walls in the study against C-r1
//                       run alone (the wake-overhead benchmark's reference run: group C, seed
//                       bench-seed-r1, the study's C-r1), and the speedup that implies
// The pre-registration is a locked copy whose expansion rule ends at n (n = 5 is the bundled
// file's expanded_n_per_group), so the rule has nothing to add and the study is exactly 3n
// instances. It is a measurement, not a test: it exits 0 when an aim is missed and says MISSED.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { IsolationOptions } from '../../controller/isolation.js';
import { PreRegistration, readPreregJson } from '../../design/prereg.js';
import { evaluateInstance } from '../../oracle/instance-evaluation.js';
import { GROUPS } from '../../design/groups.js';
import { hashCanonical } from '../../schema/hash.js';
import { DEFAULT_START_AT, SCENARIOS_DIR } from '../../cli/run-defaults.js';
import { STUDY_FILES } from '../../study-contract/study-folder.js';
import { runStudy } from '../../study/study-runner.js';
import { log, median, roundTo } from './bench-util.js';
import { BENCH_SEED, benchControllerSetup, isolationLabel, WAKE_BENCH_GROUP } from './wake-overhead-bench.js';

/** Minimum parallel efficiency the study is meant to reach. */
export const STUDY_AIM_MIN_EFFICIENCY = 0.75;
/** The A/B/C study at n = STUDY_AIM_N, reference policy, on this machine's cores: its wall time at most this (issue 19 item 4). */
export const STUDY_AIM_MAX_WALL_S = 60;
/** The n the study's wall-time aim is stated for. */
export const STUDY_AIM_N = 5;
export const DEFAULT_STUDY_N = 5;
/** n = 1 cannot be pinned: the pre-registration needs expanded n > initial n, so a study of 1 could expand. */
export const MIN_STUDY_N = 2;
export const MAX_STUDY_N = 33;
const SCORING_REPEATS = 3;

/** Instances under way at most: three per block. */
function instanceSlots(blocks: number, instances: number): number {
  return Math.min(blocks * GROUPS.length, instances);
}

export interface StudyBenchParams {
  /** Replicates per group; 0 skips the study part. */
  readonly n: number;
  /** Blocks at once (each one replicate's A, B and C in lockstep, issue 31). */
  readonly concurrency: number;
  readonly isolation: IsolationOptions;
}

/** The same instance as the study's C-r1, run alone (the wake-overhead benchmark's reference run). */
export interface AloneInstance {
  readonly group: string;
  readonly seed: string;
  readonly wall_ms: number;
}

export interface StudyBenchReport {
  readonly n_per_group: number;
  readonly groups: number;
  readonly instances: number;
  readonly finished: number;
  readonly concurrency: number;
  readonly cores: number;
  readonly model: 'reference';
  readonly isolation: string | null;
  readonly study_wall_ms: number;
  readonly wall_per_instance_ms: number;
  readonly instances_per_minute: number;
  readonly instance_wall_ms: { readonly median: number; readonly min: number; readonly max: number; readonly sum: number; readonly median_by_group: Record<string, number | null> };
  /** sum of instance walls / (min(3 × concurrency, instances) × study wall): a block holds three instances. */
  readonly parallel_efficiency: number;
  readonly scoring_ms: { readonly median: number; readonly runs: number[]; readonly instance: string };
  /**
   * Informational, against the same instance run alone: factor = the group's median wall in the
   * study / alone; speedup_estimate = instances × alone / study wall (as if every instance cost
   * what this one does alone), to read against the slots.
   */
  readonly contention:
    | (AloneInstance & { readonly in_study_same_instance_wall_ms: number; readonly in_study_group_median_wall_ms: number; readonly factor: number; readonly speedup_estimate: number })
    | null;
  readonly verdict: string;
  readonly params: Record<string, unknown>;
}

export async function runStudyBench(params: StudyBenchParams, parentDir: string, alone: AloneInstance | null): Promise<StudyBenchReport> {
  const dir = mkdtempSync(path.join(parentDir, 'study-'));
  try {
    const setup = benchControllerSetup(dir, params.n);
    const outDir = path.join(dir, 'out');
    const instances = params.n * GROUPS.length;
    log(`study: n = ${params.n} per group x ${GROUPS.length} groups = ${instances} instances, ${params.concurrency} block(s) at once (${os.cpus().length} cores), reference model; ${isolationLabel(params.isolation)}`);
    let isolation: string | null = null;
    let lastCounts = '';
    const startMs = performance.now();
    const outcome = await runStudy({
      outDir,
      seed: BENCH_SEED,
      preregFile: setup.preregFile,
      keyDir: setup.keyDir,
      scenariosDir: SCENARIOS_DIR,
      concurrency: params.concurrency,
      n: params.n,
      startAt: DEFAULT_START_AT,
      model: { adapter: 'reference' },
      studyId: 'bench-study',
      operator: 'npm run bench',
      signal: new AbortController().signal,
      isolation: params.isolation,
      // Each instance logs ~50 lines; only what says how the study goes reaches stderr.
      log: (line) => {
        const text = line.replace(/^\[[ABC]-r\d+\] /, '');
        if (isolation === null && text.startsWith('isolation: ')) {
          isolation = text;
          log(`study: ${text}`);
        }
        if (/ (FAILED|NOT SCORED|HARD FAILURES)|^PAUSED|expansion rule/.test(line)) log(`study: ${line}`);
      },
      onProgress: (p) => {
        const counts = `${p.finished}/${p.total}/${p.failed}`;
        if (counts === lastCounts) return;
        lastCounts = counts;
        log(`study: ${p.finished} of ${p.total} instances finished${p.failed > 0 ? `, ${p.failed} not` : ''} (${((performance.now() - startMs) / 1_000).toFixed(0)} s)`);
      },
    });
    const studyWallMs = performance.now() - startMs;
    const report = outcome.report;
    if (report.instances.length !== instances) throw new Error(`study: ${report.instances.length} instances ran, expected ${instances} (did the expansion rule add some?)`);
    const finished = report.instances.filter((i) => i.status === 'finished');
    if (finished.length !== instances) log(`study: WARNING: only ${finished.length} of ${instances} instances finished`);
    const walls = report.instances.map((i) => i.wall_ms ?? 0);
    const wallSum = walls.reduce((s, x) => s + x, 0);
    const slots = instanceSlots(params.concurrency, instances);
    const efficiency = wallSum / (slots * studyWallMs);

    // Scoring apart: one finished folder, again (the study scored each one already, so this is warm).
    const scored = finished[0];
    if (!scored) throw new Error('study: no instance finished; nothing to score');
    const scoredDir = path.join(outDir, STUDY_FILES.instances, `${scored.group}-r${scored.replicate}`);
    const preregSha256 = hashCanonical(PreRegistration.parse(readPreregJson(setup.preregFile)));
    const scoringRuns: number[] = [];
    for (let i = 0; i < SCORING_REPEATS; i += 1) {
      const t = performance.now();
      evaluateInstance(scoredDir, { scenariosDir: SCENARIOS_DIR, expectedPreregSha256: preregSha256 });
      scoringRuns.push(performance.now() - t);
    }

    const wallsOf = (group: string): number[] => report.instances.filter((i) => i.group === group && i.wall_ms !== null).map((i) => i.wall_ms!);
    const byGroup = Object.fromEntries(GROUPS.map((g) => [g, wallsOf(g).length === 0 ? null : median(wallsOf(g))]));
    const sameAsAlone = report.instances.find((i) => i.group === WAKE_BENCH_GROUP && i.replicate === 1)?.wall_ms ?? null;
    const groupMedian = byGroup[WAKE_BENCH_GROUP] ?? null;
    const contention =
      alone === null || sameAsAlone === null || groupMedian === null
        ? null
        : {
            ...alone,
            wall_ms: roundTo(alone.wall_ms),
            in_study_same_instance_wall_ms: sameAsAlone,
            in_study_group_median_wall_ms: groupMedian,
            factor: roundTo(groupMedian / alone.wall_ms, 2),
            speedup_estimate: roundTo((instances * alone.wall_ms) / studyWallMs, 2),
          };
    log(`study: ${instances} instances in ${(studyWallMs / 1_000).toFixed(1)} s; parallel efficiency ${efficiency.toFixed(3)}; scoring ${median(scoringRuns).toFixed(0)} ms per instance`);

    return {
      n_per_group: params.n,
      groups: GROUPS.length,
      instances,
      finished: finished.length,
      concurrency: params.concurrency,
      cores: os.cpus().length,
      model: 'reference',
      isolation,
      study_wall_ms: roundTo(studyWallMs),
      wall_per_instance_ms: roundTo(studyWallMs / instances),
      instances_per_minute: roundTo(instances / (studyWallMs / 60_000), 2),
      instance_wall_ms: { median: median(walls), min: Math.min(...walls), max: Math.max(...walls), sum: wallSum, median_by_group: byGroup },
      parallel_efficiency: roundTo(efficiency, 4),
      scoring_ms: { median: roundTo(median(scoringRuns), 1), runs: scoringRuns.map((x) => roundTo(x, 1)), instance: `${scored.group}-r${scored.replicate}` },
      contention,
      verdict: `${report.verdict}${report.dry_run ? ' (apparatus dry run)' : ''}`,
      params: {
        seed: `${BENCH_SEED} (replicate k: ${BENCH_SEED}-rk)`,
        start_at: DEFAULT_START_AT,
        speed: 'as fast as possible (speed null)',
        expansion: `locked copy of experiments/prereg/default.json with expanded_n_per_group = ${params.n}: nothing to expand`,
        parallel_efficiency: 'sum of the instances\' runNewInstance walls / (min(3 x concurrency, instances) x study wall): a block is three instances side by side; the study wall also holds scoring (in the slots) and the report',
        isolation: isolationLabel(params.isolation),
        scoring: `evaluateInstance on one finished folder, ${SCORING_REPEATS} times after the study, median`,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------
// Table

const seconds = (ms: number): string => `${(ms / 1_000).toFixed(1)} s`;
const millis = (ms: number): string => `${Math.round(ms).toLocaleString('en-US')} ms`;

export function studyTableLines(r: StudyBenchReport): string[] {
  const g = r.instance_wall_ms.median_by_group;
  const lines = [
    `study benchmark: n = ${r.n_per_group} per group x ${r.groups} groups = ${r.instances} instances (${r.finished} finished), reference model, ${r.concurrency} block(s) at once (${r.cores} cores);`,
    `${r.isolation ?? 'isolation: ?'}; verdict ${r.verdict}`,
    '',
    `  ${'study wall'.padEnd(20)} ${seconds(r.study_wall_ms).padStart(10)}  runStudy: every instance, its scoring, the report`,
    `  ${'wall per instance'.padEnd(20)} ${millis(r.wall_per_instance_ms).padStart(10)}  study wall / instances; ${r.instances_per_minute} instances/minute`,
    `  ${'instance wall'.padEnd(20)} ${millis(r.instance_wall_ms.median).padStart(10)}  median runNewInstance inside the study (min ${millis(r.instance_wall_ms.min)}, max ${millis(r.instance_wall_ms.max)}; medians ${Object.entries(g).map(([k, v]) => `${k} ${v === null ? '-' : millis(v)}`).join(', ')})`,
    `  ${'sum of instances'.padEnd(20)} ${seconds(r.instance_wall_ms.sum).padStart(10)}  raw: the instance walls added up (what one slot would need)`,
    `  ${'parallel efficiency'.padEnd(20)} ${r.parallel_efficiency.toFixed(3).padStart(10)}  sum of instances / (${instanceSlots(r.concurrency, r.instances)} slots x study wall)`,
    `  ${'scoring'.padEnd(20)} ${millis(r.scoring_ms.median).padStart(10)}  evaluateInstance on ${r.scoring_ms.instance} (median of ${r.scoring_ms.runs.length}), per instance`,
  ];
  const c = r.contention;
  if (c) {
    lines.push(`  ${'contention'.padEnd(20)} ${`x${c.factor.toFixed(2)}`.padStart(10)}  informational: group ${c.group} median ${millis(c.in_study_group_median_wall_ms)} in the study (${c.group}-r1 ${millis(c.in_study_same_instance_wall_ms)}); ${c.group}-r1 alone ${millis(c.wall_ms)}`);
    lines.push(`  ${'speedup (estimate)'.padEnd(20)} ${`x${c.speedup_estimate.toFixed(2)}`.padStart(10)}  informational: ${r.instances} x ${c.group}-r1 alone / study wall, against ${instanceSlots(r.concurrency, r.instances)} slots`);
  }
  return lines;
}
