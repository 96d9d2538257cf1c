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
import { readSignedHeads } from '../writer/signed-files-check.js';
import { WriterStartError } from '../writer/spawn.js';
import { hasWalFrames, walOf } from '../writer/wal-ownership.js';
import { foreignOrDamagedSnapshots } from '../writer/restore.js';
import { openStoreReadOnly, readingStore, storeReadErrorFromWriterCode, StoreReadError, StoreReader } from '../writer/store-reader.js';
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

/**
 * heads.jsonl before a resume appends to it (issue 20 item 5): every line a head signed by the
 * run's key, the file ending with a newline. A torn last line (a write cut short) or any line
 * that is not a signed head is refused, naming it: the next head would be appended after it —
 * onto a torn line it even merges with it into one unreadable line, losing that signed head —
 * and verify would fail the finished run for a line nobody looked at. Nothing is changed; the
 * operator decides (readSignedHeads is the one reading of the file).
 */
export function checkHeadsBeforeResume(runDir: string, publicKey: Uint8Array): void {
  const file = path.join(runDir, RUN_FILES.heads);
  if (!existsSync(file)) return;
  const text = readFileSync(file, 'utf8');
  const bad = readSignedHeads(file, publicKey).filter((line) => line.head === null);
  const torn = text.length > 0 && !text.endsWith('\n');
  if (bad.length === 0 && !torn) return;
  const lines = text.split('\n').filter((l) => l.trim() !== '').length;
  const problems = [...bad.map((line) => line.problem ?? `line ${line.line}`), ...(torn && bad.every((line) => line.line !== lines) ? [`line ${lines} does not end with a newline`] : [])];
  throw new InstanceError(
    'resume',
    `refusing to resume ${runDir}: ${file} is not a clean list of signed heads (${problems.join('; ')})${torn ? ': its last line is torn (a write cut short)' : ''}. A resume would append the next head after it and bury it. Nothing was changed. Keep a copy of the file, then remove the bad line(s) so that it ends after its last whole signed head (npm run verify -- ${runDir} --open names each bad line), and run this again`,
  );
}

/** A store problem met on the way into a resume, said as a refusal of the resume (same code: StoreReadError's). */
export function resumeRefusalOf(runDir: string, error: unknown): unknown {
  const refusing = `refusing to resume ${runDir}: `;
  if (error instanceof StoreReadError) return new StoreReadError(error.code, `${refusing}${error.message}`);
  if (error instanceof WriterStartError) return storeReadErrorFromWriterCode(error.code, `${refusing}${error.message}`) ?? error;
  return error;
}

/** The signed manifest of the folder, as resumeInstance verified it. */
export interface SignedManifestFacts {
  /** sha256 of the signed body: what StoreOpened names. */
  readonly sha256: string;
  readonly experiment_id: string;
}

function manifestMismatch(runDir: string, storeFile: string, manifest: SignedManifestFacts, opened: { experiment_id?: unknown; manifest_sha256?: unknown } | null): InstanceError {
  const store = opened === null ? `${path.basename(storeFile)} has no StoreOpened at seq 1` : `${path.basename(storeFile)} was opened (StoreOpened, seq 1) for experiment ${String(opened.experiment_id)} under manifest ${String(opened.manifest_sha256)}`;
  // When the file alone held nothing to compare a WAL with (writer/wal-ownership.ts), the store is seen through the WAL: it may be the stray file.
  const wal = hasWalFrames(storeFile)
    ? ` — or ${path.basename(walOf(storeFile))} beside it is another store's WAL (the store is read through it, and ${path.basename(storeFile)} alone holds no event to compare it with): then put back the store's own WAL instead`
    : '';
  return new InstanceError(
    'resume',
    `refusing to resume ${runDir}: ${RUN_FILES.manifest} is not this store's manifest: it is signed for experiment ${manifest.experiment_id} (${manifest.sha256}), ${store}. The manifest of another instance is in this folder (its signature verifies: the same key signs every instance). Nothing was changed. Put back this instance's own ${RUN_FILES.manifest} (the one hashing to the StoreOpened's manifest_sha256), then run this again${wal}`,
  );
}

/**
 * The store, read-only, before a resume spawns or writes anything (issue 16): an empty,
 * damaged (quick_check) or unreadable events.db is refused — the writer's open would make an
 * empty file a 4,096-byte database — and one a writer holds (the instance itself, another
 * resume, a repair) is refused as locked: the read-only probe gets SQLITE_BUSY and creates no
 * file. A finished run (sealed, final head signed) is refused here too: starting its writer
 * would rewrite the file's header for nothing. So is a folder whose signed manifest is not the
 * one the store was opened under (StoreOpened, seq 1): another instance's manifest copied in
 * would otherwise be caught only by the writer, naming events.db. A WAL beside the store that is
 * not its own is refused by the read-only open itself (writer/wal-ownership.ts), naming the -wal.
 * Throws StoreReadError or InstanceError. Returns warnings for the log: snapshot rows that are
 * damaged or another store's (a cache the writer never reads and a restore skips: safe to go on,
 * never to pass unsaid).
 */
export function checkStoreBeforeResume(runDir: string, storeFile: string, publicKey: Uint8Array, manifest: SignedManifestFacts): string[] {
  // A hot journal (a writer killed inside its journal-mode switch) refuses every read-only open
  // (SQLITE_READONLY_ROLLBACK); the writer's read-write open rolls it back and checks the file itself.
  const journal = `${storeFile}-journal`;
  if (existsSync(journal) && statSync(journal).size > 0) return [];
  let sealedSeq: number | null;
  let snapshots: string[];
  try {
    const db = openStoreReadOnly(storeFile, { checkIntegrity: true });
    try {
      const row = readingStore(storeFile, () => db.prepare('SELECT seq FROM events WHERE event_type = ? ORDER BY seq DESC LIMIT 1').get(StoreSealed.type) as { seq: number } | undefined);
      sealedSeq = row?.seq ?? null;
      const first = readingStore(storeFile, () => db.prepare('SELECT envelope FROM events WHERE seq = 1').get() as { envelope: string } | undefined);
      const opened = first === undefined ? null : ((JSON.parse(first.envelope) as { payload?: { experiment_id?: unknown; manifest_sha256?: unknown } }).payload ?? null);
      if (opened?.manifest_sha256 !== manifest.sha256 || opened?.experiment_id !== manifest.experiment_id) throw manifestMismatch(runDir, storeFile, manifest, opened);
    } finally {
      db.close();
    }
    const reader = StoreReader.open(storeFile);
    try {
      snapshots = foreignOrDamagedSnapshots(reader);
    } finally {
      reader.close();
    }
  } catch (error) {
    throw resumeRefusalOf(runDir, error);
  }
  if (sealedSeq !== null && hasFinalHead(runDir, publicKey)) throw new InstanceError('resume', `${runDir} is finished and sealed (seq ${sealedSeq}); nothing to resume`);
  return snapshots.map((problem) => `warning: ${RUN_FILES.store} ${problem} (a cache: the writer never reads it, a restore skips it; nothing is lost)`);
}
