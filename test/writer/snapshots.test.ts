// Snapshots (spec §12.1) and the versions recorded with projected state (§12.6): every
// K events inside the append transaction, at the head on a clean stop, and a store
// whose recorded versions differ from the writer's is not continued.
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { eventCountsProjection } from '../../projector/event-counts.js';
import type { Projection } from '../../projector/projection.js';
import { EVENT_SCHEMA_VERSION } from '../../schema/event-catalog.js';
import { hashCanonical, hashText } from '../../schema/hash.js';
import { validateDrafts, type ValidatedDraft } from '../../writer/draft-validation.js';
import { crossesSnapshotBoundary, EventStore, type EventStoreOptions } from '../../writer/event-store.js';
import type { EventDraft } from '../../writer/protocol.js';
import { WriterStartError } from '../../writer/spawn.js';
import { readProjectionRow, readSnapshots } from '../support/store-forgery.js';
import { journalDraft, messageDraft, reopenWriterFixture, startWriterFixture, tempDir, type WriterFixture } from '../support/writer-fixture.js';

const EXPECTED_VERSIONS = { projection: 'event-counts', projector_version: '1.0.0', state_machine_version: '0.0.0', event_schema_version: EVENT_SCHEMA_VERSION };

function valid(...drafts: EventDraft[]): ValidatedDraft[] {
  return drafts.flatMap((d) => validateDrafts([d], d.actor === 'runtime' ? 'runtime' : 'experiment'));
}

function journals(count: number): ValidatedDraft[] {
  return valid(...Array.from({ length: count }, (_, i) => journalDraft(`entry ${i}`)));
}

describe('the snapshot rule', () => {
  test('a batch snapshots when it reaches or passes a multiple of K, once', () => {
    expect(crossesSnapshotBoundary(0, 1, 1)).toBe(true);
    expect(crossesSnapshotBoundary(2, 3, 4)).toBe(false);
    expect(crossesSnapshotBoundary(3, 4, 4)).toBe(true);
    expect(crossesSnapshotBoundary(4, 7, 4)).toBe(false);
    expect(crossesSnapshotBoundary(3, 13, 4)).toBe(true);
  });
});

describe('snapshots in the store (in-process, real SQLite file)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function options(snapshotEvery: number, projection: Projection<unknown> = eventCountsProjection as Projection<unknown>): EventStoreOptions {
    const dir = tempDir();
    dirs.push(dir);
    return {
      path: path.join(dir, 'events.db'),
      identity: { subject_id: 'subject-001', experiment_id: 'exp-snap-001', manifest_sha256: hashCanonical({ m: 1 }) },
      projection,
      now: () => '2026-11-29T12:00:00.000Z',
      snapshotEvery,
    };
  }

  test('every K events at the batch\'s last seq, with versions and the hash of the state text', () => {
    const opts = options(3);
    const store = EventStore.create(opts); // seq 1
    store.append(journals(1), null); // 2
    store.append(journals(1), null); // 3: reaches 3
    store.append(journals(4), null); // 4..7: passes 6, snapshot at 7 only
    store.append(journals(1), null); // 8
    store.close();
    const rows = readSnapshots(opts.path);
    // No snapshot at 6: one per batch, at its last seq. The clean close adds the head (seq 8).
    expect(rows.map((r) => r.seq)).toEqual([3, 7, 8]);
    for (const row of rows) {
      expect(row).toMatchObject(EXPECTED_VERSIONS);
      expect(hashText(row.state)).toBe(row.state_hash);
      expect(JSON.parse(row.state)).toMatchObject({ total: row.seq, last_seq: row.seq });
    }
    const projection = readProjectionRow(opts.path);
    expect(projection).toMatchObject({ name: 'event-counts', version: '1.0.0', state_machine_version: '0.0.0', event_schema_version: EVENT_SCHEMA_VERSION, last_applied_event_seq: 8 });
    expect(projection.state_hash).toBe(rows[2]!.state_hash);
  });

  test('a clean close adds no second snapshot where one already is, and reopening goes on from there', () => {
    const opts = options(2);
    const store = EventStore.create(opts);
    store.append(journals(1), null); // seq 2: snapshot
    store.close();
    expect(readSnapshots(opts.path).map((r) => r.seq)).toEqual([2]);
    const reopened = EventStore.open(opts);
    reopened.append(journals(1), null); // 3
    reopened.close();
    expect(readSnapshots(opts.path).map((r) => r.seq)).toEqual([2, 3]);
  });

  test('a forged snapshot at a future seq does not block appends: the writer overwrites it with the true state', () => {
    const opts = options(2);
    const store = EventStore.create(opts);
    store.close();
    const db = new Database(opts.path);
    db.prepare("INSERT INTO snapshots VALUES (2, 'event-counts', '1.0.0', '0.0.0', ?, '{}', 'sha256:forged')").run(EVENT_SCHEMA_VERSION);
    db.close();
    const reopened = EventStore.open(opts);
    reopened.append(valid(messageDraft()), null); // seq 2 reaches K
    reopened.close();
    const at2 = readSnapshots(opts.path).find((r) => r.seq === 2)!;
    expect(JSON.parse(at2.state)).toMatchObject({ total: 2, last_seq: 2 });
    expect(hashText(at2.state)).toBe(at2.state_hash);
  });

  test('refuses to continue a store recorded under another state machine or event schema version', () => {
    const opts = options(1000);
    EventStore.create(opts).close();
    const otherMachine = { ...eventCountsProjection, stateMachineVersion: '1.0.0' } as Projection<unknown>;
    expect(() => EventStore.open({ ...opts, projection: otherMachine })).toThrow(/state_machine_version recorded 0\.0\.0, expected 1\.0\.0/);
    const db = new Database(opts.path);
    db.prepare("UPDATE projection SET event_schema_version = '0.9.0'").run();
    db.close();
    expect(() => EventStore.open(opts)).toThrow(expect.objectContaining({ code: 'projection_mismatch', message: expect.stringContaining(`event_schema_version recorded 0.9.0, expected ${EVENT_SCHEMA_VERSION}`) }) as unknown as Error);
  });

  test('refuses a snapshot interval that is not a whole number of events >= 1', () => {
    expect(() => EventStore.create(options(0))).toThrow(/snapshotEvery/);
  });
});

describe('snapshots by the real writer process', () => {
  let f: WriterFixture;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir();
    f = await startWriterFixture(dir, 4);
    const experiment = await f.connect('experiment');
    const runtime = await f.connect('runtime');
    // seq 1 is StoreOpened; 2..5 single events, then a batch of 5 (6..10), then 11.
    for (let i = 0; i < 4; i++) await experiment.append([messageDraft()]);
    await runtime.append(Array.from({ length: 5 }, (_, i) => journalDraft(`batch ${i}`)));
    await runtime.append([journalDraft('last')]);
    await f.stop();
  });

  afterAll(async () => {
    await f?.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  test('every K=4 events and at the head on a clean stop, with the versions of the writer\'s projection', () => {
    const rows = readSnapshots(f.dbPath);
    // 4 (single append), 10 (the batch 6..10 passes 8), 11 (clean stop).
    expect(rows.map((r) => r.seq)).toEqual([4, 10, 11]);
    for (const row of rows) {
      expect(row).toMatchObject(EXPECTED_VERSIONS);
      expect(hashText(row.state)).toBe(row.state_hash);
      expect(JSON.parse(row.state)).toMatchObject({ total: row.seq, last_seq: row.seq });
    }
    expect(readProjectionRow(f.dbPath)).toMatchObject({ ...{ name: 'event-counts', version: '1.0.0', state_machine_version: '0.0.0', event_schema_version: EVENT_SCHEMA_VERSION }, last_applied_event_seq: 11, state_hash: rows[2]!.state_hash });
  });

  test('a writer refuses to open the store once its recorded state machine version differs', async () => {
    const db = new Database(f.dbPath);
    db.prepare("UPDATE projection SET state_machine_version = '9.9.9'").run();
    db.close();
    try {
      const outcome = await reopenWriterFixture(dir, f).then(
        async (g) => {
          await g.stop();
          return null;
        },
        (error: unknown) => error,
      );
      expect(outcome).toBeInstanceOf(WriterStartError);
      expect(outcome).toMatchObject({ code: 'projection_mismatch', message: expect.stringMatching(/state_machine_version recorded 9\.9\.9, expected 0\.0\.0/) });
    } finally {
      const fix = new Database(f.dbPath);
      fix.prepare("UPDATE projection SET state_machine_version = '0.0.0'").run();
      fix.close();
    }
  });
});
