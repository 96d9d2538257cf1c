// What "byte-identical" compares (issue 16: a refused command leaves the folder as it was): every
// entry under a root — its relative name, kind, mode, and a file's sha256 or a link's target —
// recursively, symlinks not followed. Two states compare with toEqual; a file created, changed
// or removed anywhere (SQLite's -wal/-shm side files included) shows as a difference.
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/** null when `root` does not exist (so "still not there" compares too). */
export function folderState(root: string): Map<string, string> | null {
  if (!existsSync(root)) return null;
  const state = new Map<string, string>();
  const walk = (rel: string): void => {
    const full = path.join(root, rel);
    const st = lstatSync(full);
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) state.set(rel, `link ${readlinkSync(full)}`);
    else if (st.isDirectory()) {
      state.set(rel, `dir ${mode}`);
      for (const name of readdirSync(full).sort()) walk(path.join(rel, name));
    } else state.set(rel, `file ${mode} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`);
  };
  walk('.');
  return state;
}
