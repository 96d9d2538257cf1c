// The projected state after the event at a seq, without replaying the whole store: from the
// newest snapshot at or before that seq whose state still hashes to its hash and whose
// versions are this build's (the restore drill's rule, writer/restore.ts), plus the events
// after it. Snapshots passed over are reported with the reason, never skipped silently.
import type { HashString } from '../schema/hash.js';
import { replayFrom, type ReplayMode } from '../writer/replay.js';
import { newestUsableSnapshot } from '../writer/restore.js';
import type { StoreReader } from '../writer/store-reader.js';
import type { ProjectionVersions } from '../writer/projection-versions.js';

export interface StateAtSeq {
  readonly seq: number;
  readonly state: unknown;
  readonly state_hash: HashString;
  /** The snapshot replay started from; null when it replayed from seq 1. */
  readonly from_snapshot_seq: number | null;
  readonly events_replayed: number;
  /** Snapshots at or before `seq` that were newer than the one used, and why each was not. */
  readonly snapshots_passed_over: readonly string[];
  readonly versions: ProjectionVersions;
  readonly mode: ReplayMode;
}

/**
 * Replays on `reader` (opened read-only by the caller). Throws the replay's typed refusals. A
 * store recorded under other versions replays only in a mode chosen explicitly (as `npm run
 * replay` does): `migrate` upcasts, `use-recorded` runs the recorded projector; neither can start
 * from a snapshot of other versions, so both replay from seq 1, and the result says so.
 */
export function stateAtSeq(reader: StoreReader, seq: number, versions: ProjectionVersions, mode: ReplayMode = 'strict'): StateAtSeq {
  if (mode !== 'strict') {
    const replay = replayFrom(reader, { fromSnapshotSeq: null, toSeq: seq, migrate: mode === 'migrate', useRecorded: mode === 'use-recorded' });
    return { seq, state: replay.state, state_hash: replay.state_hash, from_snapshot_seq: null, events_replayed: replay.events, snapshots_passed_over: [`mode ${mode}: replayed from seq 1, no snapshot used`], versions: replay.versions, mode };
  }
  const newest = newestUsableSnapshot(reader, reader.headSeq(), versions, seq);
  const replay = replayFrom(reader, { fromSnapshotSeq: newest.seq, toSeq: seq });
  return {
    seq,
    state: replay.state,
    state_hash: replay.state_hash,
    from_snapshot_seq: newest.seq,
    events_replayed: replay.events,
    snapshots_passed_over: newest.passed_over,
    versions: replay.versions,
    mode,
  };
}
