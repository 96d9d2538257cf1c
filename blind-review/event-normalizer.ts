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
// of each kind and the bounds of its texts are in blind-review/timeline-detail.ts, the scrub in
// text-scrub.ts, simulated time in sim-time.ts.
import { z } from 'zod';
import type { ExperimentPlan } from '../design/experiment-plan.js';
import { bounded } from '../foundation/bounded-text.js';
import { InternalError } from '../foundation/typed-error.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { currentPayloadOf } from '../schema/current-payload.js';
import { dispatcherOf } from '../schema/category-handlers.js';
import type { TypedEvent } from '../schema/event-catalog.js';
import { disposeActionEvents } from './disposition/action-events.js';
import { type BuildContext, type Disposition, type ProposalInfo, type RefText, type WakeText } from './disposition/disposition.js';
import { targetOf } from '../schema/tools.js';
import { disposeExperimentEvents } from './disposition/experiment-events.js';
import { disposeMemoryEvents } from './disposition/memory-events.js';
import { disposeModelOutputEvents } from './disposition/model-output-events.js';
import { disposePlanEvents } from './disposition/plan-events.js';
import { disposeSystemEvents } from './disposition/system-events.js';
import { disposeWorldEvents } from './disposition/world-events.js';
import { OMISSION_REASONS, type OmissionReason } from './omissions.js';
import { SimTime, TimelineEntry, type TimelineKind } from './package-format.js';
import { formatSimMinute, MAX_SIM_HOURS, MS_PER_MINUTE, relativeTime } from './sim-time.js';
import { scrubberOf, type Scrub } from './text-scrub.js';
import { DETAIL_SCHEMAS, MAX_SUMMARY_CHARS, MAX_TEXT_CHARS, type DetailOf } from './timeline-detail.js';

export class NormalizeError extends InternalError {
  override readonly name = 'NormalizeError';
}

/** The typed detail of `entry` if it is of `kind` (parsed with its schema), else null. */
export function detailOf<K extends TimelineKind>(entry: TimelineEntry, kind: K): DetailOf<K> | null {
  if (entry.kind !== kind) return null;
  const parsed = DETAIL_SCHEMAS[kind].safeParse(entry.detail);
  if (!parsed.success) throw new NormalizeError(`${entry.ref} (${kind}): its detail does not match the ${kind} detail schema: ${z.prettifyError(parsed.error)}`);
  return parsed.data as DetailOf<K>;
}

// ---------------------------------------------------------------------------------------------
// Refs

export function refOfIndex(index: number): RefText {
  return `E${String(index + 1).padStart(4, '0')}`;
}

export function wakeRefOfIndex(index: number): WakeText {
  return `W${String(index + 1).padStart(2, '0')}`;
}

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

/** What pass 1 learns of the whole timeline: the ref of every kept event, and what other entries' summaries and refs need. */
interface KeptIndex {
  readonly refOfEventId: Map<string, RefText>;
  /** ds-model-output/2 subjects cite events by seq ("event #123"): a seq counts events, so it says how much happened and is replaced like an id. */
  readonly refOfSeq: Map<number, RefText>;
  /** The seqs of the kept events (ascending) and their refs, index for index. */
  readonly keptSeqs: number[];
  readonly keptRefs: RefText[];
  /** event id → the event id of the proposal it answers (the latest with its proposal id before it). */
  readonly proposalEventOf: Map<string, string>;
  readonly proposalInfoOf: Map<string, ProposalInfo>;
  readonly intentInfoOf: Map<string, { op: string; path: string }>;
}

/** Pass 1: what is kept, its ref, and the facts other entries' summaries and refs need. */
function indexKept(events: readonly EventEnvelope[], typed: readonly TypedEvent[], dispositions: readonly Disposition[], stats: NormalizeStats): KeptIndex {
  const index: KeptIndex = { refOfEventId: new Map(), refOfSeq: new Map(), keptSeqs: [], keptRefs: [], proposalEventOf: new Map(), proposalInfoOf: new Map(), intentInfoOf: new Map() };
  const latestProposal = new Map<string, string>();
  for (const [i, event] of events.entries()) {
    const e = typed[i]!;
    const d = dispositions[i]!;
    if ('omit' in d) stats.omitted[d.omit] += 1;
    else {
      const ref = refOfIndex(index.keptRefs.length);
      index.refOfEventId.set(event.event_id, ref);
      index.refOfSeq.set(event.seq, ref);
      index.keptSeqs.push(event.seq);
      index.keptRefs.push(ref);
    }
    if (e.event_type === 'ActionEvent.ActionProposed') {
      latestProposal.set(e.payload.proposal_id, event.event_id);
      index.proposalInfoOf.set(event.event_id, { tool: e.payload.tool, op: e.payload.op, target: targetOf(e.payload.tool, e.payload.args) });
    } else if (e.event_type === 'PlanEvent.PlanRevisionProposed') latestProposal.set(e.payload.proposal_id, event.event_id);
    if (e.event_type === 'ActionEvent.ExecutionIntentRecorded') index.intentInfoOf.set(event.event_id, { op: e.payload.op, path: e.payload.path });
    const pid = proposalIdOf(e);
    if (pid !== null) {
      const proposal = latestProposal.get(pid);
      if (proposal !== undefined) index.proposalEventOf.set(event.event_id, proposal);
    }
  }
  return index;
}

/** The ref of the last kept event at or before `seq`: a binary search over the kept seqs (ascending). */
function refAtOrBefore(index: KeptIndex, seq: number): RefText | null {
  let lo = 0;
  let hi = index.keptSeqs.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (index.keptSeqs[mid]! <= seq) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found < 0 ? null : index.keptRefs[found]!;
}

/** Everything one timeline needs while its entries are built (pass 2). */
interface Timeline {
  readonly index: KeptIndex;
  readonly scrub: Scrub;
  readonly stats: NormalizeStats;
  readonly wakeOfId: ReadonlyMap<string, WakeText>;
  readonly startMs: number;
  readonly startAt: string;
}

/** What `event`'s entry may ask of the timeline (the handlers' BuildContext). */
function buildContextOf(event: EventEnvelope, t: Timeline): BuildContext {
  const refOf = (id: string | null): RefText | null => {
    if (id === null) return null;
    const ref = t.index.refOfEventId.get(id);
    if (ref === undefined) {
      t.stats.refsToOmittedEvents += 1;
      return null;
    }
    return ref;
  };
  return {
    ref: refOf,
    refs: (ids) => ids.map(refOf).filter((r): r is RefText => r !== null),
    refAtOrBefore: (seq) => refAtOrBefore(t.index, seq),
    proposalOf: () => refOf(t.index.proposalEventOf.get(event.event_id) ?? null),
    proposalInfo: () => t.index.proposalInfoOf.get(t.index.proposalEventOf.get(event.event_id) ?? '') ?? null,
    intentInfo: (id) => t.index.intentInfoOf.get(id) ?? null,
    text: (text, max = MAX_TEXT_CHARS) =>
      bounded(t.scrub(text), max, () => {
        t.stats.textsCut += 1;
      }),
    time: (iso) => relativeTime(iso, t.startMs),
    wake: (wakeId) => {
      const w = t.wakeOfId.get(wakeId);
      if (w === undefined) throw new NormalizeError(`the event at seq ${event.seq} (${event.event_type}) names wake ${wakeId}, which the plan's schedule does not hold`);
      return w;
    },
  };
}

/** The simulated minute of `event`; a writer's refusal takes `lastMinute`, the minute of the event before it. */
function minuteOf(event: EventEnvelope, e: TypedEvent, lastMinute: number, t: Timeline): number {
  if (e.event_type === 'SystemEvent.AppendRejected') {
    // The writer stamps its own refusals with the wall clock: they happen within the exchange before them.
    t.stats.timesFromNeighbour += 1;
    return lastMinute;
  }
  const minute = Math.floor((Date.parse(event.occurred_at) - t.startMs) / MS_PER_MINUTE);
  if (!Number.isFinite(minute) || minute < 0 || minute >= MAX_SIM_HOURS * 60) {
    throw new NormalizeError(`the event at seq ${event.seq} (${event.event_type}) occurred at ${event.occurred_at}, outside hour 0 (${t.startAt}) to h${MAX_SIM_HOURS}: its simulated time cannot be stated; run npm run verify on the run folder`);
  }
  return minute;
}

/** The entry of a kept event, checked against its kind's detail schema and the TimelineEntry schema. */
function entryOf(event: EventEnvelope, d: Extract<Disposition, { kind: TimelineKind }>, c: BuildContext, at: { ref: RefText; minute: number; wake: WakeText | null }, scrub: Scrub): TimelineEntry {
  const built = d.build(c);
  // Identifiers (goal, task, entry ids) are the subject's words too: the same scrub as every text.
  const detail = DETAIL_SCHEMAS[d.kind].safeParse(deepMapStrings(built.detail, (t) => scrub(t)));
  if (!detail.success) throw new NormalizeError(`the ${d.kind} entry of seq ${event.seq} breaks its detail schema (a normalizer bug): ${z.prettifyError(detail.error)}`);
  // The envelope's causation first (what this entry answers), then what the payload cites.
  const cause = event.causation_id === null ? null : c.ref(event.causation_id);
  const refs = [...new Set([cause, ...built.refs].filter((r): r is RefText => r !== null))];
  const entry = TimelineEntry.safeParse({
    ref: at.ref,
    t: SimTime.parse(formatSimMinute(at.minute)),
    t_minute: at.minute,
    wake: at.wake,
    kind: d.kind,
    actor: d.actor,
    summary: bounded(scrub(built.summary, false).replace(/\s+/g, ' ').trim(), MAX_SUMMARY_CHARS),
    detail: detail.data,
    // At most 64 by construction: the cause, plus payload lists the catalogue bounds to 64 (evidence and
    // refutations come alone); more is refused by the schema, never cut.
    refs,
  });
  if (!entry.success) throw new NormalizeError(`the entry of seq ${event.seq} breaks the TimelineEntry schema: ${z.prettifyError(entry.error)}`);
  return entry.data;
}

/** Normalizes one instance's events (all of them, in seq order) against its plan. */
export function normalizeEvents(events: readonly EventEnvelope[], plan: ExperimentPlan, options: NormalizeOptions): NormalizedTimeline {
  const startMs = Date.parse(plan.schedule.start_at);
  const wakeOfId = new Map(plan.schedule.wakes.map((w, i) => [w.wake_id, wakeRefOfIndex(i)] as const));
  const stats = emptyStats();
  const typed = events.map(typedOf);
  const dispositions = typed.map((e) => dispositionOf(e));
  const index = indexKept(events, typed, dispositions, stats);
  const countHidden = (): void => {
    stats.idsInTextHidden += 1;
  };
  const t: Timeline = { index, scrub: scrubberOf(index, options.hostPaths, startMs, countHidden), stats, wakeOfId, startMs, startAt: plan.schedule.start_at };

  // Pass 2: the entries, in seq order.
  const entries: TimelineEntry[] = [];
  let currentWake: WakeText | null = null;
  let lastMinute = 0;
  for (const [i, event] of events.entries()) {
    const d = dispositions[i]!;
    if ('omit' in d) continue;
    const e = typed[i]!;
    const context = buildContextOf(event, t);
    if (e.event_type === 'ExperimentEvent.WakeStarted') currentWake = context.wake(e.payload.wake_id);
    const wake = e.event_type === 'ExperimentEvent.WakeEnded' || e.event_type === 'ExperimentEvent.CheckpointRecorded' || e.event_type === 'ExperimentEvent.BudgetLedgerRecorded' ? context.wake(e.payload.wake_id) : currentWake;
    lastMinute = minuteOf(event, e, lastMinute, t);
    entries.push(entryOf(event, d, context, { ref: index.keptRefs[entries.length]!, minute: lastMinute, wake }, t.scrub));
    if (e.event_type === 'ExperimentEvent.WakeEnded') currentWake = null;
  }
  return { entries, refOfEventId: index.refOfEventId, wakeOfId, startMs, stats };
}
