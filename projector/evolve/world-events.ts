// How each WorldEvent evolves the Subject (docs/projector.md §5). What happens in the world reaches
// the subject only when it observes it, through the runtime's own events; the one immediate effect
// is a refutation (§8), which applies whether or not the subject has seen it.
import { refuteEvent } from '../refutation.js';
import type { EvolveHandlers } from './evolve-step.js';

export const evolveWorldEvents: EvolveHandlers<'WorldEvent'> = {
  'WorldEvent.InformationPublished': (p, { state, event }) => {
    for (const refuted of p.refutes_event_ids) refuteEvent(state, refuted, event.event_id, event);
    return p.refutes_event_ids.length > 0;
  },
  'WorldEvent.MessageReceived': () => false,
  'WorldEvent.GoalChanged': () => false,
  'WorldEvent.FileChangedExternally': () => false,
  'WorldEvent.DistractorOccurred': () => false,
};
