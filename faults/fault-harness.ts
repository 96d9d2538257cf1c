// The fault harness's whole batch (issue 8): calibrate each group once (a clean run that counts
// every point's hits, and a control: its invariants must hold too), plan the runs from the seed,
// run them side by side, and sum up faults by kind and point, violations by invariant, and for
// every violation the seed and the command that reproduces it.
//
// A rerun (`only`) is a reproduction check, so it needs something to check against: the record of
// the same run of the same seed in the same folder. Without one it is refused before anything
// runs (FaultRerunRefusal; a check that compared nothing must not pass as one).
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { FAULT_KINDS, FAULT_POINTS, type FaultKind, type FaultPoint } from '../schema/fault-points.js';
import { GROUPS } from '../design/groups.js';
import { Calibration, FAULT_CELLS, FaultRunPlan, instanceSeedOf, planFaultRun } from './fault-plan.js';
import { calibrate, calibrationOf, INTERRUPTED_REASON, KILLED_AT_BIRTH_NOTE, reproduceCommand, RunFingerprint, runFaultPlan, runNameOf, sameRun, type FaultRunResult, type HarnessSetup } from './fault-run.js';
import { INVARIANTS, type Invariant } from './run-invariants.js';

/** More runs than this in one batch are refused (200 take about half an hour on two cores). */
export const MAX_RUNS = 5_000;
const MAX_DETAIL_CHARS = 500;
/** A run's record (fault-run.json) larger than this is not read as one: records are a few hundred KiB at most. */
const MAX_RECORD_BYTES = 16 * 1024 * 1024;
/** Folders of runs/ a rerun's search names in its refusal, at most (the rest are counted). */
const MAX_NAMED_RECORDS = 10;

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
  /**
   * Runs that were not tried (a disk_full run without root to mount its tmpfs): no invariant was
   * checked, so they are neither passes nor violations, and their cells stay in coverage.missing.
   */
  skipped: z.array(z.strictObject({ run: z.number().int().min(1), name: z.string(), reason: z.string() })),
  coverage: z.strictObject({
    cells: z.number().int(),
    /** "point kind": fired runs. */
    exercised: z.record(z.string(), z.number().int()),
    /** Applicable cells no run exercised (empty once runs ≥ cells). */
    missing: z.array(z.string()),
  }),
  /** Hits of every point in each group's clean run. */
  calibration: z.record(z.string(), z.record(z.string(), z.number().int())),
  /**
   * Set when one run was rerun (--run): whether it reproduced the earlier record in the same
   * folder. compared is always true (a rerun without a record to compare with is refused before
   * it runs); it stays in the summary so a reader never has to infer it.
   */
  reproduction: z.strictObject({ run: z.number().int(), compared: z.boolean(), same: z.boolean(), differences: z.array(z.string()) }).nullable(),
  out: z.string(),
  /** Wall time of the whole batch, calibration included. */
  duration_s: z.number(),
  /** Instances at once. */
  concurrency: z.number().int().min(1),
  /** Fault runs (calibration not counted) per minute of duration_s. */
  runs_per_minute: z.number(),
  /**
   * Set when the operator stopped the batch (cli/faults.ts): by which signal, how
   * many planned runs never started, and how many were killed under way at a second press (listed
   * in `skipped`, unchecked, and counted in `runs` like every run started).
   */
  interrupted: z.strictObject({ by: z.string(), not_started: z.number().int().min(0), killed: z.number().int().min(0) }).nullable(),
});
export type FaultSummary = z.infer<typeof FaultSummary>;

export interface HarnessOptions {
  readonly setup: HarnessSetup;
  readonly seed: string;
  /** Runs 1..runs; ignored when `only` is set. */
  readonly runs: number;
  /** Rerun just this run index and compare it with its earlier record in the folder (refused when there is none). */
  readonly only: number | null;
  readonly concurrency: number;
  readonly onProgress: (line: string) => void;
  /** The operator's presses: the first starts no more runs, the second kills the runs under way (their reasons say which signal). */
  readonly stop?: HarnessStop;
}

export interface HarnessStop {
  readonly startNoMore: AbortSignal;
  readonly killNow: AbortSignal;
}

const CalibrationFile = z.strictObject({ seed: z.string(), calibration: Calibration });

/** A rerun refused before it ran: the harness folder holds no record of that run to compare it with. Nothing was run or written. */
export class FaultRerunRefusal extends TypedErrorOf(null, EXIT_CODES.misused) {
  override readonly name = 'FaultRerunRefusal';
  override get ownCode(): string {
    return this.code;
  }
  override get endingDetails(): Readonly<Record<string, unknown>> {
    return { ...this.details };
  }
  readonly code = 'fault_rerun_no_earlier_record';
  constructor(
    message: string,
    /** What the search found in OUT/runs/ and why none of it is a record of the run (relative to OUT). */
    readonly details: { readonly out: string; readonly seed: string; readonly run: number; readonly looked_at: readonly string[] },
  ) {
    super(message);
  }
}

/** The parts of a run's record (fault-run.json, written by fault-run.ts) a rerun compares with. */
const RunRecordFile = z.looseObject({ plan: FaultRunPlan, fingerprint: RunFingerprint });

export interface EarlierRecord {
  /** OUT/runs/<run>/fault-run.json */
  readonly file: string;
  readonly plan: FaultRunPlan;
  readonly fingerprint: RunFingerprint;
}

/** How every folder of run `index` under OUT/runs/ begins (runNameOf, whatever the plan's group, point and kind). */
function runFolderPrefix(index: number): string {
  return `${String(index).padStart(4, '0')}-`;
}

/**
 * Every record of run `index` of `seed` in the harness folder `outDir`, read only (nothing is
 * created, not even `outDir`). Refuses (FaultRerunRefusal) when there is none, naming what it
 * found instead: a folder without a record (a run that never ended), a record of another seed,
 * one that does not parse.
 */
export function earlierRecordsOf(outDir: string, seed: string, index: number): EarlierRecord[] {
  const runsDir = path.join(outDir, 'runs');
  const lookedAt: string[] = [];
  const records: EarlierRecord[] = [];
  const entries = existsSync(runsDir) && lstatSync(runsDir).isDirectory() ? readdirSync(runsDir).filter((n) => n.startsWith(runFolderPrefix(index))).sort() : [];
  for (const name of entries) {
    const file = path.join(runsDir, name, 'fault-run.json');
    const rel = path.join('runs', name, 'fault-run.json');
    if (!existsSync(file) || !lstatSync(file).isFile()) {
      lookedAt.push(`${rel}: missing (that run never ended)`);
      continue;
    }
    if (statSync(file).size > MAX_RECORD_BYTES) {
      lookedAt.push(`${rel}: ${statSync(file).size} bytes, over the ${MAX_RECORD_BYTES} a record has; not read`);
      continue;
    }
    let parsed;
    try {
      parsed = RunRecordFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    } catch (error) {
      lookedAt.push(`${rel}: not JSON (${error instanceof Error ? error.message : String(error)})`);
      continue;
    }
    if (!parsed.success) {
      lookedAt.push(`${rel}: not a run's record: ${z.prettifyError(parsed.error).split('\n').slice(0, 3).join(' ')}`);
      continue;
    }
    if (parsed.data.plan.seed !== seed || parsed.data.plan.index !== index) {
      lookedAt.push(`${rel}: a record of run ${parsed.data.plan.index} of seed ${JSON.stringify(parsed.data.plan.seed)}, not of run ${index} of seed ${JSON.stringify(seed)}`);
      continue;
    }
    records.push({ file, plan: parsed.data.plan, fingerprint: parsed.data.fingerprint });
  }
  if (records.length > 0) return records;
  const where = !existsSync(outDir) ? `${outDir} does not exist` : `${outDir} holds no record of run ${index} of seed ${JSON.stringify(seed)} (looked for runs/${runFolderPrefix(index)}*/fault-run.json)`;
  const named = lookedAt.slice(0, MAX_NAMED_RECORDS).map((l) => `\n  ${l}`).join('') + (lookedAt.length > MAX_NAMED_RECORDS ? `\n  … and ${lookedAt.length - MAX_NAMED_RECORDS} more` : '');
  throw new FaultRerunRefusal(
    `${where}. --run ${index} is a reproduction check: it compares the new run with run ${index}'s record in --out, so here it would compare nothing. Nothing was run and nothing was written. Give the --out of the harness folder that made run ${index} (the folder its batch's summary names, as in a failure's "reproduce:" line), or run the batch there first: npm run faults -- --seed ${JSON.stringify(seed)} --runs ${index} --out DIR${named}`,
    { out: outDir, seed, run: index, looked_at: lookedAt },
  );
}

/** The record a rerun of `plan` is compared with: the one at its plan's own folder, else (the plan changed with the calibration) the newest one. */
function recordFor(plan: FaultRunPlan, records: readonly EarlierRecord[]): EarlierRecord {
  const own = records.find((r) => path.basename(path.dirname(r.file)) === runNameOf(plan));
  return own ?? [...records].sort((a, b) => statSync(b.file).mtimeMs - statSync(a.file).mtimeMs)[0]!;
}

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
  const verdict = result.skipped !== null ? `SKIPPED, not tried: ${result.skipped}` : result.violations.length === 0 ? 'ok' : `VIOLATED ${result.violations.join(', ')}`;
  return `${result.name}: ${what} · exits ${result.exits.map((e) => e ?? 'killed').join(' → ')} · ${verdict} (${(result.durationMs / 1000).toFixed(1)} s)`;
}

/** The calibration of every group: reused from the folder when it was made for this seed, else run. */
async function calibration(options: HarnessOptions, queue: PQueue, failures: FaultFailure[]): Promise<Calibration> {
  const file = path.join(options.setup.outDir, 'calibration.json');
  if (existsSync(file)) {
    let json: unknown = null;
    try {
      json = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      // A torn or foreign file is no calibration: made again (and replaced), saying so.
      options.onProgress(`calibration: ${file} is not JSON (${error instanceof Error ? error.message : String(error)}); calibrating again`);
    }
    const saved = CalibrationFile.safeParse(json);
    if (saved.success && saved.data.seed === options.seed) {
      options.onProgress(`calibration: reused ${file} (made for seed ${options.seed}; delete it after changing the code)`);
      return saved.data.calibration;
    }
  }
  const results = await Promise.all(
    GROUPS.map((group) =>
      queue.add(async () => {
        options.onProgress(`start calibration-${group}: a clean run counting every point's hits`);
        const result = await calibrate(options.setup, group, instanceSeedOf(options.seed), options.stop?.killNow ?? null);
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
  // A rerun's records are found (or the rerun refused) before anything runs, the calibration included.
  const records = options.only !== null ? earlierRecordsOf(options.setup.outDir, options.seed, options.only) : [];
  const queue = new PQueue({ concurrency: options.concurrency });
  const failures: FaultFailure[] = [];
  const cal = await calibration(options, queue, failures);
  const indices = options.only !== null ? [options.only] : Array.from({ length: options.runs }, (_, i) => i + 1);
  const startNoMore = options.stop?.startNoMore;
  // Stopped during the calibration: nothing is planned from a calibration that may not have run to its end.
  const plans: FaultRunPlan[] = startNoMore?.aborted ? [] : indices.map((index) => planFaultRun(options.seed, index, cal));
  let notStarted = indices.length - plans.length;
  // Read before the rerun replaces the record in its folder.
  const earlier: RunFingerprint | null = options.only !== null ? recordFor(plans[0]!, records).fingerprint : null;

  const results: FaultRunResult[] = [];
  let done = 0;
  await Promise.all(
    plans.map((plan) =>
      queue.add(async () => {
        if (startNoMore?.aborted) {
          notStarted += 1;
          return;
        }
        options.onProgress(`start ${String(plan.index).padStart(4, '0')}: ${plan.group} ${plan.kind} at hit ${plan.hit}/${plan.hits_in_calibration} of ${plan.point} (${done} of ${plans.length} done)`);
        const result = await runFaultPlan(options.setup, plan, options.stop?.killNow ?? null);
        results.push(result);
        done += 1;
        for (const note of result.notes.filter((n) => n.startsWith(KILLED_AT_BIRTH_NOTE))) options.onProgress(`${result.name}: ${note}`);
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
  if (options.only !== null && earlier !== null) {
    const compared = sameRun(earlier, results[0]!.fingerprint);
    reproduction = { run: options.only, compared: true, same: compared.same, differences: compared.differences };
  }
  const skipped = results.flatMap((r) => (r.skipped === null || r.plan === null ? [] : [{ run: r.plan.index, name: r.name, reason: r.skipped }])).sort((a, b) => a.run - b.run);
  const killed = skipped.filter((s) => s.reason.startsWith(INTERRUPTED_REASON)).length;
  const interrupted = startNoMore?.aborted ? { by: String(startNoMore.reason ?? 'the operator'), not_started: notStarted, killed } : null;
  const summary: FaultSummary = {
    // A rerun passes only by reproducing its record: one that compared nothing (or was not tried) is not a pass; an interrupted batch is no pass either.
    ok: failures.length === 0 && interrupted === null && (options.only === null || (reproduction !== null && reproduction.compared && reproduction.same && skipped.length === 0)),
    seed: options.seed,
    runs: results.length,
    faults,
    points,
    violations,
    failures: failures.sort((a, b) => a.run - b.run || a.invariant.localeCompare(b.invariant)),
    skipped,
    coverage: { cells: FAULT_CELLS.length, exercised, missing: Object.entries(exercised).filter(([, n]) => n === 0).map(([cell]) => cell) },
    calibration: Object.fromEntries(Object.entries(cal).map(([group, c]) => [group, c.hits])),
    reproduction,
    out: options.setup.outDir,
    duration_s: Math.round((Date.now() - startedMs) / 100) / 10,
    concurrency: options.concurrency,
    runs_per_minute: Math.round((results.length / Math.max((Date.now() - startedMs) / 60_000, 1e-9)) * 10) / 10,
    interrupted,
  };
  writeFileSync(path.join(options.setup.outDir, options.only === null ? 'summary.json' : `rerun-${options.only}.json`), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}
