// The replay half of `npm run bench` (bench.ts runs it after the append benchmark): how
// fast a store is rebuilt from its events alone, against SQLite handing over and
// JSON.parse-ing the same rows. One store of N events, built once per run:
//   build          EventStore in-process, subject projection, B events per append,
//                  a snapshot every K events (informational: the store's own write path)
//   raw_read_parse better-sqlite3 read-only, SELECT envelope FROM events ORDER BY seq,
//                  JSON.parse of each row
//   replay         replayStore(dbPath): full replay from seq 1 (ratio replay / raw)
//   memory         RSS while replaying, sampled once per replay chunk (in round 1)
//   restore        replay from a snapshot instead of seq 1: the clean-stop snapshot at the
//                  head, and the newest periodic one (a crash loses the clean-stop one)
//   state_at_seq   the state at seq ~N/2 from the nearest snapshot <= it plus the tail,
//                  against replaying seq 1..N/2
// raw, replay and the audit desk's index run in REPLAY_PAIRS interleaved groups (raw in the
// middle, next to both, the order reversed every other group: paired-ratio.ts); each ratio
// to raw is the median of its per-group ratios, with the spread. A memory-sampled replay runs
// first, apart (it also warms the page cache). A 1M-event replay takes ~20 s here, so every
// further group costs ~35 s at that size.
//
// The stream is a valid subject life: StoreOpened (the store's own), SubjectInitialized,
// then wakes (WakeStarted, ModelAnswered, FocusUpdated, now and then a FACT citing the
// last message, WakeEnded) with world events (a message, a distractor) between them.
// Why one file: it is one benchmark; its event stream, its cases and its table are read
// together and serve nothing else.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Projection } from '../../projector/projection.js';
import { projectionNamed } from '../../projector/registry.js';
import { SUBJECT_LIMITS } from '../../projector/subject-state.js';
import { eventIdFor } from '../../schema/envelope-hash.js';
import type { Actor } from '../../schema/envelope.js';
import type { EventType, PayloadOf } from '../../schema/event-catalog.js';
import type { WriterRole } from '../../schema/event-definition.js';
import { hashCanonical } from '../../schema/hash.js';
import { validateDrafts, type ValidatedDraft } from '../../writer/draft-validation.js';
import { draftOf } from '../../writer/event-draft.js';
import { EventStore } from '../../writer/event-store.js';
import { BUILD_PROJECTIONS, type ProjectionCatalog } from '../../writer/projection-catalog.js';
import { WRITER_LIMITS, type EventDraft } from '../../writer/protocol.js';
import { replayStore, type ReplayOptions, type ReplayResult } from '../../writer/replay.js';
import { StoreReader } from '../../writer/store-reader.js';
import { buildStoreIndex, type StoreIndex } from '../../audit/store-index.js';
import { assertNever } from '../../foundation/assert-never.js';
import { formatRate, log, median, roundTo, timeIt } from './bench-util.js';
import { beyondBoundText, interleavedOrder, pairedRatio, pairedText, type PairedRatio } from './paired-ratio.js';

/** Minimum replay / raw read+parse throughput ratio replay is meant to reach. */
export const REPLAY_AIM = 0.5;

/**
 * 200,000 (issue 19's own measurement used it): building the store dominates this part, and at
 * 1,000,000 the build alone took ~5 minutes on this 2-core machine, which kept the default run
 * (which also runs the study and the long instance) far past ~10 minutes. --replay-events
 * 1000000 still measures the million-event store.
 */
export const DEFAULT_REPLAY_EVENTS = 200_000;
export const MIN_REPLAY_EVENTS = 100;
/** ~1.2 GB of store per million events (the temp dir must hold it). */
export const MAX_REPLAY_EVENTS = 10_000_000;
/** Events per EventStore.append while building (the writer's batch limit). */
const BUILD_BATCH_EVENTS = WRITER_LIMITS.maxBatchEvents;
/** K of the bench store: a snapshot whenever a batch reaches or passes a multiple of it. */
const SNAPSHOT_EVERY_EVENTS = 10_000;
/** One FACT per this many wakes, and never more than half the projector's claim bound. */
const CLAIM_EVERY_WAKES = 100;
const MAX_CLAIMS = Math.floor(SUBJECT_LIMITS.maxClaims / 2);
/** replay.ts applies events in chunks of this many; the memory pass samples once per chunk. */
const REPLAY_CHUNK_EVENTS = 1_024;
const BUILD_PROGRESS_EVERY_EVENTS = 100_000;
/** Interleaved groups (raw, replay, index) whose per-group ratios give the figures: odd, for a plain median. */
export const REPLAY_PAIRS = 5;

const SUBJECT_ID = 'subject-bench-001';
const EXPERIMENT_ID = 'exp-bench-replay-001';
const T0 = Date.parse('2026-07-20T08:00:00.000Z');
const BUDGET = { model_calls: 4, tokens: 10_000, tool_calls: 4 };
const FILLER =
  'Reviewer notes arrive in bursts; the dataset depends on sign-off, the protocol on the dataset, and the deadline on both. ' +
  'Keep the plan small, write down what was observed, and check the board before acting. ';

export interface ReplayBenchParams {
  readonly events: number;
}

interface Timed {
  readonly events: number;
  readonly ms: number;
  readonly events_per_second: number;
}

function timed(events: number, ms: number): Timed {
  return { events, ms: roundTo(ms, 1), events_per_second: roundTo(events / (ms / 1_000)) };
}

/** A case over the groups: its median run (ms and rate are the median pass's), and every pass's rate. */
function medianOf(runs: readonly Timed[]): Timed & { readonly per_pair_events_per_second: number[] } {
  const ms = median(runs.map((r) => r.ms));
  return { ...timed(runs[0]!.events, ms), per_pair_events_per_second: runs.map((r) => r.events_per_second) };
}

/** A replay from a snapshot (or seq 1) and what it cost. */
interface PartialReplay {
  readonly from_snapshot_seq: number | null;
  readonly to_seq: number;
  readonly events_replayed: number;
  readonly ms: number;
}

export interface ReplayBenchReport {
  readonly store: {
    readonly events: number;
    readonly file_bytes: number;
    readonly envelope_bytes_mean: number;
    readonly snapshot_every: number;
    readonly snapshots: number;
    readonly state_bytes_at_head: number;
    readonly claims: number;
    readonly wakes: number;
    readonly append_batch: number;
  };
  /** Informational: the in-process write path (validate, hash, insert, project, durable commit). */
  readonly build: Timed;
  /** The median pass over the groups (ms, rate), and every pass's rate in the order measured. */
  readonly raw_read_parse: Timed & { readonly per_pair_events_per_second: number[] };
  readonly replay: Timed & { readonly per_pair_events_per_second: number[]; readonly state_hash_matches_stored: boolean };
  readonly memory: {
    readonly rss_before_bytes: number;
    readonly rss_peak_bytes: number;
    readonly rss_growth_bytes: number;
    /** getrusage maxRSS after the pass: the process's peak so far (the build included). */
    readonly process_max_rss_bytes: number;
    readonly samples: number;
  };
  readonly restore: {
    readonly full_replay_ms: number;
    /** After a clean stop the writer snapshots the head, so nothing is left to replay. */
    readonly clean_stop: PartialReplay & { readonly speedup: number; readonly state_matches_full: boolean };
    /** Without the clean-stop snapshot: the newest periodic one and the events after it. */
    readonly crash: (PartialReplay & { readonly speedup: number; readonly state_matches_full: boolean }) | null;
  };
  readonly state_at_seq: {
    readonly seq: number;
    readonly via_snapshot: PartialReplay;
    readonly from_seq_1: PartialReplay;
    readonly speedup: number;
    readonly states_match: boolean;
  };
  /** The audit desk's one pass over the store (links only, events dropped), against raw read + parse (ratio_to_raw: the median of its pairs). */
  readonly audit_index: Timed & { readonly ratio_to_raw: number; readonly chains: number; readonly cited_events: number; readonly rss_growth_bytes: number };
  /** replay / raw: the median of the per-group ratios (paired.replay has the spread). */
  readonly ratio: number;
  /** Each ratio to raw read + parse from the interleaved groups: replay (the aim's) and the audit index (informational). */
  readonly paired: { readonly replay: PairedRatio; readonly audit_index: PairedRatio };
}

// ---------------------------------------------------------------------------------
// The event stream, generated batch by batch

type Step = { readonly role: WriterRole; readonly draft: EventDraft };

function occurredAt(seq: number): string {
  return new Date(T0 + seq * 1_000).toISOString();
}

function makeDraft<T extends EventType>(type: T, seq: number, actor: Actor, correlationId: string | null, payload: PayloadOf<T>): EventDraft {
  return draftOf(type, payload, { occurred_at: occurredAt(seq), actor, causation_id: null, correlation_id: correlationId, idempotency_key: null });
}

function text(index: number, chars: number): string {
  const start = (index * 37) % FILLER.length;
  return (FILLER + FILLER + FILLER).slice(start, start + chars);
}

/**
 * The drafts after StoreOpened (seq 1), in order, each with the seq it will get and the
 * role that may append it. Lazy: the caller takes one batch at a time.
 */
class SubjectScript {
  private seq = 1;
  private wakes = 0;
  private claims = 0;
  private lastMessageSeq: number | null = null;
  private readonly pending: Step[] = [];

  get wakeCount(): number {
    return this.wakes;
  }

  get claimCount(): number {
    return this.claims;
  }

  next(): Step {
    if (this.pending.length === 0) this.refill();
    return this.pending.shift()!;
  }

  private push(role: WriterRole, draft: (seq: number) => EventDraft): void {
    this.seq += 1;
    this.pending.push({ role, draft: draft(this.seq) });
  }

  private refill(): void {
    if (this.seq === 1) {
      this.push('experiment', (seq) =>
        makeDraft('SystemEvent.SubjectInitialized', seq, 'experiment', null, {
          identity: { name: 'Bench subject', description: text(1, 160) },
          identity_schema_version: '1.0.0',
          goal: { goal_id: 'goal-1', description: text(2, 120), deadline_at: '2026-07-23T08:00:00.000Z' },
          tasks: [1, 2, 3, 4].map((n) => ({ task_id: `task-${n}`, title: `Task ${n}: ${text(n, 40)}`, priority: n, depends_on: n > 1 ? [`task-${n - 1}`] : [] })),
          journal_first_page: { entry_id: 'page-1', text: text(3, 200) },
        }),
      );
      return;
    }
    this.wakes += 1;
    const k = this.wakes;
    const wakeId = `wake-${String(k).padStart(7, '0')}`;
    this.push('experiment', (seq) => makeDraft('ExperimentEvent.WakeStarted', seq, 'experiment', wakeId, { wake_id: wakeId, visible_to_seq: seq - 1, budget: BUDGET }));
    this.push('runtime', (seq) =>
      makeDraft('ModelOutputEvent.ModelAnswered', seq, 'model', wakeId, {
        wake_id: wakeId,
        adapter: 'reference',
        model_id: 'reference-policy-1',
        params: { temperature: 0, top_p: null, seed: 7, max_tokens: 512 },
        system_fingerprint: null,
        latency_ms: 10 + (k % 40),
        context: { window_events: 40, eligible_total: 40 + k, omitted_by_count: k, omitted_by_token_cap: 0, not_eligible: k, tokens_estimated: 6_000 },
        raw_output: `{"wake":${k},"thought":${JSON.stringify(text(k, 260))}}`,
        usage: { prompt_tokens: 900 + (k % 100), completion_tokens: 80 + (k % 20) },
        usage_source: 'server',
        protocol: 'ds-model-output/2',
        finish_reason: 'stop',
        response_model: 'reference-policy-1',
        prompt_tokens_counted: 900 + (k % 100),
        prompt_count_source: 'server',
        attempts: 1,
        prompt_reuse: null, provider_finish_reason: null, cache_read_tokens: null, cache_write_tokens: null, cost_nano_usd: null,
      }),
    );
    this.push('runtime', (seq) =>
      makeDraft('MemoryEvent.FocusUpdated', seq, 'runtime', wakeId, { attention_target: `note ${k - 1} from the reviewer`, waiting_condition: k % 2 === 0 ? 'dataset sign-off' : null }),
    );
    const evidenceSeq = this.lastMessageSeq;
    if (k % CLAIM_EVERY_WAKES === 0 && evidenceSeq !== null && this.claims < MAX_CLAIMS) {
      this.claims += 1;
      const claimId = `claim-${this.claims}`;
      this.push('runtime', (seq) =>
        makeDraft('MemoryEvent.ClaimRecorded', seq, 'runtime', wakeId, {
          claim_id: claimId,
          claim_type: 'FACT',
          statement: `The reviewer's message at seq ${evidenceSeq} says the dataset follows sign-off.`,
          evidence_event_ids: [eventIdFor(SUBJECT_ID, evidenceSeq)],
          confidence: null,
          alternatives: [],
        }),
      );
    }
    this.push('experiment', (seq) => makeDraft('ExperimentEvent.WakeEnded', seq, 'experiment', wakeId, { wake_id: wakeId, outcome: 'completed' }));
    this.push('experiment', (seq) => makeDraft('WorldEvent.MessageReceived', seq, 'experiment', null, { from: 'reviewer', subject: `note ${k}`, body: text(k + 5, 220), in_reply_to: null }));
    this.lastMessageSeq = this.seq;
    this.push('experiment', (seq) => makeDraft('WorldEvent.DistractorOccurred', seq, 'experiment', null, { channel: 'news', body: text(k + 11, 140) }));
  }
}

/** Validates a mixed batch run by run, each run under the role that may append it. */
function validateSteps(steps: readonly Step[]): ValidatedDraft[] {
  const out: ValidatedDraft[] = [];
  let first = 0;
  while (first < steps.length) {
    const role = steps[first]!.role;
    let end = first + 1;
    while (end < steps.length && steps[end]!.role === role) end += 1;
    for (const draft of validateDrafts(steps.slice(first, end).map((s) => s.draft), role)) out.push(draft);
    first = end;
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Measurements

/** Builds the bench store at `dbPath` (exported for profiling scripts that keep the file). */
export async function buildStore(dbPath: string, events: number): Promise<{ build: Timed; wakes: number; claims: number }> {
  const startMs = performance.now();
  const store = EventStore.create({
    path: dbPath,
    identity: { subject_id: SUBJECT_ID, experiment_id: EXPERIMENT_ID, manifest_sha256: hashCanonical({ manifest: 'replay-bench' }) },
    projection: projectionNamed('subject'),
    now: () => new Date().toISOString(),
    snapshotEvery: SNAPSHOT_EVERY_EVENTS,
  });
  const script = new SubjectScript();
  const buildStartMs = performance.now();
  try {
    let head = store.head().seq;
    let nextProgress = BUILD_PROGRESS_EVERY_EVENTS;
    while (head < events) {
      const count = Math.min(BUILD_BATCH_EVENTS, events - head);
      const steps: Step[] = new Array<Step>(count);
      for (let i = 0; i < count; i += 1) steps[i] = script.next();
      head = store.append(validateSteps(steps), null).head.seq;
      if (head >= nextProgress) {
        log(`replay: built ${head.toLocaleString('en-US')} of ${events.toLocaleString('en-US')} events (${((performance.now() - startMs) / 1_000).toFixed(0)} s)`);
        nextProgress += BUILD_PROGRESS_EVERY_EVENTS;
      }
      // Lets a Ctrl-C (bench.ts removes the temp dir) in between batches: ~1,000 yields in all.
      await yieldToEventLoop();
    }
    if (head !== events) throw new Error(`bench store head is seq ${head}, expected ${events}`);
  } finally {
    // A clean close: snapshots the head (unless a periodic snapshot already covers it).
    store.close();
  }
  const ms = performance.now() - buildStartMs;
  // StoreOpened is the store's own (written by create, untimed); the rest went through validation and append.
  return { build: timed(events - 1, ms), wakes: script.wakeCount, claims: script.claimCount };
}

function rawReadParse(dbPath: string): { timed: Timed; envelopeChars: number } {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const stmt = db.prepare<[], { envelope: string }>('SELECT envelope FROM events ORDER BY seq');
    let rows = 0;
    let chars = 0;
    let seqSum = 0;
    const { ms } = timeIt(() => {
      for (const row of stmt.iterate()) {
        const parsed = JSON.parse(row.envelope) as { seq: number };
        seqSum += parsed.seq;
        chars += row.envelope.length;
        rows += 1;
      }
    });
    // Uses what was parsed, so no engine can skip the parse.
    if (seqSum !== (rows * (rows + 1)) / 2) throw new Error(`raw read saw seqs summing to ${seqSum} over ${rows} rows`);
    return { timed: timed(rows, ms), envelopeChars: chars };
  } finally {
    db.close();
  }
}

/** This build's projections, with `onChunk` called before every applyAll (once per replay chunk). */
function sampledCatalog(onChunk: () => void): ProjectionCatalog {
  const wrap = (p: Projection<unknown> | undefined): Projection<unknown> | undefined => {
    if (!p) return undefined;
    return {
      name: p.name,
      version: p.version,
      stateMachineVersion: p.stateMachineVersion,
      initial: () => p.initial(),
      apply: (state, event) => p.apply(state, event),
      applyAll: (state, events) => {
        onChunk();
        return p.applyAll ? p.applyAll(state, events) : events.reduce((s, e) => p.apply(s, e), state);
      },
    };
  };
  return { current: (name) => wrap(BUILD_PROJECTIONS.current(name)), recorded: (name, version) => wrap(BUILD_PROJECTIONS.recorded(name, version)) };
}

/** A full replay from seq 1 with RSS sampled before every chunk is applied. */
function replayWithMemory(dbPath: string): { result: ReplayResult; ms: number; memory: ReplayBenchReport['memory'] } {
  const rssBefore = process.memoryUsage.rss();
  let peak = rssBefore;
  let samples = 0;
  const catalog = sampledCatalog(() => {
    const rss = process.memoryUsage.rss();
    if (rss > peak) peak = rss;
    samples += 1;
  });
  const { value, ms } = timeIt(() => replayStore(dbPath, { projections: catalog }));
  peak = Math.max(peak, process.memoryUsage.rss());
  const memory = {
    rss_before_bytes: rssBefore,
    rss_peak_bytes: peak,
    rss_growth_bytes: peak - rssBefore,
    process_max_rss_bytes: process.resourceUsage().maxRSS * 1_024,
    samples,
  };
  return { result: value, ms, memory };
}

function partialReplay(dbPath: string, options: ReplayOptions): { result: ReplayResult; partial: PartialReplay } {
  const { value, ms } = timeIt(() => replayStore(dbPath, options));
  return { result: value, partial: { from_snapshot_seq: value.from_snapshot_seq, to_seq: value.to_seq, events_replayed: value.events, ms: roundTo(ms, 1) } };
}

interface StoreFacts {
  readonly storedStateHash: string;
  /** Newest first. */
  readonly snapshotSeqs: readonly number[];
  readonly headStateBytes: number;
}

function storeFacts(dbPath: string): StoreFacts {
  const reader = StoreReader.open(dbPath);
  try {
    const stored = reader.storedProjection();
    if (!stored) throw new Error(`${dbPath} has no projection row`);
    const { found, malformed } = reader.snapshots();
    if (malformed.length > 0) throw new Error(`${dbPath} has malformed snapshot rows at ${malformed.join(', ')}`);
    return { storedStateHash: stored.state_hash, snapshotSeqs: found.map((m) => m.seq), headStateBytes: Buffer.byteLength(reader.storedProjectionStateText() ?? '') };
  } finally {
    reader.close();
  }
}

function speedup(slowMs: number, fastMs: number): number {
  return roundTo(slowMs / Math.max(fastMs, 0.001), 1);
}

/** Between phases and build batches, so a signal handler can run (a replay itself is one synchronous call). */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The audit desk indexes the links between events in one streaming pass when it opens: one such pass, and the RSS it added. */
function auditIndexPass(dbPath: string): { index: StoreIndex; rssGrowthBytes: number } {
  const reader = StoreReader.open(dbPath);
  const rssBefore = process.memoryUsage().rss;
  try {
    const index = buildStoreIndex(reader, () => performance.now());
    return { index, rssGrowthBytes: Math.max(0, process.memoryUsage().rss - rssBefore) };
  } finally {
    reader.close();
  }
}

/** One interleaved group's cases: raw in the middle, next to both (interleavedOrder reverses it every other group). */
const REPLAY_GROUP = ['replay', 'raw', 'index'] as const;
type GroupCase = (typeof REPLAY_GROUP)[number];

export async function runReplayBench(params: ReplayBenchParams, parentDir: string): Promise<ReplayBenchReport> {
  const dir = mkdtempSync(path.join(parentDir, 'replay-'));
  try {
    return await runReplayCases(path.join(dir, 'events.db'), params);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runReplayCases(dbPath: string, params: ReplayBenchParams): Promise<ReplayBenchReport> {
  const n = params.events;
  log(`replay: building a store of ${n.toLocaleString('en-US')} events (subject projection, ${BUILD_BATCH_EVENTS} per append, snapshot every ${SNAPSHOT_EVERY_EVENTS})`);
  const built = await buildStore(dbPath, n);
  const fileBytes = statSync(dbPath).size;
  log(`replay: build ${formatRate(built.build.events_per_second)} events/s (${(built.build.ms / 1_000).toFixed(1)} s); ${(fileBytes / 1e6).toFixed(0)} MB; ${built.wakes} wakes, ${built.claims} claims`);
  const facts = storeFacts(dbPath);
  const head = n;

  // The memory-sampled replay, apart from the pairs (its sampling wrapper costs ~6 us a chunk); it also warms the page cache.
  await yieldToEventLoop();
  const sampled = replayWithMemory(dbPath);
  const { memory } = sampled;
  const full = sampled.result;
  let allMatchStored = full.state_hash === facts.storedStateHash;
  log(`replay: RSS ${(memory.rss_before_bytes / 1e6).toFixed(0)} MB before replay, peak ${(memory.rss_peak_bytes / 1e6).toFixed(0)} MB (${memory.samples} samples)`);

  const runs: Record<GroupCase, Timed[]> = { replay: [], raw: [], index: [] };
  let envelopeChars = 0;
  let index: StoreIndex | null = null;
  let indexRssGrowth = 0;
  for (let group = 0; group < REPLAY_PAIRS; group += 1) {
    for (const name of interleavedOrder(REPLAY_GROUP, group)) {
      await yieldToEventLoop();
      switch (name) {
        case 'raw': {
          const raw = rawReadParse(dbPath);
          envelopeChars = raw.envelopeChars;
          runs.raw.push(raw.timed);
          break;
        }
        case 'replay': {
          const { value: result, ms: replayMs } = timeIt(() => replayStore(dbPath));
          if (result.state_hash !== facts.storedStateHash) allMatchStored = false;
          runs.replay.push(timed(result.events, replayMs));
          break;
        }
        case 'index': {
          const measured = auditIndexPass(dbPath);
          index = measured.index;
          indexRssGrowth = Math.max(indexRssGrowth, measured.rssGrowthBytes);
          runs.index.push(timed(measured.index.head_seq, measured.index.build_ms));
          break;
        }
        default:
          assertNever(name, 'replay group case');
      }
    }
    const last = (name: GroupCase): string => formatRate(runs[name][group]!.events_per_second).padStart(9);
    log(`replay: group ${group + 1}: raw read+parse ${last('raw')}, full replay ${last('replay')}, audit index ${last('index')} events/s${allMatchStored ? '' : '; a replay state DIFFERS from the stored projection'}`);
  }
  if (index === null) throw new Error('no replay group ran');
  const pairsWith = (ours: GroupCase) => runs.raw.map((r, i) => ({ raw: r.events_per_second, ours: runs[ours][i]!.events_per_second }));
  const paired = { replay: pairedRatio(pairsWith('replay')), audit_index: pairedRatio(pairsWith('index')) };
  const raw = medianOf(runs.raw);
  const replay = { ...medianOf(runs.replay), state_hash_matches_stored: allMatchStored };
  const fullReplayMs = median(runs.replay.map((r) => r.ms));

  // Restore: after a clean stop the newest snapshot is the head's; a crash leaves the
  // newest periodic one, up to K events (plus one batch) behind.
  await yieldToEventLoop();
  const newest = facts.snapshotSeqs[0];
  if (newest === undefined) throw new Error(`${dbPath} holds no snapshot, not even the clean-stop one`);
  const cleanStop = partialReplay(dbPath, { fromSnapshotSeq: newest });
  const periodic = facts.snapshotSeqs.find((seq) => seq < head);
  const crash = periodic === undefined ? null : partialReplay(dbPath, { fromSnapshotSeq: periodic });
  const restore: ReplayBenchReport['restore'] = {
    full_replay_ms: roundTo(fullReplayMs, 1),
    clean_stop: { ...cleanStop.partial, speedup: speedup(fullReplayMs, cleanStop.partial.ms), state_matches_full: cleanStop.result.state_hash === full.state_hash },
    crash: crash === null ? null : { ...crash.partial, speedup: speedup(fullReplayMs, crash.partial.ms), state_matches_full: crash.result.state_hash === full.state_hash },
  };

  // The state at seq ~N/2: nearest snapshot at or before it, plus the tail.
  await yieldToEventLoop();
  const target = Math.max(Math.floor(n / 2), 1);
  const nearest = facts.snapshotSeqs.find((seq) => seq <= target) ?? null;
  const viaSnapshot = partialReplay(dbPath, { fromSnapshotSeq: nearest, toSeq: target });
  const fromStart = partialReplay(dbPath, { toSeq: target });
  const stateAtSeq: ReplayBenchReport['state_at_seq'] = {
    seq: target,
    via_snapshot: viaSnapshot.partial,
    from_seq_1: fromStart.partial,
    speedup: speedup(fromStart.partial.ms, viaSnapshot.partial.ms),
    states_match: viaSnapshot.result.state_hash === fromStart.result.state_hash,
  };
  log(`replay: state at seq ${target}: ${viaSnapshot.partial.ms.toFixed(0)} ms via snapshot ${String(nearest)} vs ${fromStart.partial.ms.toFixed(0)} ms from seq 1`);

  const indexed = medianOf(runs.index);
  const auditIndex: ReplayBenchReport['audit_index'] = {
    events: indexed.events,
    ms: indexed.ms,
    events_per_second: indexed.events_per_second,
    ratio_to_raw: roundTo(paired.audit_index.median, 4),
    chains: index.chains.length,
    cited_events: index.cited_by.size,
    rss_growth_bytes: indexRssGrowth,
  };

  return {
    store: {
      events: n,
      file_bytes: fileBytes,
      // Envelopes are ASCII (JSON.stringify escapes the rest), so chars are bytes.
      envelope_bytes_mean: roundTo(envelopeChars / n),
      snapshot_every: SNAPSHOT_EVERY_EVENTS,
      snapshots: facts.snapshotSeqs.length,
      state_bytes_at_head: facts.headStateBytes,
      claims: built.claims,
      wakes: built.wakes,
      append_batch: BUILD_BATCH_EVENTS,
    },
    build: built.build,
    raw_read_parse: raw,
    replay,
    memory,
    restore,
    state_at_seq: stateAtSeq,
    audit_index: auditIndex,
    ratio: roundTo(paired.replay.median, 4),
    paired,
  };
}

// ---------------------------------------------------------------------------------
// Table

const MB = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
const ms = (value: number): string => `${value.toFixed(value < 10 ? 1 : 0)} ms`;

function partialLine(label: string, p: PartialReplay & { speedup: number }, against: string): string {
  const from = p.from_snapshot_seq === null ? 'seq 1' : `snapshot ${p.from_snapshot_seq}`;
  return `  ${label.padEnd(20)} ${ms(p.ms).padStart(10)}  from ${from} + ${p.events_replayed} events; ${p.speedup}x faster than ${against}`;
}

export function replayTableLines(r: ReplayBenchReport): string[] {
  const s = r.store;
  const lines = [
    `replay benchmark: one store of ${s.events.toLocaleString('en-US')} events, ${MB(s.file_bytes)}, envelopes ${s.envelope_bytes_mean} B on average;`,
    `subject projection, ${s.wakes} wakes, ${s.claims} FACT claims, state ${MB(s.state_bytes_at_head)} at the head; ${s.append_batch} events per append, snapshot every ${s.snapshot_every} (${s.snapshots} snapshot${s.snapshots === 1 ? '' : 's'})`,
    '',
    `  ${'build'.padEnd(20)} ${formatRate(r.build.events_per_second).padStart(10)}  events/s  informational: EventStore.append in-process (${(r.build.ms / 1_000).toFixed(1)} s)`,
    `  ${'raw_read_parse'.padEnd(20)} ${formatRate(r.raw_read_parse.events_per_second).padStart(10)}  events/s  SELECT envelope ORDER BY seq + JSON.parse (median of ${r.raw_read_parse.per_pair_events_per_second.length}: ${r.raw_read_parse.per_pair_events_per_second.map(formatRate).join(', ')})`,
    `  ${'replay'.padEnd(20)} ${formatRate(r.replay.events_per_second).padStart(10)}  events/s  replayStore from seq 1 (${r.replay.per_pair_events_per_second.map(formatRate).join(', ')}; state ${r.replay.state_hash_matches_stored ? '== stored projection' : 'DIFFERS from the stored projection'})`,
    `  ${'replay RSS growth'.padEnd(20)} ${MB(r.memory.rss_growth_bytes).padStart(10)}  peak ${MB(r.memory.rss_peak_bytes)} over ${MB(r.memory.rss_before_bytes)} before (store file ${MB(s.file_bytes)}; sampled per ${REPLAY_CHUNK_EVENTS}-event chunk)`,
    `  ${'full replay'.padEnd(20)} ${ms(r.restore.full_replay_ms).padStart(10)}  restore baseline: seq 1 to ${s.events} (median of the groups)`,
    partialLine('restore, clean stop', r.restore.clean_stop, 'full replay'),
  ];
  if (r.restore.crash) lines.push(partialLine('restore, crash', r.restore.crash, 'full replay'));
  else lines.push(`  ${'restore, crash'.padEnd(20)} ${'-'.padStart(10)}  no periodic snapshot below the head`);
  const q = r.state_at_seq;
  if (q.via_snapshot.from_snapshot_seq === null) {
    lines.push(`  ${`state @ seq ${q.seq}`.padEnd(20)} ${ms(q.from_seq_1.ms).padStart(10)}  from seq 1: no snapshot at or below it (every ${s.snapshot_every} events, and at a clean stop)`);
  } else {
    lines.push(partialLine(`state @ seq ${q.seq}`, { ...q.via_snapshot, speedup: q.speedup }, `seq 1 (${ms(q.from_seq_1.ms)})`));
  }
  const a = r.audit_index;
  lines.push(`  ${'audit desk index'.padEnd(20)} ${formatRate(a.events_per_second).padStart(10)}  events/s  one pass keeping links only (${ms(a.ms)}; ${pairedText(r.paired.audit_index)} of raw read+parse${beyondBoundText(r.paired.audit_index, 1)}; ${a.chains} chains, ${a.cited_events} cited events; RSS +${MB(a.rss_growth_bytes)})`);
  const mismatches = [
    ...(r.restore.clean_stop.state_matches_full ? [] : ['restore (clean stop)']),
    ...(r.restore.crash && !r.restore.crash.state_matches_full ? ['restore (crash)'] : []),
    ...(q.states_match ? [] : [`state @ seq ${q.seq}`]),
  ];
  lines.push('', mismatches.length === 0 ? '  states: every snapshot-started replay equals the replay from seq 1' : `  STATE MISMATCH: ${mismatches.join(', ')} differ from the replay from seq 1`);
  return lines;
}
