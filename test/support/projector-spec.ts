// Projector tests in the shape of Emmett's specifications: `given(history).when(next)` and then
// `thenRefused(code)` or `thenAccepted()`. The history is the events so far (a SubjectStream, or
// envelopes); `next` is a draft (sealed as the stream's next event, never appended) or an envelope.
//
// thenRefused asserts what a refusal must be: a ProjectionRefusal naming the event's seq and type
// with the expected reason code (projector/refusal-codes.ts), through apply and applyAll alike, and
// the state it was offered to untouched (same hash, deep-equal, and frozen so that a write throws a
// TypeError instead of a refusal). The message is for people; a test that pins the values it
// names (ids, states) passes `saying`.
import { expect } from 'vitest';
import type { Projection } from '../../projector/projection.js';
import { ProjectionRefusal } from '../../projector/projection.js';
import type { ProjectionRefusalCode } from '../../projector/refusal-codes.js';
import { subjectProjection, subjectStateHash } from '../../projector/subject-projection.js';
import type { SubjectState } from '../../projector/subject-state.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { EventDraft } from '../../writer/protocol.js';
import { SubjectStream } from './subject-events.js';

type History = SubjectStream | readonly EventEnvelope[];

export interface Then {
  /** Expects the event refused with `code` (and a message matching `saying`, if given); returns the refusal. */
  thenRefused(code: ProjectionRefusalCode, saying?: RegExp): ProjectionRefusal;
  /** Expects the event accepted without changing the state it was offered to; returns the next state. */
  thenAccepted(): SubjectState;
}

export interface When {
  when(next: EventDraft | EventEnvelope): Then;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function isEnvelope(next: EventDraft | EventEnvelope): next is EventEnvelope {
  return 'seq' in next && 'event_hash' in next;
}

function caught(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return null;
}

/** The refusal `run` throws, checked against the event and the code; a description of what went wrong otherwise. */
function expectRefusal(run: () => unknown, event: EventEnvelope, code: ProjectionRefusalCode, how: string): ProjectionRefusal {
  const error = caught(run);
  if (error === null) throw new Error(`expected ${event.event_type} at seq ${event.seq} to be refused (${code}) by ${how}; it was applied`);
  expect(error, `${how}: ${String(error)}`).toBeInstanceOf(ProjectionRefusal);
  const refusal = error as ProjectionRefusal;
  expect({ seq: refusal.seq, eventType: refusal.eventType }, `${how}: ${refusal.message}`).toEqual({ seq: event.seq, eventType: event.event_type });
  expect(refusal.refusalCode, `${how}: the code of the refusal "${refusal.message}"`).toBe(code);
  return refusal;
}

/**
 * The events so far, then the event a test offers the projection (`projection`: the Subject
 * projector unless a test stands in with another, as the helper's own forged cases do).
 */
export function given(history: History, projection: Projection<SubjectState> = subjectProjection): When {
  const events = history instanceof SubjectStream ? history.events : history;
  return {
    when(next) {
      if (!isEnvelope(next) && !(history instanceof SubjectStream)) throw new Error('given(envelopes).when(draft): a draft is sealed as the next event of a SubjectStream; give one, or an envelope');
      const event = isEnvelope(next) ? next : (history as SubjectStream).peek(next);
      const state = (): SubjectState => (projection.applyAll ? projection.applyAll(projection.initial(), events) : events.reduce((s, e) => projection.apply(s, e), projection.initial()));
      return {
        thenRefused(code, saying) {
          const before = state();
          const copy = structuredClone(before);
          const hash = subjectStateHash(before);
          const frozen = deepFreeze(structuredClone(before));
          const refusal = expectRefusal(() => projection.apply(frozen, event), event, code, 'apply on a frozen state');
          if (saying) expect(refusal.message).toMatch(saying);
          expectRefusal(() => projection.apply(before, event), event, code, 'apply');
          if (projection.applyAll) expectRefusal(() => projection.applyAll!(before, [event]), event, code, 'applyAll');
          expect(subjectStateHash(before), 'the state offered the event changed').toBe(hash);
          expect(before, 'the state offered the event changed').toEqual(copy);
          expect(frozen).toEqual(copy);
          return refusal;
        },
        thenAccepted() {
          const before = state();
          const hash = subjectStateHash(before);
          let fromFrozen: SubjectState | null = null;
          const error = caught(() => (fromFrozen = projection.apply(deepFreeze(structuredClone(before)), event)));
          if (error !== null || fromFrozen === null) throw new Error(`expected ${event.event_type} at seq ${event.seq} to be accepted; ${String(error)}`);
          const next = projection.apply(before, event);
          expect(subjectStateHash(before), 'the state offered the event changed').toBe(hash);
          expect(next).toEqual(fromFrozen);
          expect(next.last_applied_event_seq).toBe(event.seq);
          return next;
        },
      };
    },
  };
}
