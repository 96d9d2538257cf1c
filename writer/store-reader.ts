// Read-only access to a stopped store's file, for replay and restore drills. It never
// talks to a writer and never writes: the connection is opened read-only, and a store a
// writer still holds (exclusive lock) is refused with a message saying so.
import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import type { ProjectionVersions } from './projection-versions.js';
import { STORE_APPLICATION_ID, STORE_FORMAT_VERSION } from './store-schema.js';

export type StoreReadErrorCode = 'not_found' | 'locked' | 'not_a_store' | 'corrupt';

export class StoreReadError extends Error {
  override readonly name = 'StoreReadError';
  constructor(readonly code: StoreReadErrorCode, message: string) {
    super(message);
  }
}

/** A run folder holding events.db, or the path of an events.db itself. */
export function resolveStorePath(dirOrFile: string): string {
  if (!existsSync(dirOrFile)) throw new StoreReadError('not_found', `${dirOrFile} does not exist; give a run folder holding ${RUN_FILES.store}, or the ${RUN_FILES.store} path`);
  if (!statSync(dirOrFile).isDirectory()) return dirOrFile;
  const file = path.join(dirOrFile, RUN_FILES.store);
  if (!existsSync(file)) throw new StoreReadError('not_found', `${dirOrFile} holds no ${RUN_FILES.store}; give a run folder holding one, or the store's path`);
  return file;
}

const StoredProjectionRow = z.strictObject({
  name: z.string(),
  version: z.string(),
  state_machine_version: z.string(),
  event_schema_version: z.string(),
  state_hash: HashString,
  last_applied_event_seq: z.number().int().min(0),
});

export interface StoredProjection {
  readonly versions: ProjectionVersions;
  readonly state_hash: string;
  readonly last_applied_event_seq: number;
}

/** A snapshot row without its state (which can be large): enough to choose one. */
const SnapshotMetaRow = z.strictObject({
  seq: z.number().int(),
  projection: z.string(),
  projector_version: z.string(),
  state_machine_version: z.string(),
  event_schema_version: z.string(),
  state_hash: z.string(),
});

export interface SnapshotMeta {
  readonly seq: number;
  readonly versions: ProjectionVersions;
  /** As stored: not yet checked against the state. */
  readonly state_hash: string;
}

const SNAPSHOT_META_COLUMNS = 'seq, projection, projector_version, state_machine_version, event_schema_version, state_hash';

function toSnapshotMeta(raw: unknown): SnapshotMeta | null {
  const parsed = SnapshotMetaRow.safeParse(raw);
  if (!parsed.success) return null;
  const { seq, projection, projector_version, state_machine_version, event_schema_version, state_hash } = parsed.data;
  return { seq, versions: { projection, projector_version, state_machine_version, event_schema_version }, state_hash };
}

export interface StoredEventRow {
  readonly seq: number;
  /** The indexed column: what the row is filed under, whatever its envelope text says. */
  readonly event_type: string;
  readonly envelope: string;
}

/**
 * Opens an events.db read-only and checks it is a store of this build's format. Throws
 * StoreReadError: 'locked' while a writer holds it, 'not_a_store' otherwise.
 */
export function openStoreReadOnly(file: string): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true, timeout: 500 });
    // The first read is where a writer's exclusive lock shows up.
    db.pragma('application_id', { simple: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/locked|busy/i.test(message)) throw new StoreReadError('locked', `${file} is locked: a writer is still running on it; stop it (or copy the run folder) first`);
    throw new StoreReadError('not_a_store', `cannot open ${file}: ${message}`);
  }
  const appId = db.pragma('application_id', { simple: true });
  const format = db.pragma('user_version', { simple: true });
  if (appId !== STORE_APPLICATION_ID || format !== STORE_FORMAT_VERSION) {
    db.close();
    throw new StoreReadError('not_a_store', `${file} is not an event store of format ${STORE_FORMAT_VERSION} (application_id ${String(appId)}, user_version ${String(format)})`);
  }
  return db;
}

export class StoreReader {
  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
  ) {}

  /** Opens `file` read-only and checks it is a store of the format this build reads. */
  static open(file: string): StoreReader {
    return new StoreReader(file, openStoreReadOnly(file));
  }

  close(): void {
    this.db.close();
  }

  /** The last seq (0 for an empty table). */
  headSeq(): number {
    const row = this.db.prepare('SELECT max(seq) AS seq FROM events').get() as { seq: number | null };
    return row.seq ?? 0;
  }

  storedProjection(): StoredProjection | null {
    const raw = this.db.prepare('SELECT name, version, state_machine_version, event_schema_version, state_hash, last_applied_event_seq FROM projection WHERE id = 1').get();
    if (raw === undefined) return null;
    const parsed = StoredProjectionRow.safeParse(raw);
    if (!parsed.success) throw new StoreReadError('corrupt', `the projection row of ${this.path} is malformed: ${z.prettifyError(parsed.error)}`);
    const row = parsed.data;
    return {
      versions: { projection: row.name, projector_version: row.version, state_machine_version: row.state_machine_version, event_schema_version: row.event_schema_version },
      state_hash: row.state_hash,
      last_applied_event_seq: row.last_applied_event_seq,
    };
  }

  /** The stored projection's state text, unchecked. */
  storedProjectionStateText(): string | null {
    const row = this.db.prepare('SELECT state FROM projection WHERE id = 1').get() as { state: unknown } | undefined;
    return row === undefined ? null : typeof row.state === 'string' ? row.state : null;
  }

  /** Every snapshot, newest first, without states. Rows that do not even parse are listed by seq, not returned. */
  snapshots(): { found: SnapshotMeta[]; malformed: number[] } {
    const rows = this.db.prepare(`SELECT ${SNAPSHOT_META_COLUMNS} FROM snapshots ORDER BY seq DESC`).all();
    const found: SnapshotMeta[] = [];
    const malformed: number[] = [];
    for (const raw of rows) {
      const meta = toSnapshotMeta(raw);
      if (meta) found.push(meta);
      else malformed.push(Number((raw as { seq?: unknown }).seq));
    }
    return { found, malformed };
  }

  /** The snapshot at exactly `seq`; throws when its row is malformed. */
  snapshotAt(seq: number): SnapshotMeta | null {
    const raw = this.db.prepare(`SELECT ${SNAPSHOT_META_COLUMNS} FROM snapshots WHERE seq = ?`).get(seq);
    if (raw === undefined) return null;
    const meta = toSnapshotMeta(raw);
    if (!meta) throw new StoreReadError('corrupt', `the snapshot row at seq ${seq} of ${this.path} is malformed`);
    return meta;
  }

  /** The stored state text of the snapshot at `seq`, unchecked. */
  snapshotStateText(seq: number): string | null {
    const row = this.db.prepare('SELECT state FROM snapshots WHERE seq = ?').get(seq) as { state: unknown } | undefined;
    return row === undefined ? null : typeof row.state === 'string' ? row.state : null;
  }

  /**
   * How many events of each (event_type, schema_version) lie in (afterSeq, toSeq], with
   * the first seq of each: SQLite reads the whole range, this process only the summary.
   * schema_version is null where the stored text is not JSON or lacks a string version
   * (reading the events themselves reports those).
   */
  schemaVersionSummary(afterSeq: number, toSeq: number): { event_type: string; schema_version: string | null; events: number; first_seq: number }[] {
    const rows = this.db
      .prepare(
        `SELECT event_type,
           CASE WHEN json_valid(envelope) THEN json_extract(envelope, '$.schema_version') END AS schema_version,
           count(*) AS events, min(seq) AS first_seq
         FROM events WHERE seq > ? AND seq <= ? GROUP BY 1, 2 ORDER BY first_seq`,
      )
      .all(afterSeq, toSeq) as { event_type: string; schema_version: unknown; events: number; first_seq: number }[];
    return rows.map((r) => ({ ...r, schema_version: typeof r.schema_version === 'string' ? r.schema_version : null }));
  }

  /**
   * A page of at most `limit` events next to `seq`: after it in seq order (`direction` 'after'),
   * or before it, nearest first ('before'); only `types` when given. For paging views of a
   * large store (the audit desk): SQLite walks the seq (or event_type, seq) index, this process
   * holds one page.
   */
  eventsPage(seq: number, direction: 'after' | 'before', limit: number, types: readonly string[] | null): StoredEventRow[] {
    const typeFilter = types === null ? '' : ` AND event_type IN (${types.map(() => '?').join(', ')})`;
    const sql = direction === 'after'
      ? `SELECT seq, event_type, envelope FROM events WHERE seq > ?${typeFilter} ORDER BY seq LIMIT ?`
      : `SELECT seq, event_type, envelope FROM events WHERE seq < ?${typeFilter} ORDER BY seq DESC LIMIT ?`;
    return this.db.prepare(sql).all(seq, ...(types ?? []), limit) as StoredEventRow[];
  }

  /** The row at `seq`, or null. */
  rowAt(seq: number): StoredEventRow | null {
    return (this.db.prepare('SELECT seq, event_type, envelope FROM events WHERE seq = ?').get(seq) as StoredEventRow | undefined) ?? null;
  }

  /** The seq of the event with this event_id (unique column), or null. */
  seqOfEventId(eventId: string): number | null {
    const row = this.db.prepare('SELECT seq FROM events WHERE event_id = ?').get(eventId) as { seq: number } | undefined;
    return row?.seq ?? null;
  }

  /** Events in (afterSeq, toSeq] in seq order, one row at a time: never the whole store in memory. */
  iterateEvents(afterSeq: number, toSeq: number): IterableIterator<StoredEventRow> {
    return this.db.prepare('SELECT seq, event_type, envelope FROM events WHERE seq > ? AND seq <= ? ORDER BY seq').iterate(afterSeq, toSeq) as IterableIterator<StoredEventRow>;
  }
}
