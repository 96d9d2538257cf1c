// Replays a store from seq 1 and compares the result with what the store holds for
// that seq: the projection row at the head, or a snapshot at an earlier seq. Used by
// `npm run replay`; a stored state counts only if its text still hashes to its hash.
import { hashText } from '../schema/hash.js';
import { describeDifference, formatVersions, versionDifferences } from './projection-versions.js';
import { replayFrom, type ReplayOptions, type ReplayResult } from './replay.js';
import { StoreReader } from './store-reader.js';

export interface ReplayCheck {
  readonly replay: ReplayResult;
  readonly head_seq: number;
  /** What the replayed state was compared with; null when nothing is stored at to_seq. */
  readonly compared_with: 'projection' | 'snapshot' | null;
  readonly stored_state_hash: string | null;
  /** null: nothing stored to compare at to_seq. */
  readonly match: boolean | null;
  /** Why match is null or false, or what to keep in mind about it. */
  readonly notes: readonly string[];
}

export function checkReplay(dbPath: string, options: Omit<ReplayOptions, 'fromSnapshotSeq'> = {}): ReplayCheck {
  const reader = StoreReader.open(dbPath);
  try {
    // From seq 1 always: the point is to rebuild state from events alone.
    const replay = replayFrom(reader, { ...options, fromSnapshotSeq: null });
    const headSeq = reader.headSeq();
    const notes: string[] = [];
    const accepted = replay.accepted_differences.map(describeDifference).join('; ');
    if (replay.mode === 'migrate' && accepted !== '') {
      notes.push(`migrated to ${formatVersions(replay.versions)}; what is stored was computed under other versions (${accepted}), so it need not match`);
    }
    if (replay.mode === 'use-recorded' && accepted !== '') {
      notes.push(`replayed with the recorded ${formatVersions(replay.versions)}; this build would use other versions (${accepted})`);
    }
    const base = { replay, head_seq: headSeq, notes };

    if (replay.to_seq === headSeq) {
      const stored = reader.storedProjection();
      const text = reader.storedProjectionStateText();
      if (!stored || text === null) return { ...base, compared_with: null, stored_state_hash: null, match: null, notes: [...notes, 'the store has no projection row to compare with'] };
      if (stored.last_applied_event_seq !== headSeq) notes.push(`the stored projection covers seq ${stored.last_applied_event_seq}, not the last event (seq ${headSeq})`);
      if (hashText(text) !== stored.state_hash) notes.push('the stored projection state does not hash to its state_hash (edited?)');
      const match = stored.last_applied_event_seq === headSeq && hashText(text) === stored.state_hash && stored.state_hash === replay.state_hash;
      return { ...base, compared_with: 'projection', stored_state_hash: stored.state_hash, match };
    }

    const snapshot = reader.snapshotAt(replay.to_seq);
    const text = snapshot ? reader.snapshotStateText(replay.to_seq) : null;
    if (!snapshot || text === null) {
      return {
        ...base,
        compared_with: null,
        stored_state_hash: null,
        match: null,
        notes: [...notes, `nothing stored to compare at seq ${replay.to_seq}: no snapshot there, and the projection row is at seq ${headSeq}`],
      };
    }
    const differences = versionDifferences(`snapshot at seq ${snapshot.seq}`, snapshot.versions, replay.versions);
    if (differences.length > 0) notes.push(`the snapshot at seq ${snapshot.seq} was computed under ${formatVersions(snapshot.versions)}`);
    if (hashText(text) !== snapshot.state_hash) notes.push(`the snapshot at seq ${snapshot.seq} does not hash to its state_hash (corrupt or edited)`);
    const match = hashText(text) === snapshot.state_hash && snapshot.state_hash === replay.state_hash;
    return { ...base, compared_with: 'snapshot', stored_state_hash: snapshot.state_hash, match };
  } finally {
    reader.close();
  }
}
