// Writing every byte of a buffer to an open file and flushing it to the disk, for the files
// written once and renamed into place (the subject's workspace, by the runtime's file tool and by
// the controller's world changes; controller/run-signatures.ts appends heads its own way). One
// writeSync may write less than asked — a disk with less room than the file takes what fits — so
// the bytes are written in a loop until all of them are out or the file system refuses.

import { fsyncSync, writeSync } from 'node:fs';

/** Writes all of `bytes` to `fd` and fsyncs it; throws the file system's error (ENOSPC …) when it refuses. */
export function writeAllAndSync(fd: number, bytes: Uint8Array): void {
  let written = 0;
  // Bounded: each pass writes at least one byte (writeSync throws rather than return 0 on a full disk).
  for (let pass = 0; written < bytes.length && pass <= bytes.length; pass += 1) written += writeSync(fd, bytes, written, bytes.length - written);
  if (written !== bytes.length) throw new Error(`bug: ${written} of ${bytes.length} bytes written with no error from the file system`);
  fsyncSync(fd);
}
