// The Subject projector: folds events into the Subject aggregate, purely. `apply` never
// mutates its input (it evolves a copy); `applyAll` copies once per batch. An event that
// implies an illegal transition or breaks an invariant is refused with a
// ProjectionRefusal and nothing of it is applied. What each event does is a handler in the
// map of its category (projector/evolve/*-events.ts); the compiler demands one for every
// type of the catalogue (schema/category-handlers.ts).
import { canonicalJson } from '../schema/canonical-json.js';
import { dispatcherOf } from '../schema/category-handlers.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { isEventType, type TypedEvent } from '../schema/event-catalog.js';
import { hashText } from '../schema/hash.js';
import { evolveActionEvents } from './evolve/action-events.js';
import { refusalOf, type EvolveStep, type Refuse } from './evolve/evolve-step.js';
import { evolveExperimentEvents } from './evolve/experiment-events.js';
import { evolveMemoryEvents } from './evolve/memory-events.js';
import { evolveModelOutputEvents } from './evolve/model-output-events.js';
import { evolvePlanEvents } from './evolve/plan-events.js';
import { evolveSystemEvents } from './evolve/system-events.js';
import { evolveWorldEvents } from './evolve/world-events.js';
import type { Projection } from './projection.js';
import { initialSubjectState, type SubjectState } from './subject-state.js';
import { STATE_MACHINE_VERSION, SUBJECT_PROJECTOR_VERSION } from './versions.js';

/** The permission gate and the oracle compute an action's fingerprint as this projector does. */
export { actionFingerprint } from './action-fingerprint.js';

/** Applies one event's handler; true when the Subject changed. */
const evolveTyped = dispatcherOf<EvolveStep, boolean>({
  SystemEvent: evolveSystemEvents,
  WorldEvent: evolveWorldEvents,
  ModelOutputEvent: evolveModelOutputEvents,
  ActionEvent: evolveActionEvents,
  MemoryEvent: evolveMemoryEvents,
  PlanEvent: evolvePlanEvents,
  ExperimentEvent: evolveExperimentEvents,
});

function typed(event: EventEnvelope, refuse: Refuse): TypedEvent {
  if (!isEventType(event.event_type)) throw refuse('unknown_event_type', 'unknown event type');
  return { event_type: event.event_type, payload: event.payload } as TypedEvent;
}

/** Applies one event to a state this function owns and may change. */
function evolve(state: SubjectState, event: EventEnvelope): void {
  const refuse = refusalOf(event);
  if (event.seq !== state.last_applied_event_seq + 1) throw refuse('seq_not_next', `expected seq ${state.last_applied_event_seq + 1}`);
  const subjectChanged = evolveTyped(typed(event, refuse), { state, event, refuse });
  state.last_applied_event_seq = event.seq;
  if (subjectChanged) state.aggregate_version += 1;
}

/** sha256(JCS(state)). */
export function subjectStateHash(state: SubjectState): string {
  return hashText(canonicalJson(state));
}

export const subjectProjection: Projection<SubjectState> & {
  applyAll(state: SubjectState, events: readonly EventEnvelope[]): SubjectState;
  applyInPlace(state: SubjectState, event: EventEnvelope): void;
} = {
  name: 'subject',
  version: SUBJECT_PROJECTOR_VERSION,
  stateMachineVersion: STATE_MACHINE_VERSION,
  initial: initialSubjectState,
  apply(state, event) {
    const next = structuredClone(state);
    evolve(next, event);
    return next;
  },
  applyAll(state, events) {
    const next = structuredClone(state);
    for (const event of events) evolve(next, event);
    return next;
  },
  applyInPlace: evolve,
};
