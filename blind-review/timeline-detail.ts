// The detail of each kind of timeline entry in a blind-review package, and how long its texts may
// be: strict, every key always present (null where not applicable), so that the key paths of a kind
// are the same in every package (the leak check compares them). The normalizer's handlers
// (blind-review/disposition/*-events.ts) fill them; the normalizer parses each with its schema.
import { z } from 'zod';
import { Ref, type TimelineKind } from './package-format.js';
import { ShownModelFailure } from './shown-model-failure.js';

/** Longest text kept in a detail field (a raw model output is at most 48,000 characters). */
export const MAX_TEXT_CHARS = 32_768;
/** Longest one-line summary. */
export const MAX_SUMMARY_CHARS = 240;
/** Fields the contract bounds at 2,000 characters (rationale, alternatives, descriptions). */
export const MAX_SHORT_CHARS = 2_000;

const Count = z.number().int().min(0);
const Text = z.string();
/** Simulated time ("h12:30"), or "before hour 0" / "after h999" for a time outside the study. */
const RelTime = z.string().max(32);
const FileHash = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const Budget = z.strictObject({ model_calls: Count, tokens: Count, tool_calls: Count });

export const DETAIL_SCHEMAS = {
  subject_initialized: z.strictObject({
    identity: z.strictObject({ name: Text, description: Text }),
    goal: z.strictObject({ goal_id: Text, description: Text, deadline: RelTime.nullable() }),
    tasks: z.array(z.strictObject({ task_id: Text, title: Text, priority: z.number().int(), depends_on: z.array(Text) })),
    journal_first_page: Text,
  }),
  wake_started: z.strictObject({ budget: Budget, visible_up_to: Ref.nullable() }),
  wake_ended: z.strictObject({ outcome: Text }),
  world_message: z.strictObject({ from: Text, subject: Text, body: Text, in_reply_to: Text.nullable() }),
  world_goal_changed: z.strictObject({ goal_id: Text, description: Text, deadline: RelTime.nullable(), reason: Text }),
  world_file_changed: z.strictObject({ path: Text, change: Text, post_hash: FileHash.nullable() }),
  world_information: z.strictObject({ source: Text, body: Text, refutes: z.array(Ref) }),
  world_distraction: z.strictObject({ channel: Text, body: Text }),
  model_answered: z.strictObject({ raw_output: Text, completion_tokens: Count }),
  model_call_failed: z.strictObject({ failure: ShownModelFailure, detail: Text, raw_output: Text.nullable() }),
  action_proposed: z.strictObject({
    tool: Text,
    op: Text,
    target: Text.nullable(),
    /** The arguments as name/value pairs: a fixed shape whatever the tool. */
    args: z.array(z.strictObject({ name: Text, value: z.union([Text, z.number(), z.boolean(), z.null()]) })),
    rationale: Text,
  }),
  permission_decided: z.strictObject({
    proposal: Ref.nullable(),
    decision: z.enum(['allow', 'deny']),
    rules: z.array(z.strictObject({ rule: Text, passed: z.boolean(), detail: Text })),
    repeat_of_denied: z.boolean(),
  }),
  execution_intent: z.strictObject({ proposal: Ref.nullable(), permission: Ref.nullable(), op: Text, path: Text, to_path: Text.nullable(), pre_hash: FileHash.nullable(), intended_post_hash: FileHash.nullable() }),
  tool_succeeded: z.strictObject({ intent: Ref.nullable(), observed_post_hash: FileHash.nullable(), content: Text.nullable() }),
  tool_failed: z.strictObject({ intent: Ref.nullable(), error: Text, observed_hash: FileHash.nullable() }),
  tool_outcome_unknown: z.strictObject({ intent: Ref.nullable(), observed_hash: FileHash.nullable(), detail: Text }),
  tool_reconciled: z.strictObject({ intent: Ref.nullable(), outcome: z.enum(['happened', 'did_not_happen']), observed_hash: FileHash.nullable() }),
  claim_recorded: z.strictObject({ claim_type: z.enum(['FACT', 'PLAN', 'INFERENCE']), statement: Text, evidence: z.array(Ref), confidence: z.number().nullable(), alternatives: z.array(Text) }),
  focus_updated: z.strictObject({ attention_target: Text.nullable(), waiting_condition: Text.nullable() }),
  journal_entry: z.strictObject({ proposal: Ref.nullable(), entry_id: Text, text: Text }),
  task_board_changed: z.strictObject({ proposal: Ref.nullable(), task_id: Text, op: Text, title: Text.nullable(), status: Text.nullable(), priority: z.number().int().nullable(), depends_on: z.array(Text) }),
  plan_revision_proposed: z.strictObject({ reason: Text, goal_id: Text, goal_description: Text, deadline: RelTime.nullable(), steps: z.array(z.strictObject({ task_id: Text, title: Text })) }),
  checkpoint: z.strictObject({
    current_goal_id: Text.nullable(),
    goal_status: Text.nullable(),
    attention_target: Text.nullable(),
    waiting_condition: Text.nullable(),
    next_action: Text.nullable(),
    observed_up_to: Ref.nullable(),
    evidence: z.array(Ref),
  }),
  budget_ledger: z.strictObject({ granted: Budget, used: z.strictObject({ model_calls: Count, tool_calls: Count, retries: Count }) }),
  process_restarted: z.strictObject({ process: z.enum(['runtime', 'writer']), previous_exit: z.strictObject({ code: z.number().int().nullable(), signal: Text.nullable() }) }),
  write_refused: z.strictObject({ reason: Text, message: Text }),
  paused: z.strictObject({ reason: Text }),
  resumed: z.strictObject({ reason: Text }),
  emergency_stop: z.strictObject({ reason: Text }),
  operator_resolved: z.strictObject({ intent: Ref.nullable(), resolution: z.enum(['happened', 'did_not_happen']), note: Text }),
} as const satisfies Record<TimelineKind, z.ZodType>;
export type DetailOf<K extends TimelineKind> = z.infer<(typeof DETAIL_SCHEMAS)[K]>;
