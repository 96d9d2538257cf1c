// Verifies run folders from their files alone (DESIGN §4): every events.db under a
// folder, every DSSE file, against the controller's public key. It lists every failure
// it finds with its seq and never stops at the first; it only reads. A finished store
// ends with its one SystemEvent.StoreSealed, and the final signed head names exactly it.
// Every event is at the version of its type that the catalogue StoreOpened names holds
// (schema/catalogue-versions.ts), and the signed manifest names that catalogue too.
// A store whose file is not intact SQLite (damaged, empty, unreadable, locked) is one more
// failure, listed with its store and its code (store_damaged, …: store-file-failure.ts), after
// whatever could be read from it; verification goes on with the other stores and files.
import type Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import { KNOWN_CATALOGUES, versionInCatalogue } from '../schema/catalogue-versions.js';
import { CHAIN_HEAD_PAYLOAD_TYPE, ChainHead } from '../schema/chain-head.js';
import { verifyDsse } from '../schema/dsse.js';
import { parsePublicKeyHex } from '../schema/ed25519-keys.js';
import { EventEnvelope } from '../schema/envelope.js';
import { computeEventHash, computePayloadHash, eventIdFor, MAX_SEQ } from '../schema/envelope-hash.js';
import { eventDefinition } from '../schema/event-catalog.js';
import { GENESIS_HASH, hashCanonical, hashText } from '../schema/hash.js';
import { MANIFEST_PAYLOAD_TYPE, RUN_FILES } from '../schema/run-files.js';
import { classifyStoreError, quickCheckFailure, storeFileCode, type StoreFileFailure } from './store-file-failure.js';
import { openStoreReadOnly, StoreReadError } from './store-reader.js';

export interface VerifyFailure {
  /** The events.db or signed file the failure is about, relative to the verified folder. */
  readonly store: string;
  readonly seq: number | null;
  readonly reason: string;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly stores: number;
  readonly events: number;
  readonly failures: VerifyFailure[];
  /** Things that are not failures but must not pass unseen (e.g. an open store). */
  readonly warnings: VerifyFailure[];
}

export interface VerifyOptions {
  /**
   * Accept stores that have no final signed head yet (a run in progress: not sealed
   * either): a warning, not a failure. A sealed store without a final head still fails.
   */
  readonly allowOpen?: boolean;
}

export class VerifyInputError extends Error {
  override readonly name = 'VerifyInputError';
}

const MAX_FAILURES_PER_FILE = 1_000;
const MAX_WALK_DEPTH = 8;
const MAX_WALK_ENTRIES = 100_000;

export interface RunFilesFound {
  /** events.db files, sorted by path. */
  readonly stores: string[];
  readonly signedFiles: string[];
}

/** The stores and signed files under root (bounded depth and entry count; node_modules and dot folders skipped). */
export function findRunFiles(root: string): RunFilesFound {
  const found: RunFilesFound = { stores: [], signedFiles: [] };
  let seen = 0;
  const visit = (dir: string, depth: number): void => {
    if (depth > MAX_WALK_DEPTH) throw new VerifyInputError(`${dir} is nested deeper than ${MAX_WALK_DEPTH} levels below ${root}; verify a narrower folder`);
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      seen += 1;
      if (seen > MAX_WALK_ENTRIES) throw new VerifyInputError(`more than ${MAX_WALK_ENTRIES} entries under ${root}; verify a narrower folder`);
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules' && !entry.name.startsWith('.')) visit(full, depth + 1);
      else if (entry.isFile() && entry.name === RUN_FILES.store) found.stores.push(full);
      else if (entry.isFile() && (entry.name.endsWith(RUN_FILES.dsseSuffix) || entry.name === RUN_FILES.heads)) found.signedFiles.push(full);
    }
  };
  visit(root, 0);
  return found;
}

/** The controller key that governs a file: controller.pub in its folder or the nearest one above, within root. */
export function keyFileFor(file: string, root: string): string | null {
  let dir = path.dirname(file);
  for (;;) {
    const candidate = path.join(dir, RUN_FILES.publicKey);
    if (existsSync(candidate)) return candidate;
    if (path.resolve(dir) === path.resolve(root)) return null;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

class FailureList {
  readonly failures: VerifyFailure[] = [];
  private readonly counts = new Map<string, number>();
  constructor(private readonly root: string) {}
  add(file: string, seq: number | null, reason: string): void {
    const store = path.relative(this.root, file) || path.basename(file);
    const count = (this.counts.get(store) ?? 0) + 1;
    this.counts.set(store, count);
    if (count <= MAX_FAILURES_PER_FILE) this.failures.push({ store, seq, reason });
  }
  /** Says how many failures were not listed, so a long list is never cut silently. */
  finish(): VerifyFailure[] {
    for (const [store, count] of this.counts) {
      if (count > MAX_FAILURES_PER_FILE) this.failures.push({ store, seq: null, reason: `${count - MAX_FAILURES_PER_FILE} more failures in this file were not listed (limit ${MAX_FAILURES_PER_FILE})` });
    }
    return this.failures;
  }
}

interface StoreFacts {
  readonly experimentId: string | null;
  readonly manifestSha256: string | null;
  /** The event catalogue StoreOpened names (event_schema_version), or null when it names none. */
  readonly eventCatalogue: string | null;
  readonly lastSeq: number;
  /** Seq of the (first) SystemEvent.StoreSealed, or null for a store that was never sealed. */
  readonly sealSeq: number | null;
  readonly hashAt: (seq: number) => string | null;
}

const NEVER_SIGNED = 'sealed but the final head was never signed';

/** A store that cannot be read as a store, as its one failure: the code first, so a reader of the list (or a script) sees which. */
function unreadableStoreReason(error: StoreReadError): string {
  return `store_${error.code}: ${error.message}`;
}

/** A file that opened but failed a read or quick_check; `readUpTo`: the last seq read before a read failed. */
function damagedStoreReason(failure: StoreFileFailure, readUpTo: number | null): string {
  const read = readUpTo === null ? '' : ` (events were read and checked up to seq ${readUpTo}; nothing after it could be)`;
  return `${storeFileCode(failure.problem)}: ${failure.message}${read}`;
}

/**
 * What a store yields: its facts for the signed files beside it, or null when the file is not
 * intact (already a failure: its heads and manifest are then checked for their signatures only,
 * not compared with a store that cannot be read whole).
 */
interface VerifiedStore {
  readonly facts: StoreFacts | null;
  readonly events: number;
  readonly close: () => void;
}

function verifyStore(file: string, failures: FailureList, chainHeadEvents: { seq: number; payload: unknown }[]): VerifiedStore | null {
  let db: Database.Database;
  try {
    db = openStoreReadOnly(file);
  } catch (error) {
    if (!(error instanceof StoreReadError)) throw error;
    failures.add(file, null, unreadableStoreReason(error));
    return null;
  }
  let walked: WalkedStore;
  try {
    walked = walkStore(db, file, failures, chainHeadEvents);
  } catch (error) {
    db.close();
    throw error;
  }
  // Every page once, also those no query above read (an index, the free-page list): a file with
  // a damaged page is not an intact store even where its events read back. Where the walk met
  // the damage, quick_check says which pages; a lock or a failing disk is said as it was met.
  const met = walked.readFailure;
  const failure = met === null || met.problem === 'damaged' ? (quickCheckFailure(db, file) ?? met) : met;
  const close = (): void => void db.close();
  if (failure === null) return { facts: walked.facts, events: walked.events, close };
  const stoppedAt = met === null ? null : walked.lastSeq;
  failures.add(file, stoppedAt === null ? null : stoppedAt + 1, damagedStoreReason(failure, stoppedAt));
  return { facts: null, events: walked.events, close };
}

interface WalkedStore {
  readonly facts: StoreFacts;
  readonly events: number;
  /** The last seq read before a read failed (or the last one). */
  readonly lastSeq: number;
  /** What SQLite said when a read failed (a damaged page); null when every read went through. */
  readonly readFailure: StoreFileFailure | null;
}

/** Every event in seq order, then the projection row; a SQLite failure stops the walk and is returned, never thrown. */
function walkStore(db: Database.Database, file: string, failures: FailureList, chainHeadEvents: { seq: number; payload: unknown }[]): WalkedStore {
  let expectedSeq = 1;
  let previousHash: string | null = GENESIS_HASH;
  let events = 0;
  let subjectId: string | null = null;
  let experimentId: string | null = null;
  let manifestSha256: string | null = null;
  let lastSeq = 0;
  let sealSeq: number | null = null;
  /** The event catalogue StoreOpened names, when this build knows it: every event is held to its versions. */
  let catalogue: string | null = null;
  let recordedCatalogue: string | null = null;
  let readFailure: StoreFileFailure | null = null;
  try {
    const rows = db.prepare('SELECT seq, event_id, event_type, idempotency_key, envelope FROM events ORDER BY seq').iterate() as IterableIterator<{
      seq: number;
      event_id: string;
      event_type: string;
      idempotency_key: string | null;
      envelope: string;
    }>;
    for (const row of rows) {
      events += 1;
      lastSeq = row.seq;
      const at = (reason: string): void => failures.add(file, row.seq, reason);
      if (row.seq !== expectedSeq) {
        at(row.seq > expectedSeq ? `seq gap: expected seq ${expectedSeq}, found ${row.seq} (${row.seq - expectedSeq} missing)` : `seq out of order: expected ${expectedSeq}, found ${row.seq}`);
      }
      expectedSeq = row.seq + 1;

      let raw: unknown;
      try {
        raw = JSON.parse(row.envelope);
      } catch {
        at('stored envelope is not JSON');
        previousHash = null;
        continue;
      }
      let canonical: string | null = null;
      try {
        canonical = canonicalJson(raw);
      } catch (error) {
        at(`stored envelope has no canonical form: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (canonical !== null && canonical !== row.envelope) at('stored text is not the canonical (RFC 8785) form of the envelope');
      const parsed = EventEnvelope.safeParse(raw);
      if (!parsed.success) {
        at(`envelope does not match the schema: ${z.prettifyError(parsed.error)}`);
        previousHash = null;
        continue;
      }
      const env = parsed.data;
      if (env.seq !== row.seq) at(`envelope says seq ${env.seq} but is stored at seq ${row.seq} (rows moved or swapped)`);
      if (env.event_id !== row.event_id || env.event_type !== row.event_type || env.idempotency_key !== row.idempotency_key) {
        at('indexed columns (event_id, event_type, idempotency_key) differ from the envelope');
      }
      if (previousHash === null) at('chain link unchecked: the previous event could not be read');
      else if (env.previous_event_hash !== previousHash) {
        at(row.seq === 1 ? 'seq 1 must link to the genesis hash (sha256: and 64 zeros)' : `chain link broken: previous_event_hash is not the event_hash of seq ${row.seq - 1}`);
      }
      if (computePayloadHash(env.payload) !== env.payload_hash) at('payload_hash does not match the payload (payload edited?)');
      if (computeEventHash(env) !== env.event_hash) at('event_hash does not match the envelope (event edited?)');

      if (row.seq === 1 && env.event_type === 'SystemEvent.StoreOpened') {
        const recorded = env.payload.event_schema_version;
        catalogue = typeof recorded === 'string' ? recorded : null;
        recordedCatalogue = catalogue;
        if (catalogue !== null && !KNOWN_CATALOGUES.includes(catalogue)) {
          at(`StoreOpened says the store was opened under event catalogue ${catalogue}; this verifier knows ${KNOWN_CATALOGUES.join(', ')}: verify it with the build that wrote it (its events' versions are not checked here)`);
          catalogue = null;
        }
      }
      const definition = eventDefinition(env.event_type);
      if (!definition) at(`unknown event type ${env.event_type}`);
      else if (definition.schemaVersion !== env.schema_version && !(env.schema_version in definition.earlier)) {
        at(`schema_version ${env.schema_version} of ${env.event_type} is not one this verifier understands (${[definition.schemaVersion, ...Object.keys(definition.earlier)].join(', ')})`);
      } else {
        // An event of an earlier version is checked against the schema it was written under.
        const schema = definition.schemaVersion === env.schema_version ? definition.payload : definition.earlier[env.schema_version]!;
        const payload = schema.safeParse(env.payload);
        if (!payload.success) at(`payload does not match the ${env.event_type} schema: ${z.prettifyError(payload.error)}`);
        // A writer writes only its own catalogue's version of a type (schema/catalogue-versions.ts).
        // Without a readable StoreOpened (already a failure) there is no catalogue to hold events to.
        if (catalogue !== null) {
          const expected = versionInCatalogue(catalogue, definition);
          if (expected === null) at(`${env.event_type} did not exist in event catalogue ${catalogue}, which StoreOpened says this store was opened under: another writer wrote it, or it was forged`);
          else if (expected !== undefined && expected !== env.schema_version) {
            at(`${env.event_type} ${env.schema_version} in a store opened under event catalogue ${catalogue}, whose ${env.event_type} is ${expected}: a writer writes only its catalogue's version, so another writer wrote it, or it was forged`);
          }
        }
      }

      if (row.seq === 1) {
        if (env.event_type !== 'SystemEvent.StoreOpened') at(`the first event is ${env.event_type}, not SystemEvent.StoreOpened`);
        else {
          subjectId = env.subject_id;
          experimentId = String(env.payload.experiment_id);
          manifestSha256 = String(env.payload.manifest_sha256);
          if (env.payload.subject_id !== env.subject_id) at(`StoreOpened names subject ${String(env.payload.subject_id)} but its envelope says ${env.subject_id}`);
        }
      } else if (env.event_type === 'SystemEvent.StoreOpened') at('a second SystemEvent.StoreOpened: another chain was spliced in');
      if (subjectId !== null && env.subject_id !== subjectId) at(`subject_id ${env.subject_id} differs from the store's ${subjectId}`);
      if (env.seq > MAX_SEQ) at(`seq ${env.seq} is beyond the largest seq an event id can carry (${MAX_SEQ})`);
      else if (env.event_id !== eventIdFor(env.subject_id, env.seq)) at('event_id is not the one derived from subject_id and seq');
      if (env.event_type === 'SystemEvent.ChainHeadSigned') chainHeadEvents.push({ seq: env.seq, payload: env.payload });
      if (env.event_type === 'SystemEvent.StoreSealed') {
        if (sealSeq === null) sealSeq = row.seq;
        else at(`a second SystemEvent.StoreSealed (the store was sealed at seq ${sealSeq})`);
      }
      // Link the next event to what is stored here, so one edit is reported once.
      previousHash = env.event_hash;
    }
    if (events === 0) failures.add(file, null, 'the store holds no events (StoreOpened missing)');
    // Reported once, at the first event too many: the writer and a trigger both refuse these.
    if (sealSeq !== null && lastSeq > sealSeq) {
      failures.add(file, sealSeq + 1, `${lastSeq - sealSeq} event(s) after SystemEvent.StoreSealed at seq ${sealSeq}: nothing may follow the seal (inserted outside the writer?)`);
    }

    const projection = db.prepare('SELECT state, state_hash, last_applied_event_seq FROM projection WHERE id = 1').get() as
      | { state: string; state_hash: string; last_applied_event_seq: number }
      | undefined;
    if (!projection) failures.add(file, null, 'no projection row: events and state were not committed together');
    else {
      if (projection.last_applied_event_seq !== lastSeq) {
        failures.add(file, lastSeq, `projection last_applied_event_seq ${projection.last_applied_event_seq} differs from the last event seq ${lastSeq}`);
      }
      if (hashText(projection.state) !== projection.state_hash) failures.add(file, null, 'projection state does not hash to its state_hash');
    }
  } catch (error) {
    readFailure = classifyStoreError(file, error, 'read');
    if (readFailure === null) throw error;
  }

  const lookup = db.prepare('SELECT envelope FROM events WHERE seq = ?');
  const hashAt = (seq: number): string | null => {
    let hit: { envelope: string } | undefined;
    try {
      hit = lookup.get(seq) as { envelope: string } | undefined;
    } catch (error) {
      // Only after quick_check passed (a damaged file yields no facts): a lock or a disk failing now.
      const failure = classifyStoreError(file, error, 'read');
      if (failure === null) throw error;
      failures.add(file, seq, `${storeFileCode(failure.problem)}: the event at seq ${seq} could not be read to compare a signed head with it: ${failure.message}`);
      return null;
    }
    if (!hit) return null;
    try {
      return (JSON.parse(hit.envelope) as { event_hash?: string }).event_hash ?? null;
    } catch {
      return null;
    }
  };
  return { facts: { experimentId, manifestSha256, eventCatalogue: recordedCatalogue, lastSeq, sealSeq, hashAt }, events, lastSeq, readFailure };
}

/** Checks a signed chain head against the store it names. */
function checkHead(file: string, where: number | null, head: ChainHead, facts: StoreFacts, failures: FailureList): void {
  if (facts.experimentId !== null && head.experiment_id !== facts.experimentId) {
    failures.add(file, head.seq, `signed head names experiment ${head.experiment_id}, the store belongs to ${facts.experimentId}`);
  }
  const stored = facts.hashAt(head.seq);
  if (stored === null) failures.add(file, head.seq, `signed head at seq ${head.seq} but the store ends at seq ${facts.lastSeq} (tail truncated?)${where === null ? '' : ` [line ${where}]`}`);
  else if (stored !== head.event_hash) failures.add(file, head.seq, `signed head hash differs from the stored event at seq ${head.seq} (history rewritten?)`);
}

function readKey(file: string, root: string, failures: FailureList): Uint8Array | null {
  const keyFile = keyFileFor(file, root);
  if (!keyFile) {
    failures.add(file, null, `no ${RUN_FILES.publicKey} beside it or above it: its signatures cannot be checked`);
    return null;
  }
  try {
    return parsePublicKeyHex(readFileSync(keyFile, 'utf8'));
  } catch (error) {
    failures.add(keyFile, null, error instanceof Error ? error.message : String(error));
    return null;
  }
}

/** One line of heads.jsonl: its signed head, or (head null) why it is not one. */
export type SignedHeadLine =
  /** `line` is 1-based, counting non-empty lines. */
  | { readonly line: number; readonly head: ChainHead; readonly problem: null }
  | { readonly line: number; readonly head: null; readonly problem: string };

/** Every non-empty line of a heads.jsonl, each checked against `key`: the one reading of the file (verify, the audit desk, the repair). */
export function readSignedHeads(file: string, key: Uint8Array): SignedHeadLine[] {
  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  return lines.map((text, index): SignedHeadLine => {
    const line = index + 1;
    let envelope: unknown;
    try {
      envelope = JSON.parse(text);
    } catch {
      return { line, head: null, problem: `line ${line} is not JSON` };
    }
    const verified = verifyDsse(envelope, CHAIN_HEAD_PAYLOAD_TYPE, key);
    if (!verified.ok) return { line, head: null, problem: `line ${line}: ${verified.reason}` };
    const head = ChainHead.safeParse(verified.body);
    if (!head.success) return { line, head: null, problem: `line ${line}: signed body is not a chain head: ${z.prettifyError(head.error)}` };
    return { line, head: head.data, problem: null };
  });
}

function verifyHeadsFile(file: string, key: Uint8Array, facts: StoreFacts | null, failures: FailureList, warnings: FailureList, allowOpen: boolean): void {
  let finalHead: ChainHead | null = null;
  for (const entry of readSignedHeads(file, key)) {
    if (entry.head === null) {
      failures.add(file, null, entry.problem);
      continue;
    }
    const { line, head } = entry;
    if (finalHead) failures.add(file, head.seq, `line ${line}: a head signed after the final head`);
    if (head.kind === 'final') finalHead = head;
    if (facts) checkHead(file, line, head, facts, failures);
  }
  if (!facts) return;
  const final = finalHead as ChainHead | null;
  if (final === null) {
    // A seal is the end of the run: --open (a run in progress) does not excuse it.
    if (facts.sealSeq !== null) return failures.add(file, facts.sealSeq, `${NEVER_SIGNED} (no final head in ${RUN_FILES.heads})`);
    const reason = 'no final signed head: a truncated tail could not be detected';
    if (allowOpen) warnings.add(file, facts.lastSeq, `${reason} (accepted: --open)`);
    else failures.add(file, facts.lastSeq, reason);
    return;
  }
  if (facts.sealSeq === null) {
    failures.add(file, final.seq, `a final head was signed at seq ${final.seq} but the store was never sealed (no SystemEvent.StoreSealed): appends were never refused after it`);
  } else if (final.seq !== facts.sealSeq) {
    // The hash at final.seq is compared with the store by checkHead; here: is it the seal?
    failures.add(file, final.seq, `the final signed head names seq ${final.seq}, not the SystemEvent.StoreSealed at seq ${facts.sealSeq}`);
  }
  if (facts.lastSeq > final.seq) {
    failures.add(file, final.seq + 1, `events after the final signed head (seq ${final.seq}); the store goes on to seq ${facts.lastSeq}`);
  }
}

export function verifyDirectory(root: string, options: VerifyOptions = {}): VerifyReport {
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new VerifyInputError(`${root} is not a folder; give the run or study folder to verify`);
  const failures = new FailureList(root);
  const warnings = new FailureList(root);
  const found = findRunFiles(root);
  if (found.stores.length === 0) failures.add(root, null, `no ${RUN_FILES.store} under ${root}`);
  let events = 0;
  const storeFacts = new Map<string, StoreFacts>();
  const closers: (() => void)[] = [];
  try {
    for (const file of found.stores) {
      const chainHeadEvents: { seq: number; payload: unknown }[] = [];
      const result = verifyStore(file, failures, chainHeadEvents);
      if (!result) continue;
      closers.push(result.close);
      events += result.events;
      // A damaged store (already a failure) is not compared with the files beside it.
      if (result.facts === null) continue;
      const facts = result.facts;
      storeFacts.set(path.dirname(file), facts);
      const dir = path.dirname(file);
      if (!existsSync(path.join(dir, RUN_FILES.heads))) {
        const reason = `no ${RUN_FILES.heads}: no signed head covers this store`;
        if (facts.sealSeq !== null) failures.add(file, facts.sealSeq, `${NEVER_SIGNED} (${reason})`);
        else if (options.allowOpen) warnings.add(file, facts.lastSeq, `${reason} (accepted: --open)`);
        else failures.add(file, facts.lastSeq, reason);
      }
      if (!existsSync(path.join(dir, RUN_FILES.manifest))) failures.add(file, 1, `no ${RUN_FILES.manifest}: the manifest hash in StoreOpened cannot be checked`);
      if (chainHeadEvents.length === 0) continue;
      const key = readKey(file, root, failures);
      if (!key) continue;
      for (const event of chainHeadEvents) {
        const payload = event.payload as { head: unknown; envelope: unknown };
        const verified = verifyDsse(payload.envelope, CHAIN_HEAD_PAYLOAD_TYPE, key);
        if (!verified.ok) failures.add(file, event.seq, `ChainHeadSigned: ${verified.reason}`);
        else if (canonicalJson(verified.body) !== canonicalJson(payload.head)) failures.add(file, event.seq, 'ChainHeadSigned: the signed body differs from the head in the event');
        else checkHead(file, null, ChainHead.parse(verified.body), facts, failures);
      }
    }

    for (const file of found.signedFiles) {
      const key = readKey(file, root, failures);
      if (!key) continue;
      const facts = storeFacts.get(path.dirname(file)) ?? null;
      if (path.basename(file) === RUN_FILES.heads) {
        verifyHeadsFile(file, key, facts, failures, warnings, options.allowOpen ?? false);
        continue;
      }
      let envelope: unknown;
      try {
        envelope = JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        failures.add(file, null, 'not JSON');
        continue;
      }
      const isManifest = path.basename(file) === RUN_FILES.manifest;
      const declaredType = typeof envelope === 'object' && envelope !== null ? String((envelope as { payloadType?: unknown }).payloadType) : '';
      const verified = verifyDsse(envelope, isManifest ? MANIFEST_PAYLOAD_TYPE : declaredType, key);
      if (!verified.ok) {
        failures.add(file, null, verified.reason);
        continue;
      }
      if (isManifest && facts) {
        if (facts.manifestSha256 !== hashCanonical(verified.body)) {
          failures.add(file, 1, `the signed manifest hashes to ${hashCanonical(verified.body)}, StoreOpened names ${String(facts.manifestSha256)}`);
        }
        const manifest = verified.body as { experiment_id?: unknown; event_schema_version?: unknown };
        if (manifest.experiment_id !== undefined && manifest.experiment_id !== facts.experimentId) {
          failures.add(file, 1, `the signed manifest is for experiment ${String(manifest.experiment_id)}, the store for ${String(facts.experimentId)}`);
        }
        // The catalogue every event is held to is StoreOpened's; the signed manifest must name the same one.
        if (manifest.event_schema_version !== undefined && manifest.event_schema_version !== facts.eventCatalogue) {
          failures.add(file, 1, `the signed manifest names event catalogue ${String(manifest.event_schema_version)}, StoreOpened ${String(facts.eventCatalogue)}`);
        }
      }
    }
  } finally {
    for (const close of closers) close();
  }
  const listed = failures.finish();
  return { ok: listed.length === 0, stores: found.stores.length, events, failures: listed, warnings: warnings.finish() };
}
