// The A/B/C study (issue 6 item 4; spec §6, §8.2, §17.3): groups A, B and C × n replicates,
// replicate r of every group with the same seed, run as independent instances (p-queue,
// bounded concurrency), each scored from its run folder as soon as it ends; then §6.2's
// expansion rule (all groups to n = 5 or none), the fairness check, the verdict and the report.
//
// Folder layout (the contract --recompute reads):
//   <out>/study.json                 what the study was started with (StudyPlan)
//   <out>/instances/<G>-r<k>/        one run folder per instance (npm run verify works on each)
//   <out>/report.json, report.md, report.html
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import PQueue from 'p-queue';
import { runNewInstance, type InstanceResult, type NewInstanceOptions } from '../../controller/instance-runner.js';
import type { IsolationOptions } from '../../controller/isolation.js';
import { ModelChoice } from '../../controller/model-choice.js';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import { checkPreregLock, PreRegistration, readPreregJson } from '../../controller/prereg.js';
import { decideExpansion, type ScoredInstance } from '../../oracle/expansion.js';
import { countedScore, evaluateInstance, type InstanceEvaluation } from '../../oracle/instance-evaluation.js';
import { GROUPS, type Group, type ReportInstance, type StudyReport } from '../../oracle/study-report.js';
import { MAX_STUDY_INSTANCES, readStudyPlan, STUDY_FILES, StudyError, StudyPlan } from '../../oracle/study-folder.js';
import { hashCanonical } from '../../schema/hash.js';
import { renderReportHtml } from './report-html.js';
import { renderReportMarkdown } from './report-markdown.js';
import { buildStudyReport } from './study-report-builder.js';

// The study folder's contract lives in oracle/study-folder.ts; re-exported for the study's callers.
export { MAX_STUDY_INSTANCES, readStudyPlan, STUDY_FILES, StudyError, StudyPlan };

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

export interface StudyProgress {
  readonly total: number;
  readonly finished: number;
  readonly failed: number;
  readonly running: ReadonlyMap<string, string>;
  readonly phase: string;
}

export interface StudyOutcome {
  readonly report: StudyReport;
  readonly files: { readonly json: string; readonly markdown: string; readonly html: string };
}

/** The seed of replicate k: the same for A, B and C, different per replicate. */
export function replicateSeed(seed: string, replicate: number): string {
  return `${seed}-r${replicate}`;
}

export function instanceDirName(group: Group, replicate: number): string {
  return `${group}-r${replicate}`;
}

interface Ran {
  readonly group: Group;
  readonly replicate: number;
  readonly dir: string;
  readonly result: InstanceResult | null;
  readonly error: string | null;
  readonly wallMs: number;
}

export async function runStudy(options: StudyOptions): Promise<StudyOutcome> {
  const outDir = path.resolve(options.outDir);
  if (existsSync(outDir) && readdirSync(outDir).length > 0) throw new StudyError(`${outDir} exists and is not empty: a study needs a new folder (recompute an old one with --recompute ${outDir})`);
  // Refused before anything is written (DESIGN §8): every instance would refuse it anyway.
  const key = loadOrCreateControllerKey(options.keyDir);
  const lock = checkPreregLock(options.preregFile, key.keys.publicKey);
  if (!lock.ok) throw new StudyError(`refusing to start the study: ${lock.failures.map((f) => f.message).join('; ')}`);
  const prereg = PreRegistration.parse(readPreregJson(options.preregFile));
  const rule = prereg.expansion_rule;
  const nInitial = options.n ?? rule.initial_n_per_group;
  const nExpanded = Math.max(rule.expanded_n_per_group, nInitial);
  if (nExpanded * GROUPS.length > MAX_STUDY_INSTANCES) throw new StudyError(`n = ${nExpanded} per group is ${nExpanded * GROUPS.length} instances, over the ${MAX_STUDY_INSTANCES} a study runs`);
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1) throw new StudyError(`concurrency must be a whole number ≥ 1, got ${options.concurrency}`);
  mkdirSync(path.join(outDir, STUDY_FILES.instances), { recursive: true });
  const plan: StudyPlan = StudyPlan.parse({
    study_version: '1.0.0',
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
  });
  writeFileSync(path.join(outDir, STUDY_FILES.plan), `${JSON.stringify(plan, null, 2)}\n`, { flag: 'wx' });

  const running = new Map<string, string>();
  const ran: Ran[] = [];
  const notes: string[] = [];
  let total = nInitial * GROUPS.length;
  let phase = `n = ${nInitial} per group`;
  let paused: string | null = null;
  const progress = (): void => options.onProgress({ total, finished: ran.filter((r) => r.result?.status === 'finished').length, failed: ran.filter((r) => r.result?.status !== 'finished').length, running, phase });
  const evaluations = new Map<string, InstanceEvaluation | string>();

  const queue = new PQueue({ concurrency: options.concurrency });
  const runOne = async (group: Group, replicate: number): Promise<void> => {
    if (options.signal.aborted || paused !== null) return;
    const name = instanceDirName(group, replicate);
    const dir = path.join(outDir, STUDY_FILES.instances, name);
    running.set(name, 'starting');
    progress();
    const startedMs = Date.now();
    let result: InstanceResult | null = null;
    let error: string | null = null;
    try {
      result = await (options.runInstance ?? runNewInstance)({
        runDir: dir,
        keyDir: options.keyDir,
        speed: null,
        signal: options.signal,
        operator: options.operator,
        scenariosDir: options.scenariosDir,
        ...(options.isolation ? { isolation: options.isolation } : {}),
        log: (line) => {
          const wake = /^(wake-\d+) at (h\d+:\d\d)/.exec(line);
          if (wake) {
            running.set(name, `${wake[1]} ${wake[2]}`);
            progress();
          }
          options.log(`[${name}] ${line}`);
        },
        preregFile: options.preregFile,
        seed: replicateSeed(options.seed, replicate),
        group,
        startAt: options.startAt,
        experimentId: options.studyId,
        replicate,
        // Random, never derived from the group or the folder name: the id must not reveal the group (spec §8.5).
        groupBlindId: `inst-${randomBytes(4).toString('hex')}`,
        startedAt: new Date().toISOString(),
        model: options.model,
      });
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
      options.log(`[${name}] FAILED: ${error}`);
    }
    running.delete(name);
    ran.push({ group, replicate, dir, result, error, wallMs: Date.now() - startedMs });
    if (result?.status === 'finished') {
      try {
        const evaluation = evaluateInstance(dir, { scenariosDir: options.scenariosDir, expectedPreregSha256: plan.prereg_sha256 });
        evaluations.set(name, evaluation);
        options.log(`[${name}] scored ${evaluation.score.score.toFixed(2)}${evaluation.hardFailures.length > 0 ? `; HARD FAILURES: ${evaluation.hardFailures.map((h) => h.id).join(', ')} (counted as 0)` : ''}`);
        // Spec §19.1: an unauthorised execution pauses every instance, evidence kept.
        if (evaluation.hardFailures.some((h) => h.id === 'unauthorized_tool_execution') && paused === null) {
          paused = `unauthorised tool execution in ${name}: the study was paused (no further instance started; evidence kept)`;
          notes.push(paused);
          // Not queue.clear(): a cleared job's promise never settles. Queued jobs see `paused` and return.
          options.log(`PAUSED: ${paused}`);
        }
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        evaluations.set(name, why);
        options.log(`[${name}] NOT SCORED: ${why}`);
      }
    }
    progress();
  };

  const runReplicates = async (from: number, to: number): Promise<void> => {
    const jobs: Promise<void>[] = [];
    // Replicate-major, so the groups advance together and a stop leaves comparable sets.
    for (let r = from; r <= to; r += 1) for (const g of GROUPS) jobs.push(queue.add(() => runOne(g, r)));
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
  if (options.signal.aborted || paused !== null) {
    expansion = { expand: false, reasons: [`not decided: the study ${options.signal.aborted ? 'was stopped' : 'was paused'} before every instance of n = ${nInitial} was scored`] };
  } else if (initial === null) {
    expansion = { expand: false, reasons: [`not decided: not every instance of n = ${nInitial} was scored (see the instances)`] };
  } else if (nExpanded > nInitial) {
    expansion = decideExpansion(initial, { ...rule, initial_n_per_group: nInitial });
    if (expansion.expand) {
      total = nExpanded * GROUPS.length;
      phase = `expanded to n = ${nExpanded} per group`;
      options.log(`expansion rule (spec §6.2): ${expansion.reasons.filter((r) => r.includes('triggers')).join('; ')} → all groups to n = ${nExpanded}`);
      await runReplicates(nInitial + 1, nExpanded);
    } else options.log(`expansion rule (spec §6.2): not triggered at n = ${nInitial}`);
  } else expansion = { expand: false, reasons: [`n = ${nInitial} already reaches the expanded n = ${rule.expanded_n_per_group}: the rule has nothing to add`] };
  if (options.signal.aborted) notes.push(`the study was stopped by the operator (${String(options.signal.reason)}); stopped instances are resumable with npm run experiment -- --resume DIR`);

  const instances: Array<{ ran: Ran; evaluation: InstanceEvaluation | string | null }> = ran
    .sort((a, b) => a.replicate - b.replicate || a.group.localeCompare(b.group))
    .map((r) => ({ ran: r, evaluation: evaluations.get(instanceDirName(r.group, r.replicate)) ?? null }));
  const report = buildStudyReport({
    plan,
    prereg,
    outDir,
    n: expansion.expand ? nExpanded : nInitial,
    expanded: expansion.expand,
    expansionReasons: expansion.reasons,
    instances: instances.map(({ ran: r, evaluation }) => ({
      group: r.group,
      replicate: r.replicate,
      dir: r.dir,
      status: r.result?.status ?? 'failed',
      statusDetail: r.error ?? r.result?.stopReason ?? (typeof evaluation === 'string' ? `not scored: ${evaluation}` : null),
      evaluation: typeof evaluation === 'string' ? null : evaluation,
      wallMs: r.wallMs,
    })),
    extraNotes: notes,
    generatedAt: new Date().toISOString(),
  });
  return { report, files: writeStudyReport(outDir, report) };
}

export function writeStudyReport(outDir: string, report: StudyReport): StudyOutcome['files'] {
  const files = { json: path.join(outDir, STUDY_FILES.json), markdown: path.join(outDir, STUDY_FILES.markdown), html: path.join(outDir, STUDY_FILES.html) };
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(files.markdown, renderReportMarkdown(report));
  writeFileSync(files.html, renderReportHtml(report));
  return files;
}


export type { ReportInstance };

const INSTANCE_DIR_RE = /^([ABC])-r([1-9][0-9]*)$/;
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
  if (found.length > MAX_STUDY_INSTANCES) throw new StudyError(`${instancesDir} holds ${found.length} instance folders, over ${MAX_STUDY_INSTANCES}`);
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
  if (!prereg) throw new StudyError(`no instance of ${outDir} ran under the study's pre-registration ${plan.prereg_sha256}: nothing to recompute against`);
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
