// Ctrl-C / SIGTERM as an operator's emergency stop, the same for npm run experiment and npm run
// study: the first press aborts the returned signal (the controller records the stop and
// signs the head), a second press abandons at once (exit 130; the stores stay intact and
// --resume records the interruption).
//
// One press often arrives as two signals. A terminal's Ctrl-C goes to the whole foreground
// process group, so `npm run X` delivers it to node directly and npm forwards its own copy
// ~6 ms later (measured; the tsx CLI parent used before relayed it again after 30 ms). Taking
// each signal as a press made one Ctrl-C abandon the run without recording the stop (issue
// 16), so signals within SAME_PRESS_WINDOW_MS of a press are that press, not a new one.
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { performance } from 'node:perf_hooks';

/** Signals this close to a press are relays of it: ≥ 30× the slowest relay measured (tsx's
 *  30 ms), so a loaded machine still folds them in; short enough that a deliberate second press
 *  ("a second later") is taken as one. Said on screen at the first press. */
export const SAME_PRESS_WINDOW_MS = 1_000;

/** How often the window's clock ticks while a window is open. */
const WINDOW_TICK_MS = 50;

/** The most one tick may add to the window's clock. A relayed signal that arrives while the
 *  event loop is stalled (synchronous work) is handled only when the stall ends, so time the
 *  loop was stalled must not count toward the window: a 3 s stall counts as this much. Well
 *  below the window (a relay comes within 30 ms, so it meets at most one stall), well above a
 *  tick that a loaded machine runs late (so the window is not stretched there). */
const MAX_COUNTED_GAP_MS = 250;

/** The windows open now (every onOperatorPress of the process): untilPressSettled waits them out. */
const openWindows = new Set<object>();

/**
 * Resolves once no press window is open. A command that ends within a few ms of a press (the audit
 * desk closes its server in less) would otherwise exit while npm's relayed copy is on its way: a
 * copy that lands during the process's teardown, after its handlers are gone, kills it with
 * SIGINT (npm then exits 130, not the command's code). Waiting out the window absorbs the copy.
 */
export async function untilPressSettled(): Promise<void> {
  // Bounded: every window closes within SAME_PRESS_WINDOW_MS of counted time; the stalls it skips are capped.
  for (let waitedMs = 0; openWindows.size > 0 && waitedMs < 10 * SAME_PRESS_WINDOW_MS; waitedMs += WINDOW_TICK_MS) {
    await new Promise((resolve) => setTimeout(resolve, WINDOW_TICK_MS));
  }
}

export interface OperatorPress {
  readonly signal: NodeJS.Signals;
  /** 1 for the first press, 2 for the next one after the window, … */
  readonly count: number;
  /** Milliseconds since the previous press (null for the first). */
  readonly sincePreviousMs: number | null;
}

/**
 * Calls `onPress` once per operator press (SIGINT or SIGTERM), the signals that arrive within
 * SAME_PRESS_WINDOW_MS of a press folded into it. For long-running commands of any kind (the
 * audit desk's server as well as the controller). The handlers stay installed until the returned
 * function is called: a `process.once` handler would leave a relayed duplicate to Node's default
 * action (death by SIGINT, exit 130, whatever the command was doing).
 */
export function onOperatorPress(onPress: (press: OperatorPress) => void): () => void {
  let count = 0;
  let lastPressMs: number | null = null;
  // The open window: how much of it has passed (stalls capped), and the last tick.
  let window: { countedMs: number; lastTickMs: number; timer: NodeJS.Timeout } | null = null;

  const closeWindow = (): void => {
    if (window !== null) {
      clearInterval(window.timer);
      openWindows.delete(window);
    }
    window = null;
  };
  const advance = (nowMs: number): void => {
    if (window === null) return;
    window.countedMs += Math.min(nowMs - window.lastTickMs, MAX_COUNTED_GAP_MS);
    window.lastTickMs = nowMs;
    if (window.countedMs >= SAME_PRESS_WINDOW_MS) closeWindow();
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    const nowMs = performance.now();
    advance(nowMs);
    if (window !== null) return; // a relay of the press whose window is still open
    count += 1;
    const sincePreviousMs = lastPressMs === null ? null : nowMs - lastPressMs;
    lastPressMs = nowMs;
    // unref: an open window never keeps a finished command alive.
    window = { countedMs: 0, lastTickMs: nowMs, timer: setInterval(() => advance(performance.now()), WINDOW_TICK_MS).unref() };
    openWindows.add(window);
    onPress({ signal, count, sincePreviousMs });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    closeWindow();
  };
}

export interface OperatorStop {
  readonly signal: AbortSignal;
}

/**
 * `announce` writes one screen line; `what` names what the first press stops; `resumeCommand`
 * is the command that continues what an abandon leaves (a study's differs from an instance's).
 */
export function installOperatorStop(announce: (line: string) => void, what: string, resumeCommand = 'npm run experiment -- --resume DIR'): OperatorStop {
  const stop = new AbortController();
  const windowS = SAME_PRESS_WINDOW_MS / 1_000;
  onOperatorPress((press) => {
    if (press.count > 1) {
      const afterS = ((press.sincePreviousMs ?? 0) / 1_000).toFixed(1);
      announce(`second ${press.signal} (a new press, ${afterS} s after the first): abandoning now without recording the stop (exit ${EXIT_CODES.abandoned}); the stores are intact and ${resumeCommand} records the interruption`);
      process.exit(EXIT_CODES.abandoned);
    }
    announce(`${press.signal}: emergency stop — ${what} (signals within ${windowS} s are this same press; press again after that to abandon without recording the stop)`);
    stop.abort(`operator signal ${press.signal}`);
  });
  return { signal: stop.signal };
}

/**
 * How long a cluster task's stop lets the wake under way finish before cutting it: below Slurm's
 * default KillWait (30 s, the time between a preemption's or scancel's SIGTERM and its SIGKILL),
 * so even a cut wake is recorded before the kill; far below study-task.sbatch's time-limit lead
 * (--signal=B:TERM@120). A reference-policy wake takes milliseconds, a real model's wake may not.
 */
export const WAKE_FINISH_GRACE_MS = 20_000;

export interface GracefulStop extends OperatorStop {
  /** Aborted at the first press: stop at the next wake boundary (controller/instance-options.ts stopAtWakeEnd). */
  readonly atWakeEnd: AbortSignal;
  /** Removes the signal handlers and the grace timer (a command's handlers otherwise live as long as its process). */
  readonly release: () => void;
}

/**
 * The stop of a scheduler's task (npm run study -- --instance K): the first press (SIGTERM from a
 * time limit, a preemption or scancel) lets the wake under way finish and stops before the next,
 * so a requeued instance has the very wakes of one that ran through: a cut wake is never run
 * again (verification/store-walk.ts), and a scored wake cut by a stop would score the
 * apparatus, not the subject. After `graceMs` — or at a second press — the wake is cut (the
 * emergency stop, recorded); a third press abandons (exit 130) as installOperatorStop's second.
 */
export function installGracefulStop(announce: (line: string) => void, what: string, resumeCommand: string, graceMs = WAKE_FINISH_GRACE_MS): GracefulStop {
  const atWakeEnd = new AbortController();
  const now = new AbortController();
  let grace: NodeJS.Timeout | null = null;
  const cut = (reason: string): void => {
    if (grace !== null) clearTimeout(grace);
    now.abort(reason);
  };
  const off = onOperatorPress((press) => {
    if (press.count === 1) {
      announce(`${press.signal}: emergency stop — ${what} (each wake under way finishes first, at most ${graceMs / 1_000} s, then it is cut; signals within ${SAME_PRESS_WINDOW_MS / 1_000} s are this same press; press again after that to cut the wakes now, a third time to abandon without recording the stop)`);
      // The reason recorded with the stop: the same words as the emergency stop's, for the same act.
      atWakeEnd.abort(`operator signal ${press.signal}`);
      // unref: a task that ends within the grace is not held open by it.
      grace = setTimeout(() => {
        announce(`the wake under way did not end within ${graceMs / 1_000} s of ${press.signal}: cutting it (recorded as stopped; a cut wake is not run again on resume)`);
        now.abort(`operator signal ${press.signal} (the wake under way cut after a ${graceMs / 1_000} s grace)`);
      }, graceMs).unref();
    } else if (press.count === 2) {
      announce(`second ${press.signal}: cutting the wake under way now (recorded as stopped; a cut wake is not run again on resume)`);
      cut(`operator signal ${press.signal} (a second press: the wake under way cut)`);
    } else {
      announce(`${press.signal} again: abandoning now without recording the stop (exit ${EXIT_CODES.abandoned}); the stores are intact and ${resumeCommand} records the interruption`);
      process.exit(EXIT_CODES.abandoned);
    }
  });
  const release = (): void => {
    off();
    if (grace !== null) clearTimeout(grace);
  };
  return { signal: now.signal, atWakeEnd: atWakeEnd.signal, release };
}

/** YYYYMMDD of the wall clock: the date part of generated experiment and study ids. */
export function todayCompact(): string {
  return new Date().toISOString().slice(0, 10).replaceAll('-', '');
}
