// Why one file: the walk's state (StoreWalk) and its two entries (a store read here, or the events
// a verify of the same folder has just read, writer/verified-events.ts) belong together.
// events.db walked against the run contract (design/run-contract.ts, its header says the order):
// each controller event is matched with the item of planned-writes.ts it fills, in order; a hole,
// a repeat, an event out of order or one the contract never writes is a failure at its seq. The
// runtime's events (step d) are left to the runtime, the writer's own (StoreOpened,
// AppendRejected) to npm run verify. What the verifier holds beyond the script of writes:
// - CheckpointRecorded (when the runtime reported one) and BudgetLedgerRecorded (always), each
//   once inside its wake, keys CONTROLLER_KEYS.checkpoint / .ledger; the ledger's `used` must
//   equal a recount of the wake's own events (design/budget-ledger.ts), `granted` the plan's;
// - ChainHeadSigned only between wakes; SystemEvent.StoreSealed last of a finished store;
// - an emergency stop is WakeEnded{stopped} (if a wake is in progress), then EmergencyStopped;
//   a stopped wake is not repeated, and a resume (Resumed) goes on with the next wake not yet
//   started; nothing of the contract is written while stopped;
// - a store that is not sealed ends recorded: its last EmergencyStopped not resumed, no wake
//   open, a head signed after it (controller/instance-ending.ts). Otherwise a note says the end
//   was not recorded (a controller killed, or one whose writer was gone): an unfinished run is
//   a prefix of the plan, so it is a note, not a failure, and `--resume` records the stop;
// - one event is not the controller's but an operator's, written by `npm run repair`
//   (controller/operator-resolution.ts) while the controller is stopped: OperatorResolved with
//   actor 'user' (a person's statement, not the apparatus's) and key CONTROLLER_KEYS.
//   operatorResolved, only outside a wake: usually while stopped (after the EmergencyStopped of a
//   Ctrl-C, before the Resumed), else between wakes; inside a wake it is a failure. Whether it
//   resolves an unknown outcome is the projector's check (npm run replay), not this one.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ledgerOf } from '../design/budget-ledger.js';
import type { CostAccount } from '../design/cost-cap.js';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import { CONTROLLER_KEYS, isDeliveredByEvent, parseInterventionEventKey } from '../design/run-contract.js';
import type { SubjectInitializedPayload } from '../design/scenario.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { EventEnvelope } from '../schema/envelope.js';
import type { EventCategory } from '../schema/event-definition.js';
import { BudgetLedgerRecorded, CheckpointRecorded, InterventionDelivered, WakeEnded, WakeStarted } from '../schema/events/experiment-events.js';
import { AppendRejected, ChainHeadSigned, EmergencyStopped, OperatorResolved, Resumed, StoreOpened, StoreSealed } from '../schema/events/system-events.js';
import { firstDifference } from '../schema/json-difference.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import { RUN_FILES } from '../schema/run-files.js';
import { StoreReader, StoreReadError } from '../writer/store-reader.js';
import type { Findings, PlanConformanceCounts } from './plan-findings.js';
import { categoryOf, describe, nameIds, scriptOf, slotOf, str, summarize, type ScriptItem } from './planned-writes.js';

/** Categories the runtime appends: the contract leaves them to the runtime (step d). */
const RUNTIME_CATEGORIES: ReadonlySet<EventCategory> = new Set<EventCategory>(['ModelOutputEvent', 'ActionEvent', 'MemoryEvent', 'PlanEvent']);
/** What an intervention event's key looks like, for a message about a key that is none. */
const INTERVENTION_KEY_SHAPE = CONTROLLER_KEYS.interventionEvent('<id>', 0).replace(/0$/, '<index>');

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
  /** A ChainHeadSigned since the last EmergencyStopped: the stop is under a signed head. */
  private headSignedSinceStop = false;
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
    counts.interventions_planned = plan.interventions.filter(isDeliveredByEvent).length;
  }

  private fail(seq: number | null, message: string): void {
    this.out.fail(this.file, seq, message);
  }

  visit(env: EventEnvelope): void {
    if (this.wakeInProgress) this.wakeEvents.push(env);
    const category = categoryOf(env.event_type);
    if ((category !== null && RUNTIME_CATEGORIES.has(category)) || env.event_type === StoreOpened.type || env.event_type === AppendRejected.type) return;
    this.counts.controller_events_checked += 1;
    if (this.sealedAt !== null) this.fail(env.seq, `${env.event_type} after ${StoreSealed.type} (seq ${this.sealedAt}): the seal is the last event of a store`);
    if (env.event_type === StoreSealed.type) return this.seal(env);
    // Before the stopped-wake check: a repair between WakeEnded{stopped} and the EmergencyStopped a
    // resume records (the controller died in between) leaves that pair intact.
    if (env.event_type === OperatorResolved.type) return this.operatorResolved(env);
    if (this.stoppedWake !== null && env.event_type !== EmergencyStopped.type) {
      this.fail(env.seq, `${this.stoppedWake.wake_id} ended 'stopped' (seq ${this.stoppedWake.seq}) but ${env.event_type} follows, not ${EmergencyStopped.type}`);
      this.stoppedWake = null;
    }
    if (env.actor !== 'experiment') this.fail(env.seq, `${env.event_type}: actor ${env.actor}, the controller writes with actor experiment`);
    switch (env.event_type) {
      case ChainHeadSigned.type:
        if (this.wakeInProgress) this.fail(env.seq, `ChainHeadSigned inside ${this.wakeInProgress.wake_id} (started at seq ${this.wakeInProgress.seq}): heads are signed between wakes`);
        this.headSignedSinceStop = this.stoppedAt !== null;
        return;
      case EmergencyStopped.type:
        return this.emergencyStop(env);
      case Resumed.type:
        if (this.stoppedAt === null) this.fail(env.seq, `${Resumed.type} without an EmergencyStopped before it`);
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
    const key = isLedger ? CONTROLLER_KEYS.ledger(wakeId) : CONTROLLER_KEYS.checkpoint(wakeId);
    if (env.idempotency_key !== key) at(`idempotency_key ${String(env.idempotency_key)}, expected ${key}`);
    if (Date.parse(env.occurred_at) !== Date.parse(wake.wake_at)) at(`occurred_at ${env.occurred_at}; the wake's is ${wake.wake_at}`);
    if (!isLedger) return;
    // Read as the current catalogue reads it: a 1.0.0 ledger (before issue 36) is lifted with no cost, as its calls carry none.
    const current = currentPayloadOf(env);
    if (!current.ok || current.event.event_type !== BudgetLedgerRecorded.type) return at(`payload is not a BudgetLedgerRecorded payload${current.ok ? '' : ` (${current.reason})`}`);
    const p = { data: current.event.payload };
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
    if (env.actor !== 'experiment') this.fail(env.seq, `${StoreSealed.type}: actor ${env.actor}, expected experiment`);
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
    this.headSignedSinceStop = false;
  }

  /** Why the end of a store that is not sealed is not recorded (null: it is, or the store is sealed). */
  private unrecordedEnd(): string | null {
    if (this.sealedAt !== null) return null;
    const remedy = '(the controller was killed, or its writer was gone when it ended); npm run experiment -- --resume on this run folder records a stop found on resume';
    if (this.wakeInProgress !== null) return `end not recorded: ${this.wakeInProgress.wake_id} (WakeStarted at seq ${this.wakeInProgress.seq}) has no WakeEnded, and no ${EmergencyStopped.type} follows ${remedy}`;
    if (this.stoppedAt === null) return `end not recorded: no ${EmergencyStopped.type} after the last wake ${remedy}`;
    if (!this.headSignedSinceStop) return `end not recorded in full: the ${EmergencyStopped.type} at seq ${this.stoppedAt} has no ${ChainHeadSigned.type} after it, so no signed head covers the stop ${remedy}`;
    return null;
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
    const expected = iv.events.map((_, i) => this.eventIdBySlot.get(CONTROLLER_KEYS.interventionEvent(iv.intervention_id, i)) ?? null);
    const known = expected.filter((id): id is string => id !== null);
    const missing = expected.length - known.length;
    if (canonicalJson(p.data.event_ids) !== canonicalJson(known) || missing > 0) {
      at(`lists event ids [${nameIds(p.data.event_ids)}]; its planned events in the store are [${nameIds(known)}]${missing > 0 ? ` (${missing} of ${expected.length} not written before it)` : ''}`);
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
        if (!isDeliveredByEvent(iv)) return `InterventionDelivered of ${iv.intervention_id}: a long absence is the absence of wakes, never delivered by an event`;
        if (!wakeIds.has(String(p.wake_id))) return `InterventionDelivered of ${iv.intervention_id} at ${String(p.wake_id)}, which is not a wake of the plan's schedule`;
        return `InterventionDelivered of ${iv.intervention_id} at ${String(p.wake_id)}; the plan delivers it at ${iv.deliver_wake_id}`;
      }
      default: {
        const key = parseInterventionEventKey(env.idempotency_key);
        if (!key) return `${env.event_type} with idempotency_key ${String(env.idempotency_key)} is not a planned intervention event (expected key ${INTERVENTION_KEY_SHAPE})`;
        const iv = this.plan.interventions.find((x) => x.intervention_id === key.interventionId);
        if (!iv) return `${env.event_type} names intervention ${key.interventionId}, which is not in the plan`;
        return `${env.event_type} is event ${key.index} of ${iv.intervention_id}, which plans ${iv.events.length} event(s)`;
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
      this.out.note(this.file, lastSeq > 0 ? lastSeq : null, `unfinished: ${this.wakesStarted.size} of ${total} wakes (no ${StoreSealed.type}); the store was checked as a prefix of the plan`);
    } else {
      this.out.note(this.file, lastSeq > 0 ? lastSeq : null, `unfinished: ${this.wakesStarted.size} of ${total} wakes, every planned event written, but no ${StoreSealed.type}`);
    }
    const unrecorded = this.unrecordedEnd();
    if (unrecorded !== null) this.out.note(this.file, lastSeq > 0 ? lastSeq : null, unrecorded);
  }
}

/**
 * Walks the run's events.db against the plan. `subjectInitialized` is the scenario's payload
 * (null: not compared); `manifestSha256` is what StoreOpened must name (null: not compared).
 */
/**
 * `cost`: the pre-registered cost cap's account (design/cost-cap.ts), fed every event in seq
 * order; what it finds wrong (a made call that took the spent over the cap in force, a wake
 * after a held-back call without a stop) is a failure at that seq. Null: no cap.
 */
export function checkStore(runDir: string, plan: ExperimentPlan, subjectInitialized: SubjectInitializedPayload | null, manifestSha256: string | null, out: Findings, counts: PlanConformanceCounts, verified: readonly EventEnvelope[] | null = null, cost: CostAccount | null = null): void {
  const storeFile = path.join(runDir, RUN_FILES.store);
  if (verified !== null) return walkEvents(verified, plan, subjectInitialized, manifestSha256, out, counts, cost);
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
      visitOne(walk, env, row.seq, manifestSha256, out, cost);
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

/** One envelope of the store, in seq order: StoreOpened held to the manifest, then the walk. */
function visitOne(walk: StoreWalk, env: EventEnvelope, storedSeq: number, manifestSha256: string | null, out: Findings, cost: CostAccount | null): void {
  const overCap = cost?.visit(env) ?? null;
  if (overCap !== null) out.fail(RUN_FILES.store, storedSeq, overCap);
  if (storedSeq === 1 && env.event_type === StoreOpened.type && manifestSha256 !== null && env.payload.manifest_sha256 !== manifestSha256) {
    out.fail(RUN_FILES.store, 1, `StoreOpened names manifest ${String(env.payload.manifest_sha256)}, ${RUN_FILES.manifest} hashes to ${manifestSha256}: the store was not written under this manifest`);
  }
  walk.visit(env);
}

/** The walk over the events a verify of the store just read, seq 1 to the head without a gap (writer/verified-events.ts): nothing read again. */
function walkEvents(events: readonly EventEnvelope[], plan: ExperimentPlan, subjectInitialized: SubjectInitializedPayload | null, manifestSha256: string | null, out: Findings, counts: PlanConformanceCounts, cost: CostAccount | null): void {
  const walk = new StoreWalk(plan, subjectInitialized, out, counts);
  for (const env of events) {
    counts.events_read += 1;
    visitOne(walk, env, env.seq, manifestSha256, out, cost);
  }
  walk.finish(events.length);
}
