// The append half of `npm run bench` (bench.ts runs it, then replay-bench.ts): what the
// writer process costs over raw SQLite doing the same durable work. Five cases, interleaved in
// one run so they share one machine state:
//   raw_single     better-sqlite3 in-process, one row per BEGIN IMMEDIATE (durable commit)
//   raw_single_projection  the same, and the projection row updated in each commit
//   append_single  the real ds-writer, one event per append, each answer awaited
//   raw_batched    better-sqlite3, B rows per transaction
//   append_batched the real ds-writer, B events per append, several appends in flight
// plus, for reading the numbers, node:crypto sha256 throughput (the writer hashes
// payload and envelope of every event), and where an append's time goes: the stages of one
// request timed in this process (append-stages.ts), and what the end-to-end case costs beyond
// them (the socket, the wake-ups of two processes, their event loops).
// Ratios come from interleaved pairs (paired-ratio.ts): within a round every case keeps one
// store (and the writer cases one writer) open, warmed up once, and the round's events go in
// PAIRS_PER_ROUND chunks, raw and ours back to back, the order alternating; each pair gives a
// ratio, the figure is their median and the spread is shown. A ratio of medians of rounds
// measured at different moments read 3.28 once (issue 34): the load, not the code.
// It is a measurement, not a test: it exits 0 when an aim is missed and says MISSED.
//
//   npm run bench -- [--events N] [--batch B] [--rounds R] ...
//     N single-commit events per case and round (batched cases run 20 N), B events per
//     batch, R rounds of PAIRS_PER_ROUND interleaved pairs each.
//
// Logs go to stderr (the writer child logs to stderr too); bench.ts prints the table or,
// with --json, the one JSON object.
// Why one file: it is one benchmark; its writer cases, its interleaved rounds and its table are
// read together and serve nothing else (its rows and raw cases are append-raw-cases.ts).
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { hashCanonical } from '../../schema/hash.js';
import { WriterClient } from '../../writer/client.js';
import { DEFAULT_SNAPSHOT_EVERY_EVENTS, WRITER_LIMITS, type EventDraft } from '../../writer/protocol.js';
import { newToken, spawnWriter } from '../../writer/spawn.js';
import { APPEND_STAGES, measureAppendStages, type StageBreakdown } from './append-stages.js';
import { bodyCharsForTarget, ENVELOPE_TARGET_BYTES, messageDraft, openRawBatched, openRawSingle, SUBJECT_ID, timed, WARMUP_BATCHES, WARMUP_SINGLE_COMMITS, type CaseSession, type Timed } from './append-raw-cases.js';
import { formatRate, log, median, positiveInt, roundTo } from './bench-util.js';
import { beyondBoundText, interleavedOrder, pairedRatio, pairedText, type PairedRatio, type RatePair } from './paired-ratio.js';

/** Minimum ours/raw throughput ratios the writer is meant to reach (issue 19 item 3). */
export const APPEND_AIMS = { append_single: 0.6, append_batched: 0.5 } as const;

const DEFAULT_SINGLE_EVENTS = 1_500;
const DEFAULT_BATCH_SIZE = 100;
/** fsync latency on a VM disk drifts by 2-4x over seconds; rounds of short interleaved pairs
 * and the median of the pair ratios keep one slow phase from deciding a ratio. */
const DEFAULT_ROUNDS = 3;
/**
 * Pairs per round: each case's events of a round go in this many chunks, the cases' chunks
 * interleaved. Even, so raw goes first in half the pairs; six chunks of the default 1,500 events
 * are ~60 ms raw, ~200 ms through the writer: short enough to share one machine state.
 */
export const PAIRS_PER_ROUND = 6;
/** Batched cases run this many times the single-commit count: they are 5-10x faster per
 * event, and a run of a few dozen milliseconds would mostly measure noise. */
const BATCHED_EVENTS_FACTOR = 20;
const APPENDS_IN_FLIGHT = 8;
const HASH_ITERATIONS = 200_000;
const WRITER_STOP_TIMEOUT_MS = 10_000;
/** Requests of the in-process stage breakdown: a few hundred single commits, a few dozen batches. */
const STAGE_SINGLE_REQUESTS = 300;
const STAGE_BATCHED_REQUESTS = 30;

const EXPERIMENT_ID = 'exp-bench-001';

export interface AppendBenchParams {
  /** Per case and round: PAIRS_PER_ROUND chunks of singleChunkEvents (--events rounded up to whole chunks). */
  readonly singleEvents: number;
  /** What --events asked for (the run says so when it rounded up). */
  readonly singleEventsAsked: number;
  readonly singleChunkEvents: number;
  /** Per case and round: PAIRS_PER_ROUND chunks of batchedChunkEvents, whole batches. */
  readonly batchedEvents: number;
  readonly batchedChunkEvents: number;
  readonly batchSize: number;
  readonly rounds: number;
}

// ---------------------------------------------------------------------------------
// Flags (bench.ts parses the command line; UsageError on a bad value)

export const APPEND_USAGE = '[--events N] [--batch B] [--rounds R]';

export function appendParams(values: { events?: string; batch?: string; rounds?: string }): AppendBenchParams {
  const asked = positiveInt('events', values.events, DEFAULT_SINGLE_EVENTS, 1_000_000, PAIRS_PER_ROUND);
  const batchSize = positiveInt('batch', values.batch, DEFAULT_BATCH_SIZE, WRITER_LIMITS.maxBatchEvents);
  const rounds = positiveInt('rounds', values.rounds, DEFAULT_ROUNDS, 100);
  // Whole chunks of whole batches, so every pair's two sides commit exactly the same rows; N is
  // rounded up to them (the report's params say the counts used).
  const singleChunkEvents = Math.ceil(asked / PAIRS_PER_ROUND);
  const batchedChunkEvents = Math.ceil((singleChunkEvents * BATCHED_EVENTS_FACTOR) / batchSize) * batchSize;
  return { singleEvents: singleChunkEvents * PAIRS_PER_ROUND, singleEventsAsked: asked, singleChunkEvents, batchedEvents: batchedChunkEvents * PAIRS_PER_ROUND, batchedChunkEvents, batchSize, rounds };
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

/** The writer's single appends on an open client, warmed up: each chunk awaits one append per event. */
async function appendSingleSession(client: WriterClient, bodyChars: number): Promise<CaseSession & { appended: () => number }> {
  for (let i = 0; i < WARMUP_SINGLE_COMMITS; i += 1) await client.append([messageDraft(i, bodyChars)]);
  let next = WARMUP_SINGLE_COMMITS;
  return {
    chunk: async (count) => {
      const startMs = performance.now();
      for (const end = next + count; next < end; next += 1) await client.append([messageDraft(next, bodyChars)]);
      return timed(count, performance.now() - startMs);
    },
    envelopeBytes: () => storedEnvelopeBytes(client),
    appended: () => next,
  };
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

/** The writer's batched appends on an open client, warmed up: each chunk pipelines its batches, APPENDS_IN_FLIGHT at a time. */
async function appendBatchedSession(client: WriterClient, batchSize: number, bodyChars: number): Promise<CaseSession & { appended: () => number }> {
  await appendPipelined(client, 0, WARMUP_BATCHES, batchSize, bodyChars);
  let next = WARMUP_BATCHES * batchSize;
  return {
    chunk: async (count) => {
      if (count % batchSize !== 0) throw new Error(`append batched: ${count} events is not whole batches of ${batchSize}`);
      const startMs = performance.now();
      await appendPipelined(client, next, count / batchSize, batchSize, bodyChars);
      next += count;
      return timed(count, performance.now() - startMs);
    },
    envelopeBytes: () => storedEnvelopeBytes(client),
    appended: () => next,
  };
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
/** Each group's order (interleavedOrder reverses it every other group): ours in the middle, next to both raw cases. */
const SINGLE_GROUP = ['raw_single', 'append_single', 'raw_single_projection'] as const satisfies readonly CaseName[];
const BATCHED_GROUP = ['raw_batched', 'append_batched'] as const satisfies readonly CaseName[];
interface Round {
  /** Every case's chunks in the order measured: chunk k of each case belongs to interleaved group k. */
  readonly chunks: Record<CaseName, Timed[]>;
  readonly envelopeBytes: { readonly raw: number; readonly writer: number };
  /** The in-process stages, measured in the round right after the matching writer case, so both see the same disk. */
  readonly stages: Record<'single' | 'batched', StageBreakdown>;
}

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

/** PAIRS_PER_ROUND groups over `sessions`, each group in interleavedOrder; returns each case's chunks. */
async function interleave<N extends CaseName>(group: readonly N[], sessions: Record<N, CaseSession>, chunkEvents: number): Promise<Record<N, Timed[]>> {
  const chunks = Object.fromEntries(group.map((name) => [name, [] as Timed[]])) as Record<N, Timed[]>;
  for (let i = 0; i < PAIRS_PER_ROUND; i += 1) {
    for (const name of interleavedOrder(group, i)) chunks[name].push(await sessions[name].chunk(chunkEvents));
  }
  return chunks;
}

async function runCases(dir: string, roundNumber: number, params: AppendBenchParams, bodyChars: number): Promise<Round> {
  const file = (name: string): string => path.join(dir, `${name}.db`);
  const single = await withWriter(dir, 'append-single', 1, async (client) => {
    const ours = await appendSingleSession(client, bodyChars);
    const raw = openRawSingle(file('raw-single'), params.singleEvents, bodyChars, false);
    const rawProjection = openRawSingle(file('raw-single-projection'), params.singleEvents, bodyChars, true);
    try {
      const chunks = await interleave(SINGLE_GROUP, { raw_single: raw, append_single: ours, raw_single_projection: rawProjection }, params.singleChunkEvents);
      await expectHeadSeq(client, ours.appended());
      return { chunks, envelopeBytes: { raw: await raw.envelopeBytes(), writer: await ours.envelopeBytes() } };
    } finally {
      raw.close();
      rawProjection.close();
    }
  });
  const draftAt = (index: number): EventDraft => messageDraft(index, bodyChars);
  const stageSingle = measureAppendStages(dir, Math.min(STAGE_SINGLE_REQUESTS, params.singleEvents), 1, draftAt);
  const batched = await withWriter(dir, 'append-batched', APPENDS_IN_FLIGHT, async (client) => {
    const ours = await appendBatchedSession(client, params.batchSize, bodyChars);
    const raw = openRawBatched(file('raw-batched'), params.batchedEvents, params.batchSize, bodyChars);
    try {
      const chunks = await interleave(BATCHED_GROUP, { raw_batched: raw, append_batched: ours }, params.batchedChunkEvents);
      await expectHeadSeq(client, ours.appended());
      return chunks;
    } finally {
      raw.close();
    }
  });
  const stageBatched = measureAppendStages(dir, Math.min(STAGE_BATCHED_REQUESTS, params.batchedEvents / params.batchSize), params.batchSize, draftAt);
  const chunks = { ...single.chunks, ...batched };
  for (const name of CASES) log(`round ${roundNumber}: ${name.padEnd(22)} ${chunks[name].map((c) => formatRate(c.eventsPerSecond).padStart(7)).join(' ')} /s  (${chunks[name].length} chunks of ${chunks[name][0]!.events})`);
  log(`round ${roundNumber}: stages in process ${stageSingle.in_process_total.wall_us} µs per single append, ${stageBatched.in_process_total.wall_us} µs per batched event (wall)`);
  return { chunks, envelopeBytes: single.envelopeBytes, stages: { single: stageSingle, batched: stageBatched } };
}

/** Every chunk of a case, all rounds, in the order measured. */
function chunksOf(rounds: readonly Round[], name: CaseName): Timed[] {
  return rounds.flatMap((r) => r.chunks[name]);
}

/** A case's rate for the table: the median of its chunks' rates (the ratios come from pairs, not from these). */
function medianRate(rounds: readonly Round[], name: CaseName): number {
  return median(chunksOf(rounds, name).map((c) => c.eventsPerSecond));
}

/** Chunk k of `raw` against chunk k of `ours`: measured in the same interleaved group, back to back. */
function pairsOf(rounds: readonly Round[], raw: CaseName, ours: CaseName): RatePair[] {
  const r = chunksOf(rounds, raw);
  const o = chunksOf(rounds, ours);
  if (r.length !== o.length || r.length === 0) throw new Error(`${raw} has ${r.length} chunks, ${ours} ${o.length}: they must pair`);
  return r.map((c, i) => ({ raw: c.eventsPerSecond, ours: o[i]!.eventsPerSecond }));
}

export type AppendRatioName = keyof typeof APPEND_AIMS;

/** The paired ratios: the two aims' and, informational, the writer against raw with the projection row. */
export type AppendPaired = Record<AppendRatioName | 'append_single_over_raw_projection', PairedRatio>;

export interface AppendBenchResult {
  /** raw, ours, ratios, paired, params: the keys `npm run bench -- --json` had before replay joined (the verdicts are in bench-aims.ts's one list). */
  readonly report: {
    readonly raw: Record<string, number>;
    readonly ours: Record<string, number>;
    /** Each the median of its pair ratios (paired has the spread). */
    readonly ratios: Record<AppendRatioName, number>;
    readonly paired: AppendPaired;
    readonly params: Record<string, unknown>;
    /** Where an append's time goes, per event, single and batched (append-stages.ts). */
    readonly breakdown: Record<'single' | 'batched', AppendBreakdown>;
  };
  /** Unrounded, for the aim lines. */
  readonly paired: AppendPaired;
  /** The append section of the table, without the aim lines (bench.ts prints every aim together). */
  readonly tableLines: string[];
}

/** The in-process stages, and the measured end-to-end and raw costs per event they add up against. */
export interface AppendBreakdown {
  readonly stages_per_event: StageBreakdown;
  /** 1e6 / the case's median chunk rate: what an event cost through the real writer process. */
  readonly end_to_end_wall_us: number;
  /** Median over rounds of (the round's end to end, its median chunk, less its in-process stages' wall): the socket, two processes' wake-ups and event loops. */
  readonly beyond_in_process_wall_us: number;
  /** 1e6 / the matching raw case's median chunk rate. */
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
    beyond_in_process_wall_us: roundTo(median(rounds.map((r) => 1e6 / medianRate([r], ours) - r.stages[kind].in_process_total.wall_us)), 1),
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
    log(`append: ${params.rounds} rounds of ${params.singleEvents} single commits and ${params.batchedEvents} batched events (batches of ${params.batchSize}), each in ${PAIRS_PER_ROUND} interleaved chunks${params.singleEvents === params.singleEventsAsked ? '' : ` (--events ${params.singleEventsAsked} rounded up to whole chunks)`}`);
    const sha256HashesPerSecond = benchSha256(HASH_ITERATIONS);
    log(`sha256 of ${ENVELOPE_TARGET_BYTES} B: ${formatRate(sha256HashesPerSecond)} hashes/s`);
    const rounds: Round[] = [];
    for (let r = 1; r <= params.rounds; r += 1) rounds.push(await runRound(dir, r, params, bodyChars));

    const rate = (name: CaseName): number => medianRate(rounds, name);
    const paired: AppendPaired = {
      append_single: pairedRatio(pairsOf(rounds, 'raw_single', 'append_single')),
      append_batched: pairedRatio(pairsOf(rounds, 'raw_batched', 'append_batched')),
      append_single_over_raw_projection: pairedRatio(pairsOf(rounds, 'raw_single_projection', 'append_single')),
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
      ratios: { append_single: roundTo(paired.append_single.median, 4), append_batched: roundTo(paired.append_batched.median, 4) },
      paired,
      breakdown: {
        single: breakdownOf(rounds, 'single'),
        batched: breakdownOf(rounds, 'batched'),
      },
      params: {
        aggregate: `ratios: the median of per-pair ratios ours / raw, ${PAIRS_PER_ROUND} interleaved pairs per round (raw and ours back to back, the order alternating); rates: the median of the chunks`,
        rounds: params.rounds,
        pairs_per_round: PAIRS_PER_ROUND,
        single_events: params.singleEvents,
        single_events_asked: params.singleEventsAsked,
        single_chunk_events: params.singleChunkEvents,
        batched_events: params.batchedEvents,
        batched_chunk_events: params.batchedChunkEvents,
        batch_size: params.batchSize,
        appends_in_flight: APPENDS_IN_FLIGHT,
        warmup_single_commits: WARMUP_SINGLE_COMMITS,
        warmup_batches: WARMUP_BATCHES,
        envelope_target_bytes: ENVELOPE_TARGET_BYTES,
        envelope_bytes_raw: first.envelopeBytes.raw,
        envelope_bytes_writer: first.envelopeBytes.writer,
        raw_event_ids: 'eventIdFor(subject, seq), as the writer',
        sha256_iterations: HASH_ITERATIONS,
        per_chunk_events_per_second: Object.fromEntries(CASES.map((name) => [name, chunksOf(rounds, name).map((c) => roundTo(c.eventsPerSecond))])),
        pragmas: { locking_mode: 'EXCLUSIVE', journal_mode: 'WAL', synchronous: 'FULL', recursive_triggers: 'ON' },
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpus: os.cpus().length,
        tmpdir: os.tmpdir(),
      },
    };

    const table: [string, number, string][] = [
      ['raw_single', rate('raw_single'), 'events/s  1 row per durable commit'],
      ['raw_single + proj.', rate('raw_single_projection'), `events/s  and the projection row updated in the same commit, as the store must: append_single is ${pairedText(paired.append_single_over_raw_projection)} of this${beyondBoundText(paired.append_single_over_raw_projection, 1)}`],
      ['append_single', rate('append_single'), 'events/s  1 event per append, each awaited'],
      ['raw_batched', rate('raw_batched'), `rows/s    ${params.batchSize} rows per commit`],
      ['append_batched', rate('append_batched'), `events/s  ${params.batchSize} per append, ${APPENDS_IN_FLIGHT} appends in flight`],
      ['sha256 700 B', sha256HashesPerSecond, 'hashes/s  informational: node:crypto'],
    ];
    const tableLines: string[] = [
      `append benchmark: ${params.rounds} round(s) of ${PAIRS_PER_ROUND} interleaved pairs; rates are medians of the chunks, ratios (aims below) medians of the pair ratios;`,
      `${params.singleEvents} single-commit events, ${params.batchedEvents} batched events per case and round; envelopes ${first.envelopeBytes.writer} B (raw rows ${first.envelopeBytes.raw} B)`,
      '',
    ];
    for (const [name, value, unit] of table) tableLines.push(`  ${name.padEnd(20)} ${formatRate(value).padStart(10)}  ${unit}`);
    tableLines.push('', 'where an append goes (store_sqlite_and_durable_commit is store.append less the two store rows above it):');
    tableLines.push(...breakdownLines('append_single', report.breakdown.single), ...breakdownLines(`append_batched (${params.batchSize} per append)`, report.breakdown.batched));
    return { report, paired, tableLines };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
