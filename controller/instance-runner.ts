// One experiment instance, end to end (issue 4; DESIGN §2, §8): the controller's side.
//
//   pre-registration lock checked → plan built from the seed → isolation decided →
//   run folder (controller.pub, plan.json, prereg copy + lock, manifest.dsse.json signed
//   BEFORE the writer starts, so StoreOpened can carry its hash) → ds-writer → ds-runtime →
//   for each scheduled wake on the virtual clock: inject due interventions (the world first),
//   deliver them, WakeStarted, the runtime's wake, planned crashes, WakeEnded, a signed
//   periodic head every K wakes → seal + final signed head.
//
// Every controller event carries a deterministic idempotency key (controller-events.ts), so a
// retried or resumed step is answered with the original event instead of a second one.
// A stop (SIGINT/SIGTERM via `signal`, or a child dying unplanned) is recorded, signed and
// resumable with `--resume DIR`; nothing is deleted.
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ledgerOf } from '../design/budget-ledger.js';
import { checkpointDraft, deliveredDraft, ledgerDraft, emergencyStoppedDraft, interventionDrafts, resumedDraft, subjectInitializedDraft, wakeEndedDraft, wakeStartedDraft } from './controller-events.js';
import { CONTROLLER_KEYS, isCrashIntervention, isWorldIntervention, type WakeOutcome } from '../design/run-contract.js';
import { buildExperimentPlan, ExperimentPlan } from '../design/experiment-plan.js';
import { readProgress, type InstanceProgress } from './instance-progress.js';
import type { Intervention } from '../design/intervention-plan.js';
import { IsolationError, planIsolation, prepareRunDir, prepareSocketDir, type IsolationOptions, type IsolationPlan, type SocketDir } from './isolation.js';
import { copyPublicKeyInto, loadOrCreateControllerKey, type ControllerKey } from './key-store.js';
import { buildInstanceManifest, checkSignedManifest, GROUP_CAPABILITIES, RUNTIME_VERSION, type InstanceManifest } from '../design/manifest.js';
import { checkPreregLock, lockFileOf, MODEL_CALLS_MISSING_MESSAGE, modelCallRulesOf, PreRegistration, readPreregJson, type ModelCallRules } from '../design/prereg.js';
import { appendSignedHead, sealAndSignFinalHead, signAndRecordHead, signChainHead, writeSignedManifest } from './run-signatures.js';
import { loadScenario, subjectInitializedPayload, type Scenario } from '../design/scenario.js';
import { VirtualClock } from './virtual-clock.js';
import type { ScheduledWake } from '../design/wake-schedule.js';
import { applyExternalChange, materializeWorkspace, WORKSPACE_FOLDER, type FileOwner } from './workspace.js';
import { copyModelConfig, ModelChoice, modelConfigBytes, readModelChoice, resolveModel } from '../design/model-choice.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { FaultSwitch } from '../schema/fault-switch.js';
import { STATE_MACHINE_VERSION, SUBJECT_PROJECTOR_VERSION } from '../projector/versions.js';
import { CHAIN_HEAD_PAYLOAD_TYPE, ChainHead } from '../schema/chain-head.js';
import { verifyDsse } from '../schema/dsse.js';
import { keyIdOf, parsePublicKeyHex, toHex } from '../schema/ed25519-keys.js';
import { EVENT_SCHEMA_VERSION } from '../schema/event-catalog.js';
import { hashCanonical, type HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { WriterClient, WriterUnavailableError } from '../writer/client.js';
import { WRITER_VERSION } from '../writer/event-store.js';
import { type AppendResult, type EventDraft, type Head } from '../writer/protocol.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { newToken, spawnWriter, WriterStartError, type WriterProcess } from '../writer/spawn.js';
import { openStoreReadOnly, readingStore, storeReadErrorFromWriterCode, StoreReadError } from '../writer/store-reader.js';
import type { ModelProtocol } from '../runtime/model-protocol.js';
import type { PreflightReport, RuntimeModelConfig, WakeDone } from '../runtime/protocol.js';
import { spawnRuntime, RuntimeWakeError, type RuntimeProcess } from '../runtime/spawn.js';

export type Group = keyof typeof GROUP_CAPABILITIES;

/** A wake must answer within this much real time beyond its model call's own timeout. */
export const WAKE_TIMEOUT_MS = 120_000;
/** A child asked to stop gets this long before SIGKILL. */
export const CHILD_STOP_TIMEOUT_MS = 10_000;
/** How long a runtime may take to say ready, before its model check's own time (the call timeout) is added. */
const RUNTIME_START_TIMEOUT_MS = 20_000;
/** A server's preflight side requests (models, props, tokenizer), each bounded by 10 s in the openai adapter. */
const PREFLIGHT_SIDE_REQUESTS_MS = 30_000;
/**
 * An instance holds about 500 events: a snapshot every 100 gives the restore drill (and the fault
 * harness's snapshot faults) several to start from, at a few kilobytes each. Same for every group.
 */
export const INSTANCE_SNAPSHOT_EVERY_EVENTS = 100;
/** Upper bound on the writer restarts one instance may need (one planned writer crash, plus margin). */
export const MAX_WRITER_RESTARTS = 4;


export type InstanceErrorCode = 'prereg' | 'run_dir' | 'resume' | 'isolation' | 'writer' | 'runtime' | 'plan' | 'model';

export class InstanceError extends Error {
  override readonly name = 'InstanceError';
  constructor(
    readonly code: InstanceErrorCode,
    message: string,
  ) {
    super(message);
  }
}

interface CommonOptions {
  readonly runDir: string;
  readonly keyDir: string;
  /** Real-time factor of the virtual clock; null = as fast as possible. */
  readonly speed: number | null;
  /** Aborted = emergency stop (the CLI wires SIGINT/SIGTERM to it). */
  readonly signal: AbortSignal;
  /** Who asks (recorded with stops and resumes). */
  readonly operator: string;
  readonly scenariosDir: string;
  readonly isolation?: IsolationOptions;
  readonly log: (line: string) => void;
  /** The fault harness's points in this process (npm run faults); FaultSwitch.off otherwise. */
  readonly faults?: FaultSwitch;
  /**
   * Asked after each wake with the events it recorded: a stop to record right there (the
   * unknown-outcome drill's, experiments/cli/drill.ts), or null to go on. Unset: never.
   */
  readonly stopAfterWake?: (wakeEvents: readonly EventEnvelope[]) => WakeStopOrder | null;
}

/** A stop a caller orders after a wake: recorded like any stop, with this reason and operator. */
export interface WakeStopOrder {
  readonly reason: string;
  readonly operator: string;
}

export interface NewInstanceOptions extends CommonOptions {
  readonly preregFile: string;
  readonly seed: string;
  readonly group: Group;
  /** Virtual time of hour 0 (part of the schedule, so of its hash). */
  readonly startAt: string;
  readonly experimentId: string;
  readonly replicate: number;
  readonly groupBlindId: string;
  /** Wall clock, read once for the manifest's started_at. */
  readonly startedAt: string;
  readonly model: ModelChoice;
}

export type ResumeOptions = CommonOptions;

export interface InstanceResult {
  readonly status: 'finished' | 'stopped';
  readonly runDir: string;
  readonly experimentId: string;
  readonly groupBlindId: string;
  readonly isolation: InstanceManifest['isolation'];
  readonly isolationSummary: string;
  readonly wakesTotal: number;
  /** Wakes this call ran (a resumed instance ran the others before). */
  readonly wakesRun: number;
  readonly head: Head;
  readonly finalHead: ChainHead | null;
  readonly stopReason: string | null;
  /** Everything that deviated from the plain path (kill points not reached, restarts, …). */
  readonly notes: readonly string[];
}

// ---------------------------------------------------------------------------------------

function scenarioOf(options: CommonOptions, scenarioId: string): Scenario {
  return loadScenario(path.join(options.scenariosDir, scenarioId));
}

function ownerOf(isolation: IsolationPlan): FileOwner | null {
  return isolation.runtime;
}

/** Isolation, downgraded to same-uid (and said so) when the writer's uid cannot use the run folder. */
function isolationFor(runDir: string, options: CommonOptions): IsolationPlan {
  const planned = planIsolation(options.isolation ?? {});
  try {
    prepareRunDir(runDir, planned);
    return planned;
  } catch (error) {
    if (!(error instanceof IsolationError) || error.problem !== 'run-dir-unreachable') throw error;
    planned.cleanup();
    const fallback = planIsolation({ ...options.isolation, forceSameUid: error.message });
    prepareRunDir(runDir, fallback);
    return fallback;
  }
}

export async function runNewInstance(options: NewInstanceOptions): Promise<InstanceResult> {
  const runDir = path.resolve(options.runDir);
  if (existsSync(runDir) && readdirSync(runDir).length > 0) throw new InstanceError('run_dir', `${runDir} exists and is not empty: a new instance needs a new folder (or continue that one with --resume ${runDir})`);
  const key = loadOrCreateControllerKey(options.keyDir, { runDirs: [runDir] });
  const lock = checkPreregLock(options.preregFile, key.keys.publicKey);
  if (!lock.ok) throw new InstanceError('prereg', `refusing to run: ${lock.failures.map((f) => f.message).join('; ')}`);
  const prereg = PreRegistration.parse(readPreregJson(options.preregFile));
  const scenario = scenarioOf(options, prereg.scenario.id);
  const plan = buildExperimentPlan({ prereg, scenario, seed: options.seed, startAt: options.startAt });
  const rules = modelCallRulesOf(prereg);
  if (rules === null) throw new InstanceError('prereg', `refusing to run: ${MODEL_CALLS_MISSING_MESSAGE}`);
  const choice = ModelChoice.parse(options.model);
  const model = resolveModel(choice, rules.transport_retry);
  // Checked before anything is written: a configuration file changed since it was read refuses the start with the folder untouched.
  const modelConfig = modelConfigBytes(choice);

  mkdirSync(runDir, { recursive: true });
  const isolation = isolationFor(runDir, options);
  options.log(isolation.summary);
  copyPublicKeyInto(runDir, key.keys);
  writeFileSync(path.join(runDir, RUN_FILES.plan), `${JSON.stringify(plan, null, 2)}\n`, { flag: 'wx' });
  writeFileSync(path.join(runDir, RUN_FILES.prereg), `${JSON.stringify(prereg, null, 2)}\n`, { flag: 'wx' });
  copyFileSync(lockFileOf(options.preregFile), path.join(runDir, RUN_FILES.preregLock));
  writeFileSync(path.join(runDir, RUN_FILES.model), `${JSON.stringify(options.model, null, 2)}\n`, { flag: 'wx' });
  copyModelConfig(choice, runDir, modelConfig);
  const manifest = buildInstanceManifest({
    experimentId: options.experimentId,
    groupBlindId: options.groupBlindId,
    capabilities: GROUP_CAPABILITIES[options.group],
    replicate: options.replicate,
    plan,
    prereg,
    retrievalPolicy: prereg.retrieval_policy,
    model: model.info,
    isolation: isolation.manifest,
    startedAt: options.startedAt,
  });
  // Signed before the writer exists: StoreOpened, seq 1, carries this hash.
  const manifestHash = writeSignedManifest(runDir, manifest, key.keys);
  materializeWorkspace(path.join(runDir, WORKSPACE_FOLDER), scenario, ownerOf(isolation));
  options.log(`manifest signed (${manifestHash.slice(0, 23)}…), key ${key.keyId.slice(0, 16)}…${key.created ? ' (new key)' : ''}; plan: ${plan.schedule.wakes.length} wakes, ${plan.interventions.length} interventions, schedule ${plan.schedule_hash.slice(0, 23)}…`);

  const instance = new Instance({ options, runDir, key, plan, manifest, manifestHash, prereg, isolation, scenario, model: model.runtime, protocol: model.protocol, rules });
  return instance.run('create');
}

/** Whether heads.jsonl holds a final head signed by `publicKey`. */
function hasFinalHead(runDir: string, publicKey: Uint8Array): boolean {
  const file = path.join(runDir, RUN_FILES.heads);
  if (!existsSync(file)) return false;
  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  return lines.some((line) => {
    // A torn last line (a controller killed mid-append) is no head: skipped, as readSignedHeads does.
    let envelope: unknown;
    try {
      envelope = JSON.parse(line);
    } catch {
      return false;
    }
    const verified = verifyDsse(envelope, CHAIN_HEAD_PAYLOAD_TYPE, publicKey);
    return verified.ok && ChainHead.safeParse(verified.body).data?.kind === 'final';
  });
}

/** A store problem met on the way into a resume, said as a refusal of the resume (same code: StoreReadError's). */
function resumeRefusalOf(runDir: string, error: unknown): unknown {
  const refusing = `refusing to resume ${runDir}: `;
  if (error instanceof StoreReadError) return new StoreReadError(error.code, `${refusing}${error.message}`);
  if (error instanceof WriterStartError) return storeReadErrorFromWriterCode(error.code, `${refusing}${error.message}`) ?? error;
  return error;
}

/**
 * The store, read-only, before a resume spawns or writes anything (issue 16): an empty,
 * damaged (quick_check) or unreadable events.db is refused — the writer's open would make an
 * empty file a 4,096-byte database — and one a writer holds (the instance itself, another
 * resume, a repair) is refused as locked: the read-only probe gets SQLITE_BUSY and creates no
 * file. A finished run (sealed, final head signed) is refused here too: starting its writer
 * would rewrite the file's header for nothing. Throws StoreReadError or InstanceError.
 */
function checkStoreBeforeResume(runDir: string, storeFile: string, publicKey: Uint8Array): void {
  // A hot journal (a writer killed inside its journal-mode switch) refuses every read-only open
  // (SQLITE_READONLY_ROLLBACK); the writer's read-write open rolls it back and checks the file itself.
  const journal = `${storeFile}-journal`;
  if (existsSync(journal) && statSync(journal).size > 0) return;
  let sealedSeq: number | null;
  try {
    const db = openStoreReadOnly(storeFile, { checkIntegrity: true });
    try {
      const row = readingStore(storeFile, () => db.prepare("SELECT seq FROM events WHERE event_type = 'SystemEvent.StoreSealed' ORDER BY seq DESC LIMIT 1").get() as { seq: number } | undefined);
      sealedSeq = row?.seq ?? null;
    } finally {
      db.close();
    }
  } catch (error) {
    throw resumeRefusalOf(runDir, error);
  }
  if (sealedSeq !== null && hasFinalHead(runDir, publicKey)) throw new InstanceError('resume', `${runDir} is finished and sealed (seq ${sealedSeq}); nothing to resume`);
}

export async function resumeInstance(options: ResumeOptions): Promise<InstanceResult> {
  const runDir = path.resolve(options.runDir);
  const need = (file: string): string => {
    const full = path.join(runDir, file);
    if (!existsSync(full)) throw new InstanceError('resume', `${full} is missing: ${runDir} is not a run folder this controller can resume`);
    return full;
  };
  const key = loadOrCreateControllerKey(options.keyDir, { runDirs: [runDir], create: false });
  const runKey = parsePublicKeyHex(readFileSync(need(RUN_FILES.publicKey), 'utf8'));
  if (toHex(runKey) !== toHex(key.keys.publicKey)) throw new InstanceError('resume', `${runDir} was signed by key ${keyIdOf(runKey).slice(0, 16)}…, not this controller's ${key.keyId.slice(0, 16)}…; pass the --key-dir of the key that started it`);
  const signed = checkSignedManifest(JSON.parse(readFileSync(need(RUN_FILES.manifest), 'utf8')), key.keys.publicKey);
  if (!signed.ok) throw new InstanceError('resume', `${RUN_FILES.manifest} does not verify: ${signed.reason}`);
  const manifest = signed.manifest;
  const plan = ExperimentPlan.parse(JSON.parse(readFileSync(need(RUN_FILES.plan), 'utf8')));
  if (hashCanonical(plan.schedule) !== manifest.wake_schedule_hash || hashCanonical(plan.interventions) !== manifest.intervention_plan_hash) {
    throw new InstanceError('resume', `${RUN_FILES.plan} does not hash to the schedule/intervention hashes of the signed manifest: it was changed after the start`);
  }
  const prereg = PreRegistration.parse(JSON.parse(readFileSync(need(RUN_FILES.prereg), 'utf8')));
  if (hashCanonical(prereg) !== manifest.prereg_sha256) throw new InstanceError('resume', `${RUN_FILES.prereg} does not hash to the manifest's prereg_sha256: it was changed after the start`);
  // Configuration drift after start is a hard failure (spec §8.4): never resume under other code.
  const versions = { runtime: RUNTIME_VERSION, writer: WRITER_VERSION, event_schema: EVENT_SCHEMA_VERSION, projector: SUBJECT_PROJECTOR_VERSION, state_machine: STATE_MACHINE_VERSION };
  const drift = Object.entries(versions).filter(([name, version]) => manifest.versions[name as keyof typeof versions] !== version);
  if (drift.length > 0) throw new InstanceError('resume', `refusing to resume under other versions than the instance started with (${drift.map(([n, v]) => `${n} ${manifest.versions[n as keyof typeof versions]} → ${v}`).join(', ')}): that would be configuration drift after start`);
  checkStoreBeforeResume(runDir, need(RUN_FILES.store), key.keys.publicKey);
  const isolation = isolationFor(runDir, options);
  if (isolation.manifest.mode !== manifest.isolation.mode) {
    isolation.cleanup();
    throw new InstanceError('isolation', `the instance started with isolation ${manifest.isolation.mode} and would resume with ${isolation.manifest.mode} (${isolation.summary}); resume it the way it started (as root for separate-uids)`);
  }
  options.log(isolation.summary);
  const scenario = scenarioOf(options, prereg.scenario.id);
  const rules = modelCallRulesOf(prereg);
  if (rules === null) throw new InstanceError('resume', `refusing to resume: ${RUN_FILES.prereg} predates the pre-registered model-call rules (${MODEL_CALLS_MISSING_MESSAGE})`);
  const model = resolveModel(readModelChoice(runDir), rules.transport_retry);
  if (canonicalJson(model.info) !== canonicalJson(manifest.model)) {
    isolation.cleanup();
    throw new InstanceError('resume', `${RUN_FILES.model} no longer resolves to the signed manifest's model (${manifest.model.adapter} ${manifest.model.model_id}): configuration drift after start`);
  }
  // The hash of the body as signed (what StoreOpened carries), not of the parsed manifest (which may fill defaults).
  const instance = new Instance({ options, runDir, key, plan, manifest, manifestHash: signed.sha256, prereg, isolation, scenario, model: model.runtime, protocol: model.protocol, rules });
  return instance.run('open');
}

// ---------------------------------------------------------------------------------------

interface InstanceInput {
  readonly options: CommonOptions;
  readonly runDir: string;
  readonly key: ControllerKey;
  readonly plan: ExperimentPlan;
  readonly manifest: InstanceManifest;
  readonly manifestHash: HashString;
  readonly prereg: PreRegistration;
  readonly isolation: IsolationPlan;
  readonly scenario: Scenario;
  readonly model: RuntimeModelConfig;
  readonly protocol: ModelProtocol;
  readonly rules: ModelCallRules;
}

/** Resume found a sealed store whose final head was missing, and signed it: nothing else to do. */
class AlreadySealed extends Error {
  override readonly name = 'AlreadySealed';
}

/** What a wake of the runtime gave: a line for the screen and the report (null when it crashed before reporting). */
interface WakeReport {
  readonly line: string;
  readonly done: WakeDone | null;
}

/** The emergency-stop path was taken; carries why, and who stopped it (default: the operator of the command). */
class StopRequested extends Error {
  override readonly name = 'StopRequested';
  constructor(
    message: string,
    readonly operator: string | null = null,
  ) {
    super(message);
  }
}

/** Who records a pause of the pre-registered transport rule: the controller itself, not a person. */
const PAUSE_RULE_OPERATOR = 'controller (pre-registered pause rule)';
/** Who records a start refused by the model's check before the first wake. */
const PREFLIGHT_OPERATOR = 'controller (model preflight)';

class Instance {
  private readonly log: (line: string) => void;
  private readonly tokens = { runtime: newToken(), experiment: newToken() };
  private readonly clock: VirtualClock;
  private readonly subjectId: string;
  private readonly notes: string[] = [];
  private socket: SocketDir | null = null;
  private writer: WriterProcess | null = null;
  private client: WriterClient | null = null;
  private runtime: RuntimeProcess | null = null;
  private writerRestarts = 0;
  /** Set while a planned writer crash is armed: its intervention, for the restart record. */
  private pendingWriterCrash: Intervention | null = null;
  /** event_ids of each intervention's written events, for InterventionDelivered. */
  private readonly eventIds = new Map<string, string[]>();
  private readonly written = new Set<string>();

  constructor(private readonly input: InstanceInput) {
    this.log = input.options.log;
    this.clock = new VirtualClock({ startAt: input.plan.schedule.start_at, speed: input.options.speed });
    // Shared by the A/B/C instances of a replicate and free of the group: event ids derive from it,
    // so the groups' subjects see the same ids wherever their histories agree, and a rerun of a
    // batch (same experiment id and seed) reproduces its state hashes.
    this.subjectId = `subject-${input.manifest.experiment_id}-r${input.manifest.replicate}`;
  }

  private get wakes(): readonly ScheduledWake[] {
    return this.input.plan.schedule.wakes;
  }

  async run(mode: 'create' | 'open'): Promise<InstanceResult> {
    let wakesRun = 0;
    let stopReason: string | null = null;
    let finalHead: ChainHead | null = null;
    try {
      // A writer that refuses the store on a resume (it changed, or another writer took it, after
      // checkStoreBeforeResume) is the same refusal: store_locked, store_damaged, …
      await this.startWriter(mode).catch((error: unknown) => {
        throw mode === 'open' ? resumeRefusalOf(this.input.runDir, error) : error;
      });
      const progress = await readProgress(this.connected());
      if (progress.sealed) {
        if (this.hasFinalHead()) throw new InstanceError('resume', `${this.input.runDir} is finished and sealed (seq ${progress.head.seq}); nothing to resume`);
        // The previous controller sealed the store but died before signing: the seal is the last event, so its head is final.
        finalHead = this.signFinalHeadOnSeal(progress.head);
        this.note(`the store was sealed at seq ${progress.head.seq} but its final head was never signed; signed it now`);
        throw new AlreadySealed();
      }
      const firstWake = await this.prepare(progress, mode);
      // A resume with every wake already run only seals: no model is asked, so none is started (or checked).
      if (firstWake < this.wakes.length) {
        try {
          await this.startRuntime();
        } catch (error) {
          // A refused model check ends this start: recorded (head signed), so that a later resume finds a stop with its reason, not a controller that died unrecorded.
          if (error instanceof InstanceError && error.code === 'model') await this.recordStop(error.message, PREFLIGHT_OPERATOR).catch(() => undefined);
          throw error;
        }
      }
      for (let index = firstWake; index < this.wakes.length; index += 1) {
        const done = await this.runWake(index);
        wakesRun += 1;
        if ((index + 1) % this.input.prereg.chain_head_signing_period_wakes === 0) await this.signPeriodic();
        const order = this.input.options.stopAfterWake?.(done.events) ?? null;
        if (order !== null) throw new StopRequested(order.reason, order.operator);
        // After the last wake no schedule is left to protect: the run is sealed, not paused.
        if (index + 1 < this.wakes.length) this.applyPauseRule(done.calls);
      }
      this.checkStop();
      await this.stopRuntime();
      const sealed = await sealAndSignFinalHead(this.connected(), this.signing(), 'every scheduled wake ran');
      finalHead = sealed;
      this.log(`sealed at seq ${sealed.seq}; final head signed`);
    } catch (error) {
      if (error instanceof StopRequested) {
        stopReason = error.message;
        try {
          await this.recordStop(stopReason, error.operator ?? this.input.options.operator);
        } catch (recordError) {
          await this.shutdownQuietly();
          throw new InstanceError('writer', `the stop (${stopReason}) could not be recorded: ${recordError instanceof Error ? recordError.message : String(recordError)}; nothing was deleted — continue with --resume ${this.input.runDir}`);
        }
      } else if (!(error instanceof AlreadySealed)) {
        await this.shutdownQuietly();
        throw error;
      }
      // AlreadySealed: finished; the missing final head was signed above.
    }
    const head = await this.connected().head();
    await this.shutdownQuietly();
    return {
      status: finalHead ? 'finished' : 'stopped',
      runDir: this.input.runDir,
      experimentId: this.input.manifest.experiment_id,
      groupBlindId: this.input.manifest.group_blind_id,
      isolation: this.input.isolation.manifest,
      isolationSummary: this.input.isolation.summary,
      wakesTotal: this.wakes.length,
      wakesRun,
      head,
      finalHead,
      stopReason,
      notes: this.notes,
    };
  }

  /** Whether heads.jsonl holds a final head signed by this controller's key. */
  private hasFinalHead(): boolean {
    return hasFinalHead(this.input.runDir, this.input.key.keys.publicKey);
  }

  private signFinalHeadOnSeal(head: Head): ChainHead {
    const final: ChainHead = { experiment_id: this.input.manifest.experiment_id, seq: head.seq, event_hash: head.event_hash, kind: 'final', signed_at: new Date().toISOString() };
    appendSignedHead(this.input.runDir, signChainHead(final, this.input.key.keys));
    return final;
  }

  private stopReasonText(): string {
    const reason: unknown = this.input.options.signal.reason;
    return typeof reason === 'string' ? reason : 'emergency stop requested';
  }

  private note(line: string): void {
    this.notes.push(line);
    this.log(`note: ${line}`);
  }

  private get faults(): FaultSwitch {
    return this.input.options.faults ?? FaultSwitch.off;
  }

  private signing() {
    return { runDir: this.input.runDir, keys: this.input.key.keys, experimentId: this.input.manifest.experiment_id, occurredAt: this.clock.now(), now: () => new Date().toISOString(), faults: this.faults };
  }

  private connected(): WriterClient {
    if (!this.client) throw new InstanceError('writer', 'no writer connection (bug: used before start)');
    return this.client;
  }

  // ---- processes -------------------------------------------------------------------------

  private async startWriter(mode: 'create' | 'open'): Promise<void> {
    this.socket ??= prepareSocketDir(this.input.isolation);
    const { writer, codeRoot } = this.input.isolation;
    this.writer = await spawnWriter(
      {
        db_path: path.join(this.input.runDir, RUN_FILES.store),
        socket_path: this.socket.socketPath,
        mode,
        subject_id: this.subjectId,
        experiment_id: this.input.manifest.experiment_id,
        manifest_sha256: this.input.manifestHash,
        tokens: this.tokens,
        projection: 'subject',
        socket_mode: this.socket.socketMode,
        snapshot_every: INSTANCE_SNAPSHOT_EVERY_EVENTS,
      },
      { codeRoot, faultInjection: this.faults.environmentValue, ...(writer ? { uid: writer.uid, gid: writer.gid } : {}) },
    );
    const faults = this.faults;
    this.client = await WriterClient.connect(this.socket.socketPath, 'experiment', this.tokens.experiment, { onAck: (events) => faults.recordAcks(events), onStray: (text) => this.log(`warning: ${text}`) });
    this.log(`ds-writer pid ${this.writer.pid} serving seq ${this.writer.head.seq}`);
  }

  private async startRuntime(): Promise<void> {
    const { runtime, codeRoot } = this.input.isolation;
    this.runtime = await spawnRuntime(
      {
        subject_id: this.subjectId,
        socket_path: this.socket!.socketPath,
        token: this.tokens.runtime,
        capabilities: this.input.manifest.capabilities,
        retrieval_policy: this.input.prereg.retrieval_policy,
        workspace_dir: path.join(this.input.runDir, RUN_FILES.workspace),
        model: this.input.model,
        protocol: this.input.protocol,
      },
      // The runtime checks its model before it says ready (loading a local model; a server's side requests and a probe call, retried like any call).
      { codeRoot, faultInjection: this.faults.environmentValue, startTimeoutMs: RUNTIME_START_TIMEOUT_MS + PREFLIGHT_SIDE_REQUESTS_MS + this.modelCallBudgetMs(), ...(runtime ? { uid: runtime.uid, gid: runtime.gid } : {}) },
    );
    this.log(`ds-runtime pid ${this.runtime.pid}`);
    this.recordPreflight(this.runtime.preflight);
  }

  /**
   * The runtime's model check before the first wake, appended to preflight.jsonl (one line per
   * start) and said on screen; a failed check ends the start before any wake (issue 15 item 5).
   */
  private recordPreflight(report: PreflightReport | null): void {
    if (report === null) return;
    const line = { checked_at: new Date().toISOString(), adapter: this.input.manifest.model.adapter, model_id: this.input.manifest.model.model_id, ...report };
    appendFileSync(path.join(this.input.runDir, RUN_FILES.preflight), `${JSON.stringify(line)}\n`);
    for (const text of report.lines) this.log(`model preflight: ${text}`);
    if (!report.ok) throw new InstanceError('model', `the model failed its check before the first wake: ${report.reason}. Nothing ran; fix the model or its server and start again (or continue this folder with --resume ${this.input.runDir})`);
    // The controller hashed the model file into the signed manifest; the runtime loaded a file of its own reading: they must be the same one.
    const pinned = this.input.manifest.model.build;
    if (this.input.manifest.model.adapter === 'local' && report.facts['build'] !== pinned) {
      throw new InstanceError('model', `the runtime loaded a model hashing to ${String(report.facts['build'])}, but the signed manifest pins ${String(pinned)}: the model file changed after the start; restore it, or start a new run`);
    }
    this.log('model preflight: OK');
  }

  private async stopRuntime(): Promise<void> {
    const runtime = this.runtime;
    this.runtime = null;
    // A runtime stopped mid-wake finishes the step under way first (its model call included): wait that long.
    if (runtime) await runtime.stop(CHILD_STOP_TIMEOUT_MS + (this.input.manifest.model.call_timeout_ms ?? 0));
  }

  private async shutdownQuietly(): Promise<void> {
    const failures: string[] = [];
    await this.stopRuntime().catch((e: unknown) => failures.push(`runtime: ${String(e)}`));
    this.client?.close();
    this.client = null;
    const writer = this.writer;
    this.writer = null;
    if (writer) {
      const exit = await writer.stop(CHILD_STOP_TIMEOUT_MS);
      if (exit.code !== 0) failures.push(`writer exited with code ${exit.code} signal ${exit.signal}`);
    }
    this.socket?.cleanup();
    this.input.isolation.cleanup();
    for (const f of failures) this.log(`warning: shutting down: ${f}`);
  }

  /** Appends; a planned writer crash is recovered here and the same drafts sent again (same keys ⇒ exactly once). */
  private async append(drafts: EventDraft[]): Promise<AppendResult> {
    try {
      return await this.connected().append(drafts);
    } catch (error) {
      if (!(error instanceof WriterUnavailableError)) throw error;
      await this.recoverWriter(error.message);
      return this.connected().append(drafts);
    }
  }

  private async recoverWriter(cause: string): Promise<void> {
    const crash = this.pendingWriterCrash;
    const exit = await Promise.race([this.writer!.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), CHILD_STOP_TIMEOUT_MS))]);
    if (!crash || exit === null || exit.signal !== 'SIGKILL') {
      throw new InstanceError('writer', `lost the writer (${cause}; exit ${exit ? `code ${exit.code} signal ${exit.signal}` : 'still running'}) outside a planned crash; the instance is interrupted — check the writer's log above, then continue with --resume ${this.input.runDir}`);
    }
    this.writerRestarts += 1;
    if (this.writerRestarts > MAX_WRITER_RESTARTS) throw new InstanceError('writer', `more than ${MAX_WRITER_RESTARTS} writer restarts in one instance`);
    this.pendingWriterCrash = null;
    this.client?.close();
    this.log(`ds-writer killed as planned (${crash.intervention_id}); restarting it on the same store`);
    await this.startWriter('open');
    await this.recordRestart(crash);
  }

  // ---- start and resume ---------------------------------------------------------------------

  /** Writes what a fresh or resumed instance needs before its next wake; returns that wake's index. */
  private async prepare(progress: InstanceProgress, mode: 'create' | 'open'): Promise<number> {
    const { plan, scenario } = this.input;
    for (const [key, recorded] of progress.byKey) {
      const match = /^intervention:(.+):(\d+)$/.exec(key);
      if (!match) continue;
      const ids = this.eventIds.get(match[1]!) ?? [];
      ids[Number(match[2])] = recorded.event_id;
      this.eventIds.set(match[1]!, ids);
      this.written.add(match[1]!);
    }
    if (mode === 'open' && progress.lastOccurredAt) await this.clock.advanceTo(maxIso(progress.lastOccurredAt, plan.schedule.start_at));
    if (!progress.byKey.has(CONTROLLER_KEYS.subjectInitialized)) {
      await this.append([subjectInitializedDraft(plan.schedule.start_at, subjectInitializedPayload(scenario.definition, plan.schedule.start_at))]);
    }
    if (mode === 'open') {
      if (progress.openWakeId) {
        const open = this.wakes.find((w) => w.wake_id === progress.openWakeId);
        if (!open) throw new InstanceError('resume', `the store has an open wake ${progress.openWakeId} that is not in plan.json`);
        const started = progress.byKey.get(CONTROLLER_KEYS.wakeStarted(open.wake_id));
        if (!started) throw new InstanceError('resume', `the open wake ${open.wake_id} has no WakeStarted under its key`);
        if (!progress.byKey.has(CONTROLLER_KEYS.ledger(open.wake_id))) await this.recordLedger(open, started.seq);
        await this.append([wakeEndedDraft(open, 'stopped')]);
        this.note(`${open.wake_id} was open when the instance stopped: ended as 'stopped' (it is not repeated)`);
      }
      if (!progress.stopped) {
        await this.append([emergencyStoppedDraft(this.clock.now(), 'controller', 'found on resume: the previous controller ended without recording a stop (killed or crashed)')]);
        this.note('the previous controller ended without recording a stop; recorded one now');
      }
      await this.append([resumedDraft(this.clock.now(), this.input.options.operator, `--resume ${this.input.runDir}`)]);
    }
    const next = this.wakes.findIndex((w) => !progress.byKey.has(CONTROLLER_KEYS.wakeStarted(w.wake_id)));
    if (mode === 'open') this.log(`resuming at ${next === -1 ? 'the end (every wake ran)' : this.wakes[next]!.wake_id} from seq ${progress.head.seq}`);
    return next === -1 ? this.wakes.length : next;
  }

  // ---- one wake -------------------------------------------------------------------------------

  private checkStop(): void {
    if (this.input.options.signal.aborted) throw new StopRequested(this.stopReasonText());
  }

  private async advance(to: string): Promise<void> {
    if (!(await this.clock.advanceTo(maxIso(to, this.clock.now()), this.input.options.signal))) throw new StopRequested(this.stopReasonText());
  }

  private async inject(intervention: Intervention): Promise<void> {
    await this.advance(intervention.inject_at);
    if (intervention.kind === 'external_file_change') {
      const change = applyExternalChange(path.join(this.input.runDir, WORKSPACE_FOLDER), intervention, ownerOf(this.input.isolation));
      if (change.found_hash !== intervention.pre_hash && change.outcome === 'applied') this.note(`${intervention.intervention_id}: ${intervention.path} was not as the scenario made it (the subject had changed it); the planned change was applied over it`);
    }
    const result = await this.append(interventionDrafts(intervention, intervention.inject_at));
    this.eventIds.set(intervention.intervention_id, result.events.map((e) => e.event_id));
    this.written.add(intervention.intervention_id);
  }

  /** The longest one model call may take: every transport attempt its timeout, plus the pre-registered waits between them. */
  private modelCallBudgetMs(): number {
    const retry = this.input.rules.transport_retry;
    return (this.input.manifest.model.call_timeout_ms ?? 0) * retry.max_attempts + retry.backoff_ms.reduce((sum, ms) => sum + ms, 0);
  }

  /** Model calls in a row (across wakes) that ended as `transport`; a call that reached the model resets it. */
  private consecutiveTransportFailures = 0;

  /**
   * The pre-registered pause rule (issue 15 item 5): a server that stays down pauses the instance
   * — recorded as a stop, resumable with --resume — instead of consuming its schedule.
   */
  private applyPauseRule(calls: ModelCallTally): void {
    if (calls.made === 0) return;
    const failed = calls.transport;
    this.consecutiveTransportFailures = failed > 0 && failed === calls.made ? this.consecutiveTransportFailures + failed : 0;
    const limit = this.input.rules.pause_after_consecutive_transport_failures;
    if (this.consecutiveTransportFailures >= limit) {
      throw new StopRequested(`paused: ${this.consecutiveTransportFailures} model call(s) in a row failed as transport (no answer after ${this.input.rules.transport_retry.max_attempts} attempt(s) each), reaching the pre-registered limit of ${limit}; fix the model server and continue with --resume ${this.input.runDir}`, PAUSE_RULE_OPERATOR);
    }
  }

  private async runWake(index: number): Promise<{ readonly calls: ModelCallTally; readonly events: readonly EventEnvelope[] }> {
    const wake = this.wakes[index]!;
    const { interventions } = this.input.plan;
    const due = interventions
      .filter((i) => isWorldIntervention(i) && i.inject_minute <= wake.at_minute && !this.written.has(i.intervention_id))
      .sort((a, b) => a.inject_minute - b.inject_minute || interventions.indexOf(a) - interventions.indexOf(b));
    for (const intervention of due) {
      this.checkStop();
      await this.inject(intervention);
    }
    await this.advance(wake.wake_at);
    const delivered = interventions.filter((i) => isWorldIntervention(i) && i.deliver_wake_id === wake.wake_id);
    for (const intervention of delivered) await this.append([deliveredDraft(wake, intervention, this.idsOf(intervention))]);
    this.checkStop();
    const head = await this.connected().head();
    const started = await this.append([wakeStartedDraft(wake, head.seq)]);
    const startedSeq = started.events[0]!.seq;
    const crash = interventions.find((i) => isCrashIntervention(i) && i.deliver_wake_id === wake.wake_id) ?? null;
    let outcome: WakeOutcome = 'completed';
    let report: WakeReport;
    try {
      if (crash?.kind === 'writer_crash') {
        this.pendingWriterCrash = crash;
        await this.writer!.armCrash(crash.during_append_number);
      }
      report = await this.wakeRuntime(wake, head.seq, crash);
      if (crash) outcome = 'crashed';
    } catch (error) {
      if (error instanceof StopRequested) {
        await this.endStoppedWake(wake, startedSeq);
        throw error;
      }
      if (error instanceof RuntimeWakeError) {
        const lostCall = await this.lostModelCall(wake, startedSeq, error);
        await this.endStoppedWake(wake, startedSeq);
        throw new StopRequested(`the runtime failed in ${wake.wake_id} outside any planned crash (${error.code}: ${error.message})${lostCall}`);
      }
      throw error;
    }
    if (crash?.kind === 'writer_crash') await this.finishWriterCrash(crash);
    // Same fields, same step, every group: the checkpoint as the subject gave it (none when the wake crashed before it).
    if (report.done) await this.append([checkpointDraft(wake, report.done.checkpoint)]);
    const wakeEvents = await this.recordLedger(wake, startedSeq);
    await this.append([wakeEndedDraft(wake, outcome)]);
    const names = delivered.map((i) => i.intervention_id).join(', ');
    this.log(`${wake.wake_id} at ${simulatedHour(wake.at_minute)} (${wake.wake_at})${names ? ` · delivered ${names}` : ''} · ${report.line} · ${outcome}`);
    return { calls: modelCallTallyOf(wakeEvents, wake.wake_id), events: wakeEvents };
  }

  private idsOf(intervention: Intervention): string[] {
    const ids = this.eventIds.get(intervention.intervention_id);
    if (!ids || ids.length !== intervention.events.length) throw new InstanceError('plan', `${intervention.intervention_id} is due for delivery but its events were not all written`);
    return ids;
  }

  /**
   * When the runtime died after starting a model call: whether the store holds the call's outcome.
   * If not, the answer (and what it cost) is lost unrecorded, and the stop's record says so.
   */
  private async lostModelCall(wake: ScheduledWake, startedSeq: number, error: RuntimeWakeError): Promise<string> {
    if (error.modelCallInFlight === null) return '';
    const client = this.connected();
    const head = await client.head();
    const recorded = (await client.readRange(startedSeq + 1, head.seq)).some((e) => e.correlation_id === wake.wake_id && (e.event_type === 'ModelOutputEvent.ModelAnswered' || e.event_type === 'ModelOutputEvent.ModelCallFailed'));
    return recorded
      ? `; its model call ${error.modelCallInFlight} was recorded before it died`
      : `; its model call ${error.modelCallInFlight} was under way and its outcome is not in the store: whatever the model answered (and what it cost) is lost, unrecorded, and the call is not repeated`;
  }

  private async endStoppedWake(wake: ScheduledWake, startedSeq: number): Promise<void> {
    await this.stopRuntime().catch(() => undefined);
    // A planned writer crash still armed must not fire under the stop's own appends: it would be
    // recorded after the wake ended, where no planned crash belongs. The stopped wake is not
    // repeated, so the crash is not carried out; the note says so.
    const crash = this.pendingWriterCrash;
    if (crash !== null && this.writer !== null) {
      this.pendingWriterCrash = null;
      await this.writer.disarmCrash();
      this.note(`${crash.intervention_id}: ${wake.wake_id} ended 'stopped' before the planned writer crash fired; the crash drill was disarmed and the crash is not carried out`);
    }
    await this.recordLedger(wake, startedSeq);
    await this.append([wakeEndedDraft(wake, 'stopped')]);
  }

  /** The ledger of the wake that started at `startedSeq`, counted from the store. */
  private async recordLedger(wake: ScheduledWake, startedSeq: number): Promise<readonly EventEnvelope[]> {
    const client = this.connected();
    const head = await client.head();
    const events = await client.readRange(startedSeq + 1, head.seq);
    await this.append([ledgerDraft(wake, ledgerOf(events))]);
    return events;
  }

  /** Runs the runtime's wake; carries out a planned runtime crash. Returns a line for the screen. */
  private async wakeRuntime(wake: ScheduledWake, visibleToSeq: number, crash: Intervention | null): Promise<WakeReport> {
    const runtime = this.runtime;
    if (!runtime) throw new InstanceError('runtime', 'no runtime process (bug)');
    let killedAt: string | null = null;
    let unsubscribe = (): void => undefined;
    if (crash?.kind === 'runtime_crash') {
      unsubscribe = runtime.onProgress((progress) => {
        if (killedAt !== null || progress.wake_id !== wake.wake_id) return;
        if (progress.execution_intents >= 1 || progress.appends >= crash.fallback_after_runtime_appends) {
          killedAt = `after ${progress.appends} appends, ${progress.execution_intents} execution intents`;
          void runtime.kill('SIGKILL');
        }
      });
    }
    const signal = this.input.options.signal;
    let onAbort: (() => void) | null = null;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = (): void => reject(new StopRequested(this.stopReasonText()));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    // A wake waits for its model call: never time the wake out before the call could (model.call_timeout_ms).
    const wakeTimeoutMs = WAKE_TIMEOUT_MS + this.modelCallBudgetMs();
    const waking = runtime.wake({ wake_id: wake.wake_id, wake_at: wake.wake_at, visible_to_seq: visibleToSeq, budget: wake.budget }, wakeTimeoutMs);
    // Whichever loses the race must not become an unhandled rejection (a stop ends the wake's promise later).
    aborted.catch(() => undefined);
    waking.catch(() => undefined);
    try {
      const done = await Promise.race([waking, aborted]);
      const c = done.counts;
      const line = `${c.model_calls} model call(s), ${c.executions} execution(s), ${c.denials} denial(s), ${c.claims} claim(s)${c.claims_refused ? ` (${c.claims_refused} refused)` : ''}`;
      for (const note of done.notes) this.log(`  ${wake.wake_id}: ${note}`);
      if (crash?.kind !== 'runtime_crash') return { line, done };
      // The kill point was not reached in the wake (no execution intent, too few appends): kill it at the end of its wake, and say so.
      this.note(`${crash.intervention_id}: kill point (first execution intent, or ${crash.fallback_after_runtime_appends} appends) not reached — the runtime made ${done.appends} appends; killed after its wake instead`);
      killedAt = 'after its wake';
      await runtime.kill('SIGKILL');
      await this.restartRuntime(crash);
      return { line: `${line} · runtime SIGKILLed ${killedAt}`, done };
    } catch (error) {
      if (crash?.kind === 'runtime_crash' && killedAt !== null && error instanceof RuntimeWakeError && error.code === 'exited') {
        await this.restartRuntime(crash);
        return { line: `runtime SIGKILLed ${killedAt}`, done: null };
      }
      // The planned writer crash killed the writer under one of the runtime's appends: the runtime's wake fails; the writer is restarted here.
      if (crash?.kind === 'writer_crash' && this.pendingWriterCrash !== null && error instanceof RuntimeWakeError && error.code === 'wake_failed' && error.failure?.code === 'writer_unavailable') {
        await this.recoverWriter(error.message);
        return { line: `writer SIGKILLed during one of the runtime's appends (planned); the runtime's wake ended there`, done: null };
      }
      throw error;
    } finally {
      unsubscribe();
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  private async restartRuntime(crash: Intervention): Promise<void> {
    const exit = await this.runtime!.exited;
    if (exit.signal !== 'SIGKILL') throw new InstanceError('runtime', `the planned runtime crash ended with code ${exit.code} signal ${exit.signal}, not SIGKILL`);
    this.runtime = null;
    await this.recordRestart(crash);
    await this.startRuntime();
  }

  /** The planned crash's own events (ProcessRestarted) and their delivery, in the crash wake. */
  private async recordRestart(crash: Intervention): Promise<void> {
    const wake = this.wakes.find((w) => w.wake_id === crash.deliver_wake_id)!;
    const result = await this.connected().append(interventionDrafts(crash, wake.wake_at));
    this.eventIds.set(crash.intervention_id, result.events.map((e) => e.event_id));
    this.written.add(crash.intervention_id);
    await this.connected().append([deliveredDraft(wake, crash, this.idsOf(crash))]);
  }

  /** A writer crash that the wake's appends did not trigger is triggered on the next one (WakeEnded's first attempt). */
  private async finishWriterCrash(crash: Intervention): Promise<void> {
    if (this.pendingWriterCrash === null) return;
    if (crash.kind !== 'writer_crash') return;
    this.note(`${crash.intervention_id}: the wake made fewer than ${crash.during_append_number} appends; the writer is killed during the wake's last append (WakeEnded) instead`);
    await this.writer!.armCrash(1);
  }

  private async signPeriodic(): Promise<void> {
    const head = await signAndRecordHead(this.connected(), 'periodic', this.signing());
    this.log(`periodic head signed at seq ${head.seq}`);
  }

  /** Emergency stop: recorded, head signed, nothing deleted. */
  private async recordStop(reason: string, operator: string): Promise<void> {
    this.log(`emergency stop: ${reason}`);
    await this.stopRuntime().catch(() => undefined);
    await this.append([emergencyStoppedDraft(this.clock.now(), operator, reason)]);
    const head = await signAndRecordHead(this.connected(), 'periodic', this.signing());
    this.log(`stop recorded; head signed at seq ${head.seq}; resume with: npm run experiment -- --resume ${this.input.runDir}`);
  }
}

/** A wake's model calls as its stored events say (a runtime killed mid-wake never reports its own counts). */
interface ModelCallTally {
  readonly made: number;
  readonly transport: number;
}

function modelCallTallyOf(events: readonly EventEnvelope[], wakeId: string): ModelCallTally {
  const calls = events.filter((e) => e.correlation_id === wakeId && (e.event_type === 'ModelOutputEvent.ModelAnswered' || (e.event_type === 'ModelOutputEvent.ModelCallFailed' && e.payload['failure'] !== 'budget_exhausted')));
  return { made: calls.length, transport: calls.filter((e) => e.payload['failure'] === 'transport').length };
}

/** "h18:05": hours and minutes since hour 0 of the simulated study. */
function simulatedHour(atMinute: number): string {
  return `h${String(Math.floor(atMinute / 60)).padStart(2, '0')}:${String(atMinute % 60).padStart(2, '0')}`;
}

function maxIso(a: string, b: string): string {
  return Date.parse(a) >= Date.parse(b) ? a : b;
}
