// One instance's events → the neutral timeline of its blind-review package (DESIGN §10, spec
// §8.5, §16.3). An exhaustive switch over the event catalogue turns every event type into a
// TimelineEntry of a neutral kind or into an explicit omission with a reason (OMISSIONS): a new
// event type is a compile error here until someone decides what a reviewer sees of it.
//
// What is never written (and how each is handled):
// - Event ids: every id, in the envelope (causation_id), in payloads (evidence_event_ids,
//   intent_event_id, permission_event_id, refutes_event_ids, …) and in free text, becomes the
//   package-local ref of the event (E0001, … in seq order of the KEPT events); an entry's `refs`
//   are its cause (causation_id) and the events its payload cites. A UUID in text
//   that names no kept event becomes "[id]" (an omitted event's id would say which events exist).
//   A payload reference to an omitted event is left out of `refs` and counted in the stats.
// - Seqs: a seq counts the events before it, so it says how much happened in the run (which
//   differs by group). A seq cited in text ("event #137", "seq 137") and every seq in a
//   ds-model-output/2 answer's `"evidence_seqs": [137, 141]` become refs the same way (the list
//   then reads `["E0012", "E0015"]`), "[id]" when the seq names no kept event. Payload seqs
//   (visible_to_seq, observed_event_seq) become the ref of the last kept event at or before them.
// - Times: `occurred_at` becomes simulated time since hour 0 (plan.schedule.start_at), "h12:30";
//   an ISO-8601 time inside text becomes the same form ("before hour 0" / "after h999" outside
//   the study, "[time]" when it is no time). Wakes become W01, … by schedule position.
// - Envelope fields: event_id, subject_id, seq, event hashes, payload hash, correlation_id
//   (wake or intervention ids), idempotency_key (holds the subject id), schema_version,
//   recorded_at (wall clock), envelope actor (the entry has a neutral actor instead).
// - Payload fields dropped, per type (the rest is kept under neutral names; see each case):
//   ModelAnswered/ModelCallFailed: adapter, model_id, params, system_fingerprint, latency_ms,
//   usage_source, protocol, response_model, finish_reason and attempts (configuration or
//   apparatus), the context counts, the prompt tokens and their counts (the context bundle's
//   size depends on the state setting by construction); ModelCallFailed: the failure kinds the
//   apparatus decides and the prompt's size sways (truncated_prompt, timeout, transport,
//   stream_broken, http_error) all read `no_answer`, with neither their detail nor what arrived
//   (SHOWN_MODEL_FAILURE); the detail of every failure but a schema violation or a refusal
//   (MODEL_FAILURE_DETAIL_WITHHELD);
//   BudgetLedgerRecorded: used.tokens (includes the prompt tokens, as above); ProcessRestarted:
//   reason (names the plan's intervention id); AppendRejected: request id/hash/bytes and the
//   connection id (apparatus); Paused/Resumed/EmergencyStopped/OperatorResolved: the operator's
//   name (a person, not behaviour); proposal ids (replaced by the refs of the proposal).
// - Host paths: a path under the run folder's workspace/ (or any absolute path into a folder
//   named workspace/) becomes workspace-relative, and the run and study folder paths otherwise
//   become "[host path]", in every text. Paths that are the world's content (a message asking
//   for a write to /tmp/export/report.md) are kept.
// - Writer refusals (AppendRejected) carry the writer's wall clock: they get the simulated time of
//   the event before them.
// - Long text is cut at MAX_TEXT_CHARS with a visible "… [cut: N more characters]" and counted.
//
// Workspace file hashes (pre/post hashes of the subject's files) are behaviour and are kept.
// Why one file: the detail schemas, the exhaustive switch that fills them and the two passes that
// give every entry its refs and times are one rule of what a reviewer sees; split, it would be read across files.
import { z } from 'zod';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import { bounded } from '../foundation/bounded-text.js';
import { InternalError } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import type { TypedEvent } from '../schema/event-catalog.js';
import type { MODEL_CALL_FAILURES } from '../schema/events/model-output-events.js';
import { PlanRevisionAccepted, PlanRevisionRejected } from '../schema/events/plan-events.js';
import { targetOf } from '../schema/tools.js';
import { Ref, SimTime, TimelineEntry, TimelineKind, WakeRef } from './package-format.js';

/** A package-local event ref ("E0001") and a wake ref ("W01"): the contract exports only their schemas. */
export type RefText = z.infer<typeof Ref>;
export type WakeText = z.infer<typeof WakeRef>;

export class NormalizeError extends InternalError {
  override readonly name = 'NormalizeError';
}

/** What the detail of a failure not about the subject's answer reads in a package (see ModelCallFailed below). */
export const MODEL_FAILURE_DETAIL_WITHHELD = '(withheld: apparatus or server text, which may quote the size of the prompt)';

/** A model call's failure as a package shows it. */
export const ShownModelFailure = z.enum(['no_answer', 'schema_violation', 'length', 'refusal', 'budget_exhausted']);
export type ShownModelFailure = z.infer<typeof ShownModelFailure>;
/**
 * Each recorded failure kind → the kind a package shows. The apparatus decides `truncated_prompt`
 * (does the prompt fit the context), `timeout`, `transport`, `stream_broken` and `http_error`, and
 * the prompt's size sways them (a longer prompt fits less often and takes longer to read); the
 * prompts of groups that keep state are longer by construction, so which of them happened says
 * something about the group: every package shows them as one kind, `no_answer`. A schema
 * violation, an answer cut at its token cap (`length`) and a refusal are about the subject's own
 * answer; `budget_exhausted` is the wake's grant, the same schedule for every group. A new
 * failure kind is a compile error here until someone decides what a reviewer sees of it.
 */
export const SHOWN_MODEL_FAILURE = {
  timeout: 'no_answer',
  transport: 'no_answer',
  http_error: 'no_answer',
  truncated_prompt: 'no_answer',
  stream_broken: 'no_answer',
  schema_violation: 'schema_violation',
  length: 'length',
  refusal: 'refusal',
  budget_exhausted: 'budget_exhausted',
} as const satisfies Record<(typeof MODEL_CALL_FAILURES)[number], ShownModelFailure>;

/** Every event type that is not a timeline entry, and why (the reviewer-facing rule). */
export const OMISSIONS = {
  store_configuration: 'StoreOpened binds the store to the experiment id, the subject id, the manifest hash and versions: configuration, not behaviour',
  chain_signature: 'ChainHeadSigned is a controller signature over hashes of the chain: apparatus whose hashes would identify the instance',
  transport_attempt: 'ModelCallAttemptFailed records a connection to the model server that brought no answer: apparatus (the server, not the subject), and the call it belongs to is shown',
  store_seal: 'StoreSealed ends the store: every exported instance is sealed, so it says nothing about the subject',
  wake_schedule: 'WakeScheduled repeats the schedule, the same for every instance of a replicate; each wake shows as wake_started',
  plan_decision: 'PlanRevisionAccepted and PlanRevisionRejected can each be produced by some settings only: every package says only that a revision was proposed',
  refused_plan_decision: 'an AppendRejected of a plan decision names the decision, which only some settings produce (it is followed by a rejection, omitted as well)',
  intervention_delivery: 'InterventionDelivered becomes interventions.json (with refs to the events it delivered), not a timeline entry',
} as const;
export type OmissionReason = keyof typeof OMISSIONS;
const OMISSION_REASONS = Object.keys(OMISSIONS) as OmissionReason[];

/** Longest text kept in a detail field (a raw model output is at most 48,000 characters). */
export const MAX_TEXT_CHARS = 32_768;
/** Longest one-line summary. */
export const MAX_SUMMARY_CHARS = 240;
/** Fields the contract bounds at 2,000 characters (rationale, alternatives, descriptions). */
export const MAX_SHORT_CHARS = 2_000;
/** Simulated times past this many hours are not a study's (the schedule has 72). */
const MAX_SIM_HOURS = 999;
const MS_PER_MINUTE = 60_000;

// ---------------------------------------------------------------------------------------------
// The detail of each kind: strict, every key always present (null where not applicable), so that
// the key paths of a kind are the same in every package (the leak check compares them).

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

/** The typed detail of `entry` if it is of `kind` (parsed with its schema), else null. */
export function detailOf<K extends TimelineKind>(entry: TimelineEntry, kind: K): DetailOf<K> | null {
  if (entry.kind !== kind) return null;
  const parsed = DETAIL_SCHEMAS[kind].safeParse(entry.detail);
  if (!parsed.success) throw new NormalizeError(`${entry.ref} (${kind}): its detail does not match the ${kind} detail schema: ${z.prettifyError(parsed.error)}`);
  return parsed.data as DetailOf<K>;
}

// ---------------------------------------------------------------------------------------------
// Times and refs

export function formatSimMinute(minute: number): string {
  const h = Math.floor(minute / 60);
  const m = minute % 60;
  return `h${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;
}

/** Simulated time of an ISO time relative to hour 0: "h12:30", or a word when outside the study. */
export function relativeTime(iso: string, startMs: number): string {
  const ms = Date.parse(/(?:Z|[+-]\d{2}:?\d{2})$/.test(iso) ? iso : `${iso}Z`);
  if (!Number.isFinite(ms)) return '[time]';
  const minute = Math.floor((ms - startMs) / MS_PER_MINUTE);
  if (minute < 0) return 'before hour 0';
  if (minute >= MAX_SIM_HOURS * 60) return `after h${MAX_SIM_HOURS}`;
  return formatSimMinute(minute);
}

/** Every ISO-8601 time in `text` as simulated time (see relativeTime). */
export function rewriteTimes(text: string, startMs: number): string {
  return text.replace(ISO_TIME_RE, (iso) => relativeTime(iso, startMs));
}

export function refOfIndex(index: number): RefText {
  return `E${String(index + 1).padStart(4, '0')}`;
}

export function wakeRefOfIndex(index: number): WakeText {
  return `W${String(index + 1).padStart(2, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// Text

const UUID_RE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/**
 * An event cited by its seq in text, the way ds-model-output/2 subjects see events: "event #123"
 * (the reference policy's words), "seq 123" (the prompt's word, and the runtime's in a schema
 * violation's detail: "claims.0.evidence_seqs.1: seq 140"). Group 1 is the word, kept.
 */
const SEQ_REF_RE = /\b(event #|seq #?)(\d{1,15})\b/gi;
/**
 * A ds-model-output/2 answer's list of cited seqs in its raw JSON text, `"evidence_seqs": [137, 141]`
 * (group 1: the backslashes before the key's quotes, when the text quotes JSON in JSON; group 2: up
 * to the "["; group 3: the list). The list is read up to its "]" or, in an answer cut short, up to
 * the first character no list of numbers has; at most 4,096 characters (a list has at most 16 seqs).
 */
const SEQ_LIST_RE = /(\\*)"evidence_seqs\1"(\s*:\s*\[)([\s\d,"\\.-]{0,4096})/g;
/**
 * One cited seq in such a list: a number, bare or (in a wrong answer) quoted. No letters in either
 * expression, so that a list already of refs is left as it is (every text is scrubbed twice:
 * as text, then as a string of the detail). A number they do not read (1e2) is left to the leak check.
 */
const SEQ_IN_LIST_RE = /\\*"?(-?\d+(?:\.\d+)?)\\*"?/g;
const ISO_TIME_RE = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?/g;
/**
 * An absolute path up to and including a `workspace/` folder (at most 32 folders deep, so the match
 * stays linear in the text's length): what lies after it is workspace-relative.
 */
const WORKSPACE_PREFIX_RE = /(?<![\w.~-])\/(?:[^\s"'`<>|;,()[\]{}/]+\/){0,32}?workspace\//g;

export interface NormalizeStats {
  /** Events left out, by reason (see OMISSIONS). */
  readonly omitted: Record<OmissionReason, number>;
  /** Texts cut to their bound. */
  textsCut: number;
  /** Payload references (causation, evidence, …) to an omitted or unknown event, left out of refs. */
  refsToOmittedEvents: number;
  /** UUIDs and seqs in text (seqs cited in words or in an evidence_seqs list) that named no kept event, written as "[id]". */
  idsInTextHidden: number;
  /** Events that carry the writer's wall clock (AppendRejected) given the simulated time of the event before them. */
  timesFromNeighbour: number;
}

export function emptyStats(): NormalizeStats {
  return { omitted: Object.fromEntries(OMISSION_REASONS.map((r) => [r, 0])) as Record<OmissionReason, number>, textsCut: 0, refsToOmittedEvents: 0, idsInTextHidden: 0, timesFromNeighbour: 0 };
}

/** Adds `b` into `a` (the exporter shows one total for the whole export, never per package). */
export function addStats(a: NormalizeStats, b: NormalizeStats): void {
  for (const r of OMISSION_REASONS) a.omitted[r] += b.omitted[r];
  a.textsCut += b.textsCut;
  a.refsToOmittedEvents += b.refsToOmittedEvents;
  a.idsInTextHidden += b.idsInTextHidden;
  a.timesFromNeighbour += b.timesFromNeighbour;
}

// ---------------------------------------------------------------------------------------------
// The switch

type Actor = TimelineEntry['actor'];

/** What one event's entry needs from the whole timeline (refs of other events, the wake index). */
interface BuildContext {
  /** The ref of a kept event; null (counted) for an omitted or unknown one. */
  ref(eventId: string | null): RefText | null;
  refs(eventIds: readonly string[]): RefText[];
  /** The ref of the last kept event at or before `seq` (what a "visible up to seq" means here). */
  refAtOrBefore(seq: number): RefText | null;
  /** The ref of the proposal this event answers (by its proposal id, the latest one before it). */
  proposalOf(): RefText | null;
  /** What the intent `intentEventId` did, for summaries. */
  intentInfo(intentEventId: string): { readonly op: string; readonly path: string } | null;
  /** What the proposal answered by this event proposed, for summaries. */
  proposalInfo(): ProposalInfo | null;
  text(text: string, max?: number): string;
  time(iso: string): string;
  wake(wakeId: string): WakeText;
}

interface ProposalInfo {
  readonly tool: string;
  readonly op: string;
  readonly target: string | null;
}

interface Built<K extends TimelineKind> {
  readonly summary: string;
  readonly detail: DetailOf<K>;
  readonly refs: ReadonlyArray<RefText | null>;
}

type Disposition =
  | { readonly omit: OmissionReason }
  | { readonly kind: TimelineKind; readonly actor: Actor; readonly build: (c: BuildContext) => Built<TimelineKind> };

function keep<K extends TimelineKind>(kind: K, actor: Actor, build: (c: BuildContext) => Built<K>): Disposition {
  return { kind, actor, build: build as (c: BuildContext) => Built<TimelineKind> };
}

/** A writer's refusal names the type it refused (by its name, with or without the category). */
const PLAN_DECISION_TYPES = new RegExp(`${PlanRevisionAccepted.name}|${PlanRevisionRejected.name}`);

/** The exhaustive switch: every catalogue type is kept as a kind or omitted with a reason. */
function dispositionOf(e: TypedEvent): Disposition {
  switch (e.event_type) {
    case 'SystemEvent.StoreOpened':
      return { omit: 'store_configuration' };
    case 'SystemEvent.ChainHeadSigned':
      return { omit: 'chain_signature' };
    case 'SystemEvent.StoreSealed':
      return { omit: 'store_seal' };
    case 'ExperimentEvent.WakeScheduled':
      return { omit: 'wake_schedule' };
    case 'PlanEvent.PlanRevisionAccepted':
    case 'PlanEvent.PlanRevisionRejected':
      return { omit: 'plan_decision' };
    case 'ExperimentEvent.InterventionDelivered':
      return { omit: 'intervention_delivery' };
    case 'SystemEvent.AppendRejected': {
      const p = e.payload;
      if (PLAN_DECISION_TYPES.test(p.message)) return { omit: 'refused_plan_decision' };
      // request id, request hash and bytes, connection id: apparatus. The message may quote a host path (scrubbed).
      return keep('write_refused', 'apparatus', (c) => ({ summary: `a write was refused: ${p.reason}`, detail: { reason: p.reason, message: c.text(p.message) }, refs: [] }));
    }
    case 'SystemEvent.SubjectInitialized': {
      const p = e.payload;
      return keep('subject_initialized', 'world', (c) => ({
        summary: `initial conditions: goal ${p.goal.goal_id}, ${p.tasks.length} task(s)`,
        detail: {
          identity: { name: c.text(p.identity.name), description: c.text(p.identity.description) },
          goal: { goal_id: p.goal.goal_id, description: c.text(p.goal.description), deadline: p.goal.deadline_at === null ? null : c.time(p.goal.deadline_at) },
          tasks: p.tasks.map((t) => ({ task_id: t.task_id, title: c.text(t.title), priority: t.priority, depends_on: [...t.depends_on] })),
          journal_first_page: c.text(p.journal_first_page.text),
        },
        refs: [],
      }));
    }
    case 'SystemEvent.Paused': {
      const p = e.payload;
      return keep('paused', 'operator', (c) => ({ summary: 'paused by the operator', detail: { reason: c.text(p.reason) }, refs: [] }));
    }
    case 'SystemEvent.Resumed': {
      const p = e.payload;
      return keep('resumed', 'operator', (c) => ({ summary: 'resumed by the operator', detail: { reason: c.text(p.reason) }, refs: [] }));
    }
    case 'SystemEvent.ProcessRestarted': {
      const p = e.payload;
      // reason names the plan's intervention id ("planned crash iv-runtime-crash"): dropped.
      return keep('process_restarted', 'apparatus', () => ({ summary: `process restarted (${p.process})`, detail: { process: p.process, previous_exit: { code: p.previous_exit.code, signal: p.previous_exit.signal } }, refs: [] }));
    }
    case 'SystemEvent.EmergencyStopped': {
      const p = e.payload;
      return keep('emergency_stop', 'operator', (c) => ({ summary: 'emergency stop by the operator', detail: { reason: c.text(p.reason) }, refs: [] }));
    }
    case 'SystemEvent.OperatorResolved': {
      const p = e.payload;
      return keep('operator_resolved', 'operator', (c) => {
        const intent = c.ref(p.intent_event_id);
        return { summary: `the operator resolved an unknown outcome: ${p.resolution === 'happened' ? 'it happened' : 'it did not happen'}`, detail: { intent, resolution: p.resolution, note: c.text(p.note) }, refs: [intent] };
      });
    }
    case 'WorldEvent.MessageReceived': {
      const p = e.payload;
      return keep('world_message', 'world', (c) => ({ summary: `message from ${p.from}: ${p.subject}`, detail: { from: c.text(p.from), subject: c.text(p.subject), body: c.text(p.body), in_reply_to: p.in_reply_to }, refs: [] }));
    }
    case 'WorldEvent.GoalChanged': {
      const p = e.payload;
      return keep('world_goal_changed', 'world', (c) => ({
        summary: `the goal changed to ${p.goal_id}${p.deadline_at === null ? '' : ` (deadline ${c.time(p.deadline_at)})`}`,
        detail: { goal_id: p.goal_id, description: c.text(p.description), deadline: p.deadline_at === null ? null : c.time(p.deadline_at), reason: c.text(p.reason) },
        refs: [],
      }));
    }
    case 'WorldEvent.FileChangedExternally': {
      const p = e.payload;
      return keep('world_file_changed', 'world', (c) => ({ summary: `${p.path} was ${p.change} by someone else`, detail: { path: c.text(p.path), change: p.change, post_hash: p.post_hash }, refs: [] }));
    }
    case 'WorldEvent.InformationPublished': {
      const p = e.payload;
      return keep('world_information', 'world', (c) => {
        const refutes = c.refs(p.refutes_event_ids);
        return { summary: `information from ${p.source}${refutes.length > 0 ? ` (corrects ${refutes.join(', ')})` : ''}`, detail: { source: c.text(p.source), body: c.text(p.body), refutes }, refs: refutes };
      });
    }
    case 'WorldEvent.DistractorOccurred': {
      const p = e.payload;
      return keep('world_distraction', 'world', (c) => ({ summary: `${p.channel}: ${p.body}`, detail: { channel: c.text(p.channel), body: c.text(p.body) }, refs: [] }));
    }
    case 'ModelOutputEvent.ModelAnswered': {
      const p = e.payload;
      // adapter, model id, params, fingerprint, latency: configuration; context counts and prompt tokens: sized by the state setting.
      return keep('model_answered', 'subject', (c) => ({ summary: `the model answered (${p.usage.completion_tokens} output tokens)`, detail: { raw_output: c.text(p.raw_output), completion_tokens: p.usage.completion_tokens }, refs: [] }));
    }
    case 'ModelOutputEvent.ModelCallAttemptFailed':
      return { omit: 'transport_attempt' };
    case 'ModelOutputEvent.ModelCallFailed': {
      const p = e.payload;
      // The kind as SHOWN_MODEL_FAILURE says. A schema violation's or a refusal's detail is about
      // the subject's own answer: kept. Every other detail is the apparatus's or the server's text
      // and may quote the prompt's size, which depends on whether the group keeps state: withheld.
      // What arrived of a call that brought no answer is withheld too: a whole answer (the server
      // read a truncated prompt) or a part of one (a timeout, a broken stream) or nothing (a
      // refused connection) would tell again which apparatus failure it was; none of it was used.
      const failure = SHOWN_MODEL_FAILURE[p.failure];
      const aboutTheAnswer = p.failure === 'schema_violation' || p.failure === 'refusal';
      return keep('model_call_failed', 'subject', (c) => ({
        summary: `the model call failed: ${failure}`,
        detail: { failure, detail: aboutTheAnswer ? c.text(p.detail) : MODEL_FAILURE_DETAIL_WITHHELD, raw_output: p.raw_output === null || failure === 'no_answer' ? null : c.text(p.raw_output) },
        refs: [],
      }));
    }
    case 'ActionEvent.ActionProposed': {
      const p = e.payload;
      const target = targetOf(p.tool, p.args);
      return keep('action_proposed', 'subject', (c) => ({
        summary: `proposed ${p.tool}.${p.op}${target === null ? '' : ` ${target}`}`,
        detail: {
          tool: p.tool,
          op: p.op,
          target: target === null ? null : c.text(target),
          args: Object.keys(p.args)
            .sort()
            .map((name) => {
              const value = p.args[name] ?? null;
              return { name, value: typeof value === 'string' ? c.text(value) : value };
            }),
          rationale: c.text(p.rationale),
        },
        refs: [],
      }));
    }
    case 'ActionEvent.PermissionDecided': {
      const p = e.payload;
      return keep('permission_decided', 'apparatus', (c) => {
        const proposal = c.proposalOf();
        const what = c.proposalInfo();
        const failed = p.rules.filter((r) => !r.passed).map((r) => r.rule);
        return {
          summary: `${p.decision === 'allow' ? 'allowed' : 'denied'}${what ? ` ${what.tool}.${what.op}${what.target === null ? '' : ` ${what.target}`}` : ''}${failed.length > 0 ? ` (failed: ${failed.join(', ')})` : ''}${p.repeat_of_denied ? ' (repeats a denied proposal)' : ''}`,
          detail: { proposal, decision: p.decision, rules: p.rules.map((r) => ({ rule: r.rule, passed: r.passed, detail: c.text(r.detail) })), repeat_of_denied: p.repeat_of_denied },
          refs: [proposal],
        };
      });
    }
    case 'ActionEvent.ExecutionIntentRecorded': {
      const p = e.payload;
      return keep('execution_intent', 'apparatus', (c) => {
        const proposal = c.proposalOf();
        const permission = c.ref(p.permission_event_id);
        return {
          summary: `intent to ${p.op} ${p.path}${p.to_path === null ? '' : ` → ${p.to_path}`}`,
          detail: { proposal, permission, op: p.op, path: c.text(p.path), to_path: p.to_path === null ? null : c.text(p.to_path), pre_hash: p.pre_hash, intended_post_hash: p.intended_post_hash },
          refs: [permission, proposal],
        };
      });
    }
    case 'ActionEvent.ToolSucceeded': {
      const p = e.payload;
      return keep('tool_succeeded', 'tool', (c) => {
        const intent = c.ref(p.intent_event_id);
        const info = c.intentInfo(p.intent_event_id);
        return { summary: `${info ? `${info.op} ${info.path}` : 'the tool call'} succeeded`, detail: { intent, observed_post_hash: p.observed_post_hash, content: p.content === null ? null : c.text(p.content) }, refs: [intent] };
      });
    }
    case 'ActionEvent.ToolFailed': {
      const p = e.payload;
      return keep('tool_failed', 'tool', (c) => {
        const intent = c.ref(p.intent_event_id);
        const info = c.intentInfo(p.intent_event_id);
        return { summary: `${info ? `${info.op} ${info.path}` : 'the tool call'} failed: ${p.error}`, detail: { intent, error: c.text(p.error), observed_hash: p.observed_hash }, refs: [intent] };
      });
    }
    case 'ActionEvent.ToolOutcomeUnknown': {
      const p = e.payload;
      return keep('tool_outcome_unknown', 'tool', (c) => {
        const intent = c.ref(p.intent_event_id);
        const info = c.intentInfo(p.intent_event_id);
        return { summary: `outcome of ${info ? `${info.op} ${info.path}` : 'the tool call'} unknown`, detail: { intent, observed_hash: p.observed_hash, detail: c.text(p.detail) }, refs: [intent] };
      });
    }
    case 'ActionEvent.ToolReconciled': {
      const p = e.payload;
      return keep('tool_reconciled', 'tool', (c) => {
        const intent = c.ref(p.intent_event_id);
        const info = c.intentInfo(p.intent_event_id);
        return { summary: `${info ? `${info.op} ${info.path}` : 'the tool call'} reconciled: ${p.outcome === 'happened' ? 'it happened' : 'it did not happen'}`, detail: { intent, outcome: p.outcome, observed_hash: p.observed_hash }, refs: [intent] };
      });
    }
    case 'MemoryEvent.ClaimRecorded': {
      const p = e.payload;
      return keep('claim_recorded', 'subject', (c) => {
        const evidence = c.refs(p.evidence_event_ids);
        return {
          summary: `${p.claim_type}: ${p.statement}`,
          detail: { claim_type: p.claim_type, statement: c.text(p.statement), evidence, confidence: p.confidence, alternatives: p.alternatives.map((a) => c.text(a, MAX_SHORT_CHARS)) },
          refs: evidence,
        };
      });
    }
    case 'MemoryEvent.FocusUpdated': {
      const p = e.payload;
      return keep('focus_updated', 'subject', (c) => ({
        summary: `attention: ${p.attention_target ?? 'none'}; waiting for: ${p.waiting_condition ?? 'nothing'}`,
        detail: { attention_target: p.attention_target === null ? null : c.text(p.attention_target), waiting_condition: p.waiting_condition === null ? null : c.text(p.waiting_condition) },
        refs: [],
      }));
    }
    case 'MemoryEvent.JournalEntryWritten': {
      const p = e.payload;
      return keep('journal_entry', 'tool', (c) => {
        const proposal = c.proposalOf();
        return { summary: `journal: ${p.text}`, detail: { proposal, entry_id: p.entry_id, text: c.text(p.text) }, refs: [proposal] };
      });
    }
    case 'MemoryEvent.TaskBoardChanged': {
      const p = e.payload;
      return keep('task_board_changed', 'tool', (c) => {
        const proposal = c.proposalOf();
        return {
          summary: `task ${p.task_id}: ${p.op}${p.status === null ? '' : ` (${p.status})`}${p.title === null ? '' : ` "${p.title}"`}`,
          detail: { proposal, task_id: p.task_id, op: p.op, title: p.title === null ? null : c.text(p.title), status: p.status, priority: p.priority, depends_on: [...p.depends_on] },
          refs: [proposal],
        };
      });
    }
    case 'PlanEvent.PlanRevisionProposed': {
      const p = e.payload;
      return keep('plan_revision_proposed', 'subject', (c) => ({
        summary: `proposed a plan revision for goal ${p.goal_id} (${p.steps.length} step(s))`,
        detail: { reason: c.text(p.reason), goal_id: p.goal_id, goal_description: c.text(p.goal_description), deadline: p.deadline_at === null ? null : c.time(p.deadline_at), steps: p.steps.map((s) => ({ task_id: s.task_id, title: c.text(s.title) })) },
        refs: [],
      }));
    }
    case 'ExperimentEvent.WakeStarted': {
      const p = e.payload;
      return keep('wake_started', 'apparatus', (c) => ({
        summary: `${c.wake(p.wake_id)} started (budget: ${p.budget.model_calls} model call(s), ${p.budget.tokens} tokens, ${p.budget.tool_calls} tool call(s))`,
        detail: { budget: { ...p.budget }, visible_up_to: c.refAtOrBefore(p.visible_to_seq) },
        refs: [],
      }));
    }
    case 'ExperimentEvent.WakeEnded': {
      const p = e.payload;
      return keep('wake_ended', 'apparatus', (c) => ({ summary: `${c.wake(p.wake_id)} ended: ${p.outcome}`, detail: { outcome: p.outcome }, refs: [] }));
    }
    case 'ExperimentEvent.CheckpointRecorded': {
      const p = e.payload;
      return keep('checkpoint', 'apparatus', (c) => {
        const evidence = c.refs(p.evidence_event_ids);
        return {
          summary: `checkpoint ${c.wake(p.wake_id)}: goal ${p.current_goal_id ?? 'none'} (${p.goal_status ?? 'no status'}); next: ${p.next_action ?? 'none'}`,
          detail: {
            current_goal_id: p.current_goal_id,
            goal_status: p.goal_status === null ? null : c.text(p.goal_status),
            attention_target: p.attention_target === null ? null : c.text(p.attention_target),
            waiting_condition: p.waiting_condition === null ? null : c.text(p.waiting_condition),
            next_action: p.next_action === null ? null : c.text(p.next_action),
            observed_up_to: c.refAtOrBefore(p.observed_event_seq),
            evidence,
          },
          refs: evidence,
        };
      });
    }
    case 'ExperimentEvent.BudgetLedgerRecorded': {
      const p = e.payload;
      // used.tokens includes the prompt tokens, whose count depends on the state setting: dropped.
      return keep('budget_ledger', 'apparatus', (c) => ({
        summary: `${c.wake(p.wake_id)} used ${p.used.model_calls}/${p.granted.model_calls} model call(s), ${p.used.tool_calls}/${p.granted.tool_calls} tool call(s)`,
        detail: { granted: { ...p.granted }, used: { model_calls: p.used.model_calls, tool_calls: p.used.tool_calls, retries: p.used.retries } },
        refs: [],
      }));
    }
    default: {
      const unhandled: never = e;
      throw new NormalizeError(`event type ${(unhandled as { event_type: string }).event_type} has no rule in the blind-review normalizer`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The timeline

export interface NormalizeOptions {
  /** Absolute host paths that may occur in apparatus text (the run folder, the study folder): written as "[host path]". */
  readonly hostPaths: readonly string[];
}

export interface NormalizedTimeline {
  readonly entries: readonly TimelineEntry[];
  /** event id → ref of every kept event. */
  readonly refOfEventId: ReadonlyMap<string, RefText>;
  readonly wakeOfId: ReadonlyMap<string, WakeText>;
  readonly startMs: number;
  readonly stats: NormalizeStats;
}

function deepMapStrings(value: unknown, f: (text: string) => string): unknown {
  if (typeof value === 'string') return f(value);
  if (Array.isArray(value)) return value.map((v) => deepMapStrings(v, f));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, deepMapStrings(v, f)]));
  return value;
}

/** The event read at the catalogue's current version (an event of an earlier version lifted by its upcasters). */
function typedOf(event: EventEnvelope): TypedEvent {
  const current = currentPayloadOf(event);
  if (!current.ok) throw new NormalizeError(`the event at seq ${event.seq} (${event.event_type} ${event.schema_version}) cannot be read: ${current.reason}; run npm run verify on the run folder, and export it with the version of this program that wrote it if it is newer`);
  return current.event;
}

function proposalIdOf(e: TypedEvent): string | null {
  switch (e.event_type) {
    case 'ActionEvent.PermissionDecided':
    case 'ActionEvent.ExecutionIntentRecorded':
    case 'MemoryEvent.JournalEntryWritten':
    case 'MemoryEvent.TaskBoardChanged':
      return e.payload.proposal_id;
    default:
      return null;
  }
}

/** Normalizes one instance's events (all of them, in seq order) against its plan. */
export function normalizeEvents(events: readonly EventEnvelope[], plan: ExperimentPlan, options: NormalizeOptions): NormalizedTimeline {
  const startMs = Date.parse(plan.schedule.start_at);
  const wakeOfId = new Map(plan.schedule.wakes.map((w, i) => [w.wake_id, wakeRefOfIndex(i)] as const));
  const stats = emptyStats();

  // Pass 1: what is kept, its ref, and the facts other entries' summaries and refs need.
  const typed = events.map(typedOf);
  const dispositions = typed.map(dispositionOf);
  const refOfEventId = new Map<string, RefText>();
  /** ds-model-output/2 subjects cite events by seq ("event #123"): a seq counts events, so it says how much happened and is replaced like an id. */
  const refOfSeq = new Map<number, RefText>();
  const keptSeqs: number[] = [];
  const keptRefs: RefText[] = [];
  const proposalEventOf = new Map<string, string>();
  const proposalInfoOf = new Map<string, ProposalInfo>();
  const intentInfoOf = new Map<string, { op: string; path: string }>();
  const latestProposal = new Map<string, string>();
  for (const [i, event] of events.entries()) {
    const e = typed[i]!;
    const d = dispositions[i]!;
    if ('omit' in d) stats.omitted[d.omit] += 1;
    else {
      const ref = refOfIndex(keptRefs.length);
      refOfEventId.set(event.event_id, ref);
      refOfSeq.set(event.seq, ref);
      keptSeqs.push(event.seq);
      keptRefs.push(ref);
    }
    if (e.event_type === 'ActionEvent.ActionProposed') {
      latestProposal.set(e.payload.proposal_id, event.event_id);
      proposalInfoOf.set(event.event_id, { tool: e.payload.tool, op: e.payload.op, target: targetOf(e.payload.tool, e.payload.args) });
    } else if (e.event_type === 'PlanEvent.PlanRevisionProposed') latestProposal.set(e.payload.proposal_id, event.event_id);
    if (e.event_type === 'ActionEvent.ExecutionIntentRecorded') intentInfoOf.set(event.event_id, { op: e.payload.op, path: e.payload.path });
    const pid = proposalIdOf(e);
    if (pid !== null) {
      const proposal = latestProposal.get(pid);
      if (proposal !== undefined) proposalEventOf.set(event.event_id, proposal);
    }
  }

  const hostPaths = [...new Set(options.hostPaths.filter((p) => p.length > 1))].sort((a, b) => b.length - a.length);
  /** The ref of the kept event at `seq`, or "[id]" (counted) for a seq that names no kept event. */
  const refOrHidden = (seq: string, counted: boolean): string => {
    const ref = refOfSeq.get(Number(seq));
    if (ref !== undefined) return ref;
    if (counted) stats.idsInTextHidden += 1;
    return '[id]';
  };
  // `counted`: the summary repeats words of the detail; an id hidden in both is counted once (in the detail).
  const scrub = (text: string, counted = true): string => {
    let out = text;
    for (const p of hostPaths) {
      out = out.split(`${p}/workspace/`).join('');
      out = out.split(p).join('[host path]');
    }
    out = out.replace(WORKSPACE_PREFIX_RE, '');
    out = out.replace(UUID_RE, (id) => {
      const ref = refOfEventId.get(id.toLowerCase());
      if (ref !== undefined) return ref;
      if (counted) stats.idsInTextHidden += 1;
      return '[id]';
    });
    // A seq list becomes a list of quoted refs, as a ds-model-output/1 answer's evidence_event_ids read.
    out = out.replace(SEQ_LIST_RE, (_match, escapes: string, open: string, list: string) => {
      const quote = `${escapes}"`;
      const items = list.replace(SEQ_IN_LIST_RE, (_item, seq: string) => `${quote}${refOrHidden(seq, counted)}${quote}`);
      return `${quote}evidence_seqs${quote}${open}${items}`;
    });
    out = out.replace(SEQ_REF_RE, (_match, word: string, seq: string) => `${word.replace(/[\s#]+$/, '')} ${refOrHidden(seq, counted)}`);
    return rewriteTimes(out, startMs);
  };
  const cut = (): void => {
    stats.textsCut += 1;
  };

  // Pass 2: the entries, in seq order.
  const entries: TimelineEntry[] = [];
  let currentWake: WakeText | null = null;
  let lastMinute = 0;
  for (const [i, event] of events.entries()) {
    const d = dispositions[i]!;
    if ('omit' in d) continue;
    const e = typed[i]!;
    const refOf = (id: string | null): RefText | null => {
      if (id === null) return null;
      const ref = refOfEventId.get(id);
      if (ref === undefined) {
        stats.refsToOmittedEvents += 1;
        return null;
      }
      return ref;
    };
    const context: BuildContext = {
      ref: refOf,
      refs: (ids) => ids.map(refOf).filter((r): r is RefText => r !== null),
      refAtOrBefore: (seq) => {
        // Binary search over the kept seqs (ascending).
        let lo = 0;
        let hi = keptSeqs.length - 1;
        let found = -1;
        while (lo <= hi) {
          const mid = (lo + hi) >> 1;
          if (keptSeqs[mid]! <= seq) {
            found = mid;
            lo = mid + 1;
          } else hi = mid - 1;
        }
        return found < 0 ? null : keptRefs[found]!;
      },
      proposalOf: () => refOf(proposalEventOf.get(event.event_id) ?? null),
      proposalInfo: () => proposalInfoOf.get(proposalEventOf.get(event.event_id) ?? '') ?? null,
      intentInfo: (id) => intentInfoOf.get(id) ?? null,
      text: (text, max = MAX_TEXT_CHARS) => bounded(scrub(text), max, cut),
      time: (iso) => relativeTime(iso, startMs),
      wake: (wakeId) => {
        const w = wakeOfId.get(wakeId);
        if (w === undefined) throw new NormalizeError(`the event at seq ${event.seq} (${event.event_type}) names wake ${wakeId}, which the plan's schedule does not hold`);
        return w;
      },
    };
    if (e.event_type === 'ExperimentEvent.WakeStarted') currentWake = context.wake(e.payload.wake_id);
    const wake = e.event_type === 'ExperimentEvent.WakeEnded' || e.event_type === 'ExperimentEvent.CheckpointRecorded' || e.event_type === 'ExperimentEvent.BudgetLedgerRecorded' ? context.wake(e.payload.wake_id) : currentWake;
    let minute: number;
    if (e.event_type === 'SystemEvent.AppendRejected') {
      // The writer stamps its own refusals with the wall clock: they happen within the exchange before them.
      minute = lastMinute;
      stats.timesFromNeighbour += 1;
    } else {
      minute = Math.floor((Date.parse(event.occurred_at) - startMs) / MS_PER_MINUTE);
      if (!Number.isFinite(minute) || minute < 0 || minute >= MAX_SIM_HOURS * 60) {
        throw new NormalizeError(`the event at seq ${event.seq} (${event.event_type}) occurred at ${event.occurred_at}, outside hour 0 (${plan.schedule.start_at}) to h${MAX_SIM_HOURS}: its simulated time cannot be stated; run npm run verify on the run folder`);
      }
    }
    lastMinute = minute;
    const built = d.build(context);
    // Identifiers (goal, task, entry ids) are the subject's words too: the same scrub as every text.
    const detail = DETAIL_SCHEMAS[d.kind].safeParse(deepMapStrings(built.detail, (t) => scrub(t)));
    if (!detail.success) throw new NormalizeError(`the ${d.kind} entry of seq ${event.seq} breaks its detail schema (a normalizer bug): ${z.prettifyError(detail.error)}`);
    // The envelope's causation first (what this entry answers), then what the payload cites.
    const cause = event.causation_id === null ? null : refOf(event.causation_id);
    const refs = [...new Set([cause, ...built.refs].filter((r): r is RefText => r !== null))];
    const entry = TimelineEntry.safeParse({
      ref: keptRefs[entries.length]!,
      t: SimTime.parse(formatSimMinute(minute)),
      t_minute: minute,
      wake,
      kind: d.kind,
      actor: d.actor,
      summary: bounded(scrub(built.summary, false).replace(/\s+/g, ' ').trim(), MAX_SUMMARY_CHARS),
      detail: detail.data,
      // At most 64 by construction: the cause, plus payload lists the catalogue bounds to 64 (evidence and
      // refutations come alone); more is refused by the schema, never cut.
      refs,
    });
    if (!entry.success) throw new NormalizeError(`the entry of seq ${event.seq} breaks the TimelineEntry schema: ${z.prettifyError(entry.error)}`);
    entries.push(entry.data);
    if (e.event_type === 'ExperimentEvent.WakeEnded') currentWake = null;
  }
  return { entries, refOfEventId, wakeOfId, startMs, stats };
}
