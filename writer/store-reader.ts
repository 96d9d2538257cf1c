// Read-only access to a stopped store's file, for replay and restore drills. It never
// talks to a writer and never writes: the connection is opened read-only, and a store a
// writer still holds (exclusive lock) is refused with a message saying so. Whatever SQLite
// says about the file, at the open or at any later read (a damaged page is met only when it is
// read), reaches the caller as a StoreReadError in the vocabulary of store-file-failure.ts,
// never as a raw SqliteError. A read leaves the run folder as it found it: the -wal/-shm a
// read-only connection to a WAL-mode file creates are removed again (see openStoreReadOnly).
import Database from 'better-sqlite3';
import { existsSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES, type ExitCode } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import { HashString } from '../schema/hash.js';
import { RUN_FILES } from '../schema/run-files.js';
import type { ProjectionVersions } from './projection-versions.js';
import { classifyStoreError, isWalModeOnDisk, quickCheckFailure, STORE_FILE_PROBLEMS, storeFileCode, storeFileFailure, storeFileProblemBeforeOpen, type StoreFileFailure, type StoreFileProblem } from './store-file-failure.js';
import { foreignWalFailure } from './wal-ownership.js';
import { STORE_APPLICATION_ID, STORE_FORMAT_VERSION } from './store-schema.js';

/**
 * not_found: no such path · not_a_store: a SQLite file, but not an event store of this format ·
 * corrupt: an intact SQLite file whose rows do not make a store (a row malformed, a seq
 * missing, no projection row) · the rest: the file itself (store-file-failure.ts). The CLI's
 * code is `store_<code>` (store_damaged, store_locked, …).
 */
export type StoreReadErrorCode = 'not_found' | 'not_a_store' | 'corrupt' | Exclude<StoreFileProblem, 'missing'>;

export class StoreReadError extends CodedErrorOf<StoreReadErrorCode>('store', EXIT_CODES.failed) {
  override readonly name = 'StoreReadError';
  /** A path that names nothing usable is misuse; a store that is there but cannot be read is a refusal. */
  override get exitCode(): ExitCode {
    return this.code === 'not_found' || this.code === 'not_a_store' ? EXIT_CODES.misused : EXIT_CODES.failed;
  }
}

/** A file-level failure as the reader's error: a missing file is its 'not_found'. */
export function storeReadErrorOf(failure: StoreFileFailure): StoreReadError {
  return new StoreReadError(failure.problem === 'missing' ? 'not_found' : failure.problem, failure.message);
}

/**
 * A writer's start-up code (writer/main.ts reports StoreOpenError codes: store_damaged,
 * store_locked, …) as the reader's error with the same meaning, for a caller that checked the
 * file read-only and then found the writer refuse it (the file changed, or another writer took
 * it, in between); null for any other code (store_missing included: the caller knows the file).
 */
export function storeReadErrorFromWriterCode(code: string, message: string): StoreReadError | null {
  const problem = STORE_FILE_PROBLEMS.find((p) => p !== 'missing' && storeFileCode(p) === code);
  return problem === undefined ? null : new StoreReadError(problem as Exclude<StoreFileProblem, 'missing'>, message);
}

/** Runs one read of `file`; what SQLite or the file system says about the file becomes a StoreReadError. */
export function readingStore<T>(file: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    const failure = classifyStoreError(file, error, 'read');
    if (failure) throw storeReadErrorOf(failure);
    throw error;
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

export interface OpenStoreOptions {
  /**
   * Also run SQLite's quick_check (every page read once; store-file-failure.ts): for the
   * commands that vouch for or continue a store (verify, the audit desk, repair, resume), so a
   * damaged page is refused up front rather than met half-way, or never by a command that
   * does not read it.
   */
  readonly checkIntegrity?: boolean;
}

/**
 * The side files SQLite creates for a read-only connection to a WAL-mode file (a store whose
 * writer was killed, or one closed by a build that left it in WAL mode: a clean close now
 * leaves it in rollback mode, writer/event-store.ts): a 0-byte -wal and a 32 KiB -shm, measured.
 * The returned function removes those this open created, and is called only while the
 * connection still holds the shared lock a WAL-mode reader keeps from its first read to its
 * close: no writer can start meanwhile (measured: it gets SQLITE_BUSY), so none can be using
 * them. A -wal that was there before, or that holds frames, is never touched; a rollback-mode
 * file gets no side files and nothing is removed (an idle reader of one holds no lock, so a
 * writer may be starting beside it). Another reader still using removed files keeps its open
 * copies, and no writer can write until it closes, so nothing it reads changes.
 */
function sideFileCleanup(file: string): () => void {
  if (isWalModeOnDisk(file) !== true) return () => undefined;
  const created = [`${file}-wal`, `${file}-shm`].filter((side) => !existsSync(side));
  return () => {
    for (const side of created) {
      try {
        if (side.endsWith('-wal') && statSync(side).size !== 0) continue;
        unlinkSync(side);
      } catch {
        // Not there, or not ours to remove: SQLite's own index files, harmless to leave;
        // nothing of the store is in them.
      }
    }
  };
}

/**
 * Opens an events.db read-only and checks it is a store of this build's format. Throws
 * StoreReadError: 'locked' while a writer holds it, 'empty' / 'damaged' / 'unreadable' when the
 * file is not an intact, readable SQLite database (store-file-failure.ts), 'not_a_store' when it
 * is one but not an event store of this format. Its close() also removes what the open created.
 */
export function openStoreReadOnly(file: string, options: OpenStoreOptions = {}): Database.Database {
  const before = storeFileProblemBeforeOpen(file);
  if (before) throw storeReadErrorOf(before);
  const cleanup = sideFileCleanup(file);
  const db = readingStore(file, () => new Database(file, { readonly: true, fileMustExist: true, timeout: 500 }));
  /** Set by the first read that went through: from then on this connection holds its shared lock. */
  let locked = false;
  const close = db.close.bind(db);
  db.close = (): Database.Database => {
    if (db.open && locked) cleanup();
    return close();
  };
  try {
    // The first read is where a writer's exclusive lock (and a damaged first page) shows up.
    const appId = readingStore(file, () => db.pragma('application_id', { simple: true }));
    locked = true;
    const format = readingStore(file, () => db.pragma('user_version', { simple: true }));
    if (appId !== STORE_APPLICATION_ID || format !== STORE_FORMAT_VERSION) {
      throw new StoreReadError('not_a_store', `${file} is not an event store of format ${STORE_FORMAT_VERSION} (application_id ${String(appId)}, user_version ${String(format)})`);
    }
    // Before any verdict on what it holds: a WAL beside it that is not its own shows another store, or a mixture (wal-ownership.ts).
    const foreign = foreignWalFailure(file, db);
    if (foreign) throw storeReadErrorOf(foreign);
    if (options.checkIntegrity) {
      const damage = quickCheckFailure(db, file);
      if (damage) throw storeReadErrorOf(damage);
    }
  } catch (error) {
    db.close();
    // A WAL replayed over the file can make it read as damaged or as no store at all: said as the WAL's fault when the file alone is intact.
    if (error instanceof StoreReadError && (error.code === 'damaged' || error.code === 'not_a_store')) {
      const foreign = foreignWalFailure(file, storeFileFailure('damaged', file, error.message));
      if (foreign) throw storeReadErrorOf(foreign);
    }
    throw error;
  }
  return db;
}

export class StoreReader {
  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
  ) {}

  /** Opens `file` read-only and checks it is a store of the format this build reads. */
  static open(file: string, options: OpenStoreOptions = {}): StoreReader {
    return new StoreReader(file, openStoreReadOnly(file, options));
  }

  /** One read; a SQLite failure (a damaged page met here) becomes a StoreReadError. */
  private read<T>(query: () => T): T {
    return readingStore(this.path, query);
  }

  /** Rows one at a time, each step read as above: a damaged page half-way is a StoreReadError at that row. */
  private *rows<T>(statement: Database.Statement, ...params: unknown[]): Generator<T, void, undefined> {
    const iterator = this.read(() => statement.iterate(...params) as IterableIterator<T>);
    let finished = false;
    try {
      for (;;) {
        const step = this.read(() => iterator.next());
        if (step.done) {
          finished = true;
          return;
        }
        yield step.value;
      }
    } finally {
      // A consumer that stops early (or a throw) must free the statement for the next query.
      if (!finished) iterator.return?.();
    }
  }

  close(): void {
    this.db.close();
  }

  /** The last seq (0 for an empty table). */
  headSeq(): number {
    const row = this.read(() => this.db.prepare('SELECT max(seq) AS seq FROM events').get() as { seq: number | null });
    return row.seq ?? 0;
  }

  storedProjection(): StoredProjection | null {
    const raw = this.read(() => this.db.prepare('SELECT name, version, state_machine_version, event_schema_version, state_hash, last_applied_event_seq FROM projection WHERE id = 1').get());
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
    const row = this.read(() => this.db.prepare('SELECT state FROM projection WHERE id = 1').get() as { state: unknown } | undefined);
    return row === undefined ? null : typeof row.state === 'string' ? row.state : null;
  }

  /** Every snapshot, newest first, without states. Rows that do not even parse are listed by seq, not returned. */
  snapshots(): { found: SnapshotMeta[]; malformed: number[] } {
    const rows = this.read(() => this.db.prepare(`SELECT ${SNAPSHOT_META_COLUMNS} FROM snapshots ORDER BY seq DESC`).all());
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
    const raw = this.read(() => this.db.prepare(`SELECT ${SNAPSHOT_META_COLUMNS} FROM snapshots WHERE seq = ?`).get(seq));
    if (raw === undefined) return null;
    const meta = toSnapshotMeta(raw);
    if (!meta) throw new StoreReadError('corrupt', `the snapshot row at seq ${seq} of ${this.path} is malformed`);
    return meta;
  }

  /** The stored state text of the snapshot at `seq`, unchecked. */
  snapshotStateText(seq: number): string | null {
    const row = this.read(() => this.db.prepare('SELECT state FROM snapshots WHERE seq = ?').get(seq) as { state: unknown } | undefined);
    return row === undefined ? null : typeof row.state === 'string' ? row.state : null;
  }

  /**
   * How many events of each (event_type, schema_version) lie in (afterSeq, toSeq], with
   * the first seq of each: SQLite reads the whole range, this process only the summary.
   * schema_version is null where the stored text is not JSON or lacks a string version
   * (reading the events themselves reports those).
   */
  schemaVersionSummary(afterSeq: number, toSeq: number): { event_type: string; schema_version: string | null; events: number; first_seq: number }[] {
    const rows = this.read(
      () =>
        this.db
          .prepare(
            `SELECT event_type,
               CASE WHEN json_valid(envelope) THEN json_extract(envelope, '$.schema_version') END AS schema_version,
               count(*) AS events, min(seq) AS first_seq
             FROM events WHERE seq > ? AND seq <= ? GROUP BY 1, 2 ORDER BY first_seq`,
          )
          .all(afterSeq, toSeq) as { event_type: string; schema_version: unknown; events: number; first_seq: number }[],
    );
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
    return this.read(() => this.db.prepare(sql).all(seq, ...(types ?? []), limit) as StoredEventRow[]);
  }

  /** The row at `seq`, or null. */
  rowAt(seq: number): StoredEventRow | null {
    return this.read(() => (this.db.prepare('SELECT seq, event_type, envelope FROM events WHERE seq = ?').get(seq) as StoredEventRow | undefined) ?? null);
  }

  /** The seq of the event with this event_id (unique column), or null. */
  seqOfEventId(eventId: string): number | null {
    const row = this.read(() => this.db.prepare('SELECT seq FROM events WHERE event_id = ?').get(eventId) as { seq: number } | undefined);
    return row?.seq ?? null;
  }

  /** Events in (afterSeq, toSeq] in seq order, one row at a time: never the whole store in memory. */
  iterateEvents(afterSeq: number, toSeq: number): IterableIterator<StoredEventRow> {
    return this.rows<StoredEventRow>(this.read(() => this.db.prepare('SELECT seq, event_type, envelope FROM events WHERE seq > ? AND seq <= ? ORDER BY seq')), afterSeq, toSeq);
  }
}
