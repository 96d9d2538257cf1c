// The Subject projector (DESIGN §5–§7, spec §9, §11, §12; RFC-0000 §12.5) on real
// envelopes: the two state machines follow their tables, every illegal transition is
// refused with a ProjectionRefusal that leaves the input state untouched (asserted by its
// reason code: given(…).when(…).thenRefused(code), test/support/projector-spec.ts), side
// effects are never duplicated, RECOVERING is read-only, checkpoints never write back,
// refutation propagates JTMS-style, budget overruns are counted, and ids like "constructor" work.
import { describe, expect, test } from 'vitest';
import { COGNITIVE_STATES, COGNITIVE_TABLE, cognitiveNext, type CognitiveState, type CognitiveTrigger } from '../../projector/cognition.js';
import { LIFECYCLE_TABLE, lifecycleAllows, type LifecycleState, type LifecycleTrigger } from '../../projector/lifecycle.js';
import { ProjectionRefusal } from '../../projector/projection.js';
import { subjectProjection, subjectStateHash } from '../../projector/subject-projection.js';
import { SUBJECT_LIMITS, SubjectState, type SubjectState as State } from '../../projector/subject-state.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import type { EventDraft } from '../../writer/protocol.js';
import { given } from '../support/projector-spec.js';
import { assertValidChain, BUDGET, chain, d, fullWake, standardRun, SUBJECT_ID, SubjectStream, type Budget } from '../support/subject-events.js';

const P = subjectProjection;

function project(events: readonly EventEnvelope[]): State {
  return P.applyAll(P.initial(), events);
}

function stateOf(s: SubjectStream): State {
  return project(s.events);
}

/** rec[key] if rec has it as an own key (rec.constructor would be Object's otherwise). */
function ownOf<T>(rec: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(rec, key) ? rec[key] : undefined;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function attempt(state: State, event: EventEnvelope): { ok: true; state: State } | { ok: false; error: unknown } {
  try {
    return { ok: true, state: P.apply(state, event) };
  } catch (error) {
    return { ok: false, error };
  }
}

function acceptedNext(s: SubjectStream, dr: EventDraft): State {
  const before = stateOf(s);
  const hash = subjectStateHash(before);
  const next = P.apply(deepFreeze(structuredClone(before)), s.push(dr));
  expect(subjectStateHash(before)).toBe(hash);
  return next;
}

const NO_OP_TYPES = new Set([
  'WorldEvent.MessageReceived',
  'WorldEvent.GoalChanged',
  'WorldEvent.FileChangedExternally',
  'WorldEvent.DistractorOccurred',
  'SystemEvent.AppendRejected',
  'SystemEvent.ChainHeadSigned',
  'SystemEvent.StoreSealed',
  'SystemEvent.ProcessRestarted',
  'ExperimentEvent.WakeScheduled',
  'ExperimentEvent.InterventionDelivered',
  'ExperimentEvent.CheckpointRecorded',
  'ExperimentEvent.BudgetLedgerRecorded',
]);

/** A subject with `n` finished wakes that each left a file intent open (the writer crashed, say). */
function withOpenIntents(n: number, budget: Budget = BUDGET): { s: SubjectStream; intents: EventEnvelope[] } {
  const s = new SubjectStream().open({ tasks: ['task-1'] });
  const intents: EventEnvelope[] = [];
  for (let i = 1; i <= n; i++) {
    s.push(d.wakeStarted(`old-${i}`, budget));
    s.push(d.modelAnswered(`old-${i}`));
    intents.push(s.fileIntent(`old-${i}-p`, `old-${i}.md`));
    s.push(d.wakeEnded(`old-${i}`, 'crashed'));
  }
  return { s, intents };
}

// ---------------------------------------------------------------------------------------

describe('a whole run of the standard scenario', () => {
  test('the builder makes a real chain: envelopes, payloads, seq, ids, links and hashes all check', () => {
    const run = standardRun();
    expect(() => assertValidChain(run.stream.events)).not.toThrow();
    // Tampering with any one envelope is caught by the same check.
    const tampered = run.stream.events.map((e, i) => (i === 5 ? { ...e, payload: { ...e.payload, rationale: 'forged' } } : e));
    expect(() => assertValidChain(tampered)).toThrow(/event 5 .*payload_hash/);
    const gapped = chain(run.stream.drafts, SUBJECT_ID, (i) => (i < 7 ? i + 1 : i + 2));
    expect(() => assertValidChain(gapped)).toThrow(/event 7 .*seq 9/);
  });

  test('projects to the expected subject, parses with the schema, and every prefix does too', () => {
    const run = standardRun();
    const events = run.stream.events;
    let state = P.initial();
    for (const event of events) {
      state = P.apply(state, event);
      expect(SubjectState.safeParse(state).success).toBe(true);
      expect(state.last_applied_event_seq).toBe(event.seq);
    }
    expect(state).toEqual(project(events));
    expect(SubjectState.parse(state)).toEqual(state);
    expect(state.subject_id).toBe(SUBJECT_ID);
    expect(state.identity?.name).toBe('Ada');
    expect(state.lifecycle_state).toBe('DORMANT');
    expect(state.cognitive_state).toBe('IDLE');
    expect(state.current_wake_id).toBeNull();
    expect(state.open_intents).toEqual({});
    expect(state.journal.entries).toBe(2);
    expect(Object.keys(state.journal.index).sort()).toEqual(['entry-0', 'entry-1']);
    expect(state.journal.index['entry-1']).toBe(run.journal.seq);
    expect(state.task_board['task-3']).toEqual({ title: 'Chase the dataset', status: 'todo', priority: 2, depends_on: [] });
    // wake 1 accepted its plan: goal-wake-1 active, goal-1 superseded, steps on the board and in the plan.
    expect(state.goals).toEqual([
      { goal_id: 'goal-1', description: 'Prepare the Friday report', deadline_at: '2026-07-23T17:00:00.000Z', status: 'superseded' },
      { goal_id: 'goal-wake-1', description: 'Goal goal-wake-1', deadline_at: null, status: 'active' },
    ]);
    expect(state.current_state.current_goal_id).toBe('goal-wake-1');
    expect(state.current_plan).toEqual(['wake-1-step-1', 'wake-1-step-2']);
    expect(Object.keys(state.task_board)).toEqual(expect.arrayContaining(['task-1', 'task-2', 'wake-1-step-1', 'wake-1-step-2', 'task-3']));
    expect(state.task_board).not.toHaveProperty('wake-2-step-1');
    expect(state.plan_revisions).toEqual({ accepted: 1, rejected: 1 });
    expect(state.plan_proposals).toEqual({});
    expect(state.current_state.waiting_condition).toBe('reply to wake-2');
    // The FACT citing the corrected message is refuted; the one citing the tool result is not.
    expect(state.claims['fact-dataset']?.status).toBe('refuted');
    expect(state.claims['fact-file']?.status).toBe('active');
    expect(state.aggregate_version).toBe(events.filter((e) => !NO_OP_TYPES.has(e.event_type)).length);
  });

  test('cognition and lifecycle move through one wake as DESIGN §6 describes', () => {
    const s = new SubjectStream().open();
    const m = s.push(d.message());
    const ids = fullWake(s, { wakeId: 'w1', factEvidence: [m.event_id], claimId: 'c1', acceptPlan: true });
    const trail: [string, string, string][] = [];
    let state = project(s.events.slice(0, ids.wakeStarted.seq - 1));
    expect([state.lifecycle_state, state.cognitive_state]).toEqual(['DORMANT', 'IDLE']);
    for (const event of s.events.slice(ids.wakeStarted.seq - 1)) {
      state = P.apply(state, event);
      const decision = event.event_type === 'ActionEvent.PermissionDecided' ? `:${String(event.payload.decision)}` : '';
      trail.push([`${event.event_type}${decision}`, state.lifecycle_state, state.cognitive_state]);
    }
    expect(trail).toEqual([
      ['ExperimentEvent.WakeStarted', 'AWAKE', 'OBSERVING'],
      ['ModelOutputEvent.ModelAnswered', 'AWAKE', 'DELIBERATING'],
      ['ActionEvent.ActionProposed', 'AWAKE', 'AWAITING_PERMISSION'],
      ['ActionEvent.PermissionDecided:allow', 'AWAKE', 'EXECUTING'],
      ['ActionEvent.ExecutionIntentRecorded', 'AWAKE', 'EXECUTING'],
      ['ActionEvent.ToolSucceeded', 'AWAKE', 'REFLECTING'],
      ['MemoryEvent.ClaimRecorded', 'AWAKE', 'REFLECTING'],
      ['MemoryEvent.FocusUpdated', 'AWAKE', 'REFLECTING'],
      ['PlanEvent.PlanRevisionProposed', 'AWAKE', 'REFLECTING'],
      ['PlanEvent.PlanRevisionAccepted', 'AWAKE', 'REFLECTING'],
      ['ExperimentEvent.WakeEnded', 'DORMANT', 'IDLE'],
    ]);
    expect(state.resource_budget.wake_id).toBe('w1');
    expect(state.resource_budget.remaining).toEqual({ model_calls: BUDGET.model_calls - 1, tokens: BUDGET.tokens - 150, tool_calls: BUDGET.tool_calls - 1 });
    expect(state.proposals).toEqual({});
  });

  test('apply does not mutate its input, applyAll copies once per batch, evolveInPlace evolves the given state', () => {
    const events = standardRun().stream.events;
    const prefix = project(events.slice(0, 20));
    const frozen = deepFreeze(structuredClone(prefix));
    const viaApply = events.slice(20).reduce((st, e) => P.apply(st, e), frozen);
    const viaAll = P.applyAll(frozen, events.slice(20));
    const inPlace = structuredClone(prefix);
    for (const e of events.slice(20)) subjectProjection.applyInPlace(inPlace, e);
    expect(frozen).toEqual(prefix);
    expect(viaAll).toEqual(viaApply);
    expect(inPlace).toEqual(viaApply);
    expect(subjectStateHash(inPlace)).toBe(subjectStateHash(project(events)));
    // A batch refused at its last event leaves the input as it was.
    const bad = chain([...standardRun().stream.drafts, d.wakeEnded('wake-9')]);
    const hash = subjectStateHash(prefix);
    expect(() => P.applyAll(prefix, bad.slice(20))).toThrow(ProjectionRefusal);
    expect(subjectStateHash(prefix)).toBe(hash);
  });
});

// ---------------------------------------------------------------------------------------

describe('the cognitive state machine follows its table (spec §11.2)', () => {
  interface Context {
    readonly s: SubjectStream;
    readonly wakeId: string | null;
  }

  // Four old wakes leave four file intents open. In wake "w" the subject gets three
  // allowed but not yet executed proposals (task board, journal, files), by letting
  // old intents complete while it is EXECUTING, and a pending plan proposal.
  function contexts(): { byState: Record<CognitiveState, Context>; intents: EventEnvelope[]; pfPermission: EventEnvelope } {
    const { s, intents } = withOpenIntents(4);
    s.push(d.wakeStarted('w', { model_calls: 10, tokens: 10_000, tool_calls: 10 }));
    s.push(d.modelAnswered('w'));
    s.push(d.planProposed('plan-a'));
    const allowThenReflect = (id: string, tool: 'files' | 'task_board' | 'journal', intent: EventEnvelope): EventEnvelope => {
      s.push(d.actionProposed(id, tool, 'op'));
      const permission = s.push(d.permission(id, 'allow'));
      s.push(d.toolSucceeded(intent.event_id));
      return permission;
    };
    allowThenReflect('Pt', 'task_board', intents[0]!);
    allowThenReflect('Pj', 'journal', intents[1]!);
    const pfPermission = allowThenReflect('Pf', 'files', intents[2]!);
    const reflecting = s;
    const deliberating = s.fork();
    deliberating.push(d.modelAnswered('w'));
    const awaiting = s.fork();
    awaiting.push(d.actionProposed('Pq', 'files', 'write', { path: 'q.md' }));
    const executing = awaiting.fork();
    executing.push(d.permission('Pq', 'allow'));
    const idle = s.fork();
    idle.push(d.wakeEnded('w'));
    const observing = idle.fork();
    observing.push(d.wakeStarted('w2'));
    const byState: Record<CognitiveState, Context> = {
      IDLE: { s: idle, wakeId: null },
      OBSERVING: { s: observing, wakeId: 'w2' },
      DELIBERATING: { s: deliberating, wakeId: 'w' },
      AWAITING_PERMISSION: { s: awaiting, wakeId: 'w' },
      EXECUTING: { s: executing, wakeId: 'w' },
      REFLECTING: { s: reflecting, wakeId: 'w' },
    };
    return { byState, intents, pfPermission };
  }

  test('every (state, trigger) pair: legal per the table ⇔ applied, to the state the table names', () => {
    const { byState, intents, pfPermission } = contexts();
    const openIntent = intents[3]!.event_id;
    const triggers: Record<CognitiveTrigger, (c: Context) => EventDraft> = {
      'ExperimentEvent.WakeStarted': () => d.wakeStarted('w-new'),
      'ExperimentEvent.WakeEnded': (c) => d.wakeEnded(c.wakeId ?? 'w'),
      'ModelOutputEvent.ModelAnswered': (c) => d.modelAnswered(c.wakeId ?? 'w'),
      'ModelOutputEvent.ModelCallFailed': (c) => d.modelCallFailed(c.wakeId ?? 'w'),
      'ActionEvent.ActionProposed': () => d.actionProposed('p-new', 'files', 'write', { path: 'new.md' }),
      'ActionEvent.PermissionDecided:allow': () => d.permission('Pq', 'allow'),
      'ActionEvent.PermissionDecided:deny': () => d.permission('Pq', 'deny'),
      'ActionEvent.ExecutionIntentRecorded': () => d.intent('Pf', pfPermission.event_id, 'f.md'),
      'ActionEvent.ToolSucceeded': () => d.toolSucceeded(openIntent),
      'ActionEvent.ToolFailed': () => d.toolFailed(openIntent),
      'ActionEvent.ToolOutcomeUnknown': () => d.toolOutcomeUnknown(openIntent),
      'MemoryEvent.TaskBoardChanged': () => d.taskChanged('Pt', 'task-new', 'add'),
      'MemoryEvent.JournalEntryWritten': () => d.journal('Pj', 'entry-new'),
      'MemoryEvent.ClaimRecorded': () => d.claim('claim-new', 'PLAN', []),
      'MemoryEvent.FocusUpdated': () => d.focus(),
      'PlanEvent.PlanRevisionProposed': () => d.planProposed('plan-new'),
      'PlanEvent.PlanRevisionAccepted': () => d.planAccepted('plan-a'),
      'PlanEvent.PlanRevisionRejected': () => d.planRejected('plan-a'),
    };
    const toolOutcomes = new Set<CognitiveTrigger>(['ActionEvent.ToolSucceeded', 'ActionEvent.ToolFailed', 'ActionEvent.ToolOutcomeUnknown']);
    const seen: string[] = [];
    for (const from of COGNITIVE_STATES) {
      const c = byState[from];
      const before = stateOf(c.s);
      expect(before.cognitive_state).toBe(from);
      for (const [trigger, build] of Object.entries(triggers) as [CognitiveTrigger, (c: Context) => EventDraft][]) {
        const event = c.s.peek(build(c));
        const expected = cognitiveNext(from, trigger);
        const outcome = attempt(before, event);
        const label = `${from} --${trigger}-->`;
        if (toolOutcomes.has(trigger) && from !== 'EXECUTING') {
          // Tool outcomes reconcile silently outside the executing step (after a restart, say).
          expect(outcome.ok, label).toBe(true);
          if (outcome.ok) expect(outcome.state.cognitive_state, label).toBe(from);
        } else if (expected === null) {
          expect(outcome.ok, `${label} should be refused`).toBe(false);
          if (!outcome.ok) expect(outcome.error, label).toBeInstanceOf(ProjectionRefusal);
        } else {
          expect(outcome.ok, `${label} ${outcome.ok ? '' : String(outcome.error)}`).toBe(true);
          if (outcome.ok) expect(outcome.state.cognitive_state, label).toBe(expected);
          seen.push(`${from}|${trigger}`);
        }
      }
      expect(stateOf(c.s)).toEqual(before);
    }
    // Every row of the table was exercised.
    const rows = COGNITIVE_TABLE.flatMap(([froms, trigger]) => froms.map((f) => `${f}|${trigger}`));
    expect(new Set(seen)).toEqual(new Set(rows));
  });

  test('an illegal cognitive transition with every other precondition met names the transition', () => {
    const { byState } = contexts();
    // In DELIBERATING the task-board proposal Pt is allowed and unexecuted: only the table forbids it.
    given(byState.DELIBERATING.s).when(d.taskChanged('Pt', 'task-new', 'add')).thenRefused('illegal_cognitive_transition');
    given(byState.REFLECTING.s).when(d.journal('Pj', 'entry-new')).thenRefused('illegal_cognitive_transition');
    given(byState.AWAITING_PERMISSION.s).when(d.claim('c', 'PLAN', [])).thenRefused('illegal_cognitive_transition');
    given(byState.OBSERVING.s).when(d.actionProposed('p', 'files', 'write')).thenRefused('illegal_cognitive_transition');
    given(byState.EXECUTING.s).when(d.modelAnswered('w')).thenRefused('illegal_cognitive_transition');
  });
});

describe('the lifecycle state machine follows its table (spec §11.1)', () => {
  interface Context {
    readonly name: string;
    readonly s: SubjectStream;
    readonly wakeId: string | null;
  }

  function contexts(): { list: Context[]; intents: EventEnvelope[] } {
    const { s: base, intents } = withOpenIntents(2);
    const created = new SubjectStream();
    created.push(d.storeOpened());
    const awake = base.fork();
    awake.push(d.wakeStarted('w'));
    const recoveringOut = base.fork();
    recoveringOut.push(d.toolOutcomeUnknown(intents[0]!.event_id));
    const recoveringIn = awake.fork();
    recoveringIn.push(d.toolOutcomeUnknown(intents[0]!.event_id));
    const pausedDormant = base.fork();
    pausedDormant.push(d.paused());
    const pausedRecovering = recoveringOut.fork();
    pausedRecovering.push(d.paused());
    const stopped = base.fork();
    stopped.push(d.emergencyStopped());
    const stoppedAwake = awake.fork();
    stoppedAwake.push(d.emergencyStopped());
    const stoppedRecovering = recoveringOut.fork();
    stoppedRecovering.push(d.emergencyStopped());
    const pausedAwake = awake.fork();
    pausedAwake.push(d.paused());
    return {
      intents,
      list: [
        { name: 'CREATED', s: created, wakeId: null },
        { name: 'DORMANT', s: base, wakeId: null },
        { name: 'AWAKE', s: awake, wakeId: 'w' },
        { name: 'RECOVERING outside a wake', s: recoveringOut, wakeId: null },
        { name: 'RECOVERING inside a wake', s: recoveringIn, wakeId: 'w' },
        { name: 'PAUSED from DORMANT', s: pausedDormant, wakeId: null },
        { name: 'PAUSED from RECOVERING', s: pausedRecovering, wakeId: null },
        { name: 'PAUSED during a wake', s: pausedAwake, wakeId: 'w' },
        { name: 'STOPPED', s: stopped, wakeId: null },
        { name: 'STOPPED during a wake', s: stoppedAwake, wakeId: 'w' },
        { name: 'STOPPED with an unknown outcome open', s: stoppedRecovering, wakeId: null },
      ],
    };
  }

  test('accepted ⇒ a row of the table; no row ⇒ refused; every row is reachable', () => {
    const { list, intents } = contexts();
    const triggers: Record<LifecycleTrigger, (c: Context) => EventDraft> = {
      'SystemEvent.SubjectInitialized': () => d.subjectInitialized(),
      'ExperimentEvent.WakeStarted': () => d.wakeStarted('w-new'),
      'ExperimentEvent.WakeEnded': (c) => d.wakeEnded(c.wakeId ?? 'w'),
      'ActionEvent.ToolOutcomeUnknown': () => d.toolOutcomeUnknown(intents[1]!.event_id),
      'SystemEvent.OperatorResolved': () => d.operatorResolved(intents[0]!.event_id),
      'SystemEvent.Paused': () => d.paused(),
      'SystemEvent.Resumed': () => d.resumed(),
      'SystemEvent.EmergencyStopped': () => d.emergencyStopped(),
    };
    const hasRow = (from: LifecycleState, trigger: LifecycleTrigger): boolean => LIFECYCLE_TABLE.some(([f, t]) => f === from && t === trigger);
    const reached = new Map<string, string>();
    for (const c of list) {
      const before = stateOf(c.s);
      const from = before.lifecycle_state;
      for (const [trigger, build] of Object.entries(triggers) as [LifecycleTrigger, (c: Context) => EventDraft][]) {
        const outcome = attempt(before, c.s.peek(build(c)));
        const label = `${c.name}: ${from} --${trigger}-->`;
        if (outcome.ok) {
          expect(lifecycleAllows(from, trigger, outcome.state.lifecycle_state), `${label} ${outcome.state.lifecycle_state} is not in the table`).toBe(true);
          reached.set(`${from}|${trigger}|${outcome.state.lifecycle_state}`, c.name);
        } else {
          expect(outcome.error, label).toBeInstanceOf(ProjectionRefusal);
        }
        if (!hasRow(from, trigger)) expect(outcome.ok, `${label} has no row and must be refused`).toBe(false);
      }
    }
    // Every (from, trigger, to) the table allows is reached by some context, except
    // OperatorResolved staying RECOVERING (covered in the recovery tests below).
    const rows = LIFECYCLE_TABLE.flatMap(([from, trigger, tos]) => tos.map((to) => `${from}|${trigger}|${to}`)).filter((r) => r !== 'RECOVERING|SystemEvent.OperatorResolved|RECOVERING');
    expect([...reached.keys()].sort()).toEqual(rows.sort());
  });
});

// ---------------------------------------------------------------------------------------

describe('illegal transitions are refused and the input state is untouched', () => {
  function awake(): SubjectStream {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    s.push(d.modelAnswered('w1'));
    return s;
  }

  test('WakeStarted twice', () => {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    given(s).when(d.wakeStarted('w2')).thenRefused('wake_not_ended');
    given(s).when(d.wakeStarted('w1')).thenRefused('wake_not_ended');
  });

  test('WakeEnded for another wake, or with no wake in progress', () => {
    const s = awake();
    given(s).when(d.wakeEnded('w2')).thenRefused('other_wake');
    s.push(d.wakeEnded('w1'));
    given(s).when(d.wakeEnded('w1')).thenRefused('other_wake');
  });

  test('runtime events while DORMANT: ActionProposed, ModelAnswered, ClaimRecorded, FocusUpdated, plan events', () => {
    const s = new SubjectStream().open();
    const m = s.push(d.message());
    given(s).when(d.actionProposed('p1', 'files', 'write')).thenRefused('no_wake');
    given(s).when(d.modelAnswered('w1')).thenRefused('no_wake');
    given(s).when(d.claim('c1', 'FACT', [m.event_id])).thenRefused('no_wake');
    given(s).when(d.focus()).thenRefused('no_wake');
    given(s).when(d.planProposed('plan-1')).thenRefused('no_wake');
    given(s).when(d.permission('p1', 'allow')).thenRefused('no_wake');
  });

  test('a model call for another wake', () => {
    given(awake()).when(d.modelAnswered('w0')).thenRefused('other_wake');
  });

  test('ExecutionIntentRecorded must name the permission decision of its proposal', () => {
    const s = awake();
    s.push(d.actionProposed('p1', 'files', 'write', { path: 'a.md' }));
    const allow = s.push(d.permission('p1', 'allow'));
    given(s).when(d.intent('p1', s.events[s.events.length - 2]!.event_id)).thenRefused('not_the_decision');
    given(s).when(d.intent('p1', '00000000-0000-8000-8000-000000000000')).thenRefused('not_the_decision');
    acceptedNext(s, d.intent('p1', allow.event_id));
  });

  test('ExecutionIntentRecorded without an allowed PermissionDecided (none, pending, denied)', () => {
    const s = awake();
    given(s).when(d.intent('p-unknown', s.nextEventId)).thenRefused('unknown_proposal');
    s.push(d.actionProposed('p1', 'files', 'write', { path: 'a.md' }));
    given(s).when(d.intent('p1', s.nextEventId)).thenRefused('proposal_not_allowed');
    const denied = s.push(d.permission('p1', 'deny'));
    given(s).when(d.intent('p1', denied.event_id)).thenRefused('proposal_not_allowed');
    given(s).when(d.taskChanged('p1', 'task-9', 'add')).thenRefused('wrong_tool');
  });

  test('executing the same allowed proposal twice would duplicate a side effect: files, journal, task board', () => {
    const s = awake();
    const intent = s.fileIntent('p1');
    given(s).when(d.intent('p1', intent.event_id)).thenRefused('already_executed');
    s.push(d.toolSucceeded(intent.event_id));
    given(s).when(d.toolSucceeded(intent.event_id)).thenRefused('no_open_intent');
    s.push(d.actionProposed('p2', 'journal', 'append'));
    s.push(d.permission('p2', 'allow'));
    s.push(d.journal('p2', 'entry-a'));
    given(s).when(d.journal('p2', 'entry-b')).thenRefused('already_executed');
    s.push(d.actionProposed('p3', 'task_board', 'change'));
    s.push(d.permission('p3', 'allow'));
    s.push(d.taskChanged('p3', 'task-9', 'add'));
    given(s).when(d.taskChanged('p3', 'task-9', 'update')).thenRefused('already_executed');
  });

  test('a second execution is refused for its proposal even when cognition would allow it', () => {
    // allow p1 (task board) and execute it; allow p2 so the subject is EXECUTING again; re-run p1.
    const s = awake();
    s.allowedOp('p1', 'task_board', d.taskChanged('p1', 'task-9', 'add'));
    s.push(d.actionProposed('p2', 'task_board', 'change'));
    s.push(d.permission('p2', 'allow'));
    expect(stateOf(s).cognitive_state).toBe('EXECUTING');
    given(s).when(d.taskChanged('p1', 'task-10', 'add')).thenRefused('already_executed');
  });

  test('allow with no tool budget left (the gate must deny); a deny is still recorded', () => {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1', { model_calls: 5, tokens: 1_000, tool_calls: 1 }));
    s.push(d.modelAnswered('w1'));
    const intent = s.fileIntent('p1');
    s.push(d.toolSucceeded(intent.event_id));
    s.push(d.actionProposed('p2', 'files', 'write', { path: 'b.md' }));
    expect(stateOf(s).resource_budget.remaining.tool_calls).toBe(0);
    given(s).when(d.permission('p2', 'allow')).thenRefused('no_tool_calls_left');
    const after = acceptedNext(s, d.permission('p2', 'deny'));
    expect(after.proposals.p2?.decision).toBe('deny');
    expect(after.resource_budget.overruns.tool_calls).toBe(0);
  });

  test('PermissionDecided must say truthfully whether the action was denied before', () => {
    const s = awake();
    s.push(d.actionProposed('p1', 'files', 'delete', { path: 'x.md' }));
    given(s).when(d.permission('p1', 'deny', true)).thenRefused('repeat_of_denied_untrue');
    s.push(d.permission('p1', 'deny'));
    s.push(d.actionProposed('p2', 'files', 'delete', { path: 'x.md' }));
    given(s).when(d.permission('p2', 'deny', false)).thenRefused('repeat_of_denied_untrue');
    const state = acceptedNext(s, d.permission('p2', 'deny', true));
    expect(Object.values(state.denied_actions)).toEqual([{ proposal_id: 'p1', seq: s.events[s.events.length - 3]!.seq, repeats: 1 }]);
    given(s).when(d.permission('p2', 'allow', true)).thenRefused('proposal_not_pending');
  });

  test('TaskBoardChanged: add of an existing task, update/remove of a missing one', () => {
    const s = awake();
    s.push(d.actionProposed('p1', 'task_board', 'change'));
    s.push(d.permission('p1', 'allow'));
    given(s).when(d.taskChanged('p1', 'task-1', 'add')).thenRefused('id_exists');
    given(s).when(d.taskChanged('p1', 'task-missing', 'update', { status: 'doing' })).thenRefused('unknown_task');
    given(s).when(d.taskChanged('p1', 'task-missing', 'remove')).thenRefused('unknown_task');
    given(s).when(d.taskChanged('p1', 'task-new', 'add', { title: null })).thenRefused('task_without_title');
    const state = acceptedNext(s, d.taskChanged('p1', 'task-1', 'complete'));
    expect(state.task_board['task-1']?.status).toBe('done');
  });

  test('JournalEntryWritten reusing an entry id (including the first page): the journal is append-only', () => {
    const s = awake();
    s.push(d.actionProposed('p1', 'journal', 'append'));
    s.push(d.permission('p1', 'allow'));
    given(s).when(d.journal('p1', 'entry-0')).thenRefused('id_exists');
    s.push(d.journal('p1', 'entry-1'));
    s.push(d.actionProposed('p2', 'journal', 'append'));
    s.push(d.permission('p2', 'allow'));
    given(s).when(d.journal('p2', 'entry-1')).thenRefused('id_exists');
  });

  test('FACT without evidence, INFERENCE without confidence, a claim id used twice', () => {
    const s = awake();
    given(s).when(d.claim('c1', 'FACT', [])).thenRefused('fact_without_evidence');
    given(s).when(d.claim('c1', 'INFERENCE', [], { confidence: null })).thenRefused('inference_without_confidence');
    s.push(d.claim('c1', 'PLAN', []));
    given(s).when(d.claim('c1', 'PLAN', [])).thenRefused('id_exists');
  });

  test('plan decisions need a pending proposal; a proposal id cannot be reused while pending', () => {
    const s = awake();
    given(s).when(d.planAccepted('nope')).thenRefused('unknown_plan_proposal');
    given(s).when(d.planRejected('nope')).thenRefused('unknown_plan_proposal');
    s.push(d.planProposed('plan-1'));
    given(s).when(d.planProposed('plan-1')).thenRefused('id_exists');
    s.push(d.planRejected('plan-1'));
    given(s).when(d.planAccepted('plan-1')).thenRefused('unknown_plan_proposal');
  });

  test('nothing the subject does is accepted after EmergencyStopped (only an operator resumes it)', () => {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    s.push(d.modelAnswered('w1'));
    s.push(d.actionProposed('p1', 'files', 'write'));
    const stopped = acceptedNext(s, d.emergencyStopped());
    expect([stopped.lifecycle_state, stopped.cognitive_state, stopped.current_wake_id]).toEqual(['STOPPED', 'IDLE', null]);
    given(s).when(d.wakeStarted('w2')).thenRefused('illegal_lifecycle_transition');
    given(s).when(d.wakeEnded('w1')).thenRefused('other_wake');
    given(s).when(d.modelAnswered('w1')).thenRefused('no_wake');
    given(s).when(d.actionProposed('p2', 'files', 'write')).thenRefused('no_wake');
    given(s).when(d.permission('p1', 'allow')).thenRefused('no_wake');
    given(s).when(d.claim('c1', 'PLAN', [])).thenRefused('no_wake');
    given(s).when(d.subjectInitialized()).thenRefused('illegal_lifecycle_transition');
    given(s).when(d.paused()).thenRefused('illegal_lifecycle_transition');
    given(s).when(d.emergencyStopped()).thenRefused('illegal_lifecycle_transition');
    // The world goes on and is recorded; it does not wake the subject.
    const after = acceptedNext(s, d.message());
    expect(after.lifecycle_state).toBe('STOPPED');
  });

  test('seq must be contiguous: a gap, a repeat or a step back is refused', () => {
    const events = standardRun().stream.events;
    const first10 = events.slice(0, 10);
    const drafts = standardRun().stream.drafts;
    const gapped = chain(drafts, SUBJECT_ID, (i) => (i < 10 ? i + 1 : i + 2));
    expect(given(first10).when(gapped[10]!).thenRefused('seq_not_next', /expected seq 11/).seq).toBe(12);
    const repeated = chain(drafts, SUBJECT_ID, (i) => (i < 10 ? i + 1 : i));
    expect(given(first10).when(repeated[10]!).thenRefused('seq_not_next', /expected seq 11/).seq).toBe(10);
    expect(given(first10).when(events[3]!).thenRefused('seq_not_next', /expected seq 11/).seq).toBe(4);
    // An empty state takes seq 1 only.
    given([]).when(events[1]!).thenRefused('seq_not_next', /expected seq 1/);
  });

  test('StoreOpened only at seq 1; SubjectInitialized only once', () => {
    const s = new SubjectStream().open();
    given(s).when(d.storeOpened()).thenRefused('store_opened_not_first');
    given(s).when(d.subjectInitialized()).thenRefused('illegal_lifecycle_transition');
    const fresh = new SubjectStream();
    fresh.push(d.storeOpened());
    given(fresh).when(d.subjectInitialized({ tasks: ['t', 't'] })).thenRefused('id_exists');
  });

  test('an event type the catalogue lacks is refused', () => {
    const s = new SubjectStream().open();
    const bogus = s.peek({ ...d.message(), event_type: 'WorldEvent.Earthquake' });
    given(s).when(bogus).thenRefused('unknown_event_type');
  });
});

describe('a bound of SUBJECT_LIMITS is refused when passed, not stretched (limit_exceeded)', () => {
  test(`a wake takes ${SUBJECT_LIMITS.maxProposalsPerWake} proposals and refuses the next; a new wake takes them again`, () => {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    s.push(d.modelAnswered('w1'));
    for (let i = 0; i < SUBJECT_LIMITS.maxProposalsPerWake; i++) {
      s.push(d.actionProposed(`p${i}`, 'files', 'write', { path: `f${i}.md` }));
      s.push(d.permission(`p${i}`, 'deny'));
    }
    expect(Object.keys(stateOf(s).proposals)).toHaveLength(SUBJECT_LIMITS.maxProposalsPerWake);
    given(s).when(d.actionProposed('one-more', 'files', 'write', { path: 'more.md' })).thenRefused('limit_exceeded', new RegExp(`more than ${SUBJECT_LIMITS.maxProposalsPerWake} proposals in one wake`));
    s.push(d.wakeEnded('w1'));
    s.push(d.wakeStarted('w2'));
    s.push(d.modelAnswered('w2'));
    expect(given(s).when(d.actionProposed('one-more', 'files', 'write', { path: 'more.md' })).thenAccepted().proposals['one-more']?.decision).toBe('pending');
  });
});

// ---------------------------------------------------------------------------------------

describe('unconfirmable side effects: RECOVERING is read-only until an operator resolves it (DESIGN §7)', () => {
  test('ToolOutcomeUnknown during a wake → RECOVERING: no allow, no execution, no tool op; thinking and denials go on', () => {
    const { s, intents } = withOpenIntents(1);
    s.push(d.wakeStarted('w'));
    s.push(d.modelAnswered('w'));
    s.push(d.actionProposed('pf', 'files', 'write', { path: 'f.md' }));
    const pfAllow = s.push(d.permission('pf', 'allow'));
    const recovering = acceptedNext(s, d.toolOutcomeUnknown(intents[0]!.event_id));
    expect(recovering.lifecycle_state).toBe('RECOVERING');
    expect(recovering.open_intents[intents[0]!.event_id]?.outcome).toBe('unknown');
    // pf was allowed before the outcome became unknown; executing it now is still refused.
    given(s).when(d.intent('pf', pfAllow.event_id)).thenRefused('read_only');
    s.push(d.modelAnswered('w'));
    s.push(d.actionProposed('pt', 'task_board', 'change'));
    given(s).when(d.permission('pt', 'allow')).thenRefused('read_only');
    s.push(d.permission('pt', 'deny'));
    s.push(d.claim('c1', 'PLAN', []));
    given(s).when(d.taskChanged('pt', 'task-x', 'add')).thenRefused('read_only');
    given(s).when(d.toolReconciled(intents[0]!.event_id)).thenRefused('intent_not_pending');
    // Wakes still end and start on schedule while recovering.
    expect(acceptedNext(s, d.wakeEnded('w')).lifecycle_state).toBe('RECOVERING');
    const next = acceptedNext(s, d.wakeStarted('w2'));
    expect([next.lifecycle_state, next.cognitive_state, next.current_wake_id]).toEqual(['RECOVERING', 'OBSERVING', 'w2']);
    // The operator resolves it mid-wake: back to AWAKE, and side effects work again.
    const resolved = acceptedNext(s, d.operatorResolved(intents[0]!.event_id, 'did_not_happen'));
    expect(resolved.lifecycle_state).toBe('AWAKE');
    expect(resolved.open_intents).toEqual({});
    s.push(d.modelAnswered('w2'));
    const again = s.fileIntent('pf2');
    expect(acceptedNext(s, d.toolSucceeded(again.event_id)).open_intents).toEqual({});
  });

  test('resolution outside a wake returns to DORMANT; with a second unknown outcome it stays RECOVERING', () => {
    const { s, intents } = withOpenIntents(2);
    s.push(d.toolOutcomeUnknown(intents[0]!.event_id));
    expect(acceptedNext(s, d.toolOutcomeUnknown(intents[1]!.event_id)).lifecycle_state).toBe('RECOVERING');
    given(s).when(d.operatorResolved('00000000-0000-8000-8000-000000000000')).thenRefused('nothing_to_resolve');
    expect(acceptedNext(s, d.operatorResolved(intents[1]!.event_id)).lifecycle_state).toBe('RECOVERING');
    given(s).when(d.operatorResolved(intents[1]!.event_id)).thenRefused('nothing_to_resolve');
    expect(acceptedNext(s, d.operatorResolved(intents[0]!.event_id)).lifecycle_state).toBe('DORMANT');
  });

  test('an operator cannot "resolve" an intent that is merely pending', () => {
    const { s, intents } = withOpenIntents(1);
    given(s).when(d.operatorResolved(intents[0]!.event_id)).thenRefused('nothing_to_resolve');
    // ...which the runtime reconciles itself after a restart.
    expect(acceptedNext(s, d.toolReconciled(intents[0]!.event_id)).open_intents).toEqual({});
  });

  test('a pause while recovering resumes to RECOVERING', () => {
    const { s, intents } = withOpenIntents(1);
    s.push(d.toolOutcomeUnknown(intents[0]!.event_id));
    s.push(d.paused());
    given(s).when(d.wakeStarted('w')).thenRefused('illegal_lifecycle_transition');
    expect(acceptedNext(s, d.resumed()).lifecycle_state).toBe('RECOVERING');
  });

  // Was a bug at commit ca1d847 (subject-projection.ts closeIntent): ToolSucceeded/ToolFailed
  // closed ANY open intent, an unknown one included, leaving the subject RECOVERING with
  // nothing an operator could resolve. DESIGN §7: only an operator event resolves it.
  test('ToolSucceeded/ToolFailed cannot silently close an intent whose outcome is unknown; the operator still can', () => {
    const { s, intents } = withOpenIntents(1);
    s.push(d.toolOutcomeUnknown(intents[0]!.event_id));
    given(s).when(d.toolSucceeded(intents[0]!.event_id)).thenRefused('outcome_unknown');
    given(s).when(d.toolFailed(intents[0]!.event_id)).thenRefused('outcome_unknown');
    expect(acceptedNext(s, d.operatorResolved(intents[0]!.event_id)).lifecycle_state).toBe('DORMANT');
  });
});

describe('pauses', () => {
  test('Paused/Resumed between wakes; nothing wakes a paused subject', () => {
    const s = new SubjectStream().open();
    expect(acceptedNext(s, d.paused()).lifecycle_state).toBe('PAUSED');
    given(s).when(d.wakeStarted('w1')).thenRefused('illegal_lifecycle_transition');
    given(s).when(d.paused()).thenRefused('illegal_lifecycle_transition');
    s.push(d.message());
    expect(acceptedNext(s, d.resumed()).lifecycle_state).toBe('DORMANT');
    given(s).when(d.resumed()).thenRefused('illegal_lifecycle_transition');
    expect(acceptedNext(s, d.wakeStarted('w1')).lifecycle_state).toBe('AWAKE');
  });

  // Was a bug at commit ca1d847 (lifecycle.ts PAUSED rows, subject-projection.ts Resumed and
  // WakeEnded): Resumed went to DORMANT keeping current_wake_id, and neither PAUSED nor
  // DORMANT took WakeEnded, so a wake paused midway could never end and no wake could
  // start again; only EmergencyStopped moved on. Both orderings below must work.
  test('a wake paused midway ends after (or while) paused, and the next wake starts', () => {
    const base = new SubjectStream().open();
    base.push(d.wakeStarted('w1'));
    base.push(d.modelAnswered('w1'));
    base.push(d.paused());
    const endAfterResume = base.fork();
    const endWhilePaused = base.fork();
    const tryAll = (s: SubjectStream, drafts: EventDraft[]): boolean => {
      let state = stateOf(s);
      for (const dr of drafts) {
        const outcome = attempt(state, s.push(dr));
        if (!outcome.ok) return false;
        state = outcome.state;
      }
      return state.lifecycle_state === 'AWAKE' && state.current_wake_id === 'w2';
    };
    expect(tryAll(endAfterResume, [d.resumed(), d.wakeEnded('w1', 'stopped'), d.wakeStarted('w2')])).toBe(true);
    expect(tryAll(endWhilePaused, [d.wakeEnded('w1', 'stopped'), d.resumed(), d.wakeStarted('w2')])).toBe(true);
  });

  test('a subject paused inside a wake does not act; resuming returns it to the wake', () => {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1'));
    s.push(d.modelAnswered('w1'));
    const paused = acceptedNext(s, d.paused());
    expect([paused.lifecycle_state, paused.cognitive_state, paused.current_wake_id]).toEqual(['PAUSED', 'DELIBERATING', 'w1']);
    given(s).when(d.modelAnswered('w1')).thenRefused('subject_not_acting');
    given(s).when(d.actionProposed('p1', 'files', 'write')).thenRefused('subject_not_acting');
    given(s).when(d.claim('c1', 'PLAN', [])).thenRefused('subject_not_acting');
    given(s).when(d.wakeStarted('w2')).thenRefused('wake_not_ended');
    const resumed = acceptedNext(s, d.resumed());
    expect([resumed.lifecycle_state, resumed.cognitive_state, resumed.current_wake_id]).toEqual(['AWAKE', 'DELIBERATING', 'w1']);
    expect(acceptedNext(s, d.actionProposed('p1', 'files', 'write')).cognitive_state).toBe('AWAITING_PERMISSION');
  });
});

// ---------------------------------------------------------------------------------------

describe('CheckpointRecorded is a read-only scoring view (spec §9.4)', () => {
  test('in every lifecycle/cognitive situation it changes nothing but last_applied_event_seq', () => {
    const { s, intents } = withOpenIntents(1);
    const situations: SubjectStream[] = [];
    const snap = (): void => void situations.push(s.fork());
    snap(); // DORMANT, IDLE, an open intent
    s.push(d.wakeStarted('w'));
    snap(); // OBSERVING
    s.push(d.modelAnswered('w'));
    s.push(d.actionProposed('p1', 'files', 'write'));
    snap(); // AWAITING_PERMISSION
    s.push(d.permission('p1', 'allow'));
    snap(); // EXECUTING
    s.push(d.toolOutcomeUnknown(intents[0]!.event_id));
    snap(); // RECOVERING, REFLECTING
    s.push(d.wakeEnded('w'));
    s.push(d.emergencyStopped());
    snap(); // STOPPED
    for (const situation of situations) {
      const before = stateOf(situation);
      const after = acceptedNext(situation, d.checkpoint('w', before.last_applied_event_seq, [intents[0]!.event_id]));
      expect(after.last_applied_event_seq).toBe(before.last_applied_event_seq + 1);
      expect({ ...after, last_applied_event_seq: 0 }).toEqual({ ...before, last_applied_event_seq: 0 });
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('refutation is first-class (RFC-0000 §12.5, JTMS-style)', () => {
  function world(): { s: SubjectStream; w1: EventEnvelope; w2: EventEnvelope } {
    const s = new SubjectStream().open();
    const w1 = s.push(d.message('dataset', 'Arrives Thursday.'));
    const w2 = s.push(d.message('venue', 'Room 4.'));
    s.push(d.wakeStarted('w'));
    s.push(d.modelAnswered('w'));
    return { s, w1, w2 };
  }

  test('a FACT citing a world event is refuted when a later InformationPublished refutes it; refuted_by names both events', () => {
    const { s, w1, w2 } = world();
    const fact = s.push(d.claim('f1', 'FACT', [w1.event_id]));
    const other = s.push(d.claim('f2', 'FACT', [w2.event_id]));
    s.push(d.wakeEnded('w'));
    const correction = s.push(d.information([w1.event_id]));
    const state = stateOf(s);
    expect(state.claims.f1).toMatchObject({ status: 'refuted', refuted_by: { refuting_event_id: correction.event_id, via_event_id: w1.event_id }, claim_event_id: fact.event_id });
    expect(state.claims.f2).toMatchObject({ status: 'active', refuted_by: null, claim_event_id: other.event_id });
    // The downgrade is visible in state: the refuted world event and the FACT's own record.
    expect(state.refuted_events).toEqual({ [w1.event_id]: correction.event_id, [fact.event_id]: correction.event_id });
    expect(state.evidence_dependents[w1.event_id]).toEqual(['f1']);
  });

  test('transitively: FACT2 citing FACT1, FACT3 citing FACT2, are refuted with FACT1', () => {
    const { s, w1, w2 } = world();
    const f1 = s.push(d.claim('f1', 'FACT', [w1.event_id]));
    const f2 = s.push(d.claim('f2', 'FACT', [f1.event_id, w2.event_id]));
    const f3 = s.push(d.claim('f3', 'FACT', [f2.event_id]));
    const unrelated = s.push(d.claim('f4', 'FACT', [w2.event_id]));
    const correction = s.push(d.information([w1.event_id]));
    const state = stateOf(s);
    expect(state.claims.f1?.refuted_by).toEqual({ refuting_event_id: correction.event_id, via_event_id: w1.event_id });
    expect(state.claims.f2?.refuted_by).toEqual({ refuting_event_id: correction.event_id, via_event_id: f1.event_id });
    expect(state.claims.f3?.refuted_by).toEqual({ refuting_event_id: correction.event_id, via_event_id: f2.event_id });
    expect(state.claims.f4?.status).toBe('active');
    expect(Object.keys(state.refuted_events).sort()).toEqual([w1.event_id, f1.event_id, f2.event_id, f3.event_id].sort());
    expect(state.refuted_events).not.toHaveProperty(unrelated.event_id);
    expect(state.refuted_events).not.toHaveProperty(w2.event_id);
    // Refuting w2 afterwards: f4 goes; f2 keeps its first refutation.
    const second = s.push(d.information([w2.event_id]));
    const later = stateOf(s);
    expect(later.claims.f4?.refuted_by).toEqual({ refuting_event_id: second.event_id, via_event_id: w2.event_id });
    expect(later.claims.f2?.refuted_by).toEqual({ refuting_event_id: correction.event_id, via_event_id: f1.event_id });
  });

  test('a FACT recorded citing an already-refuted event is born refuted, and so is one resting on it', () => {
    const { s, w1, w2 } = world();
    const correction = s.push(d.information([w1.event_id]));
    const f1 = s.push(d.claim('f1', 'FACT', [w2.event_id, w1.event_id]));
    const born = stateOf(s);
    expect(born.claims.f1).toMatchObject({ status: 'refuted', refuted_by: { refuting_event_id: correction.event_id, via_event_id: w1.event_id } });
    expect(born.refuted_events[f1.event_id]).toBe(correction.event_id);
    s.push(d.claim('f2', 'FACT', [f1.event_id]));
    expect(stateOf(s).claims.f2).toMatchObject({ status: 'refuted', refuted_by: { refuting_event_id: correction.event_id, via_event_id: f1.event_id } });
  });

  test('PLAN and INFERENCE claims are not downgraded and not indexed as justifications', () => {
    const { s, w1 } = world();
    s.push(d.claim('plan', 'PLAN', [w1.event_id]));
    s.push(d.claim('inf', 'INFERENCE', [w1.event_id], { confidence: 0.4 }));
    s.push(d.information([w1.event_id]));
    s.push(d.claim('late-inf', 'INFERENCE', [w1.event_id], { confidence: 0.9 }));
    const state = stateOf(s);
    for (const id of ['plan', 'inf', 'late-inf']) expect(state.claims[id], id).toMatchObject({ status: 'active', refuted_by: null });
    expect(state.evidence_dependents).toEqual({});
  });

  test('refutation applies whenever the world speaks: outside a wake, while recovering, even after a stop', () => {
    const { s: base, intents } = withOpenIntents(1);
    const m = base.push(d.message());
    base.push(d.wakeStarted('w'));
    base.push(d.modelAnswered('w'));
    base.push(d.claim('f', 'FACT', [m.event_id]));
    base.push(d.wakeEnded('w'));
    const dormant = base.fork();
    const recovering = base.fork();
    recovering.push(d.toolOutcomeUnknown(intents[0]!.event_id));
    const stopped = base.fork();
    stopped.push(d.emergencyStopped());
    for (const s of [dormant, recovering, stopped]) {
      const before = stateOf(s);
      const after = acceptedNext(s, d.information([m.event_id]));
      expect(after.claims.f?.status).toBe('refuted');
      expect(after.lifecycle_state).toBe(before.lifecycle_state);
      expect(after.aggregate_version).toBe(before.aggregate_version + 1);
    }
  });

  test('an InformationPublished refuting nothing, or an uncited event, changes nothing about claims', () => {
    const { s, w1, w2 } = world();
    s.push(d.claim('f1', 'FACT', [w1.event_id]));
    const before = stateOf(s);
    const nothing = acceptedNext(s, d.information([]));
    expect({ ...nothing, last_applied_event_seq: 0 }).toEqual({ ...before, last_applied_event_seq: 0 });
    const uncited = acceptedNext(s, d.information([w2.event_id]));
    expect(uncited.claims).toEqual(before.claims);
    expect(Object.keys(uncited.refuted_events)).toEqual([w2.event_id]);
  });

  // Was a bug at commit ca1d847 (refutation.ts refuteEvent): refuting a FACT's own
  // ClaimRecorded event downgraded the FACTs resting on it but left that FACT 'active',
  // while refuted_events held its claim_event_id: the state contradicted itself.
  test('refuting a FACT\'s own ClaimRecorded event refutes that FACT, not only the FACTs resting on it', () => {
    const { s, w1 } = world();
    const f1 = s.push(d.claim('f1', 'FACT', [w1.event_id]));
    s.push(d.claim('f2', 'FACT', [f1.event_id]));
    const correction = s.push(d.information([f1.event_id]));
    const state = stateOf(s);
    expect(state.claims.f2?.status).toBe('refuted');
    expect(state.refuted_events[f1.event_id]).toBe(correction.event_id);
    expect(state.claims.f1?.status).toBe('refuted');
    expect(state.claims.f1?.refuted_by).toEqual({ refuting_event_id: correction.event_id, via_event_id: f1.event_id });
  });
});

// ---------------------------------------------------------------------------------------

describe('budget (spec §5.2): model calls already happened, so overruns are counted, never refused', () => {
  test('calls and tokens beyond the wake budget land in overruns; a new wake grants afresh', () => {
    const s = new SubjectStream().open();
    const budget = { model_calls: 1, tokens: 200, tool_calls: 0 };
    s.push(d.wakeStarted('w1', budget));
    s.push(d.modelAnswered('w1', { prompt_tokens: 100, completion_tokens: 50 }));
    s.push(d.modelAnswered('w1', { prompt_tokens: 100, completion_tokens: 50 }));
    const afterTimeout = acceptedNext(s, d.modelCallFailed('w1', 'timeout'));
    expect(afterTimeout.resource_budget).toEqual({
      wake_id: 'w1',
      granted: budget,
      remaining: { model_calls: 0, tokens: 0, tool_calls: 0 },
      overruns: { model_calls: 2, tokens: 100, tool_calls: 0 },
    });
    // A call refused for want of budget was never made: it is recorded, not counted.
    s.push(d.modelCallFailed('w1', 'timeout'));
    const state = acceptedNext(s, d.modelCallFailed('w1', 'budget_exhausted'));
    expect(state.resource_budget.overruns).toEqual({ model_calls: 3, tokens: 100, tool_calls: 0 });
    s.push(d.wakeEnded('w1', 'budget_exhausted'));
    const fresh = acceptedNext(s, d.wakeStarted('w2', BUDGET));
    expect(fresh.resource_budget).toEqual({ wake_id: 'w2', granted: BUDGET, remaining: BUDGET, overruns: { model_calls: 0, tokens: 0, tool_calls: 0 } });
  });

  test('an allowed action spends a tool call; a denied one does not', () => {
    const s = new SubjectStream().open();
    s.push(d.wakeStarted('w1', { model_calls: 1, tokens: 1_000, tool_calls: 2 }));
    s.push(d.modelAnswered('w1'));
    s.push(d.actionProposed('p1', 'files', 'write'));
    expect(acceptedNext(s, d.permission('p1', 'deny')).resource_budget.remaining.tool_calls).toBe(2);
    s.push(d.actionProposed('p2', 'files', 'write', { path: 'other.md' }));
    expect(acceptedNext(s, d.permission('p2', 'allow')).resource_budget.remaining.tool_calls).toBe(1);
  });
});

describe('ids taken from events are own keys only ("constructor", "toString", …)', () => {
  test('tasks, journal entries, claims, proposals and plan proposals named after Object.prototype members', () => {
    const s = new SubjectStream().open({ tasks: ['toString'], journalEntryId: 'valueOf' });
    s.push(d.wakeStarted('w1'));
    s.push(d.modelAnswered('w1'));
    // A proposal called "constructor" that adds a task "constructor".
    s.push(d.actionProposed('constructor', 'task_board', 'change'));
    given(s).when(d.intent('hasOwnProperty', s.nextEventId)).thenRefused('unknown_proposal');
    s.push(d.permission('constructor', 'allow'));
    given(s).when(d.taskChanged('constructor', 'hasOwnProperty', 'update')).thenRefused('unknown_task');
    const added = acceptedNext(s, d.taskChanged('constructor', 'constructor', 'add', { title: 'Build things' }));
    expect(Object.hasOwn(added.task_board, 'constructor')).toBe(true);
    expect(ownOf(added.task_board, 'constructor')).toEqual({ title: 'Build things', status: 'todo', priority: 0, depends_on: [] });
    given(s).when(d.permission('toString', 'allow')).thenRefused('proposal_not_pending');
    // Journal: "valueOf" is the first page; "isPrototypeOf" is new.
    s.push(d.actionProposed('p-j', 'journal', 'append'));
    s.push(d.permission('p-j', 'allow'));
    given(s).when(d.journal('p-j', 'valueOf')).thenRefused('id_exists');
    const journal = acceptedNext(s, d.journal('p-j', 'isPrototypeOf'));
    expect(journal.journal.index).toEqual({ valueOf: 2, isPrototypeOf: s.last.seq });
    // Claims and plans.
    const m = s.push(d.message());
    s.push(d.claim('constructor', 'FACT', [m.event_id]));
    given(s).when(d.claim('constructor', 'PLAN', [])).thenRefused('id_exists');
    given(s).when(d.planAccepted('constructor')).thenRefused('unknown_plan_proposal');
    s.push(d.planProposed('constructor', 'goal-2', ['constructor', 'hasOwnProperty']));
    const plan = acceptedNext(s, d.planAccepted('constructor'));
    expect(plan.current_plan).toEqual(['constructor', 'hasOwnProperty']);
    expect(ownOf(plan.task_board, 'constructor')?.title).toBe('Build things');
    expect(Object.hasOwn(plan.task_board, 'hasOwnProperty')).toBe(true);
    s.push(d.information([m.event_id]));
    const final = stateOf(s);
    expect(ownOf(final.claims, 'constructor')?.status).toBe('refuted');
    expect(SubjectState.parse(final)).toEqual(final);
    // Snapshot round trip keeps them.
    expect(subjectStateHash(JSON.parse(JSON.stringify(final)) as State)).toBe(subjectStateHash(final));
  });
});
