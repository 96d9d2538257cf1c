// The reference policy (issue 5 item 3, DESIGN §1): a deterministic, scripted "competent
// subject" that lets the whole study run offline. A run with it is an apparatus dry run: it
// validates the machinery, not the hypothesis.
//
// It reads ONLY its context bundle (`request.bundle`): the wake's time and budget, the view
// of its state, the retrieval window and the workspace listing. It never sees its group or
// its capability switches, the intervention plan or the oracle, so it behaves identically
// whatever the group; with group A's thin view it simply knows less. It also ignores
// `state.source` (which kind of memory it has), as the prompt does. Same bundle ⇒
// byte-identical answer: no clock, no randomness, no I/O, and every list it walks comes from
// the bundle in the bundle's order.
//
// What it does at a wake, all from the bundle:
// - tasks are worked through in dependency order (ties: priority, then board order); a task's
//   kind comes from its title: "… thread <id> …" asks someone and waits for a reply in that
//   thread, "Submit …" submits near the deadline, "Read … <folder>/" reads that folder's
//   files, a title naming a file path creates that file, a task without a path that depends
//   on a file task and on the ask task folds the reply into that file, "Align …" (its own
//   plan-revision step) notes a goal change in the report. Anything else it leaves alone.
// - reading: each file of the source folder without a current read in the window is read
//   (a read is current when the window shows a ToolSucceeded whose content hash is the
//   file's hash in the listing); a file named by a FileChangedExternally newer than its last
//   read is read again.
// - memory: FACT claims only for evidence shown in the window that no claim in the window
//   cites yet — its reads' ToolSucceeded and world events (never model output); PLAN for
//   what it will do next; INFERENCE with a confidence for guesses. One journal entry per wake.
// - focus: attention_target = the first task not done after this wake's work; the waiting
//   condition names the ask task's thread until a MessageReceived replying in that thread is
//   in the window.
// - a GoalChanged in the window with no plan decision after it ⇒ a plan revision (new goal
//   id and deadline, the open tasks plus an "Align" step).
// - favours: a message (not a reply) asking to save or paste something at a path is done
//   once, by writing its findings there — the permission gate judges the path, not this
//   policy; an action listed in state.denied_actions (same tool, op and target) is never
//   proposed again, and a request for more data than it has (MiB/GB) is declined.
// - a correction in the window saying "do not use X" about a file: X is no longer used in
//   what it writes, and is withdrawn once from the files it wrote.
// - near the deadline (within NEAR_DEADLINE_MINUTES) the report is submitted: its status
//   line is changed, or, without a report, one is written under report/.
//
// It answers in ds-model-output/2 (runtime/model-protocol.ts), as a model would: events are
// cited by the seq the window shows, and every text and list stays within the protocol's
// bounds (MODEL_OUTPUT_V2_LIMITS). The decision is first made in the internal shape
// (`decideAnswer`: event ids, as the runtime will get it back) and then written in the
// protocol (`decide`); the runtime's parser turns the one back into the other. Where a bound
// is smaller than what the policy would say, it says less and says so: at most
// V2.maxActions - 1 tool actions plus the journal entry per wake (the rest waits for the next
// wake), FACTs beyond the claim bound wait for a later wake (a FACT is claimed for evidence no
// claim in the window cites yet), a file's figures that do not fit one write are counted in a
// line "(N more …)", a text that does not fit its bound ends in "…". An id longer than the
// protocol's id bound cannot be named: a task with such an id gets no board action, a goal
// with one no plan revision and a null current_goal_id.
// Why one file: one scripted subject, read top to bottom as what it does at a wake; its steps share
// one reading of the bundle and one answer under construction, and apart they would not say it.
import { assertNever } from '../../foundation/assert-never.js';
import { eventIsOneOf } from '../../schema/typed-event.js';
import type { ContextBundle } from '../context-bundle.js';
import { type WindowEvent } from '../retrieval-window.js';
import type { ViewTask } from '../subject-view.js';
import type { ModelAdapter, ModelAdapterDefinition, ModelCallOutcome, ModelParams, ModelRequest } from '../model-adapter.js';
import { MODEL_OUTPUT_V2_LIMITS, MODEL_PROTOCOL_V2, type ModelAction, type ModelAnswerV2, type ModelClaim, type ModelPlanRevision, type SubjectAnswer } from '../model-protocol.js';
import { estimateTokens } from '../prompt.js';
import { because, clip, DEFAULT_REPORT_PATH, filePathIn, fitted, LARGE_SIZE_RE, nameable, Observation, oneLine, proposable, threadIn, WRITE_REQUEST_RE, type Goal, type Task, workingGoal } from './reference-observation.js';
import { findingsText, prose, REPORT_HEADER, reportText, STATUS_DRAFT, STATUS_SUBMITTED, submittedSeen } from './reference-report.js';

import { REFERENCE_POLICY_BUILD, REFERENCE_POLICY_MODEL_ID } from '../protocol.js';

export { REFERENCE_POLICY_BUILD, REFERENCE_POLICY_MODEL_ID, REFERENCE_POLICY_VERSION } from '../protocol.js';
/** What the adapter records as its max_tokens: an answer of this policy stays far below it. */
export const REFERENCE_MAX_TOKENS = 4_096;
/** From this long before the deadline on, the report is submitted (wakes are about 2 h apart). */
export const NEAR_DEADLINE_MINUTES = 240;

/** The bounds of the protocol it answers in: every text and list below is cut to them. */
const V2 = MODEL_OUTPUT_V2_LIMITS;
/** At most this many FACTs per wake (the claim bound is smaller today: it decides). */
const MAX_FACTS = 12;
/** A "do not use X" longer than this is not a figure: nothing is withdrawn for it. */
const MAX_WITHDRAWN_FIGURE_CHARS = 64;
const MS_PER_MINUTE = 60_000;

// ---------------------------------------------------------------------------------------
// small pure helpers

/** A brief text of the protocol (focus, next action, titles): one line, 1-V2.briefChars chars. */
function brief(text: string): string {
  const t = clip(oneLine(text), V2.briefChars);
  return t.length > 0 ? t : '-';
}

// ---------------------------------------------------------------------------------------
// what the bundle shows

// ---------------------------------------------------------------------------------------
// file contents it writes

// ---------------------------------------------------------------------------------------
// one wake's decision

class WakePlan {
  readonly actions: ModelAction[] = [];
  readonly did: string[] = [];
  /** Task status after this wake's work, as far as this policy intends it. */
  readonly status = new Map<string, ViewTask['status']>();
  private readonly readsPlanned = new Set<string>();
  /** Files written whole in this wake (their content already reflects everything in view). */
  readonly written = new Set<string>();
  private left: number;
  /** Room kept for a later unit (the submission near the deadline), out of reach of the units before it. */
  private reserved = 0;

  constructor(readonly o: Observation) {
    for (const t of o.tasks) this.status.set(t.task_id, t.status);
    // One tool call is kept for the journal entry every wake ends with.
    this.left = actionRoom(o.bundle) - 1;
  }

  /** Adds the actions only if all of them fit the wake's tool calls: a unit is done whole or not at all. */
  unit(actions: readonly ModelAction[], note: string): boolean {
    if (actions.length === 0 || actions.length > this.left - this.reserved) return false;
    this.actions.push(...actions);
    this.left -= actions.length;
    this.did.push(note);
    return true;
  }

  read(paths: readonly string[], why: string): string[] {
    const fresh = paths.filter((p) => proposable(p) && !this.readsPlanned.has(p) && !this.o.isDenied('files', 'read', p));
    const fitting = fresh.slice(0, Math.max(0, this.left - this.reserved));
    if (fitting.length === 0) return [];
    this.unit(
      fitting.map((path) => ({ tool: 'files', op: 'read', path, rationale: because(why) })),
      // The why is the actions' rationale; the journal names what was read.
      `read ${fitting.join(', ')}`,
    );
    for (const p of fitting) this.readsPlanned.add(p);
    return fitting;
  }

  board(task: Task, op: 'update' | 'complete', status: ViewTask['status'], why: string): ModelAction | null {
    // A task the protocol cannot name (or whose dependencies it cannot name) gets no board action.
    if (!nameable(task.task_id) || !task.depends_on.every(nameable) || this.o.isDenied('task_board', op, task.task_id)) return null;
    // The title is repeated so the event itself names the task (a window-only view learns it from there);
    // one that does not fit a brief text is left out (null keeps it), never sent clipped.
    const title = task.title.length >= 1 && task.title.length <= V2.briefChars ? task.title : null;
    return { tool: 'task_board', op, task_id: task.task_id, title, status: op === 'complete' ? null : status, priority: null, depends_on: task.depends_on.slice(0, V2.maxDependsOn), rationale: because(why) };
  }

  isDone(id: string): boolean {
    return this.status.get(id) === 'done';
  }

  /** Keeps room for a unit of `n` actions until release(); none when it could not fit anyway. */
  reserve(n: number): void {
    this.reserved = n <= this.left ? n : 0;
  }

  release(): void {
    this.reserved = 0;
  }

  ready(task: Task): boolean {
    return task.depends_on.every((d) => this.isDone(d));
  }
}

/** Actions one answer may hold: the wake's tool calls, within the protocol's bound. */
function actionRoom(bundle: ContextBundle): number {
  return Math.min(bundle.wake.budget.tool_calls, V2.maxActions);
}

function minutesUntil(fromIso: string, toIso: string | null): number | null {
  if (toIso === null) return null;
  const ms = Date.parse(toIso) - Date.parse(fromIso);
  return Number.isFinite(ms) ? ms / MS_PER_MINUTE : null;
}

/**
 * The decision of one wake in the internal shape (runtime/model-protocol.ts SubjectAnswer:
 * event ids), within the bounds of ds-model-output/2: exactly what the runtime gets back when
 * it parses `decide`'s answer with the wake's shown events.
 */
export function decideAnswer(bundle: ContextBundle): SubjectAnswer {
  const o = new Observation(bundle);
  const w = new WakePlan(o);
  const { wake, state } = bundle;
  const goal = workingGoal(o);
  const askTask = o.tasks.find((t) => t.kind === 'ask');
  const readTask = o.tasks.find((t) => t.kind === 'read');
  const submitTask = o.tasks.find((t) => t.kind === 'submit');
  const reportPath = o.tasks.find((t) => t.kind === 'create' && t.path?.startsWith('report/'))?.path ?? DEFAULT_REPORT_PATH;
  const thread = askTask?.thread ?? threadIn(state.waiting_condition);
  const reply = o.replyIn(thread);
  const toDeadline = minutesUntil(wake.wake_at, goal?.deadline_at ?? null);
  const nearDeadline = toDeadline !== null && toDeadline <= NEAR_DEADLINE_MINUTES;

  // 0. Submission near the deadline comes first in what the wake's actions are kept for: with a
  // few actions per answer, reading and writing could otherwise push it past the deadline.
  // Decided here from the bundle alone; the actions are still proposed at step 5, after the work.
  const submission = ((): { actions: ModelAction[]; note: string } | null => {
    if (!goal || !nearDeadline || submittedSeen(o, reportPath, submitTask)) return null;
    const exists = o.listing.has(reportPath);
    const op = exists ? 'modify' : 'write';
    if (!proposable(reportPath) || o.isDenied('files', op, reportPath)) return null;
    const action: ModelAction = exists
      ? { tool: 'files', op: 'modify', path: reportPath, find: STATUS_DRAFT, replace: `${STATUS_SUBMITTED} at ${wake.wake_at}`, rationale: because(`the deadline ${goal.deadline_at} is near: submitting the report`) }
      : { tool: 'files', op: 'write', path: reportPath, content: reportText(o, goal, thread, true), rationale: because(`the deadline ${goal.deadline_at} is near and there is no report yet: writing and submitting it`) };
    // Steps 1-4 never complete the submit task (it is no file task), so this is what step 5 would find.
    const done = submitTask && !w.isDone(submitTask.task_id) ? w.board(submitTask, 'complete', 'done', 'the report is submitted') : null;
    return { actions: done ? [action, done] : [action], note: `submitted ${reportPath} before the deadline ${goal.deadline_at}` };
  })();
  if (submission) w.reserve(submission.actions.length);

  // 1. Files changed outside its actions are read again before anything builds on them.
  const changed = o.changes.filter((c) => c.p.change !== 'deleted' && o.listing.has(c.p.path) && o.unreconciledChange(c.p.path) === c);
  w.read(
    changed.map((c) => c.p.path),
    'the file changed outside my actions; reading it again so my notes match it',
  );

  // 2. The ask task: asked at the first wake (doing = waiting for the reply), done when the reply is in the window.
  let waiting: string | null = state.waiting_condition;
  if (askTask && !w.isDone(askTask.task_id)) {
    if (reply) {
      const a = w.board(askTask, 'complete', 'done', `the reply in thread ${thread} arrived (event #${reply.event.seq})`);
      if (a && w.unit([a], `noted the reply in thread ${thread}`)) w.status.set(askTask.task_id, 'done');
    } else if (askTask.status !== 'doing') {
      const a = w.board(askTask, 'update', 'doing', `asked for it; now waiting for the reply in thread ${thread}`);
      if (a && w.unit([a], `asked in thread ${thread} and wait for the reply`)) w.status.set(askTask.task_id, 'doing');
    }
  }
  if (thread !== null) {
    // Resolved by a reply in the thread (or a task already done); otherwise the ask stands.
    if (reply || (askTask && w.isDone(askTask.task_id))) waiting = null;
    else if (askTask) waiting = brief(`reply in thread ${thread}`);
  }

  // 3. Reading the sources: until every source file has a current read in the window.
  const unread = o.sources.filter((f) => !o.reads.has(f.path)).map((f) => f.path);
  if (!readTask || !w.isDone(readTask.task_id)) {
    if (unread.length === 0 && o.sources.length > 0 && readTask) {
      const a = w.board(readTask, 'complete', 'done', 'every source file has been read');
      if (a && w.unit([a], `finished reading ${o.sourceFolder}`)) w.status.set(readTask.task_id, 'done');
    } else if (unread.length > 0) {
      const planned = w.read(unread, `the sources in ${o.sourceFolder} are what my work rests on`);
      if (planned.length > 0 && readTask && readTask.status !== 'doing') {
        const a = w.board(readTask, 'update', 'doing', `reading ${o.sourceFolder}`);
        if (a && w.unit([a], `started ${readTask.task_id}`)) w.status.set(readTask.task_id, 'doing');
      }
    }
  }

  // 4. Work on the tasks whose dependencies are done, in dependency order, as far as the budget goes.
  const findings = o.findings();
  for (const task of o.tasks) {
    if (w.isDone(task.task_id) || !w.ready(task)) continue;
    switch (task.kind) {
      case 'create': {
        const path = task.path!;
        const isFindings = /finding/i.test(task.title) || path.startsWith('notes/');
        // A findings file needs every source read; a report needs findings (or reads the findings file first).
        if (isFindings && (unread.length > 0 || o.sources.length === 0)) {
          w.read(unread, `${task.task_id} needs every source read, and not all of them are in my window`);
          break;
        }
        if (!isFindings && findings.length === 0) {
          const findingsFile = o.tasks.find((t) => t.kind === 'create' && t.path !== path && t.path !== null && o.listing.has(t.path))?.path;
          w.read(findingsFile ? [findingsFile] : unread, `I need my findings at hand to write ${path}`);
          break;
        }
        if (!proposable(path) || o.isDenied('files', 'write', path)) break;
        const content = isFindings ? findingsText(findings) : reportText(o, goal, thread, false);
        const write: ModelAction = { tool: 'files', op: 'write', path, content, rationale: because(`${task.task_id}: ${task.title}`) };
        const done = w.board(task, 'complete', 'done', `${path} is written`);
        if (done && w.unit([write, done], `wrote ${path} (${task.task_id})`)) {
          w.status.set(task.task_id, 'done');
          w.written.add(path);
        }
        break;
      }
      case 'revise': {
        if (!reply) break;
        if (w.written.has(task.path!)) {
          // Written whole in this very wake, with the reply already in it: nothing left to fold in.
          const done = w.board(task, 'complete', 'done', `${task.path} was written with the reply in it`);
          if (done && w.unit([done], `${task.task_id}: the reply is already in ${task.path}`)) w.status.set(task.task_id, 'done');
          break;
        }
        if (!proposable(task.path!) || !o.listing.has(task.path!) || o.isDenied('files', 'modify', task.path!)) break;
        const modify: ModelAction = {
          tool: 'files',
          op: 'modify',
          path: task.path!,
          find: `Reviewer's reply (thread ${thread}): pending.`,
          replace: clip(`Reviewer's reply (thread ${thread}, event #${reply.event.seq}): ${oneLine(reply.p.body)}`, V2.fileContentChars),
          rationale: because(`${task.task_id}: ${task.title}`),
        };
        const done = w.board(task, 'complete', 'done', `the reply is in ${task.path}`);
        if (done && w.unit([modify, done], `folded the reply into ${task.path} (${task.task_id})`)) w.status.set(task.task_id, 'done');
        break;
      }
      case 'align': {
        if (!goal || !proposable(task.path!) || !o.listing.has(task.path!) || o.isDenied('files', 'modify', task.path!)) break;
        const modify: ModelAction = {
          tool: 'files',
          op: 'modify',
          path: task.path!,
          find: REPORT_HEADER,
          replace: clip(`${REPORT_HEADER}\nGoal update: ${goal.goal_id}: ${oneLine(goal.description)} (deadline ${goal.deadline_at ?? 'none'})\n`, V2.fileContentChars),
          rationale: because(`${task.task_id}: ${task.title}`),
        };
        const done = w.board(task, 'complete', 'done', `${task.path} follows goal ${goal.goal_id}`);
        if (done && w.unit([modify, done], `aligned ${task.path} with goal ${goal.goal_id}`)) w.status.set(task.task_id, 'done');
        break;
      }
      default:
        break;
    }
  }

  // 4b. A correction saying "do not use X" about a file: X is withdrawn, once, from each file
  // this policy writes figures into (its task files), so its work does not cite a refuted figure.
  const ownFiles = o.tasks.flatMap((t) => (t.kind === 'create' && t.path !== null ? [t.path] : []));
  for (const r of o.refuted) {
    if (r.figure.length > MAX_WITHDRAWN_FIGURE_CHARS) continue;
    for (const path of ownFiles) {
      const done = o.proposals.some((a) => a.event.seq > r.event.seq && a.p.tool === 'files' && a.p.op === 'modify' && a.p.args['path'] === path && a.p.args['find'] === r.figure);
      if (done || !proposable(path) || !o.listing.has(path) || o.isDenied('files', 'modify', path)) continue;
      const withdraw: ModelAction = { tool: 'files', op: 'modify', path, find: r.figure, replace: `[withdrawn: corrected by event #${r.event.seq}]`, rationale: because(`a correction (event #${r.event.seq}) says not to use ${r.figure}`) };
      w.unit([withdraw], `withdrew ${r.figure} from ${path} after the correction`);
    }
  }

  // 5. Submission near the deadline, whatever else is unfinished: the deadline does not wait
  // (its room was kept aside before step 1).
  let submitting = false;
  if (submission) {
    w.release();
    if (w.unit(submission.actions, submission.note)) {
      submitting = true;
      if (submitTask) w.status.set(submitTask.task_id, 'done');
    }
  }

  // 6. Favours asked in messages (not replies): done once, never again once denied.
  for (const m of o.messages) {
    if (m.p.in_reply_to !== null || !WRITE_REQUEST_RE.test(m.p.body)) continue;
    const path = filePathIn(m.p.body);
    if (path === null || !proposable(path) || LARGE_SIZE_RE.test(m.p.body)) continue;
    const already = o.proposals.some((a) => a.event.seq > m.event.seq && a.p.tool === 'files' && a.p.op === 'write' && a.p.args['path'] === path);
    if (already || o.isDenied('files', 'write', path)) continue;
    w.unit([{ tool: 'files', op: 'write', path, content: findingsText(findings), rationale: because(`${m.p.from} asked: ${oneLine(m.p.subject)}`) }], `did ${m.p.from}'s favour: a copy of my findings at ${path}`);
  }

  // 7. A goal change with no plan decision after it: propose a plan for the new goal (one the
  // protocol can name: a goal id over its id bound cannot be proposed).
  let revision: ModelPlanRevision | null = null;
  if (o.goalChange && nameable(o.goalChange.p.goal_id)) {
    const change = o.goalChange;
    const decided = o.events.some((e) => e.seq > change.event.seq && eventIsOneOf(e, ['PlanEvent.PlanRevisionAccepted', 'PlanEvent.PlanRevisionRejected']));
    if (!decided) {
      const alignId = `align-${change.p.goal_id}`.slice(0, V2.idChars);
      const open = o.tasks.filter((t) => !w.isDone(t.task_id) && t.task_id !== alignId && t.title.length > 0 && nameable(t.task_id)).map((t) => ({ task_id: t.task_id, title: brief(t.title) }));
      revision = {
        reason: prose(`The goal changed (event #${change.event.seq}): ${oneLine(change.p.reason)}`),
        goal_id: change.p.goal_id,
        goal_description: change.p.description.length > 0 ? prose(change.p.description) : change.p.goal_id,
        deadline_at: change.p.deadline_at,
        steps: [{ task_id: alignId, title: brief(`Align the report with goal ${change.p.goal_id}`) }, ...open].slice(0, V2.maxPlanSteps),
      };
    }
  }

  // Where it stands after this wake.
  const current = o.tasks.find((t) => !w.isDone(t.task_id)) ?? null;
  const attention = current ? brief(current.task_id) : null;
  const nextAction = describeNext(o, current, waiting, goal, toDeadline, o.tasks.length > 0);

  const claims = claimsFor(o, { thread, waiting, goal, nextAction, revision });
  const evidence = [...new Set([...claims.flatMap((c) => (c.claim_type === 'FACT' ? c.evidence_event_ids : [])), ...(o.goalChange ? [o.goalChange.event.event_id] : []), ...(reply ? [reply.event.event_id] : [])])].slice(0, V2.maxCheckpointEvidence);

  // The journal entry every wake ends with (its tool call was kept aside).
  if (actionRoom(bundle) >= 1) {
    const did = w.did.length > 0 ? w.did.join('; ') : 'nothing needed doing';
    const win = bundle.window;
    const head = `Wake ${wake.wake_id} at ${wake.wake_at}: `;
    const parts = [
      // What it did always fits (cut visibly if it must); the sentences after it as far as they fit.
      clip(`${did}.`, V2.textChars - head.length),
      ...(revision ? [`Proposed a plan for goal ${revision.goal_id}.`] : []),
      ...(waiting ? [`Waiting for: ${waiting}.`] : []),
      `Next: ${nextAction}.`,
      `My window: ${win.events.length - win.pinned} of ${win.eligible_total} eligible events (${win.omitted_by_count} older left out, ${win.omitted_by_token_cap} over the token cap), ${win.pinned} pinned.`,
    ];
    // Whole sentences as far as a journal text holds, the last ones counted when they do not fit.
    const text = fitted(head, parts, ' ', V2.textChars, (n) => `(${n} more note${n === 1 ? '' : 's'} did not fit.)`);
    w.actions.push({ tool: 'journal', op: 'write', text, rationale: 'a journal entry each wake keeps my yesterday recoverable' });
  }

  // The protocol's vocabulary (runtime/prompt.ts CHECKPOINT): a proposed plan does not change the goal's status.
  const goalStatus = goal === null ? null : submitting || submittedSeen(o, reportPath, submitTask) ? 'submitted' : 'active';
  return {
    focus: { attention_target: attention, waiting_condition: waiting },
    actions: w.actions,
    claims,
    plan_revision: revision,
    checkpoint: {
      // A goal id the protocol cannot name is not named (null), never cut into another id.
      current_goal_id: goal !== null && nameable(goal.goal_id) ? goal.goal_id : null,
      goal_status: goalStatus,
      attention_target: attention,
      waiting_condition: waiting,
      next_action: nextAction,
      evidence_event_ids: evidence,
    },
  };
}

function describeNext(o: Observation, current: Task | null, waiting: string | null, goal: Goal | null, toDeadline: number | null, knowsTasks: boolean): string {
  if (current === null) {
    if (knowsTasks) return 'none: every task is done';
    return goal ? brief(`find out which tasks serve goal ${goal.goal_id}: my task board is not in view`) : 'find my goal and tasks: they are not in my view';
  }
  if (current.kind === 'ask' && waiting !== null) return brief(`wait for the ${waiting}`);
  if (current.kind === 'submit') return brief(`${current.task_id}: submit ${current.path} ${toDeadline !== null ? `before the deadline ${goal?.deadline_at}` : 'when the deadline is known'}`);
  if (current.kind === 'read') return brief(`${current.task_id}: read ${o.sourceFolder} (${o.sources.length} files)`);
  return brief(`${current.task_id}: ${current.title || 'continue'}`);
}

function claimsFor(o: Observation, c: { thread: string | null; waiting: string | null; goal: Goal | null; nextAction: string; revision: ModelPlanRevision | null }): ModelClaim[] {
  const facts: Array<{ seq: number; claim: ModelClaim }> = [];
  const fact = (event: WindowEvent, statement: string): void => {
    if (o.cited.has(event.event_id)) return;
    facts.push({ seq: event.seq, claim: { claim_type: 'FACT', statement: prose(statement), evidence_event_ids: [event.event_id], confidence: null, alternatives: [] } });
  };
  const refuted = o.refuted;
  for (const read of o.reads.values()) {
    const event = o.events.find((e) => e.event_id === read.event_id)!;
    const lines = read.content
      .split('\n')
      .map((l) => /^\s*[-*]\s+(.*\d.*)$/.exec(l)?.[1])
      .filter((l): l is string => l !== undefined && !refuted.some((r) => r.path === read.path && l.includes(r.figure)))
      .map(oneLine);
    const first = oneLine(read.content.split('\n').find((l) => l.trim().length > 0) ?? '(empty)');
    // Whole figure lines, as many as a statement holds; the rest are counted, never cut mid-figure.
    const stated = fitted(`${read.path} (${read.hash}) states: `, lines, ' | ', V2.textChars, (n) => `(+${n} more line${n === 1 ? '' : 's'} with figures)`);
    fact(event, lines.length > 0 ? stated : `${read.path} (${read.hash}) begins: ${first}`);
  }
  for (const m of o.messages) {
    if (c.thread !== null && m.p.in_reply_to === c.thread) fact(m.event, `The reply in thread ${c.thread} from ${m.p.from} says: ${oneLine(m.p.body)}`);
    else fact(m.event, `${m.p.from} wrote "${oneLine(m.p.subject)}": ${oneLine(m.p.body)}`);
  }
  for (const ch of o.changes) fact(ch.event, `${ch.p.path} was ${ch.p.change} outside my actions (new hash ${ch.p.post_hash ?? 'none'})`);
  if (o.goalChange) fact(o.goalChange.event, `The goal changed to ${o.goalChange.p.goal_id} (deadline ${o.goalChange.p.deadline_at ?? 'none'}): ${oneLine(o.goalChange.p.reason)}`);
  for (const info of o.corrections) fact(info.event, `${info.p.source} published: ${oneLine(info.p.body)}`);
  facts.sort((a, b) => a.seq - b.seq);

  const others: ModelClaim[] = [];
  const plan = c.revision ? `Re-plan for goal ${c.revision.goal_id}: ${c.revision.steps.map((s) => s.task_id).join(', ')}. Next: ${c.nextAction}` : `Next: ${c.nextAction}`;
  others.push({ claim_type: 'PLAN', statement: prose(plan), evidence_event_ids: [], confidence: null, alternatives: [] });
  if (c.waiting !== null) {
    others.push({
      claim_type: 'INFERENCE',
      statement: prose(`Nothing in my window answers the ${c.waiting}, so it has probably not been sent yet.`),
      evidence_event_ids: [],
      confidence: 0.7,
      alternatives: ['it arrived but lies outside my window', 'the request did not reach the reviewer'],
    });
  }
  if (c.goal === null) {
    const left = o.bundle.window.omitted_by_count + o.bundle.window.omitted_by_token_cap;
    others.push({
      claim_type: 'INFERENCE',
      statement: prose(`My goal is not in my view; ${left > 0 ? `${left} older events were left out of my window and may state it` : 'no event in my window states it'}.`),
      evidence_event_ids: [],
      confidence: 0.6,
      alternatives: ['I have no goal yet', 'the goal is stated only in my first journal page'],
    });
  }
  // The plan and the inferences are about this wake and are said now (at most 3, within the
  // bound); FACTs fill the room left, oldest evidence first. A FACT left out waits: its evidence
  // stays uncited, so a later wake that still shows it claims it.
  const factRoom = Math.max(0, Math.min(MAX_FACTS, V2.maxClaims - others.length));
  return [...facts.slice(0, factRoom).map((f) => f.claim), ...others].slice(0, V2.maxClaims);
}

// ---------------------------------------------------------------------------------------
// the adapter

/**
 * The decision written in ds-model-output/2: the same answer, each cited event by the seq the
 * window shows. A cited event outside the window would be this policy's bug (it cites only what
 * it reads from the window), so it throws rather than guess a seq.
 */
export function decide(bundle: ContextBundle): ModelAnswerV2 {
  const answer = decideAnswer(bundle);
  const seqOf = new Map(bundle.window.events.map((e) => [e.event_id, e.seq]));
  const seqs = (ids: readonly string[]): number[] =>
    ids.map((id) => {
      const seq = seqOf.get(id);
      if (seq === undefined) throw new Error(`reference policy: it cites event ${id}, which its window does not show (a bug of the policy)`);
      return seq;
    });
  const claims = answer.claims.map((c): ModelAnswerV2['claims'][number] => {
    switch (c.claim_type) {
      case 'FACT':
        return { claim_type: 'FACT', statement: c.statement, evidence_seqs: seqs(c.evidence_event_ids) };
      case 'PLAN':
        return { claim_type: 'PLAN', statement: c.statement };
      case 'INFERENCE':
        if (c.confidence === null) throw new Error('reference policy: an INFERENCE without a confidence (a bug of the policy)');
        return { claim_type: 'INFERENCE', statement: c.statement, confidence: c.confidence, alternatives: [...c.alternatives] };
      default: {
        assertNever(c.claim_type, 'claim type');
      }
    }
  });
  const { evidence_event_ids, goal_status, ...checkpoint } = answer.checkpoint;
  return {
    protocol: MODEL_PROTOCOL_V2,
    focus: answer.focus,
    actions: answer.actions,
    claims,
    plan_revision: answer.plan_revision,
    checkpoint: { ...checkpoint, goal_status: goal_status === 'active' || goal_status === 'submitted' ? goal_status : null, evidence_seqs: seqs(evidence_event_ids) },
  };
}

/** The reference policy as the house asks it (runtime/model-adapter.ts ModelAdapterDefinition; listed in adapter-list.ts): code, not a model; its counts are estimates, said so. */
export const REFERENCE_POLICY_ADAPTER: ModelAdapterDefinition<'reference'> = {
  name: 'reference',
  callsModel: false,
  usageCountedBy: ['estimate'],
  promptCountedBy: ['estimate'],
  callTimeoutMs: () => null,
  checkedBeforeStart: false,
  answeredByServer: false,
  preflightReportsBuild: false,
  create: () => new ReferencePolicy(),
};

/** The reference policy as a model adapter: one call = one deterministic answer, never a failure. */
export class ReferencePolicy implements ModelAdapter {
  readonly name = 'reference' as const;
  readonly model_id = REFERENCE_POLICY_MODEL_ID;
  readonly build = REFERENCE_POLICY_BUILD;
  readonly params: ModelParams = { temperature: null, top_p: null, seed: null, max_tokens: REFERENCE_MAX_TOKENS };

  /** The timeout is accepted for the interface and never needed: the answer is computed at once. */
  call(request: ModelRequest, _timeoutMs?: number): Promise<ModelCallOutcome> {
    // Only the bundle decides the answer; the rendered messages only size the usage estimate.
    const raw = JSON.stringify(decide(request.bundle));
    // No server or tokenizer counted anything: these are the runtime's ceil(chars / 4) estimates, said as such.
    const promptTokens = estimateTokens(request.system) + estimateTokens(request.user);
    return Promise.resolve({
      kind: 'answered',
      raw_output: raw,
      usage: { prompt_tokens: promptTokens, completion_tokens: estimateTokens(raw) },
      usage_source: 'estimate',
      latency_ms: 0,
      system_fingerprint: null,
      finish_reason: 'stop',
      response_model: null,
      prompt_tokens_counted: promptTokens,
      prompt_count_source: 'estimate',
      attempts: 1,
    });
  }
}
