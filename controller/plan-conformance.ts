// Does a run follow its plan? Checks, from the run folder's files alone, that
// - plan.json is an ExperimentPlan whose hashes are the hashes of its own schedule and
//   interventions;
// - the signed manifest pins exactly this plan (hashes, seed, scenario, script version) and
//   StoreOpened names that manifest;
// - when prereg.json is there: the manifest pins its hash, its lock copy verifies, and the plan
//   is the one the seed gives (rebuilt from prereg + scenario + seed + start time): a plan
//   re-hashed consistently and re-signed into a manifest is still not the seed's plan;
// - events.db follows the plan the way the controller writes it (the contract below).
//
// The contract (all controller events with actor 'experiment'; the one operator event below):
//   SubjectInitialized at schedule.start_at, key `subject-initialized`; then per wake W, in
//   schedule order:
//   a. the not yet written interventions (not runtime_crash / writer_crash / long_absence) with
//      inject_minute ≤ W.at_minute, by inject_minute then plan order: their planned events, each
//      at inject_at, key `intervention:<id>:<i>`, correlation_id = the intervention id;
//   b. InterventionDelivered {intervention_id, wake_id: W, event_ids} for those delivered at W;
//   c. WakeStarted {wake_id, visible_to_seq = its seq − 1, budget};
//   d. runtime events (not checked here);
//   e. on a crash wake: the crash's planned ProcessRestarted, then its InterventionDelivered;
//   e'. CheckpointRecorded (when the runtime reported one) and BudgetLedgerRecorded (always),
//      each once, keys wake:<id>:checkpoint / wake:<id>:ledger; the ledger's `used` must equal
//      a recount of the wake's own events (design/budget-ledger.ts) and `granted` the plan's;
//   f. WakeEnded {outcome: 'crashed' on a crash wake, else 'completed'}, or 'stopped';
//   ChainHeadSigned only between wakes; SystemEvent.StoreSealed last of a finished store; an
//   emergency stop is WakeEnded{stopped} (if a wake is in progress), EmergencyStopped, and a
//   resume (Resumed) goes on with the next wake not yet started.
// One event is not the controller's but an operator's, written by `npm run repair`
// (controller/operator-resolution.ts) while the controller is stopped: SystemEvent.OperatorResolved
// with actor 'user' (a person's statement, not the apparatus's) and key
// `operator-resolved:<intent_event_id>`, only outside a wake: usually while stopped (after the
// EmergencyStopped of a Ctrl-C, before the Resumed), else between wakes; inside a wake it is a failure. Whether it resolves an unknown outcome is the projector's
// check (npm run replay), not this one.
// Every failure is listed with its file and seq; the checker never stops at the first.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { buildExperimentPlan, ExperimentPlan } from '../design/experiment-plan.js';
import type { Intervention, PlannedEvent } from '../design/intervention-plan.js';
import { checkSignedManifest, type InstanceManifest } from '../design/manifest.js';
import { PREREG_LOCK_PAYLOAD_TYPE, PreregLock, PreRegistration } from '../design/prereg.js';
import { loadScenario, subjectInitializedPayload, type Scenario, type SubjectInitializedPayload } from '../design/scenario.js';
import type { ScheduledWake } from '../design/wake-schedule.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { verifyDsse } from '../schema/dsse.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { EventEnvelope } from '../schema/envelope.js';
import { BudgetLedgerRecorded, CheckpointRecorded, InterventionDelivered, WakeEnded, WakeStarted } from '../schema/events/experiment-events.js';
import { OperatorResolved } from '../schema/events/system-events.js';
import { ledgerOf } from '../design/budget-ledger.js';
import { CONTROLLER_KEYS } from '../design/run-contract.js';
import { hashCanonical } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import { StoreReader, StoreReadError } from '../writer/store-reader.js';
import { findRunFiles, keyFileFor } from '../writer/verify-store.js';

/** Written by the writer as the very last event of a finished store (not in the catalogue yet). */
export const STORE_SEALED_TYPE = 'SystemEvent.StoreSealed';
/** Where `prereg.scenario.id` is looked up: this repository's scenarios, whatever the cwd. */
export const SCENARIO_ROOT = fileURLToPath(new URL('../experiments/scenario/', import.meta.url));

// Bounds on what is read into memory: far above what a real run writes.
const MAX_PLAN_JSON_BYTES = 16 * 1024 * 1024;
const MAX_PREREG_JSON_BYTES = 256 * 1024;
const MAX_SIGNED_FILE_BYTES = 1024 * 1024;
/** Per run, like `npm run verify`: a broken store must not bury the report. */
const MAX_FAILURES_PER_RUN = 1_000;
/** How many wake ids a summary line names before it says "…". */
const MAX_IDS_NAMED = 8;
const MAX_DIFF_DEPTH = 64;
// Same walk limits as writer/verify-store.ts: verify has walked the folder with them already.

/** Categories the runtime appends: the contract leaves them to the runtime (step d). */
const RUNTIME_CATEGORIES = new Set(['ModelOutputEvent', 'ActionEvent', 'MemoryEvent', 'PlanEvent']);
/** Kinds whose events are not written at inject time: the crashes write theirs in their wake, the absence has none. */
const NOT_INJECTED_KINDS = new Set<Intervention['kind']>(['runtime_crash', 'writer_crash', 'long_absence']);
const CRASH_KINDS = new Set<Intervention['kind']>(['runtime_crash', 'writer_crash']);

export const PlanFinding = z.strictObject({
  /** The file concerned, relative to the run folder (or to the verified folder, in checkPlansUnder). */
  file: z.string(),
  seq: z.number().int().min(1).nullable(),
  message: z.string(),
});
export type PlanFinding = z.infer<typeof PlanFinding>;

export const PlanConformanceCounts = z.strictObject({
  events_read: z.number().int().min(0),
  /** Controller events compared with the contract (runtime events and writer refusals are not). */
  controller_events_checked: z.number().int().min(0),
  wakes_planned: z.number().int().min(0),
  wakes_started: z.number().int().min(0),
  wakes_ended: z.number().int().min(0),
  /** Interventions delivered by an InterventionDelivered event (all but the long absence). */
  interventions_planned: z.number().int().min(0),
  interventions_delivered: z.number().int().min(0),
  emergency_stops: z.number().int().min(0),
  sealed: z.boolean(),
  manifest_checked: z.boolean(),
  prereg_checked: z.boolean(),
  /** The plan was rebuilt from prereg + scenario + seed + start time and compared. */
  plan_rebuilt: z.boolean(),
});
export type PlanConformanceCounts = z.infer<typeof PlanConformanceCounts>;

export const PlanConformanceReport = z.strictObject({
  ok: z.boolean(),
  failures: z.array(PlanFinding),
  /** Not failures, but not to pass unseen: an unfinished run, a check that could not apply. */
  notes: z.array(PlanFinding),
  checked: PlanConformanceCounts,
});
export type PlanConformanceReport = z.infer<typeof PlanConformanceReport>;

class Findings {
  readonly failures: PlanFinding[] = [];
  readonly notes: PlanFinding[] = [];
  private failureCount = 0;
  fail(file: string, seq: number | null, message: string): void {
    this.failureCount += 1;
    if (this.failureCount <= MAX_FAILURES_PER_RUN) this.failures.push({ file, seq, message });
  }
  note(file: string, seq: number | null, message: string): void {
    this.notes.push({ file, seq, message });
  }
  /** Says how many failures were not listed, so a long list is never cut silently. */
  finish(): PlanFinding[] {
    if (this.failureCount > MAX_FAILURES_PER_RUN) {
      this.failures.push({ file: RUN_FILES.store, seq: null, message: `${this.failureCount - MAX_FAILURES_PER_RUN} more plan failures were not listed (limit ${MAX_FAILURES_PER_RUN})` });
    }
    return this.failures;
  }
}

// ---------------------------------------------------------------- files

type JsonRead = { readonly ok: true; readonly value: unknown } | { readonly ok: false };

function readJsonFile(runDir: string, name: string, maxBytes: number, out: Findings): JsonRead {
  const file = path.join(runDir, name);
  const size = statSync(file).size;
  if (size > maxBytes) {
    out.fail(name, null, `${name} is ${size} bytes, over the limit of ${maxBytes}`);
    return { ok: false };
  }
  try {
    return { ok: true, value: JSON.parse(readFileSync(file, 'utf8')) as unknown };
  } catch (error) {
    out.fail(name, null, `${name} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
    return { ok: false };
  }
}

/** The dotted path of the first place two JSON values differ, or null when they are equal. */
export function firstDifference(a: unknown, b: unknown, at = '', depth = 0): string | null {
  const here = at === '' ? '(root)' : at;
  if (depth > MAX_DIFF_DEPTH) return canonicalJson(a) === canonicalJson(b) ? null : here;
  if (Array.isArray(a) && Array.isArray(b)) {
    const length = Math.max(a.length, b.length);
    for (let i = 0; i < length; i += 1) {
      if (i >= a.length || i >= b.length) return `${at}[${i}]`;
      const diff = firstDifference(a[i], b[i], `${at}[${i}]`, depth + 1);
      if (diff !== null) return diff;
    }
    return null;
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const key of keys) {
      const child = at === '' ? key : `${at}.${key}`;
      if (!(key in a) || !(key in b)) return child;
      const diff = firstDifference(a[key], b[key], child, depth + 1);
      if (diff !== null) return diff;
    }
    return null;
  }
  return canonicalJson(a) === canonicalJson(b) ? null : here;
}

// ---------------------------------------------------------------- plan, manifest, prereg

function checkPlanHashes(plan: ExperimentPlan, out: Findings): void {
  const scheduleHash = hashCanonical(plan.schedule);
  if (scheduleHash !== plan.schedule_hash) {
    out.fail(RUN_FILES.plan, null, `schedule_hash ${plan.schedule_hash} is not the hash of the schedule in ${RUN_FILES.plan} (${scheduleHash}): the schedule was changed after the plan was hashed`);
  }
  const interventionsHash = hashCanonical(plan.interventions);
  if (interventionsHash !== plan.intervention_plan_hash) {
    out.fail(RUN_FILES.plan, null, `intervention_plan_hash ${plan.intervention_plan_hash} is not the hash of the interventions in ${RUN_FILES.plan} (${interventionsHash}): the interventions were changed after the plan was hashed`);
  }
}

function checkManifest(runDir: string, plan: ExperimentPlan, publicKey: Uint8Array, out: Findings, counts: PlanConformanceCounts): { manifest: InstanceManifest; sha256: string } | null {
  if (!existsSync(path.join(runDir, RUN_FILES.manifest))) {
    out.fail(RUN_FILES.manifest, null, `no ${RUN_FILES.manifest}: nothing signed pins the plan`);
    return null;
  }
  const read = readJsonFile(runDir, RUN_FILES.manifest, MAX_SIGNED_FILE_BYTES, out);
  if (!read.ok) return null;
  const checked = checkSignedManifest(read.value, publicKey);
  if (!checked.ok) {
    out.fail(RUN_FILES.manifest, null, `the signed manifest does not check, so nothing pins the plan: ${checked.reason}`);
    return null;
  }
  counts.manifest_checked = true;
  const m = checked.manifest;
  const pairs: readonly [keyof InstanceManifest, string, string][] = [
    ['wake_schedule_hash', m.wake_schedule_hash, plan.schedule_hash],
    ['intervention_plan_hash', m.intervention_plan_hash, plan.intervention_plan_hash],
    ['random_seed', m.random_seed, plan.seed],
    ['scenario_hash', m.scenario_hash, plan.scenario_hash],
    ['intervention_script_version', m.intervention_script_version, plan.intervention_script_version],
  ];
  const planField: Partial<Record<keyof InstanceManifest, string>> = { wake_schedule_hash: 'schedule_hash', random_seed: 'seed' };
  for (const [field, signed, planned] of pairs) {
    if (signed !== planned) out.fail(RUN_FILES.manifest, null, `the signed manifest's ${field} is ${signed}, ${RUN_FILES.plan} has ${planField[field] ?? field} ${planned}: the run's plan is not the one the manifest pins`);
  }
  return { manifest: m, sha256: checked.sha256 };
}

/** Checks prereg.json and its lock copy; returns the pre-registration when it can be used to rebuild the plan. */
function checkPrereg(runDir: string, manifest: InstanceManifest | null, publicKey: Uint8Array, out: Findings, counts: PlanConformanceCounts): PreRegistration | null {
  const hasPrereg = existsSync(path.join(runDir, RUN_FILES.prereg));
  const hasLock = existsSync(path.join(runDir, RUN_FILES.preregLock));
  if (!hasPrereg) {
    if (hasLock) out.fail(RUN_FILES.preregLock, null, `${RUN_FILES.preregLock} without ${RUN_FILES.prereg}: the locked pre-registration is missing from the run`);
    else out.note(RUN_FILES.prereg, null, `no ${RUN_FILES.prereg}: the plan was not rebuilt from the seed (only its hashes and the manifest were checked)`);
    return null;
  }
  const read = readJsonFile(runDir, RUN_FILES.prereg, MAX_PREREG_JSON_BYTES, out);
  if (!read.ok) return null;
  counts.prereg_checked = true;
  const content = read.value;
  const sha256 = hashCanonical(content);
  if (manifest && manifest.prereg_sha256 !== sha256) {
    out.fail(RUN_FILES.prereg, null, `${RUN_FILES.prereg} hashes to ${sha256}, the signed manifest's prereg_sha256 is ${manifest.prereg_sha256}: the run did not run under this pre-registration`);
  }
  if (!hasLock) out.fail(RUN_FILES.preregLock, null, `no ${RUN_FILES.preregLock}: the pre-registration's lock was not copied into the run`);
  else {
    const lockRead = readJsonFile(runDir, RUN_FILES.preregLock, MAX_SIGNED_FILE_BYTES, out);
    if (lockRead.ok) {
      const verified = verifyDsse(lockRead.value, PREREG_LOCK_PAYLOAD_TYPE, publicKey);
      const lock = verified.ok ? PreregLock.safeParse(verified.body) : null;
      if (!verified.ok) out.fail(RUN_FILES.preregLock, null, `the pre-registration lock does not verify with ${RUN_FILES.publicKey}: ${verified.reason}`);
      else if (!lock?.success) out.fail(RUN_FILES.preregLock, null, `the signed body of ${RUN_FILES.preregLock} is not a pre-registration lock`);
      else if (lock.data.prereg_sha256 !== sha256) {
        out.fail(RUN_FILES.preregLock, null, `the lock signed ${lock.data.prereg_sha256} (for ${lock.data.file}), ${RUN_FILES.prereg} hashes to ${sha256}: the pre-registration changed after it was locked`);
      }
    }
  }
  const parsed = PreRegistration.safeParse(content);
  if (!parsed.success) {
    out.fail(RUN_FILES.prereg, null, `${RUN_FILES.prereg} is not a pre-registration, so the plan cannot be rebuilt: ${z.prettifyError(parsed.error)}`);
    return null;
  }
  return parsed.data;
}

/** Rebuilds the plan from (prereg, scenario, seed, start time) and requires plan.json to be it. Returns the scenario. */
function rebuildPlan(plan: ExperimentPlan, prereg: PreRegistration, scenariosDir: string, out: Findings, counts: PlanConformanceCounts): Scenario | null {
  const scenarioDir = path.join(scenariosDir, prereg.scenario.id);
  if (!existsSync(scenarioDir)) {
    out.fail(RUN_FILES.prereg, null, `the pre-registered scenario ${prereg.scenario.id} is not in ${scenariosDir}: the plan cannot be rebuilt from the seed`);
    return null;
  }
  let scenario: Scenario;
  let rebuilt: ExperimentPlan;
  try {
    scenario = loadScenario(scenarioDir);
    rebuilt = buildExperimentPlan({ prereg, scenario, seed: plan.seed, startAt: plan.schedule.start_at });
  } catch (error) {
    // Typed errors of the scenario and plan builders, and zod errors of their schemas: all say the plan cannot be rebuilt.
    out.fail(RUN_FILES.plan, null, `the plan cannot be rebuilt from ${RUN_FILES.prereg}, scenario ${prereg.scenario.id} and seed ${plan.seed}: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
  counts.plan_rebuilt = true;
  const diff = firstDifference(plan, rebuilt);
  if (diff !== null) {
    out.fail(
      RUN_FILES.plan,
      null,
      `${RUN_FILES.plan} is not the plan seed ${plan.seed} gives (pre-registration ${RUN_FILES.prereg}, scenario ${prereg.scenario.id}, start ${plan.schedule.start_at}): the rebuilt plan differs first at ${diff}`,
    );
  }
  return scenario;
}

// ---------------------------------------------------------------- the store against the plan

type ItemKind = 'subject-initialized' | 'intervention-event' | 'delivered' | 'started' | 'ended';

interface ScriptItem {
  readonly kind: ItemKind;
  /** What identifies the event in the store (see slotOf). */
  readonly slot: string;
  readonly key: string;
  readonly event_type: string;
  readonly occurred_at: string;
  /** What occurred_at must equal, in words. */
  readonly occurred_at_is: string;
  /** null: the contract does not fix it. */
  readonly correlation_id: string | null;
  /** The wake whose steps write it; null for SubjectInitialized. */
  readonly wake_id: string | null;
  /** True for the steps after WakeStarted (crash events, WakeEnded): a stop abandons them. */
  readonly in_wake: boolean;
  readonly intervention_id: string | null;
  readonly index: number | null;
  readonly payload: PlannedEvent['payload'] | null;
  readonly wake: ScheduledWake | null;
  readonly outcome: 'completed' | 'crashed' | null;
}

function describe(item: ScriptItem): string {
  switch (item.kind) {
    case 'subject-initialized':
      return 'SystemEvent.SubjectInitialized';
    case 'intervention-event':
      return `event ${item.index} (${item.event_type}) of intervention ${item.intervention_id}`;
    case 'delivered':
      return `InterventionDelivered of ${item.intervention_id} at ${item.wake_id}`;
    case 'started':
      return `WakeStarted of ${item.wake_id}`;
    case 'ended':
      return `WakeEnded of ${item.wake_id}`;
  }
}

const plannedEventKey = (interventionId: string, index: number): string => `intervention:${interventionId}:${index}`;

/** Every controller event of a finished run, in the order the contract writes them. */
function scriptOf(plan: ExperimentPlan): ScriptItem[] {
  const items: ScriptItem[] = [];
  const base = { correlation_id: null, intervention_id: null, index: null, payload: null, wake: null, outcome: null, in_wake: false } as const;
  items.push({ ...base, kind: 'subject-initialized', slot: 'subject-initialized', key: 'subject-initialized', event_type: 'SystemEvent.SubjectInitialized', occurred_at: plan.schedule.start_at, occurred_at_is: 'schedule.start_at', wake_id: null });
  const injected = plan.interventions.filter((iv) => !NOT_INJECTED_KINDS.has(iv.kind));
  const crashes = plan.interventions.filter((iv) => CRASH_KINDS.has(iv.kind));
  const written = new Set<string>();
  const eventItems = (iv: Intervention, wake: ScheduledWake, occurredAt: string, occurredAtIs: string, inWake: boolean, correlation: string | null): ScriptItem[] =>
    iv.events.map((e, index) => ({
      ...base,
      kind: 'intervention-event' as const,
      slot: plannedEventKey(iv.intervention_id, index),
      key: plannedEventKey(iv.intervention_id, index),
      event_type: e.event_type,
      occurred_at: occurredAt,
      occurred_at_is: occurredAtIs,
      correlation_id: correlation,
      wake_id: wake.wake_id,
      in_wake: inWake,
      intervention_id: iv.intervention_id,
      index,
      payload: e.payload,
    }));
  const delivered = (iv: Intervention, wake: ScheduledWake, inWake: boolean): ScriptItem => ({
    ...base,
    kind: 'delivered',
    slot: `delivered:${wake.wake_id}:${iv.intervention_id}`,
    key: `wake:${wake.wake_id}:delivered:${iv.intervention_id}`,
    event_type: InterventionDelivered.type,
    occurred_at: wake.wake_at,
    occurred_at_is: `${wake.wake_id}'s wake_at`,
    wake_id: wake.wake_id,
    in_wake: inWake,
    intervention_id: iv.intervention_id,
    wake,
  });
  for (const wake of plan.schedule.wakes) {
    // a. Stable sort: ties keep plan order.
    const due = injected.filter((iv) => !written.has(iv.intervention_id) && iv.inject_minute <= wake.at_minute).sort((x, y) => x.inject_minute - y.inject_minute);
    for (const iv of due) {
      written.add(iv.intervention_id);
      items.push(...eventItems(iv, wake, iv.inject_at, `${iv.intervention_id}'s inject_at`, false, iv.intervention_id));
    }
    // b.
    for (const iv of injected) if (iv.deliver_wake_id === wake.wake_id && iv.events.length > 0) items.push(delivered(iv, wake, false));
    // c.
    items.push({ ...base, kind: 'started', slot: `started:${wake.wake_id}`, key: `wake:${wake.wake_id}:started`, event_type: WakeStarted.type, occurred_at: wake.wake_at, occurred_at_is: `${wake.wake_id}'s wake_at`, wake_id: wake.wake_id, wake });
    // e.
    const crashesHere = crashes.filter((iv) => iv.deliver_wake_id === wake.wake_id);
    for (const iv of crashesHere) {
      items.push(...eventItems(iv, wake, wake.wake_at, `${wake.wake_id}'s wake_at (a crash is written in its wake)`, true, null));
      items.push(delivered(iv, wake, true));
    }
    // f.
    items.push({
      ...base,
      kind: 'ended',
      slot: `ended:${wake.wake_id}`,
      key: `wake:${wake.wake_id}:ended`,
      event_type: WakeEnded.type,
      occurred_at: wake.wake_at,
      occurred_at_is: `${wake.wake_id}'s wake_at`,
      wake_id: wake.wake_id,
      in_wake: true,
      wake,
      outcome: crashesHere.length > 0 ? 'crashed' : 'completed',
    });
  }
  return items;
}

const INTERVENTION_KEY = /^intervention:(.+):(\d+)$/;
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The slot an event claims to fill, or null when it is no kind of event the contract writes. */
function slotOf(env: EventEnvelope): string | null {
  const p = env.payload;
  switch (env.event_type) {
    case 'SystemEvent.SubjectInitialized':
      return 'subject-initialized';
    case WakeStarted.type:
      return `started:${str(p.wake_id)}`;
    case WakeEnded.type:
      return `ended:${str(p.wake_id)}`;
    case InterventionDelivered.type:
      return `delivered:${str(p.wake_id)}:${str(p.intervention_id)}`;
    case 'SystemEvent.ProcessRestarted':
      return env.idempotency_key ?? `unplanned:${env.seq}`;
    default:
      if (env.event_type.startsWith('WorldEvent.')) return env.idempotency_key ?? `unplanned:${env.seq}`;
      return null;
  }
}

type ItemStatus = 'pending' | 'matched' | 'skipped' | 'abandoned';

class StoreWalk {
  private readonly items: ScriptItem[];
  private readonly status: ItemStatus[];
  private readonly bySlot = new Map<string, number>();
  /** event ids of the matched intervention events, by slot. */
  private readonly eventIdBySlot = new Map<string, string>();
  private next = 0;
  private lastMatched: ScriptItem | null = null;
  private wakeInProgress: { wake_id: string; seq: number } | null = null;
  private stoppedAt: number | null = null;
  private stoppedWake: { wake_id: string; seq: number } | null = null;
  private sealedAt: number | null = null;
  private readonly wakesStarted = new Set<string>();
  private readonly wakesEnded = new Set<string>();
  private readonly delivered = new Set<string>();
  private readonly file = RUN_FILES.store;
  /** Every event since the wake in progress started: what its ledger must add up to. */
  private wakeEvents: EventEnvelope[] = [];
  private readonly ledgers = new Set<string>();
  private readonly checkpoints = new Set<string>();

  constructor(
    private readonly plan: ExperimentPlan,
    private readonly subjectInitialized: SubjectInitializedPayload | null,
    private readonly out: Findings,
    private readonly counts: PlanConformanceCounts,
  ) {
    this.items = scriptOf(plan);
    this.status = this.items.map(() => 'pending');
    this.items.forEach((item, i) => this.bySlot.set(item.slot, i));
    counts.wakes_planned = plan.schedule.wakes.length;
    counts.interventions_planned = plan.interventions.filter((iv) => iv.kind !== 'long_absence').length;
  }

  private fail(seq: number | null, message: string): void {
    this.out.fail(this.file, seq, message);
  }

  visit(env: EventEnvelope): void {
    if (this.wakeInProgress) this.wakeEvents.push(env);
    const category = env.event_type.split('.')[0] ?? '';
    if (RUNTIME_CATEGORIES.has(category) || env.event_type === 'SystemEvent.StoreOpened' || env.event_type === 'SystemEvent.AppendRejected') return;
    this.counts.controller_events_checked += 1;
    if (this.sealedAt !== null) this.fail(env.seq, `${env.event_type} after ${STORE_SEALED_TYPE} (seq ${this.sealedAt}): the seal is the last event of a store`);
    if (env.event_type === STORE_SEALED_TYPE) return this.seal(env);
    // Before the stopped-wake check: a repair between WakeEnded{stopped} and the EmergencyStopped a
    // resume records (the controller died in between) leaves that pair intact.
    if (env.event_type === OperatorResolved.type) return this.operatorResolved(env);
    if (this.stoppedWake !== null && env.event_type !== 'SystemEvent.EmergencyStopped') {
      this.fail(env.seq, `${this.stoppedWake.wake_id} ended 'stopped' (seq ${this.stoppedWake.seq}) but ${env.event_type} follows, not SystemEvent.EmergencyStopped`);
      this.stoppedWake = null;
    }
    if (env.actor !== 'experiment') this.fail(env.seq, `${env.event_type}: actor ${env.actor}, the controller writes with actor experiment`);
    switch (env.event_type) {
      case 'SystemEvent.ChainHeadSigned':
        if (this.wakeInProgress) this.fail(env.seq, `ChainHeadSigned inside ${this.wakeInProgress.wake_id} (started at seq ${this.wakeInProgress.seq}): heads are signed between wakes`);
        return;
      case 'SystemEvent.EmergencyStopped':
        return this.emergencyStop(env);
      case 'SystemEvent.Resumed':
        if (this.stoppedAt === null) this.fail(env.seq, 'SystemEvent.Resumed without an EmergencyStopped before it');
        this.stoppedAt = null;
        return;
      case CheckpointRecorded.type:
      case BudgetLedgerRecorded.type:
        return this.wakeBookkeeping(env);
      default:
        break;
    }
    const slot = slotOf(env);
    if (slot === null) return this.fail(env.seq, `${env.event_type} is not part of the run contract (the controller writes no such event)`);
    if (this.stoppedAt !== null) this.fail(env.seq, `${env.event_type} written while the run is stopped (EmergencyStopped at seq ${this.stoppedAt}, no Resumed since)`);
    const j = this.bySlot.get(slot);
    if (j === undefined) return this.fail(env.seq, this.unplanned(env));
    const item = this.items[j] as ScriptItem;
    if (j >= this.next) {
      if (env.event_type === WakeEnded.type && env.payload.outcome === 'stopped' && item.wake_id !== null) this.abandonRestOfWake(item.wake_id, false);
      this.skip(this.next, j, env);
      this.next = j + 1;
    } else if (this.status[j] === 'matched') {
      this.fail(env.seq, item.kind === 'started' ? `${item.wake_id} started again: a wake is never repeated` : `${describe(item)} written twice`);
    } else {
      this.fail(env.seq, `${describe(item)} out of order: it comes after ${this.lastMatched ? describe(this.lastMatched) : 'nothing'}`);
    }
    this.match(j, env);
  }

  /** CheckpointRecorded and BudgetLedgerRecorded: once per wake, inside it; a ledger must add up to the wake's own events. */
  private wakeBookkeeping(env: EventEnvelope): void {
    const isLedger = env.event_type === BudgetLedgerRecorded.type;
    const wakeId = str(env.payload.wake_id);
    const what = isLedger ? 'BudgetLedgerRecorded' : 'CheckpointRecorded';
    const at = (message: string): void => this.fail(env.seq, `${what} of ${String(wakeId)}: ${message}`);
    if (this.wakeInProgress === null || this.wakeInProgress.wake_id !== wakeId) return at(this.wakeInProgress ? `written during ${this.wakeInProgress.wake_id}` : 'written outside any wake');
    const wake = this.plan.schedule.wakes.find((w) => w.wake_id === wakeId);
    if (!wake) return at('not a wake of the plan');
    const seen = isLedger ? this.ledgers : this.checkpoints;
    if (seen.has(wakeId)) return at('written twice');
    seen.add(wakeId);
    const key = `wake:${wakeId}:${isLedger ? 'ledger' : 'checkpoint'}`;
    if (env.idempotency_key !== key) at(`idempotency_key ${String(env.idempotency_key)}, expected ${key}`);
    if (Date.parse(env.occurred_at) !== Date.parse(wake.wake_at)) at(`occurred_at ${env.occurred_at}; the wake's is ${wake.wake_at}`);
    if (!isLedger) return;
    const p = BudgetLedgerRecorded.payload.safeParse(env.payload);
    if (!p.success) return at('payload is not a BudgetLedgerRecorded payload');
    if (firstDifference(p.data.granted, wake.budget) !== null) at(`granted ${canonicalJson(p.data.granted)}, the plan's budget is ${canonicalJson(wake.budget)}`);
    const recount = ledgerOf(this.wakeEvents.filter((e) => e.seq < env.seq));
    if (firstDifference(p.data.used, recount) !== null) at(`used ${canonicalJson(p.data.used)}, but the wake's events add up to ${canonicalJson(recount)}`);
  }

  /** An operator's statement (npm run repair): the operator's actor and key, and never inside a wake. */
  private operatorResolved(env: EventEnvelope): void {
    const at = (message: string): void => this.fail(env.seq, `OperatorResolved: ${message}`);
    if (env.actor !== 'user') at(`actor ${env.actor}; an operator's statement is recorded with actor user (npm run repair writes it so)`);
    const key = CONTROLLER_KEYS.operatorResolved(str(env.payload.intent_event_id) ?? '');
    if (env.idempotency_key !== key) at(`idempotency_key ${String(env.idempotency_key)}, expected ${key}`);
    if (this.wakeInProgress) {
      at(`written inside ${this.wakeInProgress.wake_id} (started at seq ${this.wakeInProgress.seq}): an operator resolves an unknown outcome between wakes, with the controller stopped, never inside the subject's wake`);
    }
  }

  private seal(env: EventEnvelope): void {
    if (this.sealedAt !== null) return;
    this.sealedAt = env.seq;
    this.counts.sealed = true;
    if (env.actor !== 'experiment') this.fail(env.seq, `${STORE_SEALED_TYPE}: actor ${env.actor}, expected experiment`);
    if (this.wakeInProgress) this.fail(env.seq, `sealed while ${this.wakeInProgress.wake_id} (started at seq ${this.wakeInProgress.seq}) was in progress`);
  }

  private emergencyStop(env: EventEnvelope): void {
    this.counts.emergency_stops += 1;
    this.stoppedWake = null;
    if (this.stoppedAt !== null) this.fail(env.seq, `a second EmergencyStopped without a Resumed after the one at seq ${this.stoppedAt}`);
    if (this.wakeInProgress) {
      this.fail(env.seq, `emergency stop during ${this.wakeInProgress.wake_id} without WakeEnded{outcome: 'stopped'} first`);
      this.abandonRestOfWake(this.wakeInProgress.wake_id, true);
      this.wakeInProgress = null;
    }
    this.stoppedAt = env.seq;
  }

  /**
   * A stopped wake is not repeated: its steps after WakeStarted (the pending ones from `next`
   * on, which the script keeps together) will never be written. With `andEnd` the WakeEnded
   * goes too (the stop itself was reported), and `next` moves past the wake.
   */
  private abandonRestOfWake(wakeId: string, andEnd: boolean): void {
    let k = this.next;
    for (; k < this.items.length; k += 1) {
      const item = this.items[k] as ScriptItem;
      if (item.wake_id !== wakeId || !item.in_wake) break;
      if (this.status[k] === 'pending' && (andEnd || item.kind !== 'ended')) this.status[k] = 'abandoned';
    }
    if (andEnd) this.next = k;
  }

  /** Items [from, to) were passed over by the event at env: each one is a hole in the run. */
  private skip(from: number, to: number, env: EventEnvelope): void {
    const passed: ScriptItem[] = [];
    for (let k = from; k < to; k += 1) {
      if (this.status[k] !== 'pending') continue;
      this.status[k] = 'skipped';
      passed.push(this.items[k] as ScriptItem);
    }
    if (passed.length === 0) return;
    const gap = summarize(passed);
    const before = `before ${env.event_type} at seq ${env.seq}`;
    if (gap.wakes.length === 1) this.fail(env.seq, `${gap.wakes[0]} was skipped: never started ${before}`);
    else if (gap.wakes.length > 1) this.fail(env.seq, `${gap.wakes.length} wakes were skipped: ${nameIds(gap.wakes)} never started ${before}`);
    for (const iv of gap.interventions) this.fail(env.seq, `intervention ${iv.id}: ${iv.span} never written ${before}`);
    for (const item of gap.others) this.fail(env.seq, `${describe(item)} is missing ${before}`);
  }

  private match(j: number, env: EventEnvelope): void {
    const item = this.items[j] as ScriptItem;
    this.status[j] = 'matched';
    this.lastMatched = item;
    const at = (message: string): void => this.fail(env.seq, `${describe(item)}: ${message}`);
    if (env.event_type !== item.event_type) at(`event_type ${env.event_type}, the plan's is ${item.event_type}`);
    if (env.idempotency_key !== item.key) at(`idempotency_key ${String(env.idempotency_key)}, expected ${item.key}`);
    if (Date.parse(env.occurred_at) !== Date.parse(item.occurred_at)) at(`occurred_at ${env.occurred_at}; the plan says ${item.occurred_at} (${item.occurred_at_is})`);
    if (item.correlation_id !== null && env.correlation_id !== item.correlation_id) at(`correlation_id ${String(env.correlation_id)}, expected ${item.correlation_id}`);
    switch (item.kind) {
      case 'subject-initialized':
        if (this.subjectInitialized !== null) {
          const diff = firstDifference(env.payload, this.subjectInitialized);
          if (diff !== null) at(`payload differs from the scenario's SubjectInitialized at ${diff}`);
        }
        return;
      case 'intervention-event': {
        this.eventIdBySlot.set(item.slot, env.event_id);
        const diff = firstDifference(env.payload, item.payload);
        if (diff !== null) at(`payload differs from the plan's at ${diff}`);
        return;
      }
      case 'delivered':
        return this.matchDelivered(item, env, at);
      case 'started': {
        const wakeId = item.wake_id as string;
        if (this.wakeInProgress) at(`started while ${this.wakeInProgress.wake_id} (started at seq ${this.wakeInProgress.seq}) has not ended`);
        this.wakeInProgress = { wake_id: wakeId, seq: env.seq };
        this.wakeEvents = [];
        this.wakesStarted.add(wakeId);
        const p = WakeStarted.payload.safeParse(env.payload);
        if (!p.success) return at('payload is not a WakeStarted payload');
        if (p.data.visible_to_seq !== env.seq - 1) at(`visible_to_seq ${p.data.visible_to_seq}, expected ${env.seq - 1} (the seq just before it)`);
        const planned = item.wake?.budget;
        if (firstDifference(p.data.budget, planned) !== null) at(`budget ${canonicalJson(p.data.budget)}, the plan's is ${canonicalJson(planned)}`);
        return;
      }
      case 'ended': {
        const wakeId = item.wake_id as string;
        if (this.wakeInProgress?.wake_id !== wakeId) at(this.wakeInProgress ? `the wake in progress is ${this.wakeInProgress.wake_id}` : 'no wake is in progress');
        else if (!this.ledgers.has(wakeId)) at('no BudgetLedgerRecorded before it: every ended wake has its ledger');
        this.wakeInProgress = null;
        this.wakesEnded.add(wakeId);
        const p = WakeEnded.payload.safeParse(env.payload);
        if (!p.success) return at('payload is not a WakeEnded payload');
        if (p.data.outcome === 'stopped') this.stoppedWake = { wake_id: wakeId, seq: env.seq };
        else if (p.data.outcome !== item.outcome) at(`outcome ${p.data.outcome}, expected ${item.outcome}${item.outcome === 'crashed' ? ` (${wakeId} is a planned crash wake)` : ''}`);
        return;
      }
    }
  }

  private matchDelivered(item: ScriptItem, env: EventEnvelope, at: (message: string) => void): void {
    const iv = this.plan.interventions.find((x) => x.intervention_id === item.intervention_id);
    const p = InterventionDelivered.payload.safeParse(env.payload);
    if (!iv || !p.success) return at('payload is not an InterventionDelivered payload');
    this.delivered.add(iv.intervention_id);
    const expected = iv.events.map((_, i) => this.eventIdBySlot.get(plannedEventKey(iv.intervention_id, i)) ?? null);
    const known = expected.filter((id): id is string => id !== null);
    const missing = expected.length - known.length;
    if (canonicalJson(p.data.event_ids) !== canonicalJson(known) || missing > 0) {
      const listed = p.data.event_ids.length <= MAX_IDS_NAMED ? p.data.event_ids.join(', ') : `${p.data.event_ids.slice(0, MAX_IDS_NAMED).join(', ')}, … (${p.data.event_ids.length})`;
      const actual = known.length <= MAX_IDS_NAMED ? known.join(', ') : `${known.slice(0, MAX_IDS_NAMED).join(', ')}, … (${known.length})`;
      at(`lists event ids [${listed}]; its planned events in the store are [${actual}]${missing > 0 ? ` (${missing} of ${expected.length} not written before it)` : ''}`);
    }
  }

  /** Why an event that claims no slot of the script is not the plan's. */
  private unplanned(env: EventEnvelope): string {
    const p = env.payload;
    const wakeIds = new Set(this.plan.schedule.wakes.map((w) => w.wake_id));
    switch (env.event_type) {
      case WakeStarted.type:
      case WakeEnded.type:
        return `${env.event_type} of ${String(p.wake_id)}: not a wake of the plan's schedule`;
      case InterventionDelivered.type: {
        const iv = this.plan.interventions.find((x) => x.intervention_id === p.intervention_id);
        if (!iv) return `InterventionDelivered names ${String(p.intervention_id)}, which is not an intervention of the plan`;
        if (iv.kind === 'long_absence') return `InterventionDelivered of ${iv.intervention_id}: a long absence is the absence of wakes, never delivered by an event`;
        if (!wakeIds.has(String(p.wake_id))) return `InterventionDelivered of ${iv.intervention_id} at ${String(p.wake_id)}, which is not a wake of the plan's schedule`;
        return `InterventionDelivered of ${iv.intervention_id} at ${String(p.wake_id)}; the plan delivers it at ${iv.deliver_wake_id}`;
      }
      default: {
        const m = env.idempotency_key === null ? null : INTERVENTION_KEY.exec(env.idempotency_key);
        if (!m) return `${env.event_type} with idempotency_key ${String(env.idempotency_key)} is not a planned intervention event (expected key intervention:<id>:<index>)`;
        const iv = this.plan.interventions.find((x) => x.intervention_id === m[1]);
        if (!iv) return `${env.event_type} names intervention ${m[1]}, which is not in the plan`;
        return `${env.event_type} is event ${m[2]} of ${iv.intervention_id}, which plans ${iv.events.length} event(s)`;
      }
    }
  }

  finish(lastSeq: number): void {
    this.counts.wakes_started = this.wakesStarted.size;
    this.counts.wakes_ended = this.wakesEnded.size;
    this.counts.interventions_delivered = this.delivered.size;
    const total = this.plan.schedule.wakes.length;
    const pending: ScriptItem[] = [];
    for (let k = 0; k < this.items.length; k += 1) if (this.status[k] === 'pending') pending.push(this.items[k] as ScriptItem);
    for (let k = 0; k < this.items.length; k += 1) {
      const item = this.items[k] as ScriptItem;
      if (this.status[k] === 'abandoned' && item.kind === 'delivered') this.out.note(this.file, null, `${item.intervention_id} was not carried out: its wake ${item.wake_id} was stopped (a stopped wake is not repeated)`);
    }
    if (this.sealedAt !== null) {
      const gap = summarize(pending);
      if (gap.wakes.length > 0) this.fail(this.sealedAt, `sealed store lacks ${gap.wakes.length} of ${total} wakes: ${nameIds(gap.wakes)} never started`);
      for (const iv of gap.interventions) this.fail(this.sealedAt, `sealed store lacks intervention ${iv.id}: ${iv.span} never written`);
      for (const item of gap.others) this.fail(this.sealedAt, `sealed store lacks ${describe(item)}`);
      return;
    }
    if (pending.length > 0 || this.wakesStarted.size < total) {
      this.out.note(this.file, lastSeq > 0 ? lastSeq : null, `unfinished: ${this.wakesStarted.size} of ${total} wakes (no ${STORE_SEALED_TYPE}); the store was checked as a prefix of the plan`);
    } else {
      this.out.note(this.file, lastSeq > 0 ? lastSeq : null, `unfinished: ${this.wakesStarted.size} of ${total} wakes, every planned event written, but no ${STORE_SEALED_TYPE}`);
    }
  }
}

function nameIds(ids: readonly string[]): string {
  return ids.length <= MAX_IDS_NAMED ? ids.join(', ') : `${ids.slice(0, MAX_IDS_NAMED).join(', ')}, … (${ids.length})`;
}

interface Gap {
  /** Wakes whose WakeStarted is missing; their WakeStarted and WakeEnded are not listed again (their deliveries are). */
  readonly wakes: string[];
  /** Interventions with missing events, one entry each rather than one per event. */
  readonly interventions: { id: string; span: string }[];
  readonly others: ScriptItem[];
}

/** Missing script items, grouped: a skipped wake or a 60-event burst is one line, not 60. */
function summarize(items: readonly ScriptItem[]): Gap {
  const wakes = [...new Set(items.filter((i) => i.kind === 'started').map((i) => i.wake_id as string))];
  const skippedWakes = new Set(wakes);
  const byIntervention = new Map<string, ScriptItem[]>();
  const others: ScriptItem[] = [];
  for (const item of items) {
    if (item.kind === 'intervention-event') {
      const list = byIntervention.get(item.intervention_id as string) ?? [];
      list.push(item);
      byIntervention.set(item.intervention_id as string, list);
    } else if (!((item.kind === 'started' || item.kind === 'ended') && item.wake_id !== null && skippedWakes.has(item.wake_id))) others.push(item);
  }
  const interventions = [...byIntervention].map(([id, list]) => {
    const indexes = list.map((i) => i.index as number);
    const span = indexes.length === 1 ? `event ${indexes[0]}` : `events ${indexes[0]}–${indexes.at(-1)}`;
    return { id, span: `${span} (${list[0]?.event_type})` };
  });
  return { wakes, interventions, others };
}

function checkStore(runDir: string, plan: ExperimentPlan, subjectInitialized: SubjectInitializedPayload | null, manifestSha256: string | null, out: Findings, counts: PlanConformanceCounts): void {
  const storeFile = path.join(runDir, RUN_FILES.store);
  if (!existsSync(storeFile)) return out.fail(RUN_FILES.store, null, `no ${RUN_FILES.store}: nothing to check against the plan`);
  let reader: StoreReader;
  try {
    reader = StoreReader.open(storeFile);
  } catch (error) {
    if (!(error instanceof StoreReadError)) throw error;
    return out.fail(RUN_FILES.store, null, `the store cannot be read, so it was not checked against the plan: ${error.message}`);
  }
  try {
    const walk = new StoreWalk(plan, subjectInitialized, out, counts);
    const lastSeq = reader.headSeq();
    for (const row of reader.iterateEvents(0, lastSeq)) {
      counts.events_read += 1;
      let env: EventEnvelope;
      try {
        const parsed = EventEnvelope.safeParse(JSON.parse(row.envelope));
        if (!parsed.success) throw new Error('not an event envelope');
        env = parsed.data;
      } catch {
        // npm run verify names what is wrong with it; here it only cannot be compared.
        out.fail(RUN_FILES.store, row.seq, 'the stored envelope is unreadable, so it was not compared with the plan');
        continue;
      }
      if (row.seq === 1 && env.event_type === 'SystemEvent.StoreOpened' && manifestSha256 !== null && env.payload.manifest_sha256 !== manifestSha256) {
        out.fail(RUN_FILES.store, 1, `StoreOpened names manifest ${String(env.payload.manifest_sha256)}, ${RUN_FILES.manifest} hashes to ${manifestSha256}: the store was not written under this manifest`);
      }
      walk.visit(env);
    }
    walk.finish(lastSeq);
  } catch (error) {
    // A damaged page (writer/store-file-failure.ts) ends the walk: a finding of this run, not a failure of the command.
    if (!(error instanceof StoreReadError)) throw error;
    out.fail(RUN_FILES.store, null, `the store could not be read to its end (${counts.events_read} event(s) read), so it was not checked against the plan: ${error.message}`);
  } finally {
    reader.close();
  }
}

function emptyCounts(): PlanConformanceCounts {
  return {
    events_read: 0,
    controller_events_checked: 0,
    wakes_planned: 0,
    wakes_started: 0,
    wakes_ended: 0,
    interventions_planned: 0,
    interventions_delivered: 0,
    emergency_stops: 0,
    sealed: false,
    manifest_checked: false,
    prereg_checked: false,
    plan_rebuilt: false,
  };
}

export interface PlanConformanceOptions {
  /** The folder holding scenario folders by id; default this repository's experiments/scenario. */
  readonly scenariosDir?: string;
}

/**
 * Checks that the run in `runDir` follows its plan.json (see the file comment), with the
 * controller key `publicKey` for the manifest and the pre-registration lock. Reads only.
 */
export function checkRunFollowsPlan(runDir: string, publicKey: Uint8Array, options: PlanConformanceOptions = {}): PlanConformanceReport {
  const out = new Findings();
  const counts = emptyCounts();
  const report = (): PlanConformanceReport => {
    const failures = out.finish();
    return { ok: failures.length === 0, failures, notes: out.notes, checked: counts };
  };
  if (!existsSync(path.join(runDir, RUN_FILES.plan))) {
    out.fail(RUN_FILES.plan, null, `no ${RUN_FILES.plan} in ${runDir}: there is no plan to check the run against`);
    return report();
  }
  const read = readJsonFile(runDir, RUN_FILES.plan, MAX_PLAN_JSON_BYTES, out);
  if (!read.ok) return report();
  const parsed = ExperimentPlan.safeParse(read.value);
  if (!parsed.success) {
    out.fail(RUN_FILES.plan, null, `${RUN_FILES.plan} is not an ExperimentPlan: ${z.prettifyError(parsed.error)}`);
    return report();
  }
  const plan = parsed.data;
  checkPlanHashes(plan, out);
  const signed = checkManifest(runDir, plan, publicKey, out, counts);
  const prereg = checkPrereg(runDir, signed?.manifest ?? null, publicKey, out, counts);
  const scenario = prereg ? rebuildPlan(plan, prereg, options.scenariosDir ?? SCENARIO_ROOT, out, counts) : null;
  if (!scenario) out.note(RUN_FILES.store, null, 'SubjectInitialized payload not compared: no scenario was loaded (it comes from prereg.json)');
  const subjectInitialized = scenario ? subjectInitializedPayload(scenario.definition, plan.schedule.start_at) : null;
  checkStore(runDir, plan, subjectInitialized, signed?.sha256 ?? null, out, counts);
  return report();
}

// ---------------------------------------------------------------- every run under a folder

export const RunPlanCheck = z.strictObject({
  /** The run folder, relative to the checked folder ('.' for the folder itself). */
  run: z.string(),
  plan: z.enum(['checked', 'absent', 'no-key']),
  checked: PlanConformanceCounts.nullable(),
});
export type RunPlanCheck = z.infer<typeof RunPlanCheck>;

export const PlansReport = z.strictObject({
  runs: z.array(RunPlanCheck),
  /** Files relative to the checked folder. */
  failures: z.array(PlanFinding),
  notes: z.array(PlanFinding),
});
export type PlansReport = z.infer<typeof PlansReport>;

/** Folders under root holding an events.db: npm run verify's own walk. */
export function runFoldersUnder(root: string): string[] {
  return findRunFiles(root).stores.map((store) => path.dirname(store));
}

/** Checks every run under root that has a plan.json; a run without one is named in a note. */
export function checkPlansUnder(root: string, options: PlanConformanceOptions = {}): PlansReport {
  const result: PlansReport = { runs: [], failures: [], notes: [] };
  for (const runDir of runFoldersUnder(root)) {
    const run = path.relative(root, runDir) || '.';
    const rel = (file: string): string => path.relative(root, path.join(runDir, file)) || file;
    if (!existsSync(path.join(runDir, RUN_FILES.plan))) {
      result.runs.push({ run, plan: 'absent', checked: null });
      result.notes.push({ file: rel(RUN_FILES.plan), seq: null, message: `no ${RUN_FILES.plan}: the run's plan was not checked` });
      continue;
    }
    const keyFile = keyFileFor(path.join(runDir, RUN_FILES.store), root);
    let key: Uint8Array | null = null;
    if (keyFile === null) result.failures.push({ file: rel(RUN_FILES.plan), seq: null, message: `no ${RUN_FILES.publicKey} beside the run or above it: the plan's manifest and lock cannot be checked` });
    else {
      try {
        key = parsePublicKeyHex(readFileSync(keyFile, 'utf8'));
      } catch (error) {
        result.failures.push({ file: path.relative(root, keyFile) || RUN_FILES.publicKey, seq: null, message: `the plan was not checked: ${error instanceof Error ? error.message : String(error)}` });
      }
    }
    if (key === null) {
      result.runs.push({ run, plan: 'no-key', checked: null });
      continue;
    }
    const report = checkRunFollowsPlan(runDir, key, options);
    result.runs.push({ run, plan: 'checked', checked: report.checked });
    for (const f of report.failures) result.failures.push({ ...f, file: rel(f.file) });
    for (const n of report.notes) result.notes.push({ ...n, file: rel(n.file) });
  }
  return result;
}
