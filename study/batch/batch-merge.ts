// The merge of a batch study (issue 18 item 3): `npm run study -- --merge STUDY` trusts no folder.
// Every published instance folder is verified (chain, signed manifest and heads: writer's
// verifyDirectory; plan conformance: verification's checkPlansUnder) with the key it carries,
// which must be on the plan's allow-list — a folder signed by any other key is refused however
// self-consistent — and its signed manifest must be the plan's entry for its name (study, group,
// replicate, seed, pre-registration). Missing, stopped, running, failed, duplicated and foreign
// folders are listed; only when every planned instance is there and sound is the report built,
// by the same code as --recompute (study-recompute.ts), so the two agree byte for byte. The folder
// checks run on worker threads (folder-check-pool.ts), and each worker scores the folder it has
// just verified with those results (never verifying it twice) and sends back only its compact
// record (study/instance-report-record.ts): the report is built from the records, so the merge
// never holds more than one instance's events per worker, however many instances there are.
// The expansion round (spec §6.2) is its own step (expandBatchStudy): it plans round 2 for every
// group, signed, only on a complete, sound round 1 — never only some.
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ControllerKey } from '../../controller/key-store.js';
import { EXIT_CODES, type ExitCode } from '../../foundation/exit-codes.js';
import { arrayRange, BATCH_FILES, BatchPlanError, EXPANSION_VERSION, indexRange, plannedReplicates, taskCommand, type ExpansionPlan, type PlannedInstance, type TaskUnit } from '../../study-contract/batch-plan.js';
import { MAX_STUDY_INSTANCES, STUDY_FILES, StudyError } from '../../study-contract/study-folder.js';
import { INSTANCE_DIR_RE, instanceDirName } from '../../study-contract/study-replicates.js';
import type { StudyReport } from '../../oracle/study-report.js';
import type { PreRegistration } from '../../design/prereg.js';
import { rebuildStudyReport, type ScoredFolders } from '../study-recompute.js';
import { ScoredFolder } from '../instance-report-record.js';
import { writeStudyReport } from '../study-runner.js';
import { readBatchPlan, type BatchPlan } from './batch-plan-reader.js';
import { signStudyFile } from './batch-plan-writer.js';
import { PUBLISHING_PREFIX } from './run-folder-publish.js';
import { checkFolders } from './folder-check-pool.js';
import type { FolderCheckInput, FolderCheckResult } from './instance-folder-check.js';
import { claimFile, readClaim, readTaskRecord } from './task-claim.js';
import { taskUnitOf } from './task-unit.js';

export const FINDING_KINDS = ['refused', 'duplicated', 'not_planned', 'missing', 'stopped', 'running', 'failed'] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];
/** Kinds that refuse the merge outright (exit 2): what is there is not what the plan allows. */
const REFUSING: ReadonlySet<FindingKind> = new Set(['refused', 'duplicated', 'not_planned']);
/** At most this many problems are named per instance folder; the count says the rest. */
const MAX_PROBLEMS_NAMED = 5;

export interface MergeFinding {
  readonly kind: FindingKind;
  /** The planned index (null: a folder the plan has no index for). */
  readonly index: number | null;
  readonly instance: string;
  readonly detail: string;
  /** The command that runs what is not done (null: nothing to rerun, the folder must be moved away). */
  readonly rerun: string | null;
}

export interface RoundCheck {
  readonly batchPlan: BatchPlan;
  readonly checked: readonly PlannedInstance[];
  readonly verified: number;
  readonly findings: readonly MergeFinding[];
  /** Leftovers of a publish a crash cut short (dot-folders): said, not data. */
  readonly leftovers: readonly string[];
  /** Each sound folder scored on the worker that verified it (its compact record), and the study's pre-registration as one of them carried it. */
  readonly scored: ScoredFolders;
  readonly verifyMs: number;
}

/** What is known of a planned instance that is not published: the task's record, its claim, its stopped copy. */
function notPublished(studyDir: string, entry: PlannedInstance, unit: TaskUnit): MergeFinding {
  const name = instanceDirName(entry.group, entry.replicate);
  const rerun = taskCommand(studyDir, unit, entry.index);
  const claim = readClaim(studyDir, entry.index);
  if (claim !== null) return { kind: 'running', index: entry.index, instance: name, detail: `claimed by task ${claim.task_id} on ${claim.host} since ${claim.since} (${claimFile(studyDir, entry.index)})`, rerun: null };
  const record = readTaskRecord(studyDir, entry.index);
  if (existsSync(path.join(studyDir, BATCH_FILES.stopped, name))) return { kind: 'stopped', index: entry.index, instance: name, detail: `stopped${record?.detail ? ` (${record.detail})` : ''}: resumable`, rerun };
  if (record?.state === 'failed') return { kind: 'failed', index: entry.index, instance: name, detail: `its last task failed with exit ${record.exit_code}: ${record.detail ?? 'no detail'}`, rerun };
  return { kind: 'missing', index: entry.index, instance: name, detail: record === null ? 'never run' : `its last task recorded ${record.state} but published nothing`, rerun };
}

/** Verifies every published folder of the planned rounds (`rounds`: 1, or 1 and 2) and lists what is not done. */
export async function checkRounds(studyDir: string, trustedKey: Uint8Array, scenariosDir: string, rounds: 'round 1' | 'planned', log: (line: string) => void, options: { readonly scoreRefused?: boolean } = {}): Promise<RoundCheck> {
  const started = Date.now();
  const batchPlan = readBatchPlan(studyDir, trustedKey);
  const dir = batchPlan.studyDir;
  const checked = rounds === 'round 1' ? batchPlan.batch.instances : batchPlan.instances;
  const planned = new Map(batchPlan.instances.map((e) => [instanceDirName(e.group, e.replicate), e]));
  const inScope = new Set(checked.map((e) => instanceDirName(e.group, e.replicate)));
  const instancesDir = path.join(dir, STUDY_FILES.instances);
  const names = existsSync(instancesDir) ? readdirSync(instancesDir) : [];
  if (names.length > MAX_STUDY_INSTANCES * 2) throw new StudyError('folder_changed', `${instancesDir} holds ${names.length} entries, over twice the ${MAX_STUDY_INSTANCES} instances a study runs: not a study folder the merge reads; nothing was changed`);
  const findings: MergeFinding[] = [];
  const leftovers: string[] = [];
  const published = new Set<string>();
  const inputs: FolderCheckInput[] = [];
  for (const name of [...names].sort()) {
    const full = path.join(instancesDir, name);
    if (name.startsWith(PUBLISHING_PREFIX)) {
      leftovers.push(full);
      continue;
    }
    const entry = planned.get(name);
    if (entry === undefined || !INSTANCE_DIR_RE.test(name)) {
      findings.push({ kind: 'not_planned', index: null, instance: name, detail: `${full} is no instance of the plan (it plans indices ${indexRange(batchPlan.instances)}, named ${[...planned.keys()].slice(0, 3).join(', ')}…): move it away`, rerun: null });
      continue;
    }
    if (!inScope.has(name)) continue; // round 2, checked when the final merge comes
    published.add(name);
    if (!statSync(full).isDirectory()) {
      findings.push({ kind: 'refused', index: entry.index, instance: name, detail: `${full} is a file, not a run folder`, rerun: null });
      continue;
    }
    inputs.push({ dir: full, entry, studyId: batchPlan.plan.study_id, preregSha256: batchPlan.plan.prereg_sha256, sameUid: Boolean(batchPlan.plan.same_uid), allowedKeys: batchPlan.batch.allowed_keys, scenariosDir, scoreRefused: options.scoreRefused ?? false });
  }
  log(`[merge] verifying and scoring ${inputs.length} instance folder(s) against the plan`);
  let prereg: PreRegistration | null = null;
  // One pre-registration is kept (the study's, as the first folder under it carried it); every record is checked against its schema as it crosses from the worker.
  const keep = (r: FolderCheckResult): FolderCheckResult => {
    if (prereg === null && r.prereg !== null && r.scored?.record?.prereg_sha256 === batchPlan.plan.prereg_sha256) prereg = r.prereg;
    return { ...r, scored: r.scored === null ? null : ScoredFolder.parse(r.scored), prereg: null };
  };
  const results = await checkFolders(inputs, keep);
  const seen = new Map<string, string>();
  const byDir = new Map<string, ScoredFolder>();
  let verified = 0;
  for (let i = 0; i < results.length; i += 1) {
    const { entry, dir: full } = inputs[i]!;
    const result = results[i]!;
    const name = instanceDirName(entry.group, entry.replicate);
    const duplicateOf = result.identity === null ? null : (seen.get(result.identity) ?? null);
    if (result.identity !== null && duplicateOf === null) seen.set(result.identity, name);
    if (duplicateOf !== null) findings.push({ kind: 'duplicated', index: entry.index, instance: name, detail: `${full} is the same run as ${duplicateOf} (same experiment and instance id): a copy, not an instance of its own; move it away and run index ${entry.index}`, rerun: null });
    if (result.problems.length > 0) {
      const named = result.problems.slice(0, MAX_PROBLEMS_NAMED).join('; ');
      findings.push({ kind: 'refused', index: entry.index, instance: name, detail: `${full} does not verify against the plan: ${named}${result.problems.length > MAX_PROBLEMS_NAMED ? `; … ${result.problems.length - MAX_PROBLEMS_NAMED} more` : ''}. Nothing was changed; move it away and run index ${entry.index} again`, rerun: null });
    } else if (duplicateOf === null) verified += 1;
    if (result.dir !== full) throw new Error(`the check of ${full} answered for ${result.dir}: a broken folder-check worker`);
    if (result.scored !== null) byDir.set(full, result.scored);
  }
  const unit = taskUnitOf(batchPlan.plan);
  for (const entry of checked) if (!published.has(instanceDirName(entry.group, entry.replicate))) findings.push(notPublished(dir, entry, unit));
  return { batchPlan, checked, verified, findings, leftovers, scored: { byDir, prereg }, verifyMs: Date.now() - started };
}

export interface MergeOutcome {
  readonly check: RoundCheck;
  /** What the rule says about round 2, as far as the merge got. */
  readonly expansion: 'not_applicable' | 'not_triggered' | 'pending' | 'planned';
  readonly report: StudyReport | null;
  readonly files: { readonly json: string; readonly markdown: string; readonly html: string } | null;
  readonly exitCode: ExitCode;
  readonly reportMs: number;
  readonly lines: readonly string[];
}

function refusing(check: RoundCheck): boolean {
  return check.findings.some((f) => REFUSING.has(f.kind));
}

export async function mergeBatchStudy(studyDir: string, trustedKey: Uint8Array, scenariosDir: string, log: (line: string) => void): Promise<MergeOutcome> {
  const check = await checkRounds(studyDir, trustedKey, scenariosDir, 'planned', log);
  const dir = check.batchPlan.studyDir;
  const none = { report: null, files: null, reportMs: 0 };
  if (refusing(check)) return { check, expansion: 'not_applicable', ...none, exitCode: EXIT_CODES.misused, lines: [`REFUSED: ${check.findings.filter((f) => REFUSING.has(f.kind)).length} folder(s) of ${dir} are not what the plan allows (above); no report was written and nothing was changed`] };
  const roundOneDone = check.findings.every((f) => f.index !== null && f.index >= check.batchPlan.batch.instances.length);
  if (check.findings.length > 0 && check.batchPlan.expansion !== null && roundOneDone) {
    // A round 2 is planned and round 1 is whole: the rule must call for it before anyone waits for it.
    const decided = rebuildStudyReport(dir, scenariosDir, check.scored).expansion;
    if (decided !== null && !decided.expand) {
      throw new BatchPlanError('expansion_refused', `${path.join(dir, BATCH_FILES.expansion)} plans round 2, but the pre-registered rule does not expand on round 1 (${decided.reasons.join('; ')}): a round 2 it does not call for; no report was written and nothing was changed`);
    }
  }
  if (check.findings.length > 0) return { check, expansion: 'not_applicable', ...none, exitCode: EXIT_CODES.stopped, lines: [`NOT COMPLETE: ${check.findings.length} of ${check.checked.length} planned instance(s) are not published (above, each with the command that runs it); no report was written. Then merge again: npm run study -- --merge ${dir}`] };
  const started = Date.now();
  const rebuilt = rebuildStudyReport(dir, scenariosDir, check.scored);
  const planned = check.batchPlan.expansion !== null;
  if (rebuilt.expansion?.expand === true && !planned) {
    return { check, expansion: 'pending', ...none, reportMs: Date.now() - started, exitCode: EXIT_CODES.stopped, lines: [`ROUND 1 DONE: the pre-registered rule expands every group from n = ${check.batchPlan.plan.n_initial} to n = ${check.batchPlan.plan.n_expanded} (${rebuilt.expansion.reasons.join('; ')}); plan round 2 with npm run study -- --expand ${dir}, run its tasks, then merge again; no report was written`] };
  }
  const files = writeStudyReport(dir, rebuilt.report);
  const exitCode = rebuilt.report.voided || rebuilt.report.verdict === 'insufficient evidence' ? EXIT_CODES.notEvidence : EXIT_CODES.ok;
  return { check, expansion: planned ? 'planned' : rebuilt.expansion === null ? 'not_applicable' : 'not_triggered', report: rebuilt.report, files, reportMs: Date.now() - started, exitCode, lines: [] };
}

export interface ExpandOutcome {
  readonly check: RoundCheck;
  readonly expand: boolean;
  readonly alreadyPlanned: boolean;
  /** What round 2's array indices name: blocks (a plan that runs blocks) or instances. */
  readonly unit: TaskUnit;
  /** Round 2's array, in the plan's unit (null: no round 2). */
  readonly array: string | null;
  readonly reasons: readonly string[];
  readonly exitCode: ExitCode;
  readonly lines: readonly string[];
}

/** Decides the expansion rule on a complete, sound round 1 and, when it expands, plans round 2 for every group. */
export async function expandBatchStudy(studyDir: string, key: ControllerKey, scenariosDir: string, log: (line: string) => void): Promise<ExpandOutcome> {
  const check = await checkRounds(studyDir, key.keys.publicKey, scenariosDir, 'round 1', log);
  const { batchPlan } = check;
  const dir = batchPlan.studyDir;
  const unit = taskUnitOf(batchPlan.plan);
  const arrayOf = (instances: readonly PlannedInstance[]): string => `${unit === 'block' ? `blocks ${arrayRange(instances, unit)} (instance indices ${indexRange(instances)})` : `indices ${indexRange(instances)}`}`;
  if (batchPlan.expansion !== null) return { check, expand: true, alreadyPlanned: true, unit, array: arrayRange(batchPlan.expansion.instances, unit), reasons: batchPlan.expansion.reasons, exitCode: EXIT_CODES.ok, lines: [`round 2 is planned already (${BATCH_FILES.expansion}): ${arrayOf(batchPlan.expansion.instances)}`] };
  if (refusing(check)) return { check, expand: false, alreadyPlanned: false, unit, array: null, reasons: [], exitCode: EXIT_CODES.misused, lines: [`REFUSED: round 1 of ${dir} holds folders the plan does not allow (above); the rule was not decided and nothing was written`] };
  if (check.findings.length > 0) return { check, expand: false, alreadyPlanned: false, unit, array: null, reasons: [], exitCode: EXIT_CODES.stopped, lines: [`NOT COMPLETE: ${check.findings.length} instance(s) of round 1 are not published (above); the rule is decided on a complete round 1 only`] };
  const rebuilt = rebuildStudyReport(dir, scenariosDir, check.scored);
  if (rebuilt.expansion === null || !rebuilt.expansion.expand) {
    const reasons = rebuilt.expansion?.reasons ?? [`n = ${batchPlan.plan.n_initial} already reaches the expanded n: the rule has nothing to add`];
    return { check, expand: false, alreadyPlanned: false, unit, array: null, reasons, exitCode: EXIT_CODES.ok, lines: [`NOT EXPANDED: ${reasons.join('; ')}; the study is merged with npm run study -- --merge ${dir}`] };
  }
  const instances = plannedReplicates(batchPlan.plan.seed, batchPlan.plan.n_initial + 1, batchPlan.plan.n_expanded, 2);
  const expansion: ExpansionPlan = { expansion_version: EXPANSION_VERSION, study_id: batchPlan.plan.study_id, study_sha256: batchPlan.sha256 as ExpansionPlan['study_sha256'], n_from: batchPlan.plan.n_initial, n_to: batchPlan.plan.n_expanded, reasons: [...rebuilt.expansion.reasons], decided_at: new Date().toISOString(), instances };
  writeFileSync(path.join(dir, BATCH_FILES.expansion), `${JSON.stringify(expansion, null, 2)}\n`, { flag: 'wx' });
  signStudyFile(dir, BATCH_FILES.expansion, BATCH_FILES.expansionSignature, batchPlan.plan.study_id, key);
  return { check, expand: true, alreadyPlanned: false, unit, array: arrayRange(instances, unit), reasons: expansion.reasons, exitCode: EXIT_CODES.ok, lines: [`EXPANDED: round 2 planned for every group, n = ${expansion.n_from} → ${expansion.n_to}: ${arrayOf(instances)} (${BATCH_FILES.expansion}, signed); run ${unit === 'block' ? 'each block' : 'each index'} as a task (${taskCommand(dir, unit, instances[0]!.index)}, …), then npm run study -- --merge ${dir}`] };
}
