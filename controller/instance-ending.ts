// How an instance ends short of its seal (DESIGN §8; issue 31 item 4): the one path every end
// takes once the writer serves the instance. A stop order (Ctrl-C, the pause rule, a runtime dead
// outside a planned crash, a caller's order) and an error escaping the run alike: the runtime is
// stopped, the store read back (instance-progress.ts: it, not this process, says where the
// instance stands), a wake it holds open ended 'stopped' (its ledger first; never repeated),
// SystemEvent.EmergencyStopped {operator, reason} appended, and a periodic head signed — so
// `--resume DIR` finds a stop with its reason, never a controller that died unrecorded.
//
// What the command then ends with:
//   a stop order                      → 'stopped' (exit 3), the stop order's reason
//   the model's check refused, at a
//     runtime (re)start inside the
//     wakes (a planned runtime crash) → 'stopped' (exit 3), like the pause rule: the reason says
//                                       where and after how many wakes; resumable
//   the model's check refused at the
//     start (before this run's first
//     wake)                           → the refusal thrown (InstanceError model, exit 1), the stop
//                                       recorded; "Nothing ran" only when no wake ever ran
//   the disk full                     → InstanceError store_full (the stop rarely fits)
//   a writer that stopped answering   → that error, after one try to record
//   anything else                     → that error (its own words), the stop recorded
// A stop that cannot be recorded (the writer gone, the disk full, the store sealed) is said on
// screen with why; the resume records it then ("found on resume").
import { CONTROLLER_KEYS, type CrashIntervention } from '../design/run-contract.js';
import type { ScheduledWake } from '../design/wake-schedule.js';
import { RuntimeWakeError } from '../runtime/spawn.js';
import { WriterUnavailableError } from '../writer/client.js';
import { WriterError } from '../writer/protocol.js';
import { emergencyStoppedDraft, wakeEndedDraft } from './controller-events.js';
import type { CrashDrills } from './crash-drills.js';
import { InstanceError, WriterUnansweredError } from './instance-error.js';
import type { InstanceInput } from './instance-options.js';
import { pinnedModelAdvice, type InstanceProcesses } from './instance-processes.js';
import { readProgress, type InstanceProgress } from './instance-progress.js';
import { signAndRecordHead, type HeadSigning } from './run-signatures.js';
import type { StopOrder } from './runtime-wake.js';
import type { VirtualClock } from './virtual-clock.js';
import type { WakeSequence } from './wake-sequence.js';

/** Who records a stop caused by the model's check (at the start, or at a runtime's restart). */
const PREFLIGHT_OPERATOR = 'controller (model preflight)';
/** Who records (when it still fits) the stop of an instance whose disk filled up. */
const STORE_FULL_OPERATOR = 'controller (disk full)';
/** Who records the stop of an instance a failure ended (the writer stalled, a bug, a lost child). */
const FAILURE_OPERATOR = 'controller';
/** An error's words kept in a stop's reason (EmergencyStopped.reason holds 16 KiB); the screen has them whole. */
const ERROR_WORDS_MAX_CHARS = 4_000;

/** Where the run was when it ended: starting (prepare, the runtime's start), in its wakes, or sealing. */
export type RunPhase = 'start' | 'wakes' | 'seal';

/** Where the store stood when the end was recorded: what a stop's words need. */
export interface EndFacts {
  /** Wakes with a WakeStarted (the open one included). */
  readonly wakesStarted: number;
  readonly wakesTotal: number;
  /** The wake the store held open (ended 'stopped' by this end). */
  readonly openWake: ScheduledWake | null;
  /** The next wake to run: the first without a WakeStarted (null: none left). */
  readonly nextWake: string | null;
  /** The planned crash whose restart was under way when the run failed (crash-drills.ts). */
  readonly restartOf: CrashIntervention | null;
}

/** What an end came to: recorded (the head signed over it) or not, why, and what the resume does about it. */
export type EndRecord =
  | { readonly recorded: true; readonly reason: string; readonly facts: EndFacts; readonly headSeq: number }
  | { readonly recorded: false; readonly reason: string; readonly facts: EndFacts | null; readonly why: string; readonly diskFull: boolean; readonly resumeDoes: string };

/** A stop recorded after an error: the instance ends 'stopped' with it. */
export interface RecordedStopAfterError {
  readonly reason: string;
  /** Wakes this run completed (the wake ended 'stopped' is not one). */
  readonly wakesRun: number;
}

export interface InstanceEndingContext {
  readonly input: InstanceInput;
  readonly processes: InstanceProcesses;
  readonly drills: CrashDrills;
  readonly sequence: WakeSequence;
  readonly clock: VirtualClock;
  readonly log: (line: string) => void;
  readonly note: (line: string) => void;
  readonly signing: () => HeadSigning;
}

/**
 * What says the disk under the run folder is full, from anywhere in a run: the writer's refusal
 * (store_full), the runtime's wake failing on it, or a file of the controller's own (heads.jsonl)
 * that could not be written (ENOSPC, EDQUOT). Null for anything else.
 */
export function storeFullOf(error: unknown): string | null {
  if (error instanceof WriterError && error.code === 'store_full') return error.message;
  if (error instanceof RuntimeWakeError && error.failure?.code === 'store_full') return error.failure.message;
  const errno = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  if (errno === 'ENOSPC' || errno === 'EDQUOT') return `the disk holding the run folder is full (${errno}: ${error instanceof Error ? error.message : ''})`;
  return null;
}

export class InstanceEnding {
  constructor(private readonly ctx: InstanceEndingContext) {}

  private get runDir(): string {
    return this.ctx.input.runDir;
  }

  /**
   * A stop order ends the instance: recorded. When it cannot be, the processes are shut down and
   * the command ends with what happened (store_full, or the writer's error) and to resume.
   */
  async stop(order: StopOrder): Promise<void> {
    const end = await this.record(() => order.reason, order.operator ?? this.ctx.input.options.operator);
    if (end.recorded) return;
    await this.ctx.processes.shutdownQuietly();
    if (end.diskFull) throw new InstanceError('store_full', `the stop (${order.reason}) could not be recorded: ${end.why}. Free space on the disk holding ${this.runDir}, then continue with npm run experiment -- --resume ${this.runDir}`);
    throw new InstanceError('writer', `the stop (${order.reason}) could not be recorded: ${end.why}; nothing was deleted — continue with --resume ${this.runDir}`);
  }

  /**
   * An error escaped the run after the writer started serving it: the stop is recorded when the
   * writer can take it (said on screen either way). Returns the recorded stop when the instance
   * ends 'stopped' (the model's check refused at a runtime's restart inside the wakes); otherwise
   * shuts the processes down and throws what the command ends with. `firstWake`: the index of
   * this run's first wake (the count of wakes started before it).
   */
  async afterError(error: unknown, phase: RunPhase, firstWake: number): Promise<RecordedStopAfterError> {
    const full = storeFullOf(error);
    if (full !== null) {
      const end = await this.record(() => full, STORE_FULL_OPERATOR);
      const recorded = end.recorded ? 'The stop was recorded.' : `The stop could not be recorded either (${end.why}): the resume ${end.resumeDoes}.`;
      throw await this.shutdownWith(new InstanceError('store_full', `${full}. Every event acknowledged before is committed. ${recorded} Free space on the disk holding ${this.runDir}, then continue with npm run experiment -- --resume ${this.runDir}`));
    }
    const unanswered = unansweredWriterOf(error, this.runDir);
    // The writer may be back (a stall ends): the stop is tried once with the error's words; it handles requests in order, so it lands after whatever the unanswered request did.
    if (unanswered !== null) {
      await this.record(() => unanswered.message, FAILURE_OPERATOR);
      throw await this.shutdownWith(unanswered);
    }
    if (error instanceof InstanceError && error.code === 'model') return this.afterModelRefusal(error, phase, firstWake);
    await this.record((facts) => `the controller failed ${whereOf(phase, facts)}: ${wordsOf(error)}`, FAILURE_OPERATOR);
    throw await this.shutdownWith(error);
  }

  /**
   * A wake the store holds open (its WakeStarted without a WakeEnded) ended 'stopped', its ledger
   * first when it has none; never repeated. Also the resume's first step (instance.ts prepare).
   * Returns the wake ended, or null when none was open.
   */
  async endOpenWake(progress: InstanceProgress): Promise<ScheduledWake | null> {
    if (!progress.openWakeId) return null;
    const open = this.ctx.input.plan.schedule.wakes.find((w) => w.wake_id === progress.openWakeId);
    if (!open) throw new InstanceError('resume', `the store has an open wake ${progress.openWakeId} that is not in plan.json`);
    const started = progress.byKey.get(CONTROLLER_KEYS.wakeStarted(open.wake_id));
    if (!started) throw new InstanceError('resume', `the open wake ${open.wake_id} has no WakeStarted under its key`);
    // A planned writer crash still armed in this writer must not fire under the stop's own appends.
    await this.ctx.drills.disarmUnfired(open);
    if (!progress.byKey.has(CONTROLLER_KEYS.ledger(open.wake_id))) await this.ctx.sequence.recordLedger(open, started.seq);
    await this.ctx.drills.appendThroughWriterCrash([wakeEndedDraft(open, 'stopped')]);
    this.ctx.note(`${open.wake_id} was open when the instance stopped: ended as 'stopped' (it is not repeated)`);
    return open;
  }

  // -------------------------------------------------------------------------------------

  /**
   * The model's check refused a start of the runtime. Inside the wakes (a runtime restarted after
   * its planned crash) the instance ends 'stopped', like a pause: the server, not the plan, failed.
   * At the start it is the command's refusal: thrown, with "Nothing ran" only when no wake ever
   * ran (the processes' own words, instance-processes.ts recordPreflight), else with the facts.
   */
  private async afterModelRefusal(error: InstanceError, phase: RunPhase, firstWake: number): Promise<RecordedStopAfterError> {
    const check = this.ctx.processes.lastPreflight;
    const refusal = check !== null && !check.ok ? check.reason : error.message;
    const nothingRan = (facts: EndFacts | null): boolean => phase === 'start' && facts !== null && facts.wakesStarted === 0;
    const end = await this.record((facts) => (nothingRan(facts) ? error.message : `the model failed its check ${whereOf(phase, facts, 'model_check')}: ${refusal}`), PREFLIGHT_OPERATOR);
    if (phase !== 'start' && end.recorded) return { reason: end.reason, wakesRun: end.facts.wakesStarted - firstWake - (end.facts.openWake === null ? 0 : 1) };
    if (nothingRan(end.facts)) throw await this.shutdownWith(error);
    const recorded = end.recorded ? `The stop is recorded (head signed at seq ${end.headSeq})` : `The stop could not be recorded (${end.why}): the resume ${end.resumeDoes}`;
    throw await this.shutdownWith(new InstanceError('model', `${end.reason}. ${recorded}. ${pinnedModelAdvice(this.ctx.input)}`));
  }

  /**
   * Records the end with the reason `reasonOf` gives for where the store stands: the runtime
   * stopped, the store read back (after any request still being handled: the writer answers in
   * order), an open wake ended 'stopped', EmergencyStopped (unless the store holds a stop
   * already), a signed head. Never throws: what could not be done is the record's `why`, said.
   */
  private async record(reasonOf: (facts: EndFacts | null) => string, operator: string): Promise<EndRecord> {
    // What the controller knows without the store (a planned restart under way), in case the store cannot be read.
    let facts: EndFacts | null = this.factsWithoutStore();
    let reason = reasonOf(facts);
    try {
      await this.ctx.processes.stopRuntime().catch(() => undefined);
      const progress = await readProgress(this.ctx.processes.connected());
      facts = this.factsOf(progress);
      reason = reasonOf(facts);
      if (progress.sealed) return this.notRecorded(reason, facts, `the store is sealed (seq ${progress.head.seq}): no stop follows a seal`, { resumeDoes: 'signs its final head if it is missing' });
      if (progress.stopped) {
        this.ctx.log(`the store records a stop already (no Resumed after it): not recorded again (${reason.slice(0, 200)})`);
      } else {
        await this.endOpenWake(progress);
        this.ctx.log(`emergency stop: ${reason}`);
        await this.ctx.drills.appendThroughWriterCrash([emergencyStoppedDraft(this.ctx.clock.now(), operator, reason)]);
      }
      const head = await signAndRecordHead(this.ctx.processes.connected(), 'periodic', this.ctx.signing());
      this.ctx.log(`stop recorded; head signed at seq ${head.seq}; resume with: npm run experiment -- --resume ${this.runDir}`);
      return { recorded: true, reason, facts, headSeq: head.seq };
    } catch (failure) {
      const diskFull = storeFullOf(failure) !== null;
      return this.notRecorded(reason, facts, `${diskFull ? 'no space: ' : ''}${wordsOf(failure)}`, { diskFull });
    }
  }

  /** Says on screen why the end is not recorded and what the resume does about it. */
  private notRecorded(reason: string, facts: EndFacts | null, why: string, how: { readonly diskFull?: boolean; readonly resumeDoes?: string } = {}): EndRecord {
    const resumeDoes = how.resumeDoes ?? 'records it';
    this.ctx.log(`the stop could not be recorded (${why}); nothing was deleted: npm run experiment -- --resume ${this.runDir} ${resumeDoes} (reason: ${reason.slice(0, 200)})`);
    return { recorded: false, reason, facts, why, diskFull: how.diskFull ?? false, resumeDoes };
  }

  private factsOf(progress: InstanceProgress): EndFacts {
    const wakes = this.ctx.input.plan.schedule.wakes;
    const started = wakes.filter((w) => progress.byKey.has(CONTROLLER_KEYS.wakeStarted(w.wake_id)));
    return {
      wakesStarted: started.length,
      wakesTotal: wakes.length,
      openWake: wakes.find((w) => w.wake_id === progress.openWakeId) ?? null,
      nextWake: wakes.find((w) => !progress.byKey.has(CONTROLLER_KEYS.wakeStarted(w.wake_id)))?.wake_id ?? null,
      restartOf: this.ctx.drills.restartUnderWay,
    };
  }

  /** The facts of a failure at a planned crash's restart, from the plan alone: wakes start in schedule order, the crash wake the last. */
  private factsWithoutStore(): EndFacts | null {
    const crash = this.ctx.drills.restartUnderWay;
    if (crash === null) return null;
    const wakes = this.ctx.input.plan.schedule.wakes;
    const index = wakes.findIndex((w) => w.wake_id === crash.deliver_wake_id);
    if (index === -1) return null;
    return { wakesStarted: index + 1, wakesTotal: wakes.length, openWake: wakes[index]!, nextWake: wakes[index + 1]?.wake_id ?? null, restartOf: crash };
  }

  /** Shuts the processes down and returns `error`, for the caller to throw (what the end came to is on screen already). */
  private async shutdownWith(error: unknown): Promise<unknown> {
    await this.ctx.processes.shutdownQuietly();
    return error;
  }
}

/**
 * Where the run was, with the facts a stop's words carry: "at the runtime's restart in wake-0010
 * (the planned runtime crash iv-runtime-crash), after 10 of 31 wakes (wake-0010 ends 'stopped'
 * and is not repeated)" — true whether this end records it or the resume does. `what`: a failed
 * model check happens at a runtime's (re)start.
 */
function whereOf(phase: RunPhase, facts: EndFacts | null, what: 'model_check' | 'failure' = 'failure'): string {
  if (facts === null) return phase === 'start' ? 'at the start' : phase === 'seal' ? 'while sealing' : 'during the wakes';
  const of = `${facts.wakesStarted} of ${facts.wakesTotal} wakes`;
  if (phase === 'start') {
    if (facts.wakesStarted === 0) return `at the start, before any wake (0 of ${facts.wakesTotal} wakes)`;
    return `at the start of this resume, after ${of} (none in this resume${facts.nextWake === null ? '' : `; ${facts.nextWake} comes next`})`;
  }
  if (phase === 'seal') return `while sealing, after ${of}`;
  if (facts.openWake === null) return `${what === 'model_check' ? "at the runtime's restart " : ''}between wakes, after ${of}`;
  const wake = facts.openWake.wake_id;
  const crash = facts.restartOf;
  const restart =
    crash !== null
      ? `at the ${crash.kind === 'writer_crash' ? 'writer' : 'runtime'}'s restart in ${wake} (the planned ${crash.kind === 'writer_crash' ? 'writer' : 'runtime'} crash ${crash.intervention_id})`
      : what === 'model_check'
        ? `at the runtime's restart in ${wake} (outside a planned crash)`
        : `in ${wake}`;
  return `${restart}, after ${of} (${wake} ends 'stopped' and is not repeated)`;
}

/** An error's own words, bounded (the cut said). */
function wordsOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length <= ERROR_WORDS_MAX_CHARS ? text : `${text.slice(0, ERROR_WORDS_MAX_CHARS)}… (${text.length - ERROR_WORDS_MAX_CHARS} more chars on screen)`;
}

/**
 * A writer that did not answer in time, as the stall it may be: the drills' own (a planned crash
 * that turned out to be none), or a timeout the controller's plain appends met outside them — the
 * seal, a planned restart's record (found by npm run faults: stall_writer at those appends ended
 * as an internal error, its stop left for the resume to find unrecorded). Null for anything else.
 */
function unansweredWriterOf(error: unknown, runDir: string): WriterUnansweredError | null {
  if (error instanceof WriterUnansweredError) return error;
  // A timeout, not a disconnect: the writer's socket was still open, so its process had not exited.
  if (error instanceof WriterUnavailableError && error.reason === 'timeout') return new WriterUnansweredError(`${error.message} (the writer is still running); the instance is interrupted — check the writer's log above, then continue with --resume ${runDir}`);
  return null;
}
