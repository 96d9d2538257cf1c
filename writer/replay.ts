// Rebuilds projected state from a store's events alone (spec §12.1: a lost snapshot or
// projection must be recoverable by replay). It reads the file read-only, streams the
// events one row at a time, never calls a model (model outputs are stored events, §10.4)
// and never talks to a writer.
//
// Versioned replay (spec §10.4, §12.6): the recorded versions (projection row, the
// snapshot started from, each event's schema_version) are compared with the ones this
// replay would use before anything is applied. Any difference refuses the replay unless
// the caller chose explicitly: `migrate` (upcast old events, build a new projection under
// this build) or `useRecorded` (run the projector version that recorded the store). The
// differences a chosen mode accepts are returned, never dropped.
import { ProjectionRefusal, type Projection } from '../projector/projection.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { EventEnvelope } from '../schema/envelope.js';
import { eventDefinition } from '../schema/event-catalog.js';
import { hashText, type HashString } from '../schema/hash.js';
import { BUILT_IN_UPCASTERS, upcasterKey, type UpcasterRegistry } from '../schema/upcasters.js';
import { migrateEvent } from './event-migration.js';
import { BUILD_PROJECTIONS, type ProjectionCatalog } from './projection-catalog.js';
import { versionDifferences, versionsOf, type ProjectionVersions, type VersionDifference } from './projection-versions.js';
import { MissingUpcasterError, RecordedVersionUnavailableError, ReplayRefusal, VersionMismatchError, type MissingUpcaster } from './replay-errors.js';
import { snapshotBindingProblem, storeSubjectOf } from './snapshot-binding.js';
import { StoreReadError, StoreReader, type StoredProjection } from './store-reader.js';

export type ReplayMode = 'strict' | 'migrate' | 'use-recorded';

const REPLAY_CHUNK_EVENTS = 1_024;

export interface ReplayOptions {
  /** Stop after the event at this seq (default: the last one). */
  readonly toSeq?: number;
  /** Start from the snapshot stored at this seq instead of the initial state (default: none). */
  readonly fromSnapshotSeq?: number | null;
  /** Upcast events recorded under older schema versions; the recorded projection versions are then superseded. */
  readonly migrate?: boolean;
  /** Run the projector version the projection row recorded, if this build carries it. */
  readonly useRecorded?: boolean;
  /** Upcasters for `migrate` (default: the built-in registry, empty today). */
  readonly upcasters?: UpcasterRegistry;
  /** Projections to choose from (default: this build's registry). */
  readonly projections?: ProjectionCatalog;
  /**
   * The store's events, seq 1 to its head, as a verify of this very file has just read and
   * checked them (verified-events.ts): replayed instead of reading the rows again. The rest
   * (projection row, snapshots) is still read from the store.
   */
  readonly events?: readonly EventEnvelope[];
}

export interface ReplayResult {
  readonly state: unknown;
  readonly state_hash: HashString;
  /** Events applied: those after the snapshot started from, up to to_seq. */
  readonly events: number;
  readonly to_seq: number;
  readonly from_snapshot_seq: number | null;
  readonly mode: ReplayMode;
  /** The versions the returned state was computed under. */
  readonly versions: ProjectionVersions;
  /** Recorded versions that differ from `versions`, accepted because `mode` was chosen explicitly. */
  readonly accepted_differences: readonly VersionDifference[];
  /** Events that reached the projection upcast (migrate mode only). */
  readonly migrated_events: number;
}

/** Replays the store at `dbPath` (an events.db), opened read-only for the duration. */
export function replayStore(dbPath: string, options: ReplayOptions = {}): ReplayResult {
  const reader = StoreReader.open(dbPath);
  try {
    return replayFrom(reader, options);
  } finally {
    reader.close();
  }
}

export function modeOf(options: Pick<ReplayOptions, 'migrate' | 'useRecorded'>): ReplayMode {
  if (options.migrate && options.useRecorded) throw new ReplayRefusal('usage', 'choose one of migrate and use-recorded: one replay cannot both upcast to this build and run the recorded build');
  return options.migrate ? 'migrate' : options.useRecorded ? 'use-recorded' : 'strict';
}

interface Plan {
  readonly projection: Projection<unknown>;
  readonly versions: ProjectionVersions;
  readonly refused: VersionDifference[];
  readonly accepted: VersionDifference[];
}

/** Which projection runs, under which versions, and which recorded differences that refuses or accepts. */
function planProjection(stored: StoredProjection, mode: ReplayMode, catalog: ProjectionCatalog): Plan {
  const recorded = stored.versions;
  const current = catalog.current(recorded.projection);
  if (mode === 'use-recorded') {
    const old = catalog.recorded(recorded.projection, recorded.projector_version);
    if (!old) throw new RecordedVersionUnavailableError(recorded.projection, recorded.projector_version, current ? `${current.name}@${current.version}` : null);
    // The recorded events go to the recorded projector as they are: it is the one they
    // were written for, so the event schema the row names is the one in force.
    const versions: ProjectionVersions = { ...versionsOf(old), event_schema_version: recorded.event_schema_version };
    const accepted = current ? versionDifferences('projection row (this build would use)', recorded, versionsOf(current)) : [];
    return { projection: old, versions, refused: versionDifferences('projection row', recorded, versions), accepted };
  }
  // Without a projection of that name there is nothing to replay with, in either mode.
  if (!current) throw new VersionMismatchError([{ where: 'projection row', field: 'projection', recorded: recorded.projection, expected: null }]);
  const versions = versionsOf(current);
  const differences = versionDifferences('projection row', recorded, versions);
  // Migrating builds a new projection under this build: the recorded row is superseded, not mixed in.
  return mode === 'migrate' ? { projection: current, versions, refused: [], accepted: differences } : { projection: current, versions, refused: differences, accepted: [] };
}

/** Schema versions of the events to apply, against the catalogue, without loading them. */
function checkEventVersions(reader: StoreReader, afterSeq: number, toSeq: number, mode: ReplayMode, upcasters: UpcasterRegistry): { refused: VersionDifference[]; accepted: VersionDifference[]; missing: MissingUpcaster[] } {
  const refused: VersionDifference[] = [];
  const accepted: VersionDifference[] = [];
  const missing: MissingUpcaster[] = [];
  // The recorded projector gets the events as they were recorded; this build's catalogue
  // is not the one they were written against, so there is nothing to compare them with.
  if (mode === 'use-recorded') return { refused, accepted, missing };
  for (const group of reader.schemaVersionSummary(afterSeq, toSeq)) {
    // Unreadable envelopes are reported with their seq when the events are read.
    if (group.schema_version === null) continue;
    const where = `events of type ${group.event_type} (${group.events}, first at seq ${group.first_seq})`;
    const definition = eventDefinition(group.event_type);
    if (!definition) {
      refused.push({ where, field: 'event_type', recorded: group.event_type, expected: null });
      continue;
    }
    if (definition.schemaVersion === group.schema_version) continue;
    const difference = { where, field: 'schema_version', recorded: group.schema_version, expected: definition.schemaVersion };
    if (mode === 'strict') {
      refused.push(difference);
      continue;
    }
    accepted.push(difference);
    // Only the first step of a chain is known before running it; later steps are checked per event.
    const key = upcasterKey(group.event_type, group.schema_version);
    if (!upcasters.has(key)) missing.push({ key, first_seq: group.first_seq, events: group.events });
  }
  return { refused, accepted, missing };
}

/**
 * Parses a stored envelope with a structural check only: replay trusts a store that
 * `npm run verify` passed (schemas, hashes, chain) and would otherwise spend most of its
 * time re-validating every field; what it does check is what it relies on.
 */
function parseStoredEvent(reader: StoreReader, seq: number, text: string): EventEnvelope {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new StoreReadError('corrupt', `the envelope at seq ${seq} of ${reader.path} is not JSON; run npm run verify on it`);
  }
  const e = raw as Partial<Record<keyof EventEnvelope, unknown>> | null;
  if (
    e === null ||
    typeof e !== 'object' ||
    e.seq !== seq ||
    typeof e.event_type !== 'string' ||
    typeof e.schema_version !== 'string' ||
    typeof e.event_id !== 'string' ||
    typeof e.occurred_at !== 'string' ||
    typeof e.payload !== 'object' ||
    e.payload === null ||
    Array.isArray(e.payload)
  ) {
    throw new StoreReadError('corrupt', `the envelope at seq ${seq} of ${reader.path} is not a valid envelope for that seq; run npm run verify on it`);
  }
  return raw as EventEnvelope;
}

/** The events in (afterSeq, toSeq]: read from the store one row at a time, or the ones a verify of it has just read. */
function* eventsToReplay(reader: StoreReader, afterSeq: number, toSeq: number, head: number, given: readonly EventEnvelope[] | undefined): Generator<{ readonly seq: number; readonly event: EventEnvelope }> {
  if (given === undefined) {
    for (const row of reader.iterateEvents(afterSeq, toSeq)) yield { seq: row.seq, event: parseStoredEvent(reader, row.seq, row.envelope) };
    return;
  }
  if (given.length !== head) throw new StoreReadError('corrupt', `${reader.path} holds ${head} events, but ${given.length} were verified: it changed after its verify`);
  for (let i = afterSeq; i < toSeq; i += 1) yield { seq: given[i]!.seq, event: given[i]! };
}

type VersionVerdict = 'as-recorded' | 'upcast' | 'refuse';

/** What replay does with events of one type and schema version (decided once per pair). */
function versionVerdict(eventType: string, schemaVersion: string, mode: ReplayMode, upcasters: UpcasterRegistry): VersionVerdict {
  if (mode === 'use-recorded') return 'as-recorded';
  const definition = eventDefinition(eventType);
  if (!definition) return 'refuse';
  if (definition.schemaVersion === schemaVersion) return 'as-recorded';
  if (mode === 'strict') return 'refuse';
  return upcasters.has(upcasterKey(eventType, schemaVersion)) ? 'upcast' : 'refuse';
}

/** Replays on an open reader (restore drills run several replays on one). */
export function replayFrom(reader: StoreReader, options: ReplayOptions = {}): ReplayResult {
  const mode = modeOf(options);
  const catalog = options.projections ?? BUILD_PROJECTIONS;
  const upcasters = options.upcasters ?? BUILT_IN_UPCASTERS;
  const head = reader.headSeq();
  if (head === 0) throw new StoreReadError('corrupt', `${reader.path} holds no events`);
  const toSeq = options.toSeq ?? head;
  if (!Number.isSafeInteger(toSeq) || toSeq < 1 || toSeq > head) throw new ReplayRefusal('usage', `to-seq must be a seq from 1 to ${head} (the last event of ${reader.path}), got ${toSeq}`);
  const stored = reader.storedProjection();
  if (!stored) throw new StoreReadError('corrupt', `${reader.path} has no projection row, so nothing says which projection (and versions) to replay`);

  const plan = planProjection(stored, mode, catalog);
  const refused = [...plan.refused];
  const accepted = [...plan.accepted];

  let state: unknown;
  const fromSnapshotSeq = options.fromSnapshotSeq ?? null;
  if (fromSnapshotSeq !== null) {
    if (fromSnapshotSeq > toSeq) throw new ReplayRefusal('usage', `cannot start from the snapshot at seq ${fromSnapshotSeq} and stop earlier, at seq ${toSeq}`);
    const meta = reader.snapshotAt(fromSnapshotSeq);
    if (!meta) throw new ReplayRefusal('snapshot_unusable', `${reader.path} has no snapshot at seq ${fromSnapshotSeq}`);
    // A state computed under other versions cannot seed this replay in any mode.
    refused.push(...versionDifferences(`snapshot at seq ${fromSnapshotSeq}`, meta.versions, plan.versions));
    const text = reader.snapshotStateText(fromSnapshotSeq);
    if (text === null || hashText(text) !== meta.state_hash) {
      throw new ReplayRefusal('snapshot_unusable', `the snapshot at seq ${fromSnapshotSeq} does not hash to its state_hash (corrupt or edited); replay from seq 1 instead`);
    }
    state = JSON.parse(text);
    const foreign = snapshotBindingProblem(state, fromSnapshotSeq, storeSubjectOf(reader));
    if (foreign !== null) throw new ReplayRefusal('snapshot_unusable', `${foreign}; replay from seq 1 instead`);
  }

  const afterSeq = fromSnapshotSeq ?? 0;
  // Event versions are checked while streaming (one pass over the store); the full
  // summary query runs only to explain a refusal, listing every difference at once.
  const refuseWithSummary = (): never => {
    const summary = checkEventVersions(reader, afterSeq, toSeq, mode, upcasters);
    if (refused.length + summary.refused.length > 0) throw new VersionMismatchError([...refused, ...summary.refused]);
    if (summary.missing.length > 0) throw new MissingUpcasterError(summary.missing);
    throw new StoreReadError('corrupt', `${reader.path}: an event version was refused while streaming but the summary finds none; run npm run verify on it`);
  };
  if (refused.length > 0) refuseWithSummary();

  const { projection } = plan;
  if (fromSnapshotSeq === null) state = projection.initial();
  let expectedSeq = afterSeq + 1;
  let migrated = 0;
  const verdicts = new Map<string, VersionVerdict>();
  const upcastGroups = new Map<string, { event_type: string; schema_version: string; expected: string; events: number; first_seq: number }>();
  // Replay owns its state (fresh, or parsed from a snapshot), so a projection that can
  // evolve in place does; otherwise events go in chunks, so applyAll copies once per chunk.
  const chunk: EventEnvelope[] = [];
  const flush = (): void => {
    state = projection.applyAll ? projection.applyAll(state, chunk) : chunk.reduce((s, e) => projection.apply(s, e), state);
    chunk.length = 0;
  };
  // Bounded by the query (or the events given): seq in (afterSeq, toSeq].
  for (const row of eventsToReplay(reader, afterSeq, toSeq, head, options.events)) {
    if (row.seq !== expectedSeq) throw new StoreReadError('corrupt', `seq ${expectedSeq} is missing from ${reader.path} (next stored is ${row.seq}); run npm run verify on it`);
    let event = row.event;
    const key = `${event.event_type}@${event.schema_version}`;
    let verdict = verdicts.get(key);
    if (verdict === undefined) {
      verdict = versionVerdict(event.event_type, event.schema_version, mode, upcasters);
      verdicts.set(key, verdict);
    }
    if (verdict === 'refuse') refuseWithSummary();
    if (verdict === 'upcast') {
      const group = upcastGroups.get(key);
      if (group) group.events += 1;
      else upcastGroups.set(key, { event_type: event.event_type, schema_version: event.schema_version, expected: eventDefinition(event.event_type)!.schemaVersion, events: 1, first_seq: row.seq });
      event = migrateEvent(event, upcasters);
      migrated += 1;
    }
    try {
      if (projection.applyInPlace) projection.applyInPlace(state, event);
      else {
        chunk.push(event);
        if (chunk.length >= REPLAY_CHUNK_EVENTS) flush();
      }
    } catch (error) {
      // A refusal is the projection's verdict; anything else means a payload it could not
      // read, which only a store that fails verification can hold.
      if (error instanceof ProjectionRefusal) throw error;
      throw new StoreReadError('corrupt', `the event at seq ${row.seq} of ${reader.path} could not be projected (${error instanceof Error ? error.message : String(error)}); run npm run verify on it`);
    }
    expectedSeq += 1;
  }
  if (chunk.length > 0) flush();
  if (expectedSeq !== toSeq + 1) throw new StoreReadError('corrupt', `seq ${expectedSeq} is missing from ${reader.path}; run npm run verify on it`);
  for (const g of upcastGroups.values()) {
    accepted.push({ where: `events of type ${g.event_type} (${g.events}, first at seq ${g.first_seq})`, field: 'schema_version', recorded: g.schema_version, expected: g.expected });
  }

  return {
    state,
    state_hash: hashText(canonicalJson(state)),
    events: toSeq - afterSeq,
    to_seq: toSeq,
    from_snapshot_seq: fromSnapshotSeq,
    mode,
    versions: plan.versions,
    accepted_differences: accepted,
    migrated_events: migrated,
  };
}
