// The command line of `npm run bench` (bench.ts): flags, their defaults, and --quick's.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { APPEND_USAGE, appendParams } from './append-bench.js';
import { positiveInt, UsageError } from './bench-util.js';
import { DEFAULT_MERGE_INSTANCES, MAX_MERGE_INSTANCES, MIN_MERGE_INSTANCES, type BatchMergeBenchParams } from './batch-merge-bench.js';
import { LONG_STUB_LATENCY_MS, LONG_WAKE_SCHEDULE, QUICK_LONG_WAKE_SCHEDULE, type LongInstanceParams } from './long-instance-bench.js';
import { DEFAULT_REPLAY_EVENTS, MAX_REPLAY_EVENTS, MIN_REPLAY_EVENTS, type ReplayBenchParams } from './replay-bench.js';
import { DEFAULT_STUDY_N, MAX_STUDY_N, MIN_STUDY_N, type StudyBenchParams } from './study-bench.js';
import { DEFAULT_STUB_LATENCY_MS, MAX_STUB_LATENCY_MS, type WakeOverheadParams } from './wake-overhead-bench.js';

export const USAGE = `usage: npm run bench -- [--quick] ${APPEND_USAGE} [--replay-events M] [--study-n S] [--study-concurrency K] [--stub-latency-ms L] [--no-long] [--separate-uids] [--merge-instances I] [--json]`;
const BENCH_SAME_UID_REASON = 'benchmark';

/**
 * --quick: the everyday run (about a minute on a 2-core machine): smaller counts, no study, a
 * long instance of ~3x (not ~10x) the wakes, a 20 ms stub. Every figure and aim it reports is
 * labelled quick. A flag given explicitly still wins over these. 600 single commits in one
 * round: its PAIRS_PER_ROUND (6) pairs of 100 each, ~25 ms raw, ~70 ms through the writer.
 */
export const QUICK_DEFAULTS = { events: '600', rounds: '1', replayEvents: 10_000, studyN: 0, stubLatencyMs: 20 } as const;

export interface CommandLine {
  readonly quick: boolean;
  readonly append: ReturnType<typeof appendParams>;
  readonly replay: ReplayBenchParams;
  readonly wake: WakeOverheadParams;
  /** null: skipped (--no-long). */
  readonly long: LongInstanceParams | null;
  readonly study: StudyBenchParams;
  readonly merge: BatchMergeBenchParams;
  readonly json: boolean;
}

export function parseCommandLine(argv: string[]): CommandLine {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        quick: { type: 'boolean', default: false },
        events: { type: 'string' },
        batch: { type: 'string' },
        rounds: { type: 'string' },
        'replay-events': { type: 'string' },
        'study-n': { type: 'string' },
        'study-concurrency': { type: 'string' },
        'stub-latency-ms': { type: 'string' },
        'no-long': { type: 'boolean', default: false },
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
  const quick = values.quick === true;
  const studyN = positiveInt('study-n', values['study-n'], quick ? QUICK_DEFAULTS.studyN : DEFAULT_STUDY_N, MAX_STUDY_N, 0);
  if (studyN > 0 && studyN < MIN_STUDY_N) throw new UsageError(`--study-n must be 0 (skip the study) or between ${MIN_STUDY_N} and ${MAX_STUDY_N}, got ${studyN}: the pre-registration needs an expanded n above the initial one, so a study of ${studyN} could expand`);
  const isolation = values['separate-uids'] === true ? {} : { forceSameUid: BENCH_SAME_UID_REASON };
  const mergeInstances = positiveInt('merge-instances', values['merge-instances'], DEFAULT_MERGE_INSTANCES, MAX_MERGE_INSTANCES, 0);
  if (mergeInstances > 0 && mergeInstances < MIN_MERGE_INSTANCES) throw new UsageError(`--merge-instances must be 0 (skip the batch merge) or between ${MIN_MERGE_INSTANCES} and ${MAX_MERGE_INSTANCES}, got ${mergeInstances}`);
  const appendValues = quick ? { events: values.events ?? QUICK_DEFAULTS.events, batch: values.batch, rounds: values.rounds ?? QUICK_DEFAULTS.rounds } : values;
  const stubLatencyMs = positiveInt('stub-latency-ms', values['stub-latency-ms'], quick ? QUICK_DEFAULTS.stubLatencyMs : DEFAULT_STUB_LATENCY_MS, MAX_STUB_LATENCY_MS, 0);
  return {
    quick,
    append: appendParams(appendValues),
    replay: { events: positiveInt('replay-events', values['replay-events'], quick ? QUICK_DEFAULTS.replayEvents : DEFAULT_REPLAY_EVENTS, MAX_REPLAY_EVENTS, MIN_REPLAY_EVENTS) },
    wake: { stubLatencyMs, isolation },
    long: values['no-long'] === true ? null : { schedule: quick ? QUICK_LONG_WAKE_SCHEDULE : LONG_WAKE_SCHEDULE, stubLatencyMs: Math.min(stubLatencyMs, LONG_STUB_LATENCY_MS), isolation },
    study: { n: studyN, concurrency: positiveInt('study-concurrency', values['study-concurrency'], Math.max(1, Math.round(os.cpus().length / 3)), 64), isolation },
    merge: { instances: mergeInstances, isolation },
    json: values.json === true,
  };
}

