// npm run experiment -- --group A|B|C [--seed S] [--prereg FILE] [--out DIR] [--key-dir DIR]
//                       [--speed F] [--start-at ISO] [--experiment-id ID] [--replicate N]
//                       [--same-uid REASON] [--json]
// npm run experiment -- --resume DIR [--key-dir DIR] [--speed F] [--same-uid REASON] [--json]
//
// This process is the experiment controller (ds-controller, DESIGN §2): it holds the key,
// spawns ds-writer and ds-runtime, drives the virtual clock and signs. SIGINT/SIGTERM is an
// emergency stop: recorded, head signed, nothing deleted, resumable with --resume.
// Exit 0 finished (sealed), 3 stopped (resumable), 1 refused or failed, 2 misused.
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { InstanceError, resumeInstance, runNewInstance, type Group, type InstanceResult } from '../../controller/instance-runner.js';
import { KeyStoreError, defaultKeyDir } from '../../controller/key-store.js';
import { PreregInputError } from '../../controller/prereg.js';
import { parseSpeed, VirtualClockError } from '../../controller/virtual-clock.js';

process.title = 'ds-controller';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const DEFAULT_PREREG = path.join(REPO, 'experiments', 'prereg', 'default.json');
const SCENARIOS_DIR = path.join(REPO, 'experiments', 'scenario');
/** Hour 0 of the simulated study: a fixed date, so one seed gives one schedule on every machine. */
const DEFAULT_START_AT = '2026-03-02T08:00:00.000Z';
const DEFAULT_SEED = 'seed-1';

const USAGE = `usage: npm run experiment -- --group A|B|C [options]
       npm run experiment -- --resume DIR [--key-dir DIR] [--speed F] [--json]
  --group A|B|C      capability switches: A no persistent state, B persistent state, C + re-planning
  --seed S           the seed of the schedule and interventions (default ${DEFAULT_SEED})
  --prereg FILE      a locked pre-registration (default experiments/prereg/default.json;
                     lock it first: npm run prereg -- lock FILE)
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

class UsageError extends Error {}

function isGroup(value: string): value is Group {
  return value === 'A' || value === 'B' || value === 'C';
}

function today(): string {
  return new Date().toISOString().slice(0, 10).replaceAll('-', '');
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ options: OPTIONS, allowPositionals: false }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const json = values.json ?? false;
  const log = (line: string): void => {
    process.stderr.write(`[ds-controller] ${line}\n`);
  };
  const stop = new AbortController();
  let signals = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      log(`second ${name}: abandoning without recording the stop; the store is intact and --resume records the interruption`);
      process.exit(130);
    }
    log(`${name}: emergency stop — finishing the current step, recording the stop and signing the head (again to abandon)`);
    stop.abort(`operator signal ${name}`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

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
  };

  let result: InstanceResult;
  if (values.resume !== undefined) {
    for (const flag of ['group', 'seed', 'prereg', 'out', 'start-at', 'experiment-id', 'replicate'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} cannot be combined with --resume: a resumed instance keeps what it was started with`);
    }
    result = await resumeInstance({ ...common, runDir: values.resume });
  } else {
    if (values.group === undefined || !isGroup(values.group)) throw new UsageError(`give --group A, B or C${values.group === undefined ? '' : ` (got ${JSON.stringify(values.group)})`}`);
    const replicate = Number(values.replicate ?? '1');
    if (!Number.isInteger(replicate) || replicate < 1) throw new UsageError(`--replicate must be a whole number ≥ 1, got ${values.replicate}`);
    const experimentId = values['experiment-id'] ?? `exp-${today()}-${randomBytes(3).toString('hex')}`;
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
    });
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } else {
    process.stdout.write(
      [
        `${result.status === 'finished' ? 'FINISHED' : 'STOPPED'}: ${result.runDir}`,
        `  experiment ${result.experimentId}, instance ${result.groupBlindId}`,
        `  ${result.isolationSummary}`,
        `  wakes: ${result.wakesRun} run now, ${result.wakesTotal} scheduled; head seq ${result.head.seq} ${result.head.event_hash}`,
        result.finalHead ? `  sealed; final head signed at seq ${result.finalHead.seq}` : `  stopped: ${result.stopReason}; continue with: npm run experiment -- --resume ${result.runDir}`,
        ...result.notes.map((n) => `  note: ${n}`),
        `  check it: npm run verify -- ${result.runDir}`,
        '',
      ].join('\n'),
    );
  }
  return result.status === 'finished' ? 0 : 3;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`experiment: ${error.message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (error instanceof InstanceError || error instanceof KeyStoreError || error instanceof PreregInputError || error instanceof VirtualClockError) {
      process.stderr.write(`experiment: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`experiment: failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
