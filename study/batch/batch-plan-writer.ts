// `npm run study -- --plan-only --out STUDY` (issue 18 item 1): a study's plan as a file, for a
// batch scheduler to run one block per array index (issue 31: replicate k+1's A, B and C in one
// task). Everything a one-machine study checks before it starts is checked here (the key, the
// pre-registration's lock, the bounds, and the model against the plan: the same check before hour
// 0, for a model that calls a server), then study.json 1.4.0 is written with its batch block
// (study-contract/batch-plan.ts), its cost (time and tokens from that check) and signed; nothing runs.
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ControllerKey } from '../../controller/key-store.js';
import type { ModelChoice } from '../../design/model-choice.js';
import { publishFile } from '../../foundation/publish-file.js';
import { BATCH_FILES, BATCH_SIGNATURE_PAYLOAD_TYPE, BatchPlanError, blockRange, MAX_ALLOWED_KEYS, plannedReplicates, type BatchBlock, type SignedStudyFile } from '../../study-contract/batch-plan.js';
import { STUDY_FILES, StudyError, StudyPlan } from '../../study-contract/study-folder.js';
import { signDsse } from '../../schema/dsse.js';
import { parsePublicKeyHex, toHex } from '../../schema/ed25519-keys.js';
import { hashText } from '../../schema/hash.js';
import { checkNewStudyFolder, makeFolder, removeMadeFolders } from '../study-folder-setup.js';
import { checkedNewStudyPlan } from '../new-study-plan.js';
import { notPredictedReason, planCostOf } from '../plan-cost.js';
import { checkStudyModel } from '../study-model-check.js';
import { copyScenarioInto, plannedWithScenario, removeScenarioCopy } from '../study-scenario.js';

export interface BatchPlanOptions {
  readonly outDir: string;
  readonly seed: string;
  readonly preregFile: string;
  readonly keyDir: string;
  readonly n: number | null;
  readonly startAt: string;
  readonly model: ModelChoice;
  readonly studyId: string;
  readonly sameUid: string | null;
  /** Public key files (controller.pub form) of further keys allowed to sign instances: one per node. */
  readonly allowKeyFiles: readonly string[];
  /** --exploratory's reason (study/plan-validity.ts); absent or null: the plan follows its pre-registration. */
  readonly exploratory?: string | null;
  /** The scenario folders by id (the checkout's), and the scenario folder given (--scenario DIR): copied into the study folder (issue 35). */
  readonly scenariosDir: string;
  readonly scenarioDir?: string | undefined;
  /** Where the model check before hour 0 says what it measured (the plan's log; [study] lines). */
  readonly log: (line: string) => void;
}

/**
 * The blocks a batch study's predicted round 1 assumes at once, and why: the scheduler decides
 * (Slurm: the array's %K), so the plan cannot know; an instance's figures hold whatever it is.
 */
export const BATCH_BLOCKS_AT_ONCE = 1;
const BATCH_BLOCKS_AT_ONCE_SOURCE = "assumed: a batch study's blocks at once are the scheduler's (Slurm: the array's %K), unknown at plan time; with K blocks at once round 1 takes about this ÷ K, as far as the server's parallel slots allow; an instance's time and tokens hold whatever K";

export interface WrittenBatchPlan {
  readonly plan: StudyPlan;
  readonly batch: BatchBlock;
  readonly studyFile: string;
  /** Round 1's blocks as sbatch --array takes them: 0-(n-1). */
  readonly array: string;
}

/** The public keys of --allow-key files, each a controller.pub; a file that is none is misuse. */
function allowedKeysOf(files: readonly string[], planner: ControllerKey): string[] {
  if (files.length + 1 > MAX_ALLOWED_KEYS) throw new BatchPlanError('plan_untrusted', `${files.length} --allow-key files: a plan allows at most ${MAX_ALLOWED_KEYS} keys`);
  const keys = [toHex(planner.keys.publicKey)];
  for (const file of files) {
    let hex: string;
    try {
      hex = toHex(parsePublicKeyHex(readFileSync(file, 'utf8')));
    } catch (error) {
      throw new BatchPlanError('plan_untrusted', `--allow-key ${file} is not a controller public key (a controller.pub: 64 hex digits; ${error instanceof Error ? error.message : String(error)}); nothing was written`);
    }
    if (!keys.includes(hex)) keys.push(hex);
  }
  return keys;
}

/** Signs a study file's exact bytes with the planner key, beside it (never replacing a signature). */
export function signStudyFile(studyDir: string, file: string, signatureFile: string, studyId: string, key: ControllerKey): void {
  const body: SignedStudyFile = { file, sha256: hashText(readFileSync(path.join(studyDir, file))), study_id: studyId };
  const envelope = signDsse(BATCH_SIGNATURE_PAYLOAD_TYPE, body, key.keys.secretKey, key.keys.publicKey);
  if (!publishFile(path.join(studyDir, signatureFile), `${JSON.stringify(envelope, null, 2)}\n`, 0o644)) throw new StudyError('out_not_empty', `${path.join(studyDir, signatureFile)} appeared while planning: another process writes this study; nothing of this plan was signed`);
}

export async function writeBatchPlan(options: BatchPlanOptions): Promise<WrittenBatchPlan> {
  const outDir = path.resolve(options.outDir);
  checkNewStudyFolder(outDir);
  const checked = checkedNewStudyPlan({
    ...options,
    // A batch study has no concurrency of its own: the scheduler decides how many tasks run at once.
    concurrency: 1,
    batch: (nInitial, planner) => ({ instances: plannedReplicates(options.seed, 1, nInitial, 1), allowed_keys: allowedKeysOf(options.allowKeyFiles, planner), planner_key: toHex(planner.keys.publicKey) }),
  });
  const { key, prereg } = checked;
  // The scenario every task starts from: refused before anything is written, then copied into the study folder (a node needs that folder and the code) and pinned by the signed plan.
  const { plan: pinned, scenario } = plannedWithScenario(checked.plan, options, prereg.scenario.id);
  // The model against the plan, as a one-machine study checks it, before anything is written: a refusal leaves the folder as it was.
  const check = await checkStudyModel(pinned, prereg, scenario, { concurrency: BATCH_BLOCKS_AT_ONCE, log: options.log });
  // What it will cost (issue 35 item 2): counted from the plan; time and tokens at the check's measured speed.
  const prediction = check === null ? notPredictedReason(pinned.model) : { check, concurrency: BATCH_BLOCKS_AT_ONCE, concurrencySource: BATCH_BLOCKS_AT_ONCE_SOURCE };
  const plan = StudyPlan.parse({ ...pinned, cost: planCostOf(pinned, prereg, prediction) });
  const batch = plan.batch!;
  const instancesDir = path.join(outDir, STUDY_FILES.instances);
  const made = makeFolder(instancesDir);
  const studyFile = path.join(outDir, STUDY_FILES.plan);
  let wrote = false;
  copyScenarioInto(outDir, scenario, () => removeMadeFolders(made, instancesDir));
  try {
    writeFileSync(studyFile, `${JSON.stringify(plan, null, 2)}\n`, { flag: 'wx' });
    wrote = true;
    signStudyFile(outDir, STUDY_FILES.plan, BATCH_FILES.signature, plan.study_id, key);
  } catch (error) {
    // A refused plan leaves nothing behind: an unsigned study.json would only be refused later.
    if (wrote) unlinkSync(studyFile);
    removeScenarioCopy(outDir);
    removeMadeFolders(made, instancesDir);
    throw new StudyError('out_unwritable', `cannot write the plan ${studyFile} (${error instanceof Error ? error.message : String(error)}); nothing of the plan was left behind`);
  }
  return { plan, batch, studyFile, array: blockRange(batch.instances) };
}
