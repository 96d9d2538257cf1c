// The experiment's virtual clock (issue 4 item 8): simulated time drives the schedule.
// Every occurred_at the controller writes is a reading of this clock, never of the wall.
// By default it jumps straight to the next scheduled moment ("as fast as possible"); with a
// speed F it waits (target − now) / F of real time first, so F = 1 is real time and
// F = 3600 runs a simulated hour per second. It only moves forward.
import { setTimeout as sleep } from 'node:timers/promises';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';

/** Real waits are cut into slices of at most this, so a stop request is seen promptly. */
export const MAX_SLEEP_SLICE_MS = 250;

export class VirtualClockError extends TypedErrorOf('virtual_clock', EXIT_CODES.failed) {
  override readonly name = 'VirtualClockError';
}

export interface VirtualClockOptions {
  /** ISO-8601 UTC virtual time to start at. */
  readonly startAt: string;
  /** Real-time factor; null = as fast as possible. */
  readonly speed: number | null;
}

export function parseSpeed(text: string): number {
  const speed = Number(text);
  if (!Number.isFinite(speed) || speed <= 0) throw new VirtualClockError(`--speed must be a positive number (a real-time factor, e.g. 3600 = one simulated hour per second); got "${text}"`);
  return speed;
}

export class VirtualClock {
  private nowMs: number;
  readonly speed: number | null;

  constructor(options: VirtualClockOptions) {
    const startMs = Date.parse(options.startAt);
    if (!Number.isFinite(startMs)) throw new VirtualClockError(`virtual start ${options.startAt} is not an ISO-8601 time`);
    if (options.speed !== null && !(options.speed > 0 && Number.isFinite(options.speed))) throw new VirtualClockError(`speed must be a positive finite factor, got ${options.speed}`);
    this.nowMs = startMs;
    this.speed = options.speed;
  }

  now(): string {
    return new Date(this.nowMs).toISOString();
  }

  /**
   * Moves to `at` (never backwards: a schedule that goes back in time is a bug and fails
   * loudly). Returns false when `signal` aborted the wait: the clock then stays where it was.
   */
  async advanceTo(at: string, signal?: AbortSignal): Promise<boolean> {
    const targetMs = Date.parse(at);
    if (!Number.isFinite(targetMs)) throw new VirtualClockError(`${at} is not an ISO-8601 time`);
    if (targetMs < this.nowMs) throw new VirtualClockError(`the virtual clock cannot go back from ${this.now()} to ${at}`);
    if (this.speed !== null) {
      const deadline = Date.now() + (targetMs - this.nowMs) / this.speed;
      // Bounded: each slice is at most MAX_SLEEP_SLICE_MS and the deadline is fixed.
      for (let remainingMs = deadline - Date.now(); remainingMs > 0; remainingMs = deadline - Date.now()) {
        if (signal?.aborted) return false;
        await sleep(Math.min(remainingMs, MAX_SLEEP_SLICE_MS));
      }
    }
    if (signal?.aborted) return false;
    this.nowMs = targetMs;
    return true;
  }
}
