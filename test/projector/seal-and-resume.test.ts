// Projector rules added with the seal (issue 4 items 6 and 9): SystemEvent.StoreSealed
// passes through every projection without changing the Subject; an operator may resume
// an emergency-stopped subject, which comes back DORMANT; the versions say so.
import { describe, expect, test } from 'vitest';
import { eventCountsProjection } from '../../projector/event-counts.js';
import { LIFECYCLE_TABLE, lifecycleAllows } from '../../projector/lifecycle.js';
import { ProjectionRefusal } from '../../projector/projection.js';
import { subjectProjection, subjectStateHash } from '../../projector/subject-projection.js';
import { STATE_MACHINE_VERSION, SUBJECT_PROJECTOR_VERSION } from '../../projector/versions.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { given } from '../support/projector-spec.js';
import { d, draft, standardRun, SubjectStream } from '../support/subject-events.js';

const P = subjectProjection;
const sealDraft = () => draft('SystemEvent.StoreSealed', { reason: 'the run is over', sealed_by: 'experiment' });

function project(events: readonly EventEnvelope[]) {
  return P.applyAll(P.initial(), events);
}

describe('SystemEvent.StoreSealed', () => {
  test('changes nothing of the Subject but the applied seq, through apply and applyAll', () => {
    const run = standardRun();
    const before = project(run.stream.events);
    const seal = run.stream.push(sealDraft());
    const hash = subjectStateHash(before);
    const after = P.apply(before, seal);
    expect(subjectStateHash(before)).toBe(hash);
    expect(after.last_applied_event_seq).toBe(seal.seq);
    expect(after.aggregate_version).toBe(before.aggregate_version);
    expect({ ...after, last_applied_event_seq: 0 }).toEqual({ ...before, last_applied_event_seq: 0 });
    expect(project(run.stream.events)).toEqual(after);
  });

  test('passes through in any lifecycle state, e.g. during a wake and after an emergency stop', () => {
    const awake = new SubjectStream().open();
    awake.push(d.wakeStarted('w1'));
    const stopped = awake.fork();
    stopped.push(d.emergencyStopped());
    for (const s of [awake, stopped]) {
      const before = project(s.events);
      const after = P.apply(before, s.peek(sealDraft()));
      expect([after.lifecycle_state, after.cognitive_state, after.current_wake_id]).toEqual([before.lifecycle_state, before.cognitive_state, before.current_wake_id]);
    }
  });

  test('is counted by the event-counts projection', () => {
    const s = new SubjectStream().open();
    const seal = s.push(sealDraft());
    const counts = s.events.reduce((state, e) => eventCountsProjection.apply(state, e), eventCountsProjection.initial());
    expect(counts).toMatchObject({ total: seal.seq, last_seq: seal.seq });
    expect(counts.by_type['SystemEvent.StoreSealed']).toBe(1);
  });
});

describe('resuming an emergency-stopped subject', () => {
  test('the table has the row STOPPED --Resumed--> DORMANT or RECOVERING, and no other way out of STOPPED (an operator resolution stays STOPPED)', () => {
    expect(LIFECYCLE_TABLE.filter(([from]) => from === 'STOPPED')).toEqual([
      ['STOPPED', 'SystemEvent.Resumed', ['DORMANT', 'RECOVERING']],
      ['STOPPED', 'SystemEvent.OperatorResolved', ['STOPPED']],
    ]);
    expect(lifecycleAllows('STOPPED', 'SystemEvent.Resumed', 'DORMANT')).toBe(true);
    expect(lifecycleAllows('STOPPED', 'SystemEvent.Resumed', 'RECOVERING')).toBe(true);
    expect(lifecycleAllows('STOPPED', 'SystemEvent.Resumed', 'AWAKE')).toBe(false);
  });

  test('a stop during a wake, then Resumed: DORMANT, IDLE, no wake; the next wake starts', () => {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    s.push(d.modelAnswered('w1'));
    s.push(d.emergencyStopped());
    const resumed = P.apply(project(s.events), s.push(d.resumed()));
    expect([resumed.lifecycle_state, resumed.cognitive_state, resumed.current_wake_id]).toEqual(['DORMANT', 'IDLE', null]);
    const next = P.apply(resumed, s.push(d.wakeStarted('w2')));
    expect([next.lifecycle_state, next.current_wake_id]).toEqual(['AWAKE', 'w2']);
  });

  test('a second Resumed is refused and leaves the state as it was', () => {
    const s = new SubjectStream().open();
    s.push(d.emergencyStopped());
    s.push(d.resumed());
    expect(project(s.events).lifecycle_state).toBe('DORMANT');
    given(s).when(d.resumed()).thenRefused('illegal_lifecycle_transition');
  });

  test('resumed with an unknown tool outcome still open: RECOVERING (read-only), the outcome still open, resolvable only by an operator', () => {
    // 1.1.0 refused this Resumed, which left such an instance unable ever to finish (found while building the fault harness).
    const r = new SubjectStream().open();
    r.push(d.wakeStarted('w1'));
    r.push(d.modelAnswered('w1'));
    const intent = r.fileIntent('p1', 'x.md');
    r.push(d.toolOutcomeUnknown(intent.event_id));
    r.push(d.emergencyStopped());
    const resumed = P.apply(project(r.events), r.push(d.resumed()));
    expect([resumed.lifecycle_state, resumed.cognitive_state, resumed.current_wake_id]).toEqual(['RECOVERING', 'IDLE', null]);
    expect(resumed.open_intents[intent.event_id]?.outcome).toBe('unknown');
    const next = P.apply(resumed, r.push(d.wakeStarted('w2')));
    expect([next.lifecycle_state, next.current_wake_id]).toEqual(['RECOVERING', 'w2']);
  });

  test('an operator resolves the unknown outcome while STOPPED: still STOPPED, the intent closed, and the resume is DORMANT', () => {
    const r = new SubjectStream().open();
    r.push(d.wakeStarted('w1'));
    r.push(d.modelAnswered('w1'));
    const intent = r.fileIntent('p1');
    r.push(d.toolOutcomeUnknown(intent.event_id));
    r.push(d.emergencyStopped());
    const resolved = P.apply(project(r.events), r.push(d.operatorResolved(intent.event_id)));
    expect(resolved.lifecycle_state).toBe('STOPPED');
    expect(resolved.open_intents).toEqual({});
    const resumed = P.apply(resolved, r.push(d.resumed()));
    expect([resumed.lifecycle_state, resumed.current_wake_id]).toEqual(['DORMANT', null]);
    // A second statement about the same intent has nothing left to resolve.
    given(r).when(d.operatorResolved(intent.event_id)).thenRefused('nothing_to_resolve');
  });
});

test('the versions record the rule changes (state machine 1.3.0 since an operator may resolve an unknown outcome while stopped or paused; the projector 1.3.0 since a failed model call spends the tokens it recorded)', () => {
  expect(SUBJECT_PROJECTOR_VERSION).toBe('1.3.0');
  expect(STATE_MACHINE_VERSION).toBe('1.3.0');
  expect(P.version).toBe(SUBJECT_PROJECTOR_VERSION);
  expect(P.stateMachineVersion).toBe(STATE_MACHINE_VERSION);
});
