// The pre-registered oracle (spec §3.3, §9.4; DESIGN §9): the ContinuityCheckpoint a continuous
// subject holds at the end of every scored wake, computed from the pre-registration, the
// scenario and the intervention plan ONLY. There is deliberately no parameter through which a
// subject's events, its group or its capabilities could reach this file: the same plan gives
// the same oracle for A, B and C. The rules O1–O6 are written out in docs/oracle.md; each
// expectation carries the rules that produced it, so a reviewer can check it by hand.
import { z } from 'zod';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import type { Intervention } from '../design/intervention-plan.js';
import type { OracleRules } from '../design/prereg.js';
import type { ScenarioDefinition } from '../design/scenario.js';
import { MS_PER_MINUTE, MINUTES_PER_HOUR, type ScheduledWake } from '../design/wake-schedule.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { Identifier } from '../schema/event-definition.js';

export const GoalStatusWord = z.enum(['active', 'submitted']);

/** What next_action must name: a task, waiting in a thread, or nothing left to do. */
export const ExpectedNextAction = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('task'), task_id: Identifier }),
  z.strictObject({ kind: z.literal('wait'), thread_id: Identifier }),
  z.strictObject({ kind: z.literal('none') }),
]);
export type ExpectedNextAction = z.infer<typeof ExpectedNextAction>;

export const ExpectedCheckpoint = z.strictObject({
  wake_id: Identifier,
  /** 1-based position in the schedule. */
  wake_number: z.number().int().min(1),
  at_minute: z.number().int().min(0),
  current_goal_id: Identifier,
  goal_status: GoalStatusWord,
  /** A task id; null when every task is done. */
  attention_target: Identifier.nullable(),
  /** The thread whose reply is awaited; null when nothing is awaited. */
  waiting_condition: Identifier.nullable(),
  next_action: ExpectedNextAction,
  /** The rules (docs/oracle.md) that decided each field, in words. */
  because: z.array(z.string()).max(16),
});
export type ExpectedCheckpoint = z.infer<typeof ExpectedCheckpoint>;

export const Oracle = z.strictObject({
  oracle_rules_version: z.string(),
  /** Scored wakes in schedule order. */
  checkpoints: z.array(ExpectedCheckpoint),
  /** Planned crash wakes: not scored (the crash cuts the wake before its checkpoint). */
  unscored_wakes: z.array(z.strictObject({ wake_id: Identifier, reason: z.string() })),
  /** When each task is expected done (wake id; null: not within the 72 hours). */
  task_done_at: z.record(Identifier, Identifier.nullable()),
  submission_wake_id: Identifier.nullable(),
  /** Every task id of the scenario and the reviewer's thread: a field naming another one than expected does not match (M3–M5). */
  known_ids: z.array(Identifier),
  /** Which of known_ids are threads (a task field may name the thread beside its task, M6). */
  known_thread_ids: z.array(Identifier),
});
export type Oracle = z.infer<typeof Oracle>;

export class OracleError extends TypedErrorOf('oracle', EXIT_CODES.failed) {
  override readonly name = 'OracleError';
}

function ofKind<K extends Intervention['kind']>(plan: ExperimentPlan, kind: K): Extract<Intervention, { kind: K }>[] {
  return plan.interventions.filter((iv): iv is Extract<Intervention, { kind: K }> => iv.kind === kind);
}

/** Tasks in dependency order: a task after those it depends on; ties by priority, then board order (O5). */
export function dependencyOrder(tasks: ScenarioDefinition['subject_initialized']['tasks']): string[] {
  const pending = tasks.map((t, i) => ({ t, i })).sort((a, b) => a.t.priority - b.t.priority || a.i - b.i);
  const placed: string[] = [];
  // Each round places one task; the scenario's board is acyclic (dependencies on earlier tasks only).
  for (let round = 0; round < tasks.length; round += 1) {
    const ready = pending.findIndex(({ t }) => t.depends_on.every((d) => placed.includes(d)));
    if (ready < 0) throw new OracleError('the scenario task board has a dependency cycle');
    placed.push(pending.splice(ready, 1)[0]!.t.task_id);
  }
  return placed;
}

/** Every task that depends on `root`, directly or through others. */
function dependentsOf(root: string, tasks: ScenarioDefinition['subject_initialized']['tasks']): Set<string> {
  const out = new Set<string>();
  // Tasks depend only on earlier ones, so one pass in board order closes the set.
  for (const t of tasks) if (t.depends_on.some((d) => d === root || out.has(d))) out.add(t.task_id);
  return out;
}

export interface OracleInput {
  readonly rules: OracleRules;
  readonly scenario: ScenarioDefinition;
  readonly plan: ExperimentPlan;
}

/** The expected checkpoints of a plan (docs/oracle.md, rules O1–O6). Pure: same input, same oracle. */
export function computeOracle({ rules, scenario, plan }: OracleInput): Oracle {
  const wakes = plan.schedule.wakes;
  const startMs = Date.parse(plan.schedule.start_at);
  const indexOf = new Map(wakes.map((w, i) => [w.wake_id, i]));
  const at = (wakeId: string): number => {
    const i = indexOf.get(wakeId);
    if (i === undefined) throw new OracleError(`the plan names ${wakeId}, which is not in its schedule`);
    return i;
  };
  const initial = scenario.subject_initialized;
  const tasks = initial.tasks;
  const minuteOf = (iso: string): number => (Date.parse(iso) - startMs) / MS_PER_MINUTE;

  // O1: the goal. The initial goal until the goal change is delivered; the new goal from that wake on.
  const goalChanges = ofKind(plan, 'goal_change');
  if (goalChanges.length > 1) throw new OracleError('the oracle rules cover at most one goal change per plan');
  const change = goalChanges[0] ?? null;
  const changeIndex = change ? at(change.deliver_wake_id) : Number.POSITIVE_INFINITY;
  const changed = change?.events[0].payload ?? null;

  // O2: the deadline in force at each wake, and the submission wake: the first wake within
  // submit_window_minutes of the deadline in force at that wake.
  const initialDeadline = initial.goal.deadline_after_sim_hours * MINUTES_PER_HOUR;
  const deadlineAt = (i: number): number => (i >= changeIndex && changed?.deadline_at ? minuteOf(changed.deadline_at) : initialDeadline);
  const submitIndex = wakes.findIndex((w, i) => w.at_minute >= deadlineAt(i) - rules.submit_window_minutes);

  // O3: the awaited reply. Asked at the wake the plan names; awaited until the wake it is delivered.
  const replies = ofKind(plan, 'awaited_reply');
  if (replies.length > 1) throw new OracleError('the oracle rules cover at most one awaited reply per plan');
  const reply = replies[0] ?? null;
  const askIndex = reply ? at(reply.waiting_since_wake_id) : Number.POSITIVE_INFINITY;
  const replyIndex = reply ? at(reply.deliver_wake_id) : Number.POSITIVE_INFINITY;
  const thread = reply?.thread_id ?? scenario.reviewer.thread_id;

  // O4: when each task is done. The ask task and the tasks that build on it (but the submit
  // task) at the reply's wake; the submit task at the submission wake; every other task by
  // wake independent_tasks_done_by_wake.
  const onReply = new Set([scenario.ask_task_id, ...dependentsOf(scenario.ask_task_id, tasks)]);
  onReply.delete(scenario.submit_task_id);
  const independentIndex = rules.independent_tasks_done_by_wake - 1;
  const doneIndex = new Map<string, number>();
  for (const t of tasks) {
    if (t.task_id === scenario.submit_task_id) doneIndex.set(t.task_id, submitIndex < 0 ? Number.POSITIVE_INFINITY : submitIndex);
    else if (onReply.has(t.task_id)) doneIndex.set(t.task_id, replyIndex);
    else doneIndex.set(t.task_id, independentIndex);
  }
  const order = dependencyOrder(tasks);

  const crashes = [...ofKind(plan, 'runtime_crash'), ...ofKind(plan, 'writer_crash')];
  const crashWakes = new Map(crashes.map((c) => [c.crash_wake_id, c.intervention_id]));
  const checkpoints: ExpectedCheckpoint[] = [];
  const unscored: Oracle['unscored_wakes'] = [];
  wakes.forEach((wake: ScheduledWake, i) => {
    const crash = crashWakes.get(wake.wake_id);
    if (crash !== undefined) {
      unscored.push({ wake_id: wake.wake_id, reason: `planned crash ${crash}: the wake is cut before its checkpoint (scored_wakes: ${rules.scored_wakes})` });
      return;
    }
    const because: string[] = [];
    const goalId = i >= changeIndex && changed ? changed.goal_id : initial.goal.goal_id;
    because.push(i >= changeIndex ? `O1: goal change ${change!.intervention_id} delivered at ${change!.deliver_wake_id}` : 'O1: the initial goal (no goal change delivered yet)');
    const submitted = submitIndex >= 0 && i >= submitIndex;
    because.push(submitted ? `O2: submitted from ${wakes[submitIndex]!.wake_id} (within ${rules.submit_window_minutes} min of the deadline)` : 'O2: not yet within the submission window');
    const waiting = i >= askIndex && i < replyIndex;
    because.push(waiting ? `O3: asked at ${reply!.waiting_since_wake_id}, reply delivered at ${reply!.deliver_wake_id}` : reply && i >= replyIndex ? `O3: the reply was delivered at ${reply.deliver_wake_id}` : 'O3: nothing asked yet');
    const attention = order.find((id) => (doneIndex.get(id) ?? Number.POSITIVE_INFINITY) > i) ?? null;
    because.push(attention === null ? 'O5: every task is done' : `O5: ${attention} is the first task in dependency order not done (O4)`);
    const next: ExpectedNextAction = attention === null ? { kind: 'none' } : attention === scenario.ask_task_id && waiting ? { kind: 'wait', thread_id: thread } : { kind: 'task', task_id: attention };
    because.push(`O6: next action ${next.kind === 'none' ? 'none' : next.kind === 'wait' ? `wait for thread ${next.thread_id}` : next.task_id}`);
    checkpoints.push({
      wake_id: wake.wake_id,
      wake_number: i + 1,
      at_minute: wake.at_minute,
      current_goal_id: goalId,
      goal_status: submitted ? 'submitted' : 'active',
      attention_target: attention,
      waiting_condition: waiting ? thread : null,
      next_action: next,
      because,
    });
  });
  const taskDoneAt: Record<string, string | null> = {};
  for (const [id, index] of doneIndex) taskDoneAt[id] = Number.isFinite(index) && index < wakes.length ? wakes[Math.max(0, index)]!.wake_id : null;
  return Oracle.parse({
    oracle_rules_version: rules.oracle_rules_version,
    checkpoints,
    unscored_wakes: unscored,
    task_done_at: taskDoneAt,
    submission_wake_id: submitIndex >= 0 ? wakes[submitIndex]!.wake_id : null,
    known_ids: [...tasks.map((t) => t.task_id), thread],
    known_thread_ids: [thread],
  });
}
