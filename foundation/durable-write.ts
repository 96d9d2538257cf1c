// Replacing a file in the subject's workspace so that a reader sees the old bytes or the new
// ones, never half, and the new ones survive a power cut: written whole to a temporary name
// beside the target (its final mode, every byte, fsync), renamed over it, the folder fsynced.
// The one home of that step, for the runtime's files tool and the controller's world changes
// (controller/run-signatures.ts appends heads its own way; foundation/publish-file.ts publishes
// files that must never be replaced). On any failure the temporary file is removed: the target
// keeps its old bytes and no half file is left beside it (a full disk included).

import { closeSync, constants, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fsyncFolder } from './publish-file.js';
import { InternalError } from './typed-error.js';

/** Writes all of `bytes` to `fd` and fsyncs it; throws the file system's error (ENOSPC …) when it refuses. */
export function writeAllAndSync(fd: number, bytes: Uint8Array): void {
  let written = 0;
  // One writeSync may write less than asked (a disk with less room takes what fits). Bounded:
  // each pass writes at least one byte (writeSync throws rather than return 0 on a full disk).
  for (let pass = 0; written < bytes.length && pass <= bytes.length; pass += 1) written += writeSync(fd, bytes, written, bytes.length - written);
  if (written !== bytes.length) throw new Error(`bug: ${written} of ${bytes.length} bytes written with no error from the file system`);
  fsyncSync(fd);
}

export interface ReplaceFileOptions {
  /** The temporary name, in the target's folder (a rename across folders is not atomic). */
  readonly temp: string;
  readonly mode: number;
  /**
   * Open the temporary name with O_EXCL | O_NOFOLLOW: never follow a symlink planted there, never
   * write into a file someone else holds open (the caller clears a stale one of its own first).
   */
  readonly exclusive: boolean;
  /** Runs on the written temporary file before the rename (the controller gives it to the subject's uid). */
  readonly beforeRename?: (temp: string) => void;
}

/** Which step failed, with the file system's errno (`errno`) and error (`cause`); the temporary file is gone. Callers map it to their own failures. */
export class FileReplaceError extends InternalError {
  override readonly name = 'FileReplaceError';
  constructor(
    readonly step: 'write' | 'rename',
    readonly errno: string | undefined,
    override readonly cause: unknown,
  ) {
    super(`${step === 'write' ? 'writing' : 'renaming into place'} failed: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** Replaces `target` with `bytes` (temp file, fsync, rename, folder fsync); throws FileReplaceError, leaving no temp file. */
export function replaceFileDurably(target: string, bytes: Uint8Array, options: ReplaceFileOptions): void {
  if (path.dirname(options.temp) !== path.dirname(target)) throw new Error(`bug: temp ${options.temp} is not beside ${target}`);
  const flags = options.exclusive ? constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW : constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC;
  let fd: number;
  try {
    fd = openSync(options.temp, flags, options.mode);
  } catch (error) {
    // Nothing of ours to remove: with `exclusive` a file at the name is someone else's.
    throw new FileReplaceError('write', errnoOf(error), error);
  }
  try {
    try {
      writeAllAndSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    options.beforeRename?.(options.temp);
  } catch (error) {
    rmSync(options.temp, { force: true });
    throw new FileReplaceError('write', errnoOf(error), error);
  }
  try {
    renameSync(options.temp, target);
  } catch (error) {
    rmSync(options.temp, { force: true });
    throw new FileReplaceError('rename', errnoOf(error), error);
  }
  fsyncFolder(path.dirname(target));
}
