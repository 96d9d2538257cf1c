// The Subject aggregate (spec §9.1) and what the projector keeps beside it: task board,
// journal index, open execution intents, claims with their evidence. One zod schema is
// the type and the check; every collection has an explicit bound (SUBJECT_LIMITS).
import { z } from 'zod';
import { Budget } from '../schema/events/experiment-events.js';
import { HashString } from '../schema/hash.js';
import { FileIntentOp, ToolName } from '../schema/tools.js';
import { CognitiveState } from './cognition.js';
import { LifecycleState } from './lifecycle.js';

export const SUBJECT_LIMITS = {
  maxGoals: 64,
  maxTasks: 256,
  maxJournalEntries: 10_000,
  maxProposalsPerWake: 64,
  maxDeniedActions: 1_000,
  maxOpenIntents: 64,
  maxClaims: 10_000,
  maxRefutedEvents: 10_000,
  maxPendingPlanProposals: 16,
} as const;

const Id = z.string();
const Nullable = <T extends z.ZodType>(t: T) => t.nullable();

export const Goal = z.strictObject({
  goal_id: Id,
  description: z.string(),
  deadline_at: Nullable(z.string()),
  status: z.enum(['active', 'superseded']),
});

export const Task = z.strictObject({
  title: z.string(),
  status: z.enum(['todo', 'doing', 'blocked', 'done']),
  priority: z.number().int(),
  depends_on: z.array(Id),
});

export const Proposal = z.strictObject({
  tool: ToolName,
  op: Id,
  /** sha256 of JCS({tool, op, args}): the same action proposed again has the same one. */
  fingerprint: HashString,
  decision: z.enum(['pending', 'allow', 'deny']),
  /** The PermissionDecided event; an execution intent must name it. */
  decision_event_id: Nullable(Id),
  executed: z.boolean(),
});

export const OpenIntent = z.strictObject({
  proposal_id: Id,
  /** 'read' since projector 1.2.0: a read is executed like any file op, so what it returns is evidence. */
  op: FileIntentOp,
  path: z.string(),
  to_path: Nullable(z.string()),
  pre_hash: Nullable(HashString),
  intended_post_hash: Nullable(HashString),
  seq: z.number().int(),
  /** pending: not yet confirmed; unknown: could not be confirmed (lifecycle RECOVERING). */
  outcome: z.enum(['pending', 'unknown']),
});

export const Claim = z.strictObject({
  claim_type: z.enum(['FACT', 'PLAN', 'INFERENCE']),
  statement: z.string(),
  claim_event_id: Id,
  evidence_event_ids: z.array(Id),
  confidence: Nullable(z.number()),
  alternatives: z.array(z.string()),
  seq: z.number().int(),
  /** A FACT is refuted when any event it rests on is refuted, directly or through another FACT. */
  status: z.enum(['active', 'refuted']),
  refuted_by: Nullable(z.strictObject({ refuting_event_id: Id, via_event_id: Id })),
});

export const PlanProposal = z.strictObject({
  goal_id: Id,
  goal_description: z.string(),
  deadline_at: Nullable(z.string()),
  steps: z.array(z.strictObject({ task_id: Id, title: z.string() })),
});

export const SubjectState = z.strictObject({
  subject_id: Nullable(Id),
  identity: Nullable(z.strictObject({ name: z.string(), description: z.string() })),
  identity_schema_version: Nullable(z.string()),
  lifecycle_state: LifecycleState,
  cognitive_state: CognitiveState,
  current_state: z.strictObject({
    current_goal_id: Nullable(Id),
    attention_target: Nullable(z.string()),
    waiting_condition: Nullable(z.string()),
    last_observation_at: Nullable(z.string()),
  }),
  goals: z.array(Goal),
  current_plan: z.array(Id),
  resource_budget: z.strictObject({
    wake_id: Nullable(Id),
    granted: Budget,
    remaining: Budget,
    /** Model calls happen before they are recorded; an overrun is counted, never hidden. */
    overruns: Budget,
  }),
  current_wake_id: Nullable(Id),
  last_applied_event_seq: z.number().int(),
  aggregate_version: z.number().int(),
  task_board: z.record(Id, Task),
  journal: z.strictObject({ entries: z.number().int(), index: z.record(Id, z.number().int()) }),
  proposals: z.record(Id, Proposal),
  denied_actions: z.record(HashString, z.strictObject({ proposal_id: Id, seq: z.number().int(), repeats: z.number().int() })),
  open_intents: z.record(Id, OpenIntent),
  claims: z.record(Id, Claim),
  /** event_id → the event that refuted it (directly, or a FACT's ClaimRecorded refuted through it). */
  refuted_events: z.record(Id, Id),
  /** event_id → ids of FACT claims resting on it: the justification index refutation walks. */
  evidence_dependents: z.record(Id, z.array(Id)),
  /** ClaimRecorded event_id → its FACT claim, so refuting that event downgrades the FACT itself. */
  fact_claim_events: z.record(Id, Id),
  plan_proposals: z.record(Id, PlanProposal),
  plan_revisions: z.strictObject({ accepted: z.number().int(), rejected: z.number().int() }),
});
export type SubjectState = z.infer<typeof SubjectState>;

const ZERO = { model_calls: 0, tokens: 0, tool_calls: 0 };

export function initialSubjectState(): SubjectState {
  return {
    subject_id: null,
    identity: null,
    identity_schema_version: null,
    lifecycle_state: 'CREATED',
    cognitive_state: 'IDLE',
    current_state: { current_goal_id: null, attention_target: null, waiting_condition: null, last_observation_at: null },
    goals: [],
    current_plan: [],
    resource_budget: { wake_id: null, granted: { ...ZERO }, remaining: { ...ZERO }, overruns: { ...ZERO } },
    current_wake_id: null,
    last_applied_event_seq: 0,
    aggregate_version: 0,
    task_board: {},
    journal: { entries: 0, index: {} },
    proposals: {},
    denied_actions: {},
    open_intents: {},
    claims: {},
    refuted_events: {},
    evidence_dependents: {},
    fact_claim_events: {},
    plan_proposals: {},
    plan_revisions: { accepted: 0, rejected: 0 },
  };
}
