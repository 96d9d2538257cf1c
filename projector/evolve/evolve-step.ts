// What a handler of the Subject projector's fold gets for one event (projector/subject-projection.ts
// dispatches to one map per event category, projector/evolve/*-events.ts): the state it may change,
// the event's envelope, and how to refuse the event (`throw refuse(code, reason)`: a throw, so the
// compiler narrows after it). A handler returns whether the Subject changed (aggregate_version
// counts those events).
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { EventCategory } from '../../schema/event-definition.js';
import { ProjectionRefusal } from '../projection.js';
import type { ProjectionRefusalCode } from '../refusal-codes.js';
import type { SubjectState } from '../subject-state.js';

/** The refusal of one event, naming its seq and type, for the handler to throw. */
export type Refuse = (code: ProjectionRefusalCode, reason: string) => ProjectionRefusal;

export function refusalOf(event: EventEnvelope): Refuse {
  return (code, reason) => new ProjectionRefusal(event.seq, event.event_type, code, reason);
}

export interface EvolveStep {
  /** The state being evolved: the handler's to change (the caller copied it, or discards it on a refusal). */
  readonly state: SubjectState;
  readonly event: EventEnvelope;
  readonly refuse: Refuse;
}

/** How each event type of category C evolves the Subject; true when the Subject changed. */
export type EvolveHandlers<C extends EventCategory> = CategoryHandlers<C, EvolveStep, boolean>;
