// The store-level projection the writer runs until the Subject projector exists:
// how many events of each category and type the store holds. Small, pure, and enough
// to prove that events and their projection commit together.
import type { EventEnvelope } from '../schema/envelope.js';
import type { Projection } from './projection.js';

export interface EventCounts {
  readonly total: number;
  readonly last_seq: number;
  readonly by_type: Readonly<Record<string, number>>;
}

export const eventCountsProjection: Projection<EventCounts> = {
  name: 'event-counts',
  version: '1.0.0',
  // No state machine in this projection.
  stateMachineVersion: '0.0.0',
  initial: () => ({ total: 0, last_seq: 0, by_type: {} }),
  apply: (state, event: EventEnvelope) => ({
    total: state.total + 1,
    last_seq: event.seq,
    by_type: { ...state.by_type, [event.event_type]: (state.by_type[event.event_type] ?? 0) + 1 },
  }),
};
