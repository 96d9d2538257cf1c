// A run folder written the way the controller writes one (design/run-contract.ts
// states the contract): key, plan.json, prereg.json with a copy of its lock, a signed
// instance manifest, and a store written by a real writer, wake by wake. For the plan
// conformance tests and for the controller's own tests.
//
// Forgeries are options (skip a wake, reorder wakes, deliver at another wake, edit a draft):
// the writer accepts them all, so the store stays hash-valid and only the plan check can
// tell. A finished run is sealed by the writer (SystemEvent.StoreSealed) and its final head
// signed, as the controller does (sealAndSignFinalHead).
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildExperimentPlan, type ExperimentPlan } from '../../design/experiment-plan.js';
import type { Intervention } from '../../design/intervention-plan.js';
import { buildInstanceManifest, GROUP_CAPABILITIES, type InstanceManifest } from '../../design/manifest.js';
import { lockFileOf, lockPrereg, PreRegistration } from '../../design/prereg.js';
import { sealAndSignFinalHead, signAndRecordHead, writeSignedManifest } from '../../controller/run-signatures.js';
import { loadScenario, runScenarioText, subjectInitializedPayload, type Scenario } from '../../design/scenario.js';
import type { ScheduledWake } from '../../design/wake-schedule.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { generateKeyPair, type Ed25519KeyPair } from '../../schema/ed25519-keys.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { computeEventHash, computePayloadHash, eventIdFor } from '../../schema/envelope-hash.js';
import { schemaVersionOf, type EventType } from '../../schema/event-catalog.js';
import { hashText, type HashString } from '../../schema/hash.js';
import { writePublicKey } from '../../schema/public-key-file.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { WriterClient } from '../../writer/client.js';
import type { EventDraft } from '../../writer/protocol.js';
import { newSocketPath, newToken, spawnWriter, type WriterProcess } from '../../writer/spawn.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const PREREG_FILE = path.join(REPO, 'experiments/prereg/default.json');
export const SCENARIO_DIR = path.join(REPO, 'experiments/scenario/research-workspace-72h');
export const PLAN_RUN_SEED = '2026072001';
export const PLAN_RUN_START_AT = '2026-07-20T08:00:00.000Z';
export const PLAN_RUN_EXPERIMENT_ID = 'exp-20260720-001';
export const PLAN_RUN_SUBJECT_ID = 'subject-001';
const NOT_INJECTED_KINDS = new Set<Intervention['kind']>(['runtime_crash', 'writer_crash', 'long_absence']);
const CRASH_KINDS = new Set<Intervention['kind']>(['runtime_crash', 'writer_crash']);

export interface PlanInputs {
  readonly prereg: PreRegistration;
  readonly preregText: string;
  readonly scenario: Scenario;
  readonly plan: ExperimentPlan;
}

/** The default pre-registration and scenario, and the plan of `seed` from `startAt`. */
export function planInputs(seed = PLAN_RUN_SEED, startAt = PLAN_RUN_START_AT): PlanInputs {
  const preregText = readFileSync(PREREG_FILE, 'utf8');
  const prereg = PreRegistration.parse(JSON.parse(preregText));
  const scenario = loadScenario(SCENARIO_DIR);
  return { prereg, preregText, scenario, plan: buildExperimentPlan({ prereg, scenario, seed, startAt }) };
}

export function instanceManifestFor(inputs: PlanInputs, plan: ExperimentPlan = inputs.plan): InstanceManifest {
  return buildInstanceManifest({
    experimentId: PLAN_RUN_EXPERIMENT_ID,
    groupBlindId: 'G-7F3A',
    capabilities: GROUP_CAPABILITIES.C,
    replicate: 1,
    plan,
    prereg: inputs.prereg,
    retrievalPolicy: inputs.prereg.retrieval_policy,
    model: { adapter: 'openai', model_id: 'test-model', build: null, params: { temperature: 0, top_p: 1, seed: 7, max_tokens: 1024 }, call_timeout_ms: 60000 },
    isolation: { mode: 'same-uid', reason: 'test run, not started as root' },
    startedAt: '2026-07-20T08:00:01.000Z',
    scenarioSha256: hashText(runScenarioText(inputs.scenario)),
  });
}

/** The pre-registration's lock as the controller copies it: locked under its own name, copied in as prereg.lock.dsse.json. */
function copyLockInto(runDir: string, preregText: string, keys: Ed25519KeyPair): void {
  const scratch = mkdtempSync(path.join(tmpdir(), 'ds-prereg-'));
  try {
    const original = path.join(scratch, path.basename(PREREG_FILE));
    writeFileSync(original, preregText);
    const locked = lockPrereg(original, keys, '2026-07-19T12:00:00.000Z');
    if (!locked.ok) throw new Error(`cannot lock the test pre-registration: ${locked.message}`);
    copyFileSync(lockFileOf(original), path.join(runDir, RUN_FILES.preregLock));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface PreparedRun {
  readonly dir: string;
  readonly keys: Ed25519KeyPair;
  readonly inputs: PlanInputs;
  readonly manifest: InstanceManifest;
  readonly manifestSha256: HashString;
}

/** Writes controller.pub, plan.json, prereg.json and its lock copy, scenario.json, and the signed manifest; no store yet. */
export function prepareRunFolder(dir: string, inputs: PlanInputs, keys: Ed25519KeyPair = generateKeyPair()): PreparedRun {
  writePublicKey(dir, keys);
  writeFileSync(path.join(dir, RUN_FILES.plan), JSON.stringify(inputs.plan, null, 2));
  writeFileSync(path.join(dir, RUN_FILES.prereg), inputs.preregText);
  writeFileSync(path.join(dir, RUN_FILES.scenario), runScenarioText(inputs.scenario));
  copyLockInto(dir, inputs.preregText, keys);
  const manifest = instanceManifestFor(inputs);
  const manifestSha256 = writeSignedManifest(dir, manifest, keys);
  return { dir, keys, inputs, manifest, manifestSha256 };
}

function controllerDraft(type: EventType, occurredAt: string, key: string | null, correlation: string | null, payload: Record<string, unknown>): EventDraft {
  return { event_type: type, schema_version: schemaVersionOf(type), occurred_at: occurredAt, actor: 'experiment', causation_id: null, correlation_id: correlation, idempotency_key: key, payload };
}

export interface FollowOptions {
  /** Stop after this many wakes: an unfinished run. */
  readonly wakeLimit?: number;
  /** Forgery: run the wakes in this order instead of the schedule's. */
  readonly wakeOrder?: readonly string[];
  /** Forgery: leave these wakes out. */
  readonly skipWakes?: readonly string[];
  /** Forgery: deliver an intervention (by id) at another wake than its deliver_wake_id. */
  readonly deliverAt?: Readonly<Record<string, string>>;
  /** An emergency stop right after this wake's WakeStarted, then a resume with the next wake. */
  readonly stopDuringWake?: string;
  /** Runtime events (journal entries) per wake, which the plan check ignores. Default 1. */
  readonly runtimeEventsPerWake?: number;
  /** Sign a periodic head after every K-th wake; default the pre-registration's period. */
  readonly headEveryWakes?: number;
  /** Forgery: change any controller draft before it is appended; null leaves it out. */
  readonly edit?: (draft: EventDraft) => EventDraft | null;
}

/** Writes the controller's events of one run, step by step, following the plan (or, with options, not). */
export class PlanFollower {
  private readonly written = new Set<string>();
  private readonly eventIds = new Map<string, string[]>();
  private wakesRun = 0;

  constructor(
    private readonly run: PreparedRun,
    private readonly experiment: WriterClient,
    private readonly runtime: WriterClient,
    private readonly options: FollowOptions = {},
  ) {}

  private get plan(): ExperimentPlan {
    return this.run.inputs.plan;
  }

  /** Appends one controller draft (after the edit hook); null when the hook left it out. */
  private async append(draft: EventDraft): Promise<{ seq: number; event_id: string } | null> {
    const edited = this.options.edit ? this.options.edit(draft) : draft;
    if (edited === null) return null;
    const result = await this.experiment.append([edited]);
    const written = result.events[0];
    if (!written) throw new Error('the writer answered an append of one event with none');
    return written;
  }

  async initialize(): Promise<void> {
    const payload = subjectInitializedPayload(this.run.inputs.scenario.definition, this.plan.schedule.start_at);
    await this.append(controllerDraft('SystemEvent.SubjectInitialized', this.plan.schedule.start_at, 'subject-initialized', null, payload));
  }

  private deliveryWakeOf(iv: Intervention): string {
    return this.options.deliverAt?.[iv.intervention_id] ?? iv.deliver_wake_id;
  }

  /** a. The injected interventions due by this wake, not written yet. */
  async writeDue(wake: ScheduledWake): Promise<void> {
    const due = this.plan.interventions.filter((iv) => !NOT_INJECTED_KINDS.has(iv.kind) && !this.written.has(iv.intervention_id) && iv.inject_minute <= wake.at_minute).sort((a, b) => a.inject_minute - b.inject_minute);
    for (const iv of due) {
      this.written.add(iv.intervention_id);
      const ids: string[] = [];
      for (const [index, event] of iv.events.entries()) {
        const written = await this.append(controllerDraft(event.event_type, iv.inject_at, `intervention:${iv.intervention_id}:${index}`, iv.intervention_id, event.payload));
        if (written) ids.push(written.event_id);
      }
      this.eventIds.set(iv.intervention_id, ids);
    }
  }

  private async delivered(iv: Intervention, wake: ScheduledWake): Promise<void> {
    const ids = this.eventIds.get(iv.intervention_id) ?? [];
    await this.append(controllerDraft('ExperimentEvent.InterventionDelivered', wake.wake_at, `wake:${wake.wake_id}:delivered:${iv.intervention_id}`, iv.intervention_id, { intervention_id: iv.intervention_id, wake_id: wake.wake_id, event_ids: ids }));
  }

  /** b. */
  async deliver(wake: ScheduledWake): Promise<void> {
    for (const iv of this.plan.interventions) {
      if (NOT_INJECTED_KINDS.has(iv.kind) || this.deliveryWakeOf(iv) !== wake.wake_id || !this.eventIds.has(iv.intervention_id)) continue;
      await this.delivered(iv, wake);
    }
  }

  /** c. */
  async start(wake: ScheduledWake): Promise<void> {
    const head = await this.experiment.head();
    await this.append(controllerDraft('ExperimentEvent.WakeStarted', wake.wake_at, `wake:${wake.wake_id}:started`, wake.wake_id, { wake_id: wake.wake_id, visible_to_seq: head.seq, budget: wake.budget }));
  }

  /** d. What the runtime writes; not part of the contract. */
  async runtimeWork(wake: ScheduledWake, count: number): Promise<void> {
    for (let i = 0; i < count; i += 1) {
      await this.runtime.append([
        {
          event_type: 'MemoryEvent.JournalEntryWritten',
          schema_version: schemaVersionOf('MemoryEvent.JournalEntryWritten'),
          occurred_at: wake.wake_at,
          actor: 'runtime',
          causation_id: null,
          correlation_id: wake.wake_id,
          idempotency_key: null,
          payload: { proposal_id: `proposal-${wake.wake_id}-${i}`, entry_id: `entry-${wake.wake_id}-${i}`, text: `notes of ${wake.wake_id}` },
        },
      ]);
    }
  }

  /** e. Returns whether the wake was a crash wake. */
  async crash(wake: ScheduledWake): Promise<boolean> {
    const crashes = this.plan.interventions.filter((iv) => CRASH_KINDS.has(iv.kind) && this.deliveryWakeOf(iv) === wake.wake_id);
    for (const iv of crashes) {
      const ids: string[] = [];
      for (const [index, event] of iv.events.entries()) {
        const written = await this.append(controllerDraft(event.event_type, wake.wake_at, `intervention:${iv.intervention_id}:${index}`, iv.intervention_id, event.payload));
        if (written) ids.push(written.event_id);
      }
      this.eventIds.set(iv.intervention_id, ids);
      await this.delivered(iv, wake);
    }
    return crashes.length > 0;
  }

  /** f. */
  async end(wake: ScheduledWake, outcome: 'completed' | 'crashed' | 'stopped'): Promise<void> {
    // e'. The ledger the controller counts from the store: this fake runtime makes no model or tool calls.
    await this.append(controllerDraft('ExperimentEvent.BudgetLedgerRecorded', wake.wake_at, `wake:${wake.wake_id}:ledger`, wake.wake_id, { wake_id: wake.wake_id, granted: { ...wake.budget }, used: { model_calls: 0, tokens: 0, tool_calls: 0, retries: 0, cost_nano_usd: null } }));
    await this.append(controllerDraft('ExperimentEvent.WakeEnded', wake.wake_at, `wake:${wake.wake_id}:ended`, wake.wake_id, { wake_id: wake.wake_id, outcome }));
  }

  async signPeriodicHead(occurredAt: string): Promise<void> {
    await signAndRecordHead(this.experiment, 'periodic', { runDir: this.run.dir, keys: this.run.keys, experimentId: PLAN_RUN_EXPERIMENT_ID, occurredAt, now: () => new Date().toISOString() });
  }

  /** Stops and resumes carry no idempotency key, as the controller writes them (each is its own act). */
  async emergencyStop(occurredAt: string): Promise<void> {
    await this.append(controllerDraft('SystemEvent.EmergencyStopped', occurredAt, null, null, { operator: 'test operator', reason: 'a test of the stop' }));
    await this.signPeriodicHead(occurredAt);
  }

  async resume(occurredAt: string): Promise<void> {
    await this.append(controllerDraft('SystemEvent.Resumed', occurredAt, null, null, { operator: 'test operator', reason: 'the test goes on', cost_cap_raised_to_usd: null }));
  }

  /** Some of a wake's first steps (a, b, c), for runs that leave a wake half done. */
  async runWakeSteps(wake: ScheduledWake, steps: readonly ('due' | 'deliver' | 'start')[]): Promise<void> {
    if (steps.includes('due')) await this.writeDue(wake);
    if (steps.includes('deliver')) await this.deliver(wake);
    if (steps.includes('start')) await this.start(wake);
  }

  async runWake(wake: ScheduledWake): Promise<void> {
    await this.writeDue(wake);
    await this.deliver(wake);
    await this.start(wake);
    if (this.options.stopDuringWake === wake.wake_id) {
      await this.end(wake, 'stopped');
      await this.emergencyStop(wake.wake_at);
      await this.resume(wake.wake_at);
      return;
    }
    await this.runtimeWork(wake, this.options.runtimeEventsPerWake ?? 1);
    const crashed = await this.crash(wake);
    await this.end(wake, crashed ? 'crashed' : 'completed');
    this.wakesRun += 1;
    const period = this.options.headEveryWakes ?? this.run.inputs.prereg.chain_head_signing_period_wakes;
    if (this.wakesRun % period === 0) await this.signPeriodicHead(wake.wake_at);
  }

  /** The wakes to run, in order, after the forgery options. */
  wakes(): ScheduledWake[] {
    const byId = new Map(this.plan.schedule.wakes.map((w) => [w.wake_id, w]));
    const order = this.options.wakeOrder ?? this.plan.schedule.wakes.map((w) => w.wake_id);
    const skipped = new Set(this.options.skipWakes ?? []);
    const wakes = order.filter((id) => !skipped.has(id)).map((id) => {
      const wake = byId.get(id);
      if (!wake) throw new Error(`no ${id} in the schedule`);
      return wake;
    });
    return wakes.slice(0, this.options.wakeLimit ?? wakes.length);
  }

  async followPlan(): Promise<void> {
    await this.initialize();
    for (const wake of this.wakes()) await this.runWake(wake);
  }
}

export interface PlanFollowingRun extends PreparedRun {
  readonly dbPath: string;
  /** The last seq of the store, seal included. */
  readonly lastSeq: number;
  cleanup(): void;
}

export interface WriteRunOptions extends FollowOptions {
  readonly dir?: string;
  readonly inputs?: PlanInputs;
  /** 'sealed' (default): the writer seals the store and the final head is signed; 'open': an unfinished run. */
  readonly finish?: 'open' | 'sealed';
  /** Called with the follower after the plan was followed, before the writer stops: append more. */
  readonly after?: (follower: PlanFollower, experiment: WriterClient) => Promise<void>;
}

async function startWriter(run: PreparedRun): Promise<{ writer: WriterProcess; experiment: WriterClient; runtime: WriterClient; socketDir: string }> {
  const tokens = { runtime: newToken(), experiment: newToken() };
  const socketPath = newSocketPath();
  const writer = await spawnWriter({
    db_path: path.join(run.dir, RUN_FILES.store),
    socket_path: socketPath,
    mode: 'create',
    subject_id: PLAN_RUN_SUBJECT_ID,
    experiment_id: PLAN_RUN_EXPERIMENT_ID,
    manifest_sha256: run.manifestSha256,
    tokens,
    projection: 'event-counts',
    socket_mode: 0o600,
    snapshot_every: 1000,
  });
  const experiment = await WriterClient.connect(socketPath, 'experiment', tokens.experiment);
  const runtime = await WriterClient.connect(socketPath, 'runtime', tokens.runtime);
  return { writer, experiment, runtime, socketDir: path.dirname(socketPath) };
}

/** A whole run folder following the plan (by default sealed, as a finished run is). */
export async function writePlanFollowingRun(options: WriteRunOptions = {}): Promise<PlanFollowingRun> {
  const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), 'ds-plan-run-'));
  const run = prepareRunFolder(dir, options.inputs ?? planInputs());
  const { writer, experiment, runtime, socketDir } = await startWriter(run);
  try {
    const follower = new PlanFollower(run, experiment, runtime, options);
    await follower.followPlan();
    if (options.after) await options.after(follower, experiment);
    if ((options.finish ?? 'sealed') === 'sealed') {
      const last = run.inputs.plan.schedule.wakes.at(-1);
      const now = (): string => new Date().toISOString();
      await sealAndSignFinalHead(experiment, { runDir: dir, keys: run.keys, experimentId: PLAN_RUN_EXPERIMENT_ID, occurredAt: last?.wake_at ?? run.inputs.plan.schedule.start_at, now }, 'every scheduled wake ran');
    }
  } finally {
    experiment.close();
    runtime.close();
    await writer.stop();
    rmSync(socketDir, { recursive: true, force: true });
  }
  const dbPath = path.join(dir, RUN_FILES.store);
  return { ...run, dbPath, lastSeq: lastEnvelope(dbPath).seq, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function lastEnvelope(dbPath: string): EventEnvelope {
  const db = new Database(dbPath, { readonly: true });
  try {
    const row = db.prepare('SELECT envelope FROM events ORDER BY seq DESC LIMIT 1').get() as { envelope: string };
    return JSON.parse(row.envelope) as EventEnvelope;
  } finally {
    db.close();
  }
}

/**
 * Appends an event to a stopped store directly, hash-chained like the writer would, with the
 * append-only and after-seal triggers dropped as a tamperer would: for forgeries the writer
 * refuses (e.g. an event after StoreSealed). Returns its seq.
 */
export function appendDirectly(dir: string, draft: Pick<EventEnvelope, 'event_type' | 'occurred_at' | 'actor' | 'correlation_id' | 'idempotency_key' | 'payload'>): number {
  const dbPath = path.join(dir, RUN_FILES.store);
  const previous = lastEnvelope(dbPath);
  const seq = previous.seq + 1;
  const unhashed: Omit<EventEnvelope, 'event_hash'> = {
    ...draft,
    event_id: eventIdFor(previous.subject_id, seq),
    subject_id: previous.subject_id,
    seq,
    schema_version: '1.0.0',
    recorded_at: new Date().toISOString(),
    causation_id: null,
    previous_event_hash: previous.event_hash,
    payload_hash: computePayloadHash(draft.payload),
  };
  const envelope: EventEnvelope = { ...unhashed, event_hash: computeEventHash({ ...unhashed, event_hash: '' }) };
  const db = new Database(dbPath);
  try {
    for (const row of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'").all() as { name: string }[]) db.exec(`DROP TRIGGER "${row.name}"`);
    db.prepare('INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, ?, ?, ?)').run(seq, envelope.event_id, envelope.event_type, envelope.idempotency_key, canonicalJson(envelope));
    db.prepare('UPDATE projection SET last_applied_event_seq = ?').run(seq);
  } finally {
    db.close();
  }
  return seq;
}
