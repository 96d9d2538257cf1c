// A study planned for a batch scheduler (issue 18; DESIGN §12 "Beyond one machine"): study.json
// with a `batch` block, signed, so that any scheduler (Slurm job arrays, Kubernetes Indexed Jobs)
// runs one task per array index and a merge step that trusts no folder can hold every folder to
// it. The task's unit (issue 31; DESIGN §12 "Blocks under real load"): in a 1.4.0 plan one
// **block** — array index k runs replicate k+1's A, B and C (instance indices 3k … 3k+2) side by
// side in lockstep in one task, its turns recorded in blocks/r<k+1>.jsonl — in a 1.2.0 plan (before
// blocks) one instance. Instance indices keep their meaning in both: the plan's entries, the
// claims, the task records, the published folders. Part of the study folder's contract (study-folder.ts):
//   <study>/study.json               the StudyPlan with `batch`: every instance of round 1 by index,
//                                    the controller keys allowed to sign an instance, the planner key
//   <study>/study.sig.dsse.json      DSSE by the planner key over study.json's exact bytes (sha256):
//                                    a plan edited after it was written no longer verifies
//   <study>/expansion.json (+ .sig)  round 2 for every group, written only by `--expand` once the
//                                    pre-registered rule (spec §6.2) was decided on a complete round 1
//   <study>/tasks/<index>.claim      held by the task running that index (who, where, since when)
//   <study>/tasks/<index>.json       what the last task of that index did (TaskRecord)
//   <study>/stopped/<G>-r<k>/        a stopped instance's closed run folder, so a requeue on any node resumes it
//   <study>/instances/<G>-r<k>/      a sealed instance's run folder, published whole (copied, then renamed)
//   <study>/blocks/r<k>.jsonl        1.4.0: block k-1's turns, appended by its task (block-turns.ts)
// Index i is replicate floor(i/3)+1 of group A, B, C[i mod 3]: replicate-major, so round 2 continues
// the numbering and an array range is a set of whole replicates.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import { verifyDsse } from '../schema/dsse.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { hashText, HashString } from '../schema/hash.js';
import { GROUPS, type Group } from '../design/groups.js';
import { replicateSeed } from './study-replicates.js';

export const BATCH_FILES = {
  signature: 'study.sig.dsse.json',
  expansion: 'expansion.json',
  expansionSignature: 'expansion.sig.dsse.json',
  tasks: 'tasks',
  stopped: 'stopped',
} as const;

/** What a batch plan's signatures sign: the file's name and the sha256 of its exact bytes. */
export const BATCH_SIGNATURE_PAYLOAD_TYPE = 'application/vnd.digital-subject.study-file+json';
export const SignedStudyFile = z.strictObject({ file: z.string().min(1).max(64), sha256: HashString, study_id: z.string().min(1).max(128) });
export type SignedStudyFile = z.infer<typeof SignedStudyFile>;

/** The most keys a plan allows to sign its instances (one shared key, or one per node). */
export const MAX_ALLOWED_KEYS = 1024;
const PublicKeyHex = z.string().regex(/^[0-9a-f]{64}$/, 'expected a public key as 64 lowercase hex digits');

export const PlannedInstance = z.strictObject({
  index: z.number().int().min(0),
  group: z.enum(GROUPS),
  replicate: z.number().int().min(1),
  seed: z.string().min(1).max(120),
  /** 1: planned with the study; 2: added by the expansion rule, for every group. */
  round: z.union([z.literal(1), z.literal(2)]),
});
export type PlannedInstance = z.infer<typeof PlannedInstance>;

export const BatchBlock = z.strictObject({
  /** Round 1, every index from 0 in order. */
  instances: z.array(PlannedInstance).min(GROUPS.length),
  /** Controller public keys whose signatures the merge accepts on an instance (the planner's first). */
  allowed_keys: z.array(PublicKeyHex).min(1).max(MAX_ALLOWED_KEYS),
  /** The key that signed study.json (and signs expansion.json). */
  planner_key: PublicKeyHex,
});
export type BatchBlock = z.infer<typeof BatchBlock>;

export const EXPANSION_VERSION = '1.0.0';
export const ExpansionPlan = z.strictObject({
  expansion_version: z.literal(EXPANSION_VERSION),
  study_id: z.string().min(1).max(128),
  /** sha256 of study.json's bytes: the plan this round expands. */
  study_sha256: HashString,
  n_from: z.number().int().min(1),
  n_to: z.number().int().min(2),
  /** The rule's reasons as decideExpansion gave them on round 1. */
  reasons: z.array(z.string().max(2000)).max(64),
  decided_at: z.iso.datetime(),
  instances: z.array(PlannedInstance).min(GROUPS.length),
});
export type ExpansionPlan = z.infer<typeof ExpansionPlan>;

export function instanceIndex(group: Group, replicate: number): number {
  return (replicate - 1) * GROUPS.length + GROUPS.indexOf(group);
}

/** Every instance of replicates from..to (1-based, inclusive), in index order. */
export function plannedReplicates(studySeed: string, fromReplicate: number, toReplicate: number, round: 1 | 2): PlannedInstance[] {
  const out: PlannedInstance[] = [];
  for (let r = fromReplicate; r <= toReplicate; r += 1) for (const group of GROUPS) out.push({ index: instanceIndex(group, r), group, replicate: r, seed: replicateSeed(studySeed, r), round });
  return out;
}

/** An array range of indices, as sbatch --array and a person read it: "0-8". */
export function indexRange(instances: readonly PlannedInstance[]): string {
  return rangeText(instances[0]!.index, instances[instances.length - 1]!.index);
}

/** What one task of a batch plan runs: a block (1.4.0) or an instance (1.2.0, before blocks). */
export type TaskUnit = 'block' | 'instance';

/** The members of a block: one instance of each group. */
export const BLOCK_MEMBERS = GROUPS.length;

/** The block (0-based, the array index of its task) an instance index belongs to: replicate ⌊i/3⌋+1. */
export function blockOfIndex(index: number): number {
  return Math.floor(index / BLOCK_MEMBERS);
}

/** The array range of the blocks that hold these instances (whole replicates, in order): "0-2". */
export function blockRange(instances: readonly PlannedInstance[]): string {
  return rangeText(blockOfIndex(instances[0]!.index), blockOfIndex(instances[instances.length - 1]!.index));
}

/** The array range of these instances' tasks in the plan's unit. */
export function arrayRange(instances: readonly PlannedInstance[], unit: TaskUnit): string {
  return unit === 'block' ? blockRange(instances) : indexRange(instances);
}

function rangeText(first: number, last: number): string {
  return first === last ? `${first}` : `${first}-${last}`;
}

/** The command a task of the plan's unit runs for instance `index` (the rerun advice of --status and --merge). */
export function taskCommand(studyDir: string, unit: TaskUnit, index: number): string {
  return unit === 'block' ? `npm run study -- --block ${blockOfIndex(index)} --out ${studyDir}` : `npm run study -- --instance ${index} --out ${studyDir}`;
}

/** Why a batch plan file is not one to run or merge: the message says what to do; exit 2 (never retry). */
export type BatchPlanErrorCode =
  /** study.json or expansion.json is not what its planner signed. */
  | 'plan_edited'
  /** A signature file is missing or damaged. */
  | 'plan_unsigned'
  /** study.json plans no batch (a one-machine study): run it with npm run study -- --resume. */
  | 'plan_not_batch'
  /** The plan is signed by another key than the one this step trusts, or the task's key is not on its allow-list. */
  | 'plan_untrusted'
  /** expansion.json does not follow from round 1, or is asked for when the rule does not expand. */
  | 'expansion_refused'
  /** The index names no instance of the plan (or of a round not yet planned). */
  | 'index_out_of_range'
  /** The pre-registration a task would run is not the plan's (another hash), or not locked by the task's key. */
  | 'prereg_refused'
  /** A folder is where the plan's published instance goes, and it is not a sealed run of the plan. */
  | 'published_folder_refused'
  /** --instance (or an instance's index) given for a plan whose tasks run blocks (1.4.0): the advice is its --block. */
  | 'plan_runs_blocks'
  /** --block given for a plan planned one instance per task (1.2.0, before blocks). */
  | 'plan_runs_instances'
  /** A task of one instance of a 1.2.0 plan whose model is a server or a machine's model the block would share: its block cannot be kept together. */
  | 'block_not_kept_together';

export class BatchPlanError extends CodedErrorOf<BatchPlanErrorCode>('batch_plan', EXIT_CODES.misused) {
  override readonly name = 'BatchPlanError';
}

/**
 * Checks a study file's signature file: the planner key signed exactly these bytes under this
 * name for this study. Returns the bytes' hash.
 */
export function checkSignedStudyFile(studyDir: string, file: string, signatureFile: string, studyId: string, plannerKeyHex: string): HashString {
  const full = path.join(studyDir, file);
  const sigFull = path.join(studyDir, signatureFile);
  if (!existsSync(sigFull)) throw new BatchPlanError('plan_unsigned', `${sigFull} is missing: ${file} carries no planner signature, so nothing can tell whether it was edited after it was written; plan the study again with --plan-only (nothing was run or changed)`);
  const sha256 = hashText(readFileSync(full));
  let envelope: unknown;
  try {
    envelope = JSON.parse(readFileSync(sigFull, 'utf8'));
  } catch (error) {
    throw new BatchPlanError('plan_unsigned', `${sigFull} is not JSON (${error instanceof Error ? error.message : String(error)}): damaged; plan the study again with --plan-only`);
  }
  const verified = verifyDsse(envelope, BATCH_SIGNATURE_PAYLOAD_TYPE, parsePublicKeyHex(plannerKeyHex));
  if (!verified.ok) throw new BatchPlanError('plan_edited', `${sigFull} does not verify with the planner key ${plannerKeyHex.slice(0, 16)}…: ${verified.reason}; the plan was re-signed or replaced, nothing was run or changed`);
  const signed = SignedStudyFile.safeParse(verified.body);
  if (!signed.success || signed.data.file !== file || signed.data.study_id !== studyId) throw new BatchPlanError('plan_edited', `${sigFull} signs ${JSON.stringify(verified.body)}, not ${file} of study ${studyId}: a signature of another file or study; nothing was run or changed`);
  if (signed.data.sha256 !== sha256) throw new BatchPlanError('plan_edited', `${full} hashes to ${sha256}, but its planner signed ${signed.data.sha256}: the file was edited after it was planned; put the planned file back (or plan anew with --plan-only); nothing was run or changed`);
  return sha256;
}

/** Holds a batch block to the plan it is part of: every index once, in order, seeded as the study's replicates. */
export function checkBatchInstances(instances: readonly PlannedInstance[], studySeed: string, fromReplicate: number, toReplicate: number, round: 1 | 2, where: string): void {
  const expected = plannedReplicates(studySeed, fromReplicate, toReplicate, round);
  if (instances.length !== expected.length) throw new BatchPlanError('plan_edited', `${where} lists ${instances.length} instances, but replicates ${fromReplicate}–${toReplicate} of groups ${GROUPS.join(', ')} are ${expected.length}: not a plan --plan-only or --expand writes`);
  for (let i = 0; i < expected.length; i += 1) {
    const want = expected[i]!;
    const got = instances[i]!;
    if (got.index !== want.index || got.group !== want.group || got.replicate !== want.replicate || got.seed !== want.seed || got.round !== want.round) {
      throw new BatchPlanError('plan_edited', `${where}: entry ${i} is ${JSON.stringify(got)}, the plan's rule makes it ${JSON.stringify(want)}`);
    }
  }
}
