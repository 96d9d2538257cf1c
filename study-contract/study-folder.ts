// The study folder's contract (what npm run study writes and every later step reads: scoring,
// --recompute, --resume, the blind-review export): its file names and study.json. A room of its
// own below the oracle and the review (docs/architecture.md), so they read a study without the room
// that runs one.
//   <study>/study.json                 what the study was started with (StudyPlan): everything
//                                      `npm run study -- --resume` needs to finish it
//   <study>/scenario/                  the scenario as planned (scenario.json, workspace/; issue 35),
//                                      copied at plan time: every instance of the study, on any node,
//                                      starts from it; a study planned before has none (the checkout's)
//   <study>/instances/<G>-r<k>/        one run folder per instance
//   <study>/report.json, report.md, report.html
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ModelChoice } from '../design/model-choice.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import { BatchBlock } from './batch-plan.js';
import { Exploratory } from './exploratory.js';
import { PlanCost } from './plan-cost.js';
import { HashString } from '../schema/hash.js';

export const STUDY_FILES = { plan: 'study.json', scenario: 'scenario', instances: 'instances', blocks: 'blocks', json: 'report.json', markdown: 'report.md', html: 'report.html' } as const;
/** More instances than this in one study is refused (3 groups × at most 10,000 replicates; issue 18). */
export const MAX_STUDY_INSTANCES = 30_000;
/** The most replicates per group (MAX_STUDY_INSTANCES over the three groups). */
export const MAX_REPLICATES_PER_GROUP = MAX_STUDY_INSTANCES / 3;
/**
 * study.json is a few hundred bytes, a batch plan ~150 bytes an instance (4.5 MB at the limit);
 * a larger one is not ours (read whole, so bounded).
 */
const MAX_STUDY_PLAN_BYTES = 16 * 1024 * 1024;

/**
 * Written now. 1.3.0 (issue 31): the instances run as blocks (one replicate's A, B and C side by
 * side, in lockstep: controller/lockstep-block.ts), `concurrency` counts blocks, and blocks/ holds
 * each block's turns (block-turns.ts). 1.1.0 and 1.0.0 (before --resume) are still read: their
 * `concurrency` counts instances, and they have no record of blocks.
 */
export const STUDY_VERSION = '1.3.0';
/** One-machine study versions whose instances ran one by one, not as blocks. */
export const STUDY_VERSIONS_BEFORE_BLOCKS = ['1.0.0', '1.1.0'] as const;
/**
 * A study planned for a batch scheduler (--plan-only): 1.3.0 and its `batch` block (batch-plan.ts).
 * Written now, 1.4.0 (issue 31): one task runs one block (replicate k's A, B and C side by side in
 * lockstep, their turns recorded in blocks/ as a one-machine study's), so runsBlocks holds.
 */
export const BATCH_STUDY_VERSION = '1.4.0';
/**
 * Batch plans of before blocks (issue 18): one task per instance. Still read, merged and reported
 * (report 2.0.0); a task of one runs only where no model server is shared (docs/cluster.md).
 */
export const BATCH_STUDY_VERSIONS_BY_INSTANCE = ['1.2.0'] as const;
/** Every study_version that carries a `batch` block. */
export const BATCH_STUDY_VERSIONS: readonly string[] = [BATCH_STUDY_VERSION, ...BATCH_STUDY_VERSIONS_BY_INSTANCE];
/** Every study_version this build reads. */
const READ_STUDY_VERSIONS = [...STUDY_VERSIONS_BEFORE_BLOCKS, STUDY_VERSION, ...BATCH_STUDY_VERSIONS_BY_INSTANCE, BATCH_STUDY_VERSION] as const;

const StudyPlanFields = z.strictObject({
  study_version: z.enum(READ_STUDY_VERSIONS),
  study_id: z.string().min(1).max(128),
  seed: z.string().min(1).max(100),
  prereg_file: z.string(),
  prereg_sha256: z.string(),
  n_initial: z.number().int().min(1),
  n_expanded: z.number().int().min(1),
  /** What --resume runs with unless given --concurrency: blocks at once (1.3.0), instances at once (before; blockConcurrencyOf). */
  concurrency: z.number().int().min(1),
  start_at: z.iso.datetime(),
  model: ModelChoice,
  started_at: z.iso.datetime(),
  /**
   * 1.1.0: the controller's key folder the study was started with (a path; the key never leaves
   * it), the default --key-dir of --resume. Absent in 1.0.0: the default key folder.
   */
  key_dir: z.string().min(1).max(4096).optional(),
  /** 1.1.0: the --same-uid reason the study was started with (null: none), kept by --resume. Absent in 1.0.0: none. */
  same_uid: z.string().min(1).max(1000).nullable().optional(),
  /**
   * The hash of the scenario the study was planned with (issue 35), the one its copy in
   * STUDY_FILES.scenario must still have when an instance starts. Absent in studies planned before.
   */
  scenario_hash: HashString.optional(),
  /** Batch plans only (1.2.0, 1.4.0): the instances by index, the keys allowed to sign them, the planner's key. */
  batch: BatchBlock.optional(),
  /** Issue 35: the study knowingly departs from its pre-registration (--exploratory), and how; absent: it follows it. */
  exploratory: Exploratory.optional(),
  /** Issue 35: what the plan said it would cost when it was made (plan-cost.ts); absent in plans made before. */
  cost: PlanCost.optional(),
});
export const StudyPlan = StudyPlanFields.refine((p) => (p.batch !== undefined) === BATCH_STUDY_VERSIONS.includes(p.study_version), {
  message: `a batch block belongs to study_version ${BATCH_STUDY_VERSIONS.join(' or ')}, and each of them has one`,
  path: ['batch'],
});
export type StudyPlan = z.infer<typeof StudyPlan>;

/**
 * Why a study is refused or cannot go on. The folder is left as it was unless the message says
 * otherwise. `code` is stable (docs/errors.md): exit 1, except the folder codes that name a
 * path of the wrong kind (STUDY_PATH_CODES), which are misuse (exit 2).
 */
export type StudyErrorCode =
  /** The pre-registration is not locked, changed, or gone. */
  | 'prereg_refused'
  /** study.json is there but not a study plan this build reads. */
  | 'plan_unreadable'
  /** The study's instance folders are not what its study.json and its rule allow. */
  | 'folder_changed'
  /** A bound of the study (instances, concurrency) or a value of its plan is out of range. */
  | 'out_of_bounds'
  /** Another process is running the study now (a writer holds one of its stores). */
  | 'in_use'
  /** The folder names no study (no study.json). */
  | 'not_a_study'
  /** --out names a file, or runs through one. */
  | 'out_is_a_file'
  /** --out names a non-empty folder (a study or not). */
  | 'out_not_empty'
  /** The study folder could not be made. */
  | 'out_unwritable'
  /** The study was planned for a batch scheduler (--plan-only): --resume does not run it. */
  | 'batch_study'
  /** The plan cannot give a valid verdict under its pre-registration (n, passing rows) and does not say it is exploratory, or says so without departing. */
  | 'plan_departs';

/** The codes that name a path of the wrong kind: the caller misused the command (exit 2). */
export const STUDY_PATH_CODES: ReadonlySet<StudyErrorCode> = new Set(['not_a_study', 'out_is_a_file', 'out_not_empty', 'batch_study']);

export class StudyError extends CodedErrorOf<StudyErrorCode>('study', EXIT_CODES.failed) {
  override readonly name = 'StudyError';
}

/** Whether the study runs its instances as blocks (every study planned since issue 31, on one machine or a batch scheduler). */
export function runsBlocks(plan: StudyPlan): boolean {
  return !(STUDY_VERSIONS_BEFORE_BLOCKS as readonly string[]).includes(plan.study_version) && !(BATCH_STUDY_VERSIONS_BY_INSTANCE as readonly string[]).includes(plan.study_version);
}

/** The blocks a study runs at once: its concurrency, or for a study planned before blocks its instances at once in whole blocks (at least one). */
export function blockConcurrencyOf(plan: StudyPlan): number {
  return runsBlocks(plan) ? plan.concurrency : Math.max(1, Math.floor(plan.concurrency / 3));
}

export function readStudyPlan(outDir: string): StudyPlan {
  const file = path.join(outDir, STUDY_FILES.plan);
  if (!existsSync(file)) throw new StudyError('not_a_study', `${file} is missing: ${outDir} is not a study folder of npm run study`);
  let text: string;
  try {
    const bytes = readFileSync(file);
    if (bytes.length > MAX_STUDY_PLAN_BYTES) throw new StudyError('plan_unreadable', `${file} is ${bytes.length} bytes, over the ${MAX_STUDY_PLAN_BYTES} a study plan takes: not a study.json of npm run study; nothing was changed`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof StudyError) throw error;
    throw new StudyError('plan_unreadable', `${file} cannot be read (${error instanceof Error ? error.message : String(error)}); nothing was changed`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new StudyError('plan_unreadable', `${file} is not JSON (${error instanceof Error ? error.message : String(error)}): damaged or not written by npm run study; nothing was changed`);
  }
  const parsed = StudyPlan.safeParse(raw);
  if (!parsed.success) throw new StudyError('plan_unreadable', `${file} is not a study plan this build reads (study_version ${JSON.stringify((raw as { study_version?: unknown } | null)?.study_version ?? null)}; it reads ${READ_STUDY_VERSIONS.join(', ')}): ${z.prettifyError(parsed.error)}; nothing was changed`);
  return parsed.data;
}
