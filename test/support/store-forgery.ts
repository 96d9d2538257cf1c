// Forged copies of a real store, for replay and restore tests: the edits a tamperer (or
// a build with other versions) could leave in events.db.
import Database from 'better-sqlite3';
import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';
import { canonicalJson } from '../../schema/canonical-json.js';
import type { EventEnvelope } from '../../schema/envelope.js';
import { computeEventHash, computePayloadHash, eventIdFor } from '../../schema/envelope-hash.js';
import { schemaVersionOf, type EventType } from '../../schema/event-catalog.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { tempDir, writeSealedRun, type WriterFixture } from './writer-fixture.js';

/** Copies of one run folder, removed together. */
export class RunCopies {
  private readonly dirs: string[] = [];
  constructor(private readonly source: string) {}
  copy(): string {
    const dir = tempDir('ds-forged-');
    this.dirs.push(dir);
    cpSync(this.source, dir, { recursive: true });
    return dir;
  }
  removeAll(): void {
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

export function storeOf(dir: string): string {
  return path.join(dir, RUN_FILES.store);
}

/** Opens the copy's store writable with the append-only triggers dropped, as a tamperer would. */
export function tamper(dir: string, edit: (db: Database.Database) => void): void {
  const db = new Database(storeOf(dir));
  try {
    db.exec(
      'DROP TRIGGER IF EXISTS events_refuse_update; DROP TRIGGER IF EXISTS events_refuse_delete; DROP TRIGGER IF EXISTS events_refuse_overwrite; DROP TRIGGER IF EXISTS events_refuse_after_seal;',
    );
    edit(db);
  } finally {
    db.close();
  }
}

/** Rewrites the stored envelope at `seq` (its hashes left as they were: replay does not check them). */
export function editEnvelope(db: Database.Database, seq: number, change: (env: EventEnvelope) => EventEnvelope): void {
  const row = db.prepare('SELECT envelope FROM events WHERE seq = ?').get(seq) as { envelope: string };
  const edited = change(JSON.parse(row.envelope) as EventEnvelope);
  db.prepare('UPDATE events SET envelope = ? WHERE seq = ?').run(canonicalJson(edited), seq);
}

/**
 * Rewrites the payload at `seq` and re-chains the store from there, as a forger who drops the
 * triggers and knows the format could: the payload's and event's hashes recomputed, every later
 * event's link and hash with them. Only the signed heads (whose key the forger lacks) still tell
 * by their hash — and the checks that read what the events say.
 */
export function editPayloadRechained(db: Database.Database, seq: number, edit: (payload: Record<string, unknown>) => void): void {
  const rows = db.prepare('SELECT seq, envelope FROM events WHERE seq >= ? - 1 ORDER BY seq').all(seq) as { seq: number; envelope: string }[];
  let previous: string | null = null;
  for (const row of rows) {
    const env = JSON.parse(row.envelope) as EventEnvelope;
    if (row.seq < seq) {
      previous = env.event_hash;
      continue;
    }
    if (row.seq === seq) {
      edit(env.payload);
      env.payload_hash = computePayloadHash(env.payload);
    }
    if (previous !== null) env.previous_event_hash = previous as EventEnvelope['previous_event_hash'];
    env.event_hash = computeEventHash({ ...env, event_hash: '' } as EventEnvelope);
    previous = env.event_hash;
    db.prepare('UPDATE events SET envelope = ? WHERE seq = ?').run(canonicalJson(env), row.seq);
  }
}

/**
 * Inserts a well-formed event after the last row — right id, hashes and link, as a forger
 * who drops the triggers and knows the format could — and moves the projection row's
 * last_applied_event_seq with it, so only the rules about what may follow what can tell.
 */
export function appendForgedEvent(db: Database.Database, eventType: EventType, payload: Record<string, unknown>): EventEnvelope {
  const last = JSON.parse((db.prepare('SELECT envelope FROM events ORDER BY seq DESC LIMIT 1').get() as { envelope: string }).envelope) as EventEnvelope;
  const seq = last.seq + 1;
  const unhashed = {
    event_id: eventIdFor(last.subject_id, seq),
    subject_id: last.subject_id,
    seq,
    event_type: eventType,
    schema_version: schemaVersionOf(eventType),
    occurred_at: last.occurred_at,
    recorded_at: last.recorded_at,
    actor: 'experiment' as const,
    causation_id: null,
    correlation_id: null,
    idempotency_key: null,
    previous_event_hash: last.event_hash,
    payload,
    payload_hash: computePayloadHash(payload),
  };
  const envelope: EventEnvelope = { ...unhashed, event_hash: computeEventHash({ ...unhashed, event_hash: '' } as EventEnvelope) };
  db.prepare('INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, ?, ?, ?)').run(seq, envelope.event_id, eventType, null, canonicalJson(envelope));
  db.prepare('UPDATE projection SET last_applied_event_seq = ?').run(seq);
  return envelope;
}

export interface SnapshotRow {
  readonly seq: number;
  readonly projection: string;
  readonly projector_version: string;
  readonly state_machine_version: string;
  readonly event_schema_version: string;
  readonly state: string;
  readonly state_hash: string;
}

export function readSnapshots(file: string): SnapshotRow[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT * FROM snapshots ORDER BY seq').all() as SnapshotRow[];
  } finally {
    db.close();
  }
}

export interface ProjectionRow {
  readonly name: string;
  readonly version: string;
  readonly state_machine_version: string;
  readonly event_schema_version: string;
  readonly state: string;
  readonly state_hash: string;
  readonly last_applied_event_seq: number;
}

export function readProjectionRow(file: string): ProjectionRow {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT name, version, state_machine_version, event_schema_version, state, state_hash, last_applied_event_seq FROM projection').get() as ProjectionRow;
  } finally {
    db.close();
  }
}

export function seqsOfType(file: string, eventType: string): number[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT seq FROM events WHERE event_type = ? ORDER BY seq').all(eventType) as { seq: number }[]).map((r) => r.seq);
  } finally {
    db.close();
  }
}

/** A sealed run written by the real writer (snapshots every 4 events), with its head and stored hash, to copy and forge. */
export interface ForgeableRun {
  readonly sealed: WriterFixture;
  readonly copies: RunCopies;
  readonly headSeq: number;
  readonly storedHash: string;
  cleanup(): void;
}

export async function forgeableSealedRun(): Promise<ForgeableRun> {
  const sealed = await writeSealedRun(tempDir(), 5, 4);
  const copies = new RunCopies(sealed.dir);
  const row = readProjectionRow(sealed.dbPath);
  return {
    sealed,
    copies,
    headSeq: row.last_applied_event_seq,
    storedHash: row.state_hash,
    cleanup() {
      copies.removeAll();
      rmSync(sealed.dir, { recursive: true, force: true });
    },
  };
}
