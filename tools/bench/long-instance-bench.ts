// The long-instance part of `npm run bench` (issue 19 item 1): is a wake's own cost flat in the
// length of the history? One instance of group C (the fullest memory) with the loopback stub
// model (wake-overhead-bench.ts's stub: a fixed latency, the minimal valid answer) and ~10x the
// wakes of the 72-hour one; per-wake overhead (model time taken out, as the wake-overhead bench
// measures it) over the first tenth of its completed wakes against the last tenth.
//
// Why not a 30-day scenario: the scenario and pre-registration schemas fix the study at 72
// simulated hours (design/scenario.ts `hours: z.literal(72)`, design/prereg.ts
// `scenario.hours: z.literal(SIMULATED_HOURS)`, design/wake-schedule.ts's minute bounds, the
// intervention plan's hour windows). That is a format fact, not a plain constant, so this bench
// gets the long history another way the schema allows: a locked pre-registration copy whose
// wake schedule has a 10x shorter base period (12 simulated minutes instead of 120; jitter 5,
// under half of it). The apparatus's per-wake work depends on the events and wakes before it,
// not on simulated time, so ~300 wakes of 72 h load the history as ~300 wakes of 30 days would.
//
// Also reported: the gap between a wake's WakeEnded and the next WakeStarted (the controller's
// work between wakes, outside the per-wake overhead), first tenth against last tenth too.
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { IsolationOptions } from '../../controller/isolation.js';
import { log, median, roundTo } from './bench-util.js';
import {
  benchControllerSetup,
  caseLines,
  caseReport,
  measuredWakes,
  overheadOf,
  readWakeTimings,
  runAgainstStub,
  WAKE_BENCH_GROUP,
  WAKE_BENCH_INSTANCE_SEED,
  type WakeCaseReport,
  type WakeScheduleOverride,
  type WakeTiming,
} from './wake-overhead-bench.js';

/** The bundled pre-registration's base period is 120 simulated minutes: 12 gives ~10x the wakes (~300). */
export const LONG_WAKE_SCHEDULE: WakeScheduleOverride = { base_period_sim_minutes: 12, jitter_sim_minutes: 5 };
/** --quick: ~3x the wakes (~95), so the everyday run stays short; labelled quick. */
export const QUICK_LONG_WAKE_SCHEDULE: WakeScheduleOverride = { base_period_sim_minutes: 40, jitter_sim_minutes: 15 };
/**
 * The stub's latency in the long instance. Model time is taken out of the figure, so it only
 * sets the run's length: 300 wakes x 200 ms would add a minute of waiting and measure nothing.
 * A short wait is also the stricter case: less of the apparatus's background work hides in it.
 */
export const LONG_STUB_LATENCY_MS = 20;
/** The long instance: median overhead of the last tenth of wakes over the first tenth at most this (issue 19 item 1): flat in history. */
export const LONG_INSTANCE_AIM_MAX_LAST_OVER_FIRST = 1.2;
/** A tenth of the measured wakes, and never fewer than this many (a median of 2 is noise). */
const MIN_TENTH_WAKES = 3;

export interface LongInstanceParams {
  readonly schedule: WakeScheduleOverride;
  readonly stubLatencyMs: number;
  readonly isolation: IsolationOptions;
}

export interface TenthFigures {
  readonly wakes: number;
  /** Wake ids of the tenth's first and last wake. */
  readonly from_wake: string;
  readonly to_wake: string;
  /** Events stored before the tenth's first wake: the history it runs on. */
  readonly history_events_at_start: number;
  readonly overhead_ms_median: number;
  readonly overhead_ms_p95: number;
  /** WakeEnded -> the next WakeStarted (recorded_at), median over the tenth's wakes that have a next one. */
  readonly between_wakes_ms_median: number | null;
}

export interface LongInstanceReport {
  readonly wake_schedule: WakeScheduleOverride & { readonly bundled_base_period_sim_minutes: number };
  readonly case: WakeCaseReport & { readonly stub_latency_ms: number; readonly requests: number };
  readonly history_events: number;
  readonly first_tenth: TenthFigures;
  readonly last_tenth: TenthFigures;
  /** last_tenth.overhead_ms_median / first_tenth.overhead_ms_median: the aim (bench-aims.ts). */
  readonly last_over_first: number;
  /**
   * Informational: the first wakes also pay for warming up (JIT, caches) in all three processes,
   * which flatters last/first; the second tenth is past that, so last/second shows growth the
   * warm-up could hide.
   */
  readonly second_tenth: TenthFigures;
  readonly last_over_second: number;
  readonly between_wakes_last_over_first: number | null;
}

const BUNDLED_BASE_PERIOD_SIM_MINUTES = 120;

/** Nearest-rank p95. */
function p95(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(0.95 * sorted.length))) - 1]!;
}

/** The figures of `slice` (consecutive measured wakes); `all` is every wake, for the gaps to the next one. */
export function tenthFigures(slice: readonly WakeTiming[], all: readonly WakeTiming[]): TenthFigures {
  const first = slice[0];
  const last = slice[slice.length - 1];
  if (!first || !last) throw new Error('long instance: an empty tenth');
  const byStart = [...all].sort((a, b) => a.started_seq - b.started_seq);
  const gaps: number[] = [];
  for (const w of slice) {
    const next = byStart.find((n) => n.started_seq > w.ended_seq);
    if (next) gaps.push(next.started_at_ms - (w.started_at_ms + w.wall_ms));
  }
  const overhead = slice.map(overheadOf);
  return {
    wakes: slice.length,
    from_wake: first.wake_id,
    to_wake: last.wake_id,
    history_events_at_start: first.started_seq - 1,
    overhead_ms_median: roundTo(median(overhead), 1),
    overhead_ms_p95: roundTo(p95(overhead), 1),
    between_wakes_ms_median: gaps.length === 0 ? null : roundTo(median(gaps), 1),
  };
}

/** First and last tenth of the measured wakes in store order (each at least MIN_TENTH_WAKES). */
export function tenths(measured: readonly WakeTiming[]): { first: WakeTiming[]; second: WakeTiming[]; last: WakeTiming[] } {
  const ordered = [...measured].sort((a, b) => a.started_seq - b.started_seq);
  const size = Math.max(MIN_TENTH_WAKES, Math.floor(ordered.length / 10));
  if (ordered.length < 3 * size) throw new Error(`long instance: ${ordered.length} completed wakes, too few for three tenths of ${size}`);
  return { first: ordered.slice(0, size), second: ordered.slice(size, 2 * size), last: ordered.slice(ordered.length - size) };
}

/** `raw`: the IPC round trip and durable commit the wake-overhead bench measured in this run. */
export async function runLongInstanceBench(params: LongInstanceParams, parentDir: string, raw: { ipcMs: number; commitMs: number }): Promise<LongInstanceReport> {
  const dir = mkdtempSync(path.join(parentDir, 'long-'));
  try {
    const setup = benchControllerSetup(dir, null, params.schedule);
    log(`long instance: group ${WAKE_BENCH_GROUP}, seed ${WAKE_BENCH_INSTANCE_SEED}, wake every ${params.schedule.base_period_sim_minutes} simulated minutes (jitter ${params.schedule.jitter_sim_minutes}; the bundled schedule: ${BUNDLED_BASE_PERIOD_SIM_MINUTES}), stub model answering after ${params.stubLatencyMs} ms`);
    const { run, requests } = await runAgainstStub(setup, path.join(dir, 'long'), params.stubLatencyMs, params.isolation, 'long');
    const report = { ...caseReport('openai stub (long)', run, raw), stub_latency_ms: params.stubLatencyMs, requests };
    const timings = readWakeTimings(run.result.runDir);
    const { first, second, last } = tenths(measuredWakes(timings));
    const firstTenth = tenthFigures(first, timings.wakes);
    const secondTenth = tenthFigures(second, timings.wakes);
    const lastTenth = tenthFigures(last, timings.wakes);
    const lastWake = [...timings.wakes].sort((a, b) => b.ended_seq - a.ended_seq)[0];
    const ratio = lastTenth.overhead_ms_median / firstTenth.overhead_ms_median;
    const gapRatio = firstTenth.between_wakes_ms_median === null || lastTenth.between_wakes_ms_median === null || firstTenth.between_wakes_ms_median <= 0 ? null : lastTenth.between_wakes_ms_median / firstTenth.between_wakes_ms_median;
    log(`long instance: ${report.wakes} wakes in ${(run.wallMs / 1_000).toFixed(1)} s; overhead median first tenth ${firstTenth.overhead_ms_median} ms, last tenth ${lastTenth.overhead_ms_median} ms (x${ratio.toFixed(2)})`);
    if (report.model_failures > 0) log(`long instance: WARNING: ${report.model_failures} model call(s) failed (see ModelCallFailed in its store)`);
    return {
      wake_schedule: { ...params.schedule, bundled_base_period_sim_minutes: BUNDLED_BASE_PERIOD_SIM_MINUTES },
      case: report,
      history_events: lastWake?.ended_seq ?? 0,
      first_tenth: firstTenth,
      last_tenth: lastTenth,
      last_over_first: roundTo(ratio, 3),
      second_tenth: secondTenth,
      last_over_second: roundTo(lastTenth.overhead_ms_median / secondTenth.overhead_ms_median, 3),
      between_wakes_last_over_first: gapRatio === null ? null : roundTo(gapRatio, 3),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------
// Table

const tenthLine = (label: string, t: TenthFigures): string =>
  `  ${label.padEnd(20)} ${`${t.overhead_ms_median.toFixed(1)} ms`.padStart(10)}  median overhead of ${t.wakes} wakes ${t.from_wake}..${t.to_wake} (p95 ${t.overhead_ms_p95.toFixed(1)} ms), on ${t.history_events_at_start} events of history; between wakes ${t.between_wakes_ms_median === null ? '-' : `${t.between_wakes_ms_median.toFixed(1)} ms`}`;

export function longInstanceTableLines(r: LongInstanceReport): string[] {
  return [
    `long instance benchmark: one instance, group C, stub model (${r.case.stub_latency_ms} ms), a wake every ${r.wake_schedule.base_period_sim_minutes} simulated minutes instead of ${r.wake_schedule.bundled_base_period_sim_minutes} (the schemas fix 72 h): ${r.case.wakes} wakes, ${r.history_events} events`,
    '',
    ...caseLines('long', r.case),
    tenthLine('first tenth', r.first_tenth),
    tenthLine('second tenth', r.second_tenth),
    tenthLine('last tenth', r.last_tenth),
    `  ${'last / first'.padEnd(20)} ${`x${r.last_over_first.toFixed(2)}`.padStart(10)}  per-wake overhead, last tenth against first (the aim); between wakes x${r.between_wakes_last_over_first === null ? '-' : r.between_wakes_last_over_first.toFixed(2)} (informational)`,
    `  ${'last / second'.padEnd(20)} ${`x${r.last_over_second.toFixed(2)}`.padStart(10)}  informational: the first tenth also warms up three processes, which flatters last / first`,
    `  ${'instance wall'.padEnd(20)} ${`${(r.case.instance_wall_ms / 1_000).toFixed(1)} s`.padStart(10)}  start-up ${r.case.startup_ms} ms; ${r.case.crash_wakes.count} planned-crash wake(s) left out`,
  ];
}
