// One instance's events → the neutral timeline of its blind-review package (DESIGN §10, spec
// §8.5, §16.3). A handler per event type, in one map per event category
// (blind-review/disposition/*-events.ts), turns every event into a TimelineEntry of a neutral kind
// or into an explicit omission with a reason (blind-review/omissions.ts): a new event type is a
// compile error there until someone decides what a reviewer sees of it.
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
// - Payload fields dropped, per type (the rest is kept under neutral names; see each handler):
//   ModelAnswered/ModelCallFailed: adapter, model_id, params, system_fingerprint, latency_ms,
//   usage_source, protocol, response_model, finish_reason and attempts (configuration or
//   apparatus), the context counts, the prompt tokens and their counts (the context bundle's
//   size depends on the state setting by construction); ModelCallFailed: the failure kinds the
//   apparatus decides and the prompt's size sways (truncated_prompt, timeout, transport,
//   stream_broken, http_error) all read `no_answer`, with neither their detail nor what arrived
//   (SHOWN_MODEL_FAILURE, blind-review/shown-model-failure.ts); the detail of every failure but a
//   schema violation or a refusal (MODEL_FAILURE_DETAIL_WITHHELD);
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
// Here: the two passes that give every entry its ref, its time and its scrubbed texts. The detail
// of each kind and the bounds of its texts are in blind-review/timeline-detail.ts.
import { z } from 'zod';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import { bounded } from '../foundation/bounded-text.js';
import { InternalError } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import { dispatcherOf } from '../schema/category-handlers.js';
import type { TypedEvent } from '../schema/event-catalog.js';
import { disposeActionEvents } from './disposition/action-events.js';
import { targetOf, type BuildContext, type Disposition, type ProposalInfo, type RefText, type WakeText } from './disposition/disposition.js';
import { disposeExperimentEvents } from './disposition/experiment-events.js';
import { disposeMemoryEvents } from './disposition/memory-events.js';
import { disposeModelOutputEvents } from './disposition/model-output-events.js';
import { disposePlanEvents } from './disposition/plan-events.js';
import { disposeSystemEvents } from './disposition/system-events.js';
import { disposeWorldEvents } from './disposition/world-events.js';
import { OMISSION_REASONS, type OmissionReason } from './omissions.js';
import { SimTime, TimelineEntry, type TimelineKind } from './package-format.js';
import { DETAIL_SCHEMAS, MAX_SUMMARY_CHARS, MAX_TEXT_CHARS, type DetailOf } from './timeline-detail.js';

export class NormalizeError extends InternalError {
  override readonly name = 'NormalizeError';
}

/** Simulated times past this many hours are not a study's (the schedule has 72). */
const MAX_SIM_HOURS = 999;
const MS_PER_MINUTE = 60_000;

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
// The timeline

/** Every catalogue type is kept as a kind or omitted with a reason: one map per event category. */
const dispositionOf = dispatcherOf<void, Disposition>({
  SystemEvent: disposeSystemEvents,
  WorldEvent: disposeWorldEvents,
  ModelOutputEvent: disposeModelOutputEvents,
  ActionEvent: disposeActionEvents,
  MemoryEvent: disposeMemoryEvents,
  PlanEvent: disposePlanEvents,
  ExperimentEvent: disposeExperimentEvents,
});

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
  const dispositions = typed.map((e) => dispositionOf(e));
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
