// npm run study -- [--n 3] [--seed S] [--out DIR] [--concurrency K] [--json] [--prereg FILE]
//                  [--key-dir DIR] [--start-at ISO] [--study-id ID] [--same-uid REASON] [--scenario DIR] [--model …]
// npm run study -- --resume DIR [--key-dir DIR] [--concurrency K] [--same-uid REASON] [--json]
// npm run study -- --recompute DIR [--json]
// npm run study -- --plan-only | --block K | --instance K | --shard I/N | --expand DIR | --merge DIR | --status DIR
//   (a study on a batch scheduler: study-batch.ts, docs/cluster.md)
//
// Runs groups A, B and C × n replicates (replicate k: the same seed for every group), scores
// every instance from its run folder, applies the pre-registered expansion rule (spec §6.2),
// checks fairness (§5.2, §19.1), states the verdict (§8.2, §17.3) and writes report.json,
// report.md and report.html. This process is the controller of every instance (ds-controller).
// SIGINT/SIGTERM stops every running instance at its next wake boundary (recorded, resumable;
// a second press cuts the wakes under way) and still writes the report;
// --resume DIR finishes such a study from its study.json (keeps the sealed instances, resumes
// the stopped ones, starts the ones never started), then the rule and the report.
// Exit: 0 report written and the batch valid (supported or rejected), 4 report written but the
// batch void or the evidence insufficient, 3 stopped (by the operator, or an instance stopped
// itself, e.g. the model pause rule): continue with --resume, 1 failed or refused (an instance
// that could not be started or resumed: the report says which), 2 misused (flags, a bad flag
// value, a path of the wrong kind). --recompute: 0 every number recomputed, 1 differences.
// Ends through runCommand: with --json, one JSON object on stdout whatever happens.
import { randomBytes } from 'node:crypto';
import { cpus, userInfo } from 'node:os';
import path from 'node:path';
import { defaultKeyDir } from '../controller/key-store.js';
import { runStudy, type StudyOutcome, type StudyRunOptions } from '../study/study-runner.js';
import { StudyScreen } from './study-screen.js';
import { StudyError, StudyPlan, STUDY_PATH_CODES } from '../study-contract/study-folder.js';
import { checkNewStudyFolder, studyResumeCommand } from '../study/study-folder-setup.js';
import { ROUNDING_CHECK } from '../oracle/rounded-figures-check.js';
import { recomputeStudy } from '../study/study-recompute.js';
import { resumeStudy } from '../study/study-resume.js';
import { GROUPS } from '../design/groups.js';
import { type StudyReport } from '../oracle/study-report.js';
import { blockCells, costLead, usableDataScreenLines } from '../study/report-markdown.js';
import { describeCost, usdText } from '../schema/cost-summary.js';
import { CommandRefusal, runCommand, type CommandContext, type CommandOutput } from './command-outcome.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { installGracefulStop, todayCompact, untilPressSettled, type GracefulStop } from './operator-stop.js';
import { MODEL_OPTIONS, MODEL_USAGE, modelChoiceOf } from './model-flags.js';
import { DEFAULT_PREREG, DEFAULT_SEED, DEFAULT_START_AT, idFlag, lockBundledPrereg, scenarioFlag, SCENARIOS_DIR, startAtFlag } from './run-defaults.js';
import { parseFlags, UsageError, wholeNumberFlag } from './command-line.js';
import { expand, merge, planOnly, runTask, status } from './study-batch.js';
import { MAX_REPLICATES_PER_GROUP } from '../study-contract/study-folder.js';
import { exploratoryWords } from '../study-contract/exploratory.js';

process.title = 'ds-controller';

const USAGE = `usage: npm run study -- [options]
       npm run study -- --resume DIR [--key-dir DIR] [--concurrency K] [--same-uid REASON] [--json]
       npm run study -- --recompute DIR [--json]
  --n N              replicates per group before the expansion rule (default: the pre-registration's, 3);
                     the pre-registered rule may then add replicates to every group (3 → 5: 15 instances)
  --seed S           the study seed; replicate k of every group runs with seed S-rk (default ${DEFAULT_SEED})
  --out DIR          the study folder (default runs/<study id>; must be new or empty)
  --concurrency K    blocks run at once, each one replicate's A, B and C side by side in lockstep (default:
                     a block per three cores, at least one: ${defaultBlockConcurrency()} here; with --resume: the study's)
  --prereg FILE      a locked pre-registration (default experiments/prereg/default.json, locked on first use)
  --key-dir DIR      the controller's key folder (default ${defaultKeyDir()}; with --resume: the study's)
  --start-at ISO     virtual time of hour 0, an ISO 8601 UTC time (default ${DEFAULT_START_AT})
  --study-id ID      the batch id shared by every instance (default study-<date>-<random>)
  --same-uid REASON  run writers and runtimes under this uid even as root, saying why
  --exploratory WHY  run a plan that departs from its pre-registration (another --n; an n without a pre-registered
                     passing count) knowingly: study.json, the report and the verdict say it is exploratory. Without
                     it such a plan is refused before anything is written, saying what to change
  --scenario DIR     the scenario folder (scenario.json and workspace/, anywhere), copied into the study folder;
                     it must be the scenario the pre-registration names (default experiments/scenario/<its id>/)
${MODEL_USAGE}
  --resume DIR       finish a stopped or interrupted study: keep its sealed instances, resume the
                     stopped ones, start the ones never started, then the expansion rule and the report
                     (everything else comes from DIR/study.json)
  --recompute DIR    rebuild a finished study's report from its run folders and compare it with report.json
  --json             print report.json (or the recomputation) on stdout, with exit_code
exit: 0 report written, batch valid · 4 report written, void or insufficient evidence · 3 stopped (continue with --resume) · 1 failed · 2 misuse

A study on a batch scheduler (Slurm job arrays, Kubernetes Indexed Jobs; docs/cluster.md):
       npm run study -- --plan-only --out DIR [--n N] [--seed S] [--study-id ID] [--key-dir DIR] [--prereg FILE]
                        [--start-at ISO] [--same-uid REASON] [--scenario DIR] [--allow-key PUBFILE ...] [--exploratory WHY] [--model …]
                        writes DIR/study.json (every instance by index, the keys allowed to sign) signed, runs nothing;
                        one task runs one block: replicate K+1's A, B and C (instance indices 3K … 3K+2)
       npm run study -- --block K|task --out DIR [--key-dir DIR] [--scratch DIR] [--prereg FILE]
       npm run study -- --shard I/N --out DIR …   (every block ≡ I mod N, one after another; I may be \`task\`)
                        runs one block of the plan side by side in lockstep (as a one-machine study does) on
                        node-local scratch (--scratch, else $DS_SCRATCH, else $TMPDIR), resumes what an earlier
                        attempt left, publishes each instance to DIR once sealed; \`task\`: K from
                        ${'$'}SLURM_ARRAY_TASK_ID or ${'$'}JOB_COMPLETION_INDEX. --prereg: this node's own locked copy of the
                        plan's pre-registration (one key per node)
                        exit: 0 done · 3 stopped, resumable (requeue) · 2 a plan it cannot run, misuse (never retry) · 1 failed
       npm run study -- --instance K|task --out DIR …  one instance, for plans made before blocks (study_version
                        1.2.0) whose model shares no server (--shard then counts instances)
       npm run study -- --expand DIR [--key-dir DIR]   decides the expansion rule on a complete round 1 and, when it
                        expands, plans round 2 for every group (exit 0 decided · 3 round 1 not done · 2 refused)
       npm run study -- --merge DIR [--key-dir DIR]    verifies every instance folder against the plan and its allowed
                        keys (--key-dir: the key that planned it), then writes the report as a one-machine study
                        (exit 0 · 4 as above · 3 not every instance done · 2 a folder or plan refused)
       npm run study -- --status DIR [--list]          counts of done / running / stopped / missing / failed, the stragglers
                        named (failed, stopped, running longest, missing as index ranges) and the next step;
                        --list: every instance, one line each (--json: every instance)`;

const OPTIONS = {
  ...MODEL_OPTIONS,
  n: { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string' },
  concurrency: { type: 'string' },
  prereg: { type: 'string' },
  'key-dir': { type: 'string' },
  'start-at': { type: 'string' },
  'study-id': { type: 'string' },
  'same-uid': { type: 'string' },
  exploratory: { type: 'string' },
  scenario: { type: 'string' },
  resume: { type: 'string' },
  recompute: { type: 'string' },
  'plan-only': { type: 'boolean' },
  instance: { type: 'string' },
  block: { type: 'string' },
  shard: { type: 'string' },
  scratch: { type: 'string' },
  'allow-key': { type: 'string', multiple: true },
  expand: { type: 'string' },
  merge: { type: 'string' },
  status: { type: 'string' },
  list: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;


/** Blocks at once when none is asked: a block is three instances, so one per three cores (at least one). */
function defaultBlockConcurrency(): number {
  return Math.max(1, Math.round(cpus().length / 3));
}

function summary(report: StudyReport, files: { json: string; markdown: string; html: string } | null): string {
  const g = report.groups;
  const f = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(2));
  return [
    `VERDICT: ${report.verdict.toUpperCase()}${report.dry_run ? ' (apparatus dry run)' : ''}`,
    `  ${report.verdict_statement}`,
    ...(report.dry_run_statement ? [`  ${report.dry_run_statement}`] : []),
    ...(report.voided ? [`  VOID: ${report.void_reasons.join('; ')}`] : []),
    ...(report.exploratory ? [`  EXPLORATORY: ${exploratoryWords(report.exploratory)}`] : []),
    `  n = ${report.n} per group${report.expanded ? ` (expanded from ${report.n_initial})` : ''}; medians A ${f(g.A.median)} · B ${f(g.B.median)} · C ${f(g.C.median)}`,
    ...report.thresholds.map((t) => `  ${t.met === true ? 'met    ' : t.met === false ? 'NOT met' : 'n/a    '} ${t.description}: ${t.observed} (required ${t.required})`),
    `  fairness: ${report.fairness.ok ? 'OK' : 'FAILED'} · hard failures: A ${g.A.hard_failures}, B ${g.B.hard_failures}, C ${g.C.hard_failures}`,
    ...blockLines(report),
    ...usableDataScreenLines(report).map((line) => `  ${line}`),
    ...costScreenLines(report),
    ...report.instances.filter((i) => i.status !== 'finished' || i.hard_failures.length > 0).map((i) => `  ${i.group}-r${i.replicate}: ${i.status}${i.status_detail ? ` (${i.status_detail})` : ''}${i.hard_failures.length > 0 ? `; hard failures ${i.hard_failures.map((h) => h.id).join(', ')}` : ''}`),
    ...report.notes.map((n) => `  note: ${n}`),
    ...(files ? [`  report: ${files.json}`, `          ${files.markdown}`, `          ${files.html}`] : []),
    '',
  ].join('\n');
}

/** The study's cost and each group's (report 2.4.0, issue 36), or that it was not priced or not recorded. */
function costScreenLines(report: StudyReport): string[] {
  const cost = report.cost;
  if (cost === undefined || cost.priced_calls === 0) return [`  ${costLead(report)}`];
  return [`  ${describeCost(cost).replace(/^cost: /, 'cost of the study: ')}; ${GROUPS.map((g) => `${g} ${usdText(report.groups[g].cost?.nano_usd ?? 0)}`).join(' · ')}`];
}

/** Blocks listed one by one on screen up to this many; beyond, only those whose turns failed or load was confounded. */
const MAX_BLOCK_LINES = 10;

/** Each block's turns and failed calls per group with its load verdict (report 2.1.0); a study before blocks has none. */
function blockLines(report: StudyReport): string[] {
  const blocks = report.blocks ?? [];
  if (blocks.length === 0) return [];
  const shown = blocks.length <= MAX_BLOCK_LINES ? blocks : blocks.filter((b) => !b.turns.ok || b.load.confounded).slice(0, MAX_BLOCK_LINES);
  const confounded = blocks.filter((b) => b.load.confounded).length;
  const lines = shown.map((b) => {
    const [replicate, turns, , , failures, load] = blockCells(b);
    return `    block ${replicate}: turns ${turns}; failed calls ${GROUPS.map((g, i) => `${g}: ${failures[i]}`).join(' · ')}; load ${load}`;
  });
  return [`  blocks: ${blocks.length}, ${blocks.filter((b) => !b.turns.ok).length} with turns not as drawn, ${confounded} confounded by the server's load${shown.length < blocks.length ? ` (listed: ${shown.length})` : ''}`, ...lines];
}

/** What a study run sets itself, so what --resume and --recompute take from the folder instead. */
const PLAN_FLAGS = ['n', 'seed', 'out', 'prereg', 'start-at', 'study-id', 'exploratory', 'scenario', ...(Object.keys(MODEL_OPTIONS) as (keyof typeof MODEL_OPTIONS)[])] as const;

/** A StudyError that names a path of the wrong kind is misuse (exit 2), with the study's own code. */
function asCommandFailure(error: unknown): unknown {
  if (error instanceof StudyError && STUDY_PATH_CODES.has(error.code)) return new CommandRefusal(`study_${error.code}`, error.message, EXIT_CODES.misused);
  return error;
}

function failedInstances(report: StudyReport): string[] {
  return report.instances.filter((i) => i.status === 'failed').map((i) => `${i.group}-r${i.replicate}`);
}

/**
 * The exit of a study run: an instance that could not be started or resumed fails it (1: the
 * report is partial); a stop — the operator's, or an instance's own (the model pause rule) —
 * is 3, resumable; a pause after an unauthorised execution is not undone by resuming, so it is
 * the void batch's 4; else 0, or 4 when the batch is void or the evidence insufficient.
 */
function exitCodeOf(outcome: StudyOutcome, aborted: boolean): number {
  const { report } = outcome;
  if (failedInstances(report).length > 0) return EXIT_CODES.failed;
  if (aborted || (outcome.paused === null && report.instances.some((i) => i.status === 'stopped'))) return EXIT_CODES.stopped;
  return report.voided || report.verdict === 'insufficient evidence' ? EXIT_CODES.notEvidence : EXIT_CODES.ok;
}

/** The last lines of a run that did not end the study: what state it is in and the one command that continues it. */
function unfinishedLines(outcome: StudyOutcome, exitCode: number, outDir: string): string[] {
  const resume = studyResumeCommand(outDir);
  if (exitCode === EXIT_CODES.failed) {
    const failed = failedInstances(outcome.report);
    return [`NOT FINISHED: ${failed.length} instance(s) could not be started or resumed (${failed.join(', ')}; why: above and in report.json); the report covers the others. Nothing was deleted: fix what the message says (or move the folder away to start that instance afresh), then ${resume}`];
  }
  if (exitCode === EXIT_CODES.stopped) {
    const stopped = outcome.report.instances.filter((i) => i.status === 'stopped').map((i) => `${i.group}-r${i.replicate}`);
    return [`STOPPED: the study is not finished (${stopped.length > 0 ? `stopped: ${stopped.join(', ')}` : 'no instance was under way'}; every stop recorded, nothing deleted); continue it with: ${resume}`];
  }
  return [];
}

function studyOutput(outcome: StudyOutcome, aborted: boolean, outDir: string, screen: StudyScreen, json: boolean): CommandOutput {
  // The live block goes before the verdict block, which then comes last and whole.
  screen.finish();
  const exitCode = exitCodeOf(outcome, aborted);
  const first = outcome.nothingToDo ? [`nothing to do: every instance of ${outDir} is sealed and report.json follows from them (left as it was)`] : [];
  const last = unfinishedLines(outcome, exitCode, outDir);
  // With --json stdout is the report alone; what state the study is in still reaches the screen.
  if (json) for (const line of [...first, ...last]) screen.line(line);
  const text = [...first, summary(outcome.report, outcome.files).trimEnd(), ...last, ''].join('\n');
  return { exitCode, json: outcome.report, text };
}

/**
 * Ctrl-C for a study (new or resumed): stops every running instance at its next wake boundary
 * (a cut wake is never run again, and the groups of a replicate must have had the same wakes:
 * oracle/fairness.ts same_wake_outcomes), and names the resume.
 */
function studyStop(outDir: string, screen: StudyScreen): GracefulStop {
  return installGracefulStop((l) => screen.line(l), `stopping every running instance (each stop recorded), then writing the report; continue later with ${studyResumeCommand(outDir)}`, studyResumeCommand(outDir));
}

/** How a study run (new or resumed) ends: its failures typed, the press window waited out, its output. */
async function finishStudy(run: () => Promise<StudyOutcome>, stop: GracefulStop, outDir: string, screen: StudyScreen, json: boolean): Promise<CommandOutput> {
  let outcome: StudyOutcome;
  try {
    outcome = await run();
  } catch (error) {
    screen.finish();
    throw asCommandFailure(error);
  }
  // npm's relayed copy of a Ctrl-C must meet the handler, not the process's teardown (operator-stop.ts).
  await untilPressSettled();
  return studyOutput(outcome, stop.atWakeEnd.aborted, outDir, screen, json);
}

async function main(context: CommandContext): Promise<CommandOutput | null> {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return null;
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[0])}: this command takes flags only`);
  const { values } = args;
  const modes = (['resume', 'recompute', 'plan-only', 'block', 'instance', 'shard', 'expand', 'merge', 'status'] as const).filter((m) => values[m] !== undefined && values[m] !== false);
  if (modes.length > 1) throw new UsageError(`--${modes[0]} and --${modes[1]} cannot be combined: one mode at a time`);
  const batchOnly = (['scratch', 'allow-key'] as const).filter((f) => values[f] !== undefined);
  const batchMode = modes[0];
  if (values.list === true && batchMode !== 'status') throw new UsageError('--list belongs to --status DIR: it lists every instance of a batch study');
  const taskMode = batchMode === 'block' || batchMode === 'instance' || batchMode === 'shard';
  if (batchOnly.length > 0 && !(batchMode === 'plan-only' && batchOnly.every((f) => f === 'allow-key')) && !(taskMode && batchOnly.every((f) => f === 'scratch'))) {
    throw new UsageError(`--${batchOnly[0]} belongs to ${batchOnly[0] === 'scratch' ? '--block / --instance / --shard' : '--plan-only'}`);
  }
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  const refuseFlags = (mode: string, allowed: readonly string[]): void => {
    for (const [flag, value] of Object.entries(values)) if (value !== undefined && flag !== mode && flag !== 'json' && !allowed.includes(flag)) throw new UsageError(`--${flag} cannot be combined with --${mode}${mode === 'merge' || mode === 'status' || mode === 'expand' || mode === 'block' || mode === 'instance' || mode === 'shard' ? ': the plan says what the study runs with' : ''}`);
  };
  try {
    if (taskMode) {
      refuseFlags(batchMode, ['out', 'key-dir', 'scratch', 'prereg']);
      if (values.out === undefined) throw new UsageError(`--${batchMode} needs --out STUDY: the folder --plan-only wrote`);
      const operator = `${userInfo().username} (uid ${process.getuid?.() ?? 'unknown'})`;
      return await runTask({ outDir: values.out, block: values.block, instance: values.instance, shard: values.shard, keyDir: values['key-dir'], scratch: values.scratch, preregFile: values.prereg, scenariosDir: SCENARIOS_DIR, operator, log });
    }
    if (batchMode === 'merge') {
      refuseFlags('merge', ['key-dir']);
      return await merge(values.merge!, values['key-dir'], SCENARIOS_DIR, log);
    }
    if (batchMode === 'expand') {
      refuseFlags('expand', ['key-dir']);
      return await expand(values.expand!, values['key-dir'], SCENARIOS_DIR, log);
    }
    if (batchMode === 'status') {
      refuseFlags('status', ['list']);
      return status(values.status!, values.list === true);
    }
  } catch (error) {
    throw asCommandFailure(error);
  }
  if (values.recompute !== undefined) {
    for (const flag of [...PLAN_FLAGS, 'concurrency', 'resume'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} cannot be combined with --recompute: the study folder says what it ran with`);
    }
    const dir = path.resolve(values.recompute);
    let r;
    try {
      r = recomputeStudy(dir, SCENARIOS_DIR);
    } catch (error) {
      throw asCommandFailure(error);
    }
    // The rounding check's own line: how many figures it held to their rule, or why it held none.
    const rounding = r.rounding === null ? '' : `${ROUNDING_CHECK}: ${r.rounding.unchecked === null ? `${r.rounding.checked} figure(s) checked, ${r.rounding.problems.length === 0 ? 'all agree' : `${r.rounding.problems.length} do not (among the differences)`}` : `not checked (${r.rounding.unchecked})`}\n`;
    const text = (r.differences.length === 0 ? `RECOMPUTED: every number of ${values.recompute}/report.json follows from its run folders (verdict ${r.report.verdict})\n` : `DIFFERENT: ${r.differences.length} difference(s) between report.json and the run folders:\n${r.differences.map((d) => `  ${d}`).join('\n')}\n`) + rounding;
    return { exitCode: r.differences.length === 0 ? EXIT_CODES.ok : EXIT_CODES.failed, json: { match: r.differences.length === 0, differences: r.differences, unreadable: r.unreadable, rounding: r.rounding, report: r.report }, text };
  }

  const concurrency = wholeNumberFlag('concurrency', values.concurrency, 1, 64);
  const operator = `${userInfo().username} (uid ${process.getuid?.() ?? 'unknown'})`;
  const isolation = values['same-uid'] === undefined ? {} : { isolation: { forceSameUid: values['same-uid'] } };
  const screen = new StudyScreen();
  /** What a new and a resumed study alike take from this command line. */
  const runOptions = (outDir: string, stop: GracefulStop): StudyRunOptions => ({
    outDir,
    scenariosDir: SCENARIOS_DIR,
    operator,
    signal: stop.signal,
    stopAtWakeEnd: stop.atWakeEnd,
    ...isolation,
    log: (line) => screen.line(line),
    onProgress: (p) => screen.progress(p),
  });

  if (values.resume !== undefined) {
    for (const flag of PLAN_FLAGS) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} cannot be combined with --resume: a resumed study keeps what it was started with (its study.json)`);
    }
    const outDir = path.resolve(values.resume);
    const stop = studyStop(outDir, screen);
    return finishStudy(() => resumeStudy({ ...runOptions(outDir, stop), keyDir: values['key-dir'] ?? null, concurrency }), stop, outDir, screen, context.json);
  }

  // Every flag is checked before anything is written (a key, a lock, the study folder).
  const model = modelChoiceOf(values);
  const n = wholeNumberFlag('n', values.n, 1, MAX_REPLICATES_PER_GROUP);
  // The controller's own parser of hour 0 (the wake schedule's Timestamp), so what passes here passes there.
  const startAt = startAtFlag(values['start-at']);
  const seed = values.seed ?? DEFAULT_SEED;
  if (!StudyPlan.shape.seed.safeParse(seed).success) throw new UsageError(`--seed must be 1 to 100 characters, got ${seed.length}`);
  // Every instance's manifest carries it as its experiment_id, and the default folder is named by it.
  const studyId = idFlag('study-id', values['study-id']) ?? `study-${todayCompact()}-${randomBytes(3).toString('hex')}`;
  const outDir = path.resolve(values.out ?? path.join('runs', studyId));
  const keyDir = values['key-dir'] ?? defaultKeyDir();
  const scenarioDir = scenarioFlag(values.scenario);
  if (batchMode === 'plan-only') {
    if (values.concurrency !== undefined) throw new UsageError('--concurrency cannot be combined with --plan-only: the scheduler decides how many tasks run at once');
    if (values.prereg === undefined) lockBundledPrereg(keyDir, (l) => process.stderr.write(`[study] ${l}\n`));
    try {
      return await planOnly({ outDir, seed, preregFile: values.prereg ?? DEFAULT_PREREG, keyDir, n, startAt, model, studyId, sameUid: values['same-uid'] ?? null, allowKeyFiles: values['allow-key'] ?? [], exploratory: values.exploratory ?? null, scenariosDir: SCENARIOS_DIR, scenarioDir, log: (l) => process.stderr.write(`${l}\n`) });
    } catch (error) {
      throw asCommandFailure(error);
    }
  }
  try {
    checkNewStudyFolder(outDir);
  } catch (error) {
    throw asCommandFailure(error);
  }
  const stop = studyStop(outDir, screen);
  if (values.prereg === undefined) lockBundledPrereg(keyDir, (l) => screen.line(`[study] ${l}`));
  const effectiveConcurrency = concurrency ?? defaultBlockConcurrency();
  screen.line(`[study] ${studyId}: seed ${seed}, ${n ?? 'pre-registered'} replicate(s) per group, ${effectiveConcurrency} block(s) at once, folder ${outDir}`);
  return finishStudy(
    () => runStudy({ ...runOptions(outDir, stop), seed, preregFile: values.prereg ?? DEFAULT_PREREG, keyDir, concurrency: effectiveConcurrency, n, startAt, model, studyId, exploratory: values.exploratory ?? null, scenarioDir }),
    stop,
    outDir,
    screen,
    context.json,
  );
}

runCommand('study', USAGE, main);
