// The append half of `npm run bench` (bench.ts runs it, then replay-bench.ts): what the
// writer process costs over raw SQLite doing the same durable work. Four cases, side by
// side in one run so they share one machine state:
//   raw_single     better-sqlite3 in-process, one row per BEGIN IMMEDIATE (durable commit)
//   append_single  the real ds-writer, one event per append, each answer awaited
//   raw_batched    better-sqlite3, B rows per transaction
//   append_batched the real ds-writer, B events per append, several appends in flight
// plus, for reading the numbers, node:crypto sha256 throughput (the writer hashes
// payload and envelope of every event), and where an append's time goes: the stages of one
// request timed in this process (append-stages.ts), and what the end-to-end case costs beyond
// them (the socket, the wake-ups of two processes, their event loops).
// It is a measurement, not a test: it exits 0 when an aim is missed and says MISSED.
//
//   npm run bench -- [--events N] [--batch B] [--rounds R] ...
//     N single-commit events per case and round (batched cases run 20 N), B events per
//     batch, R interleaved rounds whose median is reported.
//
// Logs go to stderr (the writer child logs to stderr too); bench.ts prints the table or,
// with --json, the one JSON object.
// Why one file: it is one benchmark; its fixture rows, its four cases and its table are read
// together and serve nothing else.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { eventIdFor } from '../../schema/envelope-hash.js';
import type { PayloadOf } from '../../schema/event-catalog.js';
import { MessageReceived } from '../../schema/events/world-events.js';
import { hashCanonical } from '../../schema/hash.js';
import { WriterClient } from '../../writer/client.js';
import { draftOf } from '../../writer/event-draft.js';
import { DEFAULT_SNAPSHOT_EVERY_EVENTS, WRITER_LIMITS, type EventDraft } from '../../writer/protocol.js';
import { newToken, spawnWriter } from '../../writer/spawn.js';
import { CREATE_STORE_SQL } from '../../writer/store-schema.js';
import { APPEND_STAGES, measureAppendStages, type StageBreakdown } from './append-stages.js';
import { aim, formatRate, log, median, positiveInt, roundTo, type Aim } from './bench-util.js';

/** Minimum ours/raw throughput ratios the writer is meant to reach (issue 19 item 3). */
export const APPEND_AIMS = { append_single: 0.6, append_batched: 0.5 } as const;

const DEFAULT_SINGLE_EVENTS = 1_500;
const DEFAULT_BATCH_SIZE = 100;
/** fsync latency on a VM disk drifts by 2-4x over seconds; interleaved rounds and
 * medians keep one slow phase from deciding a ratio. */
const DEFAULT_ROUNDS = 3;
/** Batched cases run this many times the single-commit count: they are 5-10x faster per
 * event, and a run of a few dozen milliseconds would mostly measure noise. */
const BATCHED_EVENTS_FACTOR = 20;
const APPENDS_IN_FLIGHT = 8;
const WARMUP_SINGLE_COMMITS = 200;
const WARMUP_BATCHES = 10;
const ENVELOPE_TARGET_BYTES = 700;
const HASH_ITERATIONS = 200_000;
const WRITER_STOP_TIMEOUT_MS = 10_000;
/** Requests of the in-process stage breakdown: a few hundred single commits, a few dozen batches. */
const STAGE_SINGLE_REQUESTS = 300;
const STAGE_BATCHED_REQUESTS = 30;

const SUBJECT_ID = 'subject-bench-001';
const EXPERIMENT_ID = 'exp-bench-001';
const EVENT_TYPE = MessageReceived.type;
const FILLER = 'The dataset will follow once the reviewers have signed off on the protocol. ';

export interface AppendBenchParams {
  readonly singleEvents: number;
  readonly batchedEvents: number;
  readonly batchSize: number;
  readonly rounds: number;
}

// ---------------------------------------------------------------------------------
// Flags (bench.ts parses the command line; UsageError on a bad value)

export const APPEND_USAGE = '[--events N] [--batch B] [--rounds R]';

export function appendParams(values: { events?: string; batch?: string; rounds?: string }): AppendBenchParams {
  const singleEvents = positiveInt('events', values.events, DEFAULT_SINGLE_EVENTS, 1_000_000);
  const batchSize = positiveInt('batch', values.batch, DEFAULT_BATCH_SIZE, WRITER_LIMITS.maxBatchEvents);
  const rounds = positiveInt('rounds', values.rounds, DEFAULT_ROUNDS, 100);
  // Whole batches only, so both batched cases commit exactly the same rows.
  const batchedEvents = Math.ceil((singleEvents * BATCHED_EVENTS_FACTOR) / batchSize) * batchSize;
  return { singleEvents, batchedEvents, batchSize, rounds };
}

// ---------------------------------------------------------------------------------
// Rows of the writer's envelope shape and size (JCS key order, full-length fake
// hashes, the writer's event_id derivation), so raw SQLite stores the same bytes and
// the same index keys per event as the writer does.

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
function messageDraft(index: number, bodyChars: number): EventDraft {
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
function bodyCharsForTarget(typicalSeq: number): number {
  const overheadBytes = Buffer.byteLength(envelopeLikeText(typicalSeq, eventIdFor(SUBJECT_ID, typicalSeq), 0));
  return Math.max(ENVELOPE_TARGET_BYTES - overheadBytes, 0);
}

// ---------------------------------------------------------------------------------
// Measurements

interface Timed {
  readonly events: number;
  readonly elapsedMs: number;
  readonly eventsPerSecond: number;
  readonly envelopeBytes: number;
}

function timed(events: number, elapsedMs: number, envelopeBytes: number): Timed {
  return { events, elapsedMs, eventsPerSecond: events / (elapsedMs / 1_000), envelopeBytes };
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
 * Raw single durable commits. `withProjection`: each commit also updates the projection row, as
 * the store's must (DESIGN §12.2: the projected state is committed with the events), with a state
 * the size of the bench's event-counts projection: the same durable work, without the writer.
 */
function benchRawSingle(dbPath: string, events: number, bodyChars: number, withProjection = false): Timed {
  const store = openRawStore(dbPath);
  try {
    const rows = renderRows(WARMUP_SINGLE_COMMITS + events, bodyChars);
    const updateProjection = withProjection ? insertProjectionRow(store.db) : null;
    const commitOne = store.db.transaction((row: RawRow) => {
      insertRow(store, row);
      updateProjection?.(row.seq);
    });
    for (let i = 0; i < WARMUP_SINGLE_COMMITS; i += 1) commitOne.immediate(rows[i]!);
    const startMs = performance.now();
    for (let i = WARMUP_SINGLE_COMMITS; i < rows.length; i += 1) commitOne.immediate(rows[i]!);
    const elapsedMs = performance.now() - startMs;
    return timed(events, elapsedMs, Buffer.byteLength(rows[rows.length - 1]!.text));
  } finally {
    store.db.close();
  }
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

function benchRawBatched(dbPath: string, events: number, batchSize: number, bodyChars: number): Timed {
  const store = openRawStore(dbPath);
  try {
    const warmupRows = WARMUP_BATCHES * batchSize;
    const rows = renderRows(warmupRows + events, bodyChars);
    const commitBatch = store.db.transaction((first: number) => {
      for (let i = first; i < first + batchSize; i += 1) insertRow(store, rows[i]!);
    });
    for (let first = 0; first < warmupRows; first += batchSize) commitBatch.immediate(first);
    const startMs = performance.now();
    for (let first = warmupRows; first < rows.length; first += batchSize) commitBatch.immediate(first);
    const elapsedMs = performance.now() - startMs;
    return timed(events, elapsedMs, Buffer.byteLength(rows[rows.length - 1]!.text));
  } finally {
    store.db.close();
  }
}

// ---------------------------------------------------------------------------------
// The real writer process.

async function withWriter<T>(dir: string, name: string, maxInFlight: number, run: (client: WriterClient) => Promise<T>): Promise<T> {
  const tokens = { runtime: newToken(), experiment: newToken() };
  const socketPath = path.join(dir, `${name}.sock`);
  const writer = await spawnWriter({
    db_path: path.join(dir, `${name}.db`),
    socket_path: socketPath,
    mode: 'create',
    subject_id: SUBJECT_ID,
    experiment_id: EXPERIMENT_ID,
    manifest_sha256: hashCanonical({ manifest: 'append-bench' }),
    tokens,
    projection: 'event-counts',
    socket_mode: 0o600,
    snapshot_every: DEFAULT_SNAPSHOT_EVERY_EVENTS,
  });
  let client: WriterClient | null = null;
  try {
    client = await WriterClient.connect(socketPath, 'experiment', tokens.experiment, { maxInFlight });
    return await run(client);
  } finally {
    client?.close();
    const exit = await writer.stop(WRITER_STOP_TIMEOUT_MS);
    if (exit.code !== 0) log(`writer ${name} exited with code ${exit.code}, signal ${exit.signal}`);
  }
}

/** Size of the newest stored envelope, read back through the writer. */
async function storedEnvelopeBytes(client: WriterClient): Promise<number> {
  const head = await client.head();
  const page = await client.read({ from_seq: head.seq, limit: 1 });
  const last = page.events[0];
  if (!last) throw new Error(`writer returned no event at its head seq ${head.seq}`);
  // JCS and JSON.stringify differ only in key order here, not in length.
  return Buffer.byteLength(JSON.stringify(last));
}

/** StoreOpened is seq 1; a head anywhere else means some appends did not land. */
async function expectHeadSeq(client: WriterClient, appendedEvents: number): Promise<void> {
  const head = await client.head();
  if (head.seq !== 1 + appendedEvents) throw new Error(`writer head is seq ${head.seq}, expected ${1 + appendedEvents}`);
}

async function benchAppendSingle(dir: string, name: string, events: number, bodyChars: number): Promise<Timed> {
  return withWriter(dir, name, 1, async (client) => {
    for (let i = 0; i < WARMUP_SINGLE_COMMITS; i += 1) await client.append([messageDraft(i, bodyChars)]);
    const startMs = performance.now();
    for (let i = WARMUP_SINGLE_COMMITS; i < WARMUP_SINGLE_COMMITS + events; i += 1) await client.append([messageDraft(i, bodyChars)]);
    const elapsedMs = performance.now() - startMs;
    await expectHeadSeq(client, WARMUP_SINGLE_COMMITS + events);
    return timed(events, elapsedMs, await storedEnvelopeBytes(client));
  });
}

function draftBatch(firstIndex: number, count: number, bodyChars: number): EventDraft[] {
  const drafts: EventDraft[] = new Array<EventDraft>(count);
  for (let i = 0; i < count; i += 1) drafts[i] = messageDraft(firstIndex + i, bodyChars);
  return drafts;
}

/** Sends `batches` appends of `batchSize` drafts with up to APPENDS_IN_FLIGHT outstanding. */
async function appendPipelined(client: WriterClient, firstIndex: number, batches: number, batchSize: number, bodyChars: number): Promise<void> {
  let nextBatch = 0;
  // Each lane sends its next batch as soon as its previous one was answered; lanes share
  // the counter, so exactly `batches` appends go out.
  const lane = async (): Promise<void> => {
    for (let claimed = nextBatch++; claimed < batches; claimed = nextBatch++) {
      await client.append(draftBatch(firstIndex + claimed * batchSize, batchSize, bodyChars));
    }
  };
  await Promise.all(Array.from({ length: Math.min(APPENDS_IN_FLIGHT, batches) }, lane));
}

async function benchAppendBatched(dir: string, name: string, events: number, batchSize: number, bodyChars: number): Promise<Timed> {
  return withWriter(dir, name, APPENDS_IN_FLIGHT, async (client) => {
    const warmupEvents = WARMUP_BATCHES * batchSize;
    await appendPipelined(client, 0, WARMUP_BATCHES, batchSize, bodyChars);
    const startMs = performance.now();
    await appendPipelined(client, warmupEvents, events / batchSize, batchSize, bodyChars);
    const elapsedMs = performance.now() - startMs;
    await expectHeadSeq(client, warmupEvents + events);
    return timed(events, elapsedMs, await storedEnvelopeBytes(client));
  });
}

// ---------------------------------------------------------------------------------
// Hashing, for reference: the writer hashes payload and envelope of every event (and
// derives its event_id with a third hash).

function benchSha256(iterations: number): number {
  const buffer = Buffer.alloc(ENVELOPE_TARGET_BYTES, 0x61);
  for (let i = 0; i < 1_000; i += 1) createHash('sha256').update(buffer).digest();
  const startMs = performance.now();
  for (let i = 0; i < iterations; i += 1) createHash('sha256').update(buffer).digest();
  const elapsedMs = performance.now() - startMs;
  return iterations / (elapsedMs / 1_000);
}

// ---------------------------------------------------------------------------------
// Rounds and report

const CASES = ['raw_single', 'raw_single_projection', 'append_single', 'raw_batched', 'append_batched'] as const;
type CaseName = (typeof CASES)[number];
type Round = Record<CaseName, Timed> & {
  /** The in-process stages, measured in the round right after the matching writer case, so both see the same disk. */
  readonly stages: Record<'single' | 'batched', StageBreakdown>;
};

/** One pass over every case, each on a fresh store; the round's files go when it ends so
 * disk use stays at one round's worth. */
async function runRound(parentDir: string, roundNumber: number, params: AppendBenchParams, bodyChars: number): Promise<Round> {
  const dir = mkdtempSync(path.join(parentDir, `r${roundNumber}-`));
  try {
    return await runCases(dir, roundNumber, params, bodyChars);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runCases(dir: string, roundNumber: number, params: AppendBenchParams, bodyChars: number): Promise<Round> {
  const file = (name: string): string => path.join(dir, `${name}.db`);
  const report = (name: CaseName, result: Timed): Timed => {
    log(`round ${roundNumber}: ${name.padEnd(26)} ${formatRate(result.eventsPerSecond).padStart(9)} /s  (${result.events} in ${result.elapsedMs.toFixed(0)} ms)`);
    return result;
  };
  const rawSingle = report('raw_single', benchRawSingle(file('raw-single'), params.singleEvents, bodyChars));
  const rawSingleProjection = report('raw_single_projection', benchRawSingle(file('raw-single-projection'), params.singleEvents, bodyChars, true));
  const appendSingle = report('append_single', await benchAppendSingle(dir, 'append-single', params.singleEvents, bodyChars));
  const draftAt = (index: number): EventDraft => messageDraft(index, bodyChars);
  const stageSingle = measureAppendStages(dir, Math.min(STAGE_SINGLE_REQUESTS, params.singleEvents), 1, draftAt);
  const rawBatched = report('raw_batched', benchRawBatched(file('raw-batched'), params.batchedEvents, params.batchSize, bodyChars));
  const appendBatched = report('append_batched', await benchAppendBatched(dir, 'append-batched', params.batchedEvents, params.batchSize, bodyChars));
  const stageBatched = measureAppendStages(dir, Math.min(STAGE_BATCHED_REQUESTS, params.batchedEvents / params.batchSize), params.batchSize, draftAt);
  log(`round ${roundNumber}: stages in process ${stageSingle.in_process_total.wall_us} µs per single append, ${stageBatched.in_process_total.wall_us} µs per batched event (wall)`);
  return { raw_single: rawSingle, raw_single_projection: rawSingleProjection, append_single: appendSingle, raw_batched: rawBatched, append_batched: appendBatched, stages: { single: stageSingle, batched: stageBatched } };
}

function medianRate(rounds: readonly Round[], name: CaseName): number {
  return median(rounds.map((r) => r[name].eventsPerSecond));
}

export type AppendRatioName = keyof typeof APPEND_AIMS;

export interface AppendBenchResult {
  /** raw, ours, ratios, aims, params: the keys `npm run bench -- --json` had before replay joined. */
  readonly report: {
    readonly raw: Record<string, number>;
    readonly ours: Record<string, number>;
    readonly ratios: Record<AppendRatioName, number>;
    readonly aims: Record<AppendRatioName, Aim>;
    readonly params: Record<string, unknown>;
    /** Where an append's time goes, per event, single and batched (append-stages.ts). */
    readonly breakdown: Record<'single' | 'batched', AppendBreakdown>;
  };
  /** Unrounded, for the aim lines. */
  readonly ratios: Record<AppendRatioName, number>;
  /** The append section of the table, without the aim lines (bench.ts prints every aim together). */
  readonly tableLines: string[];
}

/** The in-process stages, and the measured end-to-end and raw costs per event they add up against. */
export interface AppendBreakdown {
  readonly stages_per_event: StageBreakdown;
  /** 1e6 / the case's median rate: what an event cost through the real writer process. */
  readonly end_to_end_wall_us: number;
  /** Median over rounds of (the round's end to end less its in-process stages' wall): the socket, two processes' wake-ups and event loops. */
  readonly beyond_in_process_wall_us: number;
  /** 1e6 / the matching raw case's median rate. */
  readonly raw_wall_us: number;
}

/** Each stage's median over the rounds; `beyond` per round first, then its median, so it never mixes two rounds' disks. */
function breakdownOf(rounds: readonly Round[], kind: 'single' | 'batched'): AppendBreakdown {
  const ours: CaseName = kind === 'single' ? 'append_single' : 'append_batched';
  const raw: CaseName = kind === 'single' ? 'raw_single' : 'raw_batched';
  const stageNames = [...APPEND_STAGES, 'in_process_total'] as const;
  const stages = Object.fromEntries(
    stageNames.map((stage) => [stage, { wall_us: median(rounds.map((r) => r.stages[kind][stage].wall_us)), cpu_us: median(rounds.map((r) => r.stages[kind][stage].cpu_us)) }]),
  ) as StageBreakdown;
  return {
    stages_per_event: stages,
    end_to_end_wall_us: roundTo(1e6 / medianRate(rounds, ours), 1),
    beyond_in_process_wall_us: roundTo(median(rounds.map((r) => 1e6 / r[ours].eventsPerSecond - r.stages[kind].in_process_total.wall_us)), 1),
    raw_wall_us: roundTo(1e6 / medianRate(rounds, raw), 1),
  };
}

function breakdownLines(name: string, b: AppendBreakdown): string[] {
  const lines = [`  ${name}: µs per event, wall / CPU (in this process, the writer's own functions)`];
  for (const stage of APPEND_STAGES) {
    const cost = b.stages_per_event[stage];
    lines.push(`    ${stage.padEnd(34)} ${cost.wall_us.toFixed(1).padStart(8)} / ${cost.cpu_us.toFixed(1).padStart(7)}`);
  }
  const total = b.stages_per_event.in_process_total;
  lines.push(`    ${'in-process total'.padEnd(34)} ${total.wall_us.toFixed(1).padStart(8)} / ${total.cpu_us.toFixed(1).padStart(7)}`);
  lines.push(`    ${'end to end (writer process)'.padEnd(34)} ${b.end_to_end_wall_us.toFixed(1).padStart(8)}   (raw SQLite ${b.raw_wall_us.toFixed(1)})`);
  // Batched appends are in flight together, so client and writer stages overlap; a single one's
  // disk can also be slower in the stage run than in the case it is set against.
  const overlap = b.beyond_in_process_wall_us < 0 ? '   (below zero: overlapping stages, or a slower disk in the stage run)' : '';
  lines.push(`    ${'beyond: socket, wake-ups, loops'.padEnd(34)} ${b.beyond_in_process_wall_us.toFixed(1).padStart(8)}${overlap}`);
  return lines;
}

export async function runAppendBench(params: AppendBenchParams, parentDir: string): Promise<AppendBenchResult> {
  const dir = mkdtempSync(path.join(parentDir, 'append-'));
  // Envelope length grows with the digits of seq (and of the `note N` subject); mid-run is close enough.
  const bodyChars = bodyCharsForTarget(params.batchedEvents / 2);
  try {
    log(`append: ${params.rounds} rounds of ${params.singleEvents} single commits and ${params.batchedEvents} batched events (batches of ${params.batchSize})`);
    const sha256HashesPerSecond = benchSha256(HASH_ITERATIONS);
    log(`sha256 of ${ENVELOPE_TARGET_BYTES} B: ${formatRate(sha256HashesPerSecond)} hashes/s`);
    const rounds: Round[] = [];
    for (let r = 1; r <= params.rounds; r += 1) rounds.push(await runRound(dir, r, params, bodyChars));

    const rate = (name: CaseName): number => medianRate(rounds, name);
    const ratios = {
      append_single: rate('append_single') / rate('raw_single'),
      append_batched: rate('append_batched') / rate('raw_batched'),
    };
    const aims = {
      append_single: aim(ratios.append_single, APPEND_AIMS.append_single),
      append_batched: aim(ratios.append_batched, APPEND_AIMS.append_batched),
    };
    const first = rounds[0]!;
    const report = {
      raw: {
        single_events_per_second: roundTo(rate('raw_single')),
        single_with_projection_row_events_per_second: roundTo(rate('raw_single_projection')),
        batched_rows_per_second: roundTo(rate('raw_batched')),
        sha256_700B_hashes_per_second: roundTo(sha256HashesPerSecond),
      },
      ours: {
        append_single_events_per_second: roundTo(rate('append_single')),
        append_batched_events_per_second: roundTo(rate('append_batched')),
      },
      ratios: { append_single: roundTo(ratios.append_single, 4), append_batched: roundTo(ratios.append_batched, 4) },
      aims,
      breakdown: {
        single: breakdownOf(rounds, 'single'),
        batched: breakdownOf(rounds, 'batched'),
      },
      params: {
        aggregate: 'median of rounds',
        rounds: params.rounds,
        single_events: params.singleEvents,
        batched_events: params.batchedEvents,
        batch_size: params.batchSize,
        appends_in_flight: APPENDS_IN_FLIGHT,
        warmup_single_commits: WARMUP_SINGLE_COMMITS,
        warmup_batches: WARMUP_BATCHES,
        envelope_target_bytes: ENVELOPE_TARGET_BYTES,
        envelope_bytes_raw: first.raw_single.envelopeBytes,
        envelope_bytes_writer: first.append_single.envelopeBytes,
        raw_event_ids: 'eventIdFor(subject, seq), as the writer',
        sha256_iterations: HASH_ITERATIONS,
        per_round_events_per_second: Object.fromEntries(CASES.map((name) => [name, rounds.map((r) => roundTo(r[name].eventsPerSecond))])),
        pragmas: { locking_mode: 'EXCLUSIVE', journal_mode: 'WAL', synchronous: 'FULL', recursive_triggers: 'ON' },
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpus: os.cpus().length,
        tmpdir: os.tmpdir(),
      },
    };

    const table: [string, number, string][] = [
      ['raw_single', rate('raw_single'), 'events/s  1 row per durable commit'],
      ['raw_single + proj.', rate('raw_single_projection'), `events/s  and the projection row updated in the same commit, as the store must: append_single is ${(rate('append_single') / rate('raw_single_projection')).toFixed(3)} of this`],
      ['append_single', rate('append_single'), 'events/s  1 event per append, each awaited'],
      ['raw_batched', rate('raw_batched'), `rows/s    ${params.batchSize} rows per commit`],
      ['append_batched', rate('append_batched'), `events/s  ${params.batchSize} per append, ${APPENDS_IN_FLIGHT} appends in flight`],
      ['sha256 700 B', sha256HashesPerSecond, 'hashes/s  informational: node:crypto'],
    ];
    const tableLines: string[] = [
      `append benchmark: median of ${params.rounds} rounds; envelopes ${first.append_single.envelopeBytes} B (raw rows ${first.raw_single.envelopeBytes} B);`,
      `${params.singleEvents} single-commit events, ${params.batchedEvents} batched events per case and round`,
      '',
    ];
    for (const [name, value, unit] of table) tableLines.push(`  ${name.padEnd(20)} ${formatRate(value).padStart(10)}  ${unit}`);
    tableLines.push('', 'where an append goes (store_sqlite_and_durable_commit is store.append less the two store rows above it):');
    tableLines.push(...breakdownLines('append_single', report.breakdown.single), ...breakdownLines(`append_batched (${params.batchSize} per append)`, report.breakdown.batched));
    return { report, ratios, tableLines };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
