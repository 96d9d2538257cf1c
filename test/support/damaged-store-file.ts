// A store file damaged the way a disk or a stray write damages one (issue 16): seeded random
// bytes over a page in the middle of events.db, below SQLite, not an edit of a row. The page is
// a leaf of the events table (found with SQLite's dbstat table), so every command that reads
// the events meets it — or, asked for, of an index no command reads in seq order, which only a
// page-by-page check (quick_check) finds. The same seed writes the same bytes.
import Database from 'better-sqlite3';
import { closeSync, openSync, writeSync } from 'node:fs';
import seedrandom from 'seedrandom';

export interface Damage {
  readonly pageno: number;
  /** Byte offset of the page in the file, and how many bytes were overwritten. */
  readonly offset: number;
  readonly bytes: number;
}

/** Bytes from the seed: the same every run. */
export function seededBytes(seed: string, length: number): Buffer {
  const random = seedrandom(seed);
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i += 1) bytes[i] = Math.floor(random() * 256);
  return bytes;
}

/** Overwrites the leaf page of `btree` (a table or index of events.db) nearest the middle of `file` with bytes from `seed`. */
export function damageMiddleOfStore(file: string, options: { seed?: string; btree?: 'events' | 'events_by_type' } = {}): Damage {
  const seed = options.seed ?? 'issue-16-damaged-store';
  const btree = options.btree ?? 'events';
  const db = new Database(file, { readonly: true, fileMustExist: true });
  let pages: number[];
  let pageSize: number;
  let pageCount: number;
  try {
    pageSize = db.pragma('page_size', { simple: true }) as number;
    pageCount = db.pragma('page_count', { simple: true }) as number;
    pages = (db.prepare("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno").all(btree) as { pageno: number }[]).map((r) => r.pageno);
  } finally {
    db.close();
  }
  if (pages.length < 3) throw new Error(`test setup: ${file} has ${pages.length} ${btree} leaf page(s); a damaged middle needs a store of several`);
  const middle = pageCount / 2;
  const pageno = pages.reduce((best, p) => (Math.abs(p - middle) < Math.abs(best - middle) ? p : best));
  const offset = (pageno - 1) * pageSize;
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, seededBytes(seed, pageSize), 0, pageSize, offset);
  } finally {
    closeSync(fd);
  }
  return { pageno, offset, bytes: pageSize };
}
