// The Subject projection of the events this runtime has observed, kept in this process between
// wakes next to the event cache (issue 19 item 1): a wake folds only the events it has not folded
// yet, so its cost does not grow with the history. The projector's evolve is pure in its events
// (the state after seq N is a function of events 1..N alone), so this incremental fold equals
// subjectProjection.applyAll over every event (test/runtime/observed-state.test.ts holds it to
// that on a real instance's events). Like the cache, it dies with the process: a restarted
// runtime folds from seq 1 on its first wake.
//
// The state is folded in place and handed out as is: a reader must not change it, and holds it
// only until the next advance (the wake loop reads its state fresh after each step that appends).
import { InternalError } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { subjectProjection } from '../projector/subject-projection.js';
import type { SubjectState } from '../projector/subject-state.js';

/** The fold met an event the projector refused: the state is no longer the store's, and every later wake says so. */
export class ObservedStateError extends InternalError {
  override readonly name = 'ObservedStateError';
}

export class ObservedState {
  private state: SubjectState = subjectProjection.initial();
  /** Why the fold stopped being trustworthy (a refusal part-way through an event), or null. */
  private broken: string | null = null;

  /** The seq of the last event folded (0 before any). */
  get seq(): number {
    return this.state.last_applied_event_seq;
  }

  /** The state after every event folded so far (not to be changed by the reader). */
  get current(): SubjectState {
    if (this.broken !== null) throw new ObservedStateError(this.broken);
    return this.state;
  }

  /**
   * Folds the events of `events` above `seq`, in order; each must follow the last folded one
   * (the projector refuses a gap). Events at or below `seq` are skipped: the caller may hand
   * over a page that overlaps what was folded. Returns the state.
   */
  advance(events: readonly EventEnvelope[]): SubjectState {
    const state = this.current;
    for (const event of events) {
      if (event.seq <= state.last_applied_event_seq) continue;
      try {
        subjectProjection.applyInPlace(state, event);
      } catch (error) {
        // evolve may have changed part of the state before refusing: nothing folded after it could be trusted.
        this.broken = `the projection of the observed events was refused at seq ${event.seq} (${error instanceof Error ? error.message : String(error)}); this runtime's state is no longer the store's — restart it`;
        throw error;
      }
    }
    return state;
  }
}
