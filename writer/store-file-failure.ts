// What is wrong with a store's file, said once for every command (issue 16): what SQLite (a
// better-sqlite3 SqliteError's `code`) or the file system (an errno) reports about events.db,
// classified into one vocabulary of problems, each with a message that names the file, says
// what state it is in and what to do. Each room wraps a failure in its own typed error (the
// store reader's StoreReadError, the writer's StoreOpenError, the repair's refusal, a verify
// failure); the stable code a script reads is `store_<problem>` wherever it surfaces.
// Also the checks made before an open that could write: SQLite turns an empty file into a
// database and may rewrite a header, so a file that is not already a SQLite database is
// refused by looking at its bytes, and no connection is ever opened on it.
import type Database from 'better-sqlite3';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';

export const STORE_FILE_PROBLEMS = ['missing', 'empty', 'damaged', 'wal_foreign', 'locked', 'unreadable', 'read_only', 'full', 'io_error'] as const;
/**
 * missing: no file there · empty: 0 bytes · damaged: not an intact SQLite database ·
 * wal_foreign: the events.db-wal beside it is not its own (another store's, or damaged), while
 * the file alone is intact (writer/wal-ownership.ts) ·
 * locked: another process (a writer) holds it · unreadable: not a file, or this uid may not
 * read it · read_only: this uid (or the file system) may not write it · full: the disk is full ·
 * io_error: the disk or file system failed a read or write.
 */
export type StoreFileProblem = (typeof STORE_FILE_PROBLEMS)[number];

/** The code a script reads for a problem, whichever command met it. */
export type StoreFileCode = `store_${StoreFileProblem}`;

export function storeFileCode(problem: StoreFileProblem): StoreFileCode {
  return `store_${problem}`;
}

export interface StoreFileFailure {
  readonly problem: StoreFileProblem;
  readonly file: string;
  /** What SQLite or the file system said, as said (code and text). */
  readonly detail: string;
  /** For a person: what is wrong, what state things are in, what to do. */
  readonly message: string;
}

/** Whether the failure happened while only reading (nothing can have changed) or while a writer opened or wrote the file. */
export type StoreAccess = 'read' | 'write';

/** The 16 bytes every SQLite database file begins with (sqlite.org/fileformat.html §1.3). */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');
/** quick_check lines quoted in a message: enough to say where, not a page of them. */
export const QUICK_CHECK_LINES_QUOTED = 3;
/** quick_check stops after this many problems: one is enough to refuse, a few say how bad. */
const QUICK_CHECK_MAX_PROBLEMS = 20;

function uidText(): string {
  return `uid ${process.getuid?.() ?? 'unknown'}`;
}

function messageFor(problem: StoreFileProblem, file: string, detail: string, access: StoreAccess): string {
  const dir = path.dirname(file);
  const unchanged = 'Nothing was changed';
  switch (problem) {
    case 'missing':
      return `${file} does not exist (${detail}). ${unchanged}; give the run folder that holds its ${path.basename(file)}`;
    case 'empty':
      return `${file} is empty (0 bytes): it is not an event store (its writer never wrote a first page, or the file was truncated or replaced). ${unchanged}: it is still 0 bytes. The run cannot be continued from it — restore its folder from a copy, or run it again`;
    case 'damaged':
      return `${file} is damaged: it is not an intact SQLite database (${detail}). ${unchanged}. npm run verify -- ${dir} lists what can still be checked; the run cannot be continued, repaired or trusted from this file — restore its folder from a copy, or run it again`;
    case 'wal_foreign':
      return `${file}-wal does not belong to ${file}: ${detail}. It is the write-ahead log of another database (copied in, or left from another store) or a damaged one: SQLite replays any WAL beside a file over it, and a writer's open would write its pages into ${path.basename(file)} for good. ${unchanged} (the check read a copy). Put back the store's own ${path.basename(file)}-wal if you have it (it holds every event committed after the file's last one); or, to continue from the file alone, move the stray one out of the folder (the events only the store's own WAL held are then lost; npm run verify -- ${dir} says what remains). Then run this again`;
    case 'locked':
      // "is locked: a writer is still running on it" is what scripts and earlier docs match.
      return `${file} is locked: a writer is still running on it (an instance running or resuming, or a repair; ${detail}). That is safe: ${unchanged.toLowerCase()}. Wait for it to finish, or stop it (Ctrl-C in its terminal records an emergency stop), then run this again — or work on a copy of the run folder`;
    case 'unreadable':
      return `${file} cannot be read by ${uidText()} (${detail}): check that it is a file and who may read it (a separate-uids run's store belongs to its writer's uid: read it as root or as that uid). ${unchanged}`;
    case 'read_only':
      // A hot journal: a writer killed inside a transaction on page 1 (its journal-mode switch at open or close). Only a read-write open rolls it back.
      if (detail.includes('READONLY_ROLLBACK')) return `${file} has a hot journal beside it (${path.basename(file)}-journal): its writer was stopped inside a transaction (${detail}), and a read-only open may not roll it back. ${unchanged}; npm run experiment -- --resume ${dir} opens it read-write, which rolls the unfinished transaction back (every acknowledged event is kept), after which it reads normally`;
      return `${file} or its folder may not be written by ${uidText()} (${detail}): a writer cannot open it to append. ${unchanged}; run as the store's owner (or root), or on a writable copy`;
    case 'full':
      return `the disk holding ${file} is full (${detail}): SQLite could not write. Every event acknowledged before is committed and intact; free space, then run this again`;
    case 'io_error':
      return access === 'read'
        ? `the file system failed a read of ${file} (${detail}): the disk may be failing. ${unchanged}; copy the run folder to a healthy disk and check the copy with npm run verify`
        : `the file system failed a write of ${file} (${detail}): the disk may be failing. Every event acknowledged before is committed; copy the run folder to a healthy disk and check the copy with npm run verify`;
  }
}

export function storeFileFailure(problem: StoreFileProblem, file: string, detail: string, access: StoreAccess = 'read'): StoreFileFailure {
  return { problem, file, detail, message: messageFor(problem, file, detail, access) };
}

/** A SQLite result code's problem (extended codes share their primary's: SQLITE_IOERR_SHORT_READ is SQLITE_IOERR), or null when it names none. */
function problemOfSqliteCode(code: string): StoreFileProblem | null {
  // The one extended code with a meaning of its own here: the -shm file could not be grown, which
  // SQLite documents as "probably because disk space is insufficient" — a full disk, not a failing
  // one (met by a read of a finished store on a full disk, issue 20).
  if (code === 'SQLITE_IOERR_SHMSIZE') return 'full';
  const primary = /^SQLITE_[A-Z]+/.exec(code)?.[0] ?? code;
  switch (primary) {
    case 'SQLITE_CORRUPT':
    case 'SQLITE_NOTADB':
    // SQLITE_FORMAT: "not used" by SQLite today; kept so a future meaning lands here, not as a bug.
    case 'SQLITE_FORMAT':
      return 'damaged';
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return 'locked';
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_PERM':
    case 'SQLITE_AUTH':
      return 'unreadable';
    case 'SQLITE_READONLY':
      return 'read_only';
    case 'SQLITE_FULL':
      return 'full';
    case 'SQLITE_IOERR':
      return 'io_error';
    default:
      return null;
  }
}

function problemOfErrno(code: string): StoreFileProblem | null {
  switch (code) {
    case 'ENOENT':
      return 'missing';
    case 'EACCES':
    case 'EPERM':
    case 'EISDIR':
    case 'ENOTDIR':
    case 'ELOOP':
      return 'unreadable';
    case 'EROFS':
      return 'read_only';
    case 'ENOSPC':
    case 'EDQUOT':
      return 'full';
    case 'EIO':
      return 'io_error';
    default:
      return null;
  }
}

/** A better-sqlite3 SqliteError (by shape: a copy of the module loaded twice is still recognised). */
function sqliteCodeOf(error: unknown): string | null {
  if (!(error instanceof Error) || error.name !== 'SqliteError') return null;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : null;
}

/**
 * What `error` says about `file`, or null when it is neither a SQLite nor a file-system failure
 * this vocabulary names (a bug, or another room's error: the caller rethrows it).
 */
export function classifyStoreError(file: string, error: unknown, access: StoreAccess = 'read'): StoreFileFailure | null {
  const sqlite = sqliteCodeOf(error);
  if (sqlite !== null) {
    const problem = problemOfSqliteCode(sqlite);
    return problem === null ? null : storeFileFailure(problem, file, `SQLite ${sqlite}: ${(error as Error).message}`, access);
  }
  const errno = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  if (typeof errno !== 'string') return null;
  const problem = problemOfErrno(errno);
  return problem === null ? null : storeFileFailure(problem, file, `${errno}: ${(error as Error).message}`, access);
}

/**
 * Looks at `file` without SQLite: missing, not a regular file, unreadable, empty, or not
 * beginning with SQLite's header. Null when an open may go ahead. Run before every open that
 * could write (the writer's; a read-only open never writes, but gets the same answers).
 */
export function storeFileProblemBeforeOpen(file: string): StoreFileFailure | null {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return storeFileFailure('unreadable', file, stat.isDirectory() ? 'it is a folder' : 'it is not a regular file');
    size = stat.size;
  } catch (error) {
    return classifyStoreError(file, error) ?? storeFileFailure('unreadable', file, error instanceof Error ? error.message : String(error));
  }
  if (size === 0) return storeFileFailure('empty', file, '0 bytes');
  const head = Buffer.alloc(SQLITE_HEADER.length);
  let read: number;
  try {
    const fd = openSync(file, 'r');
    try {
      read = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    return classifyStoreError(file, error) ?? storeFileFailure('unreadable', file, error instanceof Error ? error.message : String(error));
  }
  if (read < SQLITE_HEADER.length || !head.equals(SQLITE_HEADER)) {
    return storeFileFailure('damaged', file, `${size} bytes that do not begin with SQLite's header "SQLite format 3\\0"`);
  }
  return null;
}

/**
 * Whether the file's header says WAL mode (bytes 18 and 19, the write and read format
 * versions, are 2; 1 is a rollback journal): only a WAL-mode file makes a read-only connection
 * create -wal/-shm beside it. Null when the header cannot be read.
 */
export function isWalModeOnDisk(file: string): boolean | null {
  const bytes = Buffer.alloc(2);
  try {
    const fd = openSync(file, 'r');
    try {
      if (readSync(fd, bytes, 0, 2, 18) !== 2) return null;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  return bytes[0] === 2 || bytes[1] === 2;
}

/**
 * PRAGMA quick_check: reads every page of the file and checks the b-trees (not the indexes'
 * contents against their tables: that is integrity_check, slower). Measured 137–154 ms on the
 * 113 MB, 100,000-event replay-bench store with a warm cache, about 2% of verifying it (6.6 s).
 * Null when SQLite answers "ok"; a SQLite error while checking is classified too (a page so
 * damaged the check itself fails: SQLITE_CORRUPT).
 */
export function quickCheckFailure(db: Database.Database, file: string): StoreFileFailure | null {
  let lines: string[];
  try {
    lines = (db.pragma(`quick_check(${QUICK_CHECK_MAX_PROBLEMS})`) as { quick_check: string }[]).map((row) => row.quick_check);
  } catch (error) {
    const failure = classifyStoreError(file, error);
    if (failure) return failure;
    throw error;
  }
  if (lines.length === 1 && lines[0] === 'ok') return null;
  const problems = lines.flatMap((l) => l.split('\n')).filter((l) => l.trim() !== '' && !l.startsWith('*** in database'));
  const quoted = problems.slice(0, QUICK_CHECK_LINES_QUOTED).join('; ');
  // quick_check stops at QUICK_CHECK_MAX_PROBLEMS: a count that reached it is a lower bound, and says so.
  const stopped = lines.length >= QUICK_CHECK_MAX_PROBLEMS ? ` (it stops after ${QUICK_CHECK_MAX_PROBLEMS})` : '';
  const more = problems.length > QUICK_CHECK_LINES_QUOTED ? `; ${problems.length - QUICK_CHECK_LINES_QUOTED} more${stopped}` : '';
  return storeFileFailure('damaged', file, `SQLite quick_check: ${quoted}${more}`);
}
