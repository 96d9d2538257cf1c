// The context bundle of one wake (DESIGN §6 step 3, issue 5 item 2): the retrieval window
// chosen by the pre-registered rule — identical for every group — plus a view of the Subject
// State (B/C: the persistent projection; A: rebuilt from the window alone) and the workspace
// listing. It always states what it left out.
//
// Everything here is a pure function of its arguments (no clock, no randomness, no I/O), so a
// replayed wake builds the byte-identical bundle. buildContextBundle is the only place where
// the persistent_state switch decides what the subject observes; nothing else that builds
// what the model sees looks at the capabilities.
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import type { Capabilities } from '../schema/capabilities.js';
import { eventDefinition, type EventType, type PayloadOf } from '../schema/event-catalog.js';
import { EventId, Identifier, Timestamp } from '../schema/event-definition.js';
import { Budget } from '../schema/events/experiment-events.js';
import { hashText, HashString } from '../schema/hash.js';
import { MAX_PINNED_EVENTS, type RetrievalPolicy } from '../schema/retrieval-policy.js';
import type { SubjectState } from '../projector/subject-state.js';
import { keepsStateAcrossWakes } from './capability-policy.js';

/** Version of the retrieval rule below (filter, count cut, token cut, estimate). Bump on any change to what it selects. */
export const RETRIEVAL_RULE_VERSION = '1.0.0';
/** The token estimate of one window event: ceil(UTF-8 bytes of its JCS text / this). */
export const BYTES_PER_ESTIMATED_TOKEN = 4;

export const WindowEvent = z.strictObject({
  seq: z.number().int().min(1),
  event_id: EventId,
  event_type: z.string(),
  occurred_at: Timestamp,
  payload: z.record(z.string(), z.unknown()),
});
export type WindowEvent = z.infer<typeof WindowEvent>;

export const RetrievalWindow = z.strictObject({
  /** The pinned events first (policy.pinned_event_types), then the window's, each in seq order. */
  events: z.array(WindowEvent),
  /** Events of policy.pinned_event_types shown ahead of the window (not counted in eligible_total). */
  pinned: z.number().int().min(0).default(0),
  /** Events of the pre-registered types visible to this wake. */
  eligible_total: z.number().int().min(0),
  /** Eligible events left out because the window holds only window_events. */
  omitted_by_count: z.number().int().min(0),
  /** Eligible events left out to stay under token_cap. */
  omitted_by_token_cap: z.number().int().min(0),
  /** Visible events of other types (never in the window). */
  not_eligible: z.number().int().min(0),
  tokens_estimated: z.number().int().min(0),
  /** e.g. "window 40 of 312 eligible events (272 older left out, 0 over the token cap); 90 events of other types not shown". */
  statement: z.string(),
});
export type RetrievalWindow = z.infer<typeof RetrievalWindow>;

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
  /** What the action was aimed at: its args.path (files) or args.task_id (task board); null for the journal. */
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

export const WorkspaceEntry = z.strictObject({ path: z.string(), bytes: z.number().int().min(0), sha256: HashString });
export type WorkspaceEntry = z.infer<typeof WorkspaceEntry>;

export const ContextBundle = z.strictObject({
  wake: z.strictObject({ wake_id: Identifier, wake_at: Timestamp, budget: Budget, visible_to_seq: z.number().int().min(1) }),
  state: SubjectView,
  window: RetrievalWindow,
  workspace: z.array(WorkspaceEntry),
  /** Workspace files the listing's limits left out (runtime/files-tool.ts): stated, never silent. */
  workspace_omitted: z.strictObject({ too_deep: z.number().int().min(0), too_large: z.number().int().min(0), over_count: z.number().int().min(0) }).default({ too_deep: 0, too_large: 0, over_count: 0 }),
});
export type ContextBundle = z.infer<typeof ContextBundle>;

/** What the bundle needs of a stored event (an EventEnvelope has all of it). */
export interface VisibleEvent {
  readonly seq: number;
  readonly event_id: string;
  readonly event_type: string;
  readonly occurred_at: string;
  readonly payload: Readonly<Record<string, unknown>>;
}

export class ContextBundleError extends Error {
  override readonly name = 'ContextBundleError';
}

// ---------------------------------------------------------------------------------------
// The retrieval window

/** ceil(UTF-8 bytes of JCS(window event) / 4): what the token cap is measured in. */
export function estimateEventTokens(event: WindowEvent): number {
  return Math.ceil(Buffer.byteLength(canonicalJson(event), 'utf8') / BYTES_PER_ESTIMATED_TOKEN);
}

function toWindowEvent(e: VisibleEvent): WindowEvent {
  return { seq: e.seq, event_id: e.event_id, event_type: e.event_type, occurred_at: e.occurred_at, payload: { ...e.payload } };
}

export function windowStatement(w: Omit<RetrievalWindow, 'statement' | 'events'> & { readonly shown: number }): string {
  const pinned = w.pinned > 0 ? `${w.pinned} pinned event${w.pinned === 1 ? '' : 's'} (starting conditions) + ` : '';
  return `${pinned}window ${w.shown} of ${w.eligible_total} eligible events (${w.omitted_by_count} older left out, ${w.omitted_by_token_cap} over the token cap); ${w.not_eligible} events of other types not shown`;
}

/**
 * The pre-registered retrieval rule, identical for every group:
 *   1. visible = the given events with seq ≤ visibleToSeq (events must come in increasing seq);
 *   2. eligible = the visible events whose event_type is in policy.event_types;
 *   3. keep the last policy.window_events eligible events;
 *   4. drop the OLDEST kept event while the summed estimate (estimateEventTokens) exceeds
 *      policy.token_cap;
 *   5. visible events of policy.pinned_event_types go ahead of the window, outside its count
 *      and its token cap (at most MAX_PINNED_EVENTS, else refused).
 * Every visible event is accounted for exactly once: pinned, shown, omitted_by_count,
 * omitted_by_token_cap or not_eligible; the statement says so in words.
 */
export function buildRetrievalWindow(visibleEvents: readonly VisibleEvent[], policy: RetrievalPolicy, visibleToSeq: number = Number.POSITIVE_INFINITY): RetrievalWindow {
  const types = new Set<string>(policy.event_types);
  const pinnedTypes = new Set<string>(policy.pinned_event_types);
  const eligible: VisibleEvent[] = [];
  const pinned: VisibleEvent[] = [];
  let notEligible = 0;
  let lastSeq = 0;
  for (const event of visibleEvents) {
    if (event.seq <= lastSeq) throw new ContextBundleError(`events must come in increasing seq: seq ${event.seq} after seq ${lastSeq}`);
    lastSeq = event.seq;
    // Later events are not visible to this wake: they are not "left out", they do not exist for it.
    if (event.seq > visibleToSeq) break;
    if (types.has(event.event_type)) eligible.push(event);
    else if (pinnedTypes.has(event.event_type)) pinned.push(event);
    else notEligible += 1;
  }
  if (pinned.length > MAX_PINNED_EVENTS) throw new ContextBundleError(`${pinned.length} events of the pinned types ${[...pinnedTypes].join(', ')} are visible; at most ${MAX_PINNED_EVENTS} are shown ahead of the window`);
  const kept = eligible.slice(Math.max(0, eligible.length - policy.window_events)).map(toWindowEvent);
  const omittedByCount = eligible.length - kept.length;
  const costs = kept.map(estimateEventTokens);
  let tokens = costs.reduce((sum, c) => sum + c, 0);
  // Bounded by the kept count: each pass drops one event.
  let first = 0;
  while (first < kept.length && tokens > policy.token_cap) {
    tokens -= costs[first]!;
    first += 1;
  }
  const pinnedEvents = pinned.map(toWindowEvent);
  const pinnedTokens = pinnedEvents.reduce((sum, e) => sum + estimateEventTokens(e), 0);
  const counts = { pinned: pinned.length, eligible_total: eligible.length, omitted_by_count: omittedByCount, omitted_by_token_cap: first, not_eligible: notEligible, tokens_estimated: tokens + pinnedTokens };
  return { events: [...pinnedEvents, ...kept.slice(first)], ...counts, statement: windowStatement({ ...counts, shown: kept.length - first }) };
}

// ---------------------------------------------------------------------------------------
// The Subject view

/** The payload of a window event of `type`, checked against the catalogue; null for another type or a payload that fails it. */
export function windowPayload<T extends EventType>(event: WindowEvent, type: T): PayloadOf<T> | null {
  if (event.event_type !== type) return null;
  const parsed = eventDefinition(type)?.payload.safeParse(event.payload);
  return parsed?.success ? (parsed.data as PayloadOf<T>) : null;
}

type Proposed = PayloadOf<'ActionEvent.ActionProposed'>;

/** args.path for a files action, args.task_id for a task-board one: the thing a denial was about. */
function targetOf(p: Pick<Proposed, 'args'>): string | null {
  const path = p.args['path'];
  if (typeof path === 'string') return path;
  const taskId = p.args['task_id'];
  return typeof taskId === 'string' ? taskId : null;
}

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
    switch (e.event_type) {
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
        else denied.set(fingerprint, { tool: proposal.tool, op: proposal.op, repeats: 0, target: targetOf(proposal), failed_rules: failedRules(p) });
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
        if (proposal && proposal.proposal_id === d.proposal_id) return { tool: proposal.tool, op: proposal.op, repeats: d.repeats, target: targetOf(proposal), failed_rules: failedRules(decision) };
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

// ---------------------------------------------------------------------------------------
// The bundle

export interface ContextBundleInput {
  readonly wake: ContextBundle['wake'];
  /** The events visible to this wake, in seq order (more may be given: only seq ≤ wake.visible_to_seq count). */
  readonly events: readonly VisibleEvent[];
  readonly policy: RetrievalPolicy;
  readonly capabilities: Capabilities;
  /**
   * The projection of the store at or after wake.visible_to_seq (the runtime projects to the
   * head, which includes this wake's WakeStarted). Read only when the capabilities keep state;
   * a group without persistent state never looks at it, whatever is passed.
   */
  readonly persistentState: SubjectState | null;
  readonly workspace: readonly WorkspaceEntry[];
  readonly workspaceOmitted?: { readonly too_deep: number; readonly too_large: number; readonly over_count: number };
}

/** The bundle of one wake. Same input ⇒ the same bundle, field for field. */
export function buildContextBundle(input: ContextBundleInput): ContextBundle {
  const { wake, events, policy, capabilities, persistentState } = input;
  const window = buildRetrievalWindow(events, policy, wake.visible_to_seq);
  let state: SubjectView;
  if (keepsStateAcrossWakes(capabilities)) {
    if (persistentState === null) throw new ContextBundleError('persistent state is switched on but none was given');
    if (persistentState.last_applied_event_seq < wake.visible_to_seq) {
      throw new ContextBundleError(`the persistent state is at seq ${persistentState.last_applied_event_seq}, behind visible_to_seq ${wake.visible_to_seq}: it would not describe what the window shows`);
    }
    state = persistentView(persistentState, events);
  } else {
    state = windowView(window);
  }
  // Code-unit order, as JCS sorts: the listing's order must not depend on the file system.
  const workspace = [...input.workspace].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((f) => ({ path: f.path, bytes: f.bytes, sha256: f.sha256 }));
  return ContextBundle.parse({ wake: { ...wake, budget: { ...wake.budget } }, state, window, workspace, workspace_omitted: { ...(input.workspaceOmitted ?? { too_deep: 0, too_large: 0, over_count: 0 }) } });
}
