// The projector tests' given/when/then helper (test/support/projector-spec.ts) is a checker too:
// each of its checks has a forged case here that it must catch — the wrong reason code, a
// refusal that is not one, an event accepted or refused against expectation, a message that
// does not say what the test pins, and a projection that changes the state it refuses.
import { describe, expect, test } from 'vitest';
import { ProjectionRefusal, type Projection } from '../../projector/projection.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import type { SubjectState } from '../../projector/subject-state.js';
import { given } from '../support/projector-spec.js';
import { d, standardRun, SubjectStream } from '../support/subject-events.js';

/** A subject with wake w1 in progress. */
function awake(): SubjectStream {
  const s = new SubjectStream().open();
  s.push(d.wakeStarted('w1'));
  return s;
}

/** The Subject projector, except that it refuses `refusedType` after `before` has done whatever it does to the state. */
function forgedProjection(refusedType: string, before: (state: SubjectState) => void, error: (seq: number, type: string) => Error): Projection<SubjectState> {
  const apply = (state: SubjectState, event: Parameters<Projection<SubjectState>['apply']>[1]): SubjectState => {
    if (event.event_type !== refusedType) return subjectProjection.apply(state, event);
    before(state);
    throw error(event.seq, event.event_type);
  };
  return { ...subjectProjection, apply, applyAll: (state, events) => events.reduce(apply, state), applyInPlace: undefined };
}

describe('given(events).when(draft).thenRefused(code)', () => {
  test('passes on the refusal with its code, and returns it', () => {
    const s = awake();
    const refusal = given(s).when(d.wakeStarted('w2')).thenRefused('wake_not_ended', /wake w1 has not ended/);
    expect(refusal.seq).toBe(s.nextSeq);
    expect(refusal.message).toBe(`event ExperimentEvent.WakeStarted at seq ${s.nextSeq} refused by the projection: wake w1 has not ended`);
  });

  test('forged: the wrong code fails the helper, naming both', () => {
    const s = awake();
    expect(() => given(s).when(d.wakeStarted('w2')).thenRefused('other_wake')).toThrow(/other_wake[\s\S]*wake_not_ended|wake_not_ended[\s\S]*other_wake/);
  });

  test('forged: an event the projection accepts fails thenRefused', () => {
    const s = awake();
    expect(() => given(s).when(d.modelAnswered('w1')).thenRefused('no_wake')).toThrow(/to be refused \(no_wake\) by apply on a frozen state; it was applied/);
  });

  test('forged: a message that does not say what the test pins fails the helper', () => {
    const s = awake();
    expect(() => given(s).when(d.wakeStarted('w2')).thenRefused('wake_not_ended', /wake w9 has not ended/)).toThrow(/wake w9 has not ended/);
  });

  test('forged: a projection that throws something other than a ProjectionRefusal fails the helper', () => {
    const s = awake();
    const buggy = forgedProjection('ModelOutputEvent.ModelAnswered', () => {}, () => new TypeError('a projection bug'));
    expect(() => given(s, buggy).when(d.modelAnswered('w1')).thenRefused('other_wake')).toThrow(/a projection bug/);
  });

  test('forged: a projection that changes the state it refuses fails the helper (frozen: a TypeError; not frozen: the hash)', () => {
    const s = awake();
    const refuse = (seq: number, type: string): Error => new ProjectionRefusal(seq, type, 'other_wake', 'forged');
    const writes = forgedProjection('ModelOutputEvent.ModelAnswered', (state) => void (state.current_wake_id = 'forged'), refuse);
    expect(() => given(s, writes).when(d.modelAnswered('w1')).thenRefused('other_wake')).toThrow(/TypeError/);
    // One that leaves a frozen state alone is caught by the state it changed when not frozen.
    const sly = forgedProjection('ModelOutputEvent.ModelAnswered', (state) => void (Object.isFrozen(state) || (state.current_wake_id = 'forged')), refuse);
    expect(() => given(s, sly).when(d.modelAnswered('w1')).thenRefused('other_wake')).toThrow(/the state offered the event changed/);
  });

  test('given envelopes: a stored event offered again is refused by its seq', () => {
    const events = standardRun().stream.events;
    given(events.slice(0, 10)).when(events[3]!).thenRefused('seq_not_next', /expected seq 11/);
    expect(() => given(events.slice(0, 10)).when(d.message())).toThrow(/a draft is sealed as the next event of a SubjectStream/);
  });
});

describe('given(events).when(draft).thenAccepted()', () => {
  test('returns the next state; forged: a refused event fails it, naming the refusal', () => {
    const s = awake();
    expect(given(s).when(d.modelAnswered('w1')).thenAccepted().cognitive_state).toBe('DELIBERATING');
    expect(() => given(s).when(d.wakeStarted('w2')).thenAccepted()).toThrow(/to be accepted; ProjectionRefusal: .*wake w1 has not ended/);
  });
});
