// Whether a snapshot row belongs to the store it lies in (issue 20 item 5). A row holds a state,
// its hash and versions, and nothing of the chain: a row copied from another store hashes
// right, and a restore (or the audit desk's state at a seq) would start from another subject's
// state — measured with the fault harness: the restore drill started from it and the replay
// of the store's own events on top was refused by the projection. What the state itself says
// binds it: the subject projection's state carries the subject of the StoreOpened it was folded
// from and the seq it was folded to, so a state naming another subject, or another seq than
// its row, is not this store's. A projection whose state carries neither (event-counts) cannot
// be told apart this way; nor can a snapshot of the same subject from another history of it
// (a copy of the run folder that went on differently) — the drill's comparison with the full
// replay still catches a wrong state there.
import type { StoreReader } from './store-reader.js';

/** The subject of the store's StoreOpened (seq 1), or null when it has none. */
export function storeSubjectOf(reader: StoreReader): string | null {
  for (const row of reader.iterateEvents(0, 1)) {
    const payload = (JSON.parse(row.envelope) as { payload?: { subject_id?: unknown } }).payload;
    return typeof payload?.subject_id === 'string' ? payload.subject_id : null;
  }
  return null;
}

/** Why the (hash-checked, JSON) state of the snapshot at `seq` is not of this store's subject at that seq, or null. */
export function snapshotBindingProblem(state: unknown, seq: number, storeSubject: string | null): string | null {
  if (typeof state !== 'object' || state === null) return null;
  const { subject_id: subject, last_applied_event_seq: applied } = state as { subject_id?: unknown; last_applied_event_seq?: unknown };
  if (subject !== undefined && subject !== storeSubject) return `snapshot at seq ${seq} is the state of subject ${String(subject)}, not of this store's ${String(storeSubject)} (a snapshot of another store): not used`;
  if (applied !== undefined && applied !== seq) return `snapshot at seq ${seq} holds the state after seq ${String(applied)}, not after its own seq (a snapshot of another store, or another seq): not used`;
  return null;
}
