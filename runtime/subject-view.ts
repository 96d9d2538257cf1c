// The subject's view of its own state in a wake's context bundle (issue 5 item 2): groups B/C see
// the persistent projection (persistentView), group A a view rebuilt from the retrieval window
// alone (windowView, retrieval-window.ts), so what A does not see leaves no trace. Both are pure
// functions of their arguments, so a replayed wake builds the byte-identical view. Neither looks
// at the capabilities: context-bundle.ts buildContextBundle is the one place the persistent_state
// switch chooses between them.
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import { isEventType, type EventType, type PayloadOf } from '../schema/event-catalog.js';
import { Identifier, Timestamp } from '../schema/event-definition.js';
import { hashText } from '../schema/hash.js';
import { targetOf } from '../schema/tools.js';
import type { SubjectState } from '../projector/subject-state.js';
import { ContextBundleError } from './context-bundle-error.js';
import { toWindowEvent, windowPayload, type RetrievalWindow, type VisibleEvent } from './retrieval-window.js';

const ViewTask = z.strictObject({
  task_id: Identifier,
  /** '' when the window shows the task but not its title (group A only). */
  title: z.string(),
  /** null when the window shows the task but not its status (group A only). */
  status: z.enum(['todo', 'doing', 'blocked', 'done']).nullable(),
  /** null when the window shows the task but not its priority (group A only). */
  priority: z.number().int().nullable(),
  depends_on: z.array(Identifier),
});
export type ViewTask = z.infer<typeof ViewTask>;

const DeniedAction = z.strictObject({
  tool: z.string(),
  op: z.string(),
  repeats: z.number().int().min(0),
  /** What the action was aimed at: the argument its tool's row names (schema/tools.ts target_arg: a path, a task id); null for the journal. */
  target: z.string().nullable().default(null),
  /** The gate rules that failed on the first denial (PermissionDecided.rules with passed = false). */
  failed_rules: z.array(z.string()).default([]),
});
export type DeniedAction = z.infer<typeof DeniedAction>;

export const SubjectView = z.strictObject({
  /** 'persistent' (B/C: the projection of every event) or 'window' (A: rebuilt from the window alone). */
  source: z.enum(['persistent', 'window']),
  goal: z.strictObject({ goal_id: Identifier, description: z.string(), deadline_at: Timestamp.nullable() }).nullable(),
  tasks: z.array(ViewTask),
  attention_target: z.string().nullable(),
  waiting_condition: z.string().nullable(),
  journal_entries: z.number().int().min(0),
  /** Actions denied before, so a subject can avoid re-proposing them; ordered by the first denial. */
  denied_actions: z.array(DeniedAction),
});
export type SubjectView = z.infer<typeof SubjectView>;

type Proposed = PayloadOf<'ActionEvent.ActionProposed'>;

function failedRules(p: PayloadOf<'ActionEvent.PermissionDecided'>): string[] {
  return p.rules.filter((r) => !r.passed).map((r) => r.rule);
}

/**
 * Group A's view, rebuilt from the window alone. The rule: fold the window's events in seq
 * order with the projector's meaning wherever the window carries the data it needs —
 *   - goal: the latest SubjectInitialized (its goal), GoalChanged (the world's statement of a
 *     new goal: the only goal statement the pre-registered window can carry) or
 *     PlanRevisionAccepted whose PlanRevisionProposed is also in the window (the proposal's goal);
 *   - tasks: SubjectInitialized's tasks, then each TaskBoardChanged (add / update / complete /
 *     remove) and an accepted proposal's new steps, as the projector applies them;
 *   - attention_target / waiting_condition: the latest FocusUpdated;
 *   - journal_entries: 1 for a SubjectInitialized (its first page) + each JournalEntryWritten;
 *   - denied_actions: each denying PermissionDecided whose ActionProposed is in the window,
 *     grouped by the projector's fingerprint (repeats = further denials of the same action).
 * Whatever the window does not show is unknown: a null goal, no task, a null focus, a task
 * whose title ('' ), status or priority (null) the window never stated. Nothing outside the
 * window leaves a trace.
 */
export function windowView(window: RetrievalWindow): SubjectView {
  let goal: SubjectView['goal'] = null;
  const tasks = new Map<string, { title: string; status: ViewTask['status']; priority: number | null; depends_on: string[] }>();
  let attention: string | null = null;
  let waiting: string | null = null;
  let journal = 0;
  const proposals = new Map<string, Proposed>();
  const plans = new Map<string, PayloadOf<'PlanEvent.PlanRevisionProposed'>>();
  const denied = new Map<string, DeniedAction>();
  for (const e of window.events) {
    // A window event says its type as a plain string: switch over it as the catalogue's (another is no case).
    switch (isEventType(e.event_type) ? e.event_type : null) {
      case 'SystemEvent.SubjectInitialized': {
        const p = windowPayload(e, 'SystemEvent.SubjectInitialized');
        if (!p) break;
        goal = { goal_id: p.goal.goal_id, description: p.goal.description, deadline_at: p.goal.deadline_at };
        tasks.clear();
        for (const t of p.tasks) tasks.set(t.task_id, { title: t.title, status: 'todo', priority: t.priority, depends_on: [...t.depends_on] });
        journal = 1;
        break;
      }
      case 'WorldEvent.GoalChanged': {
        const p = windowPayload(e, 'WorldEvent.GoalChanged');
        if (p) goal = { goal_id: p.goal_id, description: p.description, deadline_at: p.deadline_at };
        break;
      }
      case 'PlanEvent.PlanRevisionProposed': {
        const p = windowPayload(e, 'PlanEvent.PlanRevisionProposed');
        if (p) plans.set(p.proposal_id, p);
        break;
      }
      case 'PlanEvent.PlanRevisionAccepted': {
        const p = windowPayload(e, 'PlanEvent.PlanRevisionAccepted');
        const plan = p ? plans.get(p.proposal_id) : undefined;
        if (!plan) break;
        goal = { goal_id: plan.goal_id, description: plan.goal_description, deadline_at: plan.deadline_at };
        for (const step of plan.steps) if (!tasks.has(step.task_id)) tasks.set(step.task_id, { title: step.title, status: 'todo', priority: 0, depends_on: [] });
        break;
      }
      case 'MemoryEvent.TaskBoardChanged': {
        const p = windowPayload(e, 'MemoryEvent.TaskBoardChanged');
        if (!p) break;
        if (p.op === 'remove') {
          tasks.delete(p.task_id);
          break;
        }
        const known = tasks.get(p.task_id) ?? { title: '', status: null, priority: null, depends_on: [] };
        const status = p.op === 'complete' ? 'done' : p.op === 'add' ? (p.status ?? 'todo') : (p.status ?? known.status);
        tasks.set(p.task_id, { title: p.title ?? known.title, status, priority: p.priority ?? (p.op === 'add' ? 0 : known.priority), depends_on: [...p.depends_on] });
        break;
      }
      case 'MemoryEvent.FocusUpdated': {
        const p = windowPayload(e, 'MemoryEvent.FocusUpdated');
        if (p) [attention, waiting] = [p.attention_target, p.waiting_condition];
        break;
      }
      case 'MemoryEvent.JournalEntryWritten':
        if (windowPayload(e, 'MemoryEvent.JournalEntryWritten')) journal += 1;
        break;
      case 'ActionEvent.ActionProposed': {
        const p = windowPayload(e, 'ActionEvent.ActionProposed');
        if (p) proposals.set(p.proposal_id, p);
        break;
      }
      case 'ActionEvent.PermissionDecided': {
        const p = windowPayload(e, 'ActionEvent.PermissionDecided');
        const proposal = p && p.decision === 'deny' ? proposals.get(p.proposal_id) : undefined;
        if (!p || !proposal) break;
        const fingerprint = hashText(canonicalJson({ tool: proposal.tool, op: proposal.op, args: proposal.args }));
        const before = denied.get(fingerprint);
        if (before) before.repeats += 1;
        else denied.set(fingerprint, { tool: proposal.tool, op: proposal.op, repeats: 0, target: targetOf(proposal.tool, proposal.args), failed_rules: failedRules(p) });
        break;
      }
      default:
        break;
    }
  }
  return {
    source: 'window',
    goal,
    tasks: [...tasks].map(([task_id, t]) => ({ task_id, ...t })),
    attention_target: attention,
    waiting_condition: waiting,
    journal_entries: journal,
    denied_actions: [...denied.values()],
  };
}

/** Index of the event with `seq` in events sorted by seq, or -1 (binary search: the log can be long). */
function indexOfSeq(events: readonly VisibleEvent[], seq: number): number {
  let lo = 0;
  let hi = events.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const s = events[mid]!.seq;
    if (s === seq) return mid;
    if (s < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

function typedVisible<T extends EventType>(e: VisibleEvent | undefined, type: T): PayloadOf<T> | null {
  return e ? windowPayload(toWindowEvent(e), type) : null;
}

/**
 * Groups B/C's view: the persistent projection. The denied actions are described from the
 * events the projection points at (the first denial's PermissionDecided at its seq, and its
 * ActionProposed before it): the state keeps only fingerprints, and a subject needs to know
 * what it was refused.
 */
export function persistentView(state: SubjectState, visibleEvents: readonly VisibleEvent[]): SubjectView {
  const current = state.goals.find((g) => g.goal_id === state.current_state.current_goal_id) ?? null;
  const board = state.task_board;
  // The current plan's order first (what the subject committed to), then any other task by id.
  const planned = state.current_plan.filter((id) => Object.hasOwn(board, id));
  const others = Object.keys(board).filter((id) => !planned.includes(id)).sort();
  const tasks = [...planned, ...others].map((task_id) => {
    const t = board[task_id]!;
    return { task_id, title: t.title, status: t.status, priority: t.priority, depends_on: [...t.depends_on] };
  });
  const denied = Object.values(state.denied_actions)
    .sort((a, b) => a.seq - b.seq)
    .map((d) => {
      const at = indexOfSeq(visibleEvents, d.seq);
      const decision = typedVisible(visibleEvents[at], 'ActionEvent.PermissionDecided');
      if (at < 0 || !decision || decision.proposal_id !== d.proposal_id) throw new ContextBundleError(`the state's denial of ${d.proposal_id} at seq ${d.seq} is not among the given events`);
      // The proposal precedes its decision within the same wake; the walk stops at the first event.
      for (let i = at - 1; i >= 0; i -= 1) {
        const proposal = typedVisible(visibleEvents[i], 'ActionEvent.ActionProposed');
        if (proposal && proposal.proposal_id === d.proposal_id) return { tool: proposal.tool, op: proposal.op, repeats: d.repeats, target: targetOf(proposal.tool, proposal.args), failed_rules: failedRules(decision) };
      }
      throw new ContextBundleError(`the proposal ${d.proposal_id} denied at seq ${d.seq} is not among the given events`);
    });
  return {
    source: 'persistent',
    goal: current ? { goal_id: current.goal_id, description: current.description, deadline_at: current.deadline_at } : null,
    tasks,
    attention_target: state.current_state.attention_target,
    waiting_condition: state.current_state.waiting_condition,
    journal_entries: state.journal.entries,
    denied_actions: denied,
  };
}

export type ViewSource =
  | { readonly source: 'persistent'; readonly state: SubjectState; readonly visibleEvents: readonly VisibleEvent[] }
  | { readonly source: 'window'; readonly window: RetrievalWindow };

export function buildSubjectView(from: ViewSource): SubjectView {
  return from.source === 'persistent' ? persistentView(from.state, from.visibleEvents) : windowView(from.window);
}
