// The two planned crashes (issue 4; design/intervention-plan.ts), carried out inside their wake:
//   runtime_crash — ds-runtime is SIGKILLed at its kill point (its first execution intent, or a
//     number of appends), seen through its wake_progress; the wake asks the runtime to hold after
//     each append (runtime/protocol.ts RuntimeWake hold_at_each_append) so that the kill lands at
//     exactly that point in every run. Not reached within the wake: killed after it, and said so.
//   writer_crash — ds-writer is armed to SIGKILL itself during append N after the arming; the
//     append that meets the dead writer (the runtime's, or the controller's own) has it restarted
//     on the same store, and a controller append is sent again (same idempotency keys ⇒ once).
// Either way the crash's own events (ProcessRestarted) and their InterventionDelivered are written
// on restart, and the wake ends 'crashed'. The one piece of drill state that outlives a step is the
// armed writer crash; it lives here, and every controller append of a wake's steps passes here
// (appendThroughWriterCrash) because any of them may be the one the armed writer dies under (the
// signed heads, appended between wakes, and the restart record, appended once it is disarmed,
// go to the writer directly: no crash can be armed then).
// Only a wake whose script (design/run-contract.ts) has a crash runs a drill.
import type { CrashIntervention } from '../design/run-contract.js';
import type { ScheduledWake } from '../design/wake-schedule.js';
import { RuntimeWakeError, type RuntimeProcess } from '../runtime/spawn.js';
import { WriterUnavailableError } from '../writer/client.js';
import type { AppendResult, EventDraft } from '../writer/protocol.js';
import { deliveredDraft, interventionDrafts } from './controller-events.js';
import { InstanceError, WriterUnansweredError } from './instance-error.js';
import type { InstanceProcesses } from './instance-processes.js';
import type { RuntimeAnswer } from './runtime-wake.js';
import type { WrittenInterventions } from './written-interventions.js';

export interface CrashDrillContext {
  readonly processes: InstanceProcesses;
  readonly written: WrittenInterventions;
  readonly wakes: readonly ScheduledWake[];
  readonly runDir: string;
  /** Records a deviation from the plain path in the result's notes (and on screen). */
  readonly note: (line: string) => void;
}

/** The runtime's part of a wake, asked to hold (or not) at each of its appends. */
export type WakeTheRuntime = (holdAtEachAppend: boolean) => Promise<RuntimeAnswer>;

export class CrashDrills {
  /** Set while a planned writer crash is armed: its intervention, for the restart record. */
  private armedWriterCrash: CrashIntervention | null = null;
  /** Set while the process a planned crash killed is being started again and its restart recorded: where a failure there happened. */
  private restarting: CrashIntervention | null = null;

  constructor(private readonly ctx: CrashDrillContext) {}

  /** Appends; a planned writer crash is recovered here and the same drafts sent again (same keys ⇒ exactly once). */
  async appendThroughWriterCrash(drafts: EventDraft[]): Promise<AppendResult> {
    const client = this.ctx.processes.connected();
    try {
      return await client.append(drafts);
    } catch (error) {
      if (!(error instanceof WriterUnavailableError)) throw error;
      await this.recoverWriter(error.message);
      return this.ctx.processes.connected().append(drafts);
    }
  }

  /** The planned crash whose restart was under way when the run failed (null: none): the instance's ending words the stop with it. */
  get restartUnderWay(): CrashIntervention | null {
    return this.restarting;
  }

  /** The runtime's part of the crash wake of `crash`, with the drill carried out around it. */
  async runCrashWake(crash: CrashIntervention, wake: ScheduledWake, wakeTheRuntime: WakeTheRuntime): Promise<RuntimeAnswer> {
    return crash.kind === 'runtime_crash' ? this.runtimeCrashWake(crash, wake, wakeTheRuntime) : this.writerCrashWake(crash, wakeTheRuntime);
  }

  /** A writer crash that the wake's appends did not trigger is triggered on the next one (WakeEnded's first attempt). */
  async finishWriterCrash(crash: CrashIntervention): Promise<void> {
    if (this.armedWriterCrash === null) return;
    if (crash.kind !== 'writer_crash') return;
    this.ctx.note(`${crash.intervention_id}: the wake made fewer than ${crash.during_append_number} appends; the writer is killed during the wake's last append (WakeEnded) instead`);
    await this.ctx.processes.writerProcess().armCrash(1);
  }

  /**
   * A planned writer crash still armed must not fire under the stop's own appends: it would be
   * recorded after the wake ended, where no planned crash belongs. The stopped wake is not
   * repeated, so the crash is not carried out; the note says so.
   */
  async disarmUnfired(wake: ScheduledWake): Promise<void> {
    const crash = this.armedWriterCrash;
    if (crash === null || !this.ctx.processes.hasWriter) return;
    this.armedWriterCrash = null;
    await this.ctx.processes.writerProcess().disarmCrash();
    this.ctx.note(`${crash.intervention_id}: ${wake.wake_id} ended 'stopped' before the planned writer crash fired; the crash drill was disarmed and the crash is not carried out`);
  }

  // ---- runtime_crash ----------------------------------------------------------------------------

  private async runtimeCrashWake(crash: Extract<CrashIntervention, { kind: 'runtime_crash' }>, wake: ScheduledWake, wakeTheRuntime: WakeTheRuntime): Promise<RuntimeAnswer> {
    const runtime = this.ctx.processes.runtime();
    let killedAt: string | null = null;
    const unsubscribe = runtime.onProgress((progress) => {
      if (killedAt !== null || progress.wake_id !== wake.wake_id) return;
      if (progress.execution_intents >= 1 || progress.appends >= crash.fallback_after_runtime_appends) {
        killedAt = `after ${progress.appends} appends, ${progress.execution_intents} execution intents`;
        void runtime.kill('SIGKILL');
      }
    });
    try {
      const answer = await wakeTheRuntime(true);
      if (answer.kind === 'stopped' || answer.done === null) return answer;
      // The kill point was not reached in the wake (no execution intent, too few appends): kill it at the end of its wake, and say so.
      this.ctx.note(`${crash.intervention_id}: kill point (first execution intent, or ${crash.fallback_after_runtime_appends} appends) not reached — the runtime made ${answer.done.appends} appends; killed after its wake instead`);
      killedAt = 'after its wake';
      await runtime.kill('SIGKILL');
      await this.restartRuntime(runtime, crash);
      return { ...answer, line: `${answer.line} · runtime SIGKILLed ${killedAt}` };
    } catch (error) {
      if (killedAt !== null && error instanceof RuntimeWakeError && error.code === 'exited') {
        await this.restartRuntime(runtime, crash);
        return { kind: 'reported', line: `runtime SIGKILLed ${killedAt}`, done: null };
      }
      throw error;
    } finally {
      unsubscribe();
    }
  }

  private async restartRuntime(runtime: RuntimeProcess, crash: CrashIntervention): Promise<void> {
    const exit = await runtime.exited;
    if (exit.signal !== 'SIGKILL') throw new InstanceError('runtime', `the planned runtime crash ended with code ${exit.code} signal ${exit.signal}, not SIGKILL`);
    this.ctx.processes.forgetRuntime();
    this.restarting = crash;
    await this.recordRestart(crash);
    // Its model is checked again: a refused check (a server busy with abandoned requests) ends the instance there, recorded (instance-ending.ts).
    await this.ctx.processes.startRuntime();
    this.restarting = null;
  }

  // ---- writer_crash -----------------------------------------------------------------------------

  private async writerCrashWake(crash: Extract<CrashIntervention, { kind: 'writer_crash' }>, wakeTheRuntime: WakeTheRuntime): Promise<RuntimeAnswer> {
    this.armedWriterCrash = crash;
    await this.ctx.processes.writerProcess().armCrash(crash.during_append_number);
    try {
      return await wakeTheRuntime(false);
    } catch (error) {
      // The planned writer crash killed the writer under one of the runtime's appends: the runtime's wake fails; the writer is restarted here.
      if (this.armedWriterCrash !== null && error instanceof RuntimeWakeError && error.code === 'wake_failed' && error.failure?.code === 'writer_unavailable') {
        await this.recoverWriter(error.message);
        return { kind: 'reported', line: `writer SIGKILLed during one of the runtime's appends (planned); the runtime's wake ended there`, done: null };
      }
      throw error;
    }
  }

  /** The writer became unavailable: restarted when it was the armed crash (a SIGKILL); anything else interrupts the instance. */
  private async recoverWriter(cause: string): Promise<void> {
    const crash = this.armedWriterCrash;
    const exit = await this.ctx.processes.writerExitAfterLoss();
    if (!crash || exit === null || exit.signal !== 'SIGKILL') {
      const message = `lost the writer (${cause}; exit ${exit ? `code ${exit.code} signal ${exit.signal}` : 'still running'}) outside a planned crash; the instance is interrupted — check the writer's log above, then continue with --resume ${this.ctx.runDir}`;
      throw exit === null ? new WriterUnansweredError(message) : new InstanceError('writer', message);
    }
    this.ctx.processes.countWriterRestart();
    this.armedWriterCrash = null;
    this.restarting = crash;
    await this.ctx.processes.restartWriter(crash.intervention_id);
    await this.recordRestart(crash);
    this.restarting = null;
  }

  // ---- both -------------------------------------------------------------------------------------

  /** The planned crash's own events (ProcessRestarted) and their delivery, in the crash wake. */
  private async recordRestart(crash: CrashIntervention): Promise<void> {
    const wake = this.ctx.wakes.find((w) => w.wake_id === crash.deliver_wake_id)!;
    const client = this.ctx.processes.connected();
    const result = await client.append(interventionDrafts(crash, wake.wake_at));
    this.ctx.written.add(crash, result);
    await client.append([deliveredDraft(wake, crash, this.ctx.written.idsOf(crash))]);
  }
}
