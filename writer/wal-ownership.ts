// Whether the events.db-wal beside a store is that store's own (issue 20 item 5). SQLite keeps
// nothing in a WAL that names its database: any valid WAL of the same page size beside any
// database file is replayed over it on the next open (measured with the fault harness: the WAL of
// another store made events.db read as damaged, "restore it from a copy", although the file
// itself was intact; a WAL holding a whole other store reads as that store). A read-only open
// only shows the mixture; a writer's read-write open checkpoints it into events.db on close —
// even the close of an open it refused — and the store's own pages are then gone for good.
//
// So before anything opens a store with a WAL beside it for a verdict or a write, this compares
// the store as SQLite would show it (file + WAL) with the file alone (read from a copy in a
// temporary folder, so the run folder is never touched): a WAL only ever carries a store on, so
// the file alone must be an intact store whose first event and last event are the same in the
// view with the WAL, and every event the WAL adds must chain onto them. Anything else is a WAL
// that does not belong, said with what the file alone still holds.
//
// Limits: when the file alone is not an intact store (a checkpoint cut short, or a store never
// checkpointed), nothing can be compared and the caller's own verdict stands (damaged, or an
// identity check against what the store should be); rows the WAL rewrote below the file's last
// event are not compared one by one (npm run verify walks the whole chain).
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { computeEventHash } from '../schema/envelope-hash.js';
import type { EventEnvelope } from '../schema/envelope.js';
import { quickCheckFailure, storeFileFailure, type StoreFileFailure } from './store-file-failure.js';
import { STORE_APPLICATION_ID } from './store-schema.js';

/** A WAL file begins with a 32-byte header; one that holds no more has no frames to replay (sqlite.org/fileformat.html §4.1). */
const WAL_HEADER_BYTES = 32;

export function walOf(file: string): string {
  return `${file}-wal`;
}

/** Whether a WAL with frames lies beside `file` (SQLite would replay it on open). */
export function hasWalFrames(file: string): boolean {
  try {
    return statSync(walOf(file)).size > WAL_HEADER_BYTES;
  } catch {
    return false;
  }
}

interface ChainEnd {
  readonly seq: number;
  readonly hash: string;
}

function rowHash(row: { seq: number; envelope: string } | undefined): ChainEnd | null {
  if (row === undefined) return null;
  const hash = (JSON.parse(row.envelope) as { event_hash?: unknown }).event_hash;
  return { seq: row.seq, hash: typeof hash === 'string' ? hash : '(no event_hash)' };
}

interface StoreEnds {
  readonly first: ChainEnd | null;
  readonly last: ChainEnd | null;
}

function endsOf(db: Database.Database): StoreEnds {
  const first = db.prepare('SELECT seq, envelope FROM events WHERE seq = 1').get() as { seq: number; envelope: string } | undefined;
  const last = db.prepare('SELECT seq, envelope FROM events ORDER BY seq DESC LIMIT 1').get() as { seq: number; envelope: string } | undefined;
  return { first: rowHash(first), last: rowHash(last) };
}

/** The file read alone, from a copy (no WAL beside it there): its chain ends if it is an intact store, else null. */
function readAlone(file: string): StoreEnds | null {
  const dir = mkdtempSync(path.join(tmpdir(), 'ds-wal-check-'));
  try {
    const copy = path.join(dir, path.basename(file));
    copyFileSync(file, copy);
    // Read-write on a scratch copy: a WAL-mode file may need its side files created, here and not in the run folder.
    const db = new Database(copy, { fileMustExist: true, timeout: 500 });
    try {
      if (db.pragma('application_id', { simple: true }) !== STORE_APPLICATION_ID) return null;
      if (quickCheckFailure(db, copy) !== null) return null;
      return endsOf(db);
    } finally {
      db.close();
    }
  } catch {
    // Not readable alone (a checkpoint cut short leaves a mixture of the store's own pages): nothing to compare with.
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function failureOf(file: string, reason: string, alone: StoreEnds): StoreFileFailure {
  const upTo = alone.last === null ? 'holds no event' : `is an intact store ending at seq ${alone.last.seq}`;
  return storeFileFailure('wal_foreign', file, `${reason}; ${path.basename(file)} alone ${upTo}`);
}

/**
 * Why the WAL beside `file` is not its own, or null: no WAL, it carries the store on, or the file
 * alone cannot be compared (see the limits above). `view` is a connection to `file` with the WAL
 * in view (read-only: the caller's), or the failure met opening or checking one.
 */
export function foreignWalFailure(file: string, view: Database.Database | StoreFileFailure): StoreFileFailure | null {
  if (!hasWalFrames(file)) return null;
  const alone = readAlone(file);
  if (alone === null) return null;
  if (!(view instanceof Database)) {
    if (view.problem !== 'damaged') return null;
    return failureOf(file, `with ${path.basename(walOf(file))} replayed over it, it reads as damaged (${view.detail}), but the file alone is intact`, alone);
  }
  const damage = quickCheckFailure(view, file);
  if (damage !== null) return failureOf(file, `with ${path.basename(walOf(file))} replayed over it, it reads as damaged (${damage.detail}), but the file alone is intact`, alone);
  let combined: StoreEnds;
  try {
    combined = endsOf(view);
  } catch (error) {
    return failureOf(file, `with ${path.basename(walOf(file))} replayed over it, its events cannot be read (${error instanceof Error ? error.message : String(error)})`, alone);
  }
  if (alone.first !== null && combined.first?.hash !== alone.first.hash) {
    return failureOf(file, `with ${path.basename(walOf(file))} replayed over it, its first event (StoreOpened) is ${combined.first?.hash ?? 'gone'}, not the file's own ${alone.first.hash}: the WAL is another store's`, alone);
  }
  if (alone.last === null) return null;
  const at = view.prepare('SELECT seq, envelope FROM events WHERE seq = ?').get(alone.last.seq) as { seq: number; envelope: string } | undefined;
  const seen = rowHash(at);
  if (seen?.hash !== alone.last.hash) {
    return failureOf(file, `with ${path.basename(walOf(file))} replayed over it, the event at seq ${alone.last.seq} is ${seen?.hash ?? 'gone'}, not the file's own ${alone.last.hash}: a WAL only adds events, this one replaces them`, alone);
  }
  // What the WAL adds must chain onto the file's last event (bounded by the rows it adds).
  let previous = alone.last;
  for (const row of view.prepare('SELECT seq, envelope FROM events WHERE seq > ? ORDER BY seq').iterate(alone.last.seq) as IterableIterator<{ seq: number; envelope: string }>) {
    let envelope: EventEnvelope;
    try {
      envelope = JSON.parse(row.envelope) as EventEnvelope;
    } catch {
      return failureOf(file, `the event the WAL adds at seq ${row.seq} is not JSON`, alone);
    }
    if (row.seq !== previous.seq + 1 || envelope.previous_event_hash !== previous.hash || computeEventHash(envelope) !== envelope.event_hash) {
      return failureOf(file, `the event the WAL adds at seq ${row.seq} does not chain onto seq ${previous.seq} of the file (or does not hash to its event_hash): the WAL is another store's`, alone);
    }
    previous = { seq: row.seq, hash: envelope.event_hash };
  }
  return null;
}
