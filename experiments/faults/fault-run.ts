// One run of the fault harness (issue 8): a real `npm run experiment` instance (controller,
// writer and runtime as real OS processes) with one fault armed through DS_FAULT_INJECTION;
// when the process at the point freezes itself there, the harness carries the fault out (a
// SIGKILL of the victim, the frozen process continued if it is not the victim), waits for every
// process of the instance to be gone, applies the after-kill damage (snapshots, workspace; a bad
// file, asked about by verify and a resume, then put back),
// resumes with `--resume` until the instance is finished, and checks the invariants.
//
// The harness is the host here: it may open events.db to damage snapshots (a cache) and write
// into the workspace (a third party). It never touches events; a bad-file kind replaces a signed
// file or the WAL for one verify and one resume (bad-files.ts) and then puts the original back.
// Why one file: it is one fault run's sequence (arm, wait for the freeze, kill, damage, resume,
// check), and each step's helper serves that sequence alone and shares its fault folder.
import { processCodeFor } from '../../foundation/process-code.js';
import { spawn } from 'node:child_process';
import { appendFileSync, chmodSync, closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import { LockablePreRegistration, lockPrereg } from '../../design/prereg.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { FAULT_ENV, FAULT_FILES, FAULT_POINTS, FaultReached, harnessActionOf, isBadFileKind, killedRole, type BadFileKind, type FaultArming, type FaultKind, type FaultRole } from '../../schema/fault-points.js';
import { processStartTicks } from '../../schema/fault-switch.js';
import { hashText } from '../../schema/hash.js';
import { StoreSealed } from '../../schema/events/system-events.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { StoreReader, StoreReadError } from '../../writer/store-reader.js';
import { storeFileCode } from '../../writer/store-file-failure.js';
import { WriterStartError } from '../../writer/spawn.js';
import type { Calibration, FaultRunPlan, GroupCalibration, PointHits } from './fault-plan.js';
import { GROUPS, STALL_MODEL_CALL_TIMEOUT_MS, stalledCallersTimeoutMs, tamperTargetOf } from './fault-plan.js';
import { fillFaultDisk, freeFaultDisk, mountFaultDisk, releaseFaultDisk, type FaultDisk } from './disk-full.js';
import { firstAcceptedModelSeed } from './random-subject-seed.js';
import { FaultModelServerError, startFaultModelServer, type FaultModelServer } from './model-server.js';
import { badFileVerdictProblems, folderDifferences, folderHashes, plantBadFile, restoreVerdictProblems, verifyRun } from './bad-files.js';
import { checkStoreInvariants, STORE_INVARIANTS } from './invariants.js';
import { InstanceError } from '../../controller/instance-error.js';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { TEMP_SUFFIX } from '../../runtime/tools/workspace-files.js';

/** Invariants the runner itself decides, after the store's (experiments/faults/invariants.ts). */
export const RUN_INVARIANTS = ['fault_fired', 'run_finished', 'processes_exit', 'disk_full_stop', 'bad_file_verdict'] as const;
export const INVARIANTS = [...RUN_INVARIANTS, ...STORE_INVARIANTS] as const;
export type Invariant = (typeof INVARIANTS)[number];

/** One invariant's verdict on a run; details say why it failed (and `note:` lines, kept when it held). */
export interface RunInvariantResult {
  readonly invariant: Invariant;
  readonly ok: boolean;
  readonly details: string[];
}

/** A controller process (new or resumed) may take this long before the harness kills it and says so. */
export const CONTROLLER_TIMEOUT_MS = 10 * 60_000;
/** After its controller is gone, a writer or runtime must be gone within this. */
export const ORPHAN_EXIT_TIMEOUT_MS = 20_000;
/** Resumes one run may need (one fault, so one is expected; more is itself reported). */
export const MAX_RESUMES = 3;
/**
 * The writer request timeout the harness pre-registers for its instances (design/prereg.ts): a
 * dropped message is an unknown outcome after this, not after the default 30 s. Far above a
 * request's time on a loaded machine (milliseconds), so no answer that comes times out.
 */
export const FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS = 5_000;
/**
 * The wake answer timeout the harness pre-registers (design/prereg.ts wake_answer_timeout_ms): a
 * stalled runtime fails its wake after this plus the wake's model-call budget, not after 120 s.
 * A reference-policy wake takes milliseconds.
 */
export const FAULT_RUN_WAKE_ANSWER_TIMEOUT_MS = 5_000;
/**
 * The random subject (random_subject) runs a GGUF model the caller names (`npm run faults --
 * --random-subject-model F.gguf`; the project's test model is ../shared/models/stories260K.gguf,
 * read-only beside the checkout, which production code does not reach into). Without one, a
 * random_subject run is skipped, saying so — never counted as passed.
 */
export const RANDOM_SUBJECT_MODEL_FLAG = '--random-subject-model';
/** Sampling above 0, so the answers are drawn, not the greedy one every time; 0.8 as the pilot samples. */
export const RANDOM_SUBJECT_TEMPERATURE = 0.8;
/**
 * The answer cap of a random subject's calls. stories260K's answers under the grammar are ~400–600
 * tokens; now and then one runs on to thousands (2,626 measured: 24 s). Cut at this it is a
 * `length` failure, recorded and counted among the rejected answers, and the run stays cheap.
 */
export const RANDOM_SUBJECT_MAX_TOKENS = 1_024;
/**
 * What the random subject's pre-registration copy changes besides the harness's timeouts, as
 * the local-model pilot does (test/pilot/local-model-pilot.test.ts): a wake every 12 simulated
 * hours (6 wakes, every intervention still planned) and a window of 8 events under an 800-token
 * cap. A call's prompt is still ~5,400–7,300 tokens (the protocol's instructions dominate) and
 * costs ~7–18 s on this CPU, so the calls, not the window, are what a run costs.
 */
export const RANDOM_SUBJECT_PREREG_CHANGES = { base_period_sim_minutes: 720, window_events: 8, token_cap: 800 } as const;

/** How long a stall holds the frozen process beyond the timeout that waits for it: room for the caller's next step to be under way too. */
const STALL_MARGIN_MS = 2_000;

/** How long a stall kind holds the frozen process: past the timeout its callers wait for it (so they give up while it stands), with room for their next step to be under way too. */
export function stallMsOf(kind: FaultKind, prereg: LockablePreRegistration): number {
  return stalledCallersTimeoutMs(kind, prereg) + STALL_MARGIN_MS;
}

const POLL_MS = 20;
/** After reached.json appears, how long the harness waits to see the process stopped before acting anyway (and saying so). */
const FREEZE_WAIT_MS = 10_000;
/** Snapshot rows the corruption flips bytes in (the newest ones). */
const CORRUPTED_SNAPSHOTS = 2;
const TAMPERED_CONTENT = 'written by a third party while the runtime was down (npm run faults: workspace_tampered)\n';

export interface HarnessSetup {
  /** The folder the harness writes into. */
  readonly outDir: string;
  readonly keyDir: string;
  /** A locked copy of the default pre-registration. */
  readonly preregFile: string;
  /** A locked copy for random_subject runs: the same, with RANDOM_SUBJECT_PREREG_CHANGES (a model call costs seconds). */
  readonly randomSubjectPreregFile: string;
  /** The GGUF file random_subject runs load (RANDOM_SUBJECT_MODEL_FLAG); null: none given, those runs are skipped. A test points it at a missing file to see the run fail. */
  readonly randomSubjectModelFile: string | null;
  /** The checkout whose experiments/cli/experiment.ts runs (a test may point this at a copy with a planted bug). */
  readonly codeRoot: string;
  readonly scenariosDir: string;
  /** Passed as --same-uid (with this reason) when set; otherwise the controller decides isolation. */
  readonly sameUidReason: string | null;
}

export function prepareHarness(outDir: string, codeRoot: string, sameUidReason: string | null, randomSubjectModelFile: string | null = null): HarnessSetup {
  mkdirSync(outDir, { recursive: true });
  const keyDir = path.join(outDir, 'keys');
  const key = loadOrCreateControllerKey(keyDir);
  const preregFile = path.join(outDir, 'prereg.json');
  const randomSubjectPreregFile = path.join(outDir, 'prereg-random-subject.json');
  // The default pre-registration with the harness's own writer request and wake answer timeouts (a run's timeouts are its pre-registered ones).
  const harnessPrereg = (): Record<string, unknown> => ({
    ...(JSON.parse(readFileSync(path.join(codeRoot, 'experiments', 'prereg', 'default.json'), 'utf8')) as Record<string, unknown>),
    writer_request_timeout_ms: FAULT_RUN_WRITER_REQUEST_TIMEOUT_MS,
    wake_answer_timeout_ms: FAULT_RUN_WAKE_ANSWER_TIMEOUT_MS,
  });
  const lockCopy = (file: string, prereg: Record<string, unknown>): void => {
    if (existsSync(file)) return;
    writeFileSync(file, `${JSON.stringify(prereg, null, 2)}\n`);
    const locked = lockPrereg(file, key.keys, new Date().toISOString());
    if (!locked.ok) throw new Error(`cannot lock the harness's pre-registration copy ${file}: ${locked.message}`);
  };
  lockCopy(preregFile, harnessPrereg());
  const base = harnessPrereg() as { wake_schedule: Record<string, unknown>; retrieval_policy: Record<string, unknown> };
  const { base_period_sim_minutes: period, window_events: window, token_cap: cap } = RANDOM_SUBJECT_PREREG_CHANGES;
  lockCopy(randomSubjectPreregFile, { ...base, wake_schedule: { ...base.wake_schedule, base_period_sim_minutes: period }, retrieval_policy: { ...base.retrieval_policy, window_events: window, token_cap: cap } });
  return { outDir, keyDir, preregFile, randomSubjectPreregFile, randomSubjectModelFile, codeRoot, scenariosDir: path.join(codeRoot, 'experiments', 'scenario'), sameUidReason };
}

/**
 * The model flags of a run's first controller: the reference policy (none) for every kind but two.
 * random_subject runs the local model with the plan's seed (or the first the model check accepts);
 * a plan of that kind without a seed is refused: a rerun must sample the same answers, and a
 * clock-seeded model would not. stall_model runs the scripted server the harness started for it.
 */
export function modelArgsOf(plan: FaultRunPlan | null, subject: { readonly modelFile: string | null; readonly modelSeed: number | null; readonly server: FaultModelServer | null }): readonly string[] {
  switch (plan?.kind) {
    case 'random_subject': {
      if (subject.modelFile === null) throw new Error(`bug: run ${plan.index} is a random_subject run with no model file (execute skips those)`);
      if (plan.model_seed === undefined) throw new Error(`bug: the random_subject plan of run ${plan.index} carries no model_seed (planFaultRun draws it)`);
      return ['--model', 'local', '--model-file', subject.modelFile, '--model-seed', String(subject.modelSeed ?? plan.model_seed), '--temperature', String(RANDOM_SUBJECT_TEMPERATURE), '--max-tokens', String(RANDOM_SUBJECT_MAX_TOKENS)];
    }
    case 'stall_model':
      // No server (it did not start, said in the notes): the reference policy, and stall_recorded fails naming it.
      return subject.server?.modelArgs ?? [];
    default:
      return [];
  }
}

/** The harness's locked pre-registration copy, as its instances read it. */
function preregOf(setup: HarnessSetup): LockablePreRegistration {
  return LockablePreRegistration.parse(JSON.parse(readFileSync(setup.preregFile, 'utf8')));
}

export const RunFingerprint = z.strictObject({
  plan: z.unknown(),
  reached: z.unknown(),
  /** Exit codes of the controller processes, in order (the first one ran into the fault). */
  exits: z.array(z.number().nullable()),
  head_seq: z.number().int().nullable(),
  /** sha256 of the event types in seq order: the shape of the history, free of wall-clock fields. */
  event_types_sha256: z.string().nullable(),
  /** The stored projection's state hash (deterministic: no clock in the projector). */
  state_hash: z.string().nullable(),
  invariants: z.record(z.string(), z.boolean()),
});
export type RunFingerprint = z.infer<typeof RunFingerprint>;

export interface FaultRunResult {
  readonly plan: FaultRunPlan | null;
  readonly name: string;
  readonly recordDir: string;
  readonly runDir: string;
  readonly reached: FaultReached | null;
  readonly exits: Array<number | null>;
  readonly invariants: RunInvariantResult[];
  readonly violations: Invariant[];
  readonly notes: string[];
  readonly fingerprint: RunFingerprint;
  readonly durationMs: number;
  /**
   * Why the run was not tried at all (a disk_full run where no tmpfs can be mounted: not root),
   * or null. A skipped run has no invariants and is listed as skipped in the summary and on
   * screen: never a pass.
   */
  readonly skipped: string | null;
}

interface ProcessOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  /** It wrote nothing to its log before it ended. */
  readonly silent: boolean;
}

/** Starts of one controller that an operator's press killed at its birth (see runController), at most. */
const MAX_STARTS_KILLED_AT_BIRTH = 3;
/** How the note of such a start begins (the harness also says it on screen). */
export const KILLED_AT_BIRTH_NOTE = 'controller start killed by SIGINT before it ran';

/** The folder the points write into: under /tmp and world-writable (sticky), because the writer and runtime may run under their own uids. */
function makeFaultDir(): string {
  const dir = mkdtempSync('/tmp/ds-fault-');
  chmodSync(dir, 0o1777);
  return dir;
}

/** The live process a role's pid file names, or null: a pid is trusted only while its start time still matches (pids get reused). */
function readPid(faultDir: string, role: FaultRole): number | null {
  const file = path.join(faultDir, FAULT_FILES.pid(role));
  if (!existsSync(file)) return null;
  const [pidText, started] = readFileSync(file, 'utf8').trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 1) return null;
  return processStartTicks(pid) === started ? pid : null;
}

/** Alive and not a zombie (an orphan reparented to a PID 1 that does not reap stays a zombie). */
function alive(pid: number): boolean {
  const state = stateOf(pid);
  return state !== 'gone' && state !== 'Z' && state !== 'X';
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The controller as a real process: experiments/cli/experiment.ts of the code root, bundled as its
 * children are (foundation/process-code.ts: ~0.3 s of CPU to start against ~1.5 s through tsx), its
 * output (and its children's, which inherit the descriptor) appended straight to `logFile`: no
 * pipe, so the controller's own exit is seen when it happens, whatever its children still do.
 */
async function runController(setup: HarnessSetup, args: readonly string[], arming: FaultArming, logFile: string, onPoll: (pid: number) => void, kill: AbortSignal | null, notes: string[]): Promise<ProcessOutcome> {
  // Bounded: MAX_STARTS_KILLED_AT_BIRTH starts at most.
  for (let start = 1; ; start += 1) {
    const outcome = await runControllerOnce(setup, args, arming, logFile, onPoll, kill);
    // The controller runs in a session of its own, so an operator's Ctrl-C to the harness's group
    // reaches it only between fork and its setsid: libuv blocks signals across the fork, and the
    // pending SIGINT kills the child as they are unblocked, before exec. It ran nothing; the run
    // under way is to finish (the first press), so it is started again, said in the notes and log.
    if (outcome.signal !== 'SIGINT' || !outcome.silent || kill?.aborted || start >= MAX_STARTS_KILLED_AT_BIRTH) return outcome;
    const note = `${KILLED_AT_BIRTH_NOTE} (start ${start}: an operator's press while it was being spawned, before it had a process group of its own): it did nothing, so it is started again`;
    notes.push(note);
    appendFileSync(logFile, `$ ${note}\n`);
  }
}

async function runControllerOnce(setup: HarnessSetup, args: readonly string[], arming: FaultArming, logFile: string, onPoll: (pid: number) => void, kill: AbortSignal | null): Promise<ProcessOutcome> {
  const code = await processCodeFor(path.join(setup.codeRoot, 'experiments', 'cli', 'experiment.ts'), setup.codeRoot);
  appendFileSync(logFile, `$ experiment ${args.join(' ')}\n`);
  const logBytesAtStart = statSync(logFile).size;
  const fd = openSync(logFile, 'a');
  let child;
  try {
    child = spawn(process.execPath, [...code.execArgv, code.main, ...args], {
      cwd: setup.codeRoot,
      env: { ...process.env, [FAULT_ENV]: JSON.stringify(arming) },
      stdio: ['ignore', fd, fd],
      // A process group of its own: an operator's Ctrl-C reaches the harness alone, which decides
      // what becomes of the runs under way (experiments/cli/faults.ts); it never lands as a stop
      // inside an instance the harness would then resume and check.
      detached: true,
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid!;
  return new Promise((resolve) => {
    let timedOut = false;
    const poller = setInterval(() => onPoll(pid), POLL_MS);
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, CONTROLLER_TIMEOUT_MS);
    // The operator's second press: the controller and every process of its group (its writer and runtime, a frozen one too).
    const killGroup = (): void => void signal(-pid, 'SIGKILL');
    if (kill?.aborted) killGroup();
    kill?.addEventListener('abort', killGroup, { once: true });
    child.once('exit', (code, sig) => {
      kill?.removeEventListener('abort', killGroup);
      clearInterval(poller);
      clearTimeout(timer);
      // One last look: the fault may have fired just before the controller ended.
      onPoll(pid);
      const silent = statSync(logFile).size === logBytesAtStart;
      appendFileSync(logFile, `$ exit ${code ?? sig}\n`);
      resolve({ code, signal: sig, timedOut, silent });
    });
  });
}

/** Waits for the instance's writer and runtime to be gone after their controller; kills and reports stragglers (a frozen one included). */
async function awaitOrphans(faultDir: string, notes: string[], kill: AbortSignal | null): Promise<string[]> {
  const problems: string[] = [];
  for (const role of ['writer', 'runtime'] as const) {
    const pid = readPid(faultDir, role);
    if (pid === null || !alive(pid)) continue;
    if (kill?.aborted) {
      // Interrupted: not waited for (its own process group may differ: isolation starts it under another uid).
      signal(pid, 'SIGKILL');
      notes.push(`the ${role} (pid ${pid}) killed at the operator's second press`);
      continue;
    }
    const deadline = Date.now() + ORPHAN_EXIT_TIMEOUT_MS;
    // Bounded by the deadline.
    while (alive(pid) && Date.now() < deadline) await sleep(POLL_MS * 5);
    if (alive(pid)) {
      const state = stateOf(pid);
      signal(pid, 'SIGKILL');
      problems.push(`the ${role} (pid ${pid}, state ${state}) outlived its controller by more than ${ORPHAN_EXIT_TIMEOUT_MS} ms and was killed by the harness`);
    }
  }
  if (problems.length > 0) notes.push(...problems);
  return problems;
}

/** The process state letter of /proc/<pid>/stat (R, S, T stopped, Z zombie …), or 'gone'. */
function stateOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return 'gone';
  }
}

/** Whether the run's store ends with its seal (the controller signs the final head right after). */
function sealed(runDir: string): boolean {
  const dbFile = path.join(runDir, RUN_FILES.store);
  if (!existsSync(dbFile)) return false;
  let reader: StoreReader;
  try {
    reader = StoreReader.open(dbFile);
  } catch (error) {
    // A store that cannot be read is not finished: run_finished and verify say so; the harness goes on to its record.
    if (error instanceof StoreReadError) return false;
    throw error;
  }
  try {
    const head = reader.headSeq();
    for (const row of reader.iterateEvents(head - 1, head)) return (JSON.parse(row.envelope) as { event_type: string }).event_type === StoreSealed.type;
    return false;
  } finally {
    reader.close();
  }
}

/** Sealed with its final head signed (the controller may still die after that, in its shutdown). */
function finishedRun(runDir: string): boolean {
  return sealed(runDir) && hasFinalHead(runDir);
}

/** Whether heads.jsonl ends with a head of kind final (verify checks its signature). */
function hasFinalHead(runDir: string): boolean {
  const file = path.join(runDir, RUN_FILES.heads);
  if (!existsSync(file)) return false;
  const last = readFileSync(file, 'utf8').trim().split('\n').at(-1);
  if (last === undefined || last === '') return false;
  try {
    const envelope = JSON.parse(last) as { payload?: string };
    const body = JSON.parse(Buffer.from(envelope.payload ?? '', 'base64').toString('utf8')) as { kind?: string };
    return body.kind === 'final';
  } catch {
    // A torn or foreign last line: not finished (verify says what is wrong with it).
    return false;
  }
}

function readReached(faultDir: string): FaultReached | null {
  const file = path.join(faultDir, FAULT_FILES.reached);
  if (!existsSync(file)) return null;
  return FaultReached.parse(JSON.parse(readFileSync(file, 'utf8')));
}

function readHits(faultDir: string): PointHits {
  return Object.fromEntries(
    FAULT_POINTS.map((point) => {
      const file = path.join(faultDir, FAULT_FILES.hits(point));
      return [point, existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0];
    }),
  ) as PointHits;
}

const HitContext = z.strictObject({ hit: z.number().int().min(1), context: z.record(z.string(), z.unknown()) });

/** From a counting run's contexts: the hits of the intent points whose operation is not a read (mutating), and those that write or modify a file (writing). */
function readIntentHits(faultDir: string): Pick<GroupCalibration, 'mutating' | 'writing'> {
  const mutating: GroupCalibration['mutating'] = {};
  const writing: GroupCalibration['writing'] = {};
  for (const point of ['runtime.intent.before_file_op', 'runtime.file_op.before_outcome'] as const) {
    const file = path.join(faultDir, FAULT_FILES.contexts(point));
    if (!existsSync(file)) continue;
    const contexts = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => HitContext.parse(JSON.parse(line)));
    mutating[point] = contexts.filter((h) => typeof h.context.op === 'string' && h.context.op !== 'read').map((h) => h.hit);
    writing[point] = contexts.filter((h) => h.context.op === 'write' || h.context.op === 'modify').map((h) => h.hit);
  }
  return { mutating, writing };
}

/** Damage the writer's cache while nothing runs: the resumed instance and the restore drill must not depend on it. */
function damageSnapshots(dbFile: string, how: 'delete' | 'corrupt'): string {
  const db = new Database(dbFile);
  try {
    if (how === 'delete') {
      const { changes } = db.prepare('DELETE FROM snapshots').run();
      return `deleted ${changes} snapshot row(s)`;
    }
    const rows = db.prepare('SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT ?').all(CORRUPTED_SNAPSHOTS) as Array<{ seq: number; state: string }>;
    for (const row of rows) {
      // Bit rot, not a forgery: the state_hash stays, so the state no longer hashes to it.
      const middle = Math.floor(row.state.length / 2);
      const flipped = `${row.state.slice(0, middle)}${row.state[middle] === 'x' ? 'y' : 'x'}${row.state.slice(middle + 1)}`;
      db.prepare('UPDATE snapshots SET state = ? WHERE seq = ?').run(flipped, row.seq);
    }
    return `flipped a byte in the state of ${rows.length} snapshot row(s) (seq ${rows.map((r) => r.seq).join(', ')})`;
  } finally {
    db.close();
  }
}

function tamperWorkspace(runDir: string, reached: FaultReached): string {
  const target = tamperTargetOf(reached);
  if (target === null) throw new Error(`the fault point gave no path to tamper with (${JSON.stringify(reached.context)})`);
  const file = path.join(runDir, RUN_FILES.workspace, ...target.split('/'));
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, TAMPERED_CONTENT);
  return `overwrote workspace/${target} with third-party bytes (${hashText(TAMPERED_CONTENT).slice(0, 19)}…)`;
}

/**
 * The fault carried out while the process at the point is frozen: the victim killed and the frozen
 * one continued unless it was the victim, the disk filled and the frozen one continued, or a
 * process held `stallMs` and continued (a stall): the frozen one, or the run's model server — frozen
 * before the runtime is continued, so that the call the runtime then sends finds it standing.
 */
function carryOut(reached: FaultReached, faultDir: string, controllerPid: number, disk: { readonly disk: FaultDisk | null; filled: boolean }, modelServer: FaultModelServer | null, notes: string[], stallMs: number): void {
  if (!reached.frozen) {
    notes.push(`${reached.kind} carried out by the ${reached.role} itself at hit ${reached.hit} of ${reached.point}`);
    return;
  }
  const action = harnessActionOf(reached.kind);
  switch (action.act) {
    case 'none':
      throw new Error(`bug: ${reached.kind} froze the ${reached.role} but the harness has nothing to do for it`);
    case 'fill_disk': {
      try {
        if (disk.disk === null) throw new Error(`bug: ${reached.kind} fired in a run whose folder is on no disk of its own`);
        notes.push(`${fillFaultDisk(disk.disk)} while the ${reached.role} stood at hit ${reached.hit} of ${reached.point}`);
        disk.filled = true;
      } catch (error) {
        // Said, and failed by disk_full_stop: this runs in the harness's poll, where a throw would end the harness.
        notes.push(`the disk was NOT filled at hit ${reached.hit} of ${reached.point}: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        // Continued whatever happened: a process left frozen would hang the instance.
        signal(reached.pid, 'SIGCONT');
      }
      return;
    }
    case 'stall': {
      if (action.held === 'model_server') {
        if (modelServer === null) {
          notes.push(`the model server was NOT frozen at hit ${reached.hit} of ${reached.point}: this run has none (the instance answers with another model)`);
          signal(reached.pid, 'SIGCONT');
          return;
        }
        const frozen = signal(modelServer.pid, 'SIGSTOP');
        notes.push(frozen ? `the model server (pid ${modelServer.pid}) held frozen for ${stallMs} ms from hit ${reached.hit} of ${reached.point} (call ${String(reached.context.call_number)} of ${String(reached.context.wake_id)})` : `the model server (pid ${modelServer.pid}) could NOT be frozen at hit ${reached.hit} of ${reached.point}: it is gone`);
        signal(reached.pid, 'SIGCONT');
        setTimeout(() => {
          if (signal(modelServer.pid, 'SIGCONT')) notes.push(`SIGCONT to the model server (pid ${modelServer.pid}) after ${stallMs} ms`);
          else notes.push(`the stalled model server (pid ${modelServer.pid}) was gone before its ${stallMs} ms were up: nothing to continue`);
        }, stallMs).unref();
        return;
      }
      notes.push(`the ${reached.role} (pid ${reached.pid}) held frozen at hit ${reached.hit} of ${reached.point} for ${stallMs} ms`);
      // unref: a run that ends meanwhile (its processes killed) is not held open by it.
      setTimeout(() => {
        // Only the very process that froze (a pid is trusted while its start time matches).
        if (readPid(faultDir, reached.role) === reached.pid && signal(reached.pid, 'SIGCONT')) notes.push(`SIGCONT to the ${reached.role} (pid ${reached.pid}) after ${stallMs} ms`);
        else notes.push(`the stalled ${reached.role} (pid ${reached.pid}) was gone before its ${stallMs} ms were up: nothing to continue`);
      }, stallMs).unref();
      return;
    }
    case 'kill': {
      const victimRole = action.victim;
      const victim = victimRole === 'controller' ? controllerPid : readPid(faultDir, victimRole);
      if (victim === null) notes.push(`no ${victimRole} was running at that instant (no pid file names a live one): nothing to kill`);
      else notes.push(`SIGKILL to the ${victimRole} (pid ${victim}${alive(victim) ? '' : ', already gone'}) while the ${reached.role} stood at hit ${reached.hit} of ${reached.point}`);
      if (victim !== null) signal(victim, 'SIGKILL');
      if (victim !== reached.pid) signal(reached.pid, 'SIGCONT');
      return;
    }
    default: {
      const unhandled: never = action;
      throw new Error(`unknown harness action ${JSON.stringify(unhandled)}`);
    }
  }
}

function fingerprintOf(plan: FaultRunPlan | null, reached: FaultReached | null, exits: Array<number | null>, runDir: string, invariants: ReadonlyArray<{ invariant: string; ok: boolean }>): RunFingerprint {
  let headSeq: number | null = null;
  let types: string | null = null;
  let stateHash: string | null = null;
  const dbFile = path.join(runDir, RUN_FILES.store);
  let reader: StoreReader | null = null;
  try {
    reader = existsSync(dbFile) ? StoreReader.open(dbFile) : null;
  } catch (error) {
    // Unreadable: the fingerprint says null for what it could not read (the invariants say why).
    if (!(error instanceof StoreReadError)) throw error;
  }
  if (reader !== null) {
    try {
      headSeq = reader.headSeq();
      const names: string[] = [];
      for (const row of reader.iterateEvents(0, headSeq)) names.push((JSON.parse(row.envelope) as { event_type: string }).event_type);
      types = hashText(names.join('\n'));
      stateHash = reader.storedProjection()?.state_hash ?? null;
    } finally {
      reader.close();
    }
  }
  const { pid: _pid, ...reachedFacts } = reached ?? { pid: 0 };
  return { plan, reached: reached === null ? null : reachedFacts, exits, head_seq: headSeq, event_types_sha256: types, state_hash: stateHash, invariants: Object.fromEntries(invariants.map((i) => [i.invariant, i.ok])) };
}

/** Whether two fingerprints describe the same run (the plan, the instant, the exits, the history's shape, the state, the verdicts). */
export function sameRun(a: RunFingerprint, b: RunFingerprint): { same: boolean; differences: string[] } {
  const differences = (Object.keys(a) as Array<keyof RunFingerprint>).filter((key) => canonicalJson(a[key] ?? null) !== canonicalJson(b[key] ?? null));
  return { same: differences.length === 0, differences };
}

interface RunSpec {
  readonly name: string;
  readonly plan: FaultRunPlan | null;
  readonly group: string;
  readonly instanceSeed: string;
  readonly arming: Omit<FaultArming, 'dir'>;
}

/** How a run killed at the operator's second press begins its `skipped` reason (experiments/cli/faults.ts counts them apart). */
export const INTERRUPTED_REASON = 'interrupted by the operator';

/** `kill`: the operator's second press (experiments/cli/faults.ts) — the run's processes are killed and it ends unchecked. */
async function execute(setup: HarnessSetup, spec: RunSpec, kill: AbortSignal | null): Promise<FaultRunResult & { calibration: GroupCalibration }> {
  const startedMs = Date.now();
  const recordDir = path.join(setup.outDir, 'runs', spec.name);
  rmSync(recordDir, { recursive: true, force: true });
  mkdirSync(recordDir, { recursive: true });
  const runDir = path.join(recordDir, 'run');
  const logFile = path.join(recordDir, 'controller.log');
  if (spec.plan?.kind === 'random_subject' && setup.randomSubjectModelFile === null) return skippedRun(spec, recordDir, runDir, `random_subject needs a GGUF model: pass ${RANDOM_SUBJECT_MODEL_FLAG} F.gguf (the project's test model: ../shared/models/stories260K.gguf)`, startedMs);
  // A disk_full run's folder lives on a tmpfs of its own while it runs, and is copied to runDir after.
  const disk = spec.plan?.kind === 'disk_full' ? mountFaultDisk() : null;
  if (disk !== null && 'unavailable' in disk) return skippedRun(spec, recordDir, runDir, disk.unavailable, startedMs);
  const liveRunDir = disk?.runDir ?? runDir;
  const diskState = { disk, filled: false };
  let faultDir: string;
  try {
    faultDir = makeFaultDir();
  } catch (error) {
    // Not a mount left behind by a run that never began.
    if (disk !== null) releaseFaultDisk(disk, runDir);
    throw error;
  }
  const arming: FaultArming = { dir: faultDir, ...spec.arming };
  const notes: string[] = [];
  const exits: Array<number | null> = [];
  const orphanProblems: string[] = [];
  let reached: FaultReached | null = null;
  let reachedSeenMs: number | null = null;
  /** stall_model: the run's model server, started before the first controller, ended with the run. */
  let modelServer: FaultModelServer | null = null;
  const common = ['--key-dir', setup.keyDir, '--json', ...(setup.sameUidReason === null ? [] : ['--same-uid', setup.sameUidReason])];
  /** Acts once the process at the point shows as stopped (it writes reached.json just before it stops itself). */
  const poll = (controllerPid: number): void => {
    if (reached !== null) return;
    const found = readReached(faultDir);
    if (found === null) return;
    if (found.frozen) {
      const state = stateOf(found.pid);
      reachedSeenMs ??= Date.now();
      if (state !== 'T' && state !== 'gone' && Date.now() - reachedSeenMs < FREEZE_WAIT_MS) return;
      if (state !== 'T') notes.push(`the ${found.role} (pid ${found.pid}) did not show as stopped at ${found.point} within ${FREEZE_WAIT_MS} ms (state ${state}); the fault was carried out anyway`);
    }
    reached = found;
    carryOut(found, faultDir, controllerPid, diskState, modelServer, notes, harnessActionOf(found.kind).act === 'stall' ? stallMsOf(found.kind, preregOf(setup)) : 0);
  };
  /** disk_full: the file tool's temp files found in the workspace once the processes that met the full disk were gone (a half file left behind). */
  let tempFilesAtStop: string[] | null = null;
  /** The damage done once every process of the instance is gone, before the first resume. */
  let damaged = false;
  const damageOnce = (): void => {
    const fired = reached as FaultReached | null;
    if (damaged || fired === null) return;
    damaged = true;
    if (fired.kind === 'snapshot_deleted' || fired.kind === 'snapshot_corrupted') notes.push(damageSnapshots(path.join(liveRunDir, RUN_FILES.store), fired.kind === 'snapshot_deleted' ? 'delete' : 'corrupt'));
    if (fired.kind === 'workspace_tampered') notes.push(tamperWorkspace(liveRunDir, fired));
    if (fired.kind === 'disk_full' && disk !== null) {
      // Looked at before the resume: a later write of the same path would replace a stale temp file and hide it.
      tempFilesAtStop = tempFilesIn(path.join(liveRunDir, RUN_FILES.workspace));
      notes.push(freeFaultDisk(disk));
    }
  };
  /**
   * A bad-file kind, once every process is gone: plant the file, ask verify and a resume about
   * it (their verdicts against bad-files.ts BAD_FILE_VERDICTS, the folder hashed around each),
   * put the original back. Problems go to the bad_file_verdict invariant.
   */
  const badFileProblems: string[] = [];
  let badFileStaged = false;
  const badFileStage = async (kind: BadFileKind): Promise<void> => {
    badFileStaged = true;
    // A fault at the writer's last snapshot (its shutdown snapshot, after the seal) leaves a run already finished.
    const finishedBefore = finishedRun(runDir);
    const verifyBefore = verifyRun(runDir, setup.scenariosDir);
    const planted = plantBadFile(kind, runDir, setup.keyDir, path.join(recordDir, 'foreign'));
    notes.push(planted.note);
    const beforeVerify = folderHashes(runDir);
    const verifyAfter = verifyRun(runDir, setup.scenariosDir);
    const beforeResume = folderHashes(runDir);
    if (planted.snapshotSeq !== null) badFileProblems.push(...restoreVerdictProblems(runDir, planted.snapshotSeq));
    const logStart = readFileSync(logFile).length;
    const outcome = await runController(setup, ['--resume', runDir, ...common], arming, logFile, poll, kill, notes);
    exits.push(outcome.timedOut ? null : outcome.code);
    orphanProblems.push(...(await awaitOrphans(faultDir, notes, kill)));
    const resumeLog = readFileSync(logFile).subarray(logStart).toString('utf8');
    const afterResume = folderHashes(runDir);
    const problems = badFileVerdictProblems({
      kind,
      runDir,
      verifyBefore,
      verifyAfter,
      resumeExit: outcome.timedOut ? null : outcome.code,
      resumeLog,
      changedByResume: folderDifferences(beforeResume, afterResume),
      changedByVerify: folderDifferences(beforeVerify, beforeResume),
      finishedBefore,
    });
    badFileProblems.push(...problems);
    notes.push(`verify with the bad file: ${verifyAfter.failures.length} failure(s), ${verifyAfter.warnings.length} warning(s) (before it: ${verifyBefore.failures.length}, ${verifyBefore.warnings.length}); the resume exited ${String(outcome.code ?? outcome.signal)}`);
    for (const line of verifyAfter.failures.filter((f) => !verifyBefore.failures.includes(f)).slice(0, 3)) notes.push(`verify: ${line}`);
    notes.push(planted.undo());
  };
  try {
    const randomSubject = spec.plan?.kind === 'random_subject';
    // Said loudly up front; the controller's preflight then refuses the start, so fault_fired and run_finished fail: never a pass.
    if (randomSubject && setup.randomSubjectModelFile !== null && !existsSync(setup.randomSubjectModelFile)) notes.push(`random_subject: the model file ${setup.randomSubjectModelFile} does not exist; the instance cannot start with it (see ${logFile})`);
    const prereg = randomSubject ? setup.randomSubjectPreregFile : setup.preregFile;
    const modelFile = setup.randomSubjectModelFile;
    // A seed whose answers the model check refuses would try nothing: the first one it accepts (random-subject-seed.ts).
    const modelSeed = randomSubject && spec.plan !== null && modelFile !== null && existsSync(modelFile) ? await firstAcceptedModelSeed(spec.plan, { modelFile, temperature: RANDOM_SUBJECT_TEMPERATURE, maxTokens: RANDOM_SUBJECT_MAX_TOKENS }, notes) : null;
    if (spec.plan?.kind === 'stall_model') {
      try {
        modelServer = await startFaultModelServer(setup.codeRoot, logFile);
        notes.push(`model server (pid ${modelServer.pid}) at ${modelServer.baseUrl}, call timeout ${STALL_MODEL_CALL_TIMEOUT_MS} ms`);
      } catch (error) {
        if (!(error instanceof FaultModelServerError)) throw error;
        notes.push(`stall_model: ${error.message}; the instance runs without it, so nothing is stalled (stall_recorded fails)`);
      }
    }
    const args = ['--group', spec.group, '--seed', spec.instanceSeed, '--prereg', prereg, '--out', liveRunDir, '--experiment-id', `faults-${spec.name}`, ...modelArgsOf(spec.plan, { modelFile, modelSeed, server: modelServer }), ...common];
    // The first controller, then resumes until the instance is finished (sealed, final head signed); bounded.
    for (let attempt = 0; attempt <= MAX_RESUMES && !kill?.aborted && (attempt === 0 || !finishedRun(liveRunDir)) && (attempt === 0 || existsSync(path.join(liveRunDir, RUN_FILES.manifest))); attempt += 1) {
      const outcome = await runController(setup, attempt === 0 ? args : ['--resume', liveRunDir, ...common], arming, logFile, poll, kill, notes);
      exits.push(outcome.timedOut ? null : outcome.code);
      if (outcome.timedOut) notes.push(`a controller did not end within ${CONTROLLER_TIMEOUT_MS} ms and was killed`);
      orphanProblems.push(...(await awaitOrphans(faultDir, notes, kill)));
      // A fault that fired in a resumed controller is carried out the same way (the poll ran there too).
      damageOnce();
      const fired = reached as FaultReached | null;
      if (fired !== null && isBadFileKind(fired.kind) && !badFileStaged && !kill?.aborted) {
        try {
          await badFileStage(fired.kind);
        } catch (error) {
          // A stage that cannot finish is a failed verdict, never a crash that loses the run's record.
          badFileProblems.push(`the bad-file stage could not run to its end: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
        }
      }
    }
  } finally {
    // Every process of the instance is gone by now: its model server goes too (continued first if still frozen).
    if (modelServer !== null) await modelServer.stop();
    // Keep what the points wrote (hits, acks, reached) with the run's record.
    cpSync(faultDir, path.join(recordDir, 'fault'), { recursive: true });
    rmSync(faultDir, { recursive: true, force: true });
    // The run folder copied out of its tmpfs, then the tmpfs unmounted: also when the run failed.
    if (disk !== null) notes.push(...releaseFaultDisk(disk, runDir));
  }
  // Killed at the operator's second press: its processes are gone and its disk released, but nothing was checked.
  if (kill?.aborted) return skippedRun(spec, recordDir, runDir, `${INTERRUPTED_REASON}: its processes were killed before it finished, so no invariant was checked (controller exits ${exits.map((e) => e ?? 'killed').join(', ') || 'none'})`, startedMs, notes);
  const hits = readHits(path.join(recordDir, 'fault'));
  const calibration: GroupCalibration = { hits, ...readIntentHits(path.join(recordDir, 'fault')) };
  const fired = reached as FaultReached | null;
  // Finished = sealed with its final head signed (the controller may still die after that, in its shutdown).
  const finished = finishedRun(runDir);
  const runChecks: RunInvariantResult[] = [
    { invariant: 'fault_fired', ok: spec.plan === null || fired !== null, details: spec.plan === null || fired !== null ? [] : [`${spec.plan.kind} at hit ${spec.plan.hit} of ${spec.plan.point} never fired (the point was hit ${hits[spec.plan.point]} time(s)): the run proves nothing about it`] },
    { invariant: 'run_finished', ok: finished, details: finished ? [] : [`the instance did not finish after ${exits.length - 1} resume(s); controller exits ${exits.map((e) => e ?? 'killed').join(', ')} (see ${logFile})`] },
    { invariant: 'processes_exit', ok: orphanProblems.length === 0, details: orphanProblems },
    diskFullStop(fired, diskState.filled, exits, logFile, tempFilesAtStop),
    {
      invariant: 'bad_file_verdict',
      ok: badFileProblems.length === 0 && (fired === null || !isBadFileKind(fired.kind) || badFileStaged),
      details: fired !== null && isBadFileKind(fired.kind) && !badFileStaged ? [`${fired.kind} fired but the bad file was never planted (the instance was not stopped)`] : badFileProblems,
    },
  ];
  const storeChecks = existsSync(path.join(runDir, RUN_FILES.store))
    ? checkStoreInvariants({ runDir, faultDir: path.join(recordDir, 'fault'), scenariosDir: setup.scenariosDir, reached: fired, plannedKind: spec.plan?.kind ?? null })
    : STORE_INVARIANTS.map((invariant) => ({ invariant, ok: false, details: [`no ${RUN_FILES.store} in ${runDir}: the instance never started`] }));
  const invariants = [...runChecks, ...storeChecks];
  const violations = invariants.filter((i) => !i.ok).map((i) => i.invariant);
  const fingerprint = fingerprintOf(spec.plan, fired, exits, runDir, invariants);
  const result = { plan: spec.plan, name: spec.name, recordDir, runDir, reached: fired, exits, invariants, violations, notes, fingerprint, durationMs: Date.now() - startedMs, skipped: null, calibration };
  writeFileSync(path.join(recordDir, 'fault-run.json'), `${JSON.stringify(result, null, 2)}\n`);
  return result;
}

/**
 * The codes a controller that met a full disk may end with: the instance stopped on it
 * (controller/instance.ts stopOnFullDisk); a writer it had to start (a planned writer restart)
 * refused the full store (writer/spawn.ts WriterStartError); or — when the disk filled after the
 * seal — a read of the finished store for the summary refused for lack of space
 * (writer/store-file-failure.ts). Each tells the person the disk is full.
 */
const STORE_FULL_ENDINGS: readonly string[] = [new InstanceError('store_full', '').errorCode, new WriterStartError(storeFileCode('full'), '').errorCode, storeFileCode('full')];
/** Entries of the workspace walk looking for temp files; a scenario's workspace holds a handful. */
const MAX_TEMP_WALK_ENTRIES = 10_000;

/** The file tool's temp files (TEMP_SUFFIX) anywhere in `workspace`, relative paths; bounded walk. */
function tempFilesIn(workspace: string): string[] {
  const found: string[] = [];
  if (!existsSync(workspace)) return found;
  const stack = [''];
  let seen = 0;
  while (stack.length > 0 && seen < MAX_TEMP_WALK_ENTRIES) {
    const rel = stack.pop()!;
    for (const entry of readdirSync(path.join(workspace, rel), { withFileTypes: true })) {
      seen += 1;
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) stack.push(child);
      else if (entry.name.endsWith(TEMP_SUFFIX)) found.push(child);
    }
  }
  if (stack.length > 0) found.push(`(the walk stopped after ${MAX_TEMP_WALK_ENTRIES} entries: the rest was not looked at)`);
  return found.sort();
}

/** The JSON ending (--json) of the first controller in the log: `$ experiment …` up to `$ exit …`. */
function firstEnding(logFile: string): { ok?: unknown; error?: { code?: unknown } } | null {
  if (!existsSync(logFile)) return null;
  const lines = readFileSync(logFile, 'utf8').split('\n');
  const end = lines.findIndex((line) => line.startsWith('$ exit'));
  for (const line of lines.slice(0, end === -1 ? lines.length : end).reverse()) {
    if (!line.startsWith('{"ok":')) continue;
    try {
      return JSON.parse(line) as { ok?: unknown; error?: { code?: unknown } };
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * disk_full: the controller that ran into the full disk stopped on its own — no hang (the harness
 * did not have to kill it), exit 1 with the typed ending instance_store_full (never 0 on a partial
 * run, never a bug's internal_error) — and the file tool left no half file (temp file) in the
 * workspace. Nothing to check for the other kinds. The rest (nothing acknowledged lost, every
 * intent with an outcome, the resume sealed and verifying) are the other invariants.
 */
function diskFullStop(fired: FaultReached | null, filled: boolean, exits: ReadonlyArray<number | null>, logFile: string, tempFiles: readonly string[] | null): RunInvariantResult {
  if (fired?.kind !== 'disk_full') return { invariant: 'disk_full_stop', ok: true, details: [] };
  const problems: string[] = [];
  if (!filled) problems.push('the harness did not fill the disk at the point (see the notes): the run proves nothing about a full disk');
  const exit = exits[0];
  if (exit === null || exit === undefined) problems.push(`the controller that met the full disk did not end by itself within ${CONTROLLER_TIMEOUT_MS} ms (a hang): the harness killed it`);
  else if (exit !== EXIT_CODES.failed) problems.push(`the controller that met the full disk exited ${exit}, not ${EXIT_CODES.failed} (${exit === EXIT_CODES.ok ? 'a partial run reported as finished' : 'not the documented exit'})`);
  const ending = firstEnding(logFile);
  const code = ending?.error?.code;
  if (typeof code !== 'string' || !STORE_FULL_ENDINGS.includes(code)) problems.push(`the controller that met the full disk ended with ${ending === null ? 'no JSON ending' : `code ${JSON.stringify(code ?? null)}`}, not ${STORE_FULL_ENDINGS.join(' or ')}: the person reading it is not told the disk is full (see ${logFile})`);
  if (tempFiles === null) problems.push('the workspace was not looked at after the stop (no process of the instance ended?)');
  else if (tempFiles.length > 0) problems.push(`the file tool left ${tempFiles.length} temp file(s) in the workspace when it stopped on the full disk: ${tempFiles.slice(0, 5).join(', ')} (a half file)`);
  return { invariant: 'disk_full_stop', ok: problems.length === 0, details: problems };
}

/** A run that could not be tried here: its record says why, with no invariant (none was checked). */
function skippedRun(spec: RunSpec, recordDir: string, runDir: string, reason: string, startedMs: number, notes: readonly string[] = []): FaultRunResult & { calibration: GroupCalibration } {
  const fingerprint: RunFingerprint = { plan: spec.plan, reached: null, exits: [], head_seq: null, event_types_sha256: null, state_hash: null, invariants: {} };
  const empty = Object.fromEntries(FAULT_POINTS.map((point) => [point, 0])) as PointHits;
  const result = { plan: spec.plan, name: spec.name, recordDir, runDir, reached: null, exits: [], invariants: [], violations: [], notes: [`SKIPPED, not tried: ${reason}`, ...notes], fingerprint, durationMs: Date.now() - startedMs, skipped: reason, calibration: { hits: empty, mutating: {}, writing: {} } };
  writeFileSync(path.join(recordDir, 'fault-run.json'), `${JSON.stringify(result, null, 2)}\n`);
  return result;
}

/** A clean run of `group` with every point counting: the hits the plan draws from, and a control (its invariants must hold too). */
export async function calibrate(setup: HarnessSetup, group: (typeof GROUPS)[number], instanceSeed: string, kill: AbortSignal | null = null): Promise<FaultRunResult & { calibration: GroupCalibration }> {
  return execute(setup, { name: `calibration-${group}`, plan: null, group, instanceSeed, arming: { armed: null } }, kill);
}

/** The folder of a planned run under OUT/runs/ (its record, run folder and log). */
export function runNameOf(plan: FaultRunPlan): string {
  return `${String(plan.index).padStart(4, '0')}-${plan.group}-${plan.point}-${plan.kind}`;
}

export async function runFaultPlan(setup: HarnessSetup, plan: FaultRunPlan, kill: AbortSignal | null = null): Promise<FaultRunResult> {
  const name = runNameOf(plan);
  return execute(setup, { name, plan, group: plan.group, instanceSeed: plan.instance_seed, arming: { armed: { point: plan.point, kind: plan.kind, hit: plan.hit } } }, kill);
}

export function calibrationOf(results: Readonly<Record<(typeof GROUPS)[number], { calibration: GroupCalibration }>>): Calibration {
  return { A: results.A.calibration, B: results.B.calibration, C: results.C.calibration };
}

/** The command that reruns one run of a harness seed. */
export function reproduceCommand(seed: string, index: number): string {
  return `npm run faults -- --seed ${JSON.stringify(seed)} --run ${index}`;
}
