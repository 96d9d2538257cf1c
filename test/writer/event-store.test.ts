// The store in-process on a real SQLite file: the transaction boundary of spec §12.2.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { eventCountsProjection, type EventCounts } from '../../projector/event-counts.js';
import { ProjectionRefusal, type Projection } from '../../projector/projection.js';
import { hashCanonical } from '../../schema/hash.js';
import { EventStore, StoreOpenError, type EventStoreOptions } from '../../writer/event-store.js';
import { validateDrafts, type ValidatedDraft } from '../../writer/draft-validation.js';
import { WriterError, type EventDraft } from '../../writer/protocol.js';
import { openStoreReadOnly } from '../../writer/store-reader.js';
import { damageMiddleOfStore } from '../support/damaged-store-file.js';
import { journalDraft, messageDraft, tempDir } from '../support/writer-fixture.js';

const dirs: string[] = [];

/** Drafts as the socket server hands them to the store: validated for the role that owns their actor. */
function valid(...drafts: EventDraft[]): ValidatedDraft[] {
  return drafts.flatMap((d) => validateDrafts([d], d.actor === 'runtime' ? 'runtime' : 'experiment'));
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function options(projection: Projection<unknown> = eventCountsProjection as Projection<unknown>): EventStoreOptions {
  const dir = tempDir();
  dirs.push(dir);
  return {
    path: path.join(dir, 'events.db'),
    identity: { subject_id: 'subject-001', experiment_id: 'exp-store-001', manifest_sha256: hashCanonical({ m: 1 }) },
    projection,
    now: () => '2026-11-29T12:00:00.000Z',
    snapshotEvery: 1_000,
  };
}

/** Refuses the third journal entry it sees; everything else is counted. */
const pickyProjection: Projection<unknown> = {
  name: 'event-counts',
  version: '1.0.0',
  stateMachineVersion: '0.0.0',
  initial: () => eventCountsProjection.initial(),
  apply(state, event) {
    if (event.event_type === 'MemoryEvent.JournalEntryWritten' && (event.payload as { text: string }).text === 'refuse me') {
      throw new ProjectionRefusal(event.seq, event.event_type, 'proposal_not_allowed', 'journal entry not allowed here');
    }
    if ((event.payload as { text?: string }).text === 'crash me') throw new TypeError('projection bug');
    return eventCountsProjection.apply(state as EventCounts, event);
  },
};

function storedRows(file: string): { seq: number; projectionSeq: number; state: EventCounts } {
  const db = new Database(file, { readonly: true });
  const seq = (db.prepare('SELECT max(seq) AS seq FROM events').get() as { seq: number }).seq;
  const row = db.prepare('SELECT state, last_applied_event_seq FROM projection').get() as { state: string; last_applied_event_seq: number };
  db.close();
  return { seq, projectionSeq: row.last_applied_event_seq, state: JSON.parse(row.state) as EventCounts };
}

describe('events and their projection commit together', () => {
  test('the projection is stored with last_applied_event_seq in the append transaction', () => {
    const opts = options();
    const store = EventStore.create(opts);
    store.append(valid(messageDraft(), journalDraft('a')), null);
    store.close();
    const rows = storedRows(opts.path);
    expect(rows).toEqual({ seq: 3, projectionSeq: 3, state: { total: 3, last_seq: 3, by_type: { 'SystemEvent.StoreOpened': 1, 'WorldEvent.MessageReceived': 1, 'MemoryEvent.JournalEntryWritten': 1 } } });
  });

  test('a projection refusal rolls the whole batch back: no event, no state change', () => {
    const opts = options(pickyProjection);
    const store = EventStore.create(opts);
    store.append(valid(journalDraft('fine')), null);
    const before = store.head();
    expect(() => store.append(valid(journalDraft('ok 1'), journalDraft('refuse me'), journalDraft('ok 2')), null)).toThrow(WriterError);
    try {
      store.append(valid(journalDraft('refuse me')), null);
    } catch (error) {
      expect(error).toMatchObject({ code: 'projection_rejected', details: { seq: 3 } });
    }
    expect(store.head()).toEqual(before);
    const after = store.append(valid(journalDraft('ok 3')), null);
    expect(after.events[0]!.seq).toBe(3);
    store.close();
    expect(storedRows(opts.path)).toMatchObject({ seq: 3, projectionSeq: 3, state: { total: 3 } });
  });

  test('a projection that crashes also rolls back, and the store stays usable', () => {
    const opts = options(pickyProjection);
    const store = EventStore.create(opts);
    expect(() => store.append(valid(journalDraft('a'), journalDraft('crash me')), null)).toThrow(TypeError);
    expect(store.head().seq).toBe(1);
    store.append(valid(journalDraft('b')), null);
    store.close();
    expect(storedRows(opts.path)).toMatchObject({ seq: 2, projectionSeq: 2 });
  });
});

describe('opening a store', () => {
  test('never overwrites, never opens what is missing, never opens another run', () => {
    const opts = options();
    EventStore.create(opts).close();
    expect(() => EventStore.create(opts)).toThrow(expect.objectContaining({ code: 'store_exists' }) as unknown as Error);
    expect(() => EventStore.open({ ...opts, path: `${opts.path}.missing` })).toThrow(StoreOpenError);
    // Refused as another run's store: not a byte of it changed, nothing left beside it (no switch to WAL before the check).
    const bytes = readFileSync(opts.path);
    expect(() => EventStore.open({ ...opts, identity: { ...opts.identity, experiment_id: 'exp-other' } })).toThrow(/belongs to experiment exp-store-001/);
    expect(readFileSync(opts.path).equals(bytes)).toBe(true);
    expect(readdirSync(path.dirname(opts.path))).toEqual([path.basename(opts.path)]);
    const reopened = EventStore.open(opts);
    expect(reopened.head().seq).toBe(1);
    reopened.close();
  });

  test('refuses a projection of another version instead of mixing them', () => {
    const opts = options();
    EventStore.create(opts).close();
    const v2 = { ...eventCountsProjection, version: '2.0.0' } as Projection<unknown>;
    expect(() => EventStore.open({ ...opts, projection: v2 })).toThrow(/event-counts@1.0.0.*event-counts@2.0.0/);
  });

  test('refuses a file that is not a store', () => {
    const opts = options();
    const db = new Database(opts.path);
    db.exec('CREATE TABLE t (x)');
    db.close();
    expect(() => EventStore.open(opts)).toThrow(/is not an event store/);
  });

  test('sets WAL and synchronous=FULL, holds the file exclusively, and leaves it in rollback mode at a clean close', () => {
    const opts = options();
    const store = EventStore.create(opts);
    // synchronous 2 = FULL: better-sqlite3 would otherwise leave a WAL connection at NORMAL.
    expect(store.connectionSettings()).toEqual({ journal_mode: 'wal', synchronous: 2, locking_mode: 'exclusive', recursive_triggers: 1 });
    const other = new Database(opts.path, { timeout: 100 });
    expect(() => other.prepare('SELECT count(*) FROM events').get()).toThrow(/locked|busy/i);
    other.close();
    store.close();
    // A read-only open of a WAL-mode file would leave a -wal and a -shm beside it; of this one, nothing.
    const db = openStoreReadOnly(opts.path);
    expect(db.pragma('journal_mode', { simple: true })).toBe('delete');
    db.close();
    expect(readdirSync(path.dirname(opts.path))).toEqual(['events.db']);
    // And the next writer is in WAL again.
    const reopened = EventStore.open(opts);
    expect(reopened.connectionSettings()).toMatchObject({ journal_mode: 'wal', locking_mode: 'exclusive' });
    reopened.close();
  });
});

describe('a file that is not an intact store is refused before a byte is written', () => {
  /** The folder's names and each file's bytes. */
  const folderState = (dir: string): Record<string, string> =>
    Object.fromEntries(readdirSync(dir).sort().map((name) => [name, createHash('sha256').update(readFileSync(path.join(dir, name))).digest('hex')]));

  test('an empty events.db: store_empty, and it stays 0 bytes (SQLite would make it a 4,096-byte database)', () => {
    const opts = options();
    writeFileSync(opts.path, '');
    const error = thrown(() => EventStore.open(opts));
    expect(error).toBeInstanceOf(StoreOpenError);
    expect(error).toMatchObject({ code: 'store_empty', message: expect.stringContaining(`${opts.path} is empty (0 bytes)`) });
    expect(statSync(opts.path).size).toBe(0);
    expect(readdirSync(path.dirname(opts.path))).toEqual(['events.db']);
  });

  test('a file without SQLite\'s header: store_damaged, byte-identical', () => {
    const opts = options();
    writeFileSync(opts.path, 'not a database, but long enough to have a header of sorts\n'.repeat(100));
    const before = folderState(path.dirname(opts.path));
    expect(thrown(() => EventStore.open(opts))).toMatchObject({ code: 'store_damaged', message: expect.stringMatching(/is damaged: it is not an intact SQLite database \(.* do not begin with SQLite's header/) });
    expect(folderState(path.dirname(opts.path))).toEqual(before);
  });

  test('random bytes over a page in the middle: store_damaged, byte-identical (nothing switched to WAL)', () => {
    const opts = options();
    const store = EventStore.create(opts);
    // Enough events for several leaf pages of the events table.
    for (let i = 0; i < 40; i += 1) store.append(valid(...Array.from({ length: 10 }, (_, j) => journalDraft(`entry ${i}/${j} ${'x'.repeat(200)}`))), null);
    store.close();
    const damage = damageMiddleOfStore(opts.path);
    const before = folderState(path.dirname(opts.path));
    const error = thrown(() => EventStore.open(opts));
    // quick_check reports the page, or SQLite refuses it outright (SQLITE_CORRUPT): either is what SQLite said.
    expect(error).toMatchObject({ code: 'store_damaged', message: expect.stringMatching(/not an intact SQLite database \(SQLite (quick_check|SQLITE_CORRUPT)/) });
    expect((error as Error).message).toContain(`${opts.path} is damaged`);
    expect((error as Error).message).toContain('Nothing was changed');
    expect(folderState(path.dirname(opts.path)), `page ${damage.pageno} damaged`).toEqual(before);
  });

  test('a store another writer holds: store_locked, saying it is safe', () => {
    const opts = options();
    const holder = EventStore.create(opts);
    try {
      const error = thrown(() => EventStore.open(opts));
      expect(error).toMatchObject({ code: 'store_locked', message: expect.stringMatching(/is locked: a writer is still running on it .*That is safe: nothing was changed/) });
    } finally {
      holder.close();
    }
  });
});

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
