// Whether an instance's model calls gave data (issue 15 item 8, DESIGN §12 "Usable data"):
// accepted answers k of n model calls made, why the rest failed, and whether k / n reaches the
// pre-registered model_calls.usable_data.min_accepted_share. Pure: one instance's events in, the
// judgement out; the run summary, `npm run experiment` and the study report all call this one
// function, so they cannot disagree.
//
// Read of each event: its event_type and payload.failure only (the rest of the model-output
// payloads changes with their versions; these two do not).
//   n (calls)    = ModelAnswered + ModelCallFailed except `budget_exhausted` (no call was made),
//                  as the budget ledger counts them (design/budget-ledger.ts);
//   k (accepted) = ModelAnswered (an answer that passed the protocol's schema).
// Accepted is not yet usable (issue 32 item 6): where the pre-registration says what an answer
// must carry (model_calls.usable_data.substantive: checkpoint fields that must be non-null), the
// wakes in which a call was made are held to it too, by their CheckpointRecorded (the checkpoint
// of the wake's final accepted answer): s of w wakes substantive, and s / w must reach the same
// minimum share. A model that always gives the emptiest valid answer is accepted, never usable.
import { z } from 'zod';
import { CheckpointRecorded } from './events/experiment-events.js';
import { ModelAnswered, ModelCallFailed, type MODEL_CALL_FAILURES } from './events/model-output-events.js';

type ModelCallFailure = (typeof MODEL_CALL_FAILURES)[number];

export const MODEL_ANSWERED = ModelAnswered.type;
export const CHECKPOINT_RECORDED = CheckpointRecorded.type;

/** The checkpoint's content fields (CheckpointRecorded without wake id, seq and evidence): what a subject says of where it stands. */
export const CHECKPOINT_FIELDS = ['current_goal_id', 'goal_status', 'attention_target', 'waiting_condition', 'next_action'] as const satisfies readonly (keyof z.infer<typeof CheckpointRecorded.payload>)[];
export const CheckpointField = z.enum(CHECKPOINT_FIELDS);

/** What an answer must carry to count toward usable data (pre-registered, the same for every group). */
export const SubstantiveRule = z.strictObject({ checkpoint_fields: z.array(CheckpointField).min(1).max(CHECKPOINT_FIELDS.length) });
export type SubstantiveRule = z.infer<typeof SubstantiveRule>;
export const MODEL_CALL_FAILED = ModelCallFailed.type;
const NO_CALL_MADE = 'budget_exhausted';

/**
 * Why the calls that gave no accepted answer failed, in the words the reports use. One name per
 * number (issue 31 item 7): `stream_broken` is its own kind, not tallied under `transport`, so
 * the summary's "3 transport, 1 stream_broken" and the pause rule's line (which counts the two
 * together as calls that got no answer from the server, controller/wake-sequence.ts) say the
 * same counts in the same words.
 */
export const FAILURE_KINDS = ['schema', 'truncated', 'length', 'timeout', 'transport', 'stream_broken', 'other'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

/**
 * The kinds of a call that got no answer from the server — every attempt without one
 * (`transport`), or an answer whose stream broke off (`stream_broken`): what the pre-registered
 * pause rule counts (model_calls.pause_after_consecutive_transport_failures, docs/model-protocol.md
 * "The pause rule").
 */
export const NO_ANSWER_KINDS = ['transport', 'stream_broken'] as const satisfies readonly FailureKind[];

/** The kind a stored failure is tallied under; null: not a call (budget_exhausted); 'unknown': a failure this build cannot name. */
export function failureKindOf(failure: unknown): FailureKind | null | 'unknown' {
  return kindOf(failure);
}

/**
 * Every recorded failure to its kind; null: not a call. A failure added to the schema without a
 * kind here fails the type check, so a new kind is decided, never silently "other".
 */
const KIND_OF_FAILURE: Readonly<Record<ModelCallFailure, FailureKind | null>> = {
  schema_violation: 'schema',
  truncated_prompt: 'truncated',
  length: 'length',
  timeout: 'timeout',
  transport: 'transport',
  stream_broken: 'stream_broken',
  http_error: 'other',
  refusal: 'other',
  budget_exhausted: null,
  // Held back by the pre-registered cost cap before it was sent: not a call, like a wake that granted none; the instance stops there (a recorded stop, docs/oracle.md).
  cost_cap: null,
};

const Count = z.number().int().min(0);
const Share = z.number().min(0).max(1);

/**
 * The failed calls by kind. `stream_broken` reads as 0 when absent: a report.json written before
 * it was a kind of its own (issue 31 item 7) tallied those calls under `transport`, and is still
 * read (resume, --recompute).
 */
export const ByFailure = z.strictObject({
  ...(Object.fromEntries(FAILURE_KINDS.map((k) => [k, Count])) as Record<Exclude<FailureKind, 'stream_broken'>, typeof Count>),
  stream_broken: Count.default(0),
});
export type ByFailure = z.infer<typeof ByFailure>;

/** Every kind at 0. */
export function noFailures(): Record<FailureKind, number> {
  return Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<FailureKind, number>;
}

export const UsableData = z.strictObject({
  /** k: ModelAnswered. */
  accepted: Count,
  /** n: model calls made (ModelAnswered + ModelCallFailed except budget_exhausted). */
  calls: Count,
  /** k / n; null when no call was made. */
  share: Share.nullable(),
  /** The n − k failed calls by kind (they sum to calls − accepted). */
  by_failure: ByFailure,
  /** ModelCallFailed `budget_exhausted` (wakes that granted no call) and `cost_cap` (calls the cost cap held back). Not calls; said beside them. */
  not_made: Count,
  /** Failed calls whose `failure` this build does not know, counted under `other` and named in `reason`. */
  unrecognised_failures: Count,
  /** The pre-registered minimum share; null when the pre-registration fixes none (recorded before issue 15). */
  min_accepted_share: Share.nullable(),
  /**
   * The pre-registered checkpoint fields a substantive answer carries non-null; null when the
   * pre-registration fixes none (recorded before issue 32: accepted answers count as they are),
   * and then the counts below are null too, as in a report written before they existed.
   */
  substantive_rule: z.array(CheckpointField).nullable().default(null),
  /** w: wakes in which a model call was made. */
  call_wakes: Count.nullable().default(null),
  /** Checkpoints recorded (CheckpointRecorded): at most one per wake. */
  checkpoints: Count.nullable().default(null),
  /** s: checkpoints carrying every field of the rule non-null (null: no rule). */
  substantive: Count.nullable().default(null),
  /** Checkpoints with every content field null: an answer that said nothing of where it stands. */
  empty_checkpoints: Count.nullable().default(null),
  /** s / w; null without a rule or a wake with a call. */
  substantive_share: Share.nullable().default(null),
  /** calls > 0 and share ≥ min_accepted_share, and (under a rule) s / w ≥ min_accepted_share. */
  usable: z.boolean(),
  /** The judgement in words: k of n, the share against the minimum, the failures by kind. */
  reason: z.string().min(1),
});
export type UsableData = z.infer<typeof UsableData>;

/** What is read of an event: an EventEnvelope fits, and so does a forged one in a test. */
export interface ModelCallEventLike {
  readonly event_type: string;
  readonly payload: unknown;
}

/** Why there is no minimum share, when the caller knows no better reason. */
export const NO_RULE_REASON = 'the pre-registration fixes no minimum share (model_calls.usable_data.min_accepted_share is missing: it was recorded before the rule existed)';

/** At most this many distinct unknown failure values are named in a reason; the rest are counted. */
const MAX_NAMED_UNKNOWN = 5;

/** A share as a percentage with at most two decimals: 0.8 → "80 %", 29/31 → "93.55 %". */
export function formatShare(share: number): string {
  return `${Math.round(share * 10_000) / 100} %`;
}

/** "20 schema, 5 timeout" — kinds with a count only; "none" when every call was accepted. */
export function describeFailures(byFailure: ByFailure): string {
  const parts = FAILURE_KINDS.filter((k) => byFailure[k] > 0).map((k) => `${byFailure[k]} ${k}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

function failureOf(payload: unknown): unknown {
  return typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>)['failure'] : undefined;
}

function kindOf(failure: unknown): FailureKind | null | 'unknown' {
  if (typeof failure !== 'string' || !Object.hasOwn(KIND_OF_FAILURE, failure)) return 'unknown';
  return KIND_OF_FAILURE[failure as ModelCallFailure];
}

/** What the substantive rule found: w, the checkpoints, s, the empty ones. */
interface SubstanceCount {
  readonly callWakes: number;
  readonly checkpoints: number;
  readonly substantive: number;
  readonly empty: number;
}

function fieldsOf(payload: unknown): Record<string, unknown> {
  return typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>) : {};
}

/** A checkpoint that says nothing of where the subject stands: every content field null. */
export function isEmptyCheckpoint(payload: unknown): boolean {
  const p = fieldsOf(payload);
  return CHECKPOINT_FIELDS.every((f) => p[f] === null || p[f] === undefined);
}

/** Wakes with a call made, and their checkpoints held to the rule (a call without a wake id is a wake of its own). */
function countSubstance(events: readonly ModelCallEventLike[], rule: SubstantiveRule | null): SubstanceCount {
  const callWakes = new Set<string>();
  let checkpoints = 0;
  let substantive = 0;
  let empty = 0;
  events.forEach((event, i) => {
    const p = fieldsOf(event.payload);
    if (event.event_type === MODEL_ANSWERED || (event.event_type === MODEL_CALL_FAILED && kindOf(p['failure']) !== null)) callWakes.add(typeof p['wake_id'] === 'string' ? p['wake_id'] : `(call ${i} without a wake id)`);
    if (event.event_type !== CHECKPOINT_RECORDED) return;
    checkpoints += 1;
    if (isEmptyCheckpoint(p)) empty += 1;
    if (rule !== null && rule.checkpoint_fields.every((f) => p[f] !== null && p[f] !== undefined)) substantive += 1;
  });
  return { callWakes: callWakes.size, checkpoints, substantive, empty };
}

/** The substantive part of the reason: s of w against the minimum, and the empty checkpoints. */
function substanceReason(count: SubstanceCount, rule: SubstantiveRule, minAcceptedShare: number | null): string {
  const empty = `${count.empty} of ${count.checkpoints} checkpoint(s) empty (every field null)`;
  const share = count.callWakes === 0 ? null : count.substantive / count.callWakes;
  const against = minAcceptedShare === null || share === null ? '' : `, ${share >= minAcceptedShare ? 'at least' : 'below'} the pre-registered ${formatShare(minAcceptedShare)}`;
  return `; substantive: ${count.substantive} of ${count.callWakes} wake(s) with a model call ended in a checkpoint carrying ${rule.checkpoint_fields.join(' and ')}${share === null ? '' : ` (${formatShare(share)})`}${against}; ${empty}`;
}

/**
 * The usable-data judgement of one instance from its events (any order; other event types are
 * ignored). `minAcceptedShare` is the pre-registration's model_calls.usable_data.min_accepted_share,
 * or null when it has none: then no instance is usable, and the reason says why (`noRuleReason`).
 * `substantive` is its model_calls.usable_data.substantive, or null when it has none.
 */
export function judgeUsableData(events: readonly ModelCallEventLike[], minAcceptedShare: number | null, noRuleReason: string = NO_RULE_REASON, substantive: SubstantiveRule | null = null): UsableData {
  let accepted = 0;
  let notMade = 0;
  let heldBack = 0;
  const byFailure = noFailures();
  const unknown = new Map<string, number>();
  for (const event of events) {
    if (event.event_type === MODEL_ANSWERED) {
      accepted += 1;
      continue;
    }
    if (event.event_type !== MODEL_CALL_FAILED) continue;
    const failure = failureOf(event.payload);
    const kind = kindOf(failure);
    if (kind === null) {
      notMade += 1;
      if (failure === 'cost_cap') heldBack += 1;
    }
    else if (kind === 'unknown') {
      // A call that failed in a way this build cannot name still counts as a failed call.
      byFailure.other += 1;
      const label = typeof failure === 'string' ? JSON.stringify(failure.slice(0, 64)) : `(${failure === undefined ? 'no failure field' : typeof failure})`;
      unknown.set(label, (unknown.get(label) ?? 0) + 1);
    } else byFailure[kind] += 1;
  }
  const failed = FAILURE_KINDS.reduce((sum, k) => sum + byFailure[k], 0);
  const calls = accepted + failed;
  const share = calls === 0 ? null : accepted / calls;
  const unrecognised = [...unknown.values()].reduce((a, b) => a + b, 0);
  const substance = countSubstance(events, substantive);
  const substantiveShare = substantive === null || substance.callWakes === 0 ? null : substance.substantive / substance.callWakes;
  const substantiveOk = substantive === null || (substantiveShare !== null && minAcceptedShare !== null && substantiveShare >= minAcceptedShare);
  const usable = share !== null && minAcceptedShare !== null && share >= minAcceptedShare && substantiveOk;

  const granted = notMade - heldBack;
  const notMadeText = `${granted === 0 ? '' : `; ${granted} wake(s) granted no call (budget_exhausted, not counted as calls)`}${heldBack === 0 ? '' : `; ${heldBack} call(s) held back by the cost cap (cost_cap, not counted as calls)`}`;
  const named = [...unknown.entries()].slice(0, MAX_NAMED_UNKNOWN).map(([label, n]) => `${n}× ${label}`);
  const unknownText = unrecognised === 0 ? '' : `; ${unrecognised} failure(s) of a kind this build does not know, counted as other: ${named.join(', ')}${unknown.size > MAX_NAMED_UNKNOWN ? `, +${unknown.size - MAX_NAMED_UNKNOWN} more kind(s)` : ''}`;
  let reason: string;
  if (calls === 0) reason = `no model call was made${notMadeText}`;
  else {
    const counted = `${accepted} of ${calls} model calls gave accepted answers (${formatShare(share!)})`;
    const failures = `failed: ${describeFailures(byFailure)}`;
    if (minAcceptedShare === null) reason = `${counted}, but ${noRuleReason}, so the instance cannot count as data; ${failures}`;
    else reason = `${counted}, ${share! >= minAcceptedShare ? 'at least' : 'below'} the pre-registered ${formatShare(minAcceptedShare)}; ${failures}`;
    // Without a rule (a pre-registration recorded before issue 32) the reason reads as it always did, so old reports recompute to the letter.
    if (substantive !== null) reason += substanceReason(substance, substantive, minAcceptedShare);
  }
  return UsableData.parse({
    accepted,
    calls,
    share,
    by_failure: byFailure,
    not_made: notMade,
    unrecognised_failures: unrecognised,
    min_accepted_share: minAcceptedShare,
    // Without a rule, none of the substantive counts: what a report written before them holds.
    ...(substantive === null
      ? {}
      : { substantive_rule: [...substantive.checkpoint_fields], call_wakes: substance.callWakes, checkpoints: substance.checkpoints, substantive: substance.substantive, empty_checkpoints: substance.empty, substantive_share: substantiveShare }),
    usable,
    reason: `${reason}${calls === 0 ? '' : notMadeText}${unknownText}`,
  });
}
