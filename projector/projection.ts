// A projection folds events into a state, purely: no clock, no randomness, no I/O.
// The writer applies one inside the transaction that stores the events (spec §12.2),
// so state and events can never disagree; a refusal rolls the whole append back.
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import type { ProjectionRefusalCode } from './refusal-codes.js';

export interface Projection<S> {
  readonly name: string;
  /** projector_version: bump on any change to what apply() computes. */
  readonly version: string;
  /** state_machine_version: bump on any change to a transition table. */
  readonly stateMachineVersion: string;
  initial(): S;
  /** Returns the next state; must not mutate `state`. Throws ProjectionRefusal to refuse. */
  apply(state: S, event: EventEnvelope): S;
  /** Same result as folding apply() over `events`; lets a projection copy its state once per batch. */
  applyAll?(state: S, events: readonly EventEnvelope[]): S;
  /**
   * Same result as apply(), written into `state`, for a caller that owns its state and
   * discards it on a refusal (replay). Never used by the writer, which must not half-apply.
   */
  applyInPlace?(state: S, event: EventEnvelope): void;
}

/**
 * An event the projection will not accept (e.g. an illegal state transition). `refusalCode` says
 * which rule refused it (projector/refusal-codes.ts); the message says it to a person, with the ids
 * and states involved. The code refines nothing a command prints: every refusal ends a command as
 * `projection_refused`.
 */
export class ProjectionRefusal extends TypedErrorOf('projection_refused', EXIT_CODES.failed) {
  override readonly name = 'ProjectionRefusal';
  override get endingMessage(): string {
    return `the projection refused a stored event, so the state cannot be rebuilt under these versions: ${this.message}`;
  }
  constructor(readonly seq: number, readonly eventType: string, readonly refusalCode: ProjectionRefusalCode, reason: string) {
    super(`event ${eventType} at seq ${seq} refused by the projection: ${reason}`);
  }
}
