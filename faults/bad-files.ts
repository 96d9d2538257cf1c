// The bad files a crash, a copy or an operator can leave in a run folder (issue 20 item 5), as
// fault kinds of the harness: a torn last line of heads.jsonl, the WAL of another store beside
// events.db, the signed manifest of another instance, a snapshot row of another store. Each is
// planted once every process of the instance is gone; then `verify` and a `--resume` are asked
// about it and must give the verdict written down in BAD_FILE_VERDICTS; then the original is put
// back and the harness resumes to the end as after any fault (faults/fault-run.ts).
//
// "Another store" is one the harness makes itself, in-process and on a fixed clock, with the
// product's own EventStore (foreignStore below): a store of another experiment and subject with
// snapshots every 10 seqs (one at or below any head of the run's), and its WAL taken while it
// was open and not yet checkpointed (a writer killed early leaves such a WAL: all of its store). Reproducible from the run alone, unlike a batch's other
// runs, which go side by side and are at no fixed point when this one needs them.
import { assertNever } from '../foundation/assert-never.js';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { loadOrCreateControllerKey } from '../controller/key-store.js';
import { subjectProjection } from '../projector/subject-projection.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { signDsse } from '../schema/dsse.js';
import type { BadFileKind } from '../schema/fault-points.js';
import { hashCanonical, hashText } from '../schema/hash.js';
import { MANIFEST_PAYLOAD_TYPE, RUN_FILES } from '../schema/run-files.js';
import { draftOf } from '../writer/event-draft.js';
import { EventStore } from '../writer/event-store.js';
import type { ValidatedDraft } from '../writer/draft-validation.js';
import { verifyDirectory } from '../writer/verify-store.js';
import { restoreDrill } from '../writer/restore.js';
import { checkPlansUnder } from '../verification/plans-under.js';
import { EXIT_CODES } from '../foundation/exit-codes.js';

/**
 * What verify and a resume must say about each bad file. `verify`: 'fails' — a failure that names
 * the file and was not there before it was planted; 'warns' — no new failure, a warning naming it.
 * `resume`: 'refused' — the documented exit (EXIT_CODES.failed), the file named on the log, the
 * run folder byte-identical afterwards; 'recovered' — it goes on, a warning line naming the file
 * on the log (only where it is safe: a snapshot is a cache the writer never reads).
 */
export const BAD_FILE_VERDICTS = {
  heads_torn: { file: RUN_FILES.heads, verify: 'fails', resume: 'refused' },
  wal_foreign: { file: `${RUN_FILES.store}-wal`, verify: 'fails', resume: 'refused' },
  manifest_foreign: { file: RUN_FILES.manifest, verify: 'fails', resume: 'refused' },
  snapshot_foreign: { file: 'snapshot', verify: 'warns', resume: 'recovered' },
} as const satisfies Record<BadFileKind, { file: string; verify: 'fails' | 'warns'; resume: 'refused' | 'recovered' }>;

/** The foreign store's events (all the writer's own AppendRejected: valid for the subject projection, no client needed). */
const FOREIGN_EVENTS = 600;
/** The foreign store snapshots every this many events: a row at or below any head of the run's. */
const FOREIGN_SNAPSHOT_EVERY = 10;
const FOREIGN_CLOCK = '2026-01-01T00:00:00.000Z';
/** The bytes of heads.jsonl's last line the torn write keeps (about half of a ~600-byte head). */
const TORN_KEEP_FRACTION = 0.5;

export interface ForeignStore {
  readonly dbFile: string;
  /** A copy of its -wal taken while it was open, after its last batch committed. */
  readonly walFile: string;
  readonly experimentId: string;
}

function rejectedDraft(n: number): ValidatedDraft {
  const payload = { reason: 'bad_message' as const, message: `foreign store event ${n}`, role: null, method: null, request_id: null, request_sha256: hashText(String(n)), request_bytes: 0, connection_id: 1 };
  const draft = draftOf('SystemEvent.AppendRejected', payload, { occurred_at: FOREIGN_CLOCK, actor: 'experiment', idempotency_key: null });
  return { ...draft, payloadText: canonicalJson(draft.payload) };
}

/** Another store, made with the product's EventStore on a fixed clock: another experiment, another subject, the same schema. */
export function foreignStore(dir: string): ForeignStore {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const dbFile = path.join(dir, RUN_FILES.store);
  const experimentId = 'faults-foreign-store';
  const options = {
    path: dbFile,
    identity: { subject_id: `subject-${experimentId}-r1`, experiment_id: experimentId, manifest_sha256: hashText('no manifest: a store the fault harness made') },
    projection: subjectProjection,
    now: () => FOREIGN_CLOCK,
    snapshotEvery: FOREIGN_SNAPSHOT_EVERY,
  };
  const append = (store: EventStore, from: number, to: number): void => {
    // Batches of the snapshot interval: one transaction each, a snapshot at each batch's end.
    for (let n = from; n < to; n += FOREIGN_SNAPSHOT_EVERY) store.append(Array.from({ length: Math.min(FOREIGN_SNAPSHOT_EVERY, to - n) }, (_, i) => rejectedDraft(n + i)), null);
  };
  // Never checkpointed (its frames stay under SQLite's 1,000-frame autocheckpoint): the WAL then
  // holds the whole other store, so replayed over the run's file it reads as an intact store —
  // the case quick_check cannot see and a writer's refusing open used to write into the file.
  const store = EventStore.create(options);
  const walFile = path.join(dir, 'foreign.events.db-wal');
  try {
    append(store, 1, FOREIGN_EVENTS);
    copyFileSync(`${dbFile}-wal`, walFile);
  } finally {
    store.close();
  }
  return { dbFile, walFile, experimentId };
}

/** sha256 of every file under the run folder by relative path (names and bytes: what "byte-identical" means here). */
export function folderHashes(dir: string): Map<string, string> {
  const hashes = new Map<string, string>();
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else hashes.set(path.relative(dir, full), entry.isFile() ? createHash('sha256').update(readFileSync(full)).digest('hex') : `(${entry.isSymbolicLink() ? 'symlink' : 'special'})`);
    }
  };
  walk(dir);
  return hashes;
}

export function folderDifferences(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): string[] {
  const differences: string[] = [];
  for (const [file, hash] of before) {
    if (!after.has(file)) differences.push(`${file} was removed`);
    else if (after.get(file) !== hash) differences.push(`${file} changed`);
  }
  for (const file of after.keys()) if (!before.has(file)) differences.push(`${file} appeared`);
  return differences;
}

/** What the harness needs to put back once the verdicts are in. */
export interface Planted {
  readonly kind: BadFileKind;
  readonly note: string;
  readonly undo: () => string;
  /** Seq of the planted snapshot row (snapshot_foreign), else null. */
  readonly snapshotSeq: number | null;
}

function backup(file: string): () => string {
  const bytes = existsSync(file) ? readFileSync(file) : null;
  return () => {
    if (bytes === null) rmSync(file, { force: true });
    else writeFileSync(file, bytes);
    return `put back the original ${path.basename(file)}${bytes === null ? ' (there was none: removed)' : ` (${bytes.length} bytes)`}`;
  };
}

function tearHeads(runDir: string): Planted {
  const file = path.join(runDir, RUN_FILES.heads);
  const undo = backup(file);
  const text = readFileSync(file, 'utf8');
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  const lastStart = body.lastIndexOf('\n') + 1;
  const keep = lastStart + Math.floor((body.length - lastStart) * TORN_KEEP_FRACTION);
  truncateSync(file, Buffer.byteLength(text.slice(0, keep), 'utf8'));
  return { kind: 'heads_torn', note: `cut the last line of ${RUN_FILES.heads} (line ${body.split('\n').length}) after ${keep - lastStart} of its ${body.length - lastStart} characters, no newline: a torn write`, undo, snapshotSeq: null };
}

function plantForeignWal(runDir: string, foreign: ForeignStore): Planted {
  const file = path.join(runDir, `${RUN_FILES.store}-wal`);
  const had = existsSync(file) ? statSync(file).size : null;
  const undo = backup(file);
  copyFileSync(foreign.walFile, file);
  return { kind: 'wal_foreign', note: `replaced ${path.basename(file)} (${had === null ? 'none there' : `${had} bytes`}) by the WAL of another store (${foreign.experimentId}, ${statSync(file).size} bytes)`, undo, snapshotSeq: null };
}

function plantForeignManifest(runDir: string, keyDir: string): Planted {
  const file = path.join(runDir, RUN_FILES.manifest);
  const undo = backup(file);
  const envelope = JSON.parse(readFileSync(file, 'utf8')) as { payload: string };
  const body = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as Record<string, unknown>;
  // Another instance of the same study: the same controller key, so its signature verifies.
  const other = { ...body, experiment_id: `${String(body.experiment_id)}-other-instance` };
  const keys = loadOrCreateControllerKey(keyDir, { create: false }).keys;
  writeFileSync(file, `${JSON.stringify(signDsse(MANIFEST_PAYLOAD_TYPE, other, keys.secretKey, keys.publicKey), null, 2)}\n`);
  return { kind: 'manifest_foreign', note: `replaced ${RUN_FILES.manifest} by the manifest of instance ${other.experiment_id as string}, signed by the same key (${hashCanonical(other).slice(0, 19)}…)`, undo, snapshotSeq: null };
}

interface SnapshotRow {
  seq: number;
  projection: string;
  projector_version: string;
  state_machine_version: string;
  event_schema_version: string;
  state: string;
  state_hash: string;
}

function plantForeignSnapshot(runDir: string, foreign: ForeignStore): Planted {
  const dbFile = path.join(runDir, RUN_FILES.store);
  const db = new Database(dbFile);
  try {
    const head = (db.prepare('SELECT max(seq) AS head FROM events').get() as { head: number | null }).head ?? 0;
    const source = new Database(foreign.dbFile, { readonly: true });
    let row: SnapshotRow | undefined;
    try {
      row = source.prepare('SELECT * FROM snapshots WHERE seq <= ? ORDER BY seq DESC LIMIT 1').get(head) as SnapshotRow | undefined;
    } finally {
      source.close();
    }
    if (row === undefined) throw new Error(`the foreign store has no snapshot at or below the run's head (seq ${head})`);
    const ours = db.prepare('SELECT * FROM snapshots WHERE seq = ?').get(row.seq) as SnapshotRow | undefined;
    // Newer rows of the run's own would be chosen first by a restore: the planted one must be the newest at or below the head.
    const newer = db.prepare('SELECT * FROM snapshots WHERE seq > ? AND seq <= ?').all(row.seq, head) as SnapshotRow[];
    const insert = db.prepare('INSERT OR REPLACE INTO snapshots (seq, projection, projector_version, state_machine_version, event_schema_version, state, state_hash) VALUES (@seq, @projection, @projector_version, @state_machine_version, @event_schema_version, @state, @state_hash)');
    db.transaction(() => {
      db.prepare('DELETE FROM snapshots WHERE seq > ? AND seq <= ?').run(row.seq, head);
      insert.run(row);
    })();
    const undo = (): string => {
      const again = new Database(dbFile);
      try {
        again.transaction(() => {
          again.prepare('DELETE FROM snapshots WHERE seq = ?').run(row.seq);
          for (const r of [...(ours ? [ours] : []), ...newer]) again.prepare('INSERT OR REPLACE INTO snapshots (seq, projection, projector_version, state_machine_version, event_schema_version, state, state_hash) VALUES (@seq, @projection, @projector_version, @state_machine_version, @event_schema_version, @state, @state_hash)').run(r);
        })();
      } finally {
        again.close();
      }
      return `put back the run's own snapshot rows (${[...(ours ? [ours] : []), ...newer].map((r) => r.seq).join(', ') || 'none'}) in place of the foreign one at seq ${row.seq}`;
    };
    return { kind: 'snapshot_foreign', note: `put the snapshot row at seq ${row.seq} of another store (${foreign.experimentId}) in events.db (head ${head})${ours ? ', over the run\'s own' : ''}${newer.length > 0 ? `; the run's newer rows (${newer.map((r) => r.seq).join(', ')}) set aside` : ''}`, undo, snapshotSeq: row.seq };
  } finally {
    db.close();
  }
}

export function plantBadFile(kind: BadFileKind, runDir: string, keyDir: string, foreignDir: string): Planted {
  switch (kind) {
    case 'heads_torn':
      return tearHeads(runDir);
    case 'wal_foreign':
      return plantForeignWal(runDir, foreignStore(foreignDir));
    case 'manifest_foreign':
      return plantForeignManifest(runDir, keyDir);
    case 'snapshot_foreign':
      return plantForeignSnapshot(runDir, foreignStore(foreignDir));
    default: {
      assertNever(kind, 'bad-file kind');
    }
  }
}

export interface VerifyOutcome {
  readonly failures: string[];
  readonly warnings: string[];
}

/** `npm run verify -- DIR --open`, in-process (the same two reports cli/verify.ts combines): the run is stopped, not finished. */
export function verifyRun(runDir: string, scenariosDir: string): VerifyOutcome {
  const store = verifyDirectory(runDir, { allowOpen: true });
  const plans = checkPlansUnder(runDir, { scenariosDir });
  // verify names files relative to the folder it was given.
  const at = (file: string, seq: number | null, reason: string): string => `${file}${seq === null ? '' : ` seq ${seq}`}: ${reason}`;
  return {
    failures: [...store.failures.map((f) => at(f.store, f.seq, f.reason)), ...plans.failures.map((f) => at(f.file, f.seq, f.message))],
    warnings: [...store.warnings.map((f) => at(f.store, f.seq, f.reason)), ...plans.notes.map((f) => at(f.file, f.seq, f.message))],
  };
}

export interface VerdictInput {
  readonly kind: BadFileKind;
  readonly runDir: string;
  /** verify before the plant (a stopped run may already fail or warn; only what the plant adds counts). */
  readonly verifyBefore: VerifyOutcome;
  readonly verifyAfter: VerifyOutcome;
  readonly resumeExit: number | null;
  /** What the resume wrote to the log. */
  readonly resumeLog: string;
  /** The folder's differences across the resume (and across verify). */
  readonly changedByResume: readonly string[];
  readonly changedByVerify: readonly string[];
  /** The run was sealed with its final head signed before the plant: a resume has nothing to do, whatever the file. */
  readonly finishedBefore: boolean;
}

/** Every way the verdicts fell short of BAD_FILE_VERDICTS; empty when they are right. */
export function badFileVerdictProblems(input: VerdictInput): string[] {
  const expected = BAD_FILE_VERDICTS[input.kind];
  const problems: string[] = [];
  const named = (line: string): boolean => line.includes(expected.file);
  const newFailures = input.verifyAfter.failures.filter((f) => !input.verifyBefore.failures.includes(f));
  const newWarnings = input.verifyAfter.warnings.filter((w) => !input.verifyBefore.warnings.includes(w));
  if (input.changedByVerify.length > 0) problems.push(`verify changed the run folder: ${input.changedByVerify.join('; ')}`);
  if (expected.verify === 'fails') {
    if (!newFailures.some(named)) problems.push(`verify accepted the bad ${expected.file}: no new failure names it (new failures: ${JSON.stringify(newFailures.slice(0, 3))}, new warnings: ${JSON.stringify(newWarnings.slice(0, 3))})`);
  } else {
    if (newFailures.length > 0) problems.push(`verify failed on a bad ${expected.file} it should only warn about: ${JSON.stringify(newFailures.slice(0, 3))}`);
    if (!newWarnings.some(named)) problems.push(`verify said nothing about the bad ${expected.file}: no new warning names it`);
  }
  if (expected.resume === 'refused') {
    if (input.resumeExit !== EXIT_CODES.failed) problems.push(`the resume with the bad ${expected.file} ended with exit ${String(input.resumeExit)}, not the refusal's ${EXIT_CODES.failed}`);
    if (!input.resumeLog.split('\n').some((l) => named(l) && /refus/i.test(l))) problems.push(`the resume's log has no refusal naming ${expected.file}`);
    if (input.changedByResume.length > 0) problems.push(`the refused resume changed the run folder: ${input.changedByResume.slice(0, 10).join('; ')}`);
  } else if (input.finishedBefore) {
    // A finished run is not resumed at all (instance.ts: "finished and sealed; nothing to resume"): refused, nothing read or written; verify's warning above is the verdict.
    if (input.resumeExit !== EXIT_CODES.failed) problems.push(`the resume of the finished run with the bad ${expected.file} ended with exit ${String(input.resumeExit)}, not the refusal's ${EXIT_CODES.failed} (nothing to resume)`);
    if (input.changedByResume.length > 0) problems.push(`the refused resume of the finished run changed the run folder: ${input.changedByResume.slice(0, 10).join('; ')}`);
  } else {
    if (!input.resumeLog.split('\n').some((l) => named(l) && /warn|not used/i.test(l))) problems.push(`the resume went on without a warning naming the bad ${expected.file}`);
  }
  return problems;
}

/** The restore drill on the planted store (snapshot_foreign): it must not start from the foreign row, and must say why. */
export function restoreVerdictProblems(runDir: string, plantedSeq: number): string[] {
  let drill: ReturnType<typeof restoreDrill>;
  try {
    drill = restoreDrill(path.join(runDir, RUN_FILES.store));
  } catch (error) {
    // Measured before the fix: the drill started from the foreign state and the projection then refused the run's own next event.
    return [`the restore drill with the foreign snapshot at seq ${plantedSeq} failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`];
  }
  const problems: string[] = [];
  if (drill.snapshot_used === plantedSeq) problems.push(`the restore drill started from the foreign snapshot at seq ${plantedSeq} (restored ${drill.state_hash}, full replay ${drill.full_replay_state_hash})`);
  if (!drill.warnings.some((w) => w.includes(`seq ${plantedSeq}`))) problems.push(`the restore drill gave no warning about the foreign snapshot at seq ${plantedSeq}`);
  return problems;
}
