// npm run bench: the store's throughput questions and the study's costs in one run, one table.
//   append (append-bench.ts): the writer process against raw SQLite doing the same durable work
//   replay (replay-bench.ts): rebuilding state from a store's events against SQLite reading
//                             and JSON.parse-ing the same rows; restore and state-at-seq
//                             from snapshots against replay from seq 1
//   wake overhead (wake-overhead-bench.ts): the apparatus's own time per wake of a real
//                             72-hour instance, model time taken out (reference policy, and
//                             --model openai against a fixed-latency loopback stub), against a
//                             Node IPC round trip and a durable commit (append's raw_single)
//   study (study-bench.ts):   the whole A/B/C study, n per group, its wall time, parallel
//                             efficiency and scoring time per instance
//   batch merge (batch-merge-bench.ts, only with --merge-instances N): --merge's verify and
//                             report over ~N instance folders, their peak RSS, against reading
//                             and JSON.parse-ing every events.db of the same folders
// It is a measurement, not a test: it exits 0 when an aim is missed and says MISSED.
//
//   npm run bench -- [--events N] [--batch B] [--rounds R] [--replay-events M]
//                    [--study-n S] [--study-concurrency K] [--stub-latency-ms L] [--separate-uids]
//                    [--merge-instances I] [--json]
//     N, B, R: see append-bench.ts. M: events in the replay store (default 1,000,000;
//     building it dominates the run time, so a smaller M is the way to a quick run).
//     S: replicates per group of the study part (default 5; 0 skips it: it takes minutes).
//     K: instances at once in the study (default: the number of cores). L: the stub model's
//     fixed latency in ms (default 200). Instances run under one uid (reason "benchmark")
//     unless --separate-uids lets the controller use two unprivileged uids when it can.
//     I: instances of the batch-merge part (default 0: skipped; it copies ~1.2 MB per instance
//     and takes minutes at 1,000).
//
// With --json, stdout carries exactly one JSON object: the append report's keys (raw,
// ours, ratios, aims, params) with `replay`, `wake_overhead` and `study` (null when
// skipped) beside them; ratios/aims hold append_single, append_batched and replay, and
// wake_overhead.aim and study.aim the two newer aims; `batch_merge` (null when skipped) has its own aim. Everything else goes to stderr (the
// writer child logs there too; the project's .npmrc silences npm's banner).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { APPEND_USAGE, appendParams, runAppendBench } from './append-bench.js';
import { log, positiveInt, UsageError, type Aim } from './bench-util.js';
import { DEFAULT_REPLAY_EVENTS, MAX_REPLAY_EVENTS, MIN_REPLAY_EVENTS, REPLAY_ROUNDS, replayTableLines, runReplayBench, type ReplayBenchParams } from './replay-bench.js';
import { batchMergeAimLine, batchMergeTableLines, DEFAULT_MERGE_INSTANCES, MAX_MERGE_INSTANCES, MIN_MERGE_INSTANCES, runBatchMergeBench, type BatchMergeBenchParams, type BatchMergeBenchReport } from './batch-merge-bench.js';
import { DEFAULT_STUDY_N, MAX_STUDY_N, MIN_STUDY_N, runStudyBench, studyAimLine, studyTableLines, type StudyBenchParams, type StudyBenchReport } from './study-bench.js';
import { DEFAULT_STUB_LATENCY_MS, MAX_STUB_LATENCY_MS, runWakeOverheadBench, WAKE_BENCH_GROUP, WAKE_BENCH_INSTANCE_SEED, wakeOverheadAimLine, wakeOverheadTableLines, type WakeOverheadParams } from './wake-overhead-bench.js';
import { reportFailure } from '../cli/command-outcome.js';

const USAGE = `usage: npm run bench -- ${APPEND_USAGE} [--replay-events M] [--study-n S] [--study-concurrency K] [--stub-latency-ms L] [--separate-uids] [--merge-instances I] [--json]`;
const BENCH_SAME_UID_REASON = 'benchmark';

interface CommandLine {
  readonly append: ReturnType<typeof appendParams>;
  readonly replay: ReplayBenchParams;
  readonly wake: WakeOverheadParams;
  readonly study: StudyBenchParams;
  readonly merge: BatchMergeBenchParams;
  readonly json: boolean;
}

function parseCommandLine(argv: string[]): CommandLine {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        events: { type: 'string' },
        batch: { type: 'string' },
        rounds: { type: 'string' },
        'replay-events': { type: 'string' },
        'study-n': { type: 'string' },
        'study-concurrency': { type: 'string' },
        'stub-latency-ms': { type: 'string' },
        'separate-uids': { type: 'boolean', default: false },
        'merge-instances': { type: 'string' },
        json: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const studyN = positiveInt('study-n', values['study-n'], DEFAULT_STUDY_N, MAX_STUDY_N, 0);
  if (studyN > 0 && studyN < MIN_STUDY_N) throw new UsageError(`--study-n must be 0 (skip the study) or between ${MIN_STUDY_N} and ${MAX_STUDY_N}, got ${studyN}: the pre-registration needs an expanded n above the initial one, so a study of ${studyN} could expand`);
  const isolation = values['separate-uids'] === true ? {} : { forceSameUid: BENCH_SAME_UID_REASON };
  const mergeInstances = positiveInt('merge-instances', values['merge-instances'], DEFAULT_MERGE_INSTANCES, MAX_MERGE_INSTANCES, 0);
  if (mergeInstances > 0 && mergeInstances < MIN_MERGE_INSTANCES) throw new UsageError(`--merge-instances must be 0 (skip the batch merge) or between ${MIN_MERGE_INSTANCES} and ${MAX_MERGE_INSTANCES}, got ${mergeInstances}`);
  return {
    append: appendParams(values),
    replay: { events: positiveInt('replay-events', values['replay-events'], DEFAULT_REPLAY_EVENTS, MAX_REPLAY_EVENTS, MIN_REPLAY_EVENTS) },
    wake: { stubLatencyMs: positiveInt('stub-latency-ms', values['stub-latency-ms'], DEFAULT_STUB_LATENCY_MS, MAX_STUB_LATENCY_MS, 0), isolation },
    study: { n: studyN, concurrency: positiveInt('study-concurrency', values['study-concurrency'], Math.max(1, os.cpus().length), 64), isolation },
    merge: { instances: mergeInstances, isolation },
    json: values.json === true,
  };
}

async function main(): Promise<number> {
  // A bad flag throws UsageError: reportFailure prints it with the usage, exit 2.
  const params = parseCommandLine(process.argv.slice(2));
  const startMs = performance.now();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ds-bench-'));
  // The replay store runs to a gigabyte; an interrupted run should not leave it behind.
  // The handler runs between phases and build batches (a replay is one synchronous call).
  const onSignal = (signal: NodeJS.Signals): void => {
    rmSync(dir, { recursive: true, force: true });
    process.stderr.write(`[bench] ${signal}: removed ${dir}\n`);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    log(`temp dir ${dir}`);
    const append = await runAppendBench(params.append, dir);
    const { ratio: replayRatio, aim: replayAim, ...replay } = await runReplayBench(params.replay, dir);
    // One durable single-row commit, as the append benchmark's raw_single measured it in this run.
    const rawSingle = append.report.raw['single_events_per_second'];
    if (rawSingle === undefined || !(rawSingle > 0)) throw new Error('the append benchmark reported no raw_single rate');
    const durableCommitMs = 1_000 / rawSingle;
    const wakeOverhead = await runWakeOverheadBench(params.wake, dir, durableCommitMs);
    let study: StudyBenchReport | null = null;
    if (params.study.n > 0) {
      study = await runStudyBench(params.study, dir, { group: WAKE_BENCH_GROUP, seed: WAKE_BENCH_INSTANCE_SEED, wall_ms: wakeOverhead.reference.instance_wall_ms });
    } else log('study: skipped (--study-n 0)');
    let batchMerge: BatchMergeBenchReport | null = null;
    if (params.merge.instances > 0) batchMerge = await runBatchMergeBench(params.merge, dir);

    const ratios: Record<string, number> = { ...append.ratios, replay: replay.replay.events_per_second / replay.raw_read_parse.events_per_second };
    const aims: Record<string, Aim> = { ...append.report.aims, replay: replayAim };
    const missed = Object.keys(aims).filter((name) => !aims[name]!.met);
    const report = {
      ...append.report,
      ratios: { ...append.report.ratios, replay: replayRatio },
      aims,
      replay: { ...replay, params: { events: params.replay.events, aggregate: `raw_read_parse and replay: ${REPLAY_ROUNDS} interleaved rounds, pooled; the rest one pass each` } },
      wake_overhead: wakeOverhead,
      study,
      batch_merge: batchMerge,
    };
    const missedLines: string[] = missed.map((name) => `MISSED: ${name} reaches ${ratios[name]!.toFixed(3)} of raw; the aim is >= ${aims[name]!.min_ratio}`);
    if (!wakeOverhead.aim.met) missedLines.push(`MISSED: wake overhead is ${wakeOverhead.stub.overhead_ms.median} ms per wake (median, stub model); the aim is < ${wakeOverhead.aim.max_median_ms} ms`);
    if (study && !study.aim.met) missedLines.push(`MISSED: study parallel efficiency reaches ${study.parallel_efficiency.toFixed(3)}; the aim is >= ${study.aim.min_ratio}`);
    if (batchMerge && !batchMerge.aim.met) missedLines.push(`MISSED: the batch merge of ${batchMerge.instances} instances takes ${batchMerge.aim.total_s} s (verify + report); the aim is < ${batchMerge.aim.max_total_s} s`);
    log(`bench took ${((performance.now() - startMs) / 1_000).toFixed(0)} s`);

    if (params.json) {
      process.stdout.write(`${JSON.stringify({ ...report, exit_code: 0 })}\n`);
      for (const name of missed) log(`MISSED aim ${name}: ratio ${ratios[name]!.toFixed(3)} < ${aims[name]!.min_ratio}`);
      for (const line of missedLines.slice(missed.length)) log(line);
      return 0;
    }
    const out: string[] = ['', ...append.tableLines, '', ...replayTableLines({ ...replay, ratio: replayRatio, aim: replayAim }), '', ...wakeOverheadTableLines(wakeOverhead), ''];
    if (study) out.push(...studyTableLines(study), '');
    else out.push('study benchmark: skipped (--study-n 0)', '');
    if (batchMerge) out.push(...batchMergeTableLines(batchMerge), '');
    for (const [name, a] of Object.entries(aims)) {
      out.push(`  ratio ${name.padEnd(14)} ${ratios[name]!.toFixed(3).padStart(7)}   aim >= ${a.min_ratio.toFixed(2)}   ${a.met ? 'met' : 'MISSED'}`);
    }
    if (study) out.push(studyAimLine(study));
    out.push(wakeOverheadAimLine(wakeOverhead));
    if (batchMerge) out.push(batchMergeAimLine(batchMerge));
    out.push('');
    out.push(...missedLines);
    if (missedLines.length === 0) out.push('all aims met');
    process.stdout.write(`${out.join('\n')}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = reportFailure('bench', USAGE, error, process.argv.includes('--json'));
  },
);
