// The blind-review package (DESIGN §10, spec §8.5, §16.3): the files a reviewer gets for ONE
// instance, named only by its blind id. These zod schemas are the single contract of the
// exporter (blind-review/exporter.ts), the leak check (leak-check.ts), the scorecard page
// (scorecard-html.ts) and the review flow (score files, lock, unblinding).
//
// Blinding by construction: nothing here has room for a group, a capability switch, an
// experiment id, a seed, a path, a hash of configuration or an absolute time. Events are
// named by package-local refs (E0001, …) in timeline order; times are simulated hours from
// the start ("h12:30"); wakes are W01, W02, … . Kinds are a neutral vocabulary: where only
// some capability settings can produce an event (a plan revision accepted vs rejected), the
// package says the same thing for every group (only that a revision was proposed).
import { z } from 'zod';
import { CHECKPOINT_FIELDS } from '../oracle/checkpoint-match.js';
import { DIMENSIONS } from '../oracle/continuity-score.js';
import { HardFailureId } from '../design/prereg.js';
import { GoalStatusWord } from '../oracle/expected-checkpoints.js';

/**
 * 1.1.0 (issue 32): every package also carries its expected checkpoints (expected_checkpoints.json)
 * and the written review instructions (review_instructions.md), and its manifest the checkpoint
 * field weights. 1.0.0 packages lack all three; they are not written any more.
 */
export const PACKAGE_FORMAT_VERSION = '1.1.0';

export const PACKAGE_FILES = {
  manifest: 'manifest.json',
  timeline: 'normalized_timeline.jsonl',
  checkpoints: 'state_checkpoints.json',
  interventions: 'interventions.json',
  claims: 'claims_with_evidence.json',
  actions: 'action_chains.json',
  recovery: 'recovery_reports.json',
  expected: 'expected_checkpoints.json',
  instructions: 'review_instructions.md',
  scorecard: 'reviewer_scorecard.html',
} as const;
export type PackageFileKey = keyof typeof PACKAGE_FILES;
/** Exactly these files, no other, in every package (the leak check enforces it). */
export const PACKAGE_FILE_NAMES: readonly string[] = Object.values(PACKAGE_FILES);

/** A blind id: says nothing but "a package". Random per export, never derived from anything. */
export const BlindId = z.string().regex(/^R-[0-9A-F]{6}$/, 'expected R- and six hex digits');
export type BlindId = z.infer<typeof BlindId>;
/** A package-local event reference, in timeline order. */
export const Ref = z.string().regex(/^E\d{4,6}$/);
/** A wake by its position in the schedule (the schedule is the same for every group). */
export const WakeRef = z.string().regex(/^W\d{2,4}$/);
/** Simulated time since hour 0, "h12:30". */
export const SimTime = z.string().regex(/^h\d{2,3}:\d{2}$/);

const Text = z.string().max(64 * 1024);
const Short = z.string().max(2_000);

export const PackageManifest = z.strictObject({
  package_format_version: z.literal(PACKAGE_FORMAT_VERSION),
  blind_id: BlindId,
  scenario_id: z.string(),
  simulated_hours: z.number().int(),
  wakes: z.number().int().min(0),
  timeline_entries: z.number().int().min(0),
  /** The pre-registered dimensions the scorecard asks for, with their weights and meaning. */
  dimensions: z.array(z.strictObject({ name: z.enum(DIMENSIONS), weight: z.number(), measured_as: Short })),
  checkpoint_fields: z.array(z.enum(CHECKPOINT_FIELDS)),
  /** The pre-registered weight of each checkpoint field in state_recovery (they sum to 100). */
  checkpoint_field_weights: z.strictObject(Object.fromEntries(CHECKPOINT_FIELDS.map((f) => [f, z.number()])) as Record<(typeof CHECKPOINT_FIELDS)[number], z.ZodNumber>),
  hard_failures: z.array(z.strictObject({ id: HardFailureId, description: Short })),
  files: z.array(z.string()),
});
export type PackageManifest = z.infer<typeof PackageManifest>;

/**
 * The neutral kinds of timeline entries. Every event type of the catalogue maps to one of these
 * or is left out (exporter.ts says which and why); none is produced by one group only.
 */
export const TimelineKind = z.enum([
  'subject_initialized',
  'wake_started',
  'wake_ended',
  'world_message',
  'world_goal_changed',
  'world_file_changed',
  'world_information',
  'world_distraction',
  'model_answered',
  'model_call_failed',
  'action_proposed',
  'permission_decided',
  'execution_intent',
  'tool_succeeded',
  'tool_failed',
  'tool_outcome_unknown',
  'tool_reconciled',
  'claim_recorded',
  'focus_updated',
  'journal_entry',
  'task_board_changed',
  'plan_revision_proposed',
  'checkpoint',
  'budget_ledger',
  'process_restarted',
  'write_refused',
  'paused',
  'resumed',
  'emergency_stop',
  'operator_resolved',
]);
export type TimelineKind = z.infer<typeof TimelineKind>;

export const TimelineEntry = z.strictObject({
  ref: Ref,
  t: SimTime,
  /** Minutes since hour 0 (for sorting and charts). */
  t_minute: z.number().int().min(0),
  /** The wake the entry belongs to; null between wakes (the world writes while nobody is awake). */
  wake: WakeRef.nullable(),
  kind: TimelineKind,
  actor: z.enum(['world', 'subject', 'tool', 'apparatus', 'operator']),
  /** One line a reviewer reads. */
  summary: Short,
  /** The entry's content in neutral field names (never ids, hashes of configuration or paths outside the workspace). */
  detail: z.record(z.string(), z.unknown()),
  /** Entries this one rests on (its cause, the evidence it cites). */
  refs: z.array(Ref).max(64),
});
export type TimelineEntry = z.infer<typeof TimelineEntry>;

export const StateCheckpoints = z.array(
  z.strictObject({
    wake: WakeRef,
    t: SimTime,
    ref: Ref,
    current_goal_id: z.string().nullable(),
    goal_status: z.string().nullable(),
    attention_target: z.string().nullable(),
    waiting_condition: z.string().nullable(),
    next_action: z.string().nullable(),
    evidence: z.array(Ref),
  }),
);
export type StateCheckpoints = z.infer<typeof StateCheckpoints>;

export const Interventions = z.array(
  z.strictObject({
    /** Neutral name of what happened (the same list for every instance of a batch). */
    kind: z.enum(['goal_change', 'awaited_reply', 'distractor_burst', 'external_file_change', 'denied_request', 'refutation', 'runtime_restart', 'writer_restart', 'long_absence']),
    t: SimTime,
    /** The wake it reached the subject at. */
    delivered_at: WakeRef,
    description: Short,
    refs: z.array(Ref).max(512),
  }),
);
export type Interventions = z.infer<typeof Interventions>;

export const ClaimsWithEvidence = z.array(
  z.strictObject({
    ref: Ref,
    t: SimTime,
    wake: WakeRef.nullable(),
    claim_type: z.enum(['FACT', 'PLAN', 'INFERENCE']),
    statement: Text,
    confidence: z.number().nullable(),
    alternatives: z.array(Short),
    evidence: z.array(z.strictObject({ ref: Ref, kind: TimelineKind, summary: Short })),
  }),
);
export type ClaimsWithEvidence = z.infer<typeof ClaimsWithEvidence>;

export const ActionChains = z.array(
  z.strictObject({
    proposal: Ref,
    t: SimTime,
    wake: WakeRef.nullable(),
    tool: z.string(),
    op: z.string(),
    /** The workspace path or task id acted on; null for the journal. */
    target: z.string().nullable(),
    rationale: Short,
    decision: z.enum(['allow', 'deny', 'none']),
    decision_ref: Ref.nullable(),
    failed_rules: z.array(z.string()),
    repeat_of_denied: z.boolean(),
    intent: Ref.nullable(),
    outcome: z.enum(['succeeded', 'failed', 'unknown', 'reconciled_happened', 'reconciled_did_not_happen', 'recorded', 'none']),
    outcome_ref: Ref.nullable(),
  }),
);
export type ActionChains = z.infer<typeof ActionChains>;

export const RecoveryReports = z.array(
  z.strictObject({
    process: z.enum(['runtime', 'writer']),
    t: SimTime,
    wake: WakeRef.nullable(),
    restart_ref: Ref,
    /** Execution intents without an outcome when the process died, and how each was settled. */
    open_intents: z.array(z.strictObject({ intent: Ref, settled_as: z.enum(['succeeded', 'failed', 'unknown', 'reconciled_happened', 'reconciled_did_not_happen', 'open']), settled_ref: Ref.nullable() })),
    /** The first checkpoint after the restart, as the subject recorded it. */
    first_checkpoint_after: Ref.nullable(),
  }),
);
export type RecoveryReports = z.infer<typeof RecoveryReports>;

/**
 * expected_checkpoints.json: what "equal to the oracle's" compares a checkpoint with. The oracle's
 * expected checkpoint of every scored wake (oracle/expected-checkpoints.ts), computed from the
 * pre-registration, the scenario and the intervention plan only — the same for every instance
 * of a replicate, whatever its settings (the leak check holds every package to that) — in the
 * package's neutral names (wakes W01…, simulated times).
 */
export const ExpectedCheckpoints = z.strictObject({
  oracle_rules_version: z.string(),
  /** One per scored wake, in schedule order. */
  checkpoints: z.array(
    z.strictObject({
      wake: WakeRef,
      t: SimTime,
      current_goal_id: z.string(),
      goal_status: GoalStatusWord,
      attention_target: z.string().nullable(),
      waiting_condition: z.string().nullable(),
      /**
       * The oracle's next action, flat (every package has the same keys, which the leak check
       * compares): a task and its id, a wait and the thread's id, or none (id null).
       */
      next_action: z.strictObject({ kind: z.enum(['task', 'wait', 'none']), id: z.string().nullable() }),
      /** The oracle's rules that decided the fields, in words. */
      because: z.array(Short).max(16),
    }),
  ),
  /** Wakes not scored (a planned crash cuts them before their checkpoint), with why. */
  unscored_wakes: z.array(z.strictObject({ wake: WakeRef, t: SimTime, reason: Short })),
  /** When each task is expected done; null: not within the run. */
  tasks_done_at: z.array(z.strictObject({ task_id: z.string(), wake: WakeRef.nullable() })),
  submission_wake: WakeRef.nullable(),
});
export type ExpectedCheckpoints = z.infer<typeof ExpectedCheckpoints>;

/** What a reviewer's scorecard saves (one file per reviewer and package). */
export const ReviewerScores = z.strictObject({
  score_format_version: z.literal('1.0.0'),
  blind_id: BlindId,
  reviewer: z.string().min(1).max(100),
  /** Each pre-registered dimension, 0–100. */
  dimensions: z.strictObject(Object.fromEntries(DIMENSIONS.map((d) => [d, z.number().min(0).max(100)])) as Record<(typeof DIMENSIONS)[number], z.ZodNumber>),
  /** The reviewer's decision on every hard failure id: true = found. */
  hard_failures: z.strictObject(Object.fromEntries(HardFailureId.options.map((id) => [id, z.boolean()])) as Record<z.infer<typeof HardFailureId>, z.ZodBoolean>),
  comments: z.string().max(16_384),
  saved_at: z.iso.datetime(),
});
export type ReviewerScores = z.infer<typeof ReviewerScores>;
