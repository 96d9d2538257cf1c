// The restore drill (spec §12.1, DESIGN §5): recover the projected state as a restart
// after losing the projection would, and prove it equals the state rebuilt from events
// alone. The stored projection is set aside (read only to compare at the end); the
// newest snapshot whose state hashes to its state_hash and whose versions are this
// build's is the starting point, the events after it are replayed; a full replay from
// seq 1 runs as well. Snapshots are a cache: a bad one is reported and skipped, and
// with none usable the restore is the full replay.
import { hashText, type HashString } from '../schema/hash.js';
import { describeDifference, versionDifferences, type ProjectionVersions } from './projection-versions.js';
import { replayFrom, type ReplayResult } from './replay.js';
import { snapshotBindingProblem, storeSubjectOf } from './snapshot-binding.js';
import { StoreReadError, StoreReader, type SnapshotMeta } from './store-reader.js';

export interface RestoreReport {
  /** Of the restored state (snapshot + tail, or full replay when no snapshot was usable). */
  readonly state_hash: HashString;
  /** restored == full replay == stored projection (at the last event). */
  readonly match: boolean;
  /** Seq of the snapshot the restore started from; null when it replayed from seq 1. */
  readonly snapshot_used: number | null;
  /** Snapshots not used and why, and anything wrong with the stored projection. */
  readonly warnings: readonly string[];
  readonly head_seq: number;
  /** Events the restore replayed after its snapshot. */
  readonly events_replayed: number;
  readonly full_replay_state_hash: HashString;
  readonly stored_state_hash: string;
  readonly versions: ProjectionVersions;
}

/** Why a snapshot cannot seed a restore under `versions`, or null when it can. */
function snapshotProblem(reader: StoreReader, meta: SnapshotMeta, headSeq: number, versions: ProjectionVersions, storeSubject: string | null): string | null {
  if (meta.seq < 1 || meta.seq > headSeq) return `snapshot at seq ${meta.seq} lies outside the events (seq 1 to ${headSeq}): not used`;
  const differences = versionDifferences(`snapshot at seq ${meta.seq}`, meta.versions, versions);
  if (differences.length > 0) return `${differences.map(describeDifference).join('; ')}: not used`;
  const text = reader.snapshotStateText(meta.seq);
  if (text === null || hashText(text) !== meta.state_hash) return `snapshot at seq ${meta.seq}: its state does not hash to its state_hash (corrupt or edited): not used`;
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    return `snapshot at seq ${meta.seq}: its state is not JSON: not used`;
  }
  return snapshotBindingProblem(state, meta.seq, storeSubject);
}

/**
 * The newest snapshot (at or before `atOrBeforeSeq`, when given) that can seed a replay under
 * `versions`, and why each newer one — and each malformed row in range — could not.
 */
export function newestUsableSnapshot(reader: StoreReader, headSeq: number, versions: ProjectionVersions, atOrBeforeSeq: number | null): { seq: number | null; passed_over: string[] } {
  const inRange = (seq: number): boolean => atOrBeforeSeq === null || seq <= atOrBeforeSeq;
  const { found, malformed } = reader.snapshots();
  const storeSubject = storeSubjectOf(reader);
  const passedOver = malformed.filter(inRange).map((seq) => `snapshot row at seq ${seq} is malformed: not used`);
  // Newest first; bounded by the rows of the snapshots table.
  for (const meta of found) {
    if (!inRange(meta.seq)) continue;
    const problem = snapshotProblem(reader, meta, headSeq, versions, storeSubject);
    if (problem === null) return { seq: meta.seq, passed_over: passedOver };
    passedOver.push(problem);
  }
  return { seq: null, passed_over: passedOver };
}

/**
 * Every snapshot row that is not this store's or is damaged (its state does not hash to its
 * state_hash, is not JSON, or names another subject or seq: snapshot-binding.ts), by seq: for
 * verify and a resume to warn about. Versions are not compared here (a restore does that against
 * its own replay's). Bounded by the rows of the snapshots table.
 */
export function foreignOrDamagedSnapshots(reader: StoreReader): string[] {
  const { found, malformed } = reader.snapshots();
  const storeSubject = storeSubjectOf(reader);
  const problems = malformed.map((seq) => `snapshot row at seq ${seq} is malformed: not used`);
  for (const meta of found) {
    const text = reader.snapshotStateText(meta.seq);
    if (text === null || hashText(text) !== meta.state_hash) {
      problems.push(`snapshot at seq ${meta.seq}: its state does not hash to its state_hash (corrupt or edited): not used`);
      continue;
    }
    let state: unknown;
    try {
      state = JSON.parse(text);
    } catch {
      problems.push(`snapshot at seq ${meta.seq}: its state is not JSON: not used`);
      continue;
    }
    const foreign = snapshotBindingProblem(state, meta.seq, storeSubject);
    if (foreign !== null) problems.push(foreign);
  }
  return problems;
}

export function restoreDrill(dbPath: string): RestoreReport {
  const reader = StoreReader.open(dbPath);
  try {
    const headSeq = reader.headSeq();
    // First, and strictly: it fixes the versions a snapshot must have, and refuses the
    // whole drill when the stored projection was recorded under other versions.
    const full: ReplayResult = replayFrom(reader, { fromSnapshotSeq: null });
    const warnings: string[] = [];

    const newest = newestUsableSnapshot(reader, headSeq, full.versions, null);
    warnings.push(...newest.passed_over);
    const chosen = newest.seq;
    const restored = chosen === null ? full : replayFrom(reader, { fromSnapshotSeq: chosen });

    const stored = reader.storedProjection();
    const storedText = reader.storedProjectionStateText();
    if (!stored || storedText === null) throw new StoreReadError('corrupt', `${dbPath} has no projection row to compare the restore with`);
    let storedOk = true;
    if (stored.last_applied_event_seq !== headSeq) {
      warnings.push(`the stored projection covers seq ${stored.last_applied_event_seq}, not the last event (seq ${headSeq})`);
      storedOk = false;
    }
    if (hashText(storedText) !== stored.state_hash) {
      warnings.push('the stored projection state does not hash to its state_hash (edited?)');
      storedOk = false;
    }
    const match = storedOk && restored.state_hash === full.state_hash && full.state_hash === stored.state_hash;
    return {
      state_hash: restored.state_hash,
      match,
      snapshot_used: chosen,
      warnings,
      head_seq: headSeq,
      events_replayed: restored.events,
      full_replay_state_hash: full.state_hash,
      stored_state_hash: stored.state_hash,
      versions: full.versions,
    };
  } finally {
    reader.close();
  }
}
