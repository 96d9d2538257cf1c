// Properties of the Subject projector over random VALID event streams (DESIGN §5: apply
// is total and deterministic; snapshots are a cache; spec §12.1: replay yields the same
// state), plus the converse: one corrupted event makes the projection refuse exactly there.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ProjectionRefusal } from '../../projector/projection.js';
import { subjectProjection, subjectStateHash } from '../../projector/subject-projection.js';
import { initialSubjectState, SubjectState, type SubjectState as State } from '../../projector/subject-state.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { assertValidChain } from '../support/subject-events.js';
import { corruptions, generateStream, sealCorruption, type Generated } from '../support/subject-generator.js';

const P = subjectProjection;
/**
 * 100 runs; a failing run is shrunk for at most 20 s (shrinking 800-choice tapes can take
 * minutes) and then reported with the smallest counterexample found so far.
 */
const FC = { numRuns: 100, interruptAfterTimeLimit: 20_000, markInterruptAsFailure: true } as const;

/** A tape of choices (about three per event); up to 800 of them drive a stream of at most 200 events. */
const tapeArb = fc.array(fc.nat({ max: 1_000_000 }), { minLength: 0, maxLength: 800, size: 'max' });
// Counterexamples print as their tape (replay with generateStream(tape)), not as hundreds of envelopes.
const streamArb = tapeArb.map((tape) => {
  const g = generateStream(tape, { maxEvents: 200 });
  return Object.assign(g, { [fc.toStringMethod]: () => `generateStream(${JSON.stringify(tape)}) /* ${g.events.length} events */` });
});

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function project(events: readonly EventEnvelope[]): State {
  return P.applyAll(P.initial(), events);
}

/** The state a writer would store as a snapshot and read back: JCS text, parsed, schema-checked. */
function viaSnapshot(state: State): State {
  return SubjectState.parse(JSON.parse(canonicalJson(state)));
}

describe('projecting random valid streams', () => {
  test('the generator makes valid chains and covers what it should (a check of the generator, not the projector)', () => {
    const types = new Set<string>();
    let longest = 0;
    fc.assert(
      fc.property(streamArb, (g) => {
        assertValidChain(g.events);
        for (const e of g.events) types.add(e.event_type);
        longest = Math.max(longest, g.events.length);
      }),
      { ...FC, seed: 42 },
    );
    expect(longest).toBeGreaterThan(100);
    for (const type of [
      'ExperimentEvent.WakeStarted',
      'ActionEvent.ExecutionIntentRecorded',
      'ActionEvent.ToolOutcomeUnknown',
      'SystemEvent.OperatorResolved',
      'MemoryEvent.TaskBoardChanged',
      'MemoryEvent.JournalEntryWritten',
      'PlanEvent.PlanRevisionAccepted',
      'PlanEvent.PlanRevisionRejected',
      'WorldEvent.InformationPublished',
      'SystemEvent.Paused',
      'SystemEvent.EmergencyStopped',
    ]) {
      expect(types, type).toContain(type);
    }
  });

  test('(a) determinism: projecting the same stream twice gives identical state hashes', () => {
    fc.assert(
      fc.property(streamArb, (g) => {
        expect(subjectStateHash(project(g.events))).toBe(subjectStateHash(project(structuredClone(g.events))));
      }),
      FC,
    );
  });

  test('(b) one by one == applyAll == evolveInPlace/applyInPlace == snapshot (JSON round trip) + tail', () => {
    fc.assert(
      fc.property(streamArb, fc.nat(), (g, cut) => {
        const batch = project(g.events);
        const oneByOne = g.events.reduce((st, e) => P.apply(st, e), P.initial());
        const inPlace = initialSubjectState();
        for (const e of g.events) subjectProjection.applyInPlace(inPlace, e);
        const viaApplyInPlace = P.initial();
        for (const e of g.events) P.applyInPlace(viaApplyInPlace, e);
        const k = cut % (g.events.length + 1);
        const restored = P.applyAll(viaSnapshot(project(g.events.slice(0, k))), g.events.slice(k));
        const hash = subjectStateHash(batch);
        expect(subjectStateHash(oneByOne)).toBe(hash);
        expect(subjectStateHash(inPlace)).toBe(hash);
        expect(subjectStateHash(restored)).toBe(hash);
        expect(oneByOne).toEqual(batch);
        expect(inPlace).toEqual(batch);
        expect(viaApplyInPlace).toEqual(batch);
        expect(restored).toEqual(batch);
      }),
      FC,
    );
  });

  test('(c) every projected state (each prefix) parses with the SubjectState schema; (e) last_applied_event_seq is the last seq', () => {
    fc.assert(
      fc.property(streamArb, (g) => {
        let state = P.initial();
        for (const e of g.events) {
          state = P.apply(state, e);
          const parsed = SubjectState.safeParse(state);
          if (!parsed.success) throw new Error(`state after seq ${e.seq} breaks the schema: ${parsed.error.message}`);
          expect(state.last_applied_event_seq).toBe(e.seq);
        }
        expect(state.last_applied_event_seq).toBe(g.events[g.events.length - 1]!.seq);
        expect(state.last_applied_event_seq).toBe(g.events.length);
      }),
      FC,
    );
  });

  test('(d) apply never mutates its input (deep-frozen input, hash unchanged)', () => {
    fc.assert(
      fc.property(streamArb, (g) => {
        // Every input is deep-frozen, so any write to it throws; every 5th is also hashed.
        let state = P.initial();
        for (const e of g.events) {
          const input = deepFreeze(state);
          const hash = e.seq % 5 === 0 ? subjectStateHash(input) : null;
          state = P.apply(input, e);
          if (hash !== null) expect(subjectStateHash(input)).toBe(hash);
        }
        // and a whole batch from a frozen middle state
        const mid = deepFreeze(project(g.events.slice(0, g.events.length >> 1)));
        const hash = subjectStateHash(mid);
        P.applyAll(mid, g.events.slice(g.events.length >> 1));
        expect(subjectStateHash(mid)).toBe(hash);
      }),
      FC,
    );
  });

  test('the projected state agrees with an independent model of the spec (lifecycle, cognition, side effects, JTMS refutation, budget)', () => {
    fc.assert(
      fc.property(streamArb, (g: Generated) => {
        const s = project(g.events);
        const x = g.expected;
        expect(s.last_applied_event_seq).toBe(x.lastSeq);
        expect(s.aggregate_version).toBe(x.aggregateVersion);
        expect(s.lifecycle_state).toBe(x.lifecycle);
        expect(s.cognitive_state).toBe(x.cognitive);
        expect(s.current_wake_id).toBe(x.currentWakeId);
        expect(s.resource_budget).toEqual({ wake_id: x.budget.wakeId, granted: x.budget.granted, remaining: x.budget.remaining, overruns: x.budget.overruns });
        expect(Object.fromEntries(Object.entries(s.proposals).map(([id, p]) => [id, { decision: p.decision, executed: p.executed }]))).toEqual(x.proposals);
        expect(Object.keys(s.denied_actions)).toHaveLength(x.deniedDistinct);
        expect(Object.values(s.denied_actions).reduce((n, a) => n + a.repeats, 0)).toBe(x.deniedRepeats);
        expect(Object.fromEntries(Object.entries(s.task_board).map(([id, t]) => [id, t.status]))).toEqual(x.tasks);
        expect(s.current_plan).toEqual(x.currentPlan);
        expect(s.goals.map((goal) => ({ goal_id: goal.goal_id, status: goal.status }))).toEqual(x.goals);
        expect(s.current_state.current_goal_id).toBe(x.currentGoalId);
        expect(Object.keys(s.journal.index).sort()).toEqual(x.journalIds);
        expect(s.journal.entries).toBe(x.journalIds.length);
        expect(Object.fromEntries(Object.entries(s.open_intents).map(([id, i]) => [id, i.outcome]))).toEqual(x.openIntents);
        expect(Object.fromEntries(Object.entries(s.claims).map(([id, c]) => [id, { type: c.claim_type, status: c.status }]))).toEqual(x.claims);
        expect(Object.keys(s.refuted_events).sort()).toEqual(x.refutedEvents);
        expect(Object.keys(s.plan_proposals).sort()).toEqual(x.pendingPlans);
        expect(s.plan_revisions).toEqual(x.planRevisions);
        // refuted_by names the refuting event and an evidence event that the refuting event refuted.
        const byId = new Map(g.events.map((e) => [e.event_id, e]));
        for (const [id, c] of Object.entries(s.claims)) {
          if (c.status === 'active') {
            expect(c.refuted_by, id).toBeNull();
            continue;
          }
          expect(c.claim_type).toBe('FACT');
          const by = c.refuted_by!;
          // via: an event it rests on, or its own record when a correction named it directly.
          expect([...c.evidence_event_ids, c.claim_event_id], id).toContain(by.via_event_id);
          expect(s.refuted_events[by.via_event_id]).toBe(by.refuting_event_id);
          expect(byId.get(by.refuting_event_id)?.event_type).toBe('WorldEvent.InformationPublished');
          expect(s.refuted_events[c.claim_event_id]).toBeDefined();
        }
      }),
      FC,
    );
  });
});

describe('one corrupted event is refused exactly where it is', () => {
  test('duplicated WakeStarted, dropped PermissionDecided, duplicated execution, seq gap, … refuse at their own seq, by the rule they break', () => {
    const kinds = new Map<string, number>();
    fc.assert(
      fc.property(streamArb, fc.nat(), (g, seed) => {
        for (const c of corruptions(g.drafts, seed)) {
          kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
          // The corrupted stream shares the valid stream's prefix, envelope for envelope.
          const events = sealCorruption(c, g.events);
          const bad = events[c.refuseAt]!;
          const before = deepFreeze(project(events.slice(0, c.refuseAt)));
          const hash = subjectStateHash(before);
          let refusal: unknown = null;
          try {
            P.apply(before, bad);
          } catch (error) {
            refusal = error;
          }
          expect(refusal, `${c.kind}: ${bad.event_type} at seq ${bad.seq} was applied`).toBeInstanceOf(ProjectionRefusal);
          expect((refusal as ProjectionRefusal).seq, c.kind).toBe(bad.seq);
          expect(c.codes, `${c.kind}: ${(refusal as ProjectionRefusal).message}`).toContain((refusal as ProjectionRefusal).refusalCode);
          expect(subjectStateHash(before)).toBe(hash);
          // Projecting the whole corrupted stream refuses at the same seq.
          let whole: unknown = null;
          try {
            project(events);
          } catch (error) {
            whole = error;
          }
          expect(whole, c.kind).toBeInstanceOf(ProjectionRefusal);
          expect((whole as ProjectionRefusal).seq, c.kind).toBe(bad.seq);
          expect((whole as ProjectionRefusal).eventType, c.kind).toBe(bad.event_type);
          expect((whole as ProjectionRefusal).refusalCode, c.kind).toBe((refusal as ProjectionRefusal).refusalCode);
        }
      }),
      FC,
    );
    for (const kind of [
      'WakeStarted twice',
      'WakeEnded for another wake',
      'ActionProposed while no wake',
      'PermissionDecided(allow) dropped before its execution',
      'execution of a denied proposal',
      'an allowed proposal executed twice',
      'an intent naming another permission event',
      'ToolSucceeded closing an unknown outcome',
      'a tool outcome reported twice',
      'OperatorResolved twice',
      'a plan accepted twice',
      'FACT without evidence',
      'INFERENCE without confidence',
      'a claim id used twice',
      'a journal entry id reused',
      'WakeStarted after EmergencyStopped',
      'SubjectInitialized twice',
      'seq gap',
    ]) {
      expect(kinds.get(kind) ?? 0, kind).toBeGreaterThan(0);
    }
  });
});
