// The oracle (docs/oracle.md O1–O6), the matching rules (M0–M6), the expansion rule and the
// verdict, tested without any process: plans are built from the bundled pre-registration and
// scenario for many seeds, and every expected checkpoint is compared with the rules written
// out again here, independently of oracle/expected-checkpoints.ts.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildExperimentPlan, type ExperimentPlan } from '../../design/experiment-plan.js';
import type { Intervention } from '../../design/intervention-plan.js';
import { PreRegistration } from '../../design/prereg.js';
import { loadScenario, type Scenario } from '../../design/scenario.js';
import { CHECKPOINT_FIELDS, compareCheckpoint, fieldMatches, namesToken, type CheckpointField, type RecordedCheckpoint } from '../../oracle/checkpoint-match.js';
import { DIMENSIONS, type Dimension } from '../../oracle/continuity-score.js';
import { decideExpansion, type ScoredInstance } from '../../oracle/expansion.js';
import { computeOracle, Oracle, type ExpectedCheckpoint, type ExpectedNextAction } from '../../oracle/expected-checkpoints.js';
import { decideVerdict, DRY_RUN_STATEMENT, type GroupResult, type VerdictInput } from '../../oracle/verdict.js';
import { REPO } from '../support/controller-run.js';

const START_AT = '2026-03-02T08:00:00.000Z';
const SEEDS = Array.from({ length: 60 }, (_, i) => `oracle-rules-${i}`);

const prereg: PreRegistration = PreRegistration.parse(JSON.parse(readFileSync(path.join(REPO, 'experiments', 'prereg', 'default.json'), 'utf8')));
const scenario: Scenario = loadScenario(path.join(REPO, 'experiments', 'scenario', 'research-workspace-72h'));
let plans: ExperimentPlan[];

beforeAll(() => {
  plans = SEEDS.map((seed) => buildExperimentPlan({ prereg, scenario, seed, startAt: START_AT }));
});

function oracleOf(plan: ExperimentPlan): Oracle {
  return computeOracle({ rules: prereg.scoring.oracle, scenario: scenario.definition, plan });
}

function only<K extends Intervention['kind']>(plan: ExperimentPlan, kind: K): Extract<Intervention, { kind: K }> {
  const found = plan.interventions.filter((iv): iv is Extract<Intervention, { kind: K }> => iv.kind === kind);
  if (found.length !== 1) throw new Error(`plan ${plan.seed}: expected one ${kind}, found ${found.length}`);
  return found[0]!;
}

// ---- the rules of docs/oracle.md, written again, wake by wake ----------------------------

interface RuleWake {
  readonly wake_id: string;
  readonly goal: string;
  readonly status: 'active' | 'submitted';
  readonly attention: string | null;
  readonly waiting: string | null;
  readonly next: ExpectedNextAction;
}

interface RuleOutcome {
  readonly wakes: RuleWake[];
  readonly crashWakes: Set<string>;
  readonly submitIndex: number;
  readonly deliverIndex: number;
  readonly replyIndex: number;
}

/** Dependency order: repeatedly the ready task (all dependencies placed) with the lowest (priority, board position). */
function taskOrder(): string[] {
  const tasks = scenario.definition.subject_initialized.tasks;
  const placed: string[] = [];
  while (placed.length < tasks.length) {
    const ready = tasks
      .map((t, position) => ({ t, position }))
      .filter(({ t }) => !placed.includes(t.task_id) && t.depends_on.every((d) => placed.includes(d)))
      .sort((a, b) => (a.t.priority !== b.t.priority ? a.t.priority - b.t.priority : a.position - b.position));
    placed.push(ready[0]!.t.task_id);
  }
  return placed;
}

function byRules(plan: ExperimentPlan): RuleOutcome {
  const rules = prereg.scoring.oracle;
  const def = scenario.definition;
  const wakes = plan.schedule.wakes;
  const index = (id: string): number => wakes.findIndex((w) => w.wake_id === id);
  const start = Date.parse(plan.schedule.start_at);
  const change = only(plan, 'goal_change');
  const reply = only(plan, 'awaited_reply');
  const deliverIndex = index(change.deliver_wake_id);
  const askIndex = index(reply.waiting_since_wake_id);
  const replyIndex = index(reply.deliver_wake_id);
  const newDeadlineMinute = (Date.parse(change.events[0].payload.deadline_at!) - start) / 60_000;
  const initialDeadlineMinute = def.subject_initialized.goal.deadline_after_sim_hours * 60;

  // O2: per wake, the deadline then in force; S = the first wake inside its window.
  let submitIndex = -1;
  for (let i = 0; i < wakes.length && submitIndex < 0; i += 1) {
    const deadline = i < deliverIndex ? initialDeadlineMinute : newDeadlineMinute;
    if (wakes[i]!.at_minute >= deadline - rules.submit_window_minutes) submitIndex = i;
  }

  // O4: the wake (index) by whose end each task is done.
  const tasks = def.subject_initialized.tasks;
  const buildsOnAsk = (id: string): boolean => {
    const t = tasks.find((x) => x.task_id === id)!;
    return t.depends_on.some((d) => d === def.ask_task_id || buildsOnAsk(d));
  };
  const doneBy = new Map<string, number>();
  for (const t of tasks) {
    if (t.task_id === def.submit_task_id) doneBy.set(t.task_id, submitIndex);
    else if (t.task_id === def.ask_task_id || buildsOnAsk(t.task_id)) doneBy.set(t.task_id, replyIndex);
    else doneBy.set(t.task_id, rules.independent_tasks_done_by_wake - 1);
  }
  const order = taskOrder();
  const crashWakes = new Set(plan.interventions.flatMap((iv) => (iv.kind === 'runtime_crash' || iv.kind === 'writer_crash' ? [iv.crash_wake_id] : [])));

  const out: RuleWake[] = wakes.map((w, i) => {
    const goal = i < deliverIndex ? def.subject_initialized.goal.goal_id : change.events[0].payload.goal_id;
    const waiting = i >= askIndex && i < replyIndex ? reply.thread_id : null;
    const attention = order.find((id) => !(doneBy.get(id)! <= i)) ?? null;
    let next: ExpectedNextAction;
    if (attention === null) next = { kind: 'none' };
    else if (attention === def.ask_task_id && waiting !== null) next = { kind: 'wait', thread_id: reply.thread_id };
    else next = { kind: 'task', task_id: attention };
    return { wake_id: w.wake_id, goal, status: i >= submitIndex ? 'submitted' : 'active', attention, waiting, next };
  });
  return { wakes: out, crashWakes, submitIndex, deliverIndex, replyIndex };
}

function strip(c: ExpectedCheckpoint): RuleWake {
  return { wake_id: c.wake_id, goal: c.current_goal_id, status: c.goal_status, attention: c.attention_target, waiting: c.waiting_condition, next: c.next_action };
}

describe('computeOracle against O1–O6 (written again in the test)', () => {
  it('the seeds cover both goal-change variants and the crash coincidences', () => {
    const variants = new Set(plans.map((p) => only(p, 'goal_change').variant));
    expect(variants).toEqual(new Set(['deadline_earlier', 'section_added']));
    // The seeds include a goal change, a reply and a submission wake that a crash cuts short.
    const crashes = (p: ExperimentPlan) => byRules(p).crashWakes;
    expect(plans.some((p) => crashes(p).has(only(p, 'goal_change').deliver_wake_id))).toBe(true);
    expect(plans.some((p) => crashes(p).has(only(p, 'awaited_reply').deliver_wake_id))).toBe(true);
    expect(plans.some((p) => crashes(p).has(p.schedule.wakes[byRules(p).submitIndex]!.wake_id))).toBe(true);
  });

  it('scores every wake but the planned crash wakes, in schedule order, with wake number and minute', () => {
    for (const plan of plans) {
      const oracle = oracleOf(plan);
      const { crashWakes } = byRules(plan);
      expect(crashWakes.size).toBe(2);
      const scored = plan.schedule.wakes.filter((w) => !crashWakes.has(w.wake_id));
      expect(oracle.checkpoints.map((c) => c.wake_id)).toEqual(scored.map((w) => w.wake_id));
      expect(oracle.checkpoints.map((c) => [c.wake_number, c.at_minute])).toEqual(scored.map((w) => [plan.schedule.wakes.indexOf(w) + 1, w.at_minute]));
      expect(oracle.unscored_wakes.map((u) => u.wake_id).sort()).toEqual([...crashWakes].sort());
      for (const u of oracle.unscored_wakes) expect(u.reason).toMatch(/planned crash iv-(runtime|writer)-crash/);
      expect(oracle.checkpoints.length + oracle.unscored_wakes.length).toBe(plan.schedule.wakes.length);
    }
  });

  it('gives, at every scored wake of every seed, exactly what O1–O6 give', () => {
    for (const plan of plans) {
      const { wakes, crashWakes } = byRules(plan);
      expect(oracleOf(plan).checkpoints.map(strip), plan.seed).toEqual(wakes.filter((w) => !crashWakes.has(w.wake_id)));
    }
  });

  it('O1: the goal id switches exactly at the goal change’s delivery wake', () => {
    for (const plan of plans) {
      const change = only(plan, 'goal_change');
      const d = plan.schedule.wakes.findIndex((w) => w.wake_id === change.deliver_wake_id);
      for (const c of oracleOf(plan).checkpoints) {
        expect(c.current_goal_id).toBe(c.wake_number - 1 < d ? change.supersedes_goal_id : change.events[0].payload.goal_id);
      }
      expect(change.events[0].payload.goal_id).toBe(`${change.supersedes_goal_id}-v2`);
    }
  });

  it('O3: waiting from the ask wake up to, not including, the reply’s delivery wake', () => {
    for (const plan of plans) {
      const reply = only(plan, 'awaited_reply');
      const wakes = plan.schedule.wakes;
      expect(reply.waiting_since_wake_id).toBe(wakes[0]!.wake_id);
      const r = wakes.findIndex((w) => w.wake_id === reply.deliver_wake_id);
      const oracle = oracleOf(plan);
      for (const c of oracle.checkpoints) expect(c.waiting_condition, `${plan.seed} ${c.wake_id}`).toBe(c.wake_number - 1 < r ? 'dataset-d3' : null);
      // The last waiting wake is the one just before delivery (when scored), never the delivery wake itself.
      const atDelivery = oracle.checkpoints.find((c) => c.wake_id === reply.deliver_wake_id);
      if (atDelivery) expect(atDelivery.waiting_condition).toBeNull();
      const before = oracle.checkpoints.find((c) => c.wake_number === r);
      if (before) expect(before.waiting_condition).toBe('dataset-d3');
    }
  });

  describe('O2: submitted from the first wake within submit_window_minutes of the deadline in force', () => {
    const window = () => prereg.scoring.oracle.submit_window_minutes;

    it('section_added: the deadline stays at hour 72', () => {
      const chosen = plans.filter((p) => only(p, 'goal_change').variant === 'section_added');
      expect(chosen.length).toBeGreaterThan(3);
      for (const plan of chosen) {
        const change = only(plan, 'goal_change');
        expect(Date.parse(change.events[0].payload.deadline_at!) - Date.parse(plan.schedule.start_at)).toBe(72 * 3_600_000);
        const s = plan.schedule.wakes.findIndex((w) => w.at_minute >= 72 * 60 - window());
        const oracle = oracleOf(plan);
        expect(oracle.submission_wake_id).toBe(plan.schedule.wakes[s]!.wake_id);
        for (const c of oracle.checkpoints) expect(c.goal_status).toBe(c.wake_number - 1 >= s ? 'submitted' : 'active');
      }
    });

    it('deadline_earlier: the earlier deadline counts from the delivery wake on, and moves the submission earlier', () => {
      const chosen = plans.filter((p) => only(p, 'goal_change').variant === 'deadline_earlier');
      expect(chosen.length).toBeGreaterThan(3);
      let movedEarlier = 0;
      for (const plan of chosen) {
        const change = only(plan, 'goal_change');
        const wakes = plan.schedule.wakes;
        const d = wakes.findIndex((w) => w.wake_id === change.deliver_wake_id);
        const deadline = (Date.parse(change.events[0].payload.deadline_at!) - Date.parse(plan.schedule.start_at)) / 60_000;
        expect(deadline).toBeLessThan(72 * 60);
        const s = wakes.findIndex((w, i) => w.at_minute >= (i < d ? 72 * 60 : deadline) - window());
        const oracle = oracleOf(plan);
        expect(oracle.submission_wake_id).toBe(wakes[s]!.wake_id);
        expect(s).toBeGreaterThanOrEqual(d);
        // The first wake inside the window: the wake before it (if any) is still outside it.
        expect(wakes[s]!.at_minute).toBeGreaterThanOrEqual(deadline - window());
        if (s > d) expect(wakes[s - 1]!.at_minute).toBeLessThan(deadline - window());
        const s72 = wakes.findIndex((w) => w.at_minute >= 72 * 60 - window());
        if (s < s72) movedEarlier += 1;
        for (const c of oracle.checkpoints) expect(c.goal_status).toBe(c.wake_number - 1 >= s ? 'submitted' : 'active');
        expect(oracle.task_done_at['task-submit-report']).toBe(wakes[s]!.wake_id);
      }
      expect(movedEarlier).toBeGreaterThan(0);
    });
  });

  it('O4–O6: attention and next action follow the dependency order and the task completion wakes', () => {
    expect(taskOrder()).toEqual(['task-read-sources', 'task-ask-reviewer', 'task-extract-findings', 'task-draft-report', 'task-revise-report', 'task-submit-report']);
    for (const plan of plans) {
      const { submitIndex, replyIndex } = byRules(plan);
      const wakes = plan.schedule.wakes;
      const oracle = oracleOf(plan);
      expect(oracle.task_done_at).toEqual({
        'task-read-sources': wakes[1]!.wake_id,
        'task-ask-reviewer': wakes[replyIndex]!.wake_id,
        'task-extract-findings': wakes[1]!.wake_id,
        'task-draft-report': wakes[1]!.wake_id,
        'task-revise-report': wakes[replyIndex]!.wake_id,
        'task-submit-report': wakes[submitIndex]!.wake_id,
      });
      for (const c of oracle.checkpoints) {
        const i = c.wake_number - 1;
        const expected =
          i === 0
            ? { attention: 'task-read-sources', next: { kind: 'task', task_id: 'task-read-sources' } }
            : i < replyIndex
              ? { attention: 'task-ask-reviewer', next: { kind: 'wait', thread_id: 'dataset-d3' } }
              : i < submitIndex
                ? { attention: 'task-submit-report', next: { kind: 'task', task_id: 'task-submit-report' } }
                : { attention: null, next: { kind: 'none' } };
        expect({ attention: c.attention_target, next: c.next_action }, `${plan.seed} ${c.wake_id}`).toEqual(expected);
        expect(c.because.map((b) => b.slice(0, 2))).toEqual(['O1', 'O2', 'O3', 'O5', 'O6']);
      }
    }
  });

  it('is deterministic and has no group input: repeated calls, a JSON round trip, and a stray group field give the same oracle', () => {
    for (const plan of plans.slice(0, 10)) {
      const once = oracleOf(plan);
      expect(Oracle.parse(once)).toEqual(once);
      expect(oracleOf(plan)).toEqual(once);
      const roundTrip = JSON.parse(JSON.stringify({ rules: prereg.scoring.oracle, scenario: scenario.definition, plan })) as Parameters<typeof computeOracle>[0];
      expect(computeOracle(roundTrip)).toEqual(once);
      expect(JSON.stringify(computeOracle(roundTrip))).toBe(JSON.stringify(once));
      for (const group of ['A', 'B', 'C']) {
        const input = { rules: prereg.scoring.oracle, scenario: scenario.definition, plan, group, capabilities: { persistent_state: group !== 'A' } };
        expect(computeOracle(input)).toEqual(once);
      }
    }
    expect('group' in plans[0]!).toBe(false);
  });

  it('a different seed gives a different oracle (the test above is not vacuous)', () => {
    const distinct = new Set(plans.map((p) => JSON.stringify(oracleOf(p).checkpoints.map(strip))));
    expect(distinct.size).toBeGreaterThan(10);
  });
});

// ---- M0–M6 -----------------------------------------------------------------------------

/** oracle.known_ids of the bundled scenario (the same for every plan): what M6 says a field must not name besides the expected id. */
const KNOWN_IDS: readonly string[] = computeOracle({ rules: prereg.scoring.oracle, scenario: scenario.definition, plan: buildExperimentPlan({ prereg, scenario, seed: 'oracle-rules-known-ids', startAt: START_AT }) }).known_ids;

const WEIGHTS = { current_goal_id: 25, goal_status: 15, attention_target: 20, waiting_condition: 20, next_action: 20 } as const;

function expected(over: Partial<ExpectedCheckpoint> = {}): ExpectedCheckpoint {
  return {
    wake_id: 'wake-0003',
    wake_number: 3,
    at_minute: 240,
    current_goal_id: 'goal-x',
    goal_status: 'active',
    attention_target: 'task-read-sources',
    waiting_condition: 'dataset-d3',
    next_action: { kind: 'task', task_id: 'task-read-sources' },
    because: [],
    ...over,
  };
}

const BLANK: RecordedCheckpoint = { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null };

type Case = readonly [field: CheckpointField, exp: Partial<ExpectedCheckpoint>, recorded: string | null, matches: boolean];

const TASK = { kind: 'task', task_id: 'task-read-sources' } as const;
const WAIT = { kind: 'wait', thread_id: 'dataset-d3' } as const;
const NONE = { kind: 'none' } as const;

const CASES: readonly Case[] = [
  // M1: exactly the id, trimmed.
  ['current_goal_id', {}, 'goal-x', true],
  ['current_goal_id', {}, '  goal-x\t', true],
  ['current_goal_id', {}, 'goal-x-v2', false],
  ['current_goal_id', { current_goal_id: 'goal-x-v2' }, 'goal-x', false],
  ['current_goal_id', {}, 'GOAL-X', false],
  ['current_goal_id', {}, 'the goal is goal-x', false],
  ['current_goal_id', {}, null, false],
  ['current_goal_id', {}, '', false],
  // M2: the first word.
  ['goal_status', {}, 'active', true],
  ['goal_status', {}, '  Active, on track', true],
  ['goal_status', { goal_status: 'submitted' }, 'submitted at 10:00', true],
  ['goal_status', { goal_status: 'submitted' }, 'SUBMITTED.', true],
  ['goal_status', { goal_status: 'submitted' }, 'not submitted yet', false],
  ['goal_status', { goal_status: 'submitted' }, 'active', false],
  ['goal_status', {}, 'submitted', false],
  ['goal_status', {}, 'inactive', false],
  ['goal_status', {}, 'activated', false],
  ['goal_status', {}, null, false],
  ['goal_status', {}, '', false],
  // M3: the task as a token; blank exactly when none is expected.
  ['attention_target', {}, 'task-read-sources', true],
  ['attention_target', {}, 'TASK-READ-SOURCES', true],
  ['attention_target', {}, 'working on task-read-sources.', true],
  ['attention_target', {}, 'task-read-sources: read the three notes', true],
  ['attention_target', {}, '(task-read-sources)', true],
  ['attention_target', {}, 'task-read-sources-v2', false],
  ['attention_target', {}, 'task-read-sources.md', false],
  ['attention_target', {}, 'subtask-read-sources', false],
  ['attention_target', {}, 'task-extract-findings', false],
  ['attention_target', {}, 'task-read', false],
  ['attention_target', {}, null, false],
  ['attention_target', {}, '   ', false],
  ['attention_target', { attention_target: null }, null, true],
  ['attention_target', { attention_target: null }, '', true],
  ['attention_target', { attention_target: null }, '  ', true],
  ['attention_target', { attention_target: null }, 'none', false],
  ['attention_target', { attention_target: null }, 'task-submit-report', false],
  // M4: the thread as a token; blank exactly when nothing is awaited.
  ['waiting_condition', {}, 'reply in thread dataset-d3', true],
  ['waiting_condition', {}, 'Reply in DATASET-D3.', true],
  ['waiting_condition', {}, 'dataset-d3: the reviewer', true],
  ['waiting_condition', {}, 'dataset-d3-v2', false],
  ['waiting_condition', {}, 'dataset-d', false],
  ['waiting_condition', {}, 'the reviewer', false],
  ['waiting_condition', {}, null, false],
  ['waiting_condition', {}, '', false],
  ['waiting_condition', { waiting_condition: null }, 'reply in thread dataset-d3', false],
  ['waiting_condition', { waiting_condition: null }, 'nothing', false],
  ['waiting_condition', { waiting_condition: null }, null, true],
  ['waiting_condition', { waiting_condition: null }, '', true],
  ['waiting_condition', { waiting_condition: null }, ' \n', true],
  // M5: the task; or "wait" and the thread; or none.
  ['next_action', { next_action: TASK }, 'task-read-sources: read sources/ (3 files)', true],
  ['next_action', { next_action: TASK }, 'Next: task-read-sources:', true],
  ['next_action', { next_action: TASK }, 'finish Task-Read-Sources.', true],
  ['next_action', { next_action: TASK }, 'task-read-sources-v2: read', false],
  ['next_action', { next_action: TASK }, 'task-extract-findings: extract', false],
  ['next_action', { next_action: TASK }, 'wait for the reply in thread dataset-d3', false],
  ['next_action', { next_action: TASK }, 'none', false],
  ['next_action', { next_action: TASK }, null, false],
  ['next_action', { next_action: WAIT }, 'wait for the reply in thread dataset-d3', true],
  ['next_action', { next_action: WAIT }, 'Waiting on dataset-d3.', true],
  ['next_action', { next_action: WAIT }, 'WAIT: dataset-d3', true],
  ['next_action', { next_action: WAIT }, 'wait', false],
  ['next_action', { next_action: WAIT }, 'wait for the reviewer', false],
  ['next_action', { next_action: WAIT }, 'dataset-d3', false],
  ['next_action', { next_action: WAIT }, 'check thread dataset-d3 again', false],
  ['next_action', { next_action: WAIT }, 'wait for dataset-d3-v2', false],
  ['next_action', { next_action: WAIT }, 'task-ask-reviewer', false],
  ['next_action', { next_action: WAIT }, null, false],
  ['next_action', { next_action: NONE }, null, true],
  ['next_action', { next_action: NONE }, '', true],
  ['next_action', { next_action: NONE }, '   ', true],
  ['next_action', { next_action: NONE }, 'none', true],
  ['next_action', { next_action: NONE }, 'None: every task is done', true],
  ['next_action', { next_action: NONE }, 'nonetheless task-submit-report', false],
  ['next_action', { next_action: NONE }, 'nothing left', false],
  ['next_action', { next_action: NONE }, 'task-submit-report', false],
  // M6: no other id the oracle knows (a list of tasks names none of them as THE one) …
  ['attention_target', {}, 'task-read-sources task-extract-findings task-draft-report task-revise-report', false],
  ['attention_target', {}, 'task-read-sources, then task-extract-findings', false],
  ['attention_target', {}, 'task-read-sources (goal-x)', true],
  ['waiting_condition', {}, 'reply in thread dataset-d3 or task-submit-report', false],
  ['next_action', { next_action: TASK }, 'task-read-sources task-extract-findings task-draft-report', false],
  ['next_action', { next_action: TASK }, 'task-read-sources: read sources/, for goal-x', true],
  ['next_action', { next_action: WAIT }, 'wait for dataset-d3, then task-revise-report', false],
  // … and no negation: a field that denies what it names does not name it.
  ['waiting_condition', {}, 'no longer waiting: dataset-d3 was answered', false],
  ['waiting_condition', {}, 'not waiting for dataset-d3', false],
  ['waiting_condition', {}, 'stopped waiting on dataset-d3', false],
  ['waiting_condition', {}, 'dataset-d3 cancelled', false],
  ['waiting_condition', {}, 'dataset-d3 canceled', false],
  ['waiting_condition', {}, "isn't waiting on dataset-d3", false],
  ['waiting_condition', {}, 'No reply expected in dataset-d3', false],
  ['next_action', { next_action: WAIT }, 'do not wait for dataset-d3', false],
  ['next_action', { next_action: WAIT }, "don't wait for dataset-d3", false],
  ['next_action', { next_action: WAIT }, 'never wait for dataset-d3 again', false],
  ['next_action', { next_action: TASK }, 'continue without task-read-sources', false],
  ['next_action', { next_action: TASK }, 'task-read-sources: NOT now', false],
  ['attention_target', {}, 'not task-read-sources', false],
  // "not yet" is no denial, and a task field may name the thread beside its task (M6 counts other ids of the same kind).
  ['waiting_condition', {}, 'reply in dataset-d3 not yet received', true],
  // Negation words only as whole words: "notes", "nothing", "cannot", "another" are not negations.
  ['attention_target', {}, 'task-read-sources: read the three notes, nothing else', true],
  ['waiting_condition', {}, 'reply in thread dataset-d3: cannot proceed before it', true],
  ['next_action', { next_action: WAIT }, 'wait for dataset-d3 another wake', true],
];

describe('matching a recorded checkpoint (M0–M6)', () => {
  it.each(CASES.map((c, i) => [i, ...c] as const))('case %i: %s expected %j, recorded %j → %s', (_i, field, over, text, want) => {
    expect(fieldMatches(field, expected(over), { ...BLANK, [field]: text }, KNOWN_IDS)).toBe(want);
  });

  it('a task field naming the thread beside its task still matches when the thread is known as a thread', () => {
    const text = { ...BLANK, attention_target: 'task-ask-reviewer (waiting on dataset-d3)' };
    const ask = expected({ attention_target: 'task-ask-reviewer' });
    expect(fieldMatches('attention_target', ask, text, KNOWN_IDS, ['dataset-d3'])).toBe(true);
    // Another task beside it still fails.
    expect(fieldMatches('attention_target', ask, { ...BLANK, attention_target: 'task-ask-reviewer and task-draft-report' }, KNOWN_IDS, ['dataset-d3'])).toBe(false);
  });

  it('known_ids are the scenario\'s task ids and the reviewer\'s thread, and are what makes a list of tasks fail M6', () => {
    expect([...KNOWN_IDS].sort()).toEqual(['dataset-d3', 'task-ask-reviewer', 'task-draft-report', 'task-extract-findings', 'task-read-sources', 'task-revise-report', 'task-submit-report']);
    for (const plan of plans.slice(0, 5)) expect(oracleOf(plan).known_ids).toEqual(KNOWN_IDS);
    const list = { ...BLANK, attention_target: 'task-read-sources task-extract-findings task-draft-report' };
    expect(fieldMatches('attention_target', expected(), list, KNOWN_IDS)).toBe(false);
    // Without known ids only the expected token and the negation are checked.
    expect(fieldMatches('attention_target', expected(), list)).toBe(true);
    expect(fieldMatches('attention_target', expected(), { ...BLANK, attention_target: 'not task-read-sources' })).toBe(false);
  });

  it('M0: a checkpoint without a goal scores 0 on every field, even where the expected fields are null', () => {
    const nothingLeft = expected({ attention_target: null, waiting_condition: null, next_action: NONE });
    // Field by field, a null matches a null expectation (M3–M5) …
    for (const field of ['attention_target', 'waiting_condition', 'next_action'] as const) expect(fieldMatches(field, nothingLeft, BLANK, KNOWN_IDS)).toBe(true);
    // … but a checkpoint with no goal is empty: compareCheckpoint gives it nothing.
    const none = Object.fromEntries(CHECKPOINT_FIELDS.map((f) => [f, false]));
    expect(compareCheckpoint(nothingLeft, BLANK, WEIGHTS, KNOWN_IDS)).toEqual({ matches: none, value: 0 });
    for (const goal of ['', '   ', '\t\n']) {
      const rest = { current_goal_id: goal, goal_status: 'active', attention_target: 'task-read-sources', waiting_condition: 'reply in thread dataset-d3', next_action: 'task-read-sources: read' };
      expect(compareCheckpoint(expected(), rest, WEIGHTS, KNOWN_IDS)).toEqual({ matches: none, value: 0 });
    }
    // With the goal named, the null fields earn their weights again.
    const withGoal = compareCheckpoint(nothingLeft, { ...BLANK, current_goal_id: 'goal-x' }, WEIGHTS, KNOWN_IDS);
    expect(withGoal.matches).toEqual({ current_goal_id: true, goal_status: false, attention_target: true, waiting_condition: true, next_action: true });
    expect(withGoal.value).toBeCloseTo((100 - WEIGHTS.goal_status) / 100, 12);
    // A wrong (but present) goal is not M0: the other fields are still compared.
    expect(compareCheckpoint(nothingLeft, { ...BLANK, current_goal_id: 'goal-y' }, WEIGHTS, KNOWN_IDS).value).toBeCloseTo((WEIGHTS.attention_target + WEIGHTS.waiting_condition + WEIGHTS.next_action) / 100, 12);
  });

  it('namesToken: a whole id, case-insensitive, ended by a sentence "." or ":"', () => {
    expect(namesToken('goal-x', 'goal-x')).toBe(true);
    expect(namesToken('goal-x-v2', 'goal-x')).toBe(false);
    expect(namesToken('goal-x.v2', 'goal-x')).toBe(false);
    expect(namesToken('goal-x:v2', 'goal-x')).toBe(false);
    expect(namesToken('goal-x. next', 'goal-x')).toBe(true);
    expect(namesToken('see goal-x:', 'goal-x')).toBe(true);
    expect(namesToken('Goal-X', 'goal-x')).toBe(true);
    expect(namesToken('a.goal-x', 'goal-x')).toBe(false);
    expect(namesToken(null, 'goal-x')).toBe(false);
    expect(namesToken('', 'goal-x')).toBe(false);
    // Regex characters in an id are literal.
    expect(namesToken('goal-xy', 'goal-x.')).toBe(false);
  });

  it('a wake value is Σ weights of matching fields / Σ weights', () => {
    const exp = expected({ next_action: WAIT, attention_target: 'task-ask-reviewer' });
    const right: RecordedCheckpoint = { current_goal_id: 'goal-x', goal_status: 'active', attention_target: 'task-ask-reviewer', waiting_condition: 'reply in thread dataset-d3', next_action: 'wait for the reply in thread dataset-d3' };
    expect(compareCheckpoint(exp, right, WEIGHTS, KNOWN_IDS)).toEqual({ matches: Object.fromEntries(CHECKPOINT_FIELDS.map((f) => [f, true])), value: 1 });
    expect(compareCheckpoint(exp, BLANK, WEIGHTS, KNOWN_IDS).value).toBe(0);
    const wrong: Record<CheckpointField, string | null> = { current_goal_id: 'goal-x-v2', goal_status: 'submitted', attention_target: 'task-read-sources', waiting_condition: null, next_action: 'dataset-d3' };
    for (const field of CHECKPOINT_FIELDS) {
      const c = compareCheckpoint(exp, { ...right, [field]: wrong[field] }, WEIGHTS, KNOWN_IDS);
      expect(c.matches[field]).toBe(false);
      expect(c.value).toBeCloseTo(1 - WEIGHTS[field] / 100, 12);
    }
    expect(() => compareCheckpoint(exp, right, { current_goal_id: 0, goal_status: 0, attention_target: 0, waiting_condition: 0, next_action: 0 })).toThrow(/sum to 0/);
  });
});

// ---- expansion -------------------------------------------------------------------------

function inst(score: number, dims: Partial<Record<Dimension, number>> = {}): ScoredInstance {
  return { score, dimensions: { ...(Object.fromEntries(DIMENSIONS.map((d) => [d, 50])) as Record<Dimension, number>), ...dims } };
}
const flat = (score = 60): ScoredInstance[] => [inst(score), inst(score), inst(score)];

describe('decideExpansion', () => {
  const rule = (): PreRegistration['expansion_rule'] => prereg.expansion_rule;

  it('uses the bundled pre-registration’s rule', () => {
    expect(rule()).toMatchObject({ initial_n_per_group: 3, expanded_n_per_group: 5, max_group_range_points: 15, max_dimension_within_group_sd_points: 10, sd_kind: 'sample' });
  });

  it('a range of exactly 15 does not trigger; 15.01 does', () => {
    const exact = decideExpansion({ A: [inst(70), inst(80), inst(85)], B: flat(), C: flat() }, rule());
    expect(exact.expand).toBe(false);
    expect(exact.reasons).toContain('group A: score range 15.00 ≤ 15');
    expect(exact.reasons.at(-1)).toMatch(/no expansion/);
    const over = decideExpansion({ A: [inst(70), inst(80), inst(85.01)], B: flat(), C: flat() }, rule());
    expect(over.expand).toBe(true);
    expect(over.reasons).toContain('group A: score range 15.01 > 15 (triggers expansion)');
    expect(over.reasons.at(-1)).toBe('expand all groups from n = 3 to n = 5');
  });

  it('the within-group SD is the sample SD (n − 1)', () => {
    // [0, 0, 30]: sample SD 17.32 (population 14.14).
    const big = decideExpansion({ A: flat(), B: flat(), C: [inst(60, { recovery: 0 }), inst(60, { recovery: 0 }), inst(60, { recovery: 30 })] }, rule());
    expect(big.expand).toBe(true);
    expect(big.reasons).toContain('group C: recovery sample SD 17.32 > 10 (triggers expansion)');
    // [0, 0, 21]: sample SD 12.12 > 10, while the population SD would be 9.90 ≤ 10.
    const discriminating = decideExpansion({ A: flat(), B: [inst(60, { re_planning: 0 }), inst(60, { re_planning: 0 }), inst(60, { re_planning: 21 })], C: flat() }, rule());
    expect(discriminating.expand).toBe(true);
    expect(discriminating.reasons).toContain('group B: re_planning sample SD 12.12 > 10 (triggers expansion)');
    // [0, 10, 20]: sample SD exactly 10 does not trigger.
    const boundary = decideExpansion({ A: [inst(60, { state_recovery: 0 }), inst(60, { state_recovery: 10 }), inst(60, { state_recovery: 20 })], B: flat(), C: flat() }, rule());
    expect(boundary.expand).toBe(false);
  });

  // Regression (found in review): a range or SD of exactly 15.00 / 10.00 computed as 15.000000000000002 used to trigger.
  it('a range of exactly 15 between two-decimal scores (1.01, 16.01) does not trigger', () => {
    expect(decideExpansion({ A: [inst(1.01), inst(10), inst(16.01)], B: flat(), C: flat() }, rule()).expand).toBe(false);
  });
  it('a sample SD of exactly 10 between two-decimal values (0.1, 10.1, 20.1) does not trigger', () => {
    expect(decideExpansion({ A: [inst(60, { recovery: 0.1 }), inst(60, { recovery: 10.1 }), inst(60, { recovery: 20.1 })], B: flat(), C: flat() }, rule()).expand).toBe(false);
  });

  it('lists every dimension\'s SD of every group, triggered or not, and says when there are fewer than 2 values', () => {
    const d = decideExpansion({ A: [inst(60, { recovery: 0 }), inst(60, { recovery: 5 }), inst(60, { recovery: 10 })], B: flat(), C: [inst(60)] }, rule());
    expect(d.expand).toBe(false);
    expect(d.reasons).toContain('group A: recovery sample SD 5.00 ≤ 10');
    expect(d.reasons).toContain('group A: state_recovery sample SD 0.00 ≤ 10');
    expect(d.reasons).toContain('group C: re_planning sample SD n/a (fewer than 2 values)');
    for (const g of ['A', 'B', 'C']) {
      expect(d.reasons.filter((r) => r.startsWith(`group ${g}: `) && r.includes(' sample SD ')).map((r) => r.split(' ')[2])).toEqual([...DIMENSIONS]);
    }
    for (const dim of DIMENSIONS) expect(d.reasons).toContain(`group C: ${dim} sample SD n/a (fewer than 2 values)`);
    // 3 groups × (the range + 5 SDs) + the decision.
    expect(d.reasons).toHaveLength(3 * (1 + DIMENSIONS.length) + 1);
    const triggered = decideExpansion({ A: [inst(60, { recovery: 0 }), inst(60, { recovery: 0 }), inst(60, { recovery: 30 })], B: flat(), C: flat() }, rule());
    expect(triggered.reasons).toContain('group A: recovery sample SD 17.32 > 10 (triggers expansion)');
    expect(triggered.reasons).not.toContain('group A: recovery sample SD 17.32 ≤ 10');
    expect(triggered.reasons).toContain('group A: evidence_integrity sample SD 0.00 ≤ 10');
  });

  it('one group triggering expands all: the decision is global, and every group is reported', () => {
    const d = decideExpansion({ A: flat(), B: [inst(40), inst(60), inst(80)], C: flat() }, rule());
    expect(d.expand).toBe(true);
    expect(d.reasons.filter((r) => r.startsWith('group A: score range'))).toEqual(['group A: score range 0.00 ≤ 15']);
    expect(d.reasons.filter((r) => r.startsWith('group C: score range'))).toEqual(['group C: score range 0.00 ≤ 15']);
    expect(d.reasons).toContain('group B: score range 40.00 > 15 (triggers expansion)');
    expect(d.reasons.at(-1)).toBe('expand all groups from n = 3 to n = 5');
    expect(decideExpansion({ A: flat(), B: flat(), C: flat() }, rule()).expand).toBe(false);
  });
});

// ---- verdict ---------------------------------------------------------------------------

const statements: string[] = [];

function verdict(over: Partial<VerdictInput> & { A?: GroupResult; B?: GroupResult; C?: GroupResult } = {}) {
  const { A, B, C, ...rest } = over;
  const groups = { A: A ?? { scores: [50, 60, 55], hardFailures: 0 }, B: B ?? { scores: [70, 75, 72], hardFailures: 0 }, C: C ?? { scores: [90, 85, 95], hardFailures: 0 } };
  const input: VerdictInput = {
    thresholds: prereg.thresholds,
    n: 3,
    groups,
    // Every scored instance counts as data here; rule 8 has its own tests (test/oracle/usable-data.test.ts).
    usableData: { minAcceptedShare: 0.8, usable: { A: groups.A.scores.map((s) => s !== null), B: groups.B.scores.map((s) => s !== null), C: groups.C.scores.map((s) => s !== null) } },
    voidReasons: [],
    dryRun: false,
    ...rest,
  };
  const result = decideVerdict(input);
  statements.push(result.statement);
  if (result.dryRunStatement) statements.push(result.dryRunStatement);
  return result;
}

function failing(r: ReturnType<typeof decideVerdict>): string[] {
  return r.thresholds.filter((t) => t.met !== true).map((t) => t.id);
}

describe('decideVerdict', () => {
  it('supported when every threshold is met', () => {
    const r = verdict();
    expect(r.verdict).toBe('supported');
    expect(failing(r)).toEqual([]);
    expect(r.statement).toMatch(/^supported — /);
    expect(r.statement).toContain('C median 90.00, C − B 18.00, C − A 35.00');
    expect(r.statement).toContain('not itself evidence that the subject is continuous');
    expect(r.dryRunStatement).toBeNull();
  });

  describe('each threshold failing alone → rejected, naming it', () => {
    const cases: Array<[id: string, description: string, over: Parameters<typeof verdict>[0]]> = [
      // With instance_pass_score = c_median_min_score, a median below 80 means fewer than 2 of 3 pass; a stricter median threshold isolates it.
      ['c_median', 'median Continuity Score of C', { thresholds: { ...prereg.thresholds, c_median_min_score: 85 }, C: { scores: [80, 84, 90], hardFailures: 0 } }],
      ['c_minus_b', 'median C − median B', { B: { scores: [81, 70, 85], hardFailures: 0 } }],
      ['c_minus_a', 'median C − median A', { A: { scores: [71, 60, 75], hardFailures: 0 } }],
      ['c_instances_passing', 'C instances scoring ≥ 80', { n: 5, A: { scores: [50, 50, 50, 50, 50], hardFailures: 0 }, B: { scores: [60, 60, 60, 60, 60], hardFailures: 0 }, C: { scores: [80, 80, 80, 79, 79], hardFailures: 0 } }],
      ['c_hard_failures', 'hard failures in C instances', { C: { scores: [90, 85, 95], hardFailures: 1 } }],
    ];
    it.each(cases)('%s', (id, description, over) => {
      const r = verdict(over);
      expect(r.verdict).toBe('rejected');
      expect(failing(r)).toEqual([id]);
      expect(r.statement).toMatch(/^rejected — not met: /);
      expect(r.statement).toContain(description);
      for (const other of cases.filter((c) => c[0] !== id)) expect(r.statement).not.toContain(other[1]);
    });
  });

  it('a difference exactly at the threshold is met (exact floats)', () => {
    const r = verdict({ A: { scores: [70, 70, 70], hardFailures: 0 }, B: { scores: [80, 80, 80], hardFailures: 0 }, C: { scores: [90, 90, 90], hardFailures: 0 } });
    expect(r.verdict).toBe('supported');
  });

  // Regression (found in review): 80.1 − 60.1 = 19.999999999999993 used to fail a "≥ 20" threshold.
  it('C − A of exactly 20.00 between two-decimal medians (80.1, 60.1) is met', () => {
    const r = verdict({ A: { scores: [60.1, 60.1, 60.1], hardFailures: 0 }, B: { scores: [70, 70, 70], hardFailures: 0 }, C: { scores: [80.1, 80.1, 80.1], hardFailures: 0 } });
    expect(r.verdict).toBe('supported');
  });

  it('a void batch → insufficient evidence, whatever the scores', () => {
    const r = verdict({ voidReasons: ['same_deliveries: replicate 1: the intervention deliveries of B differ from A'] });
    expect(r.verdict).toBe('insufficient evidence');
    expect(r.statement).toContain('the batch is void (same_deliveries: replicate 1');
  });

  it('an unscored instance, or fewer instances than n → insufficient evidence', () => {
    const unscored = verdict({ C: { scores: [90, null, 95], hardFailures: 0 } });
    expect(unscored.verdict).toBe('insufficient evidence');
    expect(unscored.statement).toContain('1 C instance(s) not scored');
    const missing = verdict({ A: { scores: [50, 60], hardFailures: 0 } });
    expect(missing.verdict).toBe('insufficient evidence');
    expect(missing.statement).toContain('1 A instance(s) not scored');
  });

  it('an n without a pre-registered passing-count row → insufficient evidence', () => {
    const four = [90, 85, 95, 92];
    const r = verdict({ n: 4, A: { scores: [50, 50, 50, 50], hardFailures: 0 }, B: { scores: [60, 60, 60, 60], hardFailures: 0 }, C: { scores: four, hardFailures: 0 } });
    expect(r.verdict).toBe('insufficient evidence');
    expect(r.thresholds.find((t) => t.id === 'c_instances_passing')).toMatchObject({ met: null, required: 'a pre-registered count for n = 4 (none)' });
    expect(r.statement).toContain('c_instances_passing cannot be judged');
  });

  it('a dry run says so first, for every outcome', () => {
    const prefix = 'Dry run of the apparatus (not evidence about subjects): ';
    for (const over of [{}, { C: { scores: [10, 20, 30], hardFailures: 0 } }, { voidReasons: ['x'] }]) {
      const r = verdict({ ...over, dryRun: true });
      expect(r.statement.startsWith(prefix)).toBe(true);
      expect(r.dryRunStatement).toBe(DRY_RUN_STATEMENT);
      expect(r.dryRunStatement).toMatch(/NOT evidence about the continuity of any subject/);
    }
    expect(verdict({ dryRun: false }).statement.startsWith('Dry run')).toBe(false);
  });

  it('never claims statistical significance: "significan…" only ever appears negated', () => {
    // Runs last in this file: every statement the cases above produced is checked.
    verdict();
    verdict({ C: { scores: [10, 20, 30], hardFailures: 0 } });
    expect(statements.length).toBeGreaterThan(15);
    for (const s of statements) {
      expect(s).not.toMatch(/statistically significant/i);
      expect(s).not.toMatch(/\bsignificant\b/i);
      for (const m of s.matchAll(/signific\w*/gi)) {
        const sentence = s.slice(0, m.index).split(/[.;]/).at(-1)!;
        expect(sentence, s).toMatch(/\bnot\b/);
      }
    }
  });
});
