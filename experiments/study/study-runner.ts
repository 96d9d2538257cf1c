// The A/B/C study (issue 6 item 4; spec §6, §8.2, §17.3): groups A, B and C × n replicates,
// replicate r of every group with the same seed, run as independent instances (p-queue,
// bounded concurrency), each scored from its run folder as soon as it ends; then §6.2's
// expansion rule (all groups to n = 5 or none), the fairness check, the verdict and the report.
// A stopped or interrupted study is finished by resumeStudy (`npm run study -- --resume DIR`,
// issue 16): from study.json alone it keeps every sealed instance, resumes every stopped one,
// starts every one never started, then applies the rule and writes the report exactly as an
// uninterrupted study would have (only wall-clock fields differ).
//
// Folder layout (the contract --recompute and --resume read):
//   <out>/study.json                 what the study was started with (StudyPlan)
//   <out>/instances/<G>-r<k>/        one run folder per instance (npm run verify works on each)
//   <out>/report.json, report.md, report.html
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { resumeInstance, runNewInstance, type InstanceResult, type NewInstanceOptions, type ResumeOptions } from '../../controller/instance-runner.js';
import type { IsolationOptions } from '../../controller/isolation.js';
import { ModelChoice } from '../../design/model-choice.js';
import { defaultKeyDir, loadOrCreateControllerKey } from '../../controller/key-store.js';
import { checkPreregLock, PreRegistration, readPreregJson } from '../../design/prereg.js';
import { decideExpansion, EXPANSION_NOT_DECIDED, type ScoredInstance } from '../../oracle/expansion.js';
import { countedScore, evaluateInstance, type InstanceEvaluation } from '../../oracle/instance-evaluation.js';
import { GROUPS, StudyReport, type Group, type ReportInstance } from '../../oracle/study-report.js';
import { MAX_STUDY_INSTANCES, readStudyPlan, STUDY_FILES, STUDY_PATH_CODES, STUDY_VERSION, StudyError, StudyPlan, type StudyErrorCode } from '../../oracle/study-folder.js';
import { hashCanonical } from '../../schema/hash.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { openStoreReadOnly, StoreReadError } from '../../writer/store-reader.js';
import { readSignedHeads } from '../../writer/verify-store.js';
import { renderReportHtml } from './report-html.js';
import { renderReportMarkdown } from './report-markdown.js';
import { buildStudyReport } from './study-report-builder.js';

// The study folder's contract lives in oracle/study-folder.ts; re-exported for the study's callers.
export { MAX_STUDY_INSTANCES, readStudyPlan, STUDY_FILES, STUDY_PATH_CODES, StudyError, StudyPlan, type StudyErrorCode };

/** The most instances run at once (each is a writer and a runtime process). */
export const MAX_STUDY_CONCURRENCY = 64;

export interface StudyOptions {
  readonly outDir: string;
  readonly seed: string;
  readonly preregFile: string;
  readonly keyDir: string;
  readonly scenariosDir: string;
  readonly concurrency: number;
  /** n per group before expansion; default: the pre-registration's initial_n_per_group. */
  readonly n: number | null;
  readonly startAt: string;
  readonly model: ModelChoice;
  readonly studyId: string;
  readonly operator: string;
  readonly signal: AbortSignal;
  readonly isolation?: IsolationOptions;
  /** Every controller log line of every instance, prefixed with the instance. */
  readonly log: (line: string) => void;
  /** Called whenever an instance starts, advances a wake or ends. */
  readonly onProgress: (progress: StudyProgress) => void;
  /** How one instance is run; the controller's runNewInstance unless a test stands in for it. */
  readonly runInstance?: (options: NewInstanceOptions) => Promise<InstanceResult>;
}

/** What `npm run study -- --resume DIR` may set; everything else comes from the folder's study.json. */
export interface ResumeStudyOptions {
  readonly outDir: string;
  /** null: study.json's key_dir, else the default key folder. */
  readonly keyDir: string | null;
  readonly scenariosDir: string;
  /** null: the concurrency the study was started with (study.json). */
  readonly concurrency: number | null;
  readonly operator: string;
  readonly signal: AbortSignal;
  /** Absent: as the study was started (study.json's same_uid). */
  readonly isolation?: IsolationOptions;
  readonly log: (line: string) => void;
  readonly onProgress: (progress: StudyProgress) => void;
  /** How a never-started instance is started; runNewInstance unless a test stands in for it. */
  readonly runInstance?: (options: NewInstanceOptions) => Promise<InstanceResult>;
}

export interface StudyProgress {
  readonly total: number;
  readonly finished: number;
  readonly failed: number;
  readonly running: ReadonlyMap<string, string>;
  readonly phase: string;
}

/** What one run of the study did with its instances (a fresh study only starts them). */
export interface StudyTally {
  /** Sealed before this run: scored as they are. */
  readonly kept: number;
  readonly resumed: number;
  readonly started: number;
  /** Found stopped but not resumed: this run was stopped (or the study paused) before their turn. */
  readonly notReached: number;
}

export interface StudyOutcome {
  readonly report: StudyReport;
  readonly files: { readonly json: string; readonly markdown: string; readonly html: string };
  readonly tally: StudyTally;
  /** A resume found every instance sealed and report.json following from them: nothing was run or written. */
  readonly nothingToDo: boolean;
  /** Why the study is paused (spec §19.1: an unauthorised execution), null when it is not: a pause is not undone by a resume. */
  readonly paused: string | null;
}

/** The seed of replicate k: the same for A, B and C, different per replicate. */
export function replicateSeed(seed: string, replicate: number): string {
  return `${seed}-r${replicate}`;
}

export function instanceDirName(group: Group, replicate: number): string {
  return `${group}-r${replicate}`;
}

/** The one way to continue a study, as every message of the study names it. */
export function studyResumeCommand(outDir: string): string {
  return `npm run study -- --resume ${outDir}`;
}

/**
 * The checks on a new study's folder, before anything is written: a file, or a non-empty
 * folder (a study or not), is refused with a path code (misuse), the folder untouched.
 */
export function checkNewStudyFolder(outDir: string): void {
  const dir = path.resolve(outDir);
  // The nearest part of the path that exists must be a folder: `--out FILE/x` is refused here, not by mkdir's ENOTDIR.
  let at = dir;
  while (!existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  if (!statSync(at).isDirectory()) throw new StudyError('out_is_a_file', at === dir ? `${dir} is a file: --out needs a new (or empty) folder for the study; nothing was changed` : `${at} is a file, so ${dir} cannot be a folder: --out needs a new (or empty) folder for the study; nothing was changed`);
  if (at !== dir) return;
  const entries = readdirSync(dir);
  if (entries.length === 0) return;
  if (entries.includes(STUDY_FILES.plan)) throw new StudyError('out_not_empty', `${dir} holds a study already: a new study needs a new folder; continue that one with ${studyResumeCommand(dir)} (or recompute its report with npm run study -- --recompute ${dir}); nothing was changed`);
  throw new StudyError('out_not_empty', `${dir} is not empty and is not a study folder: a study needs a new (or empty) folder; nothing was changed`);
}

/** Makes `dir` and its missing parents; returns the topmost one it made (null: it existed). */
function makeFolder(dir: string): string | null {
  try {
    return mkdirSync(dir, { recursive: true }) ?? null;
  } catch (error) {
    throw new StudyError('out_unwritable', `cannot make the study folder ${dir} (${error instanceof Error ? error.message : String(error)}); nothing was written`);
  }
}

/** Removes the folders makeFolder made, deepest first, and only while empty: never anything this run did not create. */
function removeMadeFolders(made: string | null, deepest: string): void {
  if (made === null) return;
  for (let at = deepest; at.startsWith(made); at = path.dirname(at)) {
    try {
      rmdirSync(at);
    } catch {
      return; // not empty (someone else wrote there) or already gone: left as it is
    }
    if (at === made) return;
  }
}

export async function runStudy(options: StudyOptions): Promise<StudyOutcome> {
  const outDir = path.resolve(options.outDir);
  checkNewStudyFolder(outDir);
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1 || options.concurrency > MAX_STUDY_CONCURRENCY) throw new StudyError('out_of_bounds', `concurrency must be a whole number from 1 to ${MAX_STUDY_CONCURRENCY}, got ${options.concurrency}`);
  // Refused before anything is written (DESIGN §8): every instance would refuse it anyway.
  const key = loadOrCreateControllerKey(options.keyDir);
  const lock = checkPreregLock(options.preregFile, key.keys.publicKey);
  if (!lock.ok) throw new StudyError('prereg_refused', `refusing to start the study: ${lock.failures.map((f) => f.message).join('; ')}`);
  const prereg = parsedPrereg(options.preregFile, 'start');
  const rule = prereg.expansion_rule;
  const nInitial = options.n ?? rule.initial_n_per_group;
  const nExpanded = Math.max(rule.expanded_n_per_group, nInitial);
  if (nExpanded * GROUPS.length > MAX_STUDY_INSTANCES) throw new StudyError('out_of_bounds', `n = ${nExpanded} per group is ${nExpanded * GROUPS.length} instances, over the ${MAX_STUDY_INSTANCES} a study runs`);
  // Checked whole before the folder exists: a value study.json cannot hold is refused with nothing written.
  const parsed = StudyPlan.safeParse({
    study_version: STUDY_VERSION,
    study_id: options.studyId,
    seed: options.seed,
    prereg_file: path.resolve(options.preregFile),
    prereg_sha256: hashCanonical(prereg),
    n_initial: nInitial,
    n_expanded: nExpanded,
    concurrency: options.concurrency,
    start_at: options.startAt,
    model: options.model,
    started_at: new Date().toISOString(),
    key_dir: path.resolve(options.keyDir),
    same_uid: options.isolation?.forceSameUid ?? null,
  });
  if (!parsed.success) throw new StudyError('out_of_bounds', `refusing to start the study: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}; nothing was written`);
  const plan = parsed.data;
  const instancesDir = path.join(outDir, STUDY_FILES.instances);
  const made = makeFolder(instancesDir);
  try {
    writeFileSync(path.join(outDir, STUDY_FILES.plan), `${JSON.stringify(plan, null, 2)}\n`, { flag: 'wx' });
  } catch (error) {
    // A refused study leaves no empty study folder behind.
    removeMadeFolders(made, instancesDir);
    throw new StudyError('out_unwritable', `cannot write ${path.join(outDir, STUDY_FILES.plan)} (${error instanceof Error ? error.message : String(error)}); nothing of the study was left behind`);
  }
  return carryOut({
    plan,
    prereg,
    outDir,
    keyDir: options.keyDir,
    scenariosDir: options.scenariosDir,
    concurrency: options.concurrency,
    operator: options.operator,
    signal: options.signal,
    isolation: options.isolation,
    log: options.log,
    onProgress: options.onProgress,
    start: options.runInstance ?? runNewInstance,
    found: new Map(),
    stored: null,
  });
}

function parsedPrereg(file: string, what: 'start' | 'resume'): PreRegistration {
  const parsed = PreRegistration.safeParse(readPreregJson(file));
  if (!parsed.success) throw new StudyError('prereg_refused', `refusing to ${what} the study: ${file} is not a pre-registration this build runs: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** What a resume does with an instance folder it found. */
type FoundInstance = 'sealed' | 'resume';

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

const INSTANCE_DIR_RE = /^([ABC])-r([1-9][0-9]*)$/;

export async function resumeStudy(options: ResumeStudyOptions): Promise<StudyOutcome> {
  const outDir = path.resolve(options.outDir);
  if (!existsSync(outDir)) throw new StudyError('not_a_study', `${outDir} does not exist: give the folder of a study that npm run study started`);
  if (!statSync(outDir).isDirectory()) throw new StudyError('not_a_study', `${outDir} is a file, not a study folder of npm run study; nothing was changed`);
  const plan = readStudyPlan(outDir);
  const concurrency = options.concurrency ?? plan.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_STUDY_CONCURRENCY) throw new StudyError('out_of_bounds', `concurrency must be a whole number from 1 to ${MAX_STUDY_CONCURRENCY}, got ${concurrency}${options.concurrency === null ? ` (from ${STUDY_FILES.plan}; give --concurrency K)` : ''}; nothing was changed`);
  if (plan.n_expanded < plan.n_initial || plan.n_expanded * GROUPS.length > MAX_STUDY_INSTANCES) throw new StudyError('plan_unreadable', `${path.join(outDir, STUDY_FILES.plan)} plans n = ${plan.n_initial} → ${plan.n_expanded} per group, which no study of npm run study runs; nothing was changed`);
  const keyDir = options.keyDir ?? plan.key_dir ?? defaultKeyDir();
  // Never a new key: a study's instances are signed by the key that started it.
  const key = loadOrCreateControllerKey(keyDir, { create: false });
  if (!existsSync(plan.prereg_file)) throw new StudyError('prereg_refused', `refusing to resume the study: its pre-registration ${plan.prereg_file} is gone; put it back (it hashes to ${plan.prereg_sha256}), with its lock; nothing was changed`);
  const lock = checkPreregLock(plan.prereg_file, key.keys.publicKey);
  if (!lock.ok) throw new StudyError('prereg_refused', `refusing to resume the study: ${lock.failures.map((f) => f.message).join('; ')}; nothing was changed`);
  const prereg = parsedPrereg(plan.prereg_file, 'resume');
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

interface StudyRun {
  readonly plan: StudyPlan;
  readonly prereg: PreRegistration;
  readonly outDir: string;
  readonly keyDir: string;
  readonly scenariosDir: string;
  readonly concurrency: number;
  readonly operator: string;
  readonly signal: AbortSignal;
  readonly isolation: IsolationOptions | undefined;
  readonly log: (line: string) => void;
  readonly onProgress: (progress: StudyProgress) => void;
  readonly start: (options: NewInstanceOptions) => Promise<InstanceResult>;
  readonly resume?: (options: ResumeOptions) => Promise<InstanceResult>;
  /** The instance folders a resume found, by name (absent: never started). */
  readonly found: ReadonlyMap<string, FoundInstance>;
  /** report.json as a resume found it. */
  readonly stored: StudyReport | null;
}

interface Ran {
  readonly group: Group;
  readonly replicate: number;
  readonly dir: string;
  readonly status: 'finished' | 'stopped' | 'failed';
  readonly detail: string | null;
  readonly wallMs: number | null;
  readonly action: 'kept' | 'resumed' | 'started' | 'not_reached';
}

/** Runs (or keeps, or resumes) every instance the plan and its rule call for, then writes the report. */
async function carryOut(run: StudyRun): Promise<StudyOutcome> {
  const { plan, prereg, outDir, signal } = run;
  const rule = prereg.expansion_rule;
  const nInitial = plan.n_initial;
  const nExpanded = plan.n_expanded;
  const resumeHint = studyResumeCommand(outDir);
  const running = new Map<string, string>();
  const ran: Ran[] = [];
  const notes: string[] = [];
  let total = nInitial * GROUPS.length;
  let phase = `n = ${nInitial} per group`;
  let paused: string | null = null;
  const progress = (): void => run.onProgress({ total, finished: ran.filter((r) => r.status === 'finished').length, failed: ran.filter((r) => r.status !== 'finished').length, running, phase });
  const evaluations = new Map<string, InstanceEvaluation | string>();
  // An instance's own advice (`npm run experiment -- --resume DIR`, `--resume DIR`) would finish it outside the study, which then never gets its report.
  const inStudyWords = (text: string, dir: string): string => text.replaceAll(`npm run experiment -- --resume ${dir}`, resumeHint).replaceAll(`--resume ${dir}`, resumeHint);
  const storedWallMs = (group: Group, replicate: number): number | null => run.stored?.instances.find((i) => i.group === group && i.replicate === replicate)?.wall_ms ?? null;

  const score = (name: string, dir: string): void => {
    try {
      const evaluation = evaluateInstance(dir, { scenariosDir: run.scenariosDir, expectedPreregSha256: plan.prereg_sha256 });
      evaluations.set(name, evaluation);
      run.log(`[${name}] scored ${evaluation.score.score.toFixed(2)}${evaluation.hardFailures.length > 0 ? `; HARD FAILURES: ${evaluation.hardFailures.map((h) => h.id).join(', ')} (counted as 0)` : ''}`);
      // Spec §19.1: an unauthorised execution pauses every instance, evidence kept.
      if (evaluation.hardFailures.some((h) => h.id === 'unauthorized_tool_execution') && paused === null) {
        paused = `unauthorised tool execution in ${name}: the study was paused (no further instance started; evidence kept)`;
        notes.push(paused);
        // Not queue.clear(): a cleared job's promise never settles. Queued jobs see `paused` and return.
        run.log(`PAUSED: ${paused}`);
      }
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      evaluations.set(name, why);
      run.log(`[${name}] NOT SCORED: ${why}`);
    }
  };

  const queue = new PQueue({ concurrency: run.concurrency });
  const runOne = async (group: Group, replicate: number): Promise<void> => {
    const name = instanceDirName(group, replicate);
    const dir = path.join(outDir, STUDY_FILES.instances, name);
    const found = run.found.get(name);
    if (found === 'sealed') {
      // It exists whatever this run does: in the report as an uninterrupted study would have it.
      ran.push({ group, replicate, dir, status: 'finished', detail: null, wallMs: storedWallMs(group, replicate), action: 'kept' });
      score(name, dir);
      progress();
      return;
    }
    if (signal.aborted || paused !== null) {
      if (found === 'resume') ran.push({ group, replicate, dir, status: 'stopped', detail: `not resumed: the study was ${signal.aborted ? 'stopped' : 'paused'} before its turn`, wallMs: storedWallMs(group, replicate), action: 'not_reached' });
      return;
    }
    running.set(name, found === 'resume' ? 'resuming' : 'starting');
    progress();
    const startedMs = Date.now();
    let result: InstanceResult | null = null;
    let error: string | null = null;
    const common = {
      runDir: dir,
      keyDir: run.keyDir,
      speed: null,
      signal,
      operator: run.operator,
      scenariosDir: run.scenariosDir,
      ...(run.isolation ? { isolation: run.isolation } : {}),
      log: (line: string) => {
        const wake = /^(wake-\d+) at (h\d+:\d\d)/.exec(line);
        if (wake) {
          running.set(name, `${wake[1]} ${wake[2]}`);
          progress();
        }
        run.log(`[${name}] ${inStudyWords(line, dir)}`);
      },
    };
    try {
      if (found === 'resume') result = await (run.resume ?? resumeInstance)(common);
      else {
        result = await run.start({
          ...common,
          preregFile: plan.prereg_file,
          seed: replicateSeed(plan.seed, replicate),
          group,
          startAt: plan.start_at,
          experimentId: plan.study_id,
          replicate,
          // Random, never derived from the group or the folder name: the id must not reveal the group (spec §8.5).
          groupBlindId: `inst-${randomBytes(4).toString('hex')}`,
          startedAt: new Date().toISOString(),
          model: plan.model,
        });
      }
    } catch (e) {
      error = inStudyWords(e instanceof Error ? e.message : String(e), dir);
      run.log(`[${name}] FAILED: ${error}`);
    }
    running.delete(name);
    const wallMs = Date.now() - startedMs + (found === 'resume' ? (storedWallMs(group, replicate) ?? 0) : 0);
    const detail = error ?? (result?.stopReason ? inStudyWords(result.stopReason, dir) : null);
    ran.push({ group, replicate, dir, status: result?.status ?? 'failed', detail, wallMs, action: found === 'resume' ? 'resumed' : 'started' });
    if (result?.status === 'finished') score(name, dir);
    progress();
  };

  const runReplicates = async (from: number, to: number): Promise<void> => {
    // Sealed instances are scored before anything runs: a pause one of them calls for (an
    // unauthorised execution) must hold before any other instance is resumed or started.
    for (let r = from; r <= to; r += 1) for (const g of GROUPS) if (run.found.get(instanceDirName(g, r)) === 'sealed') await runOne(g, r);
    const jobs: Promise<void>[] = [];
    // Replicate-major, so the groups advance together and a stop leaves comparable sets.
    for (let r = from; r <= to; r += 1) for (const g of GROUPS) if (run.found.get(instanceDirName(g, r)) !== 'sealed') jobs.push(queue.add(() => runOne(g, r)));
    await Promise.all(jobs);
  };

  await runReplicates(1, nInitial);
  let expansion = { expand: false, reasons: [] as readonly string[] };
  const scoredByGroup = (): Record<Group, ScoredInstance[]> | null => {
    const out: Record<Group, ScoredInstance[]> = { A: [], B: [], C: [] };
    for (const r of ran) {
      const e = evaluations.get(instanceDirName(r.group, r.replicate));
      if (e === undefined || typeof e === 'string') return null;
      out[r.group].push({ score: countedScore(e), dimensions: e.score.dimensions });
    }
    return out;
  };
  const initial = scoredByGroup();
  const expansionFolders = [...run.found.keys()].filter((name) => Number(INSTANCE_DIR_RE.exec(name)![2]) > nInitial);
  if (signal.aborted || paused !== null) {
    expansion = { expand: false, reasons: [`${EXPANSION_NOT_DECIDED}the study ${signal.aborted ? 'was stopped' : 'was paused'} before every instance of n = ${nInitial} was scored`] };
  } else if (initial === null) {
    expansion = { expand: false, reasons: [`${EXPANSION_NOT_DECIDED}not every instance of n = ${nInitial} was scored (see the instances)`] };
  } else if (nExpanded > nInitial) {
    expansion = decideExpansion(initial, { ...rule, initial_n_per_group: nInitial });
    if (expansion.expand) {
      total = nExpanded * GROUPS.length;
      phase = `expanded to n = ${nExpanded} per group`;
      const added = (nExpanded - nInitial) * GROUPS.length;
      const continuing = expansionFolders.length > 0 ? ` (continuing it: ${expansionFolders.length} of them were begun before)` : '';
      run.log(`expansion rule (spec §6.2): ${added} instances added${continuing}, every group from n = ${nInitial} to n = ${nExpanded} (${total} in all), because ${expansion.reasons.filter((r) => r.includes('triggers')).join('; ')}`);
      await runReplicates(nInitial + 1, nExpanded);
    } else {
      if (expansionFolders.length > 0) throw new StudyError('folder_changed', `the expansion rule does not expand at n = ${nInitial}, yet ${expansionFolders.join(', ')} ${expansionFolders.length === 1 ? 'exists' : 'exist'} in ${path.join(outDir, STUDY_FILES.instances)}: the folder was changed after the study started (or its first round was); the report was not written`);
      run.log(`expansion rule (spec §6.2): not triggered at n = ${nInitial}`);
    }
  } else expansion = { expand: false, reasons: [`n = ${nInitial} already reaches the expanded n = ${rule.expanded_n_per_group}: the rule has nothing to add`] };
  if (signal.aborted) notes.push(`the study was stopped by the operator (${String(signal.reason)}); continue it with ${resumeHint}`);

  const sorted = [...ran].sort((a, b) => a.replicate - b.replicate || a.group.localeCompare(b.group));
  const report = buildStudyReport({
    plan,
    prereg,
    outDir,
    n: expansion.expand ? nExpanded : nInitial,
    expanded: expansion.expand,
    expansionReasons: expansion.reasons,
    instances: sorted.map((r) => {
      const evaluation = evaluations.get(instanceDirName(r.group, r.replicate)) ?? null;
      return {
        group: r.group,
        replicate: r.replicate,
        dir: r.dir,
        status: r.status,
        statusDetail: r.detail ?? (typeof evaluation === 'string' ? `not scored: ${evaluation}` : null),
        evaluation: typeof evaluation === 'string' ? null : evaluation,
        wallMs: r.wallMs,
      };
    }),
    extraNotes: notes,
    generatedAt: new Date().toISOString(),
  });
  const count = (action: Ran['action']): number => ran.filter((r) => r.action === action).length;
  const tally: StudyTally = { kept: count('kept'), resumed: count('resumed'), started: count('started'), notReached: count('not_reached') };
  const files = studyReportFiles(outDir);
  // A resume that found everything done leaves the report as it is (its generated_at and wall times included).
  if (run.stored !== null && tally.kept === ran.length && !signal.aborted && reportDifferences(run.stored, report).length === 0) return { report: run.stored, files, tally, nothingToDo: true, paused };
  if (run.stored !== null && tally.kept === ran.length && !signal.aborted) run.log(`[study] every instance was sealed already; report.json did not follow from them (${reportDifferences(run.stored, report).length} difference(s)) and is written anew`);
  return { report, files: writeStudyReport(outDir, report), tally, nothingToDo: false, paused };
}

function studyReportFiles(outDir: string): StudyOutcome['files'] {
  return { json: path.join(outDir, STUDY_FILES.json), markdown: path.join(outDir, STUDY_FILES.markdown), html: path.join(outDir, STUDY_FILES.html) };
}

/** Where two reports differ in what --recompute compares (not when, not how long, not live error texts). */
function reportDifferences(a: StudyReport, b: StudyReport): string[] {
  const out: string[] = [];
  collectDifferences(withoutUnrecomputable(a), withoutUnrecomputable(b), '', out);
  return out;
}

export function writeStudyReport(outDir: string, report: StudyReport): StudyOutcome['files'] {
  const files = studyReportFiles(outDir);
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(files.markdown, renderReportMarkdown(report));
  writeFileSync(files.html, renderReportHtml(report));
  return files;
}


export type { ReportInstance };

/** Notes of the live run that the folders cannot reproduce (see runStudy). */
const LIVE_ONLY_NOTE = /^(?:the study was stopped by the operator|unauthorised tool execution in [ABC]-r\d+: the study was paused)/;
/** Fields a recomputation cannot reproduce from the folders: when and how long, and live error texts. */
const NOT_RECOMPUTED = new Set(['generated_at', 'status_detail', 'wall_ms']);

function withoutUnrecomputable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutUnrecomputable);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).filter(([k]) => !NOT_RECOMPUTED.has(k)).map(([k, v]) => [k, withoutUnrecomputable(v)]));
  return value;
}

export interface Recomputation {
  readonly report: StudyReport;
  /** Where report.json differs from the recomputation (empty: every number recomputed). */
  readonly differences: readonly string[];
}

/**
 * Rebuilds the report from study.json and the instance folders alone (issue 6: "every number …
 * can be recomputed from the run folders") and compares it with report.json.
 */
export function recomputeStudy(outDir: string, scenariosDir: string): Recomputation {
  const plan = readStudyPlan(outDir);
  const instancesDir = path.join(outDir, STUDY_FILES.instances);
  const found = existsSync(instancesDir) ? readdirSync(instancesDir).flatMap((name) => {
    const m = INSTANCE_DIR_RE.exec(name);
    return m ? [{ group: m[1] as Group, replicate: Number(m[2]), dir: path.join(instancesDir, name) }] : [];
  }) : [];
  if (found.length > MAX_STUDY_INSTANCES) throw new StudyError('folder_changed', `${instancesDir} holds ${found.length} instance folders, over ${MAX_STUDY_INSTANCES}`);
  found.sort((a, b) => a.replicate - b.replicate || a.group.localeCompare(b.group));
  const evaluated = found.map((f) => {
    try {
      const evaluation = evaluateInstance(f.dir, { scenariosDir, expectedPreregSha256: plan.prereg_sha256 });
      const sealed = evaluation.record.events.some((e) => e.event_type === 'SystemEvent.StoreSealed');
      return { ...f, evaluation: sealed ? evaluation : null, status: sealed ? ('finished' as const) : ('stopped' as const), statusDetail: sealed ? null : 'not sealed' };
    } catch (e) {
      return { ...f, evaluation: null, status: 'failed' as const, statusDetail: e instanceof Error ? e.message : String(e) };
    }
  });
  const prereg = evaluated.find((e) => e.evaluation && e.evaluation.record.preregSha256 === plan.prereg_sha256)?.evaluation?.record.prereg;
  if (!prereg) throw new StudyError('folder_changed', `no instance of ${outDir} ran under the study's pre-registration ${plan.prereg_sha256}: nothing to recompute against`);
  const maxReplicate = Math.max(0, ...found.map((f) => f.replicate));
  const expandedRan = maxReplicate > plan.n_initial;
  const initial: Record<Group, ScoredInstance[]> = { A: [], B: [], C: [] };
  let allScored = true;
  for (const e of evaluated) {
    if (e.replicate > plan.n_initial) continue;
    if (e.evaluation) initial[e.group].push({ score: countedScore(e.evaluation), dimensions: e.evaluation.score.dimensions });
    else allScored = false;
  }
  // The rule is decided on a complete first round only, as the live run does (a pause or a stop
  // leaves it undecided, and the stored reasons say so).
  const firstRoundComplete = GROUPS.every((g) => Array.from({ length: plan.n_initial }, (_, k) => k + 1).every((r) => found.some((f) => f.group === g && f.replicate === r)));
  const expansion = allScored && firstRoundComplete && plan.n_expanded > plan.n_initial ? decideExpansion(initial, { ...prereg.expansion_rule, initial_n_per_group: plan.n_initial }) : null;
  const stored = existsSync(path.join(outDir, STUDY_FILES.json)) ? (JSON.parse(readFileSync(path.join(outDir, STUDY_FILES.json), 'utf8')) as StudyReport) : null;
  const report = buildStudyReport({
    plan,
    prereg,
    outDir,
    n: expandedRan ? plan.n_expanded : plan.n_initial,
    expanded: expandedRan,
    expansionReasons: expansion?.reasons ?? stored?.expansion_reasons ?? [],
    instances: evaluated.map((e) => ({ group: e.group, replicate: e.replicate, dir: e.dir, status: e.status, statusDetail: e.statusDetail, evaluation: e.evaluation, wallMs: null })),
    // Notes and void reasons of the live run that no folder holds (an operator stop, a pause) are taken over as stated.
    // Only what no folder holds is taken over: an operator stop or a pause, as the live run stated it.
    extraNotes: stored?.notes.filter((n) => LIVE_ONLY_NOTE.test(n)) ?? [],
    generatedAt: new Date().toISOString(),
  });
  const differences: string[] = [];
  if (stored === null) differences.push(`${STUDY_FILES.json} is missing`);
  else {
    const a = withoutUnrecomputable(stored);
    const b = withoutUnrecomputable(report);
    const all: string[] = [];
    collectDifferences(a, b, '', all);
    differences.push(...all.slice(0, MAX_NAMED_DIFFERENCES));
    if (all.length > MAX_NAMED_DIFFERENCES) differences.push(`… and ${all.length - MAX_NAMED_DIFFERENCES} more difference(s)`);
  }
  if (expansion && expansion.expand !== expandedRan) differences.push(`the expansion rule says ${expansion.expand ? 'expand' : 'do not expand'} at n = ${plan.n_initial}, but ${expandedRan ? 'replicates beyond it were run' : 'none beyond it were run'}`);
  return { report, differences };
}

/** At most this many differences are named; the rest are counted in one more line. */
const MAX_NAMED_DIFFERENCES = 50;

/** Dotted paths where a and b differ. */
function collectDifferences(a: unknown, b: unknown, at: string, out: string[], depth = 0): void {
  if (depth > 32) {
    out.push(`${at}: nested deeper than 32 levels, not compared`);
    return;
  }
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (isObj(a) && isObj(b) && Array.isArray(a) === Array.isArray(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) collectDifferences(a[key], b[key], at === '' ? key : `${at}.${key}`, out, depth + 1);
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(`${at || '(root)'}: report.json has ${JSON.stringify(a)?.slice(0, 120)}, recomputed ${JSON.stringify(b)?.slice(0, 120)}`);
}
