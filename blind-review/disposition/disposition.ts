// What the blind-review normalizer decides for one event (blind-review/event-normalizer.ts): a
// timeline entry of a neutral kind, built once every kept event has its ref, or an omission with
// its reason (blind-review/omissions.ts). Each event category decides for its types in a map of its
// own (blind-review/disposition/*-events.ts), typed so that a new event type is a compile error
// until someone decides what a reviewer sees of it.
import type { z } from 'zod';
import type { CategoryHandlers } from '../../schema/category-handlers.js';
import type { EventCategory } from '../../schema/event-definition.js';
import type { OmissionReason } from '../omissions.js';
import type { Ref, TimelineEntry, TimelineKind, WakeRef } from '../package-format.js';
import type { DetailOf } from '../timeline-detail.js';

/** A package-local event ref ("E0001") and a wake ref ("W01"): the contract exports only their schemas. */
export type RefText = z.infer<typeof Ref>;
export type WakeText = z.infer<typeof WakeRef>;

type Actor = TimelineEntry['actor'];

/** What one event's entry needs from the whole timeline (refs of other events, the wake index). */
export interface BuildContext {
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

export interface ProposalInfo {
  readonly tool: string;
  readonly op: string;
  readonly target: string | null;
}

interface Built<K extends TimelineKind> {
  readonly summary: string;
  readonly detail: DetailOf<K>;
  readonly refs: ReadonlyArray<RefText | null>;
}

export type Disposition =
  | { readonly omit: OmissionReason }
  | { readonly kind: TimelineKind; readonly actor: Actor; readonly build: (c: BuildContext) => Built<TimelineKind> };

/** How each event type of category C is shown in a package, or why it is left out. */
export type DispositionHandlers<C extends EventCategory> = CategoryHandlers<C, void, Disposition>;

export function keep<K extends TimelineKind>(kind: K, actor: Actor, build: (c: BuildContext) => Built<K>): Disposition {
  return { kind, actor, build: build as (c: BuildContext) => Built<TimelineKind> };
}

