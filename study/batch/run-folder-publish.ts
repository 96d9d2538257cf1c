// Publishing a run folder from node-local scratch to the study folder (issue 18 item 2), which
// may be on shared storage: only a closed store is copied (its writer ended and left it in
// rollback-journal mode: no -wal or -shm beside it), the copy is made under a dot-name, every
// file fsynced, then renamed into place — so a reader (the merge, --status, a requeued task)
// sees a whole folder or none. A sealed instance goes to instances/<G>-r<k> once and is never
// replaced; a stopped one to stopped/<G>-r<k>, replaced by each later stop of the same instance.
import { randomBytes } from 'node:crypto';
import { closeSync, cpSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { EXIT_CODES } from '../../foundation/exit-codes.js';
import { fsyncFolder } from '../../foundation/publish-file.js';
import { CodedErrorOf } from '../../foundation/typed-error.js';
import { RUN_FILES } from '../../schema/run-files.js';

/** The names a publish in progress (or one a crash cut short) uses: never an instance's name. */
export const PUBLISHING_PREFIX = '.publishing-';
const REPLACED_PREFIX = '.replaced-';
/** A run folder holds a few dozen files; a bound on the walk that fsyncs them. */
const MAX_PUBLISHED_ENTRIES = 100_000;

export class PublishError extends CodedErrorOf<'store_open' | 'already_published'>('publish', EXIT_CODES.failed) {
  override readonly name = 'PublishError';
}

function fsyncTree(dir: string): number {
  let count = 0;
  const walk = (at: string): void => {
    for (const name of readdirSync(at)) {
      count += 1;
      if (count > MAX_PUBLISHED_ENTRIES) throw new PublishError('store_open', `${dir} holds more than ${MAX_PUBLISHED_ENTRIES} entries: not a run folder to publish`);
      const full = path.join(at, name);
      const stat = lstatSync(full);
      if (stat.isDirectory()) walk(full);
      else if (stat.isFile()) {
        const fd = openSync(full, 'r');
        try {
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
      }
    }
    fsyncFolder(at);
  };
  walk(dir);
  return count;
}

/** A store with a -wal or -shm beside it is open (or was not closed cleanly): not a folder to copy. */
function checkClosed(runDir: string): void {
  for (const side of ['-wal', '-shm']) {
    if (existsSync(path.join(runDir, `${RUN_FILES.store}${side}`))) throw new PublishError('store_open', `${path.join(runDir, RUN_FILES.store)}${side} exists: the store is open or was not closed cleanly, so a copy of it could lack committed events; it was not published (resume the instance to close it)`);
  }
}

function copyUnderDotName(runDir: string, intoDir: string, name: string): string {
  mkdirSync(intoDir, { recursive: true });
  const temp = path.join(intoDir, `${PUBLISHING_PREFIX}${name}-${randomBytes(4).toString('hex')}`);
  cpSync(runDir, temp, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true, preserveTimestamps: true });
  fsyncTree(temp);
  return temp;
}

/** Publishes a sealed run folder as intoDir/name; refused when that name exists (a sealed instance is never replaced). */
export function publishSealed(runDir: string, intoDir: string, name: string): string {
  checkClosed(runDir);
  const target = path.join(intoDir, name);
  if (existsSync(target)) throw new PublishError('already_published', `${target} exists: instance ${name} was published already (by another task of the same index?); this run stays in ${runDir}, and nothing published was touched`);
  const temp = copyUnderDotName(runDir, intoDir, name);
  try {
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw new PublishError('already_published', `cannot rename the copy into ${target} (${error instanceof Error ? error.message : String(error)}): published meanwhile by another task?; this run stays in ${runDir}`);
  }
  fsyncFolder(intoDir);
  return target;
}

/** Publishes a stopped run folder as intoDir/name, replacing an earlier stop of the same instance. */
export function publishStopped(runDir: string, intoDir: string, name: string): string {
  checkClosed(runDir);
  const target = path.join(intoDir, name);
  const temp = copyUnderDotName(runDir, intoDir, name);
  const replaced = path.join(intoDir, `${REPLACED_PREFIX}${name}-${randomBytes(4).toString('hex')}`);
  const hadOne = existsSync(target);
  // Between these two renames no stopped copy has the name; a crash there leaves the older one
  // under REPLACED_PREFIX, and the next task starts from this node's scratch or anew (never
  // from half a folder).
  if (hadOne) renameSync(target, replaced);
  renameSync(temp, target);
  fsyncFolder(intoDir);
  if (hadOne) rmSync(replaced, { recursive: true, force: true });
  return target;
}

/** Copies a published stopped folder to scratch (a requeue on any node resumes from it). */
export function copyToScratch(publishedDir: string, runDir: string): void {
  mkdirSync(path.dirname(runDir), { recursive: true });
  cpSync(publishedDir, runDir, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true, preserveTimestamps: true });
}
