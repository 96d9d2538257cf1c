// Builds REAL event streams for one subject, for projector and writer tests: payloads
// checked against the catalogue, envelopes sealed with the writer's own serialiser
// (buildEnvelopeText), event ids from eventIdFor, contiguous seq and a correct
// previous_event_hash chain. Drafts are what a caller hands the writer; a SubjectStream
// seals them one by one, exactly as the writer would.
import { canonicalJson } from '../../schema/canonical-json.js';
import { computeEventHash, computePayloadHash, eventIdFor } from '../../schema/envelope-hash.js';
import { EventEnvelope, type Actor } from '../../schema/envelope.js';
import { EVENT_SCHEMA_VERSION, eventDefinition, schemaVersionOf, type EventType, type PayloadOf } from '../../schema/event-catalog.js';
import { GENESIS_HASH, hashCanonical, type HashString } from '../../schema/hash.js';
import { buildEnvelopeText } from '../../writer/envelope-text.js';
import type { EventDraft } from '../../writer/protocol.js';

export const SUBJECT_ID = 'subject-001';
export const EXPERIMENT_ID = 'exp-test-001';
export const MANIFEST_SHA256: HashString = hashCanonical({ experiment_id: EXPERIMENT_ID, subject_id: SUBJECT_ID, purpose: 'projector tests' });
const T0 = Date.parse('2026-07-20T08:00:00.000Z');
const RECORDED_AT = '2026-07-20T08:00:00.000Z';

/** Virtual time of the event at `seq`: one minute apart. */
export function virtualTime(seq: number): string {
  return new Date(T0 + seq * 60_000).toISOString();
}

export type Budget = PayloadOf<'ExperimentEvent.WakeStarted'>['budget'];
export const BUDGET: Budget = { model_calls: 4, tokens: 10_000, tool_calls: 4 };

function defaultActor(type: EventType): Actor {
  if (type === 'ActionEvent.ToolSucceeded' || type === 'ActionEvent.ToolFailed' || type === 'ActionEvent.ToolOutcomeUnknown' || type === 'ActionEvent.ToolReconciled') return 'tool';
  switch (type.split('.')[0]) {
    case 'ModelOutputEvent':
      return 'model';
    case 'ActionEvent':
    case 'MemoryEvent':
    case 'PlanEvent':
      return 'runtime';
    default:
      return 'experiment';
  }
}

/** A draft of `type`; the payload is checked against the catalogue so a test can never build a malformed one by accident. */
export function draft<T extends EventType>(type: T, payload: PayloadOf<T>, overrides: Partial<EventDraft> = {}): EventDraft {
  const definition = eventDefinition(type);
  if (!definition) throw new Error(`catalogue lacks ${type}`);
  definition.payload.parse(payload);
  return {
    event_type: type,
    schema_version: schemaVersionOf(type),
    occurred_at: virtualTime(0),
    actor: defaultActor(type),
    causation_id: null,
    correlation_id: null,
    idempotency_key: null,
    payload: payload as Record<string, unknown>,
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------
// Draft factories, one per event type the subject projector cares about.

export type Tool = PayloadOf<'ActionEvent.ActionProposed'>['tool'];
export type ClaimType = PayloadOf<'MemoryEvent.ClaimRecorded'>['claim_type'];
export type TaskOp = PayloadOf<'MemoryEvent.TaskBoardChanged'>['op'];
type Args = PayloadOf<'ActionEvent.ActionProposed'>['args'];

/** The call record of issue 15 (schema/events/model-output-events.ts), as a server that reports nothing more would leave it. */
const CALL_RECORD = { protocol: 'ds-model-output/2', finish_reason: 'stop', response_model: null, prompt_tokens_counted: null, prompt_count_source: null, attempts: 1, prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null } as const;
const MODEL_CALL = {
  adapter: 'reference' as const,
  model_id: 'reference-policy-1',
  params: { temperature: 0, top_p: null, seed: 7, max_tokens: 512 },
  system_fingerprint: null,
  latency_ms: 12,
};

export const d = {
  storeOpened: (subjectId = SUBJECT_ID) =>
    draft('SystemEvent.StoreOpened', {
      experiment_id: EXPERIMENT_ID,
      subject_id: subjectId,
      manifest_sha256: MANIFEST_SHA256,
      store_format_version: 1,
      event_schema_version: EVENT_SCHEMA_VERSION,
      writer_version: '1.0.0',
      projection: { name: 'subject', version: '1.0.0' },
    }),
  subjectInitialized: (o: { goalId?: string; tasks?: readonly string[]; journalEntryId?: string } = {}) =>
    draft('SystemEvent.SubjectInitialized', {
      identity: { name: 'Ada', description: 'A digital subject keeping a research notebook.' },
      identity_schema_version: '1.0.0',
      goal: { goal_id: o.goalId ?? 'goal-1', description: 'Prepare the Friday report', deadline_at: '2026-07-23T17:00:00.000Z' },
      tasks: (o.tasks ?? ['task-1', 'task-2']).map((task_id, i) => ({ task_id, title: `Task ${task_id}`, priority: i % 10, depends_on: [] })),
      journal_first_page: { entry_id: o.journalEntryId ?? 'entry-0', text: 'Day one.' },
    }),
  paused: () => draft('SystemEvent.Paused', { operator: 'op', reason: 'inspection' }),
  resumed: () => draft('SystemEvent.Resumed', { operator: 'op', reason: 'inspection done', cost_cap_raised_to_usd: null }),
  emergencyStopped: () => draft('SystemEvent.EmergencyStopped', { operator: 'op', reason: 'stop button' }),
  operatorResolved: (intentEventId: string, resolution: 'happened' | 'did_not_happen' = 'happened') =>
    draft('SystemEvent.OperatorResolved', { operator: 'op', intent_event_id: intentEventId, resolution, note: 'checked the file by hand' }),
  processRestarted: () => draft('SystemEvent.ProcessRestarted', { process: 'runtime', reason: 'crash drill', previous_exit: { code: null, signal: 'SIGKILL' } }),

  message: (subject = 'status', body = 'The dataset arrives Thursday.') =>
    draft('WorldEvent.MessageReceived', { from: 'reviewer', subject, body, in_reply_to: null }),
  information: (refutes: readonly string[], body = 'Correction.') =>
    draft('WorldEvent.InformationPublished', { source: 'newsroom', body, refutes_event_ids: [...refutes] }),
  distractor: (body = 'A cat video.') => draft('WorldEvent.DistractorOccurred', { channel: 'feed', body }),
  goalChanged: (goalId = 'goal-2') => draft('WorldEvent.GoalChanged', { goal_id: goalId, description: 'New goal', deadline_at: null, reason: 'the boss said so' }),
  fileChangedExternally: (path = 'notes.md') => draft('WorldEvent.FileChangedExternally', { path, change: 'modified', post_hash: hashCanonical({ path }) }),

  wakeScheduled: (wakeId: string, budget: Budget = BUDGET) => draft('ExperimentEvent.WakeScheduled', { wake_id: wakeId, wake_at: virtualTime(0), budget }),
  wakeStarted: (wakeId: string, budget: Budget = BUDGET, visibleToSeq = 1) =>
    draft('ExperimentEvent.WakeStarted', { wake_id: wakeId, visible_to_seq: visibleToSeq, budget }, { correlation_id: wakeId }),
  wakeEnded: (wakeId: string, outcome: PayloadOf<'ExperimentEvent.WakeEnded'>['outcome'] = 'completed') =>
    draft('ExperimentEvent.WakeEnded', { wake_id: wakeId, outcome }, { correlation_id: wakeId }),
  checkpoint: (wakeId: string, observedSeq = 0, evidence: readonly string[] = []) =>
    draft('ExperimentEvent.CheckpointRecorded', {
      wake_id: wakeId,
      current_goal_id: 'goal-1',
      goal_status: 'in progress',
      attention_target: 'report',
      waiting_condition: null,
      next_action: 'write the summary',
      observed_event_seq: observedSeq,
      evidence_event_ids: [...evidence],
    }),
  budgetLedger: (wakeId: string, budget: Budget = BUDGET) =>
    draft('ExperimentEvent.BudgetLedgerRecorded', { wake_id: wakeId, granted: budget, used: { model_calls: 1, tokens: 10, tool_calls: 0, retries: 0, cost_nano_usd: null } }),
  intervention: (wakeId: string, eventIds: readonly string[]) =>
    draft('ExperimentEvent.InterventionDelivered', { intervention_id: `int-${wakeId}`, wake_id: wakeId, event_ids: [...eventIds] }),

  modelAnswered: (wakeId: string, usage = { prompt_tokens: 100, completion_tokens: 50 }) =>
    draft('ModelOutputEvent.ModelAnswered', { wake_id: wakeId, ...MODEL_CALL, raw_output: '{"next":"think"}', usage, usage_source: 'server', ...CALL_RECORD, context: { window_events: 0, eligible_total: 0, omitted_by_count: 0, omitted_by_token_cap: 0, not_eligible: 0, tokens_estimated: 0 } }, { correlation_id: wakeId }),
  modelCallFailed: (wakeId: string, failure: PayloadOf<'ModelOutputEvent.ModelCallFailed'>['failure'] = 'timeout') =>
    draft('ModelOutputEvent.ModelCallFailed', { wake_id: wakeId, ...MODEL_CALL, ...CALL_RECORD, context: null, failure, detail: 'no answer', raw_output: null, usage: null, usage_source: null }, { correlation_id: wakeId }),

  actionProposed: (proposalId: string, tool: Tool, op: string, args: Args = {}) =>
    draft('ActionEvent.ActionProposed', { proposal_id: proposalId, tool, op, args, rationale: 'because the plan says so' }),
  permission: (proposalId: string, decision: 'allow' | 'deny', repeatOfDenied = false) =>
    draft('ActionEvent.PermissionDecided', {
      proposal_id: proposalId,
      decision,
      rules: [{ rule: 'tool_allowed', passed: decision === 'allow', detail: decision === 'allow' ? 'ok' : 'not allowed' }],
      repeat_of_denied: repeatOfDenied,
    }),
  intent: (proposalId: string, permissionEventId: string, path = 'notes.md') =>
    draft(
      'ActionEvent.ExecutionIntentRecorded',
      { proposal_id: proposalId, permission_event_id: permissionEventId, op: 'write', path, to_path: null, pre_hash: null, intended_post_hash: hashCanonical({ path, v: 1 }) },
      { idempotency_key: null },
    ),
  toolSucceeded: (intentEventId: string) => draft('ActionEvent.ToolSucceeded', { intent_event_id: intentEventId, observed_post_hash: hashCanonical({ intentEventId }), content: null }),
  toolFailed: (intentEventId: string) => draft('ActionEvent.ToolFailed', { intent_event_id: intentEventId, error: 'disk full', observed_hash: null }),
  toolOutcomeUnknown: (intentEventId: string) => draft('ActionEvent.ToolOutcomeUnknown', { intent_event_id: intentEventId, observed_hash: null, detail: 'hash matches neither side' }),
  toolReconciled: (intentEventId: string, outcome: 'happened' | 'did_not_happen' = 'happened') =>
    draft('ActionEvent.ToolReconciled', { intent_event_id: intentEventId, outcome, observed_hash: null }),

  taskChanged: (proposalId: string, taskId: string, op: TaskOp, o: { title?: string | null; status?: 'todo' | 'doing' | 'blocked' | 'done' | null; priority?: number | null; dependsOn?: string[] } = {}) =>
    draft('MemoryEvent.TaskBoardChanged', {
      proposal_id: proposalId,
      task_id: taskId,
      op,
      title: o.title === undefined ? (op === 'add' ? `Task ${taskId}` : null) : o.title,
      status: o.status ?? null,
      priority: o.priority ?? null,
      depends_on: o.dependsOn ?? [],
    }),
  journal: (proposalId: string, entryId: string, text = 'Wrote something down.') => draft('MemoryEvent.JournalEntryWritten', { proposal_id: proposalId, entry_id: entryId, text }),
  claim: (claimId: string, claimType: ClaimType, evidence: readonly string[], o: { confidence?: number | null; statement?: string; alternatives?: string[] } = {}) =>
    draft('MemoryEvent.ClaimRecorded', {
      claim_id: claimId,
      claim_type: claimType,
      statement: o.statement ?? `${claimType} ${claimId}`,
      evidence_event_ids: [...evidence],
      confidence: o.confidence === undefined ? (claimType === 'INFERENCE' ? 0.7 : null) : o.confidence,
      alternatives: o.alternatives ?? (claimType === 'INFERENCE' ? ['it may be otherwise'] : []),
    }),
  focus: (attention: string | null = 'report', waiting: string | null = 'dataset') => draft('MemoryEvent.FocusUpdated', { attention_target: attention, waiting_condition: waiting }),
  planProposed: (proposalId: string, goalId = 'goal-2', steps: readonly string[] = ['step-1']) =>
    draft('PlanEvent.PlanRevisionProposed', {
      proposal_id: proposalId,
      reason: 'new information',
      goal_id: goalId,
      goal_description: `Goal ${goalId}`,
      deadline_at: null,
      steps: steps.map((task_id) => ({ task_id, title: `Step ${task_id}` })),
    }),
  planAccepted: (proposalId: string) => draft('PlanEvent.PlanRevisionAccepted', { proposal_id: proposalId }),
  planRejected: (proposalId: string, reasonCode: 'capability_disabled' | 'invalid_plan' = 'capability_disabled') =>
    draft('PlanEvent.PlanRevisionRejected', { proposal_id: proposalId, reason_code: reasonCode }),
};

// ---------------------------------------------------------------------------------------
// Sealing drafts into envelopes.

export interface SealAt {
  readonly subjectId: string;
  readonly seq: number;
  readonly previousEventHash: HashString;
}

/**
 * The envelope the writer would store for `draft` at `at.seq`, parsed back from its JCS
 * text. (Not re-validated with the EventEnvelope schema here, for speed: the tests check
 * whole generated chains with `expectValidChain`.)
 */
export function seal(draftToSeal: EventDraft, at: SealAt): EventEnvelope {
  const fields = {
    event_id: eventIdFor(at.subjectId, at.seq),
    subject_id: at.subjectId,
    seq: at.seq,
    event_type: draftToSeal.event_type,
    schema_version: draftToSeal.schema_version,
    occurred_at: draftToSeal.occurred_at,
    recorded_at: RECORDED_AT,
    actor: draftToSeal.actor,
    causation_id: draftToSeal.causation_id,
    correlation_id: draftToSeal.correlation_id,
    idempotency_key: draftToSeal.idempotency_key,
    previous_event_hash: at.previousEventHash,
  };
  const built = buildEnvelopeText(fields, canonicalJson(draftToSeal.payload));
  return JSON.parse(built.text) as EventEnvelope;
}

/**
 * Seals drafts into a chain from seq 1 (or from `seqOf(i)` when a test wants a gap, or
 * onto an existing chain ending in `previousEventHash`), stamping each with the virtual
 * time of its seq.
 */
export function chain(drafts: readonly EventDraft[], subjectId = SUBJECT_ID, seqOf: (index: number) => number = (i) => i + 1, previousEventHash: HashString = GENESIS_HASH): EventEnvelope[] {
  const out: EventEnvelope[] = [];
  let previous = previousEventHash;
  drafts.forEach((dr, i) => {
    const seq = seqOf(i);
    const envelope = seal({ ...dr, occurred_at: virtualTime(seq) }, { subjectId, seq, previousEventHash: previous });
    out.push(envelope);
    previous = envelope.event_hash as HashString;
  });
  return out;
}

/** An append-only stream of one subject's events. */
export class SubjectStream {
  readonly drafts: EventDraft[] = [];
  readonly events: EventEnvelope[] = [];

  constructor(readonly subjectId = SUBJECT_ID) {}

  get nextSeq(): number {
    return this.events.length + 1;
  }

  /** The event id the next event will get. */
  get nextEventId(): string {
    return eventIdFor(this.subjectId, this.nextSeq);
  }

  get last(): EventEnvelope {
    const last = this.events[this.events.length - 1];
    if (!last) throw new Error('empty stream');
    return last;
  }

  /** The envelope `dr` would get as the next event, without appending it. */
  peek(dr: EventDraft): EventEnvelope {
    const previous = (this.events.length === 0 ? GENESIS_HASH : this.last.event_hash) as HashString;
    return seal({ ...dr, occurred_at: virtualTime(this.nextSeq) }, { subjectId: this.subjectId, seq: this.nextSeq, previousEventHash: previous });
  }

  push(dr: EventDraft): EventEnvelope {
    const envelope = this.peek(dr);
    this.drafts.push(dr);
    this.events.push(envelope);
    return envelope;
  }

  pushAll(drs: readonly EventDraft[]): EventEnvelope[] {
    return drs.map((dr) => this.push(dr));
  }

  /** A new stream with the same events: to branch a scenario. */
  fork(): SubjectStream {
    const copy = new SubjectStream(this.subjectId);
    copy.drafts.push(...this.drafts);
    copy.events.push(...this.events);
    return copy;
  }

  // ---- composite steps ------------------------------------------------------------

  /** StoreOpened (seq 1) and SubjectInitialized. */
  open(o: Parameters<typeof d.subjectInitialized>[0] = {}): this {
    if (this.events.length !== 0) throw new Error('open() starts a stream');
    this.push(d.storeOpened(this.subjectId));
    this.push(d.subjectInitialized(o));
    return this;
  }

  /** ActionProposed(files) → allow → ExecutionIntentRecorded; returns the intent envelope (still open). */
  fileIntent(proposalId: string, path = 'notes.md', args: Args = { path }): EventEnvelope {
    this.push(d.actionProposed(proposalId, 'files', 'write', args));
    const permission = this.push(d.permission(proposalId, 'allow'));
    return this.push(d.intent(proposalId, permission.event_id, path));
  }

  /** ActionProposed → allow → the tool operation (task board or journal) as given. */
  allowedOp(proposalId: string, tool: 'task_board' | 'journal', op: EventDraft, args: Args = {}): EventEnvelope {
    this.push(d.actionProposed(proposalId, tool, tool === 'journal' ? 'append' : 'change', args));
    this.push(d.permission(proposalId, 'allow'));
    return this.push(op);
  }
}

export interface FullWakeIds {
  readonly wakeStarted: EventEnvelope;
  readonly intent: EventEnvelope;
  readonly toolSucceeded: EventEnvelope;
  readonly fact: EventEnvelope;
  readonly plan: EventEnvelope;
  readonly wakeEnded: EventEnvelope;
}

/**
 * One whole wake as DESIGN §6 tells it: WakeStarted (budget) → ModelAnswered →
 * ActionProposed → PermissionDecided(allow) → ExecutionIntentRecorded → ToolSucceeded →
 * ClaimRecorded(FACT citing `factEvidence`) → FocusUpdated → PlanRevisionProposed →
 * Accepted/Rejected → WakeEnded.
 */
export function fullWake(s: SubjectStream, o: { wakeId: string; factEvidence: readonly string[]; claimId: string; acceptPlan: boolean; planGoal?: string; budget?: Budget }): FullWakeIds {
  const wakeStarted = s.push(d.wakeStarted(o.wakeId, o.budget ?? BUDGET, s.nextSeq - 1));
  s.push(d.modelAnswered(o.wakeId));
  const intent = s.fileIntent(`${o.wakeId}-p1`, `${o.wakeId}.md`);
  const toolSucceeded = s.push(d.toolSucceeded(intent.event_id));
  const fact = s.push(d.claim(o.claimId, 'FACT', o.factEvidence));
  s.push(d.focus('report', `reply to ${o.wakeId}`));
  const planId = `${o.wakeId}-plan`;
  s.push(d.planProposed(planId, o.planGoal ?? `goal-${o.wakeId}`, [`${o.wakeId}-step-1`, `${o.wakeId}-step-2`]));
  const plan = s.push(o.acceptPlan ? d.planAccepted(planId) : d.planRejected(planId));
  const wakeEnded = s.push(d.wakeEnded(o.wakeId));
  return { wakeStarted, intent, toolSucceeded, fact, plan, wakeEnded };
}

export interface StandardRun {
  readonly stream: SubjectStream;
  readonly message1: EventEnvelope;
  readonly wake1: FullWakeIds;
  readonly correction: EventEnvelope;
  readonly wake2: FullWakeIds;
  readonly journal: EventEnvelope;
  readonly task: EventEnvelope;
}

/**
 * The narrative of the brief: store opened, subject initialized, a message, wake 1 (a
 * file write and a FACT citing the message, plan accepted), world events between wakes
 * including a correction refuting the message, wake 2 (journal and task-board ops, a
 * FACT citing the tool result, plan rejected), a distractor.
 */
export function standardRun(subjectId = SUBJECT_ID): StandardRun {
  const s = new SubjectStream(subjectId).open();
  const message1 = s.push(d.message('dataset', 'The dataset arrives Thursday.'));
  const wake1 = fullWake(s, { wakeId: 'wake-1', factEvidence: [message1.event_id], claimId: 'fact-dataset', acceptPlan: true });
  s.push(d.checkpoint('wake-1', wake1.wakeEnded.seq));
  s.push(d.distractor());
  const correction = s.push(d.information([message1.event_id], 'The dataset arrives Monday, not Thursday.'));
  s.push(d.message('lunch', 'Lunch at noon.'));
  const wake2 = fullWake(s, { wakeId: 'wake-2', factEvidence: [wake1.toolSucceeded.event_id], claimId: 'fact-file', acceptPlan: false });
  // The same wake's memory tools are run in wake 3 to keep fullWake uniform.
  s.push(d.wakeStarted('wake-3', BUDGET, s.nextSeq - 1));
  s.push(d.modelAnswered('wake-3'));
  const journal = s.allowedOp('w3-journal', 'journal', d.journal('w3-journal', 'entry-1', 'The dataset is late.'));
  const task = s.allowedOp('w3-task', 'task_board', d.taskChanged('w3-task', 'task-3', 'add', { title: 'Chase the dataset', priority: 2 }));
  s.push(d.wakeEnded('wake-3'));
  s.push(d.distractor('Another cat video.'));
  return { stream: s, message1, wake1, correction, wake2, journal, task };
}

/**
 * Checks a chain the slow, obvious way (schema/envelope-hash.ts, as a verifier would):
 * schema, contiguous seq from 1, ids from eventIdFor, the previous_event_hash links,
 * payload and event hashes. Throws on the first problem.
 */
export function assertValidChain(events: readonly EventEnvelope[], subjectId = SUBJECT_ID): void {
  let previous: string = GENESIS_HASH;
  events.forEach((e, i) => {
    const where = `event ${i} (${e.event_type})`;
    const parsed = EventEnvelope.safeParse(e);
    if (!parsed.success) throw new Error(`${where}: not an EventEnvelope: ${parsed.error.message}`);
    const definition = eventDefinition(e.event_type);
    if (!definition) throw new Error(`${where}: unknown type`);
    const payload = definition.payload.safeParse(e.payload);
    if (!payload.success) throw new Error(`${where}: payload: ${payload.error.message}`);
    if (e.seq !== i + 1) throw new Error(`${where}: seq ${e.seq}`);
    if (e.subject_id !== subjectId) throw new Error(`${where}: subject ${e.subject_id}`);
    if (e.event_id !== eventIdFor(subjectId, e.seq)) throw new Error(`${where}: event_id`);
    if (e.previous_event_hash !== previous) throw new Error(`${where}: previous_event_hash`);
    if (e.payload_hash !== computePayloadHash(e.payload)) throw new Error(`${where}: payload_hash`);
    if (e.event_hash !== computeEventHash(e)) throw new Error(`${where}: event_hash`);
    previous = e.event_hash;
  });
}
