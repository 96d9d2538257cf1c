// After the store's first commit the writer only UPDATEs the projection row's state
// (event-store.ts writeProjection): the row's names and versions stay as written, and an
// update that finds no row fails the append whole instead of committing events without it.
import Database from 'better-sqlite3';
import path from 'node:path';
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { eventCountsProjection } from '../../projector/event-counts.js';
import type { Projection } from '../../projector/projection.js';
import { hashCanonical, hashText } from '../../schema/hash.js';
import { validateDrafts } from '../../writer/draft-validation.js';
import { EventStore } from '../../writer/event-store.js';
import { messageDraft, tempDir } from '../support/writer-fixture.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function create(): { store: EventStore; file: string } {
  const dir = tempDir();
  dirs.push(dir);
  const file = path.join(dir, 'events.db');
  const store = EventStore.create({
    path: file,
    identity: { subject_id: 'subject-001', experiment_id: 'exp-row-001', manifest_sha256: hashCanonical({ m: 1 }) },
    projection: eventCountsProjection as Projection<unknown>,
    now: () => '2026-11-29T12:00:00.000Z',
    snapshotEvery: 1_000,
  });
  return { store, file };
}

describe('projection row', () => {
  test('appends move state, hash and seq; names and versions stay as the first commit wrote them', () => {
    const { store, file } = create();
    for (let i = 0; i < 3; i += 1) store.append(validateDrafts([messageDraft()], 'experiment'), null);
    store.close();
    const db = new Database(file, { readonly: true });
    const row = db.prepare('SELECT * FROM projection').get() as Record<string, unknown>;
    db.close();
    expect(row).toMatchObject({ id: 1, name: 'event-counts', version: '1.0.0', state_machine_version: '0.0.0', last_applied_event_seq: 4 });
    expect(JSON.parse(row['state'] as string)).toMatchObject({ total: 4, last_seq: 4 });
    expect(row['state_hash']).toBe(hashText(row['state'] as string));
  });

  test('forged: the row gone under the writer, the append fails and stores nothing', () => {
    const { store } = create();
    // The writer's own connection is the only one the exclusive lock lets in.
    (store as unknown as { db: Database.Database }).db.exec('DELETE FROM projection');
    const before = store.head();
    expect(() => store.append(validateDrafts([messageDraft()], 'experiment'), null)).toThrow(/projection row was not updated at seq 2/);
    expect(store.head()).toEqual(before);
    const count = (store as unknown as { db: Database.Database }).db.prepare('SELECT count(*) AS n FROM events').get() as { n: number };
    expect(count.n).toBe(1);
  });
});
