// A store's owner and mode across a manual repair (controller/operator-resolution.ts): the caller
// must be able to write the store and its folder, and what the repair's writer leaves behind keeps
// the store's owner, group and mode — in a separate-uids run the next writer runs as that uid.
import { accessSync, chmodSync, chownSync, constants, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { OperatorResolutionRefusal } from './operator-resolution-refusal.js';

export interface FileOwnership {
  readonly uid: number;
  readonly gid: number;
  /** Permission bits only. */
  readonly mode: number;
}

export function ownershipOf(file: string): FileOwnership {
  const s = statSync(file);
  return { uid: s.uid, gid: s.gid, mode: s.mode & 0o7777 };
}

/**
 * In a separate-uids run events.db belongs to the writer's uid (mode 0600), and a later
 * --resume runs the writer under that uid again: it must still be able to open the store and
 * its -wal/-shm. SQLite run as root already gives the files it creates the database's owner;
 * this puts back anything that still differs (a root-owned sidecar would lock that writer out)
 * and says so.
 */
export function keepOwnership(storeFile: string, before: FileOwnership, notes: string[]): void {
  for (const file of [storeFile, `${storeFile}-wal`, `${storeFile}-shm`]) {
    if (!existsSync(file)) continue;
    const now = ownershipOf(file);
    if (now.uid !== before.uid || now.gid !== before.gid) {
      chownSync(file, before.uid, before.gid);
      notes.push(`${path.basename(file)} was owned by ${now.uid}:${now.gid} after the repair; given back to ${before.uid}:${before.gid}, the store's owner`);
    }
    if (now.mode !== before.mode) {
      chmodSync(file, before.mode);
      notes.push(`${path.basename(file)} had mode 0${now.mode.toString(8)} after the repair; set back to the store's 0${before.mode.toString(8)}`);
    }
  }
}

export function checkWritable(storeFile: string, owner: FileOwnership): void {
  const me = process.getuid?.();
  try {
    accessSync(storeFile, constants.R_OK | constants.W_OK);
    // SQLite writes -wal (and the snapshot's pages) beside the store.
    accessSync(path.dirname(storeFile), constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new OperatorResolutionRefusal(
      'permission',
      `uid ${me ?? '?'} cannot write ${storeFile} or its folder (${(error as NodeJS.ErrnoException).code ?? String(error)}); the store belongs to uid ${owner.uid}: run the repair as that uid, or as root (as the controller of a separate-uids run is)`,
    );
  }
}
