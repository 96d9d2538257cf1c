// The batch-merge part of `npm run bench -- --merge-instances N` (issue 18 item 6, issue 34 item 4):
// what `npm run study -- --merge` costs on a study of ~N instances, in time and memory.
//   setup      a batch plan of n = ceil(N/3) per group (writeBatchPlan, as --plan-only), its
//              block 0 run for real (runBlockTask: replicate 1's A, B and C side by side), every
//              other index filled with a copy of its group's real run folder (cpSync). The copies
//              do not conform to their plan entries (their manifests name replicate 1, seed S-r1)
//              and are the same run many times, so the merge refuses them (refused, duplicated):
//              expected — the bench asks checkRounds to score refused folders too (scoreRefused),
//              so every folder gets all the work a sound one gets
//   raw        the floor: every events.db of every folder read with better-sqlite3 and every row
//              JSON.parse-d, which any merge must at least do (the ratios' denominator)
//   merge      what --merge does, in one process: verify_score (checkRounds: each folder verified
//              and scored on a worker thread, reduced to its compact record), report_build
//              (rebuildStudyReport from the records: nothing read or verified again), report_write
//              (writeStudyReport: report.json/.md/.html); the process's RSS (its worker threads
//              included) sampled every 50 ms, its peak given per step
// Each phase runs in a process of its own (batch-merge-phase.ts), so its peak RSS is its own.
// The same phases run again on a study of ~N/10 instances built the same way: per-instance time
// at both sizes says whether time is linear, and the peak-RSS difference over the instance
// difference is the memory each further instance adds (its compact record: ~0 = bounded). Where
// a folder's time goes is measured per step on the small study (verify_parts, report_parts).
// It is a measurement, not a test: it exits 0 when the aim is missed and says MISSED.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, statfsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { IsolationOptions } from '../../controller/isolation.js';
import { KEY_FILES } from '../../controller/key-store.js';
import { MAX_STUDY_INSTANCES, STUDY_FILES } from '../../study-contract/study-folder.js';
import { instanceDirName } from '../../study-contract/study-replicates.js';
import { GROUPS } from '../../design/groups.js';
import { DEFAULT_START_AT, SCENARIOS_DIR } from '../../cli/run-defaults.js';
import { readBatchPlan } from '../../study/batch/batch-plan-reader.js';
import { writeBatchPlan } from '../../study/batch/batch-plan-writer.js';
import { runBlockTask } from '../../study/batch/block-task.js';
import type { TaskOptions } from '../../study/batch/instance-task.js';
import type { Phase, PhaseResult } from './batch-merge-phase.js';
import { log, roundTo } from './bench-util.js';
import { BENCH_SEED, benchControllerSetup } from './wake-overhead-bench.js';

/** The merge of BATCH_MERGE_AIM_INSTANCES instances, verify to report written, is meant to take at most this (issue 34 item 4). */
export const BATCH_MERGE_AIM_MAX_S = 60;
/** The size the aim is set for; a run of another size is judged by its time scaled to this many instances (time is linear: the small study's per-instance time says so). */
export const BATCH_MERGE_AIM_INSTANCES = 1_000;
export const DEFAULT_MERGE_INSTANCES = 0;
/** 6: two replicates per group, so the small study has one. */
export const MIN_MERGE_INSTANCES = 6;
export const MAX_MERGE_INSTANCES = MAX_STUDY_INSTANCES - GROUPS.length;
/** The small study is this fraction of the large one (at least one replicate per group). */
const SMALL_FRACTION = 0.1;
/** Copies may take at most this share of the free disk. */
const MAX_DISK_SHARE = 0.8;
const PHASE_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'batch-merge-phase.ts');
const TSX_LOADER = createRequire(import.meta.url).resolve('tsx');
const STUDY_ID = 'bench-batch-merge';

export interface BatchMergeBenchParams {
  /** Instances asked for (rounded up to whole replicates of A, B, C); 0 skips this part. */
  readonly instances: number;
  readonly isolation: IsolationOptions;
}

interface SizeResult {
  readonly instances: number;
  readonly raw: PhaseResult;
  readonly merge: PhaseResult;
}

/** The merge phase's steps, in order. */
export const MERGE_STEPS = ['verify_score', 'report_build', 'report_write'] as const;
export type MergeStep = (typeof MERGE_STEPS)[number];

export interface BatchMergeBenchReport {
  readonly n_per_group: number;
  readonly instances: number;
  readonly real_runs: number;
  readonly cores: number;
  readonly load_average: { readonly before: readonly number[]; readonly after: readonly number[]; readonly by_phase: Record<string, readonly number[]> };
  readonly setup: { readonly real_tasks_wall_ms: number; readonly copy_ms: number; readonly folder_mb: number; readonly disk_mb: number };
  /** Per phase: total ms, ms per instance, ratio to raw, peak RSS, at the large and the small size. */
  readonly phases: Record<'raw' | MergeStep | 'merge_total', { readonly ms: number; readonly per_instance_ms: number; readonly ratio_to_raw: number; readonly small_per_instance_ms: number }>;
  /** Peak RSS of the raw phase's process, of the merge's process (workers included) and of each of the merge's steps. */
  readonly peak_rss_mb: Record<'raw' | 'merge' | MergeStep, { readonly large: number; readonly small: number; readonly growth_per_instance_mb: number; readonly projected_at_max_study_mb: number }>;
  readonly rss_trace: { readonly raw: PhaseResult['rss']; readonly merge: PhaseResult['rss'] };
  readonly merge_detail: Record<string, unknown>;
  readonly where_time_goes: { readonly verify_per_folder_ms: Record<string, number>; readonly report_per_folder_ms: Record<string, number> };
  readonly small: { readonly instances: number };
  /** total_s: the merge measured; per_aim_instances_s: that time scaled to BATCH_MERGE_AIM_INSTANCES, which the aim judges. */
  readonly aim: { readonly max_total_s: number; readonly aim_instances: number; readonly total_s: number; readonly per_aim_instances_s: number; readonly met: boolean };
  readonly params: Record<string, unknown>;
}

function folderBytes(dir: string, depth = 0): number {
  if (depth > 32) throw new Error(`${dir}: nested deeper than 32 levels`);
  let sum = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    sum += entry.isDirectory() ? folderBytes(full, depth + 1) : statSync(full).size;
  }
  return sum;
}

/** Runs one phase in its own node process; its stdout is one PhaseResult. */
function runPhase(phase: Phase, studyDir: string, pubFile: string): Promise<PhaseResult> {
  const args = ['--import', TSX_LOADER, PHASE_FILE, phase, studyDir, pubFile, SCENARIOS_DIR];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      // One JSON line is expected; a runaway child is cut off rather than held in memory.
      if (out.length < 1_000_000) out += chunk;
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code !== 0) return reject(new Error(`batch merge phase ${phase} on ${studyDir} ended with ${signal ?? `exit ${code}`} (its stderr is above)`));
      try {
        resolve(JSON.parse(out.trim()) as PhaseResult);
      } catch {
        reject(new Error(`batch merge phase ${phase} printed no JSON result: ${out.slice(0, 300)}`));
      }
    });
  });
}

const load = (): number[] => os.loadavg().map((x) => roundTo(x, 2));

export async function runBatchMergeBench(params: BatchMergeBenchParams, parentDir: string): Promise<BatchMergeBenchReport> {
  const dir = mkdtempSync(path.join(parentDir, 'batch-merge-'));
  const loadBefore = load();
  const loadByPhase: Record<string, number[]> = {};
  try {
    const n = Math.ceil(params.instances / GROUPS.length);
    const nSmall = Math.max(1, Math.round(n * SMALL_FRACTION));
    const instances = n * GROUPS.length;
    log(`batch merge: n = ${n} per group = ${instances} instances (asked ${params.instances}); the small study n = ${nSmall} (${nSmall * GROUPS.length}); load average ${loadBefore.join(' ')} on ${os.cpus().length} cores`);
    // The pre-registration's first round is the plan's n (its rule would expand to n + 1; nothing here expands).
    const setup = benchControllerSetup(dir, n + 1);
    const plan = async (outDir: string, nPerGroup: number): Promise<void> => {
      await writeBatchPlan({ outDir, seed: BENCH_SEED, preregFile: setup.preregFile, keyDir: setup.keyDir, n: nPerGroup, startAt: DEFAULT_START_AT, model: { adapter: 'reference' }, studyId: STUDY_ID, sameUid: params.isolation.forceSameUid ?? null, allowKeyFiles: [], scenariosDir: SCENARIOS_DIR, log });
    };
    const large = path.join(dir, 'study');
    const small = path.join(dir, 'study-small');
    await plan(large, n);
    await plan(small, nSmall);
    const batchPlan = readBatchPlan(large, null);

    // Three real instances, one per group: block 0 (replicate 1's A, B and C side by side), as a plan that runs blocks does.
    const options: TaskOptions = {
      studyDir: large,
      keyDir: setup.keyDir,
      scratch: { root: path.join(dir, 'scratch'), from: '--scratch' },
      preregFile: null,
      scenariosDir: SCENARIOS_DIR,
      operator: 'npm run bench',
      signal: new AbortController().signal,
      env: process.env,
      log: (line) => {
        if (/FAILED|STOPPED|REFUSED|isolation: /.test(line)) log(`batch merge: ${line}`);
      },
    };
    let t = performance.now();
    const block = await runBlockTask(options, 0, batchPlan);
    const realMs = performance.now() - t;
    const notDone = block.members.filter((o) => !('state' in o) || o.state !== 'done');
    if (notDone.length > 0) throw new Error(`batch merge: block 0 not sealed (exit ${block.exitCode}): ${notDone.map((o) => ('state' in o ? `${o.index} ${o.state} ${o.detail ?? ''}` : `${o.index} exit ${o.exitCode}: ${o.error}`)).join('; ')}`);
    const instancesDir = path.join(large, STUDY_FILES.instances);
    const real = Object.fromEntries(GROUPS.map((g) => [g, path.join(instancesDir, instanceDirName(g, 1))]));
    const perReplicateBytes = GROUPS.reduce((s, g) => s + folderBytes(real[g]!), 0);
    const copiesBytes = perReplicateBytes * (n - 1 + nSmall);
    const fs = statfsSync(dir);
    const freeBytes = fs.bavail * fs.bsize;
    if (copiesBytes > freeBytes * MAX_DISK_SHARE) throw new Error(`batch merge: ${instances} instances need ~${Math.round(copiesBytes / 1e6)} MB of copies; ${dir} has ${Math.round(freeBytes / 1e6)} MB free: ask for fewer with --merge-instances`);
    log(`batch merge: 3 real instances in ${(realMs / 1_000).toFixed(1)} s; copying them to ${instances - 3 + nSmall * GROUPS.length} folders (~${Math.round(copiesBytes / 1e6)} MB)`);

    t = performance.now();
    for (const entry of batchPlan.instances) {
      if (entry.index < GROUPS.length) continue;
      cpSync(real[entry.group]!, path.join(instancesDir, instanceDirName(entry.group, entry.replicate)), { recursive: true });
    }
    for (const entry of readBatchPlan(small, null).instances) cpSync(real[entry.group]!, path.join(small, STUDY_FILES.instances, instanceDirName(entry.group, entry.replicate)), { recursive: true });
    const copyMs = performance.now() - t;

    const pubFile = path.join(setup.keyDir, KEY_FILES.public);
    const phase = async (name: Phase, studyDir: string, label: string): Promise<PhaseResult> => {
      loadByPhase[label] = load();
      log(`batch merge: ${label} (load average ${loadByPhase[label]!.join(' ')})`);
      const r = await runPhase(name, studyDir, pubFile);
      log(`batch merge: ${label}: ${r.folders} folders in ${(r.ms / 1_000).toFixed(1)} s (${(r.ms / r.folders).toFixed(1)} ms each), peak RSS ${r.max_rss_mb} MB`);
      return r;
    };
    const sizes = async (studyDir: string, count: number, label: string): Promise<SizeResult> => ({
      instances: count,
      raw: await phase('raw', studyDir, `raw ${label}`),
      merge: await phase('merge', studyDir, `merge ${label}`),
    });
    const big = await sizes(large, instances, `${instances}`);
    const little = await sizes(small, nSmall * GROUPS.length, `${nSmall * GROUPS.length}`);
    const verifyParts = await phase('verify_parts', small, 'verify, step by step');
    const reportParts = await phase('report_parts', small, 'scoring, step by step');

    const stepOf = (r: PhaseResult, step: MergeStep): PhaseResult['steps'][number] => {
      const found = r.steps.find((x) => x.step === step);
      if (found === undefined) throw new Error(`batch merge: the merge phase reported no ${step} step`);
      return found;
    };
    const row = (ms: number, smallMs: number) => ({ ms: roundTo(ms), per_instance_ms: roundTo(ms / big.instances, 2), ratio_to_raw: roundTo(ms / big.raw.ms, 2), small_per_instance_ms: roundTo(smallMs / little.instances, 2) });
    const rss = (largeMb: number, smallMb: number) => {
      const growth = (largeMb - smallMb) / (big.instances - little.instances);
      return { large: largeMb, small: smallMb, growth_per_instance_mb: roundTo(growth, 4), projected_at_max_study_mb: roundTo(smallMb + Math.max(0, growth) * (MAX_STUDY_INSTANCES - little.instances)) };
    };
    const totalS = big.merge.ms / 1_000;
    const scaledS = (totalS * BATCH_MERGE_AIM_INSTANCES) / big.instances;
    return {
      n_per_group: n,
      instances,
      real_runs: GROUPS.length,
      cores: os.cpus().length,
      load_average: { before: loadBefore, after: load(), by_phase: loadByPhase },
      setup: { real_tasks_wall_ms: roundTo(realMs), copy_ms: roundTo(copyMs), folder_mb: roundTo(perReplicateBytes / GROUPS.length / 1e6, 2), disk_mb: roundTo(copiesBytes / 1e6) },
      phases: {
        raw: row(big.raw.ms, little.raw.ms),
        ...(Object.fromEntries(MERGE_STEPS.map((step) => [step, row(stepOf(big.merge, step).ms, stepOf(little.merge, step).ms)])) as Record<MergeStep, ReturnType<typeof row>>),
        merge_total: row(big.merge.ms, little.merge.ms),
      },
      peak_rss_mb: {
        raw: rss(big.raw.max_rss_mb, little.raw.max_rss_mb),
        merge: rss(big.merge.max_rss_mb, little.merge.max_rss_mb),
        ...(Object.fromEntries(MERGE_STEPS.map((step) => [step, rss(stepOf(big.merge, step).peak_rss_mb, stepOf(little.merge, step).peak_rss_mb)])) as Record<MergeStep, ReturnType<typeof rss>>),
      },
      rss_trace: { raw: big.raw.rss, merge: big.merge.rss },
      merge_detail: big.merge.detail,
      where_time_goes: { verify_per_folder_ms: verifyParts.detail['per_folder_ms'] as Record<string, number>, report_per_folder_ms: reportParts.detail['per_folder_ms'] as Record<string, number> },
      small: { instances: little.instances },
      aim: { max_total_s: BATCH_MERGE_AIM_MAX_S, aim_instances: BATCH_MERGE_AIM_INSTANCES, total_s: roundTo(totalS, 1), per_aim_instances_s: roundTo(scaledS, 1), met: scaledS <= BATCH_MERGE_AIM_MAX_S },
      params: {
        instances: `${instances}: block 0 (indices 0-2) real runs (reference model, runBlockTask), the others cpSync copies of their group's real run (refused and duplicated by the merge, fully verified and scored first: scoreRefused)`,
        small_study: `${little.instances} instances built the same way; growth_per_instance_mb = (peak large - peak small) / (instances large - small); projected_at_max_study_mb: small peak + growth x (${MAX_STUDY_INSTANCES} - small)`,
        raw: 'every events.db under every instance folder: better-sqlite3 read-only, SELECT envelope ORDER BY seq, JSON.parse of each row',
        merge: 'one process: checkRounds(study, planner key, scenarios, "planned", { scoreRefused: true }) (verify_score, on worker threads), rebuildStudyReport(study, scenarios, its scored records) (report_build), writeStudyReport (report_write); merge_total = the three',
        memory: 'process.resourceUsage().maxRSS of each phase\'s own process (worker threads share it); per step: the highest RSS sampled in it by a sampler thread every 50 ms; at_quarters: at 25/50/75/100 % of the phase',
        where_time_goes: `per folder, on the ${little.instances}-instance study, one thread: the checks checkInstanceFolder makes, and evaluateInstance's steps with the verify and plan results given, as the merge's worker has them`,
        isolation: params.isolation.forceSameUid === undefined ? 'separate uids when possible' : `same uid: ${params.isolation.forceSameUid}`,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------
// Table

const seconds = (ms: number): string => `${(ms / 1_000).toFixed(1)} s`;

export function batchMergeTableLines(r: BatchMergeBenchReport): string[] {
  const p = r.phases;
  const line = (name: string, x: (typeof p)['raw'], what: string): string =>
    `  ${name.padEnd(16)} ${seconds(x.ms).padStart(8)} ${`${x.per_instance_ms.toFixed(1)} ms`.padStart(10)}/inst  x${x.ratio_to_raw.toFixed(2).padStart(6)} raw   (${r.small.instances} inst: ${x.small_per_instance_ms.toFixed(1)} ms/inst)  ${what}`;
  const mem = (name: string, m: (typeof r.peak_rss_mb)['raw']): string =>
    `  ${name.padEnd(16)} peak ${`${m.large} MB`.padStart(9)} (${r.small.instances} inst: ${m.small} MB)  ${m.growth_per_instance_mb >= 0 ? '+' : ''}${m.growth_per_instance_mb.toFixed(4)} MB per instance, ~${Math.round(m.projected_at_max_study_mb)} MB at ${MAX_STUDY_INSTANCES}`;
  const steps = (title: string, per: Record<string, number>): string[] => [`  ${title}`, ...Object.entries(per).map(([k, v]) => `    ${v.toFixed(1).padStart(8)} ms  ${k}`)];
  const trace = r.rss_trace.merge;
  return [
    `batch merge benchmark: ${r.instances} instances (n = ${r.n_per_group} per group; ${r.real_runs} real runs, the rest copies), ${r.cores} cores, load average ${r.load_average.before.join(' ')} before, ${r.load_average.after.join(' ')} after;`,
    `block 0 (3 real instances) ${seconds(r.setup.real_tasks_wall_ms)}, copies ${seconds(r.setup.copy_ms)} (${r.setup.folder_mb} MB per folder)`,
    '',
    line('raw read+parse', p.raw, 'every events.db: SELECT envelope + JSON.parse (the floor)'),
    line('verify + score', p.verify_score, `checkRounds on worker threads, each folder reduced to its record: ${JSON.stringify(r.merge_detail['findings_by_kind'])}`),
    line('report build', p.report_build, 'rebuildStudyReport from the records (nothing read again)'),
    line('report write', p.report_write, 'writeStudyReport: json, md, html'),
    line('merge total', p.merge_total, `the merge's process, start to end (aim <= ${r.aim.max_total_s} s for ${r.aim.aim_instances}: ${r.aim.per_aim_instances_s} s scaled, ${r.aim.met ? 'MET' : 'MISSED'})`),
    '',
    mem('raw', r.peak_rss_mb.raw),
    mem('merge', r.peak_rss_mb.merge),
    mem('  verify + score', r.peak_rss_mb.verify_score),
    mem('  report build', r.peak_rss_mb.report_build),
    mem('  report write', r.peak_rss_mb.report_write),
    `  merge RSS        start ${trace.start_mb} MB; at 25/50/75/100 % of the phase: ${trace.at_quarters_mb.join(' / ')} MB (${trace.samples} samples); a compact record is ${r.merge_detail['record_json_bytes_per_instance']} bytes as JSON`,
    '',
    ...steps(`where verify's time goes (per folder, one thread, ${r.small.instances}-instance study):`, r.where_time_goes.verify_per_folder_ms),
    ...steps(`where the scoring's time goes (per folder, one thread, ${r.small.instances}-instance study):`, r.where_time_goes.report_per_folder_ms),
  ];
}
