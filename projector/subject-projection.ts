// Why one file: the aggregate's evolve is one exhaustive switch over the catalogue (its parts already live in cognition.ts, lifecycle.ts, evidence.ts); splitting the switch would lose the compiler's exhaustiveness check.
// The Subject projector: folds events into the Subject aggregate, purely. `apply` never
// mutates its input (it evolves a copy); `applyAll` copies once per batch. An event that
// implies an illegal transition or breaks an invariant is refused with a
// ProjectionRefusal and nothing of it is applied.
import { canonicalJson } from '../schema/canonical-json.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { isEventType, type PayloadOf, type TypedEvent } from '../schema/event-catalog.js';
import { hashText } from '../schema/hash.js';
import type { ToolName } from '../schema/tools.js';
import { cognitiveNext, type CognitiveTrigger } from './cognition.js';
import { lifecycleAllows, type LifecycleState, type LifecycleTrigger } from './lifecycle.js';
import { own } from './own.js';
import { ProjectionRefusal, type Projection } from './projection.js';
import { indexFact, refuteEvent } from './refutation.js';
import { initialSubjectState, SUBJECT_LIMITS, type SubjectState } from './subject-state.js';
import { STATE_MACHINE_VERSION, SUBJECT_PROJECTOR_VERSION } from './versions.js';

class Refuse {
  constructor(private readonly event: EventEnvelope) {}
  because(reason: string): never {
    throw new ProjectionRefusal(this.event.seq, this.event.event_type, reason);
  }
}

function moveLifecycle(state: SubjectState, trigger: LifecycleTrigger, to: LifecycleState, refuse: Refuse): void {
  if (!lifecycleAllows(state.lifecycle_state, trigger, to)) refuse.because(`illegal lifecycle transition ${state.lifecycle_state} → ${to}`);
  state.lifecycle_state = to;
}

function moveCognition(state: SubjectState, trigger: CognitiveTrigger, refuse: Refuse): void {
  const next = cognitiveNext(state.cognitive_state, trigger);
  if (next === null) refuse.because(`illegal cognitive transition from ${state.cognitive_state} on ${trigger}`);
  state.cognitive_state = next;
}

/** Runtime events belong to a wake: the subject acts only while awake (or observes while recovering), never while paused. */
function requireWake(state: SubjectState, refuse: Refuse, options: { sideEffect: boolean }): string {
  if (state.current_wake_id === null) refuse.because(`no wake is in progress (lifecycle ${state.lifecycle_state})`);
  if (state.lifecycle_state !== 'AWAKE' && state.lifecycle_state !== 'RECOVERING') refuse.because(`lifecycle ${state.lifecycle_state}: the subject does not act`);
  if (options.sideEffect && state.lifecycle_state !== 'AWAKE') refuse.because(`lifecycle ${state.lifecycle_state} is read-only: no side effects`);
  return state.current_wake_id;
}

/**
 * sha256(JCS({tool, op, args})) of an ActionProposed: the same action proposed again has the
 * same one. Exported so the permission gate computes repeat_of_denied exactly as this
 * projector checks it.
 */
export function actionFingerprint(tool: string, op: string, args: unknown): string {
  return hashText(canonicalJson({ tool, op, args }));
}

/**
 * What a read intent must say (projector 1.2.0). The gate judged a read (its size, not its
 * content), so a read permission must not become a write and a write permission not a read;
 * and a read changes nothing, so it names one path and intends the hash it starts from.
 */
function checkReadIntent(proposalOp: string, p: PayloadOf<'ActionEvent.ExecutionIntentRecorded'>, refuse: Refuse): void {
  if ((proposalOp === 'read') !== (p.op === 'read')) refuse.because(`intent op ${p.op} does not execute proposal ${p.proposal_id}'s op ${proposalOp}: a read is allowed as a read only`);
  if (p.op !== 'read') return;
  if (p.to_path !== null) refuse.because('a read intent names one path: to_path must be null');
  if (p.intended_post_hash !== p.pre_hash) refuse.because('a read changes nothing: intended_post_hash must equal pre_hash');
}

/**
 * A ToolSucceeded carries content exactly when its intent is a read, and then the content is
 * what observed_post_hash hashes: evidence that cites the event cites that text.
 */
function checkSucceededContent(intent: SubjectState['open_intents'][string], p: PayloadOf<'ActionEvent.ToolSucceeded'>, refuse: Refuse): void {
  if (intent.op !== 'read') {
    if (p.content !== null) refuse.because(`a ${intent.op} returns no content: content must be null`);
    return;
  }
  if (p.content === null) refuse.because('a read that succeeded carries the content it read');
  if (p.observed_post_hash !== hashText(p.content)) refuse.because('observed_post_hash is not the hash of the content read');
}

/** A tool operation must execute an allowed, not yet executed proposal for that tool. */
function consumeAllowedProposal(state: SubjectState, proposalId: string, tool: ToolName, refuse: Refuse): void {
  const proposal = own(state.proposals, proposalId);
  if (!proposal) refuse.because(`proposal ${proposalId} is unknown in this wake: every tool execution needs its permission decision`);
  if (proposal.tool !== tool) refuse.because(`proposal ${proposalId} is for tool ${proposal.tool}, not ${tool}`);
  if (proposal.decision !== 'allow') refuse.because(`proposal ${proposalId} was not allowed (decision ${proposal.decision})`);
  if (proposal.executed) refuse.because(`proposal ${proposalId} was already executed: a second execution would duplicate a side effect`);
  proposal.executed = true;
}

function closeIntent(state: SubjectState, intentEventId: string, refuse: Refuse): void {
  const intent = own(state.open_intents, intentEventId);
  if (!intent) refuse.because(`no open execution intent ${intentEventId}`);
  // An unknown outcome is resolved only by an operator's statement (DESIGN §7).
  if (intent.outcome !== 'pending') refuse.because(`intent ${intentEventId} has an unknown outcome: only SystemEvent.OperatorResolved may close it`);
  delete state.open_intents[intentEventId];
}

function hasUnknownOutcome(state: SubjectState): boolean {
  return Object.values(state.open_intents).some((intent) => intent.outcome === 'unknown');
}

/** Tool outcomes move cognition only inside the executing wake; after a restart they reconcile silently in state. */
function afterToolOutcome(state: SubjectState, trigger: CognitiveTrigger, refuse: Refuse): void {
  if (state.cognitive_state === 'EXECUTING') moveCognition(state, trigger, refuse);
}

function spend(state: SubjectState, kind: 'model_calls' | 'tokens' | 'tool_calls', amount: number): void {
  const budget = state.resource_budget;
  const left = budget.remaining[kind] - amount;
  budget.remaining[kind] = Math.max(left, 0);
  if (left < 0) budget.overruns[kind] += -left;
}

function typed(event: EventEnvelope, refuse: Refuse): TypedEvent {
  if (!isEventType(event.event_type)) refuse.because('unknown event type');
  return { event_type: event.event_type, payload: event.payload } as TypedEvent;
}

/** Applies one event to a state this function owns and may change. */
function evolve(state: SubjectState, event: EventEnvelope): void {
  const refuse = new Refuse(event);
  if (event.seq !== state.last_applied_event_seq + 1) refuse.because(`expected seq ${state.last_applied_event_seq + 1}`);
  const subjectChanged = evolveTyped(state, event, typed(event, refuse), refuse);
  state.last_applied_event_seq = event.seq;
  if (subjectChanged) state.aggregate_version += 1;
}

function evolveTyped(state: SubjectState, event: EventEnvelope, e: TypedEvent, refuse: Refuse): boolean {
  switch (e.event_type) {
    case 'SystemEvent.StoreOpened':
      if (event.seq !== 1) refuse.because('StoreOpened must be the first event');
      state.subject_id = e.payload.subject_id;
      return true;
    case 'SystemEvent.SubjectInitialized': {
      moveLifecycle(state, e.event_type, 'DORMANT', refuse);
      const p = e.payload;
      state.identity = p.identity;
      state.identity_schema_version = p.identity_schema_version;
      state.goals = [{ goal_id: p.goal.goal_id, description: p.goal.description, deadline_at: p.goal.deadline_at, status: 'active' }];
      state.current_state.current_goal_id = p.goal.goal_id;
      for (const task of p.tasks) {
        if (own(state.task_board, task.task_id)) refuse.because(`task ${task.task_id} listed twice`);
        state.task_board[task.task_id] = { title: task.title, status: 'todo', priority: task.priority, depends_on: task.depends_on };
      }
      state.current_plan = p.tasks.map((t) => t.task_id);
      state.journal = { entries: 1, index: { [p.journal_first_page.entry_id]: event.seq } };
      return true;
    }
    case 'SystemEvent.Paused':
      moveLifecycle(state, e.event_type, 'PAUSED', refuse);
      return true;
    case 'SystemEvent.Resumed':
      moveLifecycle(state, e.event_type, hasUnknownOutcome(state) ? 'RECOVERING' : state.current_wake_id !== null ? 'AWAKE' : 'DORMANT', refuse);
      return true;
    case 'SystemEvent.EmergencyStopped':
      moveLifecycle(state, e.event_type, 'STOPPED', refuse);
      state.cognitive_state = 'IDLE';
      state.current_wake_id = null;
      return true;
    case 'SystemEvent.OperatorResolved': {
      const intent = own(state.open_intents, e.payload.intent_event_id);
      if (!intent || intent.outcome !== 'unknown') refuse.because(`intent ${e.payload.intent_event_id} has no unknown outcome to resolve`);
      delete state.open_intents[e.payload.intent_event_id];
      const held = state.lifecycle_state === 'STOPPED' || state.lifecycle_state === 'PAUSED';
      const to: LifecycleState = held ? state.lifecycle_state : hasUnknownOutcome(state) ? 'RECOVERING' : state.current_wake_id !== null ? 'AWAKE' : 'DORMANT';
      moveLifecycle(state, e.event_type, to, refuse);
      return true;
    }
    case 'ExperimentEvent.WakeStarted': {
      if (state.current_wake_id !== null) refuse.because(`wake ${state.current_wake_id} has not ended`);
      moveLifecycle(state, e.event_type, state.lifecycle_state === 'RECOVERING' ? 'RECOVERING' : 'AWAKE', refuse);
      moveCognition(state, e.event_type, refuse);
      state.current_wake_id = e.payload.wake_id;
      state.current_state.last_observation_at = event.occurred_at;
      state.resource_budget = { wake_id: e.payload.wake_id, granted: { ...e.payload.budget }, remaining: { ...e.payload.budget }, overruns: { model_calls: 0, tokens: 0, tool_calls: 0 } };
      state.proposals = {};
      return true;
    }
    case 'ExperimentEvent.WakeEnded': {
      if (state.current_wake_id !== e.payload.wake_id) refuse.because(`wake ${e.payload.wake_id} is not the one in progress (${String(state.current_wake_id)})`);
      const to: LifecycleState = state.lifecycle_state === 'RECOVERING' || state.lifecycle_state === 'PAUSED' ? state.lifecycle_state : 'DORMANT';
      moveLifecycle(state, e.event_type, to, refuse);
      moveCognition(state, e.event_type, refuse);
      state.current_wake_id = null;
      state.proposals = {};
      return true;
    }
    case 'ModelOutputEvent.ModelAnswered':
    case 'ModelOutputEvent.ModelCallFailed': {
      const wake = requireWake(state, refuse, { sideEffect: false });
      if (e.payload.wake_id !== wake) refuse.because(`model call for wake ${e.payload.wake_id} during wake ${wake}`);
      moveCognition(state, e.event_type, refuse);
      // budget_exhausted records a call the runtime did not make: nothing was spent.
      const called = e.event_type === 'ModelOutputEvent.ModelAnswered' || e.payload.failure !== 'budget_exhausted';
      if (called) spend(state, 'model_calls', 1);
      const usage = e.payload.usage;
      if (usage !== null) spend(state, 'tokens', usage.prompt_tokens + usage.completion_tokens);
      return true;
    }
    case 'ModelOutputEvent.ModelCallAttemptFailed': {
      const wake = requireWake(state, refuse, { sideEffect: false });
      if (e.payload.wake_id !== wake) refuse.because(`model call attempt for wake ${e.payload.wake_id} during wake ${wake}`);
      return true;
    }
    case 'ActionEvent.ActionProposed': {
      requireWake(state, refuse, { sideEffect: false });
      const p = e.payload;
      if (own(state.proposals, p.proposal_id)) refuse.because(`proposal ${p.proposal_id} exists in this wake`);
      if (Object.keys(state.proposals).length >= SUBJECT_LIMITS.maxProposalsPerWake) refuse.because(`more than ${SUBJECT_LIMITS.maxProposalsPerWake} proposals in one wake`);
      moveCognition(state, e.event_type, refuse);
      state.proposals[p.proposal_id] = { tool: p.tool, op: p.op, fingerprint: actionFingerprint(p.tool, p.op, p.args), decision: 'pending', decision_event_id: null, executed: false };
      return true;
    }
    case 'ActionEvent.PermissionDecided': {
      requireWake(state, refuse, { sideEffect: false });
      const p = e.payload;
      const proposal = own(state.proposals, p.proposal_id);
      if (!proposal || proposal.decision !== 'pending') refuse.because(`proposal ${p.proposal_id} is not awaiting a decision`);
      const denied = own(state.denied_actions, proposal.fingerprint);
      if (p.repeat_of_denied !== (denied !== undefined)) refuse.because(`repeat_of_denied is ${p.repeat_of_denied} but the action was ${denied ? '' : 'never '}denied before`);
      if (p.decision === 'allow') {
        if (state.lifecycle_state !== 'AWAKE') refuse.because(`lifecycle ${state.lifecycle_state} is read-only: nothing may be allowed`);
        if (state.resource_budget.remaining.tool_calls < 1) refuse.because('no tool calls left in this wake: the permission gate must deny');
        spend(state, 'tool_calls', 1);
      } else if (denied) {
        denied.repeats += 1;
      } else {
        if (Object.keys(state.denied_actions).length >= SUBJECT_LIMITS.maxDeniedActions) refuse.because(`more than ${SUBJECT_LIMITS.maxDeniedActions} distinct denied actions`);
        state.denied_actions[proposal.fingerprint] = { proposal_id: p.proposal_id, seq: event.seq, repeats: 0 };
      }
      proposal.decision = p.decision;
      proposal.decision_event_id = event.event_id;
      moveCognition(state, p.decision === 'allow' ? 'ActionEvent.PermissionDecided:allow' : 'ActionEvent.PermissionDecided:deny', refuse);
      return true;
    }
    case 'ActionEvent.ExecutionIntentRecorded': {
      requireWake(state, refuse, { sideEffect: true });
      const p = e.payload;
      consumeAllowedProposal(state, p.proposal_id, 'files', refuse);
      const proposal = own(state.proposals, p.proposal_id)!;
      if (proposal.decision_event_id !== p.permission_event_id) {
        refuse.because(`permission_event_id ${p.permission_event_id} is not the decision on proposal ${p.proposal_id}`);
      }
      checkReadIntent(proposal.op, p, refuse);
      if (Object.keys(state.open_intents).length >= SUBJECT_LIMITS.maxOpenIntents) refuse.because(`more than ${SUBJECT_LIMITS.maxOpenIntents} open execution intents`);
      moveCognition(state, e.event_type, refuse);
      state.open_intents[event.event_id] = {
        proposal_id: p.proposal_id,
        op: p.op,
        path: p.path,
        to_path: p.to_path,
        pre_hash: p.pre_hash,
        intended_post_hash: p.intended_post_hash,
        seq: event.seq,
        outcome: 'pending',
      };
      return true;
    }
    case 'ActionEvent.ToolSucceeded': {
      // Kept before closeIntent deletes it; closeIntent refuses a missing or unknown intent first.
      const intent = own(state.open_intents, e.payload.intent_event_id);
      closeIntent(state, e.payload.intent_event_id, refuse);
      checkSucceededContent(intent!, e.payload, refuse);
      afterToolOutcome(state, e.event_type, refuse);
      return true;
    }
    case 'ActionEvent.ToolFailed':
      closeIntent(state, e.payload.intent_event_id, refuse);
      afterToolOutcome(state, e.event_type, refuse);
      return true;
    case 'ActionEvent.ToolReconciled': {
      const intent = own(state.open_intents, e.payload.intent_event_id);
      if (!intent || intent.outcome !== 'pending') refuse.because(`intent ${e.payload.intent_event_id} is not open and pending (unknown outcomes are resolved by an operator)`);
      delete state.open_intents[e.payload.intent_event_id];
      return true;
    }
    case 'ActionEvent.ToolOutcomeUnknown': {
      const intent = own(state.open_intents, e.payload.intent_event_id);
      if (!intent || intent.outcome !== 'pending') refuse.because(`intent ${e.payload.intent_event_id} is not open and pending`);
      intent.outcome = 'unknown';
      afterToolOutcome(state, e.event_type, refuse);
      moveLifecycle(state, e.event_type, 'RECOVERING', refuse);
      return true;
    }
    case 'MemoryEvent.TaskBoardChanged': {
      requireWake(state, refuse, { sideEffect: true });
      const p = e.payload;
      consumeAllowedProposal(state, p.proposal_id, 'task_board', refuse);
      moveCognition(state, e.event_type, refuse);
      const task = own(state.task_board, p.task_id);
      switch (p.op) {
        case 'add':
          if (task) refuse.because(`task ${p.task_id} exists`);
          if (Object.keys(state.task_board).length >= SUBJECT_LIMITS.maxTasks) refuse.because(`more than ${SUBJECT_LIMITS.maxTasks} tasks`);
          if (p.title === null) refuse.because('a new task needs a title');
          state.task_board[p.task_id] = { title: p.title, status: p.status ?? 'todo', priority: p.priority ?? 0, depends_on: p.depends_on };
          return true;
        case 'update':
        case 'complete':
          if (!task) refuse.because(`no task ${p.task_id}`);
          if (p.title !== null) task.title = p.title;
          if (p.priority !== null) task.priority = p.priority;
          task.status = p.op === 'complete' ? 'done' : (p.status ?? task.status);
          task.depends_on = p.depends_on;
          return true;
        case 'remove':
          if (!task) refuse.because(`no task ${p.task_id}`);
          delete state.task_board[p.task_id];
          state.current_plan = state.current_plan.filter((id) => id !== p.task_id);
          return true;
        default: {
          const unhandled: never = p.op;
          return refuse.because(`unknown task op ${String(unhandled)}`);
        }
      }
    }
    case 'MemoryEvent.JournalEntryWritten': {
      requireWake(state, refuse, { sideEffect: true });
      const p = e.payload;
      consumeAllowedProposal(state, p.proposal_id, 'journal', refuse);
      if (own(state.journal.index, p.entry_id) !== undefined) refuse.because(`journal entry ${p.entry_id} exists: the journal is append-only`);
      if (state.journal.entries >= SUBJECT_LIMITS.maxJournalEntries) refuse.because(`more than ${SUBJECT_LIMITS.maxJournalEntries} journal entries`);
      moveCognition(state, e.event_type, refuse);
      state.journal.index[p.entry_id] = event.seq;
      state.journal.entries += 1;
      return true;
    }
    case 'MemoryEvent.ClaimRecorded':
      recordClaim(state, event, e.payload, refuse);
      return true;
    case 'MemoryEvent.FocusUpdated':
      requireWake(state, refuse, { sideEffect: false });
      moveCognition(state, e.event_type, refuse);
      state.current_state.attention_target = e.payload.attention_target;
      state.current_state.waiting_condition = e.payload.waiting_condition;
      return true;
    case 'PlanEvent.PlanRevisionProposed': {
      requireWake(state, refuse, { sideEffect: false });
      const p = e.payload;
      if (own(state.plan_proposals, p.proposal_id)) refuse.because(`plan proposal ${p.proposal_id} exists`);
      if (Object.keys(state.plan_proposals).length >= SUBJECT_LIMITS.maxPendingPlanProposals) refuse.because(`more than ${SUBJECT_LIMITS.maxPendingPlanProposals} pending plan proposals`);
      moveCognition(state, e.event_type, refuse);
      state.plan_proposals[p.proposal_id] = { goal_id: p.goal_id, goal_description: p.goal_description, deadline_at: p.deadline_at, steps: p.steps };
      return true;
    }
    case 'PlanEvent.PlanRevisionAccepted': {
      requireWake(state, refuse, { sideEffect: false });
      const proposal = own(state.plan_proposals, e.payload.proposal_id);
      if (!proposal) refuse.because(`no pending plan proposal ${e.payload.proposal_id}`);
      moveCognition(state, e.event_type, refuse);
      adoptPlan(state, proposal, refuse);
      delete state.plan_proposals[e.payload.proposal_id];
      state.plan_revisions.accepted += 1;
      return true;
    }
    case 'PlanEvent.PlanRevisionRejected': {
      requireWake(state, refuse, { sideEffect: false });
      if (!own(state.plan_proposals, e.payload.proposal_id)) refuse.because(`no pending plan proposal ${e.payload.proposal_id}`);
      moveCognition(state, e.event_type, refuse);
      delete state.plan_proposals[e.payload.proposal_id];
      state.plan_revisions.rejected += 1;
      return true;
    }
    case 'WorldEvent.InformationPublished':
      for (const refuted of e.payload.refutes_event_ids) refuteEvent(state, refuted, event.event_id, event);
      return e.payload.refutes_event_ids.length > 0;
    // What happens in the world reaches the subject only when it observes it; and the
    // checkpoint is a read-only scoring view that never writes back (spec §9.4). The seal
    // ends the store, not the subject: the writer (and a trigger) keep anything from
    // following it, so the projector need not remember it.
    case 'WorldEvent.MessageReceived':
    case 'WorldEvent.GoalChanged':
    case 'WorldEvent.FileChangedExternally':
    case 'WorldEvent.DistractorOccurred':
    case 'SystemEvent.AppendRejected':
    case 'SystemEvent.ChainHeadSigned':
    case 'SystemEvent.StoreSealed':
    case 'SystemEvent.ProcessRestarted':
    case 'ExperimentEvent.WakeScheduled':
    case 'ExperimentEvent.InterventionDelivered':
    case 'ExperimentEvent.CheckpointRecorded':
    case 'ExperimentEvent.BudgetLedgerRecorded':
      return false;
    default: {
      const unhandled: never = e;
      return refuse.because(`no projection rule for ${JSON.stringify(unhandled)}`);
    }
  }
}

function recordClaim(state: SubjectState, event: EventEnvelope, p: PayloadOf<'MemoryEvent.ClaimRecorded'>, refuse: Refuse): void {
  requireWake(state, refuse, { sideEffect: false });
  if (own(state.claims, p.claim_id)) refuse.because(`claim ${p.claim_id} exists`);
  if (Object.keys(state.claims).length >= SUBJECT_LIMITS.maxClaims) refuse.because(`more than ${SUBJECT_LIMITS.maxClaims} claims`);
  if (p.claim_type === 'FACT' && p.evidence_event_ids.length === 0) refuse.because('a FACT needs evidence_event_ids');
  if (p.claim_type === 'INFERENCE' && p.confidence === null) refuse.because('an INFERENCE carries a confidence');
  moveCognition(state, event.event_type as CognitiveTrigger, refuse);
  const bornRefuted = p.claim_type === 'FACT' ? indexFact(state, p.claim_id, event.event_id, p.evidence_event_ids) : null;
  state.claims[p.claim_id] = {
    claim_type: p.claim_type,
    statement: p.statement,
    claim_event_id: event.event_id,
    evidence_event_ids: p.evidence_event_ids,
    confidence: p.confidence,
    alternatives: p.alternatives,
    seq: event.seq,
    status: bornRefuted ? 'refuted' : 'active',
    refuted_by: bornRefuted,
  };
  // A FACT resting on refuted evidence is itself refuted, and so is whatever rests on it.
  if (bornRefuted) refuteEvent(state, event.event_id, bornRefuted.refuting_event_id, event);
}

function adoptPlan(state: SubjectState, proposal: SubjectState['plan_proposals'][string], refuse: Refuse): void {
  const existing = state.goals.find((g) => g.goal_id === proposal.goal_id);
  for (const goal of state.goals) if (goal.goal_id !== proposal.goal_id && goal.status === 'active') goal.status = 'superseded';
  if (existing) {
    existing.description = proposal.goal_description;
    existing.deadline_at = proposal.deadline_at;
    existing.status = 'active';
  } else {
    if (state.goals.length >= SUBJECT_LIMITS.maxGoals) refuse.because(`more than ${SUBJECT_LIMITS.maxGoals} goals`);
    state.goals.push({ goal_id: proposal.goal_id, description: proposal.goal_description, deadline_at: proposal.deadline_at, status: 'active' });
  }
  state.current_state.current_goal_id = proposal.goal_id;
  for (const step of proposal.steps) {
    if (own(state.task_board, step.task_id)) continue;
    if (Object.keys(state.task_board).length >= SUBJECT_LIMITS.maxTasks) refuse.because(`more than ${SUBJECT_LIMITS.maxTasks} tasks`);
    state.task_board[step.task_id] = { title: step.title, status: 'todo', priority: 0, depends_on: [] };
  }
  state.current_plan = proposal.steps.map((s) => s.task_id);
}

/** sha256(JCS(state)). */
export function subjectStateHash(state: SubjectState): string {
  return hashText(canonicalJson(state));
}

export const subjectProjection: Projection<SubjectState> & {
  applyAll(state: SubjectState, events: readonly EventEnvelope[]): SubjectState;
  applyInPlace(state: SubjectState, event: EventEnvelope): void;
} = {
  name: 'subject',
  version: SUBJECT_PROJECTOR_VERSION,
  stateMachineVersion: STATE_MACHINE_VERSION,
  initial: initialSubjectState,
  apply(state, event) {
    const next = structuredClone(state);
    evolve(next, event);
    return next;
  },
  applyAll(state, events) {
    const next = structuredClone(state);
    for (const event of events) evolve(next, event);
    return next;
  },
  applyInPlace: evolve,
};
