import { EVENT_SCHEMA_VERSION } from '../../schema/event-catalog.js';
// Replay (spec §10.4, §12.1, §12.6) on a store written by the real writer process:
// state rebuilt from events alone equals the stored projection and the snapshots, and
// a replay under other versions is refused unless told to migrate or to use the
// recorded projector — with forged copies of the store for each case.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventCountsProjection } from '../../projector/event-counts.js';
import { subjectProjection } from '../../projector/subject-projection.js';
import type { Projection } from '../../projector/projection.js';
import { BUILT_IN_UPCASTERS, upcasterKey, type Upcaster } from '../../schema/upcasters.js';
import type { ProjectionCatalog } from '../../writer/projection-catalog.js';
import { replayStore } from '../../writer/replay.js';
import { MissingUpcasterError, RecordedVersionUnavailableError, ReplayRefusal, VersionMismatchError } from '../../writer/replay-errors.js';
import { StoreReadError } from '../../writer/store-reader.js';
import { editEnvelope, readProjectionRow, readSnapshots, RunCopies, seqsOfType, storeOf, tamper } from '../support/store-forgery.js';
import { startWriterFixture, tempDir, writeSealedRun, type WriterFixture } from '../support/writer-fixture.js';

const SNAPSHOT_EVERY = 4;
let sealed: WriterFixture;
let copies: RunCopies;
let headSeq: number;
/** Seqs of WorldEvent.MessageReceived in the sealed run. */
let messageSeqs: number[];

beforeAll(async () => {
  sealed = await writeSealedRun(tempDir(), 5, SNAPSHOT_EVERY);
  copies = new RunCopies(sealed.dir);
  headSeq = readProjectionRow(sealed.dbPath).last_applied_event_seq;
  messageSeqs = seqsOfType(sealed.dbPath, 'WorldEvent.MessageReceived');
  // The forgeries below rewrite messages at seqs 6 and 10.
  expect(messageSeqs).toEqual([2, 4, 6, 8, 10]);
});

afterAll(() => {
  copies?.removeAll();
  if (sealed) rmSync(sealed.dir, { recursive: true, force: true });
});

/** Forges the stored projection row's versions, as a store recorded by another build would read. */
function withRowVersions(set: string): string {
  const dir = copies.copy();
  tamper(dir, (db) => db.prepare(`UPDATE projection SET ${set}`).run());
  return dir;
}

/**
 * Rewrites some MessageReceived events as a 0.9.0 schema would have stored them
 * ({from, subject, text}); hashes are left stale: replay refuses before it would matter.
 */
function withOldMessages(seqs: readonly number[]): string {
  const dir = copies.copy();
  tamper(dir, (db) => {
    for (const seq of seqs) {
      editEnvelope(db, seq, (env) => {
        const { from, subject, body } = env.payload as { from: string; subject: string; body: string };
        return { ...env, schema_version: '0.9.0', payload: { from, subject, text: body } };
      });
    }
  });
  return dir;
}

const upcastMessage090: Upcaster = (event) => {
  const { from, subject, text } = event.payload as { from: string; subject: string; text: string };
  return { schema_version: '1.0.0', payload: { from, subject, body: text, in_reply_to: null } };
};

describe('replay matches what the writer stored', () => {
  test('from seq 1 to the head it equals the stored projection, state and hash', () => {
    const stored = readProjectionRow(sealed.dbPath);
    const result = replayStore(sealed.dbPath);
    expect(result).toMatchObject({ state_hash: stored.state_hash, events: headSeq, to_seq: headSeq, mode: 'strict', from_snapshot_seq: null, accepted_differences: [], migrated_events: 0 });
    expect(result.state).toEqual(JSON.parse(stored.state));
    expect(result.versions).toEqual({ projection: 'event-counts', projector_version: '1.0.0', state_machine_version: '0.0.0', event_schema_version: EVENT_SCHEMA_VERSION });
  });

  test('--to-seq gives the state at that seq: equal to the snapshot there and to a replay started from an earlier snapshot', () => {
    const snapshots = readSnapshots(sealed.dbPath);
    expect(snapshots.map((s) => s.seq)).toEqual([4, 8, 12, 16, headSeq]);
    for (const snapshot of snapshots) {
      const result = replayStore(sealed.dbPath, { toSeq: snapshot.seq });
      expect(result.state_hash).toBe(snapshot.state_hash);
      expect(result.state).toMatchObject({ total: snapshot.seq, last_seq: snapshot.seq });
    }
    const fresh = replayStore(sealed.dbPath, { toSeq: 10 });
    expect(fresh.state).toMatchObject({ total: 10, last_seq: 10 });
    const fromSnapshot = replayStore(sealed.dbPath, { toSeq: 10, fromSnapshotSeq: 4 });
    expect(fromSnapshot).toMatchObject({ state_hash: fresh.state_hash, events: 6, from_snapshot_seq: 4 });
    expect(replayStore(sealed.dbPath, { toSeq: 3 }).state).toMatchObject({ total: 3, last_seq: 3 });
  });

  test('refuses a seq outside the store, an unknown snapshot and a snapshot past to-seq', () => {
    expect(() => replayStore(sealed.dbPath, { toSeq: headSeq + 1 })).toThrow(expect.objectContaining({ code: 'usage' }) as unknown as Error);
    expect(() => replayStore(sealed.dbPath, { toSeq: 0 })).toThrow(ReplayRefusal);
    expect(() => replayStore(sealed.dbPath, { fromSnapshotSeq: 5 })).toThrow(/no snapshot at seq 5/);
    expect(() => replayStore(sealed.dbPath, { fromSnapshotSeq: 8, toSeq: 6 })).toThrow(/stop earlier/);
    expect(() => replayStore(sealed.dbPath, { migrate: true, useRecorded: true })).toThrow(expect.objectContaining({ code: 'usage' }) as unknown as Error);
  });

  test('refuses to read a store whose writer still runs, saying so', async () => {
    const live = await startWriterFixture(tempDir());
    try {
      expect(() => replayStore(live.dbPath)).toThrow(expect.objectContaining({ code: 'locked', message: expect.stringMatching(/a writer is still running/) }) as unknown as Error);
    } finally {
      await live.cleanup();
    }
  });

  test('refuses a snapshot whose state does not hash to its state_hash as a starting point', () => {
    const dir = copies.copy();
    tamper(dir, (db) => db.prepare(`UPDATE snapshots SET state = replace(state, '"total":8', '"total":80') WHERE seq = 8`).run());
    expect(() => replayStore(storeOf(dir), { fromSnapshotSeq: 8 })).toThrow(expect.objectContaining({ code: 'snapshot_unusable' }) as unknown as Error);
  });
});

describe('versioned replay: recorded versions differ from this build', () => {
  test('a forged projector_version and state_machine_version are refused, each difference listed, before anything is applied', () => {
    const dir = withRowVersions("version = '0.9.0', state_machine_version = '0.0.1'");
    let caught: unknown;
    try {
      replayStore(storeOf(dir));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(VersionMismatchError);
    expect((caught as VersionMismatchError).differences).toEqual([
      { where: 'projection row', field: 'projector_version', recorded: '0.9.0', expected: '1.0.0' },
      { where: 'projection row', field: 'state_machine_version', recorded: '0.0.1', expected: '0.0.0' },
    ]);
    expect((caught as Error).message).toMatch(/--migrate.*--use-recorded/s);
  });

  test('a snapshot recorded under other versions is refused as a starting point', () => {
    const dir = copies.copy();
    tamper(dir, (db) => db.prepare("UPDATE snapshots SET projector_version = '0.9.0' WHERE seq = 8").run());
    expect(() => replayStore(storeOf(dir), { fromSnapshotSeq: 8 })).toThrow(VersionMismatchError);
    expect(() => replayStore(storeOf(dir), { fromSnapshotSeq: 8 })).toThrow(/snapshot at seq 8: projector_version recorded 0\.9\.0, expected 1\.0\.0/);
  });

  test('an unknown projection name is refused in every mode', () => {
    const dir = withRowVersions("name = 'subject-v0'");
    expect(() => replayStore(storeOf(dir))).toThrow(/projection row: projection recorded subject-v0, this build has none/);
    expect(() => replayStore(storeOf(dir), { migrate: true })).toThrow(VersionMismatchError);
    expect(() => replayStore(storeOf(dir), { useRecorded: true })).toThrow(/this build lacks projector subject-v0@1\.0\.0,.*no projection named subject-v0/);
  });

  test('events recorded under an older schema_version are refused, listed by type with their first seq', () => {
    const dir = withOldMessages([6, 10]);
    expect(() => replayStore(storeOf(dir))).toThrow(VersionMismatchError);
    try {
      replayStore(storeOf(dir));
    } catch (error) {
      expect((error as VersionMismatchError).differences).toEqual([
        { where: 'events of type WorldEvent.MessageReceived (2, first at seq 6)', field: 'schema_version', recorded: '0.9.0', expected: '1.0.0' },
      ]);
    }
    // Only the events a replay applies are checked: up to seq 5 all are current.
    expect(replayStore(storeOf(dir), { toSeq: 5 }).state).toMatchObject({ total: 5 });
  });

  test('--migrate with a registered upcaster replays the old events, and says how many it upcast', () => {
    const dir = withOldMessages([6, 10]);
    const upcasters = new Map([[upcasterKey('WorldEvent.MessageReceived', '0.9.0'), upcastMessage090]]);
    const result = replayStore(storeOf(dir), { migrate: true, upcasters });
    expect(result).toMatchObject({ mode: 'migrate', migrated_events: 2, state_hash: readProjectionRow(sealed.dbPath).state_hash });
    expect(result.accepted_differences).toEqual([{ where: 'events of type WorldEvent.MessageReceived (2, first at seq 6)', field: 'schema_version', recorded: '0.9.0', expected: '1.0.0' }]);
  });

  test('--migrate without an upcaster for a recorded version is refused, naming the missing one', () => {
    const dir = withOldMessages(messageSeqs);
    // The built-in upcasters lift model-call events only (issue 15): none for a WorldEvent.
    expect(BUILT_IN_UPCASTERS.has(upcasterKey('WorldEvent.MessageReceived', '0.9.0'))).toBe(false);
    let caught: unknown;
    try {
      replayStore(storeOf(dir), { migrate: true });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(MissingUpcasterError);
    expect((caught as MissingUpcasterError).missing).toEqual([{ key: 'WorldEvent.MessageReceived@0.9.0', first_seq: 2, events: 5 }]);
    expect((caught as Error).message).toMatch(/no upcaster registered for WorldEvent\.MessageReceived@0\.9\.0/);
  });

  test('--migrate refuses an upcaster whose output does not match the catalogue schema, or that makes no progress', () => {
    const dir = withOldMessages([6]);
    const broken = new Map<string, Upcaster>([[upcasterKey('WorldEvent.MessageReceived', '0.9.0'), (e) => ({ schema_version: '1.0.0', payload: { ...e.payload } })]]);
    expect(() => replayStore(storeOf(dir), { migrate: true, upcasters: broken })).toThrow(/seq 6: the upcast WorldEvent\.MessageReceived payload does not match schema 1\.0\.0/);
    const stuck = new Map<string, Upcaster>([[upcasterKey('WorldEvent.MessageReceived', '0.9.0'), (e) => ({ schema_version: '0.9.0', payload: e.payload })]]);
    expect(() => replayStore(storeOf(dir), { migrate: true, upcasters: stuck })).toThrow(/returned the version it started from/);
  });

  test('--migrate over a forged projector_version builds a new projection under this build and lists what it superseded', () => {
    const dir = withRowVersions("version = '0.9.0'");
    const result = replayStore(storeOf(dir), { migrate: true });
    expect(result.versions.projector_version).toBe('1.0.0');
    expect(result.accepted_differences).toEqual([{ where: 'projection row', field: 'projector_version', recorded: '0.9.0', expected: '1.0.0' }]);
  });

  test('--use-recorded with a projector version this build lacks is refused, saying exactly that', () => {
    const dir = withRowVersions("version = '0.9.0'");
    let caught: unknown;
    try {
      replayStore(storeOf(dir), { useRecorded: true });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RecordedVersionUnavailableError);
    expect((caught as Error).message).toMatch(/^this build lacks projector event-counts@0\.9\.0, which recorded this store \(it carries event-counts@1\.0\.0\)/);
  });

  test('--use-recorded runs the recorded projector when the build carries it, on the events as recorded', () => {
    const dir = withRowVersions("version = '0.9.0', event_schema_version = '0.9.0'");
    const old = { ...eventCountsProjection, version: '0.9.0' } as Projection<unknown>;
    const withOld: ProjectionCatalog = {
      current: (name) => (name === 'event-counts' ? (eventCountsProjection as Projection<unknown>) : undefined),
      recorded: (name, version) => (name === 'event-counts' && version === '0.9.0' ? old : undefined),
    };
    const result = replayStore(storeOf(dir), { useRecorded: true, projections: withOld });
    expect(result.mode).toBe('use-recorded');
    expect(result.versions).toEqual({ projection: 'event-counts', projector_version: '0.9.0', state_machine_version: '0.0.0', event_schema_version: '0.9.0' });
    expect(result.state_hash).toBe(readProjectionRow(sealed.dbPath).state_hash);
    expect(result.accepted_differences.map((d) => d.field)).toEqual(['projector_version', 'event_schema_version']);
    // The recorded projector's state machine must be the recorded one too.
    const otherMachine: ProjectionCatalog = { ...withOld, recorded: () => ({ ...old, stateMachineVersion: '0.0.9' }) };
    expect(() => replayStore(storeOf(dir), { useRecorded: true, projections: otherMachine })).toThrow(/state_machine_version recorded 0\.0\.0, expected 0\.0\.9/);
  });

  test('a corrupt envelope stops the replay as a broken store, not as a version question', () => {
    const dir = copies.copy();
    tamper(dir, (db) => db.prepare("UPDATE events SET envelope = '{not json' WHERE seq = 7").run());
    expect(() => replayStore(storeOf(dir))).toThrow(StoreReadError);
    expect(() => replayStore(storeOf(dir))).toThrow(/seq 7 .* is not JSON/);
  });
});

describe('a payload the projection cannot read', () => {
  test('ends the replay with a typed corrupt-store error naming the seq, not a crash', async () => {
    const dir = tempDir();
    try {
      const f = await startWriterFixture(dir);
      const experiment = await f.connect('experiment');
      await experiment.append([
        {
          event_type: 'WorldEvent.InformationPublished',
          schema_version: '1.0.0',
          occurred_at: '2026-07-20T08:00:00.000Z',
          actor: 'experiment',
          causation_id: null,
          correlation_id: null,
          idempotency_key: null,
          payload: { source: 'a later source', body: 'nothing to refute', refutes_event_ids: [] },
        },
      ]);
      await f.stop();
      // Relabel the store as a Subject store, then drop a field the Subject projection reads.
      tamper(dir, (db) => {
        db.prepare("UPDATE projection SET name = 'subject', version = ?, state_machine_version = ?").run(subjectProjection.version, subjectProjection.stateMachineVersion);
        const row = db.prepare('SELECT envelope FROM events WHERE seq = 2').get() as { envelope: string };
        const env = JSON.parse(row.envelope) as { payload: Record<string, unknown> };
        delete env.payload.refutes_event_ids;
        db.prepare('UPDATE events SET envelope = ? WHERE seq = 2').run(JSON.stringify(env));
      });
      let caught: unknown;
      try {
        replayStore(storeOf(dir));
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(StoreReadError);
      expect(caught).toMatchObject({ code: 'corrupt', message: expect.stringMatching(/the event at seq 2 of .* could not be projected/) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
