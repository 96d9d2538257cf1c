// Publishing a file that must never be replaced (a key, a lock, a scorecard, an unblinding):
// written whole to a temporary file (`wx`, its final mode, fsync), then linked to its name.
// link(2), unlike rename(2), fails when the name exists: of two racing writers exactly one
// publishes and the other is told so; readers never see a partly written file.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

/** Publishes `bytes` as `file` (its folder must exist); false, writing nothing, when `file` already exists. */
export function publishFile(file: string, bytes: string | Uint8Array, mode: number): boolean {
  const temp = `${file}.tmp-${process.pid}-${randomBytes(8).toString('hex')}`;
  const fd = openSync(temp, 'wx', mode);
  try {
    writeSync(fd, typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, file);
    fsyncFolder(path.dirname(file));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temp);
  }
}

/** Makes a name added to or removed from `dir` durable. */
export function fsyncFolder(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
