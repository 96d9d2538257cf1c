// events.db: the hash-chained, append-only store, and the projection committed with it.
// Only the writer process constructs this class (DESIGN §2). Every append is one
// BEGIN IMMEDIATE transaction holding the events, the projected state and
// last_applied_event_seq (spec §12.2); the in-memory head and state move only after
// the commit succeeded. Every K events (and on a clean close) the same transaction also
// writes a snapshot: a cache for restore drills, never a source of truth (spec §12.1).
// A store ends with SystemEvent.StoreSealed; after it nothing is appended, by this class
// and by a trigger in the file. Opening an existing store writes nothing until the file is
// known to be an intact store of this format (store-file-failure.ts: not empty, SQLite's
// header, quick_check), so a refused open leaves it byte-identical; a clean close leaves it
// in rollback-journal mode, so that reading it later creates no -wal/-shm beside it.
// Why one file: one class, the store's one transaction discipline; opening, appending, sealing and
// reading share its prepared statements and in-memory head, which must move only together.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { CodedErrorOf } from '../foundation/typed-error.js';
import { canonicalJson } from '../schema/canonical-json.js';
import type { WriterRole } from '../schema/event-definition.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { computeEventHash } from '../schema/envelope-hash.js';
import { EVENT_SCHEMA_VERSION, eventDefinition, type PayloadOf } from '../schema/event-catalog.js';
import { StoreOpened, StoreSealed } from '../schema/events/system-events.js';
import { GENESIS_HASH, hashText, type HashString } from '../schema/hash.js';
import { eventIs } from '../schema/typed-event.js';
import { evidenceEligibility } from '../projector/evidence.js';
import { ProjectionRefusal, type Projection } from '../projector/projection.js';
import { envelopeOfDraft } from './envelope-text.js';
import { draftOf } from './event-draft.js';
import { describeDifference, formatVersions, versionDifferences, versionsOf, type ProjectionVersions } from './projection-versions.js';
import type { ValidatedDraft } from './draft-validation.js';
import { WriterError, type AppendResult, type EventDraft, type Head } from './protocol.js';
import { classifyStoreError, quickCheckFailure, storeFileCode, storeFileProblemBeforeOpen, type StoreFileCode, type StoreFileFailure } from './store-file-failure.js';
import { CREATE_STORE_SQL, STORE_APPLICATION_ID, STORE_FORMAT_VERSION } from './store-schema.js';
import { openStoreReadOnly, StoreReadError } from './store-reader.js';
import { hasWalFrames, walOf } from './wal-ownership.js';
import type { WriterOwnEventType } from './writer-own-events.js';

export const WRITER_VERSION = '0.1.0';

export interface StoreIdentity {
  readonly subject_id: string;
  readonly experiment_id: string;
  readonly manifest_sha256: HashString;
}

/** store_exists / store_missing and the file problems (store_empty, store_damaged, store_locked, …) are store-file-failure.ts's codes. */
export type StoreOpenErrorCode = 'store_exists' | StoreFileCode | 'not_a_store' | 'identity_mismatch' | 'projection_mismatch' | 'corrupt' | 'pragma';

export class StoreOpenError extends CodedErrorOf<StoreOpenErrorCode>('store_open', EXIT_CODES.failed) {
  override readonly name = 'StoreOpenError';
}

function storeOpenErrorOf(failure: StoreFileFailure): StoreOpenError {
  return new StoreOpenError(storeFileCode(failure.problem), failure.message);
}

/** What SQLite or the file system said while opening, as a StoreOpenError; anything else unchanged. */
function asStoreOpenError(file: string, error: unknown): unknown {
  if (error instanceof StoreOpenError) return error;
  const failure = classifyStoreError(file, error, 'write');
  return failure ? storeOpenErrorOf(failure) : error;
}

/** A reader's refusal of the store, as the writer's (same problem, same `store_<problem>` code). */
function storeOpenErrorOfRead(error: StoreReadError): StoreOpenError {
  const code: StoreOpenErrorCode = error.code === 'not_found' ? 'store_missing' : error.code === 'not_a_store' || error.code === 'corrupt' ? error.code : storeFileCode(error.code);
  return new StoreOpenError(code, error.message);
}

/**
 * With a WAL beside the store, everything is checked read-only before the read-write open:
 * closing a read-write connection checkpoints the WAL into the file — also after a refusal —
 * so a WAL of another store (wal-ownership.ts, run by the read-only open) or a store of another
 * run would otherwise be written over the file by the very open that refuses it.
 */
function checkWalBeforeOpen(file: string, identity: StoreIdentity): void {
  if (!hasWalFrames(file)) return;
  let db: Database.Database;
  try {
    db = openStoreReadOnly(file);
  } catch (error) {
    throw error instanceof StoreReadError ? storeOpenErrorOfRead(error) : error;
  }
  try {
    const first = db.prepare('SELECT envelope FROM events WHERE seq = 1').get() as { envelope: string } | undefined;
    const p = first === undefined ? null : (JSON.parse(first.envelope) as EventEnvelope).payload as Partial<StoreIdentity>;
    if (p === null || p.experiment_id !== identity.experiment_id || p.subject_id !== identity.subject_id || p.manifest_sha256 !== identity.manifest_sha256) {
      throw new StoreOpenError(
        'identity_mismatch',
        `${file} (with its ${path.basename(walOf(file))}) belongs to experiment ${String(p?.experiment_id)} / subject ${String(p?.subject_id)} / manifest ${String(p?.manifest_sha256)}, not to the one this writer was started for; nothing was changed (checked read-only, before a read-write open would have written the WAL into the file)`,
      );
    }
  } finally {
    db.close();
  }
}

export interface EventStoreOptions {
  readonly path: string;
  readonly identity: StoreIdentity;
  readonly projection: Projection<unknown>;
  /** Wall clock for recorded_at (and occurred_at of writer-internal events). */
  readonly now: () => string;
  /** K, in events: a committed batch that reaches or passes a multiple of K writes a snapshot at its last seq. */
  readonly snapshotEvery: number;
  /**
   * Called inside the transaction of every caller's append batch, after all of its rows
   * are written and just before the commit; never for the writer's own events or seals.
   * For the crash drill (writer/main.ts), which kills the process here.
   */
  readonly beforeAppendCommit?: () => void;
  /**
   * Called inside the transaction that writes a snapshot row, after the row, before the
   * commit. For the fault harness's `writer.snapshot.write` point (writer/main.ts).
   */
  readonly onSnapshotWrite?: (seq: number) => void;
}

/** The events this class writes itself (writer-own-events.ts): commitInternal's types. */
type InternalEventType = WriterOwnEventType;

/** Whether a batch that moved the head from `fromSeq` to `toSeq` reached or passed a multiple of `every`. */
export function crossesSnapshotBoundary(fromSeq: number, toSeq: number, every: number): boolean {
  return Math.floor(toSeq / every) > Math.floor(fromSeq / every);
}

/**
 * A full disk met by an append (SQLITE_FULL at a row, the COMMIT's WAL frames or the
 * checkpoint; ENOSPC/EDQUOT): the transaction rolled back and the head did not move, so it is
 * the caller's typed refusal `store_full` — something a person acts on (free space, resume), not a
 * writer bug. Null for any other error.
 */
export function storeFullRefusalOf(file: string, error: unknown): WriterError | null {
  const failure = classifyStoreError(file, error, 'write');
  if (failure?.problem !== 'full') return null;
  return new WriterError('store_full', `${failure.message}. Nothing of this request was written`, { store_problem: storeFileCode(failure.problem), detail: failure.detail }, {
    recordNote: 'the disk holding the store is full: nothing of the request was written',
  });
}

/** A retry must repeat these draft fields exactly (and the payload) to be a retry. */
const REPLAY_FIELDS = ['event_type', 'schema_version', 'occurred_at', 'actor', 'causation_id', 'correlation_id'] as const satisfies readonly (keyof EventDraft & keyof EventEnvelope)[];

/** What one append transaction committed; the in-memory head and state take it only after the commit. */
interface CommittedBatch {
  readonly appended: AppendResult['events'];
  readonly state: unknown;
  readonly seq: number;
  readonly previous: HashString;
}

interface StoredRow {
  readonly seq: number;
  readonly envelope: string;
}

export class EventStore {
  private readonly db: Database.Database;
  private headSeq = 0;
  private headHash: HashString = GENESIS_HASH;
  private state: unknown;
  /** Head at SystemEvent.StoreSealed once the store is sealed. */
  private sealedHead: Head | null = null;
  private readonly insertEvent: Database.Statement<[number, string, string, string | null, string]>;
  private readonly upsertProjection: Database.Statement<[string, string, string, string, string, string, number]>;
  /** The row's names and versions never change while this writer runs (open checked them): after the first row, only state moves. */
  private readonly updateProjectionState: Database.Statement<[string, string, number]>;
  /** The one append transaction, wrapped once: better-sqlite3 builds five closures per wrap, which every append paid. */
  private readonly commitTransaction: Database.Transaction<(drafts: readonly ValidatedDraft[], beforeCommit: (() => void) | undefined) => CommittedBatch>;
  private readonly upsertSnapshot: Database.Statement<[number, string, string, string, string, string, string]>;
  private readonly snapshotHashAt: Database.Statement<[number], { state_hash: string }>;
  private readonly versions: ProjectionVersions;
  private readonly byKey: Database.Statement<[string], StoredRow>;
  private readonly byEventId: Database.Statement<[string], StoredRow>;
  private readonly readPageStmt: Database.Statement<[number, number], { envelope: string }>;
  private readonly readByTypeStmts = new Map<number, Database.Statement<unknown[], { envelope: string }>>();

  private constructor(private readonly options: EventStoreOptions, create: boolean) {
    const { path, projection } = options;
    if (!Number.isSafeInteger(options.snapshotEvery) || options.snapshotEvery < 1) throw new Error(`snapshotEvery must be a whole number of events >= 1, got ${options.snapshotEvery}`);
    this.versions = versionsOf(projection);
    if (create && existsSync(path)) throw new StoreOpenError('store_exists', `refusing to create ${path}: a file is already there (a store is never overwritten)`);
    if (!create && !existsSync(path)) throw new StoreOpenError('store_missing', `no store at ${path}; start the writer in create mode to make one`);
    // SQLite would make an empty file a database (4,096 bytes) and rewrite a foreign header: look first.
    const before = create ? null : storeFileProblemBeforeOpen(path);
    if (before) throw storeOpenErrorOf(before);
    if (!create) checkWalBeforeOpen(path, options.identity);
    try {
      this.db = new Database(path, { timeout: 1_000, fileMustExist: !create });
    } catch (error) {
      throw asStoreOpenError(path, error);
    }
    try {
      // Exclusive first: the first read below takes the lock and keeps it (another writer's
      // lock shows up there as store_locked), and nothing is written until the file is checked.
      this.db.pragma('locking_mode = EXCLUSIVE');
      if (!create) {
        this.checkIsStore();
        const damage = quickCheckFailure(this.db, path);
        if (damage) throw storeOpenErrorOf(damage);
      }
      // An existing store switches to WAL (a write of page 1) only once loadHeadAndState, below,
      // has read it as this writer's own: a refused open (another run's store) leaves it as it was.
      if (create) {
        this.configureConnection();
        this.db.exec(CREATE_STORE_SQL);
        this.db.pragma(`application_id = ${STORE_APPLICATION_ID}`);
        this.db.pragma(`user_version = ${STORE_FORMAT_VERSION}`);
      }
      this.insertEvent = this.db.prepare('INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, ?, ?, ?)');
      this.upsertProjection = this.db.prepare(
        `INSERT INTO projection (id, name, version, state_machine_version, event_schema_version, state, state_hash, last_applied_event_seq)
         VALUES (1, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, version = excluded.version,
           state_machine_version = excluded.state_machine_version, event_schema_version = excluded.event_schema_version,
           state = excluded.state, state_hash = excluded.state_hash, last_applied_event_seq = excluded.last_applied_event_seq`,
      );
      this.updateProjectionState = this.db.prepare('UPDATE projection SET state = ?, state_hash = ?, last_applied_event_seq = ? WHERE id = 1');
      this.commitTransaction = this.db.transaction((drafts: readonly ValidatedDraft[], beforeCommit: (() => void) | undefined) => this.writeBatch(drafts, beforeCommit));
      // A row already at this seq can only be stale or forged (snapshots are not
      // protected): the state computed here replaces it rather than failing the append.
      this.upsertSnapshot = this.db.prepare(
        `INSERT OR REPLACE INTO snapshots (seq, projection, projector_version, state_machine_version, event_schema_version, state, state_hash)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      );
      this.snapshotHashAt = this.db.prepare('SELECT state_hash FROM snapshots WHERE seq = ?');
      this.byKey = this.db.prepare('SELECT seq, envelope FROM events WHERE idempotency_key = ?');
      this.byEventId = this.db.prepare('SELECT seq, envelope FROM events WHERE event_id = ?');
      this.readPageStmt = this.db.prepare('SELECT envelope FROM events WHERE seq >= ? ORDER BY seq LIMIT ?');
      if (create) {
        this.state = projection.initial();
        this.appendInternal('SystemEvent.StoreOpened', {
          experiment_id: options.identity.experiment_id,
          subject_id: options.identity.subject_id,
          manifest_sha256: options.identity.manifest_sha256,
          store_format_version: STORE_FORMAT_VERSION,
          event_schema_version: EVENT_SCHEMA_VERSION,
          writer_version: WRITER_VERSION,
          projection: { name: projection.name, version: projection.version },
        });
      } else {
        this.loadHeadAndState();
        this.configureConnection();
      }
    } catch (error) {
      this.db.close();
      throw asStoreOpenError(path, error);
    }
  }

  static create(options: EventStoreOptions): EventStore {
    return new EventStore(options, true);
  }

  static open(options: EventStoreOptions): EventStore {
    return new EventStore(options, false);
  }

  head(): Head {
    return { seq: this.headSeq, event_hash: this.headHash };
  }

  /** The head at SystemEvent.StoreSealed, or null while the store takes appends. */
  sealed(): Head | null {
    return this.sealedHead === null ? null : { ...this.sealedHead };
  }

  /** Refuses with code `sealed` once the store is sealed; every path that writes events calls it first. */
  assertNotSealed(): void {
    if (this.sealedHead === null) return;
    throw new WriterError('sealed', `the store was sealed at seq ${this.sealedHead.seq}; nothing more may be appended`, { sealed_head: { ...this.sealedHead } });
  }

  /**
   * Appends SystemEvent.StoreSealed in one transaction, if the store is still at
   * `expectHead`; from then on every append is refused. Returns the head at the seal.
   */
  seal(expectHead: Head, reason: string, sealedBy: WriterRole): Head {
    this.assertNotSealed();
    this.checkExpectedHead(expectHead);
    const result = this.commitInternal('SystemEvent.StoreSealed', { reason, sealed_by: sealedBy });
    this.sealedHead = result.head;
    return this.head();
  }

  /** The connection's durability settings as SQLite reports them (not as we asked). */
  connectionSettings(): { journal_mode: unknown; synchronous: unknown; locking_mode: unknown; recursive_triggers: unknown } {
    return {
      journal_mode: this.db.pragma('journal_mode', { simple: true }),
      synchronous: this.db.pragma('synchronous', { simple: true }),
      locking_mode: this.db.pragma('locking_mode', { simple: true }),
      recursive_triggers: this.db.pragma('recursive_triggers', { simple: true }),
    };
  }

  /**
   * Clean shutdown: snapshots the head unless a snapshot of this very state is already
   * there, then leaves the file in rollback-journal mode and closes it. The file is closed
   * even when either fails.
   *
   * Why rollback mode: a read-only connection to a WAL-mode file creates a 0-byte -wal and a
   * 32 KiB -shm beside it and cannot remove them (measured on a sealed store), so every verify
   * or replay would change the run folder. Switching back checkpoints the WAL into the file
   * (which the close did anyway) and sets the header's two journal bytes; the next writer
   * switches to WAL again on open.
   */
  close(): void {
    if (!this.db.open) return;
    try {
      this.snapshotHead();
      const mode = this.db.pragma('journal_mode = DELETE', { simple: true });
      if (mode !== 'delete') throw new StoreOpenError('pragma', `${this.options.path} stayed in journal_mode ${String(mode)} at close: readers will create -wal/-shm beside it (every event is committed)`);
    } finally {
      this.db.close();
    }
  }

  private snapshotHead(): void {
    const stateText = canonicalJson(this.state);
    const stateHash = hashText(stateText);
    if (this.snapshotHashAt.get(this.headSeq)?.state_hash === stateHash) return;
    this.db.transaction(() => this.writeSnapshot(this.headSeq, stateText, stateHash)).immediate();
  }

  private writeSnapshot(seq: number, stateText: string, stateHash: HashString): void {
    const v = this.versions;
    this.upsertSnapshot.run(seq, v.projection, v.projector_version, v.state_machine_version, v.event_schema_version, stateText, stateHash);
    this.options.onSnapshotWrite?.(seq);
  }

  /**
   * Appends a batch atomically. Drafts must already be validated for schema and role.
   * An idempotency key that exists makes the batch a replay: every event in it must
   * match what was stored under its key, and nothing is written.
   */
  append(drafts: readonly ValidatedDraft[], expectHead: Head | null): AppendResult {
    // Even a retry that would write nothing is refused: after the seal, no append succeeds.
    this.assertNotSealed();
    const replay = this.findReplay(drafts);
    if (replay) return replay;
    if (expectHead) this.checkExpectedHead(expectHead);
    return this.commit(drafts, this.options.beforeAppendCommit);
  }

  private checkExpectedHead(expectHead: Head): void {
    if (expectHead.seq !== this.headSeq || expectHead.event_hash !== this.headHash) {
      throw new WriterError('head_conflict', `expected head seq ${expectHead.seq} but the store is at seq ${this.headSeq}`, { current_head: this.head() });
    }
  }

  /** Events only the writer itself produces (StoreOpened, AppendRejected); StoreSealed goes through seal(). */
  appendInternal<T extends Exclude<InternalEventType, typeof StoreSealed.type>>(eventType: T, payload: PayloadOf<T>): AppendResult {
    this.assertNotSealed();
    return this.commitInternal(eventType, payload);
  }

  private commitInternal<T extends InternalEventType>(eventType: T, payload: PayloadOf<T>): AppendResult {
    const definition = eventDefinition(eventType);
    if (!definition) throw new Error(`catalogue lacks ${eventType}`);
    definition.payload.parse(payload);
    const draft = draftOf(eventType, payload, { occurred_at: this.options.now(), actor: 'experiment', idempotency_key: null });
    return this.commit([{ ...draft, payloadText: canonicalJson(draft.payload) }]);
  }

  /** Raw envelope texts from `fromSeq`, at most `limit`, optionally only some types. */
  readPage(fromSeq: number, limit: number, types: readonly string[] | undefined): { texts: string[]; nextSeq: number } {
    let rows: { envelope: string }[];
    if (types && types.length > 0) {
      let stmt = this.readByTypeStmts.get(types.length);
      if (!stmt) {
        stmt = this.db.prepare(`SELECT envelope FROM events WHERE seq >= ? AND event_type IN (${types.map(() => '?').join(',')}) ORDER BY seq LIMIT ?`);
        this.readByTypeStmts.set(types.length, stmt);
      }
      rows = stmt.all(fromSeq, ...types, limit);
    } else {
      rows = this.readPageStmt.all(fromSeq, limit);
    }
    const texts = rows.map((r) => r.envelope);
    const nextSeq = texts.length === limit ? (JSON.parse(texts[texts.length - 1]!) as EventEnvelope).seq + 1 : this.headSeq + 1;
    return { texts, nextSeq: Math.max(nextSeq, fromSeq) };
  }

  private commit(drafts: readonly ValidatedDraft[], beforeCommit?: () => void): AppendResult {
    let done: CommittedBatch;
    try {
      done = this.commitTransaction.immediate(drafts, beforeCommit);
    } catch (error) {
      throw storeFullRefusalOf(this.options.path, error) ?? error;
    }
    this.headSeq = done.seq;
    this.headHash = done.previous;
    this.state = done.state;
    return { events: done.appended, head: this.head() };
  }

  /** The body of the append transaction: rows, projection, snapshot; the head moves only after the commit (commit()). */
  private writeBatch(drafts: readonly ValidatedDraft[], beforeCommit: (() => void) | undefined): CommittedBatch {
    const recordedAt = this.options.now();
    const projection = this.options.projection;
    const subjectId = this.options.identity.subject_id;
    let seq = this.headSeq;
    let previous = this.headHash;
    const appended: AppendResult['events'] = [];
    const envelopes: EventEnvelope[] = [];
    for (const draft of drafts) {
      seq += 1;
      // Evidence is looked up inside the transaction, so a FACT may cite an event
      // appended earlier in the same batch.
      if (eventIs(draft, 'MemoryEvent.ClaimRecorded')) this.checkFactEvidence(draft.payload, seq);
      const { envelope, text } = envelopeOfDraft(draft, { subjectId, seq, previousHash: previous, recordedAt });
      this.insertEvent.run(seq, envelope.event_id, envelope.event_type, envelope.idempotency_key, text);
      envelopes.push(envelope);
      appended.push({ seq, event_id: envelope.event_id, event_hash: envelope.event_hash, deduplicated: false });
      previous = envelope.event_hash;
    }
    let state: unknown;
    try {
      state = projection.applyAll ? projection.applyAll(this.state, envelopes) : envelopes.reduce((s, e) => projection.apply(s, e), this.state);
    } catch (error) {
      if (error instanceof ProjectionRefusal) {
        // The reason may quote ids from the payload: the caller gets it, the store's record does not.
        const index = error.seq - this.headSeq - 1;
        throw new WriterError('projection_rejected', error.message, { seq: error.seq, index, event_type: error.eventType }, {
          recordNote: `event ${index} of the batch (${error.eventType}) was refused by the ${projection.name} projection`,
        });
      }
      throw error;
    }
    const stateText = canonicalJson(state);
    const stateHash = hashText(stateText);
    this.writeProjection(stateText, stateHash, seq);
    if (crossesSnapshotBoundary(this.headSeq, seq, this.options.snapshotEvery)) this.writeSnapshot(seq, stateText, stateHash);
    beforeCommit?.();
    return { appended, state, seq, previous };
  }

  /** The projection row at `seq`: inserted with its versions by the store's first commit, after that only its state changes. */
  private writeProjection(stateText: string, stateHash: HashString, seq: number): void {
    if (this.headSeq > 0) {
      const { changes } = this.updateProjectionState.run(stateText, stateHash, seq);
      // Open refuses a store without the row, and nothing deletes it: a miss here is a bug, and the transaction rolls back.
      if (changes !== 1) throw new Error(`the projection row was not updated at seq ${seq} (${changes} rows changed)`);
      return;
    }
    const v = this.versions;
    this.upsertProjection.run(v.projection, v.projector_version, v.state_machine_version, v.event_schema_version, stateText, stateHash, seq);
  }

  /** A FACT must rest on eligible events already in the store (DESIGN §6.7, spec §17.2). */
  private checkFactEvidence(payload: PayloadOf<'MemoryEvent.ClaimRecorded'>, seq: number): void {
    if (payload.claim_type !== 'FACT') return;
    const index = seq - this.headSeq - 1;
    const refuse = (message: string, note: string, details: Record<string, unknown>): never => {
      throw new WriterError('evidence_rejected', message, { index, ...details }, { recordNote: `event ${index} of the batch: a FACT ${note}` });
    };
    const cited = payload.evidence_event_ids;
    if (cited.length === 0) refuse(`the FACT (event ${index} of the batch) cites no evidence`, 'cites no evidence', {});
    for (const eventId of cited) {
      const row = this.byEventId.get(eventId);
      if (!row) return refuse(`the FACT (event ${index} of the batch) cites event ${eventId}, which is not in the store`, 'cites an event that is not in the store', { event_id: eventId });
      const stored = JSON.parse(row.envelope) as EventEnvelope;
      const verdict = evidenceEligibility(stored);
      if (!verdict.eligible) {
        refuse(`the FACT (event ${index} of the batch) cites event ${eventId} (seq ${row.seq}): ${verdict.reason}`, `cites an event that is not evidence (${stored.event_type} at seq ${row.seq})`, { event_id: eventId });
      }
    }
  }

  private findReplay(drafts: readonly ValidatedDraft[]): AppendResult | null {
    const keys = drafts.map((d) => d.idempotency_key).filter((k): k is string => k !== null);
    if (keys.length === 0) return null;
    if (new Set(keys).size !== keys.length) {
      throw new WriterError('idempotency_conflict', 'the batch uses one idempotency_key for two events', null);
    }
    const found = drafts.map((d) => (d.idempotency_key === null ? undefined : this.byKey.get(d.idempotency_key)));
    if (found.every((row) => row === undefined)) return null;
    const events: AppendResult['events'] = [];
    drafts.forEach((draft, i) => {
      const row = found[i];
      if (!row) {
        throw new WriterError(
          'idempotency_conflict',
          `event ${i} of the batch is new while others repeat stored idempotency keys; a retried batch must repeat every event with its key`,
          { index: i },
        );
      }
      const stored = JSON.parse(row.envelope) as EventEnvelope;
      const differing: string[] = REPLAY_FIELDS.filter((field) => stored[field] !== draft[field]);
      if (stored.payload_hash !== hashText(draft.payloadText)) differing.push('payload');
      if (differing.length > 0) {
        throw new WriterError(
          'idempotency_conflict',
          `idempotency_key ${JSON.stringify(draft.idempotency_key)} was used at seq ${row.seq} for a different event (differs in ${differing.join(', ')})`,
          { index: i, idempotency_key: draft.idempotency_key, seq: row.seq, event_hash: stored.event_hash, differing },
          { recordNote: `an idempotency key was reused at seq ${row.seq} for a different event (differs in ${differing.join(', ')})` },
        );
      }
      events.push({ seq: row.seq, event_id: stored.event_id, event_hash: stored.event_hash, deduplicated: true });
    });
    return { events, head: this.head() };
  }

  private configureConnection(): void {
    // Exclusive locking (set in the constructor) before WAL: no shared-memory index, and no
    // other connection can read or write the file while the writer holds it.
    const mode = this.db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new StoreOpenError('pragma', `could not switch ${this.options.path} to WAL (journal_mode is ${String(mode)})`);
    this.db.pragma('synchronous = FULL');
    const sync = this.db.pragma('synchronous', { simple: true });
    if (sync !== 2) throw new StoreOpenError('pragma', `synchronous is ${String(sync)} after setting FULL (2)`);
    this.db.pragma('recursive_triggers = ON');
  }

  private checkIsStore(): void {
    const appId = this.db.pragma('application_id', { simple: true });
    const format = this.db.pragma('user_version', { simple: true });
    if (appId !== STORE_APPLICATION_ID) throw new StoreOpenError('not_a_store', `${this.options.path} is not an event store (application_id ${String(appId)})`);
    if (format !== STORE_FORMAT_VERSION) {
      throw new StoreOpenError('not_a_store', `${this.options.path} has store format ${String(format)}; this writer reads format ${STORE_FORMAT_VERSION}`);
    }
  }

  private loadHeadAndState(): void {
    const first = this.db.prepare('SELECT envelope FROM events WHERE seq = 1').get() as { envelope: string } | undefined;
    const last = this.db.prepare('SELECT seq, envelope FROM events ORDER BY seq DESC LIMIT 1').get() as StoredRow | undefined;
    if (!first || !last) throw new StoreOpenError('corrupt', `${this.options.path} holds no StoreOpened event`);
    const opened = JSON.parse(first.envelope) as EventEnvelope;
    const { identity } = this.options;
    const p = opened.payload;
    if (!eventIs(opened, StoreOpened.type) || p.experiment_id !== identity.experiment_id || p.subject_id !== identity.subject_id || p.manifest_sha256 !== identity.manifest_sha256) {
      throw new StoreOpenError('identity_mismatch', `${this.options.path} belongs to experiment ${String(p.experiment_id)} / subject ${String(p.subject_id)} / manifest ${String(p.manifest_sha256)}, not to the one this writer was started for`);
    }
    const tail = JSON.parse(last.envelope) as EventEnvelope;
    if (tail.seq !== last.seq || computeEventHash(tail) !== tail.event_hash) {
      throw new StoreOpenError('corrupt', `the last event (seq ${last.seq}) does not hash to its event_hash; run npm run verify on this store`);
    }
    const row = this.db
      .prepare('SELECT name, version, state_machine_version, event_schema_version, state, state_hash, last_applied_event_seq FROM projection WHERE id = 1')
      .get() as
      | { name: string; version: string; state_machine_version: string; event_schema_version: string; state: string; state_hash: string; last_applied_event_seq: number }
      | undefined;
    if (!row) throw new StoreOpenError('projection_mismatch', `${this.options.path} has no stored projection; rebuild it by replay (npm run replay) instead of starting from nothing`);
    const recorded: ProjectionVersions = {
      projection: row.name,
      projector_version: row.version,
      state_machine_version: row.state_machine_version,
      event_schema_version: row.event_schema_version,
    };
    const differences = versionDifferences('stored projection', recorded, this.versions);
    if (differences.length > 0) {
      // Continuing would fold new events into a state computed under other versions (spec §12.6).
      throw new StoreOpenError(
        'projection_mismatch',
        `the stored projection is ${formatVersions(recorded)}, the writer runs ${formatVersions(this.versions)} (${differences.map(describeDifference).join('; ')}); rebuild it by replay instead of mixing versions`,
      );
    }
    if (row.last_applied_event_seq !== last.seq || hashText(row.state) !== row.state_hash) {
      throw new StoreOpenError('corrupt', `the projection (last_applied_event_seq ${row.last_applied_event_seq}) is out of step with the events (head ${last.seq}) or its hash does not match`);
    }
    // The trigger keeps anything from following the seal; a store where something does
    // was edited outside the writer, and appending to it would bury that.
    const seals = this.db.prepare('SELECT seq FROM events WHERE event_type = ? ORDER BY seq LIMIT 2').all(StoreSealed.type) as { seq: number }[];
    if (seals.length > 1 || (seals.length === 1 && seals[0]!.seq !== last.seq)) {
      throw new StoreOpenError('corrupt', `SystemEvent.StoreSealed at seq ${seals.map((r) => r.seq).join(' and ')} is not the one last event (head ${last.seq}); run npm run verify on this store`);
    }
    this.headSeq = last.seq;
    this.headHash = tail.event_hash;
    this.sealedHead = seals.length === 1 ? { seq: last.seq, event_hash: tail.event_hash } : null;
    this.state = JSON.parse(row.state);
  }
}
