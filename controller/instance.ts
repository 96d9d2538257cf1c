// One instance run, from its writer's start to its seal or its stop (DESIGN §2, §8): the writer
// started on the store (a refusal of the store on a resume worded as the resume's), the store's
// own account of progress read back (instance-progress.ts), what a fresh or resumed instance
// needs before its next wake written (prepare), the runtime started (its model checked), the wake
// sequence run (wake-sequence.ts), then sealed with a signed final head — or the stop recorded
// and signed, resumable with `--resume DIR`; nothing is deleted.
//
// Every controller event carries a deterministic idempotency key (design/run-contract.ts), so a
// retried or resumed step is answered with the original event instead of a second one.
import { subjectInitializedPayload } from '../design/scenario.js';
import { CONTROLLER_KEYS } from '../design/run-contract.js';
import type { ChainHead } from '../schema/chain-head.js';
import { RuntimeWakeError } from '../runtime/spawn.js';
import { WriterUnavailableError } from '../writer/client.js';
import { WriterError, type AppendResult, type EventDraft, type Head } from '../writer/protocol.js';
import { emergencyStoppedDraft, resumedDraft, subjectInitializedDraft, wakeEndedDraft } from './controller-events.js';
import { START_TURN_INDEX } from '../design/block-turn-order.js';
import { CrashDrills } from './crash-drills.js';
import { InstanceError, WriterUnansweredError } from './instance-error.js';
import type { InstanceInput, InstanceResult } from './instance-options.js';
import { readProgress, type InstanceProgress } from './instance-progress.js';
import { InstanceProcesses } from './instance-processes.js';
import { NO_BLOCK } from './lockstep-block.js';
import { hasFinalHead, resumeRefusalOf } from './resume-checks.js';
import { appendSignedHead, sealAndSignFinalHead, signAndRecordHead, signChainHead, type HeadSigning } from './run-signatures.js';
import type { StopOrder } from './runtime-wake.js';
import { VirtualClock } from './virtual-clock.js';
import { maxIso, WakeSequence } from './wake-sequence.js';
import { WrittenInterventions } from './written-interventions.js';

/** Who records a start refused by the model's check before the first wake. */
const PREFLIGHT_OPERATOR = 'controller (model preflight)';
/** Who records (when it still fits) the stop of an instance whose disk filled up. */
const STORE_FULL_OPERATOR = 'controller (disk full)';

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

export class Instance {
  private readonly log: (line: string) => void;
  private readonly clock: VirtualClock;
  private readonly notes: string[] = [];
  private readonly processes: InstanceProcesses;
  private readonly written = new WrittenInterventions();
  private readonly drills: CrashDrills;
  private readonly sequence: WakeSequence;

  constructor(private readonly input: InstanceInput) {
    this.log = input.options.log;
    this.clock = new VirtualClock({ startAt: input.plan.schedule.start_at, speed: input.options.speed });
    // Shared by the A/B/C instances of a replicate and free of the group: event ids derive from it,
    // so the groups' subjects see the same ids wherever their histories agree, and a rerun of a
    // batch (same experiment id and seed) reproduces its state hashes.
    const subjectId = `subject-${input.manifest.experiment_id}-r${input.manifest.replicate}`;
    this.processes = new InstanceProcesses(input, subjectId);
    const note = (line: string): void => this.note(line);
    this.drills = new CrashDrills({ processes: this.processes, written: this.written, wakes: input.plan.schedule.wakes, runDir: input.runDir, note });
    this.sequence = new WakeSequence({ input, processes: this.processes, drills: this.drills, written: this.written, clock: this.clock, log: this.log, note, signing: () => this.signing() });
  }

  async run(mode: 'create' | 'open'): Promise<InstanceResult> {
    const wakesTotal = this.input.plan.schedule.wakes.length;
    let wakesRun = 0;
    let stop: StopOrder | null = null;
    let finalHead: ChainHead | null = null;
    try {
      // A writer that refuses the store on a resume (it changed, or another writer took it, after
      // checkStoreBeforeResume) is the same refusal: store_locked, store_damaged, …
      await this.processes.startWriter(mode).catch((error: unknown) => {
        throw mode === 'open' ? resumeRefusalOf(this.input.runDir, error) : error;
      });
      const progress = await readProgress(this.processes.connected());
      if (progress.sealed) {
        if (hasFinalHead(this.input.runDir, this.input.key.keys.publicKey)) throw new InstanceError('resume', `${this.input.runDir} is finished and sealed (seq ${progress.head.seq}); nothing to resume`);
        // The previous controller sealed the store but died before signing: the seal is the last event, so its head is final.
        finalHead = this.signFinalHeadOnSeal(progress.head);
        this.note(`the store was sealed at seq ${progress.head.seq} but its final head was never signed; signed it now`);
      } else {
        const firstWake = await this.prepare(progress, mode);
        // A resume with every wake already run only seals: no model is asked, so none is started (or checked).
        if (firstWake < wakesTotal) await this.startRuntime();
        const end = await this.sequence.runFrom(firstWake);
        wakesRun = end.wakesRun;
        stop = end.stop ?? this.sequence.stopAsked();
        if (stop === null) {
          await this.processes.stopRuntime();
          const sealed = await sealAndSignFinalHead(this.processes.connected(), this.signing(), 'every scheduled wake ran');
          finalHead = sealed;
          this.log(`sealed at seq ${sealed.seq}; final head signed`);
        }
      }
    } catch (error) {
      const full = storeFullOf(error);
      if (full !== null) throw await this.stopOnFullDisk(full);
      const unanswered = unansweredWriterOf(error, this.input.runDir);
      if (unanswered !== null) await this.recordStopAfterStall(unanswered);
      await this.processes.shutdownQuietly();
      throw unanswered ?? error;
    }
    if (stop !== null) {
      try {
        await this.recordStop(stop.reason, stop.operator ?? this.input.options.operator);
      } catch (recordError) {
        const full = storeFullOf(recordError);
        if (full !== null) throw await this.stopOnFullDisk(full);
        await this.processes.shutdownQuietly();
        throw new InstanceError('writer', `the stop (${stop.reason}) could not be recorded: ${recordError instanceof Error ? recordError.message : String(recordError)}; nothing was deleted — continue with --resume ${this.input.runDir}`);
      }
    }
    const head = await this.processes.connected().head();
    await this.processes.shutdownQuietly();
    return {
      status: finalHead ? 'finished' : 'stopped',
      runDir: this.input.runDir,
      experimentId: this.input.manifest.experiment_id,
      groupBlindId: this.input.manifest.group_blind_id,
      isolation: this.input.isolation.manifest,
      isolationSummary: this.input.isolation.summary,
      wakesTotal,
      wakesRun,
      head,
      finalHead,
      stopReason: stop?.reason ?? null,
      notes: this.notes,
      forecast: this.input.manifest.forecast,
    };
  }

  /** Starts the runtime; a refused model check ends this start recorded (head signed), so a later resume finds a stop with its reason, not a controller that died unrecorded. */
  private async startRuntime(): Promise<void> {
    // In a block, a runtime's start (its model check is a call to the server) waits for its turn too.
    const turn = await (this.input.options.block ?? NO_BLOCK).takeTurn(START_TURN_INDEX, 'start', this.input.options.signal);
    // A stop asked while waiting: the wake sequence stops before any wake needs a runtime.
    if (turn === null) return;
    try {
      await this.processes.startRuntime();
    } catch (error) {
      if (error instanceof InstanceError && error.code === 'model') await this.recordStop(error.message, PREFLIGHT_OPERATOR).catch(() => undefined);
      // A runtime that died starting while a stop was asked (a Ctrl-C to the process group can
      // reach a child forked that very instant, before it has its own group) is the stop, not a
      // failure: the wake sequence then stops before any wake needs a runtime.
      else if (this.stopWasAsked()) {
        this.note(`the runtime did not start while a stop was asked (${error instanceof Error ? error.message : String(error)}): the stop is recorded instead`);
        return;
      }
      throw error;
    } finally {
      turn.release();
    }
  }

  private stopWasAsked(): boolean {
    return this.input.options.signal.aborted || (this.input.options.stopAtWakeEnd?.aborted ?? false);
  }

  private signFinalHeadOnSeal(head: Head): ChainHead {
    const final: ChainHead = { experiment_id: this.input.manifest.experiment_id, seq: head.seq, event_hash: head.event_hash, kind: 'final', signed_at: new Date().toISOString() };
    appendSignedHead(this.input.runDir, signChainHead(final, this.input.key.keys));
    return final;
  }

  private note(line: string): void {
    this.notes.push(line);
    this.log(`note: ${line}`);
  }

  private signing(): HeadSigning {
    return { runDir: this.input.runDir, keys: this.input.key.keys, experimentId: this.input.manifest.experiment_id, occurredAt: this.clock.now(), now: () => new Date().toISOString(), faults: this.processes.faults };
  }

  /** Writes what a fresh or resumed instance needs before its next wake; returns that wake's index. */
  private async prepare(progress: InstanceProgress, mode: 'create' | 'open'): Promise<number> {
    const { plan, scenario } = this.input;
    const wakes = plan.schedule.wakes;
    const record = (drafts: EventDraft[]): Promise<AppendResult> => this.drills.appendThroughWriterCrash(drafts);
    this.written.restore(progress.byKey);
    if (mode === 'open' && progress.lastOccurredAt) await this.clock.advanceTo(maxIso(progress.lastOccurredAt, plan.schedule.start_at));
    if (!progress.byKey.has(CONTROLLER_KEYS.subjectInitialized)) {
      await record([subjectInitializedDraft(plan.schedule.start_at, subjectInitializedPayload(scenario.definition, plan.schedule.start_at))]);
    }
    if (mode === 'open') {
      await this.endOpenWake(progress);
      if (!progress.stopped) {
        await record([emergencyStoppedDraft(this.clock.now(), 'controller', 'found on resume: the previous controller ended without recording a stop (killed, crashed, or stopped by a full disk with no room left to record it)')]);
        this.note('the previous controller ended without recording a stop; recorded one now');
      }
      await record([resumedDraft(this.clock.now(), this.input.options.operator, `--resume ${this.input.runDir}`)]);
    }
    const next = wakes.findIndex((w) => !progress.byKey.has(CONTROLLER_KEYS.wakeStarted(w.wake_id)));
    if (mode === 'open') this.log(`resuming at ${next === -1 ? 'the end (every wake ran)' : wakes[next]!.wake_id} from seq ${progress.head.seq}`);
    return next === -1 ? wakes.length : next;
  }

  /**
   * The disk under the run folder is full: the stop is recorded if it still fits (it rarely does:
   * the writer refuses it as it refused the append), the processes are shut down, and the error
   * the command ends with says what happened and what to do. Nothing acknowledged was lost (the
   * refused append rolled back whole); a resume after freeing space records the stop if this could
   * not, ends the open wake as stopped, and goes on.
   */
  private async stopOnFullDisk(full: string): Promise<InstanceError> {
    const reason = full;
    const recorded = await this.recordStopOutsideWake(reason, STORE_FULL_OPERATOR).then(
      () => 'The stop was recorded.',
      (error: unknown) => `The stop could not be recorded either (${storeFullOf(error) !== null ? 'no space' : error instanceof Error ? error.message : String(error)}): the resume records it.`,
    );
    await this.processes.shutdownQuietly();
    return new InstanceError('store_full', `${reason}. Every event acknowledged before is committed. ${recorded} Free space on the disk holding ${this.input.runDir}, then continue with npm run experiment -- --resume ${this.input.runDir}`);
  }

  /**
   * The writer stopped answering without exiting: it may be back (a stall ends), so the stop is
   * tried once with the error's words — the writer handles requests in order, so it lands after
   * whatever the unanswered request did. When that fails too, the resume records a stop found.
   */
  private async recordStopAfterStall(error: WriterUnansweredError): Promise<void> {
    try {
      await this.recordStopOutsideWake(error.message, 'controller');
    } catch (again) {
      this.log(`the stop could not be recorded either (${again instanceof Error ? again.message : String(again)}); --resume records a stop found`);
    }
  }

  /**
   * The stop of a run that lost its footing mid-wake (a writer that stopped answering, a full
   * disk). Read after the failed request (the writer answers in order): whatever it did is in the
   * store now. A wake it left open is ended 'stopped' first, as a resume would end it — a stop
   * inside an open wake breaks the run contract and the projection refuses the wake's end after it.
   */
  private async recordStopOutsideWake(reason: string, operator: string): Promise<void> {
    await this.processes.stopRuntime().catch(() => undefined);
    const progress = await readProgress(this.processes.connected());
    if (progress.sealed || progress.stopped) {
      this.log(`not recording the stop (${reason.slice(0, 200)}): the store is ${progress.sealed ? 'sealed' : 'stopped already'}`);
      return;
    }
    await this.endOpenWake(progress);
    await this.recordStop(reason, operator);
  }

  /** A wake the store holds open (its WakeStarted without a WakeEnded) ended 'stopped', its ledger first when it has none; never repeated. */
  private async endOpenWake(progress: InstanceProgress): Promise<void> {
    if (!progress.openWakeId) return;
    const open = this.input.plan.schedule.wakes.find((w) => w.wake_id === progress.openWakeId);
    if (!open) throw new InstanceError('resume', `the store has an open wake ${progress.openWakeId} that is not in plan.json`);
    const started = progress.byKey.get(CONTROLLER_KEYS.wakeStarted(open.wake_id));
    if (!started) throw new InstanceError('resume', `the open wake ${open.wake_id} has no WakeStarted under its key`);
    // A planned writer crash still armed in this writer must not fire under the stop's own appends.
    await this.drills.disarmUnfired(open);
    if (!progress.byKey.has(CONTROLLER_KEYS.ledger(open.wake_id))) await this.sequence.recordLedger(open, started.seq);
    await this.drills.appendThroughWriterCrash([wakeEndedDraft(open, 'stopped')]);
    this.note(`${open.wake_id} was open when the instance stopped: ended as 'stopped' (it is not repeated)`);
  }

  /** Emergency stop: recorded, head signed, nothing deleted. */
  private async recordStop(reason: string, operator: string): Promise<void> {
    this.log(`emergency stop: ${reason}`);
    await this.processes.stopRuntime().catch(() => undefined);
    await this.drills.appendThroughWriterCrash([emergencyStoppedDraft(this.clock.now(), operator, reason)]);
    const head = await signAndRecordHead(this.processes.connected(), 'periodic', this.signing());
    this.log(`stop recorded; head signed at seq ${head.seq}; resume with: npm run experiment -- --resume ${this.input.runDir}`);
  }
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

