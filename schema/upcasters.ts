// Upcasters lift a stored event from an older schema_version of its type towards the
// catalogue's (spec §10.4: a version upgrade uses a migrator and never rewrites
// history). A replay applies them only when told to migrate, and only to the in-memory
// copy it hands to the projection: the stored envelope and its hashes stay as written.
import type { EventEnvelope } from './envelope.js';

/** The event as it reads one schema version later (or at the catalogue's version). */
export interface Upcast {
  readonly schema_version: string;
  readonly payload: Record<string, unknown>;
}

/** Pure: no clock, no randomness, no I/O, and no mutation of `event`. */
export type Upcaster = (event: Readonly<EventEnvelope>) => Upcast;

/** Keyed by upcasterKey(event_type, from_version). */
export type UpcasterRegistry = ReadonlyMap<string, Upcaster>;

export function upcasterKey(eventType: string, fromVersion: string): string {
  return `${eventType}@${fromVersion}`;
}

/**
 * The upcasters this build ships. Empty today: every event type is still at the first
 * schema version it was recorded with (catalogue 1.0.0), so there is nothing to migrate
 * from. Bumping a payload schema's version means adding its "<type>@<old version>" here.
 */
export const BUILT_IN_UPCASTERS: UpcasterRegistry = new Map();
