// Finishing a stopped or interrupted study (`npm run study -- --resume DIR`, issue 16): from its
// study.json alone, with the key that started it, it keeps every sealed instance, resumes every
// stopped one and starts every one never started (study-runner.ts carries that out), then applies
// the expansion rule and writes the report exactly as an uninterrupted study would have. Refused,
// with nothing changed, while another process runs the study, or when the folder or the
// pre-registration changed since the start.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { resumeInstance, runNewInstance } from '../controller/instance-runner.js';
import { defaultKeyDir, loadOrCreateControllerKey } from '../controller/key-store.js';
import { readLockedPrereg } from '../design/prereg.js';
import { blockConcurrencyOf, MAX_STUDY_INSTANCES, readStudyPlan, runsBlocks, STUDY_FILES, StudyError } from '../study-contract/study-folder.js';
import { INSTANCE_DIR_RE } from '../study-contract/study-replicates.js';
import { GROUPS } from '../design/groups.js';
import { StudyReport } from '../oracle/study-report.js';
import { hashCanonical } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { openStoreReadOnly, StoreReadError } from '../writer/store-reader.js';
import { readSignedHeads } from '../writer/signed-files-check.js';
import { studyResumeCommand } from './study-folder-setup.js';
import { carryOut, MAX_STUDY_CONCURRENCY, type FoundInstance, type StudyOutcome, type StudyRunOptions } from './study-runner.js';

/** What `npm run study -- --resume DIR` may set; everything else comes from the folder's study.json. */
export interface ResumeStudyOptions extends StudyRunOptions {
  /** null: study.json's key_dir, else the default key folder. */
  readonly keyDir: string | null;
  /** Blocks at once; null: the concurrency the study was started with (study.json). */
  readonly concurrency: number | null;
}

/**
 * Sealed: its heads.jsonl holds a final head signed by this controller's key (the last thing a
 * finished instance writes). An empty folder is a start never begun (null). Anything else is
 * resumed — and a folder that is no run folder is refused by resumeInstance, with its reason,
 * so it is reported rather than skipped.
 */
function classifyInstance(dir: string, publicKey: Uint8Array): FoundInstance | null {
  try {
    if (!statSync(dir).isDirectory()) return 'resume';
    if (readdirSync(dir).length === 0) return null;
    const heads = path.join(dir, RUN_FILES.heads);
    if (existsSync(heads) && readSignedHeads(heads, publicKey).some((line) => line.head?.kind === 'final')) return 'sealed';
  } catch {
    // Unreadable: resumeInstance says why.
  }
  return 'resume';
}

/**
 * Whether a writer holds the instance's store now (it runs it in exclusive locking mode): then
 * another process is running the study, and a second one would fail every instance it holds
 * and overwrite that process's report. The probe reads only: a store no writer holds was
 * closed in rollback-journal mode, so a read-only open creates no side file.
 */
function heldByWriter(dir: string): boolean {
  const file = path.join(dir, RUN_FILES.store);
  if (!existsSync(file)) return false;
  try {
    openStoreReadOnly(file).close();
    return false;
  } catch (error) {
    return error instanceof StoreReadError && error.code === 'locked';
  }
}

export async function resumeStudy(options: ResumeStudyOptions): Promise<StudyOutcome> {
  const outDir = path.resolve(options.outDir);
  if (!existsSync(outDir)) throw new StudyError('not_a_study', `${outDir} does not exist: give the folder of a study that npm run study started`);
  if (!statSync(outDir).isDirectory()) throw new StudyError('not_a_study', `${outDir} is a file, not a study folder of npm run study; nothing was changed`);
  const plan = readStudyPlan(outDir);
  if (plan.batch !== undefined) throw new StudyError('batch_study', `${outDir} was planned for a batch scheduler (--plan-only): ${runsBlocks(plan) ? `its blocks run as tasks (npm run study -- --block K --out ${outDir})` : `its instances run as tasks (npm run study -- --instance K --out ${outDir})`}, and --merge ${outDir} builds its report; see what is not done with npm run study -- --status ${outDir}; nothing was changed`);
  // Blocks at once; a study planned before blocks counted instances (blockConcurrencyOf).
  const concurrency = options.concurrency ?? blockConcurrencyOf(plan);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_STUDY_CONCURRENCY) throw new StudyError('out_of_bounds', `concurrency must be a whole number from 1 to ${MAX_STUDY_CONCURRENCY}, got ${concurrency}${options.concurrency === null ? ` (from ${STUDY_FILES.plan}; give --concurrency K)` : ''}; nothing was changed`);
  if (plan.n_expanded < plan.n_initial || plan.n_expanded * GROUPS.length > MAX_STUDY_INSTANCES) throw new StudyError('plan_unreadable', `${path.join(outDir, STUDY_FILES.plan)} plans n = ${plan.n_initial} → ${plan.n_expanded} per group, which no study of npm run study runs; nothing was changed`);
  const keyDir = options.keyDir ?? plan.key_dir ?? defaultKeyDir();
  // Never a new key: a study's instances are signed by the key that started it.
  const key = loadOrCreateControllerKey(keyDir, { create: false });
  if (!existsSync(plan.prereg_file)) throw new StudyError('prereg_refused', `refusing to resume the study: its pre-registration ${plan.prereg_file} is gone; put it back (it hashes to ${plan.prereg_sha256}), with its lock; nothing was changed`);
  const locked = readLockedPrereg(plan.prereg_file, key.keys.publicKey);
  if (!locked.ok) throw new StudyError('prereg_refused', `refusing to resume the study: ${locked.check.failures.map((f) => f.message).join('; ')}; nothing was changed`);
  const { prereg } = locked;
  if (hashCanonical(prereg) !== plan.prereg_sha256) throw new StudyError('prereg_refused', `refusing to resume the study: ${plan.prereg_file} hashes to ${hashCanonical(prereg)}, not the ${plan.prereg_sha256} the study started under (it was changed, and locked again, since); nothing was changed`);

  const instancesDir = path.join(outDir, STUDY_FILES.instances);
  if (existsSync(instancesDir) && !statSync(instancesDir).isDirectory()) throw new StudyError('folder_changed', `${instancesDir} is a file, not the folder of the study's instances; nothing was changed`);
  const names = existsSync(instancesDir) ? readdirSync(instancesDir) : [];
  if (names.length > MAX_STUDY_INSTANCES * 2) throw new StudyError('folder_changed', `${instancesDir} holds ${names.length} entries, over the ${MAX_STUDY_INSTANCES} instances a study runs; nothing was changed`);
  const found = new Map<string, FoundInstance>();
  for (const name of names) {
    const m = INSTANCE_DIR_RE.exec(name);
    if (!m) continue; // not an instance: left alone, as --recompute does
    if (Number(m[2]) > plan.n_expanded) throw new StudyError('folder_changed', `${path.join(instancesDir, name)} is beyond the n = ${plan.n_expanded} per group the study plans: the folder was changed after the study started; nothing was changed`);
    const kind = classifyInstance(path.join(instancesDir, name), key.keys.publicKey);
    if (kind !== null) found.set(name, kind);
  }
  const held = [...found].filter(([name, kind]) => kind === 'resume' && heldByWriter(path.join(instancesDir, name))).map(([name]) => name);
  if (held.length > 0) throw new StudyError('in_use', `another process is running this study now (a writer holds the store of ${held.join(', ')}): this is safe and nothing was changed; wait for it to end (or stop it with Ctrl-C), then ${studyResumeCommand(outDir)}`);
  const beyondFirstRound = [...found.keys()].filter((name) => Number(INSTANCE_DIR_RE.exec(name)![2]) > plan.n_initial);
  const planned = GROUPS.length * plan.n_initial;
  const sealed = [...found.values()].filter((k) => k === 'sealed').length;
  const toResume = found.size - sealed;
  const firstRoundKnown = [...found.keys()].filter((name) => Number(INSTANCE_DIR_RE.exec(name)![2]) <= plan.n_initial).length;
  options.log(
    `[study] resuming ${plan.study_id} in ${outDir}: ${sealed} instance(s) sealed (kept as they are), ${toResume} stopped (resumed), ${planned - firstRoundKnown} of the first ${planned} never started (started now)` +
      (beyondFirstRound.length > 0 ? `; the expansion round to n = ${plan.n_expanded} had begun (${beyondFirstRound.length} of its ${GROUPS.length * (plan.n_expanded - plan.n_initial)} instance folders exist)` : ''),
  );
  return carryOut({
    plan,
    prereg,
    outDir,
    keyDir,
    scenariosDir: options.scenariosDir,
    concurrency,
    operator: options.operator,
    signal: options.signal,
    stopAtWakeEnd: options.stopAtWakeEnd,
    isolation: options.isolation ?? (plan.same_uid ? { forceSameUid: plan.same_uid } : undefined),
    log: options.log,
    onProgress: options.onProgress,
    start: options.runInstance ?? runNewInstance,
    resume: resumeInstance,
    found,
    stored: storedReport(outDir, options.log),
  });
}

/** report.json as a resume finds it; null when there is none or it is no report (it is then written anew). */
function storedReport(outDir: string, log: (line: string) => void): StudyReport | null {
  const file = path.join(outDir, STUDY_FILES.json);
  if (!existsSync(file)) return null;
  try {
    return StudyReport.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (error) {
    log(`[study] ${file} is not a report this build reads (${error instanceof Error ? error.message.split('\n')[0] : String(error)}): it is written anew at the end`);
    return null;
  }
}
