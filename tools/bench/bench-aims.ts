// The aims `npm run bench` judges (issue 19 and the older ones it keeps), one table: each aim's
// figure, unit, bound and direction, and whether this run met it. bench.ts builds the list from
// the parts' reports; `--json` carries it as `aims`, the text output prints one MET/MISSED line
// per aim. A missed aim is a measurement, not a failure: the bench still exits 0 and says so.
// An aim whose part did not run (--study-n 0, a study of another n) is listed with met null and
// the reason, so the list always names every aim.
import { assertNever } from '../../foundation/assert-never.js';
import { z } from 'zod';
import { APPEND_AIMS } from './append-bench.js';
import { BATCH_MERGE_AIM_MAX_S, type BatchMergeBenchReport } from './batch-merge-bench.js';
import { LONG_INSTANCE_AIM_MAX_LAST_OVER_FIRST, type LongInstanceReport } from './long-instance-bench.js';
import { REPLAY_AIM } from './replay-bench.js';
import { STUDY_AIM_MAX_WALL_S, STUDY_AIM_MIN_EFFICIENCY, STUDY_AIM_N, type StudyBenchReport } from './study-bench.js';
import { WAKE_OVERHEAD_AIM_MAX_MEDIAN_MS, type WakeOverheadReport } from './wake-overhead-bench.js';

export const AimComparison = z.enum(['>=', '<=']);
export type AimComparison = z.infer<typeof AimComparison>;

export const AimResult = z.strictObject({
  name: z.string(),
  /** The figure this run measured (null: its part did not run or cannot judge it). */
  value: z.number().nullable(),
  unit: z.enum(['ratio', 'ms', 's']),
  aim: z.number(),
  comparison: AimComparison,
  /** null: not judged (see note). */
  met: z.boolean().nullable(),
  /** Judged on a --quick run's smaller counts: indicative only. */
  quick: z.boolean(),
  /** Where the figure sits in the JSON report. */
  source: z.string(),
  note: z.string().nullable(),
});
export type AimResult = z.infer<typeof AimResult>;

/** The bounds, by aim name: each bench owns its aim's value (issue 19 set the first five; replay, study efficiency and batch merge are older); this table only gathers them. */
export const BENCH_AIMS = {
  /** writer single appends / raw better-sqlite3 single commits, same run (issue 19 item 3). */
  append_single: { unit: 'ratio', aim: APPEND_AIMS.append_single, comparison: '>=' },
  /** writer batched appends / raw batched, same run (issue 19 item 3). */
  append_batched: { unit: 'ratio', aim: APPEND_AIMS.append_batched, comparison: '>=' },
  /** The apparatus's own time per wake, median, stub model, 72-hour instance (issue 19 item 2). */
  wake_overhead_stub_median: { unit: 'ms', aim: WAKE_OVERHEAD_AIM_MAX_MEDIAN_MS, comparison: '<=' },
  /** Long instance: median overhead of the last tenth of wakes / of the first tenth (issue 19 item 1). */
  long_instance_last_over_first: { unit: 'ratio', aim: LONG_INSTANCE_AIM_MAX_LAST_OVER_FIRST, comparison: '<=' },
  /** The A/B/C study at n = 5, reference policy, on this machine's cores (issue 19 item 4; judged only at n = 5). */
  study_wall_n5: { unit: 's', aim: STUDY_AIM_MAX_WALL_S, comparison: '<=' },
  /** replay / raw read + JSON.parse of the same rows. */
  replay: { unit: 'ratio', aim: REPLAY_AIM, comparison: '>=' },
  /** Sum of instance walls / (slots × study wall). */
  study_parallel_efficiency: { unit: 'ratio', aim: STUDY_AIM_MIN_EFFICIENCY, comparison: '>=' },
  /** --merge's verify + report, per 1,000 instances (batch-merge-bench.ts BATCH_MERGE_AIM_INSTANCES). */
  batch_merge_total: { unit: 's', aim: BATCH_MERGE_AIM_MAX_S, comparison: '<=' },
} as const satisfies Record<string, { unit: AimResult['unit']; aim: number; comparison: AimComparison }>;
export type AimName = keyof typeof BENCH_AIMS;


export function meets(value: number, aim: number, comparison: AimComparison): boolean {
  switch (comparison) {
    case '>=':
      return value >= aim;
    case '<=':
      return value <= aim;
    default: {
      assertNever(comparison, 'comparison');
    }
  }
}

/** One aim judged on `value` (null: not judged, `note` says why). */
export function judgeAim(name: AimName, value: number | null, source: string, quick: boolean, note: string | null = null): AimResult {
  const a = BENCH_AIMS[name];
  const judged = value !== null && Number.isFinite(value);
  // Four decimals: the figure as read, not float noise; met is judged on the unrounded value.
  return AimResult.parse({ name, value: judged ? Math.round(value * 10_000) / 10_000 : null, unit: a.unit, aim: a.aim, comparison: a.comparison, met: judged ? meets(value, a.aim, a.comparison) : null, quick, source, note });
}

const figure = (r: AimResult): string => (r.value === null ? '-' : r.unit === 'ratio' ? r.value.toFixed(3) : r.unit === 'ms' ? `${r.value.toFixed(1)} ms` : `${r.value.toFixed(1)} s`);
const bound = (r: AimResult): string => `${r.comparison} ${r.aim}${r.unit === 'ratio' ? '' : ` ${r.unit}`}`;
const verdict = (r: AimResult): string => (r.met === null ? 'NOT JUDGED' : r.met ? 'MET' : 'MISSED') + (r.quick && r.met !== null ? ' (quick)' : '');

/** One line per aim, then a summary line. */
export function aimLines(aims: readonly AimResult[]): string[] {
  const lines = aims.map((r) => `  ${r.name.padEnd(30)} ${figure(r).padStart(10)}   aim ${bound(r).padEnd(9)} ${verdict(r)}${r.note === null ? '' : `  (${r.note})`}`);
  const missed = aims.filter((r) => r.met === false).map((r) => r.name);
  const unjudged = aims.filter((r) => r.met === null).length;
  const quick = aims.some((r) => r.quick) ? ' on --quick figures (indicative: smaller counts)' : '';
  lines.push(
    missed.length === 0
      ? `aims: all ${aims.length - unjudged} judged aims met${quick}${unjudged > 0 ? `; ${unjudged} not judged` : ''}`
      : `aims: ${missed.length} MISSED (${missed.join(', ')})${quick}; a missed aim is a measurement: the bench still exits 0`,
  );
  return lines;
}

// ---------------------------------------------------------------------------------
// The list, from the parts' reports

export interface AimInputs {
  readonly quick: boolean;
  readonly ratios: { readonly append_single: number; readonly append_batched: number; readonly replay: number };
  readonly wake: WakeOverheadReport;
  readonly long: LongInstanceReport | null;
  readonly study: StudyBenchReport | null;
  readonly batchMerge: BatchMergeBenchReport | null;
}

/** Every aim the bench judges, in one list (bench-aims.ts has the bounds). */
export function benchAims(r: AimInputs): AimResult[] {
  const q = r.quick;
  const studyNote = r.study === null ? 'study skipped (--study-n 0)' : r.study.n_per_group !== STUDY_AIM_N ? `the aim is for n = ${STUDY_AIM_N}; this study ran n = ${r.study.n_per_group}` : null;
  const aims: AimResult[] = [
    judgeAim('append_single', r.ratios.append_single, 'ratios.append_single', q),
    judgeAim('append_batched', r.ratios.append_batched, 'ratios.append_batched', q),
    judgeAim('wake_overhead_stub_median', r.wake.stub.overhead_ms.median, 'wake_overhead.stub.overhead_ms.median', q, `stub ${r.wake.stub.stub_latency_ms} ms; reference policy: apparatus ${r.wake.reference.apparatus_ms.median} ms + policy ${r.wake.reference.policy_compute.median_ms} ms`),
    judgeAim('long_instance_last_over_first', r.long?.last_over_first ?? null, 'long_instance.last_over_first', q, r.long === null ? 'long instance skipped (--no-long)' : `${r.long.case.wakes} wakes, ${r.long.history_events} events; last / second tenth x${r.long.last_over_second.toFixed(2)}: the first tenth also warms up`),
    judgeAim('study_wall_n5', r.study !== null && r.study.n_per_group === STUDY_AIM_N ? r.study.study_wall_ms / 1_000 : null, 'study.study_wall_ms', q, studyNote ?? `${r.study?.instances} instances, ${r.study?.concurrency} block(s) at once, ${r.study?.cores} cores`),
    judgeAim('replay', r.ratios.replay, 'ratios.replay', q),
    judgeAim('study_parallel_efficiency', r.study?.parallel_efficiency ?? null, 'study.parallel_efficiency', q, r.study === null ? 'study skipped (--study-n 0)' : null),
  ];
  if (r.batchMerge) aims.push(judgeAim('batch_merge_total', r.batchMerge.aim.per_aim_instances_s, 'batch_merge.aim.per_aim_instances_s', q, `${r.batchMerge.aim.total_s} s for ${r.batchMerge.instances} instances, scaled to ${r.batchMerge.aim.aim_instances}`));
  return aims;
}
