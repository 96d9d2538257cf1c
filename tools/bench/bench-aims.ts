// The aims `npm run bench` judges (issue 19 and the older ones it keeps), one table: each aim's
// figure, unit, bound and direction, the physical bound beyond which the figure cannot be true,
// and the verdict of this run. bench.ts builds the list from the parts' reports; `--json`
// carries it as `aims`, the text output prints one line per aim.
// Verdicts: MET / MISSED against the aim; INVALID when the figure lies beyond its physical bound
// (an append through the writer faster than raw SQLite: the figure measured noise, not the
// code, issue 34 item 5), never MET; NOT JUDGED when its part did not run (--study-n 0, a study
// of another n) or cannot judge it, with the reason. A missed or invalid aim is a measurement,
// not a failure: the bench still exits 0 and says so. A run made under load (machine-load.ts)
// marks every aim judged in it.
import { assertNever } from '../../foundation/assert-never.js';
import { z } from 'zod';
import { APPEND_AIMS } from './append-bench.js';
import { BATCH_MERGE_AIM_MAX_S, type BatchMergeBenchReport } from './batch-merge-bench.js';
import { LONG_INSTANCE_AIM_MAX_LAST_OVER_FIRST, type LongInstanceReport } from './long-instance-bench.js';
import type { LoadMark } from './machine-load.js';
import { PairedRatio, pairedText } from './paired-ratio.js';
import { REPLAY_AIM } from './replay-bench.js';
import { STUDY_AIM_MAX_WALL_S, STUDY_AIM_MIN_EFFICIENCY, STUDY_AIM_N, type StudyBenchReport } from './study-bench.js';
import { WAKE_OVERHEAD_AIM_MAX_MEDIAN_MS, type WakeOverheadReport } from './wake-overhead-bench.js';

export const AimComparison = z.enum(['>=', '<=']);
export type AimComparison = z.infer<typeof AimComparison>;

/** MET / MISSED against the aim; INVALID: beyond the figure's physical bound (noise, never MET); NOT JUDGED: no figure, the note says why. */
export const Verdict = z.enum(['MET', 'MISSED', 'INVALID', 'NOT JUDGED']);
export type Verdict = z.infer<typeof Verdict>;

/** The physical bound this run's figure was checked against: a possible figure satisfies `comparison value`. */
export const AppliedBound = z.strictObject({ comparison: AimComparison, value: z.number(), why: z.string() });
export type AppliedBound = z.infer<typeof AppliedBound>;

export const AimResult = z.strictObject({
  name: z.string(),
  /** The figure this run measured (null: its part did not run or cannot judge it). */
  value: z.number().nullable(),
  unit: z.enum(['ratio', 'ms', 's']),
  aim: z.number(),
  comparison: AimComparison,
  verdict: Verdict,
  /** true: MET; false: MISSED; null: INVALID or NOT JUDGED (verdict says which). */
  met: z.boolean().nullable(),
  /** The physical bound the figure was checked against (null: the aim has none, or its floor was not measured: note says which). */
  physical_bound: AppliedBound.nullable(),
  /** A ratio of interleaved pairs: value is their median; the spread and every pair's ratio. null: not a paired ratio. */
  pairs: PairedRatio.nullable(),
  /** Judged on a --quick run's smaller counts: indicative only. */
  quick: z.boolean(),
  /** Judged in a run made under load (the report's `load` says why). */
  under_load: z.boolean(),
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

// ---------------------------------------------------------------------------------
// Physical bounds: beyond one, a figure measured the machine, not the code (INVALID)

/**
 * recorded_at has millisecond resolution and the runtime rounds latency_ms to the millisecond:
 * a wake's overhead read from them can be up to 1 + 0.5 ms (a stub wake makes one call) below
 * the truth; 2 ms covers both.
 */
export const WAKE_TIMESTAMP_SLACK_MS = 2;

/**
 * A figure's physical bound: `at_most` / `at_least` a fixed value (a ratio of a case that does
 * strictly more work than its raw case cannot pass 1); `floor`, a lower bound measured in the
 * same run and over the same stretch of time as the figure (a bound measured in another part
 * of the run would carry that part's load: a wake floor of two durable commits taken from a
 * loaded append phase read 3 ms once, above what a quieter wake can truly take); `none` where
 * no figure is impossible. Each says why.
 */
export type PhysicalBound =
  | { readonly kind: 'at_most'; readonly value: number; readonly why: string }
  | { readonly kind: 'at_least'; readonly value: number; readonly why: string }
  | { readonly kind: 'floor'; readonly floor: (r: AimInputs) => number | null; readonly why: string }
  | { readonly kind: 'none'; readonly why: string };

/** Written once per aim, beside BENCH_AIMS (a table of its own so an aim's line and its bound change apart). */
export const PHYSICAL_BOUNDS: Readonly<Record<AimName, PhysicalBound>> = {
  append_single: {
    kind: 'at_most',
    value: 1,
    why: 'an append through the writer commits the same row durably as raw SQLite does, and more (hashes, validation, the projection row, a socket round trip): it cannot be faster',
  },
  append_batched: {
    kind: 'at_most',
    value: 1,
    why: 'a batched append commits the same rows per transaction as raw batched does, and hashes, validates and projects each: it cannot be faster',
  },
  wake_overhead_stub_median: {
    kind: 'at_least',
    value: -WAKE_TIMESTAMP_SLACK_MS,
    why: `the model calls run inside the wake (after WakeStarted is committed, before WakeEnded is stamped), so a wake's wall less its recorded model latency cannot be negative beyond ${WAKE_TIMESTAMP_SLACK_MS} ms of timestamp resolution; below it, the clocks or the records are wrong, not the apparatus fast. Its durable commits are not a bound: a commit measured in another part of the run carries that part's load`,
  },
  long_instance_last_over_first: {
    kind: 'none',
    why: 'both tenths are wakes of one instance doing the same kind of work; the last may be faster (the first also warms three processes up), so no positive ratio is impossible',
  },
  study_wall_n5: {
    kind: 'floor',
    floor: (r) => (r.study === null ? null : r.study.instance_wall_ms.max / 1_000),
    why: 'the study holds every instance it ran: its wall cannot be shorter than its longest instance\'s',
  },
  replay: {
    kind: 'at_most',
    value: 1,
    why: 'a replay reads every row from SQLite and JSON-parses it, as the raw case does, then validates and applies it: it cannot be faster than the raw read and parse',
  },
  study_parallel_efficiency: {
    kind: 'at_most',
    value: 1,
    why: 'at most `slots` instances run at once, each inside the study wall: their walls cannot sum to more than slots x study wall',
  },
  batch_merge_total: {
    kind: 'none',
    why: 'how the merge verifies (in parallel, once per distinct folder) is issue 34 item 4\'s to settle; its read-and-parse floor is reported beside it (batch_merge.phases.raw), not yet a bound',
  },
};

/** The bound `name`'s figure is checked against in this run: `floor` is the measured floor (null: not measured). */
export function appliedBound(name: AimName, floor: number | null): AppliedBound | null {
  const b = PHYSICAL_BOUNDS[name];
  switch (b.kind) {
    case 'at_most':
      return { comparison: '<=', value: b.value, why: b.why };
    case 'at_least':
      return { comparison: '>=', value: b.value, why: b.why };
    case 'floor':
      return floor === null || !Number.isFinite(floor) ? null : { comparison: '>=', value: Math.round(floor * 10_000) / 10_000, why: b.why };
    case 'none':
      return null;
    default:
      return assertNever(b, 'physical bound');
  }
}

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

/** The verdict: no figure is NOT JUDGED; a figure beyond its physical bound is INVALID whatever the aim says; else MET or MISSED. */
export function verdictOf(value: number | null, aim: number, comparison: AimComparison, bound: AppliedBound | null): Verdict {
  if (value === null || !Number.isFinite(value)) return 'NOT JUDGED';
  if (bound !== null && !meets(value, bound.value, bound.comparison)) return 'INVALID';
  return meets(value, aim, comparison) ? 'MET' : 'MISSED';
}

export interface JudgeExtras {
  /** The interleaved pairs the figure is the median of. */
  readonly pairs?: PairedRatio | null;
  /** The physical floor measured in this run (for a `floor` bound). */
  readonly floor?: number | null;
}

/** One aim judged on `value` (null: not judged, `note` says why). under_load is set by benchAims, for the whole run. */
export function judgeAim(name: AimName, value: number | null, source: string, quick: boolean, note: string | null = null, extras: JudgeExtras = {}): AimResult {
  const a = BENCH_AIMS[name];
  const judged = value !== null && Number.isFinite(value);
  const bound = appliedBound(name, extras.floor ?? null);
  const verdict = verdictOf(value, a.aim, a.comparison, bound);
  const pairs = extras.pairs ?? null;
  const notes = [note];
  if (PHYSICAL_BOUNDS[name].kind === 'floor' && bound === null && judged) notes.push('physical floor not measured in this run: not checked');
  const beyond = pairs !== null && bound !== null ? pairs.ratios.filter((x) => !meets(x, bound.value, bound.comparison)).length : 0;
  if (beyond > 0) notes.push(`${beyond} of ${pairs!.pairs} pairs beyond the physical bound ${bound!.comparison} ${bound!.value}: noise in those pairs`);
  const joined = notes.filter((n): n is string => n !== null).join('; ');
  // Four decimals: the figure as read, not float noise; the verdict is judged on the unrounded value.
  return AimResult.parse({
    name,
    value: judged ? Math.round(value * 10_000) / 10_000 : null,
    unit: a.unit,
    aim: a.aim,
    comparison: a.comparison,
    verdict,
    met: verdict === 'MET' ? true : verdict === 'MISSED' ? false : null,
    physical_bound: bound,
    pairs,
    quick,
    under_load: false,
    source,
    note: joined === '' ? null : joined,
  });
}

const figure = (r: AimResult): string => (r.value === null ? '-' : r.unit === 'ratio' ? r.value.toFixed(3) : r.unit === 'ms' ? `${r.value.toFixed(1)} ms` : `${r.value.toFixed(1)} s`);
const bound = (r: AimResult): string => `${r.comparison} ${r.aim}${r.unit === 'ratio' ? '' : ` ${r.unit}`}`;
const marks = (r: AimResult): string => {
  const m = [...(r.quick && r.verdict !== 'NOT JUDGED' ? ['quick'] : []), ...(r.under_load ? ['under load'] : [])];
  return m.length === 0 ? '' : ` (${m.join(', ')})`;
};
const verdictText = (r: AimResult): string =>
  r.verdict === 'INVALID' && r.physical_bound !== null ? `INVALID${marks(r)}: beyond its physical bound ${r.physical_bound.comparison} ${r.physical_bound.value}, noise, not the code` : `${r.verdict}${marks(r)}`;
const spread = (r: AimResult): string => (r.pairs === null ? '' : `  [pairs ${pairedText(r.pairs)}]`);

/** One line per aim, then a summary line. */
export function aimLines(aims: readonly AimResult[]): string[] {
  const lines = aims.map((r) => `  ${r.name.padEnd(30)} ${figure(r).padStart(10)}   aim ${bound(r).padEnd(9)} ${verdictText(r)}${spread(r)}${r.note === null ? '' : `  (${r.note})`}`);
  lines.push(summaryLine(aims));
  return lines;
}

/** "aims: 5 MET, 1 MISSED (x), 1 INVALID (y: ...), 1 NOT JUDGED; ...": every verdict counted. */
export function summaryLine(aims: readonly AimResult[]): string {
  const named = (v: Verdict): string[] => aims.filter((r) => r.verdict === v).map((r) => r.name);
  const missed = named('MISSED');
  const invalid = named('INVALID');
  const unjudged = named('NOT JUDGED').length;
  const parts = [`${named('MET').length} MET`];
  if (missed.length > 0) parts.push(`${missed.length} MISSED (${missed.join(', ')})`);
  if (invalid.length > 0) parts.push(`${invalid.length} INVALID (${invalid.join(', ')}: beyond a physical bound, so noise: rerun on a quiet machine)`);
  if (unjudged > 0) parts.push(`${unjudged} NOT JUDGED`);
  const quick = aims.some((r) => r.quick) ? '; on --quick figures (indicative: smaller counts)' : '';
  const loaded = aims.some((r) => r.under_load) ? '; run UNDER LOAD: every judged aim is marked' : '';
  const exit = missed.length + invalid.length > 0 ? '; a missed or invalid aim is a measurement: the bench still exits 0' : '';
  return `aims: ${parts.join(', ')}${quick}${loaded}${exit}`;
}

// ---------------------------------------------------------------------------------
// The list, from the parts' reports

export interface AimInputs {
  readonly quick: boolean;
  /** The ours / raw ratios, each the median of its interleaved pairs. */
  readonly paired: { readonly append_single: PairedRatio; readonly append_batched: PairedRatio; readonly replay: PairedRatio };
  readonly wake: WakeOverheadReport;
  readonly long: LongInstanceReport | null;
  readonly study: StudyBenchReport | null;
  readonly batchMerge: BatchMergeBenchReport | null;
  readonly load: LoadMark;
}

/** The floor `name`'s bound measures in this run (null: not a floor, or not measured). */
function floorOf(name: AimName, r: AimInputs): number | null {
  const b = PHYSICAL_BOUNDS[name];
  return b.kind === 'floor' ? b.floor(r) : null;
}

/** Every aim the bench judges, in one list (bench-aims.ts has the bounds). */
export function benchAims(r: AimInputs): AimResult[] {
  const q = r.quick;
  const studyNote = r.study === null ? 'study skipped (--study-n 0)' : r.study.n_per_group !== STUDY_AIM_N ? `the aim is for n = ${STUDY_AIM_N}; this study ran n = ${r.study.n_per_group}` : null;
  const paired = (name: 'append_single' | 'append_batched' | 'replay'): AimResult => judgeAim(name, r.paired[name].median, `ratios.${name}`, q, null, { pairs: r.paired[name] });
  const aims: AimResult[] = [
    paired('append_single'),
    paired('append_batched'),
    judgeAim('wake_overhead_stub_median', r.wake.stub.overhead_ms.median, 'wake_overhead.stub.overhead_ms.median', q, `stub ${r.wake.stub.stub_latency_ms} ms; reference policy: apparatus ${r.wake.reference.apparatus_ms.median} ms + policy ${r.wake.reference.policy_compute.median_ms} ms`),
    judgeAim('long_instance_last_over_first', r.long?.last_over_first ?? null, 'long_instance.last_over_first', q, r.long === null ? 'long instance skipped (--no-long)' : `${r.long.case.wakes} wakes, ${r.long.history_events} events; last / second tenth x${r.long.last_over_second.toFixed(2)}: the first tenth also warms up`),
    judgeAim('study_wall_n5', r.study !== null && r.study.n_per_group === STUDY_AIM_N ? r.study.study_wall_ms / 1_000 : null, 'study.study_wall_ms', q, studyNote ?? `${r.study?.instances} instances, ${r.study?.concurrency} block(s) at once, ${r.study?.cores} cores`, { floor: floorOf('study_wall_n5', r) }),
    paired('replay'),
    judgeAim('study_parallel_efficiency', r.study?.parallel_efficiency ?? null, 'study.parallel_efficiency', q, r.study === null ? 'study skipped (--study-n 0)' : null),
  ];
  if (r.batchMerge) aims.push(judgeAim('batch_merge_total', r.batchMerge.aim.per_aim_instances_s, 'batch_merge.aim.per_aim_instances_s', q, `${r.batchMerge.aim.total_s} s for ${r.batchMerge.instances} instances, scaled to ${r.batchMerge.aim.aim_instances}`));
  // A loaded run marks every aim it judged (machine-load.ts has the threshold).
  return aims.map((a) => AimResult.parse({ ...a, under_load: r.load.under_load && a.verdict !== 'NOT JUDGED' }));
}
