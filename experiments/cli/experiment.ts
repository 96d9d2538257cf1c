// npm run experiment -- --group A|B|C [--seed S] [--prereg FILE] [--out DIR] [--key-dir DIR]
//                       [--model reference|openai|replay] [--speed F] [--start-at ISO]
//                       [--experiment-id ID] [--replicate N] [--same-uid REASON] [--json]
// npm run experiment -- --resume DIR [--key-dir DIR] [--speed F] [--same-uid REASON] [--json]
//
// This process is the experiment controller (ds-controller, DESIGN §2): it holds the key,
// spawns ds-writer and ds-runtime, drives the virtual clock and signs. SIGINT/SIGTERM is an
// emergency stop: recorded, head signed, nothing deleted, resumable with --resume.
// Exit 0 finished (sealed) and verified, 3 stopped (resumable), 1 refused, failed or not verified, 2 misused,
// 4 finished and verified but NO USABLE DATA (too few accepted model answers: experiments/cli/exit-codes.ts).
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import path from 'node:path';
import { InstanceError, resumeInstance, runNewInstance, type Group, type InstanceResult } from '../../controller/instance-runner.js';
import { KeyStoreError, defaultKeyDir } from '../../controller/key-store.js';
import { PreregInputError } from '../../controller/prereg.js';
import { parseSpeed, VirtualClockError } from '../../controller/virtual-clock.js';
import { ModelChoiceError } from '../../controller/model-choice.js';
import { checkRunFollowsPlan } from '../../controller/plan-conformance.js';
import { recordedUsableDataRule, summarizeRun } from '../../controller/run-summary.js';
import { describeFailures, formatShare } from '../../schema/usable-data.js';
import { EXIT_CODES } from './exit-codes.js';
import { parsePublicKeyHex } from '../../schema/ed25519-keys.js';
import { FaultArmingError, FaultSwitch } from '../../schema/fault-switch.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { verifyDirectory } from '../../writer/verify-store.js';
import { installOperatorStop, todayCompact } from './operator-stop.js';
import { parseFlags, UsageError } from './command-line.js';
import { MODEL_OPTIONS, MODEL_USAGE, ModelFlagError, modelChoiceOf } from './model-flags.js';
import { ProgressLine } from './progress-line.js';
import { BundledPreregError, DEFAULT_PREREG, DEFAULT_SEED, DEFAULT_START_AT, SCENARIOS_DIR, lockBundledPrereg } from './run-defaults.js';
import { readFileSync } from 'node:fs';

process.title = 'ds-controller';


const USAGE = `usage: npm run experiment -- --group A|B|C [options]
       npm run experiment -- --resume DIR [--key-dir DIR] [--speed F] [--json]
  --group A|B|C      capability switches: A no persistent state, B persistent state, C + re-planning
  --seed S           the seed of the schedule and interventions (default ${DEFAULT_SEED})
${MODEL_USAGE}
  --prereg FILE      a locked pre-registration (lock it first: npm run prereg -- lock FILE);
                     default experiments/prereg/default.json, locked on first use
  --out DIR          the run folder (default runs/<experiment-id>/<blind id>; must be new or empty)
  --key-dir DIR      the controller's key folder (default ${defaultKeyDir()})
  --speed F          real-time factor of the virtual clock (default: as fast as possible)
  --start-at ISO     virtual time of hour 0 (default ${DEFAULT_START_AT})
  --experiment-id ID the batch id shared by the A/B/C instances of a replicate
  --replicate N      which replicate of the batch this is (default 1)
  --same-uid REASON  run writer and runtime under this uid even as root, saying why
  --resume DIR       continue an interrupted instance from its store
  --json             print the result as one JSON object`;

const OPTIONS = {
  ...MODEL_OPTIONS,
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
  resume: { type: 'string' },
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

async function main(): Promise<number> {
  const args = parseFlags(USAGE, OPTIONS);
  if (args === null) return 0;
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[0])}: this command takes flags only`);
  const { values } = args;
  const json = values.json ?? false;
  const progress = new ProgressLine(process.stderr);
  const log = (line: string): void => {
    progress.line(`[ds-controller] ${line}`);
  };
  const stop = installOperatorStop(log, 'finishing the current step, recording the stop and signing the head');
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
  if (values.resume !== undefined) {
    for (const flag of ['group', 'seed', 'prereg', 'out', 'start-at', 'experiment-id', 'replicate', 'model', 'replay-from', 'base-url', 'model-id'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} cannot be combined with --resume: a resumed instance keeps what it was started with`);
    }
    result = await resumeInstance({ ...common, runDir: values.resume });
  } else {
    if (values.group === undefined || !isGroup(values.group)) throw new UsageError(`give --group A, B or C${values.group === undefined ? '' : ` (got ${JSON.stringify(values.group)})`}`);
    const model = modelChoiceOf(values);
    if (values.prereg === undefined) lockBundledPrereg(common.keyDir, log);
    const replicate = Number(values.replicate ?? '1');
    if (!Number.isInteger(replicate) || replicate < 1) throw new UsageError(`--replicate must be a whole number ≥ 1, got ${values.replicate}`);
    const experimentId = values['experiment-id'] ?? `exp-${todayCompact()}-${randomBytes(3).toString('hex')}`;
    // Random, never derived from the group: the id must not reveal it (spec §8.5).
    const groupBlindId = `inst-${randomBytes(4).toString('hex')}`;
    const runDir = values.out ?? path.join('runs', experimentId, groupBlindId);
    log(`group ${values.group}, seed ${values.seed ?? DEFAULT_SEED}, run folder ${path.resolve(runDir)}`);
    result = await runNewInstance({
      ...common,
      runDir,
      preregFile: values.prereg ?? DEFAULT_PREREG,
      seed: values.seed ?? DEFAULT_SEED,
      group: values.group,
      startAt: values['start-at'] ?? DEFAULT_START_AT,
      experimentId,
      replicate,
      groupBlindId,
      startedAt: new Date().toISOString(),
      model,
    });
  }
  progress.finish();
  const summary = summarizeRun(result.runDir, recordedUsableDataRule(result.runDir));
  const usable = summary.usable_data;
  const verified = verifyDirectory(result.runDir, { allowOpen: result.status !== 'finished' });
  const plan = checkRunFollowsPlan(result.runDir, parsePublicKeyHex(readFileSync(path.join(result.runDir, RUN_FILES.publicKey), 'utf8')));
  const verify = { ok: verified.ok && plan.ok, failures: verified.failures.length + plan.failures.length, warnings: verified.warnings.length + plan.notes.length };
  if (json) {
    process.stdout.write(`${JSON.stringify({ ...result, summary, verify })}\n`);
    // stdout stays one JSON object (summary.usable_data); the alarm goes to the screen as well.
    if (!usable.usable) process.stderr.write(`${noUsableDataLine(result, usable.reason)}\n`);
  } else {
    const s = summary;
    process.stdout.write(
      [
        `${result.status === 'finished' ? 'FINISHED' : 'STOPPED'}: ${result.runDir}`,
        `  experiment ${result.experimentId}, instance ${result.groupBlindId}`,
        `  ${result.isolationSummary}`,
        `  wakes: ${s.wakes_ended} of ${result.wakesTotal} ended (${result.wakesRun} in this run); ${s.events} events, head seq ${result.head.seq}`,
        `  model calls ${usable.calls} made: ${usable.accepted} accepted${usable.share === null ? '' : ` (${formatShare(usable.share)})`}, failed: ${describeFailures(usable.by_failure)}${usable.not_made > 0 ? ` · ${usable.not_made} not made (budget exhausted)` : ''} · proposals ${s.proposals} · executions ${s.executions} · denials ${s.denials} · tool failures ${s.tool_failures}`,
        `  claims ${s.claims} · plan revisions ${s.plan_revisions.proposed} (accepted ${s.plan_revisions.accepted}, rejected ${s.plan_revisions.rejected}) · checkpoints ${s.checkpoints} · refused appends ${s.refused_appends} · restarts ${s.process_restarts} · unknown outcomes ${s.unknown_outcomes}`,
        result.finalHead ? `  sealed; final head signed at seq ${result.finalHead.seq}` : `  stopped: ${result.stopReason}; continue with: npm run experiment -- --resume ${result.runDir}`,
        ...result.notes.map((n) => `  note: ${n}`),
        `  verify: ${verify.ok ? 'OK' : 'FAILED'} (${verify.failures} failure(s), ${verify.warnings} warning(s)); details: npm run verify -- ${result.runDir}`,
        // As loud as a failure, last so it is the line a reader sees (issue 15 item 8).
        usable.usable ? `  usable data: yes — ${usable.reason}` : noUsableDataLine(result, usable.reason),
        '',
      ].join('\n'),
    );
  }
  if (!verify.ok) return EXIT_CODES.failed;
  if (result.status !== 'finished') return EXIT_CODES.stopped;
  return usable.usable ? EXIT_CODES.ok : EXIT_CODES.notEvidence;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ModelFlagError || error instanceof BundledPreregError) {
      process.stderr.write(`experiment: ${error.message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (error instanceof InstanceError || error instanceof ModelChoiceError || error instanceof KeyStoreError || error instanceof PreregInputError || error instanceof VirtualClockError) {
      process.stderr.write(`experiment: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`experiment: failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
