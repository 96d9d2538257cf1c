// npm run experiment -- --group A|B|C [--seed S] [--prereg FILE] [--out DIR] [--key-dir DIR]
//                       [--model reference|openai|replay] [--speed F] [--start-at ISO]
//                       [--experiment-id ID] [--replicate N] [--same-uid REASON] [--scenario DIR] [--json]
// npm run experiment -- --group A|B|C --drill unknown-outcome [--out DIR] [...] (cli/drill.ts)
// npm run experiment -- --resume DIR [--key-dir DIR] [--speed F] [--same-uid REASON] [--json]
//
// This process is the experiment controller (ds-controller, DESIGN §2): it holds the key,
// spawns ds-writer and ds-runtime, drives the virtual clock and signs. SIGINT/SIGTERM is an
// emergency stop: recorded, head signed, nothing deleted, resumable with --resume.
// Exit 0 finished (sealed) and verified, 3 stopped (resumable), 1 refused, failed or not verified, 2 misused,
// 4 finished and verified but NO USABLE DATA (too few accepted model answers: foundation/exit-codes.ts).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { resumeInstance, runNewInstance, type Group, type InstanceResult } from '../controller/instance-runner.js';
import { durationText } from '../design/model-forecast.js';
import { defaultKeyDir } from '../controller/key-store.js';
import { preregSha256 } from '../design/manifest.js';
import { readReplaySource } from '../design/model-choice.js';
import { PreRegistration, readPreregJson } from '../design/prereg.js';
import { recordedUsableDataRule, summarizeRun } from '../controller/run-summary.js';
import { describeCost } from '../schema/cost-summary.js';
import { parseSpeed } from '../controller/virtual-clock.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { FAULT_ENV } from '../schema/fault-points.js';
import { checkRunFollowsPlan } from '../verification/run-plan-check.js';
import { FaultArmingError, FaultSwitch } from '../schema/fault-switch.js';
import { RUN_FILES } from '../schema/run-files.js';
import { describeFailures, formatShare } from '../schema/usable-data.js';
import { verifyDirectory } from '../writer/verify-store.js';
import { parseFlags, UsageError } from './command-line.js';
import { COST_CAP_OPTIONS, COST_CAP_USAGE, costCapRaiseOf } from './cost-cap-flags.js';
import { COST_CAP_STOP_WORDS } from '../design/cost-cap.js';
import { runCommand, type CommandOutput } from './command-outcome.js';
import { drillExperimentId, drillLines, DRILLS, isDrillName, runUnknownOutcomeDrill, type DrillReport } from './drill.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { MODEL_OPTIONS, MODEL_USAGE, modelChoiceOf, replaySettingsOf, type ReplaySettings } from './model-flags.js';
import { installOperatorStop, todayCompact, untilPressSettled } from './operator-stop.js';
import { ProgressLine } from './progress-line.js';
import { describePromptReuse } from '../schema/prompt-reuse-summary.js';
import { DEFAULT_PREREG, DEFAULT_SEED, DEFAULT_START_AT, folderFlag, idFlag, lockBundledPrereg, scenarioFlag, SCENARIOS_DIR, seedFlag, startAtFlag } from './run-defaults.js';

process.title = 'ds-controller';


const USAGE = `usage: npm run experiment -- --group A|B|C [options]
       npm run experiment -- --resume DIR [--key-dir DIR] [--speed F] [--raise-cost-cap-usd USD --cost-cap-reason TEXT] [--json]
  --group A|B|C      capability switches: A no persistent state, B persistent state, C + re-planning
                     (with --model replay: the source run's, like its seed, start, experiment id, replicate)
  --seed S           the seed of the schedule and interventions (default ${DEFAULT_SEED})
${MODEL_USAGE}
  --prereg FILE      a locked pre-registration (lock it first: npm run prereg -- lock FILE);
                     default experiments/prereg/default.json, locked on first use
  --scenario DIR     the scenario folder (scenario.json and workspace/, anywhere; docs/own-study.md); it must be
                     the scenario the pre-registration names (default experiments/scenario/<its id>/)
  --out DIR          the run folder (default runs/<experiment-id>/<blind id>; must be new or empty)
  --key-dir DIR      the controller's key folder (default ${defaultKeyDir()})
  --speed F          real-time factor of the virtual clock (default: as fast as possible)
  --start-at ISO     virtual time of hour 0 (default ${DEFAULT_START_AT})
  --experiment-id ID the batch id shared by the A/B/C instances of a replicate
  --replicate N      which replicate of the batch this is (default 1)
  --same-uid REASON  run writer and runtime under this uid even as root, saying why
  --resume DIR       continue an interrupted instance from its store
${COST_CAP_USAGE}
  --drill NAME       ${DRILLS.join('|')}: a drill run, never study data (docs/controller.md "Manual repair"):
                     the runtime is killed at its first write intent, a third party changes the file,
                     the resume records the outcome unknown and stops; the screen prints the repair
                     and the resume commands to run next
  --json             print the result as one JSON object`;

const OPTIONS = {
  ...MODEL_OPTIONS,
  ...COST_CAP_OPTIONS,
  group: { type: 'string' },
  seed: { type: 'string' },
  prereg: { type: 'string' },
  out: { type: 'string' },
  'key-dir': { type: 'string' },
  speed: { type: 'string' },
  'start-at': { type: 'string' },
  'experiment-id': { type: 'string' },
  replicate: { type: 'string' },
  'same-uid': { type: 'string' },
  scenario: { type: 'string' },
  resume: { type: 'string' },
  drill: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;

function isGroup(value: string): value is Group {
  return value === 'A' || value === 'B' || value === 'C';
}

/** The alarm of an instance that is not data (issue 15 item 8): one line, always starting `NO USABLE DATA:`. */
function noUsableDataLine(result: InstanceResult, reason: string): string {
  return `NO USABLE DATA: ${reason}${result.status === 'finished' ? '' : ' (so far: the instance is stopped; resume it to finish)'}`;
}

async function main(): Promise<CommandOutput | null> {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return null;
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[0])}: this command takes flags only`);
  const { values } = args;
  const startAt = startAtFlag(values['start-at']);
  const seedGiven = values.seed === undefined ? undefined : seedFlag(values.seed);
  const experimentIdGiven = idFlag('experiment-id', values['experiment-id']);
  folderFlag('out', values.out);
  folderFlag('resume', values.resume);
  const costCapRaise = costCapRaiseOf(values);
  folderFlag('key-dir', values['key-dir']);
  const scenarioDir = scenarioFlag(values.scenario);
  const progress = new ProgressLine(process.stderr);
  const log = (line: string): void => {
    progress.line(`[ds-controller] ${line}`);
  };
  const stop = installOperatorStop(log, 'finishing the current step, recording the stop and signing the head');
  const drill = values.drill;
  if (drill !== undefined) {
    if (!isDrillName(drill)) throw new UsageError(`--drill must be ${DRILLS.join(' or ')} (got ${JSON.stringify(drill)})`);
    for (const flag of ['resume', 'experiment-id', 'replicate'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} cannot be combined with --drill: ${flag === 'resume' ? 'a drill run is resumed (after its repair) with --resume alone' : 'a drill makes its own experiment id (drill-…), so that it never passes as a batch of the study'}`);
    }
    if (values.model === 'replay') throw new UsageError('--model replay cannot be combined with --drill: a replay takes its source\'s experiment id, a drill makes its own (drill-…)');
    if (process.env[FAULT_ENV]) throw new UsageError(`${FAULT_ENV} is set: a drill arms its own fault; unset it (it is only for npm run faults)`);
  }
  let faults: FaultSwitch;
  try {
    faults = FaultSwitch.fromEnv('controller', log);
  } catch (error) {
    if (error instanceof FaultArmingError) throw new UsageError(error.message);
    throw error;
  }

  let speed: number | null = null;
  try {
    speed = values.speed === undefined ? null : parseSpeed(values.speed);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const common = {
    keyDir: values['key-dir'] ?? defaultKeyDir(),
    speed,
    signal: stop.signal,
    operator: `${userInfo().username} (uid ${process.getuid?.() ?? 'unknown'})`,
    scenariosDir: SCENARIOS_DIR,
    ...(values['same-uid'] === undefined ? {} : { isolation: { forceSameUid: values['same-uid'] } }),
    log,
    faults,
  };

  let result: InstanceResult;
  let drillReport: DrillReport | null = null;
  /** performance.now() when a new instance started (null: a resume or a drill, not timed against a forecast). */
  let runStartedMs: number | null = null;
  if (values.resume !== undefined) {
    for (const flag of ['group', 'seed', 'prereg', 'out', 'start-at', 'experiment-id', 'replicate', 'model', 'replay-from', 'base-url', 'model-id', 'scenario'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} cannot be combined with --resume: a resumed instance keeps what it was started with${flag === 'scenario' ? ' (its own scenario.json)' : ''}`);
    }
    result = await resumeInstance({ ...common, runDir: values.resume, costCapRaise });
  } else {
    if (values.model !== 'replay' && (values.group === undefined || !isGroup(values.group))) throw new UsageError(`give --group A, B or C${values.group === undefined ? '' : ` (got ${JSON.stringify(values.group)})`}`);
    const model = modelChoiceOf(values);
    // A replay runs under its source's settings (issue 16 item 5), checked before anything is written.
    const replay: ReplaySettings | null = 'from_run' in model ? replaySettingsOf(readReplaySource(model.from_run), values, preregSha256(PreRegistration.parse(readPreregJson(values.prereg ?? DEFAULT_PREREG)))) : null;
    for (const line of replay?.lines ?? []) log(line);
    const group = replay?.group ?? values.group;
    if (group === undefined || !isGroup(group)) throw new UsageError(`give --group A, B or C${group === undefined ? '' : ` (got ${JSON.stringify(group)})`}`);
    if (values.prereg === undefined) lockBundledPrereg(common.keyDir, log);
    const replicate = replay?.replicate ?? Number(values.replicate ?? '1');
    if (!Number.isInteger(replicate) || replicate < 1) throw new UsageError(`--replicate must be a whole number ≥ 1, got ${values.replicate}`);
    const experimentId = replay?.experimentId ?? experimentIdGiven ?? (drill === undefined ? `exp-${todayCompact()}-${randomBytes(3).toString('hex')}` : drillExperimentId());
    // Random, never derived from the group: the id must not reveal it (spec §8.5).
    const groupBlindId = `inst-${randomBytes(4).toString('hex')}`;
    // A replay shares its source's experiment id: its folder says it is a replay, beside the source's instances.
    const runDir = values.out ?? path.join('runs', experimentId, replay === null ? groupBlindId : `replay-${groupBlindId}`);
    const seed = replay?.seed ?? seedGiven ?? DEFAULT_SEED;
    log(`group ${group}, seed ${seed}, run folder ${path.resolve(runDir)}${drill === undefined ? '' : `; DRILL ${drill}: not study data`}`);
    const instance = {
      ...common,
      runDir,
      preregFile: values.prereg ?? DEFAULT_PREREG,
      seed,
      group,
      startAt: replay?.startAt ?? startAt,
      experimentId,
      replicate,
      groupBlindId,
      startedAt: new Date().toISOString(),
      model,
      scenarioDir,
    };
    if (drill === undefined) {
      runStartedMs = performance.now();
      result = await runNewInstance(instance);
    } else {
      const { faults: _unarmed, signal: _signal, ...rest } = instance;
      const resumeFlags = [...(values['key-dir'] === undefined ? [] : ['--key-dir', values['key-dir']]), ...(values['same-uid'] === undefined ? [] : ['--same-uid', values['same-uid']])];
      const drilled = await runUnknownOutcomeDrill({ instance: rest, signal: stop.signal, operatorName: userInfo().username, resumeFlags });
      result = drilled.result;
      drillReport = drilled.report;
    }
  }
  progress.finish();
  const summary = summarizeRun(result.runDir, recordedUsableDataRule(result.runDir));
  const usable = summary.usable_data;
  const verified = verifyDirectory(result.runDir, { allowOpen: result.status !== 'finished' });
  const plan = checkRunFollowsPlan(result.runDir, parsePublicKeyHex(readFileSync(path.join(result.runDir, RUN_FILES.publicKey), 'utf8')), { scenariosDir: SCENARIOS_DIR });
  const verify = { ok: verified.ok && plan.ok, failures: verified.failures.length + plan.failures.length, warnings: verified.warnings.length + plan.notes.length };
  const stopped = result.status !== 'finished';
  const s = summary;
  const text = [
    `${stopped ? 'STOPPED' : 'FINISHED'}: ${result.runDir}`,
    `  experiment ${result.experimentId}, instance ${result.groupBlindId}`,
    `  ${result.isolationSummary}`,
    `  wakes: ${s.wakes_ended} of ${result.wakesTotal} ended (${result.wakesRun} in this run); ${s.events} events, head seq ${result.head.seq}`,
    `  model calls ${usable.calls} made: ${usable.accepted} accepted${usable.share === null ? '' : ` (${formatShare(usable.share)})`}${usable.substantive === null ? '' : `, substantive in ${usable.substantive} of ${usable.call_wakes} wake(s)`}, failed: ${describeFailures(usable.by_failure)}${usable.not_made > 0 ? ` · ${usable.not_made} not made (budget exhausted, or held back by the cost cap)` : ''} · proposals ${s.proposals} · executions ${s.executions} · denials ${s.denials} · tool failures ${s.tool_failures}`,
    `  ${describePromptReuse(s.prompt_reuse)}`,
    `  ${describeCost(s.cost)}`,
    `  claims ${s.claims} · plan revisions ${s.plan_revisions.proposed} (accepted ${s.plan_revisions.accepted}, rejected ${s.plan_revisions.rejected}) · checkpoints ${s.checkpoints}${s.empty_checkpoints > 0 ? ` (+${s.empty_checkpoints} empty)` : ''} · refused appends ${s.refused_appends} · restarts ${s.process_restarts} · unknown outcomes ${s.unknown_outcomes}`,
    result.finalHead ? `  sealed; final head signed at seq ${result.finalHead.seq}` : `  stopped: ${result.stopReason}; ${drillReport?.reached ? 'repair first, then continue (the commands are below)' : result.stopReason?.startsWith(COST_CAP_STOP_WORDS) ? 'continue with a raised cap (the command above): under the same cap the resume is refused' : `continue with: npm run experiment -- --resume ${result.runDir}`}`,
    ...timeLines(result, runStartedMs),
    ...result.notes.map((n) => `  note: ${n}`),
    // A stopped store has no final signed head: plain verify fails it by design, --open accepts it as a warning.
    `  verify: ${verify.ok ? 'OK' : 'FAILED'} (${verify.failures} failure(s), ${verify.warnings} warning(s)); details: npm run verify -- ${result.runDir}${stopped ? ' --open' : ''}`,
    // As loud as a failure, last so it is the line a reader sees (issue 15 item 8).
    usable.usable ? `  usable data: yes — ${usable.reason}` : noUsableDataLine(result, usable.reason),
    // The drill's account and the commands to run next come last: they are what the operator does now.
    ...(drillReport === null ? [] : drillLines(drillReport)),
  ].join('\n');
  // With --json, stdout stays one JSON object (summary.usable_data); the alarm goes to the screen as well.
  if (process.argv.includes('--json') && !usable.usable) process.stderr.write(`${noUsableDataLine(result, usable.reason)}\n`);
  const json = {
    status: result.status,
    run_dir: result.runDir,
    experiment_id: result.experimentId,
    group_blind_id: result.groupBlindId,
    isolation: result.isolation,
    isolation_summary: result.isolationSummary,
    wakes_total: result.wakesTotal,
    wakes_run: result.wakesRun,
    head: result.head,
    final_head: result.finalHead,
    stop_reason: result.stopReason,
    notes: result.notes,
    summary,
    verify,
    timing: { wall_ms: runStartedMs === null ? null : Math.round(performance.now() - runStartedMs), forecast: result.forecast },
    ...(drillReport === null ? {} : { drill: drillReport }),
  };
  // npm's relayed copy of a Ctrl-C must meet the handler, not the process's teardown (operator-stop.ts).
  await untilPressSettled();
  return { exitCode: exitCodeOf(), json, text };

  function exitCodeOf(): number {
    if (!verify.ok) return EXIT_CODES.failed;
    // A drill that did not reach its unknown outcome failed as a drill, unless the operator stopped it (resumable).
    if (drillReport !== null && !drillReport.reached && !(stop.signal.aborted && result.status === 'stopped')) return EXIT_CODES.failed;
    if (result.status !== 'finished') return EXIT_CODES.stopped;
    return usable.usable ? EXIT_CODES.ok : EXIT_CODES.notEvidence;
  }
}

/** How long the run took against what the preflight predicted for the instance (issue 31 item 3b). */
function timeLines(result: InstanceResult, startedMs: number | null): string[] {
  if (startedMs === null || result.forecast === null) return [];
  const f = result.forecast;
  const tookMs = performance.now() - startedMs;
  const forWakes = result.wakesRun === result.wakesTotal ? '' : ` for ${result.wakesRun} of ${result.wakesTotal} wakes`;
  return [`  time: took ${durationText(tookMs)}${forWakes}; the preflight predicted ${durationText(f.predicted_instance_ms.low)} to ${durationText(f.predicted_instance_ms.high)} for ${f.wakes} wakes (${f.speed.prompt_tokens_per_s} prompt tokens/s, ${f.speed.generated_tokens_per_s} generated tokens/s, ${f.speed.source})${f.warnings.length > 0 ? `; warned: ${f.warnings.join('; ')}` : ''}`];
}

runCommand('experiment', USAGE, main);
