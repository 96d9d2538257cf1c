// The A/B/C study (issue 6 item 4; spec §6, §8.2, §17.3): groups A, B and C × n replicates,
// replicate r of every group with the same seed, run as blocks (issue 31 item 1): a replicate's A,
// B and C side by side against the same model, their wakes in lockstep and their model calls in
// an order drawn from the replicate's seed (controller/lockstep-block.ts), every turn recorded in
// blocks/r<k>.jsonl; blocks run through a p-queue (concurrency counts blocks); each instance is
// scored from its run folder as soon as it ends; then §6.2's
// expansion rule (all groups to n = 5 or none), the fairness check, the verdict and the report.
// A stopped or interrupted study is finished by resumeStudy (study-resume.ts, `npm run study --
// --resume DIR`, issue 16) through the same carryOut: it keeps every sealed instance, resumes every
// stopped one, starts every one never started, then applies the rule and writes the report exactly
// as an uninterrupted study would have (only wall-clock fields differ); study-recompute.ts rebuilds
// a report from the folders (--recompute).
//
// Folder layout (the contract --recompute and --resume read):
//   <out>/study.json                 what the study was started with (StudyPlan)
//   <out>/instances/<G>-r<k>/        one run folder per instance (npm run verify works on each); its
//                                    processes.log: every line its controller, writer and runtime printed
//   <out>/blocks/r<k>.jsonl          replicate k's block: every turn its members took (oracle/block-turns.ts)
//   <out>/report.json, report.md, report.html
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { resumeInstance, runNewInstance, type InstanceResult, type ModelCheck, type NewInstanceOptions, type ResumeOptions } from '../controller/instance-runner.js';
import { checkStudyModel, studyTimeLine } from './study-model-check.js';
import { copyScenarioInto, plannedWithScenario, removeScenarioCopy, studyScenarioPlace } from './study-scenario.js';
import type { IsolationOptions } from '../controller/isolation.js';
import type { BlockSeat } from '../controller/lockstep-block.js';
import { blocksLine, studyBlock } from './study-block.js';
import type { PreRegistration } from '../design/prereg.js';
import { decideExpansion, EXPANSION_NOT_DECIDED, type ExpansionDecision, type ScoredInstance } from '../oracle/expansion.js';
import { countedScore, evaluateInstance, type InstanceEvaluation } from '../oracle/instance-evaluation.js';
import { formatPoints } from '../oracle/figure-rounding.js';
import { INSTANCE_DIR_RE, instanceDirName, replicateSeed } from '../study-contract/study-replicates.js';
import { GROUPS, type Group } from '../design/groups.js';
import { StudyReport } from '../oracle/study-report.js';
import { STUDY_FILES, StudyError, StudyPlan } from '../study-contract/study-folder.js';
import { checkedNewStudyPlan, type NewPlanInput } from './new-study-plan.js';
import { readReportTimelines } from './instance-timelines.js';
import { statedStudyPlan } from './plan-cost.js';
import { renderReportHtml } from './report-html.js';
import { renderReportMarkdown } from './report-markdown.js';
import { checkNewStudyFolder, makeFolder, removeMadeFolders, studyResumeCommand } from './study-folder-setup.js';
import { buildStudyReport } from './study-report-builder.js';
import { instanceReportRecordOf, usableRuleOf } from './instance-report-record.js';
import { reportDifferences } from './study-recompute.js';
import { InstanceLogFile } from './instance-log-file.js';
import { RUN_FILES } from '../schema/run-files.js';

// The study folder's contract lives in study-contract/study-folder.ts; re-exported for the study's callers.

/** The most blocks run at once (each is three instances, each a writer and a runtime process). */
export const MAX_STUDY_CONCURRENCY = 64;

/** What every run of a study takes, a new one or a resumed one: where, by whom, how it is stopped and watched. */
export interface StudyRunOptions {
  readonly outDir: string;
  readonly scenariosDir: string;
  readonly operator: string;
  readonly signal: AbortSignal;
  /** Stop every instance at its next wake boundary (controller/instance-options.ts); the study counts as stopped once it is aborted. Unset: only `signal`. */
  readonly stopAtWakeEnd?: AbortSignal;
  /** A resumed study: absent means as it was started (study.json's same_uid). */
  readonly isolation?: IsolationOptions;
  /** Every controller log line of every instance, prefixed with the instance. */
  readonly log: (line: string) => void;
  /** Called whenever an instance starts, advances a wake or ends. */
  readonly onProgress: (progress: StudyProgress) => void;
  /** How an instance is started (in a resumed study: a never-started one); the controller's runNewInstance unless a test stands in for it. */
  readonly runInstance?: (options: NewInstanceOptions) => Promise<InstanceResult>;
}

/** A new study: where and how it runs (StudyRunOptions) and what its plan is made of (new-study-plan.ts). */
export interface StudyOptions extends StudyRunOptions, Omit<NewPlanInput, 'sameUid' | 'batch'> {
  /** The scenario folder (--scenario DIR), copied into the study folder; absent: `scenariosDir`/<the pre-registration's scenario id>. */
  readonly scenarioDir?: string | undefined;
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

export async function runStudy(options: StudyOptions): Promise<StudyOutcome> {
  const outDir = path.resolve(options.outDir);
  checkNewStudyFolder(outDir);
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1 || options.concurrency > MAX_STUDY_CONCURRENCY) throw new StudyError('out_of_bounds', `concurrency must be a whole number from 1 to ${MAX_STUDY_CONCURRENCY}, got ${options.concurrency}`);
  const { plan: unpinned, prereg } = checkedNewStudyPlan({ ...options, sameUid: options.isolation?.forceSameUid ?? null });
  // The scenario, refused before anything is written; pinned in study.json, every instance's start holds the study's copy to it (issue 35).
  const { plan: pinned, scenario } = plannedWithScenario(unpinned, { scenariosDir: options.scenariosDir, scenarioDir: options.scenarioDir }, prereg.scenario.id);
  // The model against the plan, once for the whole study, before anything of it is written (issue 31 item 3).
  const startedMs = Date.now();
  const modelCheck = await checkStudyModel(pinned, prereg, scenario, { concurrency: options.concurrency, log: options.log });
  // What it will cost, said before it starts and kept in study.json (issue 35 item 2).
  const plan = statedStudyPlan(pinned, prereg, modelCheck, options.concurrency, options.log);
  const instancesDir = path.join(outDir, STUDY_FILES.instances);
  const made = makeFolder(instancesDir);
  copyScenarioInto(outDir, scenario, () => removeMadeFolders(made, instancesDir));
  try {
    writeFileSync(path.join(outDir, STUDY_FILES.plan), `${JSON.stringify(plan, null, 2)}\n`, { flag: 'wx' });
  } catch (error) {
    // A refused study leaves no empty study folder behind.
    removeScenarioCopy(outDir);
    removeMadeFolders(made, instancesDir);
    throw new StudyError('out_unwritable', `cannot write ${path.join(outDir, STUDY_FILES.plan)} (${error instanceof Error ? error.message : String(error)}); nothing of the study was left behind`);
  }
  const { keyDir, scenariosDir, concurrency, operator, signal, stopAtWakeEnd, isolation, log, onProgress } = options;
  const start = options.runInstance ?? runNewInstance;
  const outcome = await carryOut({ plan, prereg, outDir, keyDir, scenariosDir, concurrency, operator, signal, stopAtWakeEnd, isolation, log, onProgress, start, found: new Map(), stored: null, modelCheck });
  if (modelCheck !== null) options.log(studyTimeLine(modelCheck, plan, options.concurrency, Date.now() - startedMs));
  return outcome;
}


/** What a resume does with an instance folder it found (study-resume.ts). */
export type FoundInstance = 'sealed' | 'resume';

/** One run of a study, new or resumed, as carryOut takes it. */
export interface StudyRun {
  readonly plan: StudyPlan;
  readonly prereg: PreRegistration;
  readonly outDir: string;
  readonly keyDir: string;
  readonly scenariosDir: string;
  readonly concurrency: number;
  readonly operator: string;
  readonly signal: AbortSignal;
  readonly stopAtWakeEnd: AbortSignal | undefined;
  readonly isolation: IsolationOptions | undefined;
  readonly log: (line: string) => void;
  readonly onProgress: (progress: StudyProgress) => void;
  readonly start: (options: NewInstanceOptions) => Promise<InstanceResult>;
  readonly resume?: (options: ResumeOptions) => Promise<InstanceResult>;
  /** The instance folders a resume found, by name (absent: never started). */
  readonly found: ReadonlyMap<string, FoundInstance>;
  /** report.json as a resume found it. */
  readonly stored: StudyReport | null;
  /** The study's check before hour 0, handed to every instance it starts (absent: each checks its own). */
  readonly modelCheck?: ModelCheck | null;
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
export async function carryOut(run: StudyRun): Promise<StudyOutcome> {
  const { plan, prereg, outDir, signal } = run;
  // The study is stopped from the first press on (its instances then stop at their next wake boundary).
  const stopped = run.stopAtWakeEnd ?? signal;
  const rule = prereg.expansion_rule;
  const nInitial = plan.n_initial;
  const nExpanded = plan.n_expanded;
  const resumeHint = studyResumeCommand(outDir);
  const running = new Map<string, string>();
  run.log(`[study] ${blocksLine(plan.model, run.concurrency)}`);
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
      run.log(`[${name}] scored ${formatPoints(evaluation.score.score)}${evaluation.hardFailures.length > 0 ? `; HARD FAILURES: ${evaluation.hardFailures.map((h) => h.id).join(', ')} (counted as 0)` : ''}`);
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

  // Concurrency counts blocks: a block is one replicate's A, B and C, run side by side in lockstep.
  const queue = new PQueue({ concurrency: run.concurrency });
  const runOne = async (group: Group, replicate: number, seat: BlockSeat | null): Promise<void> => {
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
    if (stopped.aborted || paused !== null) {
      if (found === 'resume') ran.push({ group, replicate, dir, status: 'stopped', detail: `not resumed: the study was ${stopped.aborted ? 'stopped' : 'paused'} before its turn`, wallMs: storedWallMs(group, replicate), action: 'not_reached' });
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
      ...(seat === null ? {} : { block: seat }),
      speed: null,
      signal,
      ...(run.stopAtWakeEnd ? { stopAtWakeEnd: run.stopAtWakeEnd } : {}),
      operator: run.operator,
      ...studyScenarioPlace(outDir, run.scenariosDir, plan),
      ...(run.isolation ? { isolation: run.isolation } : {}),
      childOutputToRunFolder: true,
      log: (line: string) => {
        const wake = /^(wake-\d+) at (h\d+:\d\d)/.exec(line);
        if (wake) {
          running.set(name, `${wake[1]} ${wake[2]}`);
          progress();
        }
        const said = `[${name}] ${inStudyWords(line, dir)}`;
        run.log(said);
        for (const unwritten of fileLog.line(said)) run.log(`[${name}] not in ${STUDY_FILES.instances}/${name}/${RUN_FILES.processLog}: ${unwritten}`);
      },
    };
    const fileLog = new InstanceLogFile(dir);
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
          ...(run.modelCheck === undefined ? {} : { modelCheck: run.modelCheck }),
        });
      }
    } catch (e) {
      error = inStudyWords(e instanceof Error ? e.message : String(e), dir);
      run.log(`[${name}] FAILED: ${error}`);
    }
    running.delete(name);
    for (const unwritten of fileLog.close()) run.log(`[${name}] not in ${STUDY_FILES.instances}/${name}/${RUN_FILES.processLog} (no run folder was made): ${unwritten}`);
    const wallMs = Date.now() - startedMs + (found === 'resume' ? (storedWallMs(group, replicate) ?? 0) : 0);
    const detail = error ?? (result?.stopReason ? inStudyWords(result.stopReason, dir) : null);
    ran.push({ group, replicate, dir, status: result?.status ?? 'failed', detail, wallMs, action: found === 'resume' ? 'resumed' : 'started' });
    if (result?.status === 'finished') score(name, dir);
    progress();
  };

  /** Replicate r's block: its unsealed members side by side in lockstep, each turn recorded (blocks/r<k>.jsonl). */
  const runBlock = async (replicate: number): Promise<void> => {
    const block = studyBlock({ studyDir: outDir, seed: plan.seed, replicate, model: plan.model });
    await Promise.all(
      GROUPS.map(async (g) => {
        const seat = block.seat(g);
        try {
          // A sealed member was scored already (runReplicates); it takes no turn.
          if (run.found.get(instanceDirName(g, replicate)) !== 'sealed') await runOne(g, replicate, seat);
        } finally {
          seat.leave();
        }
      }),
    );
  };

  const runReplicates = async (from: number, to: number): Promise<void> => {
    // Sealed instances are scored before anything runs: a pause one of them calls for (an
    // unauthorised execution) must hold before any other instance is resumed or started.
    for (let r = from; r <= to; r += 1) for (const g of GROUPS) if (run.found.get(instanceDirName(g, r)) === 'sealed') await runOne(g, r, null);
    const jobs: Promise<void>[] = [];
    // Replicate-major: blocks in replicate order, so a stop leaves whole replicates.
    for (let r = from; r <= to; r += 1) if (GROUPS.some((g) => run.found.get(instanceDirName(g, r)) !== 'sealed')) jobs.push(queue.add(() => runBlock(r)));
    await Promise.all(jobs);
  };

  await runReplicates(1, nInitial);
  let expansion: ExpansionDecision = { expand: false, reasons: [], points: [] };
  const scoredByGroup = (): Record<Group, ScoredInstance[]> | null => {
    const out: Record<Group, ScoredInstance[]> = { A: [], B: [], C: [] };
    // In replicate order, as --recompute reads them: an SD's sum must not follow which instance finished first.
    for (const r of [...ran].sort((a, b) => a.replicate - b.replicate)) {
      const e = evaluations.get(instanceDirName(r.group, r.replicate));
      if (e === undefined || typeof e === 'string') return null;
      out[r.group].push({ score: countedScore(e), dimensions: e.score.dimensions });
    }
    return out;
  };
  const initial = scoredByGroup();
  const expansionFolders = [...run.found.keys()].filter((name) => Number(INSTANCE_DIR_RE.exec(name)![2]) > nInitial);
  if (stopped.aborted || paused !== null) {
    expansion = { expand: false, reasons: [`${EXPANSION_NOT_DECIDED}the study ${stopped.aborted ? 'was stopped' : 'was paused'} before every instance of n = ${nInitial} was scored`], points: [] };
  } else if (initial === null) {
    expansion = { expand: false, reasons: [`${EXPANSION_NOT_DECIDED}not every instance of n = ${nInitial} was scored (see the instances)`], points: [] };
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
  } else expansion = { expand: false, reasons: [`n = ${nInitial} already reaches the expanded n = ${rule.expanded_n_per_group}: the rule has nothing to add`], points: [] };
  if (stopped.aborted) notes.push(`the study was stopped by the operator (${String(stopped.reason)}); continue it with ${resumeHint}`);

  const sorted = [...ran].sort((a, b) => a.replicate - b.replicate || a.group.localeCompare(b.group));
  const report = buildStudyReport({
    plan,
    prereg,
    outDir,
    n: expansion.expand ? nExpanded : nInitial,
    expanded: expansion.expand,
    expansionReasons: expansion.reasons,
    expansionPoints: expansion.points,
    instances: sorted.map((r) => {
      const evaluation = evaluations.get(instanceDirName(r.group, r.replicate)) ?? null;
      return {
        group: r.group,
        replicate: r.replicate,
        dir: r.dir,
        status: r.status,
        statusDetail: r.detail ?? (typeof evaluation === 'string' ? `not scored: ${evaluation}` : null),
        record: evaluation === null || typeof evaluation === 'string' ? null : instanceReportRecordOf(evaluation, usableRuleOf(prereg)),
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
  if (run.stored !== null && tally.kept === ran.length && !stopped.aborted && reportDifferences(run.stored, report).length === 0) return { report: run.stored, files, tally, nothingToDo: true, paused };
  if (run.stored !== null && tally.kept === ran.length && !stopped.aborted) run.log(`[study] every instance was sealed already; report.json did not follow from them (${reportDifferences(run.stored, report).length} difference(s)) and is written anew`);
  return { report, files: writeStudyReport(outDir, report), tally, nothingToDo: false, paused };
}

function studyReportFiles(outDir: string): StudyOutcome['files'] {
  return { json: path.join(outDir, STUDY_FILES.json), markdown: path.join(outDir, STUDY_FILES.markdown), html: path.join(outDir, STUDY_FILES.html) };
}

export function writeStudyReport(outDir: string, report: StudyReport): StudyOutcome['files'] {
  const files = studyReportFiles(outDir);
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(files.markdown, renderReportMarkdown(report));
  writeFileSync(files.html, renderReportHtml(report, { timelines: readReportTimelines(outDir, report) }));
  return files;
}


