// The retrieval window of one wake (DESIGN §6 step 3, issue 5 item 2): the pre-registered rule —
// identical for every group — that chooses which of the events visible to the wake the subject is
// shown, and a statement of what it left out and why (by count, by the token cap, not eligible).
// RETRIEVAL_RULE_VERSION names the rule. Everything here is a pure function of its arguments (no
// clock, no randomness, no I/O), so a replayed wake builds the byte-identical window. Also the one
// reading of a window event's payload against the catalogue (windowPayload), for every reader of
// the window: the subject views (subject-view.ts) and the reference policy.
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import { eventDefinition, type EventType, type PayloadOf } from '../schema/event-catalog.js';
import { EventId, Timestamp } from '../schema/event-definition.js';
import { MAX_PINNED_EVENTS, type RetrievalPolicy } from '../schema/retrieval-policy.js';
import { ContextBundleError } from './context-bundle-error.js';

/**
 * Version of the retrieval rule below (filter, count cut, token cut, estimate). Bump on any change
 * to what it selects; the manifest records it (design/manifest.ts `prompt`). 2.0.0 (issue 34): the
 * window advances by pages, not one event at a time, so consecutive wakes share its start.
 */
export const RETRIEVAL_RULE_VERSION = '2.0.0';
/**
 * The window is cut in this many pages of ceil(window_events / WINDOW_PAGES) eligible events,
 * counted from the first eligible event: it drops its oldest page at once when a new one would
 * overflow it, so it shows between window_events − page + 1 and window_events events and its start
 * moves once a page, not at every new event. Part of the rule: the same for every group.
 */
export const WINDOW_PAGES = 2;
/** The token estimate of one window event: ceil(UTF-8 bytes of its JCS text / this). */
export const BYTES_PER_ESTIMATED_TOKEN = 4;

export const WindowEvent = z.strictObject({
  seq: z.number().int().min(1),
  event_id: EventId,
  event_type: z.string(),
  occurred_at: Timestamp,
  payload: z.record(z.string(), z.unknown()),
});
export type WindowEvent = z.infer<typeof WindowEvent>;

export const RetrievalWindow = z.strictObject({
  /** The pinned events first (policy.pinned_event_types), then the window's, each in seq order. */
  events: z.array(WindowEvent),
  /** Events of policy.pinned_event_types shown ahead of the window (not counted in eligible_total). */
  pinned: z.number().int().min(0).default(0),
  /** Events of the pre-registered types visible to this wake. */
  eligible_total: z.number().int().min(0),
  /** Eligible events left out because the window holds only window_events. */
  omitted_by_count: z.number().int().min(0),
  /** Eligible events left out to stay under token_cap. */
  omitted_by_token_cap: z.number().int().min(0),
  /** Visible events of other types (never in the window). */
  not_eligible: z.number().int().min(0),
  tokens_estimated: z.number().int().min(0),
  /** e.g. "window 40 of 312 eligible events (272 older left out, 0 over the token cap); 90 events of other types not shown". */
  statement: z.string(),
});
export type RetrievalWindow = z.infer<typeof RetrievalWindow>;

/** What the bundle needs of a stored event (an EventEnvelope has all of it). */
export interface VisibleEvent {
  readonly seq: number;
  readonly event_id: string;
  readonly event_type: string;
  readonly occurred_at: string;
  readonly payload: Readonly<Record<string, unknown>>;
}

/** ceil(UTF-8 bytes of JCS(window event) / 4): what the token cap is measured in. */
export function estimateEventTokens(event: WindowEvent): number {
  return Math.ceil(Buffer.byteLength(canonicalJson(event), 'utf8') / BYTES_PER_ESTIMATED_TOKEN);
}

/** A stored event as the window shows it: its own copy of the payload. */
export function toWindowEvent(e: VisibleEvent): WindowEvent {
  return { seq: e.seq, event_id: e.event_id, event_type: e.event_type, occurred_at: e.occurred_at, payload: { ...e.payload } };
}

export function windowStatement(w: Omit<RetrievalWindow, 'statement' | 'events'> & { readonly shown: number }): string {
  const pinned = w.pinned > 0 ? `${w.pinned} pinned event${w.pinned === 1 ? '' : 's'} (starting conditions) + ` : '';
  return `${pinned}window ${w.shown} of ${w.eligible_total} eligible events (${w.omitted_by_count} older left out, ${w.omitted_by_token_cap} over the token cap); ${w.not_eligible} events of other types not shown`;
}

/** The visible events sorted by the rule's step 2 and 5 (references to the given events, in seq order). */
export interface RetrievalClassification {
  /** The seq of the last visible event classified (0 before any). */
  readonly lastSeq: number;
  readonly eligible: readonly VisibleEvent[];
  readonly pinned: readonly VisibleEvent[];
  readonly notEligible: number;
}

/**
 * The rule's classification kept up to date one event at a time (issue 19 item 1): the runtime
 * keeps one next to its event cache, so a wake classifies only the events new to it instead of
 * walking the whole history. Built from the same step as buildRetrievalWindow's walk, so the
 * window cut from it (retrievalWindowOf) is the one buildRetrievalWindow builds from every event
 * (test/runtime/retrieval-index.test.ts holds the two to the same bytes).
 */
export class RetrievalIndex implements RetrievalClassification {
  private readonly types: ReadonlySet<string>;
  private readonly pinnedTypes: ReadonlySet<string>;
  private last = 0;
  private readonly eligibleList: VisibleEvent[] = [];
  private readonly pinnedList: VisibleEvent[] = [];
  private notEligibleCount = 0;

  constructor(readonly policy: RetrievalPolicy) {
    this.types = new Set<string>(policy.event_types);
    this.pinnedTypes = new Set<string>(policy.pinned_event_types);
  }

  get lastSeq(): number {
    return this.last;
  }
  get eligible(): readonly VisibleEvent[] {
    return this.eligibleList;
  }
  get pinned(): readonly VisibleEvent[] {
    return this.pinnedList;
  }
  get notEligible(): number {
    return this.notEligibleCount;
  }

  /** Classifies the visible events in increasing seq after lastSeq (events at or below it are refused: they are classified already). */
  add(events: readonly VisibleEvent[], visibleToSeq: number = Number.POSITIVE_INFINITY): void {
    for (const event of events) {
      if (event.seq <= this.last) throw new ContextBundleError(`events must come in increasing seq: seq ${event.seq} after seq ${this.last}`);
      // Later events are not visible to this wake: they are not "left out", they do not exist for it.
      if (event.seq > visibleToSeq) break;
      this.last = event.seq;
      if (this.types.has(event.event_type)) this.eligibleList.push(event);
      else if (this.pinnedTypes.has(event.event_type)) this.pinnedList.push(event);
      else this.notEligibleCount += 1;
    }
  }
}

/**
 * The pre-registered retrieval rule, identical for every group:
 *   1. visible = the given events with seq ≤ visibleToSeq (events must come in increasing seq);
 *   2. eligible = the visible events whose event_type is in policy.event_types;
 *   3. keep the eligible events from the first page boundary (a multiple of
 *      page = ceil(policy.window_events / WINDOW_PAGES), counted from the first eligible event)
 *      that leaves at most policy.window_events of them;
 *   4. while the summed estimate (estimateEventTokens) exceeds policy.token_cap, drop the oldest
 *      kept page (to the next page boundary); within the last page, the oldest event;
 *   5. visible events of policy.pinned_event_types go ahead of the window, outside its count
 *      and its token cap (at most MAX_PINNED_EVENTS, else refused).
 * Every visible event is accounted for exactly once: pinned, shown, omitted_by_count,
 * omitted_by_token_cap or not_eligible; the statement says so in words.
 */
export function buildRetrievalWindow(visibleEvents: readonly VisibleEvent[], policy: RetrievalPolicy, visibleToSeq: number = Number.POSITIVE_INFINITY): RetrievalWindow {
  const index = new RetrievalIndex(policy);
  index.add(visibleEvents, visibleToSeq);
  return retrievalWindowOf(index, policy);
}

/** Steps 3-5 of the rule over a classification (buildRetrievalWindow's, or a RetrievalIndex kept up to date). */
export function retrievalWindowOf(classified: RetrievalClassification, policy: RetrievalPolicy): RetrievalWindow {
  const { eligible, pinned } = classified;
  if (pinned.length > MAX_PINNED_EVENTS) throw new ContextBundleError(`${pinned.length} events of the pinned types ${[...new Set(policy.pinned_event_types)].join(', ')} are visible; at most ${MAX_PINNED_EVENTS} are shown ahead of the window`);
  const page = Math.ceil(policy.window_events / WINDOW_PAGES);
  const start = Math.ceil(Math.max(0, eligible.length - policy.window_events) / page) * page;
  const kept = eligible.slice(start).map(toWindowEvent);
  const omittedByCount = eligible.length - kept.length;
  const costs = kept.map(estimateEventTokens);
  let tokens = costs.reduce((sum, c) => sum + c, 0);
  // Bounded by the kept count: each pass drops at least one event.
  let first = 0;
  while (first < kept.length && tokens > policy.token_cap) {
    const nextBoundary = Math.ceil((start + first + 1) / page) * page - start;
    const to = nextBoundary < kept.length ? nextBoundary : first + 1;
    for (; first < to; first += 1) tokens -= costs[first]!;
  }
  const pinnedEvents = pinned.map(toWindowEvent);
  const pinnedTokens = pinnedEvents.reduce((sum, e) => sum + estimateEventTokens(e), 0);
  const counts = { pinned: pinned.length, eligible_total: eligible.length, omitted_by_count: omittedByCount, omitted_by_token_cap: first, not_eligible: classified.notEligible, tokens_estimated: tokens + pinnedTokens };
  return { events: [...pinnedEvents, ...kept.slice(first)], ...counts, statement: windowStatement({ ...counts, shown: kept.length - first }) };
}

/** The payload of a window event of `type`, checked against the catalogue; null for another type or a payload that fails it. */
export function windowPayload<T extends EventType>(event: WindowEvent, type: T): PayloadOf<T> | null {
  if (event.event_type !== type) return null;
  const parsed = eventDefinition(type)?.payload.safeParse(event.payload);
  return parsed?.success ? (parsed.data as PayloadOf<T>) : null;
}
