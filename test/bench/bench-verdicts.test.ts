// The bench's checkers on forged figures (issue 34 item 5): ratios from interleaved pairs, the
// physical bounds that make a figure INVALID instead of MET, and the mark of a loaded run.
// Nothing here is timed: made-up round figures go into the pure functions.
import { expect, test } from 'vitest';
import { appendParams, PAIRS_PER_ROUND } from '../../tools/bench/append-bench.js';
import { aimLines, BENCH_AIMS, benchAims, judgeAim, PHYSICAL_BOUNDS, summaryLine, verdictOf, WAKE_TIMESTAMP_SLACK_MS, type AimInputs, type AimName } from '../../tools/bench/bench-aims.js';
import { loadLines, loadMark, othersCpuCores, parsePidStat, parseProcStat, UNDER_LOAD_PER_CORE, type LoadReading } from '../../tools/bench/machine-load.js';
import { beyondBoundText, interleavedOrder, pairedRatio, type RatePair } from '../../tools/bench/paired-ratio.js';

const zip = (raw: number[], ours: number[]): RatePair[] => raw.map((r, i) => ({ raw: r, ours: ours[i]! }));
const reading = (load1: number, ticks: LoadReading['ticks']): LoadReading => ({ load_avg: [load1, load1, load1], ticks });
const QUIET = loadMark({ cores: 2, start: reading(0.1, { busy: 0, total: 0, own: 0 }), end: reading(0.8, { busy: 100, total: 400, own: 100 }), phases: {} });

test('a noisy pair sequence gives the median of the pair ratios, not the ratio of the medians', () => {
  // The middle raw round is fast, the middle ours slow: the medians come from different moments.
  const raw = [100, 1_000, 1_000];
  const ours = [90, 95, 900];
  const r = pairedRatio(zip(raw, ours));
  expect(r.ratios).toEqual([0.9, 0.095, 0.9]);
  expect(r.median).toBe(0.9);
  const ratioOfMedians = 95 / 1_000;
  expect(r.median).not.toBeCloseTo(ratioOfMedians, 2);
  expect(r).toMatchObject({ min: 0.095, max: 0.9, pairs: 3 });
  expect(r.q1).toBeCloseTo((0.095 + 0.9) / 2, 10);
  expect(r.q3).toBe(0.9);
});

test("the issue's run (raw rounds 551, 596 and 5,349 events/s) is INVALID, paired or not, never MET", () => {
  // Ours at ~1,955 events/s: the ratio of medians was 1,955 / 596 = 3.28.
  const r = pairedRatio(zip([551, 596, 5_349], [1_808, 1_955, 1_955]));
  expect(r.median).toBeGreaterThan(1);
  const judged = judgeAim('append_single', r.median, 'ratios.append_single', false, null, { pairs: r });
  expect(judged).toMatchObject({ verdict: 'INVALID', met: null, physical_bound: { comparison: '<=', value: 1 } });
  expect(judged.note).toMatch(/2 of 3 pairs beyond the physical bound/);
  expect(aimLines([judged])[0]).toMatch(/INVALID: beyond its physical bound <= 1, noise/);
  // One pair beyond the bound under a possible median is named, not hidden.
  const oneNoisy = pairedRatio(zip([1_000, 1_000, 300], [400, 420, 410]));
  const ok = judgeAim('append_single', oneNoisy.median, 'x', false, null, { pairs: oneNoisy });
  expect(ok.verdict).toBe('MISSED');
  expect(ok.note).toMatch(/1 of 3 pairs beyond the physical bound <= 1/);
});

test('every at-most bound: a figure just beyond it is INVALID, at it is judged against the aim', () => {
  const atMost = (Object.keys(PHYSICAL_BOUNDS) as AimName[]).filter((n) => PHYSICAL_BOUNDS[n].kind === 'at_most');
  expect(atMost.sort()).toEqual(['append_batched', 'append_single', 'replay', 'study_parallel_efficiency']);
  for (const name of atMost) {
    const b = PHYSICAL_BOUNDS[name];
    if (b.kind !== 'at_most') throw new Error('filtered');
    expect(b.why.length).toBeGreaterThan(40);
    expect(judgeAim(name, b.value + 0.001, 'x', false)).toMatchObject({ verdict: 'INVALID', met: null });
    expect(judgeAim(name, b.value, 'x', false).verdict).toBe(BENCH_AIMS[name].comparison === '>=' && b.value >= BENCH_AIMS[name].aim ? 'MET' : 'MISSED');
  }
  // INVALID wins over an aim the figure would have met (a ratio >= aim).
  expect(verdictOf(3.28, 0.6, '>=', { comparison: '<=', value: 1, why: 'w' })).toBe('INVALID');
  expect(verdictOf(0.59, 0.6, '>=', { comparison: '<=', value: 1, why: 'w' })).toBe('MISSED');
  expect(verdictOf(null, 0.6, '>=', null)).toBe('NOT JUDGED');
  expect(verdictOf(Number.NaN, 0.6, '>=', null)).toBe('NOT JUDGED');
});

test('a wake overhead below its floor is INVALID; a measured floor not measured is said, not assumed', () => {
  const floor = -WAKE_TIMESTAMP_SLACK_MS;
  expect(judgeAim('wake_overhead_stub_median', floor - 0.5, 'x', false)).toMatchObject({ verdict: 'INVALID', met: null, physical_bound: { comparison: '>=', value: floor } });
  expect(judgeAim('wake_overhead_stub_median', floor, 'x', false).verdict).toBe('MET');
  expect(judgeAim('wake_overhead_stub_median', 9, 'x', false).verdict).toBe('MET');
  expect(judgeAim('wake_overhead_stub_median', 12, 'x', false).verdict).toBe('MISSED');
  // The study's floor is its longest instance, measured in the same study: below it, INVALID.
  expect(judgeAim('study_wall_n5', 19.9, 'x', false, null, { floor: 20 })).toMatchObject({ verdict: 'INVALID', physical_bound: { comparison: '>=', value: 20 } });
  expect(judgeAim('study_wall_n5', 20, 'x', false, null, { floor: 20 }).verdict).toBe('MET');
  const unmeasured = judgeAim('study_wall_n5', 19.9, 'x', false, 'n = 5', { floor: null });
  expect(unmeasured).toMatchObject({ verdict: 'MET', physical_bound: null });
  expect(unmeasured.note).toBe('n = 5; physical floor not measured in this run: not checked');
});

/** Only what benchAims reads. */
function inputs(over: { studyWallMs?: number; efficiency?: number; stubMs?: number; append?: RatePair[]; load?: AimInputs['load'] }): AimInputs {
  const pairs = (ratio: number) => pairedRatio([{ raw: 1_000, ours: 1_000 * ratio }]);
  return {
    quick: true,
    paired: { append_single: over.append ? pairedRatio(over.append) : pairs(0.7), append_batched: pairs(0.55), replay: pairs(0.6) },
    wake: { stub: { overhead_ms: { median: over.stubMs ?? 9 }, stub_latency_ms: 20 }, reference: { apparatus_ms: { median: 12 }, policy_compute: { median_ms: 1 } } },
    long: null,
    study: { n_per_group: 5, study_wall_ms: over.studyWallMs ?? 50_000, instance_wall_ms: { max: 20_000 }, parallel_efficiency: over.efficiency ?? 0.9, instances: 15, concurrency: 1, cores: 2 },
    batchMerge: null,
    load: over.load ?? QUIET,
  } as unknown as AimInputs;
}

test('the list: a study shorter than its longest instance and an efficiency over 1 are INVALID, counted in the summary', () => {
  const aims = benchAims(inputs({ studyWallMs: 15_000, efficiency: 1.3, stubMs: -WAKE_TIMESTAMP_SLACK_MS - 1 }));
  const by = Object.fromEntries(aims.map((a) => [a.name, a]));
  expect(by['study_wall_n5']).toMatchObject({ value: 15, verdict: 'INVALID', physical_bound: { comparison: '>=', value: 20 } });
  expect(by['study_parallel_efficiency']!.verdict).toBe('INVALID');
  expect(by['wake_overhead_stub_median']!.verdict).toBe('INVALID');
  expect(by['long_instance_last_over_first']).toMatchObject({ verdict: 'NOT JUDGED', under_load: false });
  expect(aims.filter((a) => a.verdict === 'MET').map((a) => a.name)).toEqual(['append_single', 'append_batched', 'replay']);
  const summary = summaryLine(aims);
  expect(summary).toMatch(/^aims: 3 MET, 3 INVALID \(wake_overhead_stub_median, study_wall_n5, study_parallel_efficiency: beyond a physical bound/);
  expect(summary).toMatch(/1 NOT JUDGED/);
  expect(summary).toMatch(/the bench still exits 0/);
  expect(summary).not.toMatch(/UNDER LOAD/);
});

test('a loaded run is marked, and so is every aim judged in it', () => {
  const loaded = loadMark({ cores: 2, start: reading(1.6, null), end: reading(2.5, null), phases: {} });
  expect(loaded.under_load).toBe(true);
  const aims = benchAims(inputs({ load: loaded }));
  for (const a of aims) expect(a.under_load).toBe(a.verdict !== 'NOT JUDGED');
  const lines = aimLines(aims);
  expect(lines.find((l) => l.includes('append_single'))).toMatch(/MET \(quick, under load\)/);
  expect(lines[lines.length - 1]).toMatch(/run UNDER LOAD: every judged aim is marked/);
  expect(loadLines(loaded)[1]).toMatch(/^UNDER LOAD: 1-minute load 1\.60 at the start > 1 /);
});

test('the load mark: start load, others\' CPU over the run or in one part, the end only without /proc', () => {
  const threshold = UNDER_LOAD_PER_CORE * 2;
  expect(QUIET).toMatchObject({ cores: 2, threshold, under_load: false, reasons: [], others_cpu_cores: 0 });
  // Others: 600 busy ticks of 1,000 on 2 cores, 200 of them ours: 0.4 x 2 = 0.8 cores, under 1.
  const t0 = { busy: 0, total: 0, own: 0 };
  expect(othersCpuCores(reading(0, t0), reading(0, { busy: 600, total: 1_000, own: 200 }), 2)).toBe(0.8);
  // 800 busy of 1,000, 200 ours: 1.2 cores of others.
  const busy = loadMark({ cores: 2, start: reading(0.2, t0), end: reading(3, { busy: 800, total: 1_000, own: 200 }), phases: {} });
  expect(busy.under_load).toBe(true);
  expect(busy.reasons).toEqual(['other processes used 1.2 cores on average while it ran > 1']);
  // A high end load with /proc showing nobody else: the bench's own processes, not load.
  expect(loadMark({ cores: 2, start: reading(0.2, t0), end: reading(3, { busy: 500, total: 1_000, own: 500 }), phases: {} }).under_load).toBe(false);
  // One loaded part in an otherwise quiet run.
  const phaseLoaded = loadMark({
    cores: 2,
    start: reading(0.2, t0),
    end: reading(0.5, { busy: 500, total: 10_000, own: 100 }),
    phases: { append: { from: reading(0.2, t0), to: reading(0.9, { busy: 400, total: 500, own: 0 }) } },
  });
  expect(phaseLoaded.others_cpu_cores_by_phase).toEqual({ append: 1.6 });
  expect(phaseLoaded.reasons).toEqual(['other processes used more than 1 cores during append (1.6)']);
  // No /proc: the end's load average is all there is. At exactly the threshold: not marked.
  expect(loadMark({ cores: 2, start: reading(0.2, null), end: reading(1.5, null), phases: {} }).reasons[0]).toMatch(/at the end > 1 \(no \/proc/);
  expect(loadMark({ cores: 2, start: reading(1, null), end: reading(1, null), phases: {} }).under_load).toBe(false);
  expect(() => loadMark({ cores: 0, start: reading(0, null), end: reading(0, null), phases: {} })).toThrow();
});

test('/proc parsing: the machine line, and a process name with spaces and parentheses', () => {
  expect(parseProcStat('cpu  10 2 3 100 5 1 1 4 0 0\ncpu0 5 1 1 50 2 0 0 2 0 0\n')).toEqual({ busy: 21, total: 126 });
  expect(() => parseProcStat('intr 1 2 3')).toThrow(/no "cpu " line/);
  const stat = '4242 (node (bench) x) S 4200 4242 4200 0 -1 4194560 100 0 0 0 70 30 12 8 20 0 11 0 1234 0 0';
  expect(parsePidStat(stat)).toEqual({ ppid: 4200, ticks: 70 + 30 + 12 + 8 });
});

test('an informational ratio with a pair or a median beyond 1 says so', () => {
  expect(beyondBoundText(pairedRatio(zip([100, 100, 100], [60, 70, 80])), 1)).toBe('');
  expect(beyondBoundText(pairedRatio(zip([100, 100, 100, 100, 100], [60, 70, 80, 148, 90])), 1)).toBe('; 1 of 5 pairs beyond 1, impossible: noise in those pairs');
  expect(beyondBoundText(pairedRatio(zip([100, 100, 100], [60, 120, 130])), 1)).toBe(' - beyond 1, impossible: noise, not the code');
});

test('interleaving alternates who goes first, and a ratio needs real pairs', () => {
  expect(interleavedOrder(['raw', 'ours'], 0)).toEqual(['raw', 'ours']);
  expect(interleavedOrder(['raw', 'ours'], 1)).toEqual(['ours', 'raw']);
  expect(interleavedOrder(['raw', 'ours', 'proj'], 3)).toEqual(['proj', 'ours', 'raw']);
  expect(() => pairedRatio([])).toThrow(/at least one pair/);
  expect(() => pairedRatio([{ raw: 0, ours: 5 }])).toThrow(/positive/);
  expect(() => pairedRatio([{ raw: Number.POSITIVE_INFINITY, ours: 5 }])).toThrow(/positive and finite/);
});

test('the append rounds are whole interleaved chunks of whole batches', () => {
  const p = appendParams({ events: '1000', batch: '100' });
  expect(p.singleChunkEvents * PAIRS_PER_ROUND).toBe(p.singleEvents);
  expect(p.singleEvents).toBeGreaterThanOrEqual(1_000);
  expect(p.batchedChunkEvents % p.batchSize).toBe(0);
  expect(p.batchedChunkEvents * PAIRS_PER_ROUND).toBe(p.batchedEvents);
  expect(() => appendParams({ events: String(PAIRS_PER_ROUND - 1) })).toThrow(/--events must be between/);
});
