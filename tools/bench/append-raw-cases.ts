// The append benchmark's rows and its raw side (append-bench.ts runs them against the writer):
// events of the writer's envelope shape and size (JCS key order, full-length fake hashes, the
// writer's event_id derivation), so raw SQLite stores the same bytes and the same index keys per
// event as the writer does; and raw better-sqlite3 with the writer's pragmas and layout, kept
// open for a round's interleaved chunks (paired-ratio.ts), plus one commit after idle for the
// wake-overhead benchmark.
import Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { eventIdFor } from '../../schema/envelope-hash.js';
import type { PayloadOf } from '../../schema/event-catalog.js';
import { MessageReceived } from '../../schema/events/world-events.js';
import { draftOf } from '../../writer/event-draft.js';
import type { EventDraft } from '../../writer/protocol.js';
import { CREATE_STORE_SQL } from '../../writer/store-schema.js';
import { median } from './bench-util.js';

export const WARMUP_SINGLE_COMMITS = 200;
export const WARMUP_BATCHES = 10;
export const ENVELOPE_TARGET_BYTES = 700;
export const SUBJECT_ID = 'subject-bench-001';
const EVENT_TYPE = MessageReceived.type;
const FILLER = 'The dataset will follow once the reviewers have signed off on the protocol. ';

// ---------------------------------------------------------------------------------
// Rows

const FAKE_HASH = `sha256:${'ab'.repeat(32)}`;
const FAKE_TIME = '2026-07-20T08:00:00.000Z';

function messageBody(chars: number): string {
  const repeats = Math.ceil(chars / FILLER.length) + 1;
  return FILLER.repeat(repeats).slice(0, chars);
}

function messagePayload(index: number, bodyChars: number): PayloadOf<typeof EVENT_TYPE> {
  return { body: messageBody(bodyChars), from: 'reviewer', in_reply_to: null, subject: `note ${index}` };
}

/** A valid WorldEvent.MessageReceived draft for the experiment role (shape as in the writer tests). */
export function messageDraft(index: number, bodyChars: number): EventDraft {
  return draftOf(EVENT_TYPE, messagePayload(index, bodyChars), { occurred_at: FAKE_TIME, actor: 'experiment', causation_id: null, correlation_id: 'wake-0001', idempotency_key: null });
}

function envelopeLikeText(seq: number, eventId: string, bodyChars: number): string {
  return JSON.stringify({
    actor: 'experiment',
    causation_id: null,
    correlation_id: 'wake-0001',
    event_hash: FAKE_HASH,
    event_id: eventId,
    event_type: EVENT_TYPE,
    idempotency_key: null,
    occurred_at: FAKE_TIME,
    payload: messagePayload(seq, bodyChars),
    payload_hash: FAKE_HASH,
    previous_event_hash: FAKE_HASH,
    recorded_at: FAKE_TIME,
    schema_version: MessageReceived.schemaVersion,
    seq,
    subject_id: SUBJECT_ID,
  });
}

/** Body length that makes an envelope of a mid-run seq come out at the target size. */
export function bodyCharsForTarget(typicalSeq: number): number {
  const overheadBytes = Buffer.byteLength(envelopeLikeText(typicalSeq, eventIdFor(SUBJECT_ID, typicalSeq), 0));
  return Math.max(ENVELOPE_TARGET_BYTES - overheadBytes, 0);
}

// ---------------------------------------------------------------------------------
// Measurements

export interface Timed {
  readonly events: number;
  readonly elapsedMs: number;
  readonly eventsPerSecond: number;
}

export function timed(events: number, elapsedMs: number): Timed {
  return { events, elapsedMs, eventsPerSecond: events / (elapsedMs / 1_000) };
}

/** One case of a round: its store (and writer) open and warmed up, timed chunk by chunk. */
export interface CaseSession {
  /** Commits the next `events` events (whole batches for a batched case) and times them. */
  readonly chunk: (events: number) => Promise<Timed>;
  readonly envelopeBytes: () => Promise<number>;
}

// ---------------------------------------------------------------------------------
// Raw better-sqlite3 with the writer's pragmas and layout.

interface RawRow {
  readonly seq: number;
  readonly eventId: string;
  readonly text: string;
}

interface RawStore {
  readonly db: Database.Database;
  readonly insert: Database.Statement<[number, string, string, null, string]>;
}

function openRawStore(dbPath: string): RawStore {
  const db = new Database(dbPath);
  // Same order as the writer: exclusive locking must precede the switch to WAL.
  db.pragma('locking_mode = EXCLUSIVE');
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (mode !== 'wal') throw new Error(`raw store did not switch to WAL (journal_mode is ${String(mode)})`);
  db.pragma('synchronous = FULL');
  db.pragma('recursive_triggers = ON');
  db.exec(CREATE_STORE_SQL);
  const insert = db.prepare<[number, string, string, null, string]>('INSERT INTO events (seq, event_id, event_type, idempotency_key, envelope) VALUES (?, ?, ?, ?, ?)');
  return { db, insert };
}

/** Pre-renders rows (ids and texts) so the timed loop measures SQLite, not hashing or JSON. */
function renderRows(count: number, bodyChars: number): RawRow[] {
  const rows: RawRow[] = new Array<RawRow>(count);
  for (let i = 0; i < count; i += 1) {
    const seq = i + 1;
    const eventId = eventIdFor(SUBJECT_ID, seq);
    rows[i] = { seq, eventId, text: envelopeLikeText(seq, eventId, bodyChars) };
  }
  return rows;
}

function insertRow(store: RawStore, row: RawRow): void {
  store.insert.run(row.seq, row.eventId, EVENT_TYPE, null, row.text);
}

/**
 * Raw single durable commits, kept open for a round's chunks. `withProjection`: each commit also
 * updates the projection row, as the store's must (DESIGN §12.2: the projected state is
 * committed with the events), with a state the size of the bench's event-counts projection: the
 * same durable work, without the writer. `close` when the round ends.
 */
export function openRawSingle(dbPath: string, events: number, bodyChars: number, withProjection: boolean): CaseSession & { close: () => void } {
  const store = openRawStore(dbPath);
  const rows = renderRows(WARMUP_SINGLE_COMMITS + events, bodyChars);
  const updateProjection = withProjection ? insertProjectionRow(store.db) : null;
  const commitOne = store.db.transaction((row: RawRow) => {
    insertRow(store, row);
    updateProjection?.(row.seq);
  });
  for (let i = 0; i < WARMUP_SINGLE_COMMITS; i += 1) commitOne.immediate(rows[i]!);
  let next = WARMUP_SINGLE_COMMITS;
  return {
    chunk: async (count) => {
      if (next + count > rows.length) throw new Error(`raw single: ${count} more rows asked, ${rows.length - next} rendered`);
      const startMs = performance.now();
      for (const end = next + count; next < end; next += 1) commitOne.immediate(rows[next]!);
      return timed(count, performance.now() - startMs);
    },
    envelopeBytes: async () => Buffer.byteLength(rows[rows.length - 1]!.text),
    close: () => store.db.close(),
  };
}

/**
 * One durable single-row commit (envelopes of the append benchmark's size) after `idleMs` of idle, median of `samples` (a warm-up of
 * WARMUP_SINGLE_COMMITS first): what a wake's commits cost, each after the pause its model call
 * or its round trips leave. On this 2-core VM a commit after 20 ms or more idle took ~3x the
 * tight loop's (measured: 0.25 ms back to back, ~0.85 ms after 20-200 ms).
 */
export async function rawCommitAfterIdleMs(dbPath: string, idleMs: number, samples: number): Promise<number> {
  const store = openRawStore(dbPath);
  try {
    const rows = renderRows(WARMUP_SINGLE_COMMITS + samples, bodyCharsForTarget(WARMUP_SINGLE_COMMITS));
    const commitOne = store.db.transaction((row: RawRow) => insertRow(store, row));
    for (let i = 0; i < WARMUP_SINGLE_COMMITS; i += 1) commitOne.immediate(rows[i]!);
    const times: number[] = [];
    for (let i = WARMUP_SINGLE_COMMITS; i < rows.length; i += 1) {
      await delay(idleMs);
      const startMs = performance.now();
      commitOne.immediate(rows[i]!);
      times.push(performance.now() - startMs);
    }
    return median(times);
  } finally {
    store.db.close();
  }
}

/** Inserts the projection row; returns the per-commit update of it (a state of ~100 chars, a hash, the seq). */
function insertProjectionRow(db: Database.Database): (seq: number) => void {
  // The shape of a small projection state (its content is not read back): counts, the last seq, a total.
  const stateOf = (seq: number): string => JSON.stringify({ by_type: { opened: 1, [EVENT_TYPE]: seq - 1 }, last_seq: seq, total: seq });
  db.prepare("INSERT INTO projection VALUES (1, 'event-counts', '1', '1', '1', ?, ?, 0)").run(stateOf(0), FAKE_HASH);
  const update = db.prepare<[string, string, number]>('UPDATE projection SET state = ?, state_hash = ?, last_applied_event_seq = ? WHERE id = 1');
  return (seq) => {
    update.run(stateOf(seq), FAKE_HASH, seq);
  };
}

/** Raw batched commits, kept open for a round's chunks; `close` when the round ends. */
export function openRawBatched(dbPath: string, events: number, batchSize: number, bodyChars: number): CaseSession & { close: () => void } {
  const store = openRawStore(dbPath);
  const warmupRows = WARMUP_BATCHES * batchSize;
  const rows = renderRows(warmupRows + events, bodyChars);
  const commitBatch = store.db.transaction((first: number) => {
    for (let i = first; i < first + batchSize; i += 1) insertRow(store, rows[i]!);
  });
  for (let first = 0; first < warmupRows; first += batchSize) commitBatch.immediate(first);
  let next = warmupRows;
  return {
    chunk: async (count) => {
      if (count % batchSize !== 0 || next + count > rows.length) throw new Error(`raw batched: ${count} rows asked (batches of ${batchSize}), ${rows.length - next} rendered`);
      const startMs = performance.now();
      for (const end = next + count; next < end; next += batchSize) commitBatch.immediate(next);
      return timed(count, performance.now() - startMs);
    },
    envelopeBytes: async () => Buffer.byteLength(rows[rows.length - 1]!.text),
    close: () => store.db.close(),
  };
}
