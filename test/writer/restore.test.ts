// The restore drill (spec §12.1) on forged copies of a store written by the real
// writer: snapshots are a cache, so a corrupt one is reported and skipped, losing all
// of them changes nothing, and restored == full replay == stored projection is what
// the drill proves — or, for a consistently forged snapshot, disproves.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { canonicalJson } from '../../schema/canonical-json.js';
import { hashText } from '../../schema/hash.js';
import { VersionMismatchError } from '../../writer/replay-errors.js';
import { restoreDrill } from '../../writer/restore.js';
import { forgeableSealedRun, readSnapshots, storeOf, tamper, type ForgeableRun, type RunCopies } from '../support/store-forgery.js';
import type { WriterFixture } from '../support/writer-fixture.js';

let run: ForgeableRun | undefined;
let sealed: WriterFixture;
let copies: RunCopies;
let headSeq: number;
let storedHash: string;

beforeAll(async () => {
  run = await forgeableSealedRun();
  ({ sealed, copies, headSeq, storedHash } = run);
  expect(readSnapshots(sealed.dbPath).map((s) => s.seq)).toEqual([4, 8, 12, 16, headSeq]);
});

afterAll(() => {
  run?.cleanup();
});

/** Edits a snapshot's state and keeps its stored hash, as a careless tamperer (or a torn write) would leave it. */
function corruptSnapshot(dir: string, seq: number): void {
  tamper(dir, (db) => db.prepare(`UPDATE snapshots SET state = replace(state, '"total":${seq}', '"total":${seq + 1000}') WHERE seq = ?`).run(seq));
}

test('an untouched store restores from its newest snapshot, equal to the full replay and the stored projection', () => {
  expect(restoreDrill(sealed.dbPath)).toMatchObject({ state_hash: storedHash, match: true, snapshot_used: headSeq, warnings: [], events_replayed: 0, full_replay_state_hash: storedHash, stored_state_hash: storedHash });
});

test('a tampered snapshot (state edited, hash kept) is reported, not used, and the restored state_hash is unchanged', () => {
  const dir = copies.copy();
  corruptSnapshot(dir, headSeq);
  corruptSnapshot(dir, 16);
  const report = restoreDrill(storeOf(dir));
  expect(report.warnings).toEqual([
    `snapshot at seq ${headSeq}: its state does not hash to its state_hash (corrupt or edited): not used`,
    'snapshot at seq 16: its state does not hash to its state_hash (corrupt or edited): not used',
  ]);
  expect(report).toMatchObject({ snapshot_used: 12, events_replayed: headSeq - 12, state_hash: storedHash, match: true });
});

test('deleting every snapshot never changes the restored state_hash: the restore is then the full replay', () => {
  const dir = copies.copy();
  tamper(dir, (db) => db.prepare('DELETE FROM snapshots').run());
  expect(restoreDrill(storeOf(dir))).toMatchObject({ snapshot_used: null, events_replayed: headSeq, state_hash: storedHash, match: true, warnings: [] });
});

test('a snapshot recorded under other versions, or beyond the last event, is reported and skipped', () => {
  const dir = copies.copy();
  tamper(dir, (db) => {
    db.prepare("UPDATE snapshots SET state_machine_version = '0.0.1' WHERE seq = ?").run(headSeq);
    const at16 = db.prepare('SELECT * FROM snapshots WHERE seq = 16').get() as Record<string, unknown>;
    db.prepare('INSERT INTO snapshots VALUES (?, ?, ?, ?, ?, ?, ?)').run(headSeq + 5, at16.projection, at16.projector_version, at16.state_machine_version, at16.event_schema_version, at16.state, at16.state_hash);
  });
  const report = restoreDrill(storeOf(dir));
  expect(report.warnings).toEqual([
    `snapshot at seq ${headSeq + 5} lies outside the events (seq 1 to ${headSeq}): not used`,
    `snapshot at seq ${headSeq}: state_machine_version recorded 0.0.1, expected 0.0.0: not used`,
  ]);
  expect(report).toMatchObject({ snapshot_used: 16, state_hash: storedHash, match: true });
});

test('a consistently forged snapshot (state and hash rewritten) is used, and the drill fails on the comparison', () => {
  const dir = copies.copy();
  tamper(dir, (db) => {
    const row = db.prepare('SELECT state FROM snapshots WHERE seq = ?').get(headSeq) as { state: string };
    const forged = canonicalJson({ ...(JSON.parse(row.state) as object), total: 1 });
    db.prepare('UPDATE snapshots SET state = ?, state_hash = ? WHERE seq = ?').run(forged, hashText(forged), headSeq);
  });
  const report = restoreDrill(storeOf(dir));
  expect(report.snapshot_used).toBe(headSeq);
  expect(report.match).toBe(false);
  expect(report.state_hash).not.toBe(storedHash);
  expect(report.full_replay_state_hash).toBe(storedHash);
});

test('an edited stored projection fails the drill, with a warning saying what is wrong with it', () => {
  const dir = copies.copy();
  tamper(dir, (db) => db.prepare(`UPDATE projection SET state = replace(state, '"total":${headSeq}', '"total":1')`).run());
  const report = restoreDrill(storeOf(dir));
  expect(report).toMatchObject({ match: false, state_hash: storedHash, full_replay_state_hash: storedHash });
  expect(report.warnings).toEqual(['the stored projection state does not hash to its state_hash (edited?)']);
});

test('a stored projection recorded under other versions refuses the drill instead of mixing versions', () => {
  const dir = copies.copy();
  tamper(dir, (db) => db.prepare("UPDATE projection SET version = '0.9.0'").run());
  expect(() => restoreDrill(storeOf(dir))).toThrow(VersionMismatchError);
});
