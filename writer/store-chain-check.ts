// The walk of one store's chain (writer/verify-store.ts, DESIGN §4): every event in seq order —
// canonical text, schema, hashes, chain links, seq contiguity, StoreOpened first and once, the
// seal once and last, every event at the version of its type that the catalogue StoreOpened names
// (schema/catalogue-versions.ts) — then the projection row, then every page once (quick_check).
// A file that is not intact SQLite is one failure with its code (store-file-failure.ts) after
// whatever could be read from it. It yields the store's facts, which the signed files beside it
// are compared with (signed-files-check.ts), and the ChainHeadSigned events it met. Reads only.
// Why one walk of ~170 lines: every check of an event reads the state the events before it left
// (the previous hash, the subject, the catalogue, the seal), in one pass over the rows.
import type Database from 'better-sqlite3';
import { z } from 'zod';
import { canonicalJson } from '../schema/canonical-json.js';
import { KNOWN_CATALOGUES, versionInCatalogue } from '../schema/catalogue-versions.js';
import { EventEnvelope } from '../schema/envelope.js';
import { computeEventHash, computePayloadHash, envelopeTexts, eventIdFor, MAX_SEQ, type EnvelopeTexts } from '../schema/envelope-hash.js';
import { eventDefinition } from '../schema/event-catalog.js';
import { ChainHeadSigned, StoreOpened, StoreSealed } from '../schema/events/system-events.js';
import { GENESIS_HASH, hashText } from '../schema/hash.js';
import { classifyStoreError, quickCheckFailure, storeFileCode, type StoreFileFailure } from './store-file-failure.js';
import { openStoreReadOnly, StoreReadError } from './store-reader.js';
import type { FailureList } from './verify-failure-list.js';
import type { VerifiedEvents } from './verified-events.js';

/** What the signed files beside a store are compared with (signed-files-check.ts). */
export interface StoreFacts {
  readonly experimentId: string | null;
  readonly manifestSha256: string | null;
  /** The event catalogue StoreOpened names (event_schema_version), or null when it names none. */
  readonly eventCatalogue: string | null;
  readonly lastSeq: number;
  /** Seq of the (first) SystemEvent.StoreSealed, or null for a store that was never sealed. */
  readonly sealSeq: number | null;
  readonly hashAt: (seq: number) => string | null;
}

/** A SystemEvent.ChainHeadSigned met in the walk: its signed head is checked once the store's facts are known. */
export interface ChainHeadEvent {
  readonly seq: number;
  readonly payload: unknown;
}

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
export interface VerifiedStore {
  readonly facts: StoreFacts | null;
  readonly events: number;
  readonly close: () => void;
}

/** `keep`: filled with the rows as read and parsed (verified-events.ts), spoiled when the store has any failure. */
export function verifyStore(file: string, failures: FailureList, chainHeadEvents: ChainHeadEvent[], keep: VerifiedEvents | null = null): VerifiedStore | null {
  let db: Database.Database;
  try {
    db = openStoreReadOnly(file);
  } catch (error) {
    if (!(error instanceof StoreReadError)) throw error;
    failures.add(file, null, unreadableStoreReason(error));
    keep?.spoil();
    return null;
  }
  let walked: WalkedStore;
  try {
    walked = walkStore(db, file, failures, chainHeadEvents, keep);
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
  // Only the rows of a store with no failure at all are handed on; the others' checks read it themselves.
  if (failure !== null || failures.has(file)) keep?.spoil();
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
function walkStore(db: Database.Database, file: string, failures: FailureList, chainHeadEvents: ChainHeadEvent[], keep: VerifiedEvents | null): WalkedStore {
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
      const parsed = EventEnvelope.safeParse(raw);
      // The envelope's texts built once (envelopeTexts): its canonical text, and the two its hashes are of.
      let texts: EnvelopeTexts | null = null;
      try {
        texts = parsed.success ? envelopeTexts(parsed.data) : null;
      } catch {
        texts = null; // said below, by canonicalJson of what was stored
      }
      // The stored text is its canonical form when the parsed envelope's canonical text is it (a
      // canonical text parses back to the one value it is the text of); otherwise (rare: a forged
      // or broken row) canonicalJson of the stored value decides and says why, as it always did.
      if (texts === null || texts.envelope !== row.envelope) {
        let canonical: string | null = null;
        try {
          canonical = canonicalJson(raw);
        } catch (error) {
          at(`stored envelope has no canonical form: ${error instanceof Error ? error.message : String(error)}`);
        }
        if (canonical !== null && canonical !== row.envelope) at('stored text is not the canonical (RFC 8785) form of the envelope');
      }
      if (!parsed.success) {
        at(`envelope does not match the schema: ${z.prettifyError(parsed.error)}`);
        previousHash = null;
        continue;
      }
      const env = parsed.data;
      keep?.add(row.envelope, env);
      if (env.seq !== row.seq) at(`envelope says seq ${env.seq} but is stored at seq ${row.seq} (rows moved or swapped)`);
      if (env.event_id !== row.event_id || env.event_type !== row.event_type || env.idempotency_key !== row.idempotency_key) {
        at('indexed columns (event_id, event_type, idempotency_key) differ from the envelope');
      }
      if (previousHash === null) at('chain link unchecked: the previous event could not be read');
      else if (env.previous_event_hash !== previousHash) {
        at(row.seq === 1 ? 'seq 1 must link to the genesis hash (sha256: and 64 zeros)' : `chain link broken: previous_event_hash is not the event_hash of seq ${row.seq - 1}`);
      }
      if ((texts === null ? computePayloadHash(env.payload) : hashText(texts.payload)) !== env.payload_hash) at('payload_hash does not match the payload (payload edited?)');
      if ((texts === null ? computeEventHash(env) : hashText(texts.withoutEventHash)) !== env.event_hash) at('event_hash does not match the envelope (event edited?)');

      if (row.seq === 1 && env.event_type === StoreOpened.type) {
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
        if (env.event_type !== StoreOpened.type) at(`the first event is ${env.event_type}, not SystemEvent.StoreOpened`);
        else {
          subjectId = env.subject_id;
          experimentId = String(env.payload.experiment_id);
          manifestSha256 = String(env.payload.manifest_sha256);
          if (env.payload.subject_id !== env.subject_id) at(`StoreOpened names subject ${String(env.payload.subject_id)} but its envelope says ${env.subject_id}`);
        }
      } else if (env.event_type === StoreOpened.type) at('a second SystemEvent.StoreOpened: another chain was spliced in');
      if (subjectId !== null && env.subject_id !== subjectId) at(`subject_id ${env.subject_id} differs from the store's ${subjectId}`);
      if (env.seq > MAX_SEQ) at(`seq ${env.seq} is beyond the largest seq an event id can carry (${MAX_SEQ})`);
      else if (env.event_id !== eventIdFor(env.subject_id, env.seq)) at('event_id is not the one derived from subject_id and seq');
      if (env.event_type === ChainHeadSigned.type) chainHeadEvents.push({ seq: env.seq, payload: env.payload });
      if (env.event_type === StoreSealed.type) {
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
