// What a resume refuses before it spawns or writes anything, and how a store problem met on the
// way in is worded: a finished run (sealed, final head signed), an events.db that is empty,
// damaged, unreadable or held by another writer (issue 16). instance-start.ts runs the check;
// instance.ts words a writer's refusal of the store the same way.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CHAIN_HEAD_PAYLOAD_TYPE, ChainHead } from '../schema/chain-head.js';
import { verifyDsse } from '../schema/dsse.js';
import { StoreSealed } from '../schema/events/system-events.js';
import { RUN_FILES } from '../schema/run-files.js';
import { WriterStartError } from '../writer/spawn.js';
import { openStoreReadOnly, readingStore, storeReadErrorFromWriterCode, StoreReadError } from '../writer/store-reader.js';
import { InstanceError } from './instance-error.js';

/** Whether heads.jsonl holds a final head signed by `publicKey`. */
export function hasFinalHead(runDir: string, publicKey: Uint8Array): boolean {
  const file = path.join(runDir, RUN_FILES.heads);
  if (!existsSync(file)) return false;
  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  return lines.some((line) => {
    // A torn last line (a controller killed mid-append) is no head: skipped, as readSignedHeads does.
    let envelope: unknown;
    try {
      envelope = JSON.parse(line);
    } catch {
      return false;
    }
    const verified = verifyDsse(envelope, CHAIN_HEAD_PAYLOAD_TYPE, publicKey);
    return verified.ok && ChainHead.safeParse(verified.body).data?.kind === 'final';
  });
}

/** A store problem met on the way into a resume, said as a refusal of the resume (same code: StoreReadError's). */
export function resumeRefusalOf(runDir: string, error: unknown): unknown {
  const refusing = `refusing to resume ${runDir}: `;
  if (error instanceof StoreReadError) return new StoreReadError(error.code, `${refusing}${error.message}`);
  if (error instanceof WriterStartError) return storeReadErrorFromWriterCode(error.code, `${refusing}${error.message}`) ?? error;
  return error;
}

/**
 * The store, read-only, before a resume spawns or writes anything (issue 16): an empty,
 * damaged (quick_check) or unreadable events.db is refused — the writer's open would make an
 * empty file a 4,096-byte database — and one a writer holds (the instance itself, another
 * resume, a repair) is refused as locked: the read-only probe gets SQLITE_BUSY and creates no
 * file. A finished run (sealed, final head signed) is refused here too: starting its writer
 * would rewrite the file's header for nothing. Throws StoreReadError or InstanceError.
 */
export function checkStoreBeforeResume(runDir: string, storeFile: string, publicKey: Uint8Array): void {
  // A hot journal (a writer killed inside its journal-mode switch) refuses every read-only open
  // (SQLITE_READONLY_ROLLBACK); the writer's read-write open rolls it back and checks the file itself.
  const journal = `${storeFile}-journal`;
  if (existsSync(journal) && statSync(journal).size > 0) return;
  let sealedSeq: number | null;
  try {
    const db = openStoreReadOnly(storeFile, { checkIntegrity: true });
    try {
      const row = readingStore(storeFile, () => db.prepare('SELECT seq FROM events WHERE event_type = ? ORDER BY seq DESC LIMIT 1').get(StoreSealed.type) as { seq: number } | undefined);
      sealedSeq = row?.seq ?? null;
    } finally {
      db.close();
    }
  } catch (error) {
    throw resumeRefusalOf(runDir, error);
  }
  if (sealedSeq !== null && hasFinalHead(runDir, publicKey)) throw new InstanceError('resume', `${runDir} is finished and sealed (seq ${sealedSeq}); nothing to resume`);
}
