// Which fault each run of `npm run faults` gets (issue 8), from the harness seed alone: a run's
// plan is a pure function of (seed, run index, calibration), so `--seed S --run I` rebuilds it.
//
// Coverage is by construction, not by luck: every applicable (point, kind) cell is one slot of a
// cycle, the cycle is shuffled per round with the seed, and run i takes slot i of its round — so
// any `--runs` ≥ the number of cells exercises every kind at every point it applies to. The group
// and the hit (which pass through the point fires) are drawn within what the calibration run of
// that group showed the point is reached, so a planned fault always fires.
import { z } from 'zod';
import { GROUPS, Group } from '../design/groups.js';
import { wakeAnswerTimeoutMsOf, writerRequestTimeoutMsOf, type LockablePreRegistration } from '../design/prereg.js';
import { seededRandom } from '../design/seeded-random.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { APPLICABLE_KINDS, FAULT_POINT_CATALOGUE, FAULT_POINTS, FaultKindSchema, FaultPointSchema, type FaultKind, type FaultPoint, type FaultReached } from '../schema/fault-points.js';


/** The largest model seed a random_subject plan draws (a signed 32-bit integer: what any sampler takes). */
export const RANDOM_SUBJECT_MAX_MODEL_SEED = 2 ** 31 - 1;

export interface FaultCell {
  readonly point: FaultPoint;
  readonly kind: FaultKind;
}

/** Every (point, kind) the catalogue says applies, in catalogue order. */
export const FAULT_CELLS: readonly FaultCell[] = FAULT_POINTS.flatMap((point) => APPLICABLE_KINDS[point].map((kind) => ({ point, kind })));

/** Hits of every point in one clean run of a group (the calibration). */
export type PointHits = Readonly<Record<FaultPoint, number>>;

export const GroupCalibration = z.strictObject({
  hits: z.record(FaultPointSchema, z.number().int().min(0)),
  /**
   * Per intent point, the hits at which the intent writes, modifies or moves a file: the only
   * ones workspace_tampered is planned at (a tampered read target is an unrecorded external
   * change the store cannot explain by design, not a fault of the runtime).
   */
  mutating: z.partialRecord(FaultPointSchema, z.array(z.number().int().min(1))),
  /**
   * Per intent point, the hits at which the intent writes or modifies a file: the only ones
   * disk_full is planned at there (a read or a move needs no new space, so the fill would not
   * meet the file operation, only the outcome's append — which the writer points already cover).
   */
  writing: z.partialRecord(FaultPointSchema, z.array(z.number().int().min(1))),
});
export type GroupCalibration = z.infer<typeof GroupCalibration>;
export const Calibration = z.strictObject({ A: GroupCalibration, B: GroupCalibration, C: GroupCalibration });
export type Calibration = z.infer<typeof Calibration>;

export const FaultRunPlan = z.strictObject({
  index: z.number().int().min(1),
  /** The harness seed; the run is rebuilt from it and the index. */
  seed: z.string(),
  group: Group,
  /** The instance's seed (schedule and interventions): one per harness seed, like a replicate. */
  instance_seed: z.string(),
  point: FaultPointSchema,
  kind: FaultKindSchema,
  hit: z.number().int().min(1),
  /** How often the point was hit in the calibration run of the group (hit is drawn in 1..this). */
  hits_in_calibration: z.number().int().min(1),
  /**
   * random_subject only: the local model's sampling seed (--model-seed), drawn from the harness
   * seed and the run index, so that `--run I` samples the same answers again. Absent for every
   * other kind (the reference policy needs none).
   */
  model_seed: z.number().int().min(1).max(RANDOM_SUBJECT_MAX_MODEL_SEED).optional(),
});
export type FaultRunPlan = z.infer<typeof FaultRunPlan>;

export class FaultPlanError extends TypedErrorOf('fault_plan', EXIT_CODES.misused) {
  override readonly name = 'FaultPlanError';
}

export function instanceSeedOf(seed: string): string {
  return `faults-${seed}`;
}

/** The cells in the order round `round` visits them (a seeded Fisher–Yates shuffle). */
function shuffledCells(seed: string, round: number): FaultCell[] {
  const random = seededRandom(`${seed}/cells/${round}`);
  const cells = [...FAULT_CELLS];
  for (let i = cells.length - 1; i > 0; i -= 1) {
    const j = random.intBetween(0, i);
    [cells[i], cells[j]] = [cells[j]!, cells[i]!];
  }
  return cells;
}

/** The hits a cell is restricted to by what the intent does (null: any hit of the point). */
function placeableHitsOf(cell: FaultCell, calibration: GroupCalibration): readonly number[] | null {
  if (cell.kind === 'workspace_tampered') return calibration.mutating[cell.point] ?? [];
  // At a writer point any hit meets an append; at the intent point only a write or modify needs space.
  if (cell.kind === 'disk_full' && FAULT_POINT_CATALOGUE[cell.point].role === 'runtime') return calibration.writing[cell.point] ?? [];
  return null;
}

/** Run `index` (1-based) of the harness seed `seed`. */
export function planFaultRun(seed: string, index: number, calibration: Calibration): FaultRunPlan {
  if (!Number.isSafeInteger(index) || index < 1) throw new FaultPlanError(`run index must be a whole number ≥ 1, got ${index}`);
  const round = Math.floor((index - 1) / FAULT_CELLS.length);
  const cell = shuffledCells(seed, round)[(index - 1) % FAULT_CELLS.length]!;
  const random = seededRandom(`${seed}/run/${index}`);
  // The hits a fault of this kind may be placed at, per group: every hit, only the mutating intents, or only the writing ones.
  const placeable = (g: Group): number[] => {
    const hits = calibration[g].hits[cell.point] ?? 0;
    const listed = placeableHitsOf(cell, calibration[g]);
    return listed === null ? Array.from({ length: hits }, (_, i) => i + 1) : [...listed].filter((h) => h <= hits);
  };
  // Only groups whose calibration reached the point can carry it (e.g. a group that never writes a file has no mutating intents).
  const groups = GROUPS.filter((g) => placeable(g).length > 0);
  if (groups.length === 0) throw new FaultPlanError(`no group's calibration run reached ${cell.point} where ${cell.kind} can be placed (${JSON.stringify(Object.fromEntries(GROUPS.map((g) => [g, calibration[g].hits[cell.point] ?? 0])))} hits)`);
  const group = random.pick(groups);
  const hit = random.pick(placeable(group));
  const base = { index, seed, group, instance_seed: instanceSeedOf(seed), point: cell.point, kind: cell.kind, hits_in_calibration: calibration[group].hits[cell.point] ?? 0 };
  // A random subject fires at the first model call: the whole instance runs with the model, and
  // its calibration (made with the reference policy under another pre-registration) says nothing
  // of when its later calls come. The hit drawn above is still drawn, so the other kinds' draws
  // stay what they were; the model seed has a stream of its own for the same reason.
  if (cell.kind === 'random_subject') return { ...base, hit: 1, model_seed: seededRandom(`${seed}/model/${index}`).intBetween(1, RANDOM_SUBJECT_MAX_MODEL_SEED) };
  return { ...base, hit };
}

export function planFaultRuns(seed: string, runs: number, calibration: Calibration): FaultRunPlan[] {
  return Array.from({ length: runs }, (_, i) => planFaultRun(seed, i + 1, calibration));
}

/** The workspace path a workspace_tampered fault overwrites: a move's destination, else the intent's path; null when the point gave none. */
export function tamperTargetOf(reached: FaultReached): string | null {
  const { op, path: from, to_path: to } = reached.context;
  const target = op === 'move' && typeof to === 'string' ? to : from;
  return typeof target === 'string' ? target : null;
}

/**
 * The call timeout of a stall_model run's model (its `--model-timeout-ms`, signed into the
 * manifest with the model choice): the loopback server answers in milliseconds, so only the
 * stall makes a call last this long.
 */
export const STALL_MODEL_CALL_TIMEOUT_MS = 3_000;

/**
 * The timeout that waits for the process a stall kind holds: the writer's callers wait the writer
 * request timeout; the controller waits for a wake the wake answer timeout plus the wake's
 * model-call budget — for the reference policy, which has no call timeout, the retry backoffs
 * alone (controller/instance-processes.ts modelCallBudgetMs); the runtime waits for the model
 * server its call's timeout (a timeout is never retried: runtime/model-adapters/openai-adapter.ts).
 */
export function stalledCallersTimeoutMs(kind: FaultKind, prereg: LockablePreRegistration): number {
  switch (kind) {
    case 'stall_writer':
      return writerRequestTimeoutMsOf(prereg);
    case 'stall_runtime':
      return wakeAnswerTimeoutMsOf(prereg) + prereg.model_calls.transport_retry.backoff_ms.reduce((sum, ms) => sum + ms, 0);
    case 'stall_model':
      return STALL_MODEL_CALL_TIMEOUT_MS;
    default:
      throw new FaultPlanError(`${kind} is not a stall kind`);
  }
}
