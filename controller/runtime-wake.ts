// One wake of ds-runtime as the controller waits for it: the wake request sent, its report (or
// failure) raced against the emergency stop, the runtime's notes said on screen. Used by the wake
// sequence for a plain wake and by the crash drills inside a crash wake; what comes back is either
// the report or the stop to record — a failure of the runtime is thrown (RuntimeWakeError).
import type { ScheduledWake } from '../design/wake-schedule.js';
import type { WakeCostCap, WakeDone } from '../runtime/protocol.js';
import type { RuntimeProcess } from '../runtime/spawn.js';

/** A stop to record: why, and who (null: the operator of the command). */
export interface StopOrder {
  readonly reason: string;
  readonly operator: string | null;
}

/** What the runtime's part of a wake came to: its report (null when it crashed before reporting) with a line for the screen, or a stop. */
export type RuntimeAnswer = { readonly kind: 'reported'; readonly line: string; readonly done: WakeDone | null } | { readonly kind: 'stopped'; readonly stop: StopOrder };

/** The stop the signal asks for: its reason when the caller gave one. */
export function signalStop(signal: AbortSignal): StopOrder {
  const reason: unknown = signal.reason;
  return { reason: typeof reason === 'string' ? reason : 'emergency stop requested', operator: null };
}

export interface RuntimeWakeCall {
  readonly runtime: RuntimeProcess;
  readonly wake: ScheduledWake;
  /** WakeStarted's visible_to_seq. */
  readonly visibleToSeq: number;
  /** The runtime waits for the controller after each append (only a runtime-crash drill needs it: runtime/protocol.ts RuntimeWake). */
  readonly holdAtEachAppend: boolean;
  /** Steps with nothing between them share one append (runtime/protocol.ts RuntimeWake steps_share_appends): only on a wake with no planned crash. */
  readonly stepsShareAppends: boolean;
  readonly timeoutMs: number;
  /** The cost cap in force and what was spent before this wake (runtime/protocol.ts RuntimeWake cost_cap); null: no cap. */
  readonly costCap: WakeCostCap | null;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

export async function wakeRuntime(call: RuntimeWakeCall): Promise<RuntimeAnswer> {
  const { runtime, wake, signal } = call;
  let onAbort: (() => void) | null = null;
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = (): void => resolve('aborted');
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  const waking = runtime.wake({ wake_id: wake.wake_id, wake_at: wake.wake_at, visible_to_seq: call.visibleToSeq, budget: wake.budget, hold_at_each_append: call.holdAtEachAppend, steps_share_appends: call.stepsShareAppends, cost_cap: call.costCap }, call.timeoutMs);
  // When the stop wins the race, the wake's promise must not become an unhandled rejection (it ends later).
  waking.catch(() => undefined);
  try {
    const done = await Promise.race([waking, aborted]);
    if (done === 'aborted') return { kind: 'stopped', stop: signalStop(signal) };
    const c = done.counts;
    const line = `${c.model_calls} model call(s), ${c.executions} execution(s), ${c.denials} denial(s), ${c.claims} claim(s)${c.claims_refused ? ` (${c.claims_refused} refused)` : ''}`;
    for (const note of done.notes) call.log(`  ${wake.wake_id}: ${note}`);
    return { kind: 'reported', line, done };
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
