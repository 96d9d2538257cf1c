// The instance's wakes in schedule order, on the virtual clock (DESIGN §6, §8). What the
// controller writes around each wake is the run contract's script of it (design/run-contract.ts
// wakeScriptOf): a. inject the world interventions due, b. deliver those of this wake,
// c. WakeStarted, d. the runtime's wake (inside a crash drill on a crash wake, crash-drills.ts),
// e'. the checkpoint and the budget ledger, f. WakeEnded with the script's outcome (on a wake without a
// planned crash e' and f are one append: one commit, the same events in the same order). After each
// wake: a signed periodic head every K wakes, the caller's stop order, the pre-registered pause rule.
// In a block (controller/lockstep-block.ts) step d waits for this member's turn, and the end of f
// lets the block's other members go on to the next wake.
//
// A stop (the signal, the pause rule, a caller's order, the runtime failing outside a plan) ends
// the sequence as a value, not an exception: a wake stopped after its WakeStarted is left open,
// and the instance's one ending (instance-ending.ts) ends it 'stopped' (ledger first) and records
// the stop. A stop asked with stopAtWakeEnd lands between wakes instead: the wake under way runs
// to its planned end.
import path from 'node:path';
import { ledgerOf } from '../design/budget-ledger.js';
import { wakeAnswerTimeoutMsOf } from '../design/prereg.js';
import type { Intervention } from '../design/intervention-plan.js';
import { wakeScriptOf, type WakeOutcome, type WakeScript } from '../design/run-contract.js';
import type { ScheduledWake } from '../design/wake-schedule.js';
import type { WakeCostCap, WakeDone } from '../runtime/protocol.js';
import { COST_CAP_STOP_WORDS, CostAccount, raiseCommandOf, requirePricesForCap } from '../design/cost-cap.js';
import { WriterUnavailableError, type WriterClient } from '../writer/client.js';
import { WRITER_LIMITS } from '../writer/protocol.js';
import { RuntimeWakeError } from '../runtime/spawn.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { eventIs, eventIsOneOf } from '../schema/typed-event.js';
import { callWasMade } from '../schema/events/model-output-events.js';
import { describeFailures, failureKindOf, NO_ANSWER_KINDS, noFailures } from '../schema/usable-data.js';
import { checkpointDraft, deliveredDraft, interventionDrafts, ledgerDraft, wakeEndedDraft, wakeStartedDraft } from './controller-events.js';
import type { CrashDrills } from './crash-drills.js';
import { InstanceError } from './instance-error.js';
import type { InstanceInput } from './instance-options.js';
import { NO_BLOCK, type BlockSeat } from './lockstep-block.js';
import { modelCallBudgetMs, type InstanceProcesses } from './instance-processes.js';
import type { HeadSigning } from './run-signatures.js';
import { signAndRecordHead } from './run-signatures.js';
import { signalStop, wakeRuntime, type RuntimeAnswer, type StopOrder } from './runtime-wake.js';
import type { VirtualClock } from './virtual-clock.js';
import { applyExternalChange, WORKSPACE_FOLDER } from './workspace.js';
import type { WrittenInterventions } from './written-interventions.js';

/** Who records a pause of the pre-registered transport rule: the controller itself, not a person. */
const PAUSE_RULE_OPERATOR = 'controller (pre-registered pause rule)';
/** Who records a stop at the pre-registered cost cap. */
const COST_CAP_OPERATOR = 'controller (pre-registered cost cap)';

export interface WakeSequenceContext {
  readonly input: InstanceInput;
  readonly processes: InstanceProcesses;
  readonly drills: CrashDrills;
  readonly written: WrittenInterventions;
  readonly clock: VirtualClock;
  readonly log: (line: string) => void;
  readonly note: (line: string) => void;
  readonly signing: () => HeadSigning;
}

/** How the sequence ended: every wake ran (stop null), or a stop to record. */
export interface SequenceEnd {
  readonly wakesRun: number;
  readonly stop: StopOrder | null;
}

/** One wake: it ran (its model calls and the events it recorded), or it was stopped. */
type WakeRan = { readonly kind: 'ran'; readonly calls: ModelCallTally; readonly events: readonly EventEnvelope[] } | { readonly kind: 'stopped'; readonly stop: StopOrder };

export class WakeSequence {
  private readonly scripts: readonly WakeScript[];
  /** Model calls in a row (across wakes) that got no answer from the server, by kind (NO_ANSWER_KINDS); any other outcome resets them. */
  private consecutiveNoAnswer: Record<NoAnswerKind, number> = { transport: 0, stream_broken: 0 };

  constructor(private readonly ctx: WakeSequenceContext) {
    this.scripts = wakeScriptOf(ctx.input.plan);
  }

  /** This instance's seat in its block; alone, a seat that waits for nobody. */
  private get seat(): BlockSeat {
    return this.ctx.input.options.block ?? NO_BLOCK;
  }

  /** What the instance has spent against its cost cap, counted from the store (design/cost-cap.ts); null: no cap. */
  private costAccount: CostAccount | null = null;

  /** Runs the wakes from index `first` on (bounded by the schedule). */
  async runFrom(first: number): Promise<SequenceEnd> {
    const total = this.scripts.length;
    let wakesRun = 0;
    await this.openCostAccount();
    for (let index = first; index < total; index += 1) {
      // Between two wakes (or before the first of a resume): nothing of the next one is written yet.
      const atWakeEnd = this.ctx.input.options.stopAtWakeEnd;
      if (atWakeEnd?.aborted) return { wakesRun, stop: signalStop(atWakeEnd) };
      const ran = await this.runWake(index);
      if (ran.kind === 'stopped') return { wakesRun, stop: ran.stop };
      wakesRun += 1;
      if ((index + 1) % this.ctx.input.prereg.chain_head_signing_period_wakes === 0) await this.signPeriodic();
      const order = this.ctx.input.options.stopAfterWake?.(ran.events) ?? null;
      if (order !== null) return { wakesRun, stop: order };
      // After the last wake no call is left to hold back: the run is sealed, its held-back call recorded.
      const capped = index + 1 < total ? this.costCapStop(ran.events, this.scripts[index]!.wake.wake_id) : null;
      if (capped !== null) return { wakesRun, stop: capped };
      // After the last wake no schedule is left to protect: the run is sealed, not paused.
      const pause = index + 1 < total ? this.pauseRule(ran.calls) : null;
      if (pause !== null) return { wakesRun, stop: pause };
    }
    return { wakesRun, stop: null };
  }

  /**
   * The spent so far, counted once from the whole store (a resume's included, with any raise its
   * Resumed recorded), then wake by wake from each wake's own events as they are read back. The
   * controller counts rather than the runtime: it holds the pre-registration and the manifest's
   * prices, reads every event the runtime may not see, and the count is the store's, never a
   * process's own account of itself (like the budget ledger).
   */
  private async openCostAccount(): Promise<void> {
    const capUsd = this.ctx.input.rules.cost_cap_usd_per_instance;
    if (capUsd === undefined) return;
    const prices = this.ctx.input.manifest.model.prices;
    requirePricesForCap(capUsd, prices, 'run the instance');
    const account = new CostAccount(capUsd, prices!);
    const client = this.ctx.processes.connected();
    const head = await client.head();
    for (const event of await client.readRange(1, head.seq)) account.visit(event);
    this.costAccount = account;
  }

  /** What the next wake is told of the cap: the cap in force and what was spent. */
  private costCapOfWake(): WakeCostCap | null {
    const standing = this.costAccount?.standing ?? null;
    return standing === null ? null : { cap_nano_usd: standing.cap_nano_usd, spent_nano_usd: standing.spent_nano_usd };
  }

  /**
   * The stop at the cost cap (issue 36 item 4): the wake's events counted into the spent, and when
   * the runtime held its call back (ModelCallFailed cost_cap) the instance stops, recorded and
   * resumable — with a raised cap, since under the same one it would stop again at once.
   */
  private costCapStop(events: readonly EventEnvelope[], wakeId: string): StopOrder | null {
    const account = this.costAccount;
    if (account === null) return null;
    for (const event of events) account.visit(event);
    const held = events.find((e) => e.correlation_id === wakeId && eventIs(e, 'ModelOutputEvent.ModelCallFailed') && e.payload.failure === 'cost_cap');
    if (held === undefined || !eventIs(held, 'ModelOutputEvent.ModelCallFailed')) return null;
    const standing = account.standing;
    return {
      reason: `${COST_CAP_STOP_WORDS}: the model call of ${wakeId} was ${held.payload.detail} (model_calls.cost_cap_usd_per_instance, the same for every group); continue with a raised cap for this instance: ${raiseCommandOf(this.ctx.input.runDir, standing)}`,
      operator: COST_CAP_OPERATOR,
    };
  }

  /** The emergency stop, when the signal asks for one. */
  stopAsked(): StopOrder | null {
    return this.ctx.input.options.signal.aborted ? signalStop(this.ctx.input.options.signal) : null;
  }

  /** The ledger of the wake that started at `startedSeq`, counted from the store; returns the wake's events. */
  async recordLedger(wake: ScheduledWake, startedSeq: number): Promise<readonly EventEnvelope[]> {
    const client = this.ctx.processes.connected();
    const head = await client.head();
    const events = await client.readRange(startedSeq + 1, head.seq);
    await this.ctx.drills.appendThroughWriterCrash([ledgerDraft(wake, ledgerOf(events))]);
    return events;
  }

  /**
   * Steps e' and f of a wake without a planned crash, in one append (one durable commit instead of
   * three, issue 19 item 2): the checkpoint as the subject gave it (none when it reported none),
   * the ledger counted from the store — the runtime's events read back, bounded by the wake, as
   * ever — and WakeEnded. The same events in the same order, committed together. Returns the
   * wake's events (the runtime's, from WakeStarted on; the closing three are not among them).
   */
  private async closePlainWake(wake: ScheduledWake, startedSeq: number, done: WakeDone | null, outcome: WakeOutcome): Promise<readonly EventEnvelope[]> {
    const events = await wakeEventsOf(this.ctx.processes.connected(), startedSeq);
    const closing = [...(done ? [checkpointDraft(wake, done.checkpoint)] : []), ledgerDraft(wake, ledgerOf(events)), wakeEndedDraft(wake, outcome)];
    await this.ctx.drills.appendThroughWriterCrash(closing);
    return events;
  }

  // ---- one wake -------------------------------------------------------------------------------

  private async runWake(index: number): Promise<WakeRan> {
    const script = this.scripts[index]!;
    const { wake } = script;
    const { drills, processes } = this.ctx;
    if (script.crashes.length > 1) throw new InstanceError('plan', `${wake.wake_id} plans ${script.crashes.length} crashes (${script.crashes.map((c) => c.intervention_id).join(', ')}); a wake carries at most one`);
    for (const intervention of this.dueInjections(index)) {
      const stop = this.stopAsked() ?? (await this.inject(intervention));
      if (stop !== null) return { kind: 'stopped', stop };
    }
    const late = await this.advance(wake.wake_at);
    if (late !== null) return { kind: 'stopped', stop: late };
    for (const intervention of script.deliver) await drills.appendThroughWriterCrash([deliveredDraft(wake, intervention, this.ctx.written.idsOf(intervention))]);
    const asked = this.stopAsked();
    if (asked !== null) return { kind: 'stopped', stop: asked };
    const head = await processes.connected().head();
    const started = await drills.appendThroughWriterCrash([wakeStartedDraft(wake, head.seq)]);
    const startedSeq = started.events[0]!.seq;
    const crash = script.crashes[0] ?? null;
    // A wake waits for its model call: never time the wake out before the call could (model.call_timeout_ms).
    const timeoutMs = wakeAnswerTimeoutMsOf(this.ctx.input.prereg) + modelCallBudgetMs(this.ctx.input);
    const wakeTheRuntime = (holdAtEachAppend: boolean): Promise<RuntimeAnswer> =>
      wakeRuntime({ runtime: processes.runtime(), wake, visibleToSeq: head.seq, holdAtEachAppend, stepsShareAppends: crash === null, timeoutMs, costCap: this.costCapOfWake(), signal: this.ctx.input.options.signal, log: this.ctx.log });
    // In a block, the runtime's part waits for this member's turn (controller/lockstep-block.ts).
    const turn = await this.seat.takeTurn(index, wake.wake_id, this.ctx.input.options.signal);
    // A stop asked while waiting: the wake stays open for the instance's one ending to end it.
    if (turn === null) return { kind: 'stopped', stop: signalStop(this.ctx.input.options.signal) };
    let answer: RuntimeAnswer;
    try {
      answer = crash === null ? await wakeTheRuntime(false) : await drills.runCrashWake(crash, wake, wakeTheRuntime);
    } catch (error) {
      turn.release();
      if (!(error instanceof RuntimeWakeError)) throw error;
      const lostCall = await this.lostModelCall(wake, startedSeq, error);
      return { kind: 'stopped', stop: { reason: `the runtime failed in ${wake.wake_id} outside any planned crash (${error.code}: ${error.message})${lostCall}`, operator: null } };
    }
    turn.release();
    if (answer.kind === 'stopped') return answer;
    let wakeEvents: readonly EventEnvelope[];
    if (crash === null) wakeEvents = await this.closePlainWake(wake, startedSeq, answer.done, script.outcome);
    else {
      // A crash wake keeps one append per step: the writer-crash drill is armed to die during the Nth append, so the steps it counts stay as they were.
      await drills.finishWriterCrash(crash);
      // Same fields, same step, every group: the checkpoint as the subject gave it (none when the wake crashed before it).
      if (answer.done) await drills.appendThroughWriterCrash([checkpointDraft(wake, answer.done.checkpoint)]);
      wakeEvents = await this.recordLedger(wake, startedSeq);
      await drills.appendThroughWriterCrash([wakeEndedDraft(wake, script.outcome)]);
    }
    const names = script.deliver.map((i) => i.intervention_id).join(', ');
    this.ctx.log(`${wake.wake_id} at ${simulatedHour(wake.at_minute)} (${wake.wake_at})${names ? ` · delivered ${names}` : ''} · ${answer.line} · ${outcomeWordOf(wakeEvents, wake.wake_id, script.outcome)}`);
    this.seat.wakeEnded(index);
    return { kind: 'ran', calls: modelCallTallyOf(wakeEvents, wake.wake_id), events: wakeEvents };
  }

  /**
   * Step a. of this wake and of every earlier one, less what the store already holds: on a plain
   * run that is this wake's own list; on a resume, what the stopped controller had not written
   * yet. The lists are in inject_minute order one after the other, so their concatenation is too.
   */
  private dueInjections(index: number): Intervention[] {
    return this.scripts.slice(0, index + 1).flatMap((s) => s.inject.filter((i) => !this.ctx.written.has(i.intervention_id)));
  }

  /** The virtual clock moved to `to` (never back); a stop when the signal ends the wait. */
  private async advance(to: string): Promise<StopOrder | null> {
    const { clock, input } = this.ctx;
    return (await clock.advanceTo(maxIso(to, clock.now()), input.options.signal)) ? null : signalStop(input.options.signal);
  }

  private async inject(intervention: Intervention): Promise<StopOrder | null> {
    const stop = await this.advance(intervention.inject_at);
    if (stop !== null) return stop;
    if (intervention.kind === 'external_file_change') {
      // The subject's files are the runtime's (its uid under separate-uids).
      const change = applyExternalChange(path.join(this.ctx.input.runDir, WORKSPACE_FOLDER), intervention, this.ctx.input.isolation.runtime);
      if (change.found_hash !== intervention.pre_hash && change.outcome === 'applied') this.ctx.note(`${intervention.intervention_id}: ${intervention.path} was not as the scenario made it (the subject had changed it); the planned change was applied over it`);
    }
    const result = await this.ctx.drills.appendThroughWriterCrash(interventionDrafts(intervention, intervention.inject_at));
    this.ctx.written.add(intervention, result);
    return null;
  }

  /**
   * The pre-registered pause rule (issue 15 item 5, issue 31 item 7): a server that stays down —
   * or keeps answering errors, or breaks off every answer — pauses the instance (recorded as a
   * stop, resumable with --resume) instead of consuming its schedule. It counts the calls in a row
   * that got no answer from the server: `transport` (every attempt of the retry policy without
   * one: connection failures, 408/409/429/5xx) and `stream_broken` (the answer's stream broke
   * off), and names both counts in the words of the usable-data summary (describeFailures).
   */
  private pauseRule(calls: ModelCallTally): StopOrder | null {
    if (calls.made === 0) return null;
    const { rules, runDir } = this.ctx.input;
    const noAnswer = NO_ANSWER_KINDS.reduce((sum, k) => sum + calls[k], 0);
    if (noAnswer > 0 && noAnswer === calls.made) for (const k of NO_ANSWER_KINDS) this.consecutiveNoAnswer[k] += calls[k];
    else this.consecutiveNoAnswer = { transport: 0, stream_broken: 0 };
    const inARow = NO_ANSWER_KINDS.reduce((sum, k) => sum + this.consecutiveNoAnswer[k], 0);
    const limit = rules.pause_after_consecutive_transport_failures;
    if (inARow < limit) return null;
    const kinds = describeFailures({ ...noFailures(), ...this.consecutiveNoAnswer });
    return {
      reason: `paused: ${inARow} model call(s) in a row got no answer from the server (${kinds}), reaching the pre-registered limit of ${limit} (model_calls.pause_after_consecutive_transport_failures counts transport — no answer after ${rules.transport_retry.max_attempts} attempt(s) each — and stream_broken — the answer's stream broke off); fix the model server and continue with --resume ${runDir}`,
      operator: PAUSE_RULE_OPERATOR,
    };
  }

  /**
   * When the runtime died after starting a model call: whether the store holds the call's outcome.
   * If not, the answer (and what it cost) is lost unrecorded, and the stop's record says so.
   */
  private async lostModelCall(wake: ScheduledWake, startedSeq: number, error: RuntimeWakeError): Promise<string> {
    if (error.modelCallInFlight === null) return '';
    const client = this.ctx.processes.connected();
    const head = await client.head();
    const recorded = (await client.readRange(startedSeq + 1, head.seq)).some((e) => e.correlation_id === wake.wake_id && eventIsOneOf(e, ['ModelOutputEvent.ModelAnswered', 'ModelOutputEvent.ModelCallFailed']));
    return recorded
      ? `; its model call ${error.modelCallInFlight} was recorded before it died`
      : `; its model call ${error.modelCallInFlight} was under way and its outcome is not in the store: whatever the model answered (and what it cost) is lost, unrecorded, and the call is not repeated`;
  }

  private async signPeriodic(): Promise<void> {
    const head = await signAndRecordHead(this.ctx.processes.connected(), 'periodic', this.ctx.signing());
    this.ctx.log(`periodic head signed at seq ${head.seq}`);
  }
}

/**
 * The events after `startedSeq` through the head, as stored: one read when they fit a page (the
 * page carries the head, so no head request before it), the bounded, checked readRange for the rest.
 */
async function wakeEventsOf(client: WriterClient, startedSeq: number): Promise<EventEnvelope[]> {
  const first = await client.read({ from_seq: startedSeq + 1, limit: WRITER_LIMITS.maxReadPage });
  const expected = Math.min(WRITER_LIMITS.maxReadPage, Math.max(0, first.head.seq - startedSeq));
  if (first.events.length !== expected || first.events.some((e, i) => e.seq !== startedSeq + 1 + i)) {
    throw new WriterUnavailableError('protocol', `reading the wake back from seq ${startedSeq + 1}: the writer returned ${first.events.length} events in place of seqs ${startedSeq + 1}..${startedSeq + expected}`);
  }
  if (startedSeq + expected >= first.head.seq) return first.events;
  return [...first.events, ...(await client.readRange(startedSeq + expected + 1, first.head.seq))];
}

type NoAnswerKind = (typeof NO_ANSWER_KINDS)[number];

/** A wake's model calls as its stored events say (a runtime killed mid-wake never reports its own counts): made, and those that got no answer, by kind. */
type ModelCallTally = { readonly made: number } & Readonly<Record<NoAnswerKind, number>>;

function modelCallTallyOf(events: readonly EventEnvelope[], wakeId: string): ModelCallTally {
  const ofWake = events.filter((e) => e.correlation_id === wakeId);
  const calls = ofWake.filter((e) => eventIs(e, 'ModelOutputEvent.ModelAnswered') || (eventIs(e, 'ModelOutputEvent.ModelCallFailed') && callWasMade(e.payload.failure)));
  // The kinds as the usable-data tally names them (schema/usable-data.ts), so the pause line and the summary count alike.
  const ofKind = (kind: NoAnswerKind): number => calls.filter((e) => eventIs(e, 'ModelOutputEvent.ModelCallFailed') && failureKindOf(e.payload.failure) === kind).length;
  return { made: calls.length, transport: ofKind('transport'), stream_broken: ofKind('stream_broken') };
}

/**
 * The wake's outcome as the screen says it: a wake that ran as planned but whose every call ended
 * in an answer cut at its token cap is "cut off" (issue 32 item 6), not "completed" — its
 * WakeEnded still records the planned outcome, the same for every group.
 */
export function outcomeWordOf(events: readonly EventEnvelope[], wakeId: string, outcome: WakeOutcome): string {
  const ofWake = events.filter((e) => e.correlation_id === wakeId);
  const answered = ofWake.some((e) => eventIs(e, 'ModelOutputEvent.ModelAnswered'));
  const failed = ofWake.filter((e) => eventIs(e, 'ModelOutputEvent.ModelCallFailed') && callWasMade(e.payload.failure));
  const lastCut = failed.at(-1)?.payload['failure'] === 'length';
  return outcome === 'completed' && !answered && lastCut ? 'cut off (its answer reached the token cap; recorded completed, as planned)' : outcome;
}

/** "h18:05": hours and minutes since hour 0 of the simulated study. */
function simulatedHour(atMinute: number): string {
  return `h${String(Math.floor(atMinute / 60)).padStart(2, '0')}:${String(atMinute % 60).padStart(2, '0')}`;
}

/** The later of two ISO-8601 times. */
export function maxIso(a: string, b: string): string {
  return Date.parse(a) >= Date.parse(b) ? a : b;
}
