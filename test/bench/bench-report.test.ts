// `npm run bench`'s command line, its one list of aims, the long instance's tenths and the
// reference policy's re-run (tools/bench/): what the JSON carries and how it judges.
// The benchmark itself is a measurement and is not run here.
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { AimResult, BENCH_AIMS, benchAims, judgeAim, type AimInputs } from '../../tools/bench/bench-aims.js';
import { loadMark } from '../../tools/bench/machine-load.js';
import { pairedRatio } from '../../tools/bench/paired-ratio.js';
import { parseCommandLine, QUICK_DEFAULTS } from '../../tools/bench/bench-command-line.js';
import { UsageError } from '../../tools/bench/bench-util.js';
import { LONG_WAKE_SCHEDULE, QUICK_LONG_WAKE_SCHEDULE, tenthFigures, tenths } from '../../tools/bench/long-instance-bench.js';
import { measureReferencePolicyCompute } from '../../tools/bench/reference-policy-compute.js';
import { DEFAULT_REPLAY_EVENTS } from '../../tools/bench/replay-bench.js';
import { DEFAULT_STUDY_N } from '../../tools/bench/study-bench.js';
import type { WakeTiming } from '../../tools/bench/wake-overhead-bench.js';
import { SCENARIOS_DIR } from '../../cli/run-defaults.js';
import { GROUP_CAPABILITIES } from '../../design/manifest.js';
import { finishedRun, type FinishedRun } from '../support/finished-run.js';

/** A quiet 2-core machine: load 0.1 at start, nobody else's CPU. */
const quietLoad = loadMark({ cores: 2, start: { load_avg: [0.1, 0.1, 0.1], ticks: { busy: 0, total: 0, own: 0 } }, end: { load_avg: [0.9, 0.5, 0.3], ticks: { busy: 100, total: 200, own: 100 } }, phases: {} });

test('the default run is the full one: the study at n = 5 and the ~10x long instance', () => {
  const c = parseCommandLine([]);
  expect(c.quick).toBe(false);
  expect(c.study.n).toBe(DEFAULT_STUDY_N);
  expect(DEFAULT_STUDY_N).toBe(5);
  expect(c.replay.events).toBe(DEFAULT_REPLAY_EVENTS);
  expect(c.long?.schedule).toEqual(LONG_WAKE_SCHEDULE);
  expect(c.json).toBe(false);
});

test('--quick shrinks every part, and an explicit flag still wins', () => {
  const q = parseCommandLine(['--quick', '--json']);
  expect(q.quick).toBe(true);
  expect(q.json).toBe(true);
  expect(q.study.n).toBe(QUICK_DEFAULTS.studyN);
  expect(q.replay.events).toBe(QUICK_DEFAULTS.replayEvents);
  expect(q.append.singleEventsAsked).toBe(Number(QUICK_DEFAULTS.events));
  expect(q.append.rounds).toBe(Number(QUICK_DEFAULTS.rounds));
  expect(q.wake.stubLatencyMs).toBe(QUICK_DEFAULTS.stubLatencyMs);
  expect(q.long?.schedule).toEqual(QUICK_LONG_WAKE_SCHEDULE);
  const explicit = parseCommandLine(['--quick', '--study-n', '2', '--events', '50', '--no-long']);
  expect(explicit.study.n).toBe(2);
  // 50 asked: rounded up to whole interleaved chunks (6 x 9), and the ask kept for the log.
  expect(explicit.append).toMatchObject({ singleEvents: 54, singleEventsAsked: 50, singleChunkEvents: 9 });
  expect(explicit.long).toBeNull();
});

test('a bad flag is a usage error', () => {
  expect(() => parseCommandLine(['--fast'])).toThrow(UsageError);
  expect(() => parseCommandLine(['--study-n', '1'])).toThrow(UsageError);
  expect(() => parseCommandLine(['--replay-events', 'many'])).toThrow(UsageError);
});

test('an aim is judged in its own direction, at its bound, and not at all without a figure', () => {
  expect(judgeAim('append_single', BENCH_AIMS.append_single.aim, 'x', false).met).toBe(true);
  expect(judgeAim('append_single', BENCH_AIMS.append_single.aim - 0.001, 'x', false).met).toBe(false);
  expect(judgeAim('wake_overhead_stub_median', BENCH_AIMS.wake_overhead_stub_median.aim, 'x', false).met).toBe(true);
  expect(judgeAim('wake_overhead_stub_median', BENCH_AIMS.wake_overhead_stub_median.aim + 0.1, 'x', false).met).toBe(false);
  const skipped = judgeAim('study_wall_n5', null, 'study.study_wall_ms', true, 'study skipped');
  expect(skipped).toMatchObject({ value: null, met: null, verdict: 'NOT JUDGED', quick: true, note: 'study skipped' });
  expect(judgeAim('replay', Number.NaN, 'x', false).met).toBeNull();
});

/** Only the fields benchAims reads; the rest of each report is irrelevant to the list. */
function inputs(over: { study?: { n: number; wallMs: number } | null; longRatio?: number | null; stubMedianMs?: number }): AimInputs {
  const study = over.study === undefined ? { n: 5, wallMs: 59_000 } : over.study;
  const pairsAt = (ratio: number) => pairedRatio([0.98, 1, 1.02].map((f) => ({ raw: 1_000, ours: 1_000 * ratio * f })));
  return {
    quick: false,
    paired: { append_single: pairsAt(0.7), append_batched: pairsAt(0.4), replay: pairsAt(0.6) },
    wake: { stub: { overhead_ms: { median: over.stubMedianMs ?? 9 }, stub_latency_ms: 200 }, reference: { apparatus_ms: { median: 12 }, policy_compute: { median_ms: 1 } } },
    long: over.longRatio === null ? null : { last_over_first: over.longRatio ?? 1.1, last_over_second: 1.2, case: { wakes: 300 }, history_events: 2_000 },
    study: study === null ? null : { n_per_group: study.n, study_wall_ms: study.wallMs, instance_wall_ms: { max: 20_000 }, parallel_efficiency: 0.9, instances: 3 * study.n, concurrency: 2, cores: 2 },
    batchMerge: null,
    load: quietLoad,
  } as unknown as AimInputs;
}

test('the one aims list names every aim the issue sets, each in the JSON shape', () => {
  const aims = benchAims(inputs({}));
  for (const a of aims) expect(() => AimResult.parse(a)).not.toThrow();
  expect(aims.map((a) => a.name)).toEqual(['append_single', 'append_batched', 'wake_overhead_stub_median', 'long_instance_last_over_first', 'study_wall_n5', 'replay', 'study_parallel_efficiency']);
  const byName = Object.fromEntries(aims.map((a) => [a.name, a]));
  expect(byName['append_batched']).toMatchObject({ met: false, verdict: 'MISSED', under_load: false });
  expect(byName['append_batched']!.pairs).toMatchObject({ median: 0.4, pairs: 3 });
  expect(byName['study_wall_n5']).toMatchObject({ value: 59, unit: 's', met: true, verdict: 'MET', physical_bound: { comparison: '>=', value: 20 } });
  // JSON round trip: what --json prints parses back to the same list.
  expect(JSON.parse(JSON.stringify(aims))).toEqual(aims);
});

test('a study of another n, a skipped study or long instance are listed but not judged', () => {
  const other = Object.fromEntries(benchAims(inputs({ study: { n: 3, wallMs: 10_000 } })).map((a) => [a.name, a]));
  expect(other['study_wall_n5']).toMatchObject({ value: null, met: null });
  expect(other['study_wall_n5']!.note).toMatch(/n = 5/);
  const none = Object.fromEntries(benchAims(inputs({ study: null, longRatio: null })).map((a) => [a.name, a]));
  expect(none['study_wall_n5']!.met).toBeNull();
  expect(none['study_parallel_efficiency']!.met).toBeNull();
  expect(none['long_instance_last_over_first']).toMatchObject({ value: null, met: null });
  // A cost that grows with history is MISSED (forged: 1.5x).
  const grown = Object.fromEntries(benchAims(inputs({ longRatio: 1.5 })).map((a) => [a.name, a]));
  expect(grown['long_instance_last_over_first']!.met).toBe(false);
});

/** A wake every 10 ms, `events` events long, with overhead `overheadMs(i)`. */
function wakes(count: number, overheadMs: (i: number) => number): WakeTiming[] {
  const out: WakeTiming[] = [];
  let seq = 3;
  for (let i = 0; i < count; i += 1) {
    out.push({ wake_id: `wake-${String(i + 1).padStart(4, '0')}`, started_at_ms: 1_000 * i, started_seq: seq, ended_seq: seq + 9, outcome: 'completed', wall_ms: overheadMs(i) + 200, model_ms: 200, model_answers: 1, model_failures: 0 });
    seq += 10;
  }
  return out;
}

test('the tenths are the first and last tenth of wakes in store order, and their medians show growth', () => {
  const all = wakes(100, (i) => 10 + i / 10);
  const { first, second, last } = tenths([...all].reverse());
  expect(first.map((w) => w.wake_id)).toEqual(all.slice(0, 10).map((w) => w.wake_id));
  expect(second[0]!.wake_id).toBe('wake-0011');
  expect(last[last.length - 1]!.wake_id).toBe('wake-0100');
  const f = tenthFigures(first, all);
  const l = tenthFigures(last, all);
  expect(f.history_events_at_start).toBe(2);
  // 1000 ms apart, each 200 ms of model + 10 + i/10 ms of overhead long: gaps 790 - i/10, median of i = 0..9 is 789.55.
  expect(f.between_wakes_ms_median).toBe(789.6);
  expect(l.overhead_ms_median / f.overhead_ms_median).toBeCloseTo(19.45 / 10.45, 2);
  expect(() => tenths(all.slice(0, 8))).toThrow(/too few/);
});

let run: FinishedRun;
beforeAll(async () => {
  run = await finishedRun('C');
});
afterAll(() => run?.cleanup());

test('the reference policy re-run reproduces every stored answer, and says which one it does not', async () => {
  const clean = await measureReferencePolicyCompute(run.runDir, SCENARIOS_DIR, GROUP_CAPABILITIES.C);
  expect(clean.calls).toBeGreaterThan(20);
  expect(clean.reproduced).toBe(clean.calls);
  expect(clean.first_mismatch_wake).toBeNull();
  expect(clean.per_wake_ms.size).toBeGreaterThan(20);

  // Forged: one stored answer changed (the copy's append-only trigger dropped for it).
  const db = new Database(run.dbPath);
  const row = db.prepare("SELECT seq, envelope FROM events WHERE event_type = 'ModelOutputEvent.ModelAnswered' ORDER BY seq LIMIT 1 OFFSET 3").get() as { seq: number; envelope: string };
  const envelope = JSON.parse(row.envelope) as { payload: { raw_output: string; wake_id: string } };
  envelope.payload.raw_output = `${envelope.payload.raw_output} `;
  db.exec('DROP TRIGGER events_refuse_update');
  db.prepare('UPDATE events SET envelope = ? WHERE seq = ?').run(JSON.stringify(envelope), row.seq);
  db.close();
  const forged = await measureReferencePolicyCompute(run.runDir, SCENARIOS_DIR, GROUP_CAPABILITIES.C);
  expect(forged.reproduced).toBe(clean.calls - 1);
  expect(forged.first_mismatch_wake).toBe(envelope.payload.wake_id);
});
