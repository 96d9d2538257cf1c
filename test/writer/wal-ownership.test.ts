// A WAL of another store beside a killed store (issue 20 item 5, writer/wal-ownership.ts): SQLite
// would replay it over the file, and a writer's refusing open used to checkpoint it into the file
// (measured before the fix: events.db then held the other store, its own 301 events gone). Each
// forged case must be refused by the read-only open and by the writer, naming the -wal, with
// both files byte-identical afterwards; the store's own WAL must still open (no false alarm).
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { eventCountsProjection } from '../../projector/event-counts.js';
import type { Projection } from '../../projector/projection.js';
import { hashCanonical } from '../../schema/hash.js';
import { EventStore, StoreOpenError, type EventStoreOptions } from '../../writer/event-store.js';
import { validateDrafts, type ValidatedDraft } from '../../writer/draft-validation.js';
import { openStoreReadOnly, StoreReadError } from '../../writer/store-reader.js';
import { journalDraft, tempDir } from '../support/writer-fixture.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(): string {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
}

function options(dir: string, experiment: string): EventStoreOptions {
  return {
    path: path.join(dir, 'events.db'),
    identity: { subject_id: `subject-${experiment}`, experiment_id: experiment, manifest_sha256: hashCanonical({ experiment }) },
    projection: eventCountsProjection as Projection<unknown>,
    now: () => '2026-11-29T12:00:00.000Z',
    snapshotEvery: 1_000,
  };
}

function batch(from: number, n: number): ValidatedDraft[] {
  return validateDrafts(Array.from({ length: n }, (_, i) => journalDraft(`entry ${from + i}`)), 'runtime');
}

function appendEvents(store: EventStore, events: number): void {
  for (let n = 0; n < events; n += 10) store.append(batch(n, 10), null);
}

/** A store "killed" mid-way: 200 events checkpointed into the file, 50 more only in its WAL (copied while the writer had it open). */
function killedStore(): { dir: string; options: EventStoreOptions } {
  const live = folder();
  const opts = options(live, 'exp-A');
  const first = EventStore.create(opts);
  appendEvents(first, 200);
  first.close();
  const second = EventStore.open(opts);
  appendEvents(second, 50);
  const dir = folder();
  copyFileSync(opts.path, path.join(dir, 'events.db'));
  copyFileSync(`${opts.path}-wal`, path.join(dir, 'events.db-wal'));
  second.close();
  return { dir, options: { ...opts, path: path.join(dir, 'events.db') } };
}

/** The WAL of store B: its whole store (never checkpointed), or only a last session after a checkpoint. */
function foreignWal(whole: boolean): string {
  const dir = folder();
  const opts = options(dir, 'exp-B');
  let store = EventStore.create(opts);
  appendEvents(store, 120);
  if (!whole) {
    store.close();
    store = EventStore.open(opts);
    appendEvents(store, 30);
  }
  const wal = path.join(dir, 'foreign-wal');
  copyFileSync(`${opts.path}-wal`, wal);
  store.close();
  return wal;
}

function sha(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

test("a killed store's own WAL opens read-only and for writing: it only carries the store on", () => {
  const { options: opts } = killedStore();
  const db = openStoreReadOnly(opts.path, { checkIntegrity: true });
  expect((db.prepare('SELECT max(seq) AS head FROM events').get() as { head: number }).head).toBe(251);
  db.close();
  const store = EventStore.open(opts);
  expect(store.head().seq).toBe(251);
  store.close();
});

test.each([
  ['a whole other store (never checkpointed): reads as an intact store, the other one', true],
  ['the last session of another store: reads as damaged', false],
])('the WAL of %s — refused by the reader and the writer, naming the -wal, both files unchanged', (_name, whole) => {
  const { dir, options: opts } = killedStore();
  const wal = path.join(dir, 'events.db-wal');
  copyFileSync(foreignWal(whole), wal);
  const before = { db: sha(opts.path), wal: sha(wal) };

  let read: unknown;
  try {
    openStoreReadOnly(opts.path).close();
  } catch (error) {
    read = error;
  }
  expect(read).toBeInstanceOf(StoreReadError);
  expect((read as StoreReadError).code).toBe('wal_foreign');
  expect((read as Error).message).toContain(`${opts.path}-wal does not belong to ${opts.path}`);
  expect((read as Error).message).toContain('alone is an intact store ending at seq 201');

  let opened: unknown;
  try {
    EventStore.open(opts).close();
  } catch (error) {
    opened = error;
  }
  expect(opened).toBeInstanceOf(StoreOpenError);
  expect((opened as StoreOpenError).code).toBe('store_wal_foreign');
  // The refusal wrote nothing: the file is still the store's own, the stray WAL still beside it.
  expect({ db: sha(opts.path), wal: sha(wal) }).toEqual(before);

  // Put the store's own WAL back (here: none — the file alone) and it opens at the file's last event.
  rmSync(wal);
  const store = EventStore.open(opts);
  expect(store.head().seq).toBe(201);
  store.close();
});
