// The versions a projected state was computed under (DESIGN §5, spec §12.6): recorded
// with the projection row and with every snapshot, and compared before a stored state
// is trusted, continued or replayed. Determinism is only promised when all of them match.
import type { Projection } from '../projector/projection.js';
import { EVENT_SCHEMA_VERSION } from '../schema/event-catalog.js';

export interface ProjectionVersions {
  readonly projection: string;
  readonly projector_version: string;
  readonly state_machine_version: string;
  readonly event_schema_version: string;
}

export const VERSION_FIELDS = ['projection', 'projector_version', 'state_machine_version', 'event_schema_version'] as const satisfies readonly (keyof ProjectionVersions)[];

/** What this build records for `projection`: its own versions and the catalogue's. */
export function versionsOf(projection: Projection<unknown>): ProjectionVersions {
  return {
    projection: projection.name,
    projector_version: projection.version,
    state_machine_version: projection.stateMachineVersion,
    event_schema_version: EVENT_SCHEMA_VERSION,
  };
}

/** One recorded version that is not the one in use. */
export interface VersionDifference {
  /** What recorded it: "projection row", "snapshot at seq 40", "events of type X (3 from seq 5)". */
  readonly where: string;
  readonly field: string;
  readonly recorded: string;
  /** What this build (or the chosen replay mode) uses; null when it has none at all. */
  readonly expected: string | null;
}

/** Every field of `recorded` that differs from `expected`, in a fixed order. */
export function versionDifferences(where: string, recorded: ProjectionVersions, expected: ProjectionVersions): VersionDifference[] {
  return VERSION_FIELDS.filter((field) => recorded[field] !== expected[field]).map((field) => ({ where, field, recorded: recorded[field], expected: expected[field] }));
}

export function describeDifference(d: VersionDifference): string {
  return `${d.where}: ${d.field} recorded ${d.recorded}, ${d.expected === null ? 'this build has none' : `expected ${d.expected}`}`;
}

export function formatVersions(v: ProjectionVersions): string {
  return `${v.projection}@${v.projector_version} (state machine ${v.state_machine_version}, event schema ${v.event_schema_version})`;
}
