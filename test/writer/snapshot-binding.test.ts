// A snapshot row of another store (issue 20 item 5, writer/snapshot-binding.ts): it hashes right
// (state and state_hash travel together), so before the fix a restore started from it — another
// subject's state — and the drill disagreed with the full replay (in a real run the projection
// then refused the store's own next event). Forged here: the row copied from a store of another
// subject, and a row of the store's own moved to another seq; each must be skipped with a
// warning, the restore equal to the full replay, and listed for verify and a resume.
import Database from 'better-sqlite3';
import { copyFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import type { Projection } from '../../projector/projection.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import { canonicalJson } from '../../schema/canonical-json.js';
import { hashCanonical, hashText } from '../../schema/hash.js';
import { draftOf } from '../../writer/event-draft.js';
import { EventStore } from '../../writer/event-store.js';
import type { ValidatedDraft } from '../../writer/draft-validation.js';
import { foreignOrDamagedSnapshots, restoreDrill } from '../../writer/restore.js';
import { StoreReader } from '../../writer/store-reader.js';
import { tempDir } from '../support/writer-fixture.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The writer's own AppendRejected: an event the subject projection folds without a client. */
function rejected(n: number): ValidatedDraft {
  const payload = { reason: 'bad_message' as const, message: `event ${n}`, role: null, method: null, request_id: null, request_sha256: hashText(String(n)), request_bytes: 0, connection_id: 1 };
  const draft = draftOf('SystemEvent.AppendRejected', payload, { occurred_at: '2026-11-29T12:00:00.000Z', actor: 'experiment', idempotency_key: null });
  return { ...draft, payloadText: canonicalJson(draft.payload) };
}

/** An unsealed store of `subject` with 40 events after StoreOpened, a snapshot after every batch of 10 (seqs 11, 21, 31, 41). */
function storeOf(subject: string): string {
  const dir = tempDir();
  dirs.push(dir);
  const file = path.join(dir, 'events.db');
  const store = EventStore.create({
    path: file,
    identity: { subject_id: subject, experiment_id: `exp-${subject}`, manifest_sha256: hashCanonical({ subject }) },
    projection: subjectProjection as unknown as Projection<unknown>,
    now: () => '2026-11-29T12:00:00.000Z',
    snapshotEvery: 10,
  });
  for (let n = 0; n < 40; n += 10) store.append(Array.from({ length: 10 }, (_, i) => rejected(n + i)), null);
  store.close();
  return file;
}

function copyRow(from: string, fromSeq: number, to: string, toSeq: number): void {
  const source = new Database(from, { readonly: true });
  const row = source.prepare('SELECT * FROM snapshots WHERE seq = ?').get(fromSeq) as Record<string, unknown>;
  source.close();
  const target = new Database(to);
  target.prepare('INSERT OR REPLACE INTO snapshots (seq, projection, projector_version, state_machine_version, event_schema_version, state, state_hash) VALUES (?, ?, ?, ?, ?, ?, ?)').run(toSeq, row.projection, row.projector_version, row.state_machine_version, row.event_schema_version, row.state, row.state_hash);
  target.close();
}

function listed(file: string): string[] {
  const reader = StoreReader.open(file);
  try {
    return foreignOrDamagedSnapshots(reader);
  } finally {
    reader.close();
  }
}

test('an untouched store restores from its newest snapshot and lists none', () => {
  const ours = storeOf('subject-A');
  expect(restoreDrill(ours)).toMatchObject({ snapshot_used: 41, match: true, warnings: [] });
  expect(listed(ours)).toEqual([]);
});

test("another store's snapshot row at the newest seq is skipped with a warning naming its subject; the restore starts from the store's own", () => {
  const ours = storeOf('subject-A');
  const theirs = storeOf('subject-B');
  copyRow(theirs, 41, ours, 41);
  const warning = 'snapshot at seq 41 is the state of subject subject-B, not of this store\'s subject-A (a snapshot of another store): not used';
  expect(restoreDrill(ours)).toMatchObject({ snapshot_used: 31, match: true, warnings: [warning] });
  expect(listed(ours)).toEqual([warning]);
});

test("the store's own snapshot moved to another seq is skipped: its state is after seq 21, not 41", () => {
  const ours = storeOf('subject-A');
  const moved = path.join(path.dirname(ours), 'moved.db');
  copyFileSync(ours, moved);
  copyRow(moved, 21, ours, 41);
  const warning = 'snapshot at seq 41 holds the state after seq 21, not after its own seq (a snapshot of another store, or another seq): not used';
  expect(restoreDrill(ours)).toMatchObject({ snapshot_used: 31, match: true, warnings: [warning] });
  expect(listed(ours)).toEqual([warning]);
});
