// The fault harness's whole batch (issue 8): calibrate each group once (a clean run that counts
// every point's hits, and a control: its invariants must hold too), plan the runs from the seed,
// run them side by side, and sum up faults by kind and point, violations by invariant, and for
// every violation the seed and the command that reproduces it.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { z } from 'zod';
import { FAULT_KINDS, FAULT_POINTS, type FaultKind, type FaultPoint } from '../../schema/fault-points.js';
import { Calibration, FAULT_CELLS, GROUPS, instanceSeedOf, planFaultRun, type FaultRunPlan } from './fault-plan.js';
import { calibrate, calibrationOf, INVARIANTS, reproduceCommand, RunFingerprint, runFaultPlan, sameRun, type FaultRunResult, type HarnessSetup, type Invariant } from './fault-run.js';

/** More runs than this in one batch are refused (200 take about half an hour on two cores). */
export const MAX_RUNS = 5_000;
const MAX_DETAIL_CHARS = 500;

export const FaultFailure = z.strictObject({
  seed: z.string(),
  /** 0 for a calibration run. */
  run: z.number().int().min(0),
  name: z.string(),
  command: z.string(),
  invariant: z.enum(INVARIANTS),
  detail: z.string(),
});
export type FaultFailure = z.infer<typeof FaultFailure>;

export const FaultSummary = z.strictObject({
  ok: z.boolean(),
  seed: z.string(),
  runs: z.number().int().min(0),
  /** Fired faults by kind and by point (a planned fault that never fired is a `fault_fired` violation instead). */
  faults: z.record(z.string(), z.number().int()),
  points: z.record(z.string(), z.number().int()),
  /** Every invariant, with its number of violating runs (0 is the goal). */
  violations: z.record(z.string(), z.number().int()),
  failures: z.array(FaultFailure),
  coverage: z.strictObject({
    cells: z.number().int(),
    /** "point kind": fired runs. */
    exercised: z.record(z.string(), z.number().int()),
    /** Applicable cells no run exercised (empty once runs ≥ cells). */
    missing: z.array(z.string()),
  }),
  /** Hits of every point in each group's clean run. */
  calibration: z.record(z.string(), z.record(z.string(), z.number().int())),
  /** Set when one run was rerun (--run): whether it reproduced the earlier record in the same folder. */
  reproduction: z.strictObject({ run: z.number().int(), compared: z.boolean(), same: z.boolean(), differences: z.array(z.string()) }).nullable(),
  out: z.string(),
  duration_s: z.number(),
});
export type FaultSummary = z.infer<typeof FaultSummary>;

export interface HarnessOptions {
  readonly setup: HarnessSetup;
  readonly seed: string;
  /** Runs 1..runs; ignored when `only` is set. */
  readonly runs: number;
  /** Rerun just this run index (and compare it with its earlier record, if the folder has one). */
  readonly only: number | null;
  readonly concurrency: number;
  readonly onProgress: (line: string) => void;
}

const CalibrationFile = z.strictObject({ seed: z.string(), calibration: Calibration });

function cellName(point: FaultPoint, kind: FaultKind): string {
  return `${point} ${kind}`;
}

function failuresOf(seed: string, run: number, result: FaultRunResult, command: string): FaultFailure[] {
  return result.invariants
    .filter((i) => !i.ok)
    .map((i) => ({ seed, run, name: result.name, command, invariant: i.invariant, detail: (i.details.filter((d) => !d.startsWith('note:')).join(' | ') || 'no detail').slice(0, MAX_DETAIL_CHARS) }));
}

function describe(result: FaultRunResult): string {
  const p = result.plan;
  const what = p ? `${p.group} ${p.kind} at hit ${p.hit}/${p.hits_in_calibration} of ${p.point}` : 'calibration';
  const verdict = result.violations.length === 0 ? 'ok' : `VIOLATED ${result.violations.join(', ')}`;
  return `${result.name}: ${what} · exits ${result.exits.map((e) => e ?? 'killed').join(' → ')} · ${verdict} (${(result.durationMs / 1000).toFixed(1)} s)`;
}

/** The calibration of every group: reused from the folder when it was made for this seed, else run. */
async function calibration(options: HarnessOptions, queue: PQueue, failures: FaultFailure[]): Promise<Calibration> {
  const file = path.join(options.setup.outDir, 'calibration.json');
  if (existsSync(file)) {
    const saved = CalibrationFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (saved.success && saved.data.seed === options.seed) {
      options.onProgress(`calibration: reused ${file} (made for seed ${options.seed}; delete it after changing the code)`);
      return saved.data.calibration;
    }
  }
  const results = await Promise.all(
    GROUPS.map((group) =>
      queue.add(async () => {
        options.onProgress(`start calibration-${group}: a clean run counting every point's hits`);
        const result = await calibrate(options.setup, group, instanceSeedOf(options.seed));
        options.onProgress(describe(result));
        failures.push(...failuresOf(options.seed, 0, result, `npm run faults -- --seed ${JSON.stringify(options.seed)} --runs 0 --out ${JSON.stringify(options.setup.outDir)}`));
        return [group, result] as const;
      }),
    ),
  );
  const byGroup = Object.fromEntries(results) as unknown as Parameters<typeof calibrationOf>[0];
  const cal = calibrationOf(byGroup);
  // Only a clean calibration is kept for reuse.
  if (failures.length === 0) writeFileSync(file, `${JSON.stringify({ seed: options.seed, calibration: cal }, null, 2)}\n`);
  return cal;
}

export async function runHarness(options: HarnessOptions): Promise<FaultSummary> {
  const startedMs = Date.now();
  if (options.only === null && (!Number.isSafeInteger(options.runs) || options.runs < 0 || options.runs > MAX_RUNS)) throw new RangeError(`runs must be 0..${MAX_RUNS}, got ${options.runs}`);
  const queue = new PQueue({ concurrency: options.concurrency });
  const failures: FaultFailure[] = [];
  const cal = await calibration(options, queue, failures);
  const indices = options.only !== null ? [options.only] : Array.from({ length: options.runs }, (_, i) => i + 1);
  const plans: FaultRunPlan[] = indices.map((index) => planFaultRun(options.seed, index, cal));

  let earlier: RunFingerprint | null = null;
  if (options.only !== null) {
    const plan = plans[0]!;
    const record = path.join(options.setup.outDir, 'runs', `${String(plan.index).padStart(4, '0')}-${plan.group}-${plan.point}-${plan.kind}`, 'fault-run.json');
    if (existsSync(record)) earlier = RunFingerprint.parse((JSON.parse(readFileSync(record, 'utf8')) as { fingerprint: unknown }).fingerprint);
  }

  const results: FaultRunResult[] = [];
  let done = 0;
  await Promise.all(
    plans.map((plan) =>
      queue.add(async () => {
        options.onProgress(`start ${String(plan.index).padStart(4, '0')}: ${plan.group} ${plan.kind} at hit ${plan.hit}/${plan.hits_in_calibration} of ${plan.point} (${done} of ${plans.length} done)`);
        const result = await runFaultPlan(options.setup, plan);
        results.push(result);
        done += 1;
        options.onProgress(`[${done}/${plans.length}] ${describe(result)}`);
        failures.push(...failuresOf(options.seed, plan.index, result, `${reproduceCommand(options.seed, plan.index)} --out ${JSON.stringify(options.setup.outDir)}`));
      }),
    ),
  );

  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const points = Object.fromEntries(FAULT_POINTS.map((p) => [p, 0])) as Record<FaultPoint, number>;
  const exercised = Object.fromEntries(FAULT_CELLS.map((c) => [cellName(c.point, c.kind), 0]));
  for (const result of results) {
    if (result.reached === null) continue;
    faults[result.reached.kind] += 1;
    points[result.reached.point] += 1;
    const cell = cellName(result.reached.point, result.reached.kind);
    exercised[cell] = (exercised[cell] ?? 0) + 1;
  }
  const violations = Object.fromEntries(INVARIANTS.map((i) => [i, 0])) as Record<Invariant, number>;
  for (const failure of failures) violations[failure.invariant] += 1;

  let reproduction: FaultSummary['reproduction'] = null;
  if (options.only !== null) {
    const rerun = results[0]!;
    const compared = earlier !== null ? sameRun(earlier, rerun.fingerprint) : null;
    reproduction = { run: options.only, compared: compared !== null, same: compared?.same ?? false, differences: compared?.differences ?? [] };
  }
  const summary: FaultSummary = {
    ok: failures.length === 0 && (reproduction === null || !reproduction.compared || reproduction.same),
    seed: options.seed,
    runs: results.length,
    faults,
    points,
    violations,
    failures: failures.sort((a, b) => a.run - b.run || a.invariant.localeCompare(b.invariant)),
    coverage: { cells: FAULT_CELLS.length, exercised, missing: Object.entries(exercised).filter(([, n]) => n === 0).map(([cell]) => cell) },
    calibration: Object.fromEntries(Object.entries(cal).map(([group, c]) => [group, c.hits])),
    reproduction,
    out: options.setup.outDir,
    duration_s: Math.round((Date.now() - startedMs) / 100) / 10,
  };
  writeFileSync(path.join(options.setup.outDir, options.only === null ? 'summary.json' : `rerun-${options.only}.json`), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}
