// One instance run, from its writer's start to its seal or its stop (DESIGN §2, §8): the writer
// started on the store (a refusal of the store on a resume worded as the resume's), the store's
// own account of progress read back (instance-progress.ts), what a fresh or resumed instance
// needs before its next wake written (prepare), the runtime started (its model checked), the wake
// sequence run (wake-sequence.ts), then sealed with a signed final head. Every other end — a stop
// order, or an error escaping any of it once the writer serves the instance — goes through
// instance-ending.ts: the open wake ended, the stop recorded, the head signed, resumable with
// `--resume DIR`; nothing is deleted.
//
// Every controller event carries a deterministic idempotency key (design/run-contract.ts), so a
// retried or resumed step is answered with the original event instead of a second one.
import { subjectInitializedPayload } from '../design/scenario.js';
import { CONTROLLER_KEYS } from '../design/run-contract.js';
import type { ChainHead } from '../schema/chain-head.js';
import type { AppendResult, EventDraft, Head } from '../writer/protocol.js';
import { emergencyStoppedDraft, resumedDraft, subjectInitializedDraft } from './controller-events.js';
import { raisedResumeReason } from '../design/cost-cap.js';
import { START_TURN_INDEX } from '../design/block-turn-order.js';
import { CrashDrills } from './crash-drills.js';
import { InstanceEnding, type RunPhase } from './instance-ending.js';
import { InstanceError } from './instance-error.js';
import type { InstanceInput, InstanceResult } from './instance-options.js';
import { readProgress, type InstanceProgress } from './instance-progress.js';
import { InstanceProcesses } from './instance-processes.js';
import { NO_BLOCK } from './lockstep-block.js';
import { hasFinalHead, resumeRefusalOf } from './resume-checks.js';
import { appendSignedHead, sealAndSignFinalHead, signChainHead, type HeadSigning } from './run-signatures.js';
import type { StopOrder } from './runtime-wake.js';
import { VirtualClock } from './virtual-clock.js';
import { maxIso, WakeSequence } from './wake-sequence.js';
import { WrittenInterventions } from './written-interventions.js';

export class Instance {
  private readonly log: (line: string) => void;
  private readonly clock: VirtualClock;
  private readonly notes: string[] = [];
  private readonly processes: InstanceProcesses;
  private readonly written = new WrittenInterventions();
  private readonly drills: CrashDrills;
  private readonly sequence: WakeSequence;
  private readonly ending: InstanceEnding;

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
    this.ending = new InstanceEnding({ input, processes: this.processes, drills: this.drills, sequence: this.sequence, clock: this.clock, log: this.log, note, signing: () => this.signing() });
  }

  async run(mode: 'create' | 'open'): Promise<InstanceResult> {
    const wakesTotal = this.input.plan.schedule.wakes.length;
    let wakesRun = 0;
    let stop: StopOrder | null = null;
    let stopReason: string | null = null;
    let finalHead: ChainHead | null = null;
    // Null until the writer serves an instance to end: a refusal before that leaves nothing to record.
    let phase: RunPhase | null = null;
    let firstWake = 0;
    try {
      // A writer that refuses the store on a resume (it changed, or another writer took it, after
      // checkStoreBeforeResume) is the same refusal: store_locked, store_damaged, …
      await this.processes.startWriter(mode).catch((error: unknown) => {
        throw mode === 'open' ? resumeRefusalOf(this.input.runDir, error) : error;
      });
      const progress = await readProgress(this.processes.connected());
      if (progress.sealed) {
        if (hasFinalHead(this.input.runDir, this.input.key.keys.publicKey)) throw new InstanceError('resume', `${this.input.runDir} is finished and sealed (seq ${progress.head.seq}); nothing to resume`);
        phase = 'seal';
        // The previous controller sealed the store but died before signing: the seal is the last event, so its head is final.
        finalHead = this.signFinalHeadOnSeal(progress.head);
        this.note(`the store was sealed at seq ${progress.head.seq} but its final head was never signed; signed it now`);
      } else {
        phase = 'start';
        firstWake = await this.prepare(progress, mode);
        // A resume with every wake already run only seals: no model is asked, so none is started (or checked).
        if (firstWake < wakesTotal) await this.startRuntime();
        phase = 'wakes';
        const end = await this.sequence.runFrom(firstWake);
        wakesRun = end.wakesRun;
        stop = end.stop ?? this.sequence.stopAsked();
        if (stop === null) {
          phase = 'seal';
          await this.processes.stopRuntime();
          const sealed = await sealAndSignFinalHead(this.processes.connected(), this.signing(), 'every scheduled wake ran');
          finalHead = sealed;
          this.log(`sealed at seq ${sealed.seq}; final head signed`);
        }
      }
    } catch (error) {
      if (phase === null) {
        await this.processes.shutdownQuietly();
        throw error;
      }
      // The one end of a run that failed: recorded when the writer can take it; thrown unless the instance ends 'stopped'.
      const recorded = await this.ending.afterError(error, phase, firstWake);
      stopReason = recorded.reason;
      wakesRun = recorded.wakesRun;
    }
    if (stop !== null) {
      // Outside the try: a stop that cannot be recorded ends the command with its own error (the ending shuts down first).
      await this.ending.stop(stop);
      stopReason = stop.reason;
    }
    let head: Head;
    try {
      head = await this.processes.connected().head();
    } finally {
      // The end is recorded (or sealed) by now: a writer lost after it still leaves no child behind.
      await this.processes.shutdownQuietly();
    }
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
      stopReason,
      notes: this.notes,
      forecast: this.input.manifest.forecast,
    };
  }

  /**
   * Starts the runtime; its model checked. A refused check is thrown like any failure: the ending
   * records the stop (head signed), so a later resume finds a stop with its reason.
   */
  private async startRuntime(): Promise<void> {
    // In a block, a runtime's start (its model check is a call to the server) waits for its turn too.
    const turn = await (this.input.options.block ?? NO_BLOCK).takeTurn(START_TURN_INDEX, 'start', this.input.options.signal);
    // A stop asked while waiting: the wake sequence stops before any wake needs a runtime.
    if (turn === null) return;
    try {
      await this.processes.startRuntime();
    } catch (error) {
      // A runtime that died starting while a stop was asked (a Ctrl-C to the process group can
      // reach a child forked that very instant, before it has its own group) is the stop, not a
      // failure: the wake sequence then stops before any wake needs a runtime.
      if (!(error instanceof InstanceError && error.code === 'model') && this.stopWasAsked()) {
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
      await this.ending.endOpenWake(progress);
      if (!progress.stopped) {
        await record([emergencyStoppedDraft(this.clock.now(), 'controller', 'found on resume: the previous controller ended without recording a stop (killed, or ended where its stop could not be recorded: the writer gone, the disk full)')]);
        this.note('the previous controller ended without recording a stop; recorded one now');
      }
      const raise = this.input.costCapRaise ?? null;
      await record([resumedDraft(this.clock.now(), this.input.options.operator, raise === null ? `--resume ${this.input.runDir}` : raisedResumeReason(this.input.runDir, raise), raise?.usd ?? null)]);
      if (raise !== null) this.note(`the cost cap of this instance raised to $${raise.usd} from this resume on (a departure from the pre-registration, recorded in its Resumed): ${raise.reason}`);
    }
    const next = wakes.findIndex((w) => !progress.byKey.has(CONTROLLER_KEYS.wakeStarted(w.wake_id)));
    if (mode === 'open') this.log(`resuming at ${next === -1 ? 'the end (every wake ran)' : wakes[next]!.wake_id} from seq ${progress.head.seq}`);
    return next === -1 ? wakes.length : next;
  }
}
