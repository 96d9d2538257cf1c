// The wake-overhead part of `npm run bench` (bench.ts runs it after the replay benchmark):
// what one wake of a real 72-hour instance costs the apparatus (controller, ds-runtime,
// ds-writer) once the model's own time is taken out. One instance per case, run alone:
//   reference  --model reference: the deterministic reference policy (model time ≈ 0)
//   stub       --model openai against a stub chat-completions server on loopback that answers
//              after a FIXED latency (--stub-latency-ms) with a fixed minimal valid answer
//              (ds-model-output/2: no actions, no claims, checkpoint all null)
// Per wake, from the store: recorded_at(WakeEnded) − recorded_at(WakeStarted) − the model
// latency the runtime recorded (ModelAnswered / ModelCallFailed latency_ms). Completed wakes
// only: a planned crash wake restarts a process (start-up, not per-wake work) and is
// reported apart, as is the start-up of the instance (instance start → first WakeStarted).
// Raw limits measured in the same run make it a ratio: a Node IPC round trip (process.send
// ping-pong with a child, measured here) and a durable single-row SQLite commit (the append
// benchmark's raw_single, passed in by bench.ts).
//
// Also exports the controller setup both instance benchmarks use (a key folder of their own
// and a locked copy of the default pre-registration, as test/support/controller-run.ts does).
// It is a measurement, not a test: it exits 0 when an aim is missed and says MISSED.
// Why one file: it is one benchmark (with the few lines of controller set-up the two instance
// benches share); its store reading, its cases and its table are read together.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { runNewInstance, type Group, type InstanceResult } from '../../controller/instance-runner.js';
import type { IsolationOptions } from '../../controller/isolation.js';
import { loadOrCreateControllerKey } from '../../controller/key-store.js';
import type { ModelChoice } from '../../design/model-choice.js';
import { lockPrereg } from '../../design/prereg.js';
import { MODEL_PROTOCOL, ModelAnswerV2 } from '../../runtime/model-protocol.js';
import type { EventType } from '../../schema/event-catalog.js';
import { RUN_FILES } from '../../schema/run-files.js';
import { startScriptedModelServer } from '../../faults/scripted-model-server.js';
import { openStoreReadOnly } from '../../writer/store-reader.js';
import { DEFAULT_PREREG, DEFAULT_START_AT, SCENARIOS_DIR } from '../../cli/run-defaults.js';
import { formatRate, log, median, roundTo } from './bench-util.js';
import { rawCommitAfterIdleMs } from './append-raw-cases.js';
import { GROUP_CAPABILITIES } from '../../design/manifest.js';
import { measureReferencePolicyCompute, policyComputeSummary } from './reference-policy-compute.js';

/**
 * The aim (bench-aims.ts, issue 19 item 2): the apparatus's own time per wake, median, with the
 * stub model, at most 10 ms — near what a wake's ~15 durable appends over IPC cost at the limit.
 */
export const WAKE_OVERHEAD_AIM_MAX_MEDIAN_MS = 10;
export const DEFAULT_STUB_LATENCY_MS = 200;
export const MAX_STUB_LATENCY_MS = 10_000;
/** The group with the fullest memory (most to read and project per wake). */
export const WAKE_BENCH_GROUP: Group = 'C';
/** Replicate 1 of the study benchmark's seed: the reference instance is the study's C-r1, run alone. */
export const BENCH_SEED = 'bench-seed';
export const WAKE_BENCH_INSTANCE_SEED = `${BENCH_SEED}-r1`;
const IPC_WARMUP_ROUND_TRIPS = 500;
const IPC_ROUND_TRIPS = 5_000;
/** Samples of each raw unit after idle (IPC round trip, durable commit): each costs the stub's latency of waiting. */
const AFTER_IDLE_SAMPLES = 15;
/** How many of an instance's controller lines a failure quotes. */
const FAILURE_TAIL_LINES = 30;

/** The stub's answer: the smallest valid answer of the current protocol, ds-model-output/2 (checked at load, so a drift in the protocol fails here, not mid-run). */
export const STUB_ANSWER = JSON.stringify(
  ModelAnswerV2.parse({
    protocol: MODEL_PROTOCOL,
    focus: { attention_target: null, waiting_condition: null },
    actions: [],
    claims: [],
    plan_revision: null,
    checkpoint: { current_goal_id: null, goal_status: null, attention_target: null, waiting_condition: null, next_action: null, evidence_seqs: [] },
  }),
);

export interface WakeOverheadParams {
  readonly stubLatencyMs: number;
  readonly isolation: IsolationOptions;
}

// ---------------------------------------------------------------------------------
// Controller setup shared with study-bench.ts

/** A denser wake schedule for the long instance (long-instance-bench.ts); the pre-registration's schema checks it when the copy is locked. */
export interface WakeScheduleOverride {
  readonly base_period_sim_minutes: number;
  readonly jitter_sim_minutes: number;
}

export interface BenchControllerSetup {
  readonly keyDir: string;
  /** A locked copy of experiments/prereg/default.json (its expansion rule adjusted when asked). */
  readonly preregFile: string;
}

/**
 * A key folder and a locked pre-registration copy under `dir`. `nPerGroup`: make the
 * expansion rule end at that n (initial n − 1, expanded n), so a study of n per group has
 * nothing to expand to; null leaves the copy as the bundled file is.
 */
export function benchControllerSetup(dir: string, nPerGroup: number | null = null, wakeSchedule: WakeScheduleOverride | null = null): BenchControllerSetup {
  const keyDir = path.join(dir, 'keys');
  const key = loadOrCreateControllerKey(keyDir);
  const preregFile = path.join(dir, 'prereg.json');
  copyFileSync(DEFAULT_PREREG, preregFile);
  if (nPerGroup !== null || wakeSchedule !== null) {
    const prereg = JSON.parse(readFileSync(preregFile, 'utf8')) as {
      expansion_rule: { initial_n_per_group: number; expanded_n_per_group: number };
      wake_schedule: { base_period_sim_minutes: number; jitter_sim_minutes: number };
    };
    if (nPerGroup !== null && prereg.expansion_rule.expanded_n_per_group !== nPerGroup) {
      prereg.expansion_rule.initial_n_per_group = nPerGroup - 1;
      prereg.expansion_rule.expanded_n_per_group = nPerGroup;
    }
    if (wakeSchedule !== null) Object.assign(prereg.wake_schedule, wakeSchedule);
    writeFileSync(preregFile, `${JSON.stringify(prereg, null, 2)}\n`);
  }
  const locked = lockPrereg(preregFile, key.keys, new Date().toISOString());
  if (!locked.ok) throw new Error(`bench setup: locking ${preregFile} failed: ${locked.message}`);
  return { keyDir, preregFile };
}

/** "same-uid (reason)" or "separate uids": what the flags asked for (the run's own line says what it got). */
export function isolationLabel(isolation: IsolationOptions): string {
  return isolation.forceSameUid === undefined ? 'separate uids when possible (--separate-uids)' : `same uid, forced: ${isolation.forceSameUid}`;
}

// ---------------------------------------------------------------------------------
// Raw: a Node IPC round trip

/** The child echoes every message back; it exits when the channel closes. */
const ECHO_CHILD = "process.on('message', (m) => process.send(m)); process.on('disconnect', () => process.exit(0));";

export interface IpcRoundTrip {
  readonly round_trips: number;
  readonly median_ms: number;
  readonly mean_ms: number;
  readonly p95_ms: number;
  /** Round trips each after `idle_ms` of idle (the wait a model call leaves), measured after the back-to-back ones; null when not asked. */
  readonly after_idle: { readonly idle_ms: number; readonly round_trips: number; readonly median_ms: number } | null;
}

/** process.send ping-pong with a plain node child (JSON serialization, as fork uses for ds-writer and ds-runtime), one message in flight. */
export async function measureIpcRoundTrip(afterIdle: { readonly idleMs: number; readonly roundTrips: number } | null = null): Promise<IpcRoundTrip> {
  const child = spawn(process.execPath, ['-e', ECHO_CHILD], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const once = (seq: number): Promise<void> =>
      new Promise((resolve, reject) => {
        const onMessage = (m: unknown): void => {
          child.off('exit', onExit);
          if ((m as { seq?: unknown }).seq !== seq) reject(new Error(`IPC echo child answered ${JSON.stringify(m)} to seq ${seq}`));
          else resolve();
        };
        const onExit = (): void => {
          child.off('message', onMessage);
          reject(new Error('IPC echo child exited'));
        };
        child.once('message', onMessage);
        child.once('exit', onExit);
        child.send({ seq, kind: 'ping' });
      });
    for (let i = 0; i < IPC_WARMUP_ROUND_TRIPS; i += 1) await once(i);
    const samples: number[] = new Array<number>(IPC_ROUND_TRIPS);
    const startMs = performance.now();
    for (let i = 0; i < IPC_ROUND_TRIPS; i += 1) {
      const t = performance.now();
      await once(IPC_WARMUP_ROUND_TRIPS + i);
      samples[i] = performance.now() - t;
    }
    const totalMs = performance.now() - startMs;
    const idleSamples: number[] = [];
    for (let i = 0; afterIdle !== null && i < afterIdle.roundTrips; i += 1) {
      await delay(afterIdle.idleMs);
      const t = performance.now();
      await once(IPC_WARMUP_ROUND_TRIPS + IPC_ROUND_TRIPS + i);
      idleSamples.push(performance.now() - t);
    }
    return {
      round_trips: IPC_ROUND_TRIPS,
      median_ms: roundTo(median(samples), 4),
      mean_ms: roundTo(totalMs / IPC_ROUND_TRIPS, 4),
      p95_ms: roundTo(percentile(samples, 0.95), 4),
      after_idle: afterIdle === null ? null : { idle_ms: afterIdle.idleMs, round_trips: afterIdle.roundTrips, median_ms: roundTo(median(idleSamples), 4) },
    };
  } finally {
    if (child.connected) child.disconnect();
    await Promise.race([exited, delay(5_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

// ---------------------------------------------------------------------------------
// Per-wake overhead from a finished instance's store

/** Nearest-rank percentile (p in (0, 1]). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length))) - 1]!;
}

export interface WakeTiming {
  readonly wake_id: string;
  /** recorded_at of WakeStarted (ms since the epoch), and the seqs of WakeStarted and WakeEnded. */
  readonly started_at_ms: number;
  readonly started_seq: number;
  readonly ended_seq: number;
  readonly outcome: string;
  readonly wall_ms: number;
  readonly model_ms: number;
  readonly model_answers: number;
  readonly model_failures: number;
}

export interface StoreTimings {
  readonly storeOpenedAtMs: number;
  readonly firstWakeStartedAtMs: number;
  readonly wakes: WakeTiming[];
}

/** The events a wake's timing is read from (bound into the query, so the query names only checked types). */
const TIMED_TYPES = ['SystemEvent.StoreOpened', 'ExperimentEvent.WakeStarted', 'ExperimentEvent.WakeEnded', 'ModelOutputEvent.ModelAnswered', 'ModelOutputEvent.ModelCallFailed'] as const satisfies readonly EventType[];
type TimedType = (typeof TIMED_TYPES)[number];

export function readWakeTimings(runDir: string): StoreTimings {
  const db = openStoreReadOnly(path.join(runDir, RUN_FILES.store));
  let rows: { event_type: TimedType; envelope: string }[];
  try {
    rows = db
      .prepare(`SELECT event_type, envelope FROM events WHERE event_type IN (${TIMED_TYPES.map(() => '?').join(', ')}) ORDER BY seq`)
      .all(...TIMED_TYPES) as { event_type: TimedType; envelope: string }[];
  } finally {
    db.close();
  }
  type Open = { startedAtMs: number; startedSeq: number; modelMs: number; answers: number; failures: number };
  const open = new Map<string, Open>();
  const wakes: WakeTiming[] = [];
  let storeOpenedAtMs: number | null = null;
  let firstWakeStartedAtMs: number | null = null;
  for (const row of rows) {
    const e = JSON.parse(row.envelope) as { seq: number; recorded_at: string; payload: { wake_id?: string; latency_ms?: number; outcome?: string } };
    const at = Date.parse(e.recorded_at);
    const wakeId = e.payload.wake_id ?? '';
    switch (row.event_type) {
      case 'SystemEvent.StoreOpened':
        storeOpenedAtMs ??= at;
        break;
      case 'ExperimentEvent.WakeStarted':
        firstWakeStartedAtMs ??= at;
        open.set(wakeId, { startedAtMs: at, startedSeq: e.seq, modelMs: 0, answers: 0, failures: 0 });
        break;
      case 'ModelOutputEvent.ModelAnswered':
      case 'ModelOutputEvent.ModelCallFailed': {
        const w = open.get(wakeId);
        if (!w) break;
        w.modelMs += e.payload.latency_ms ?? 0;
        if (row.event_type === 'ModelOutputEvent.ModelAnswered') w.answers += 1;
        else w.failures += 1;
        break;
      }
      case 'ExperimentEvent.WakeEnded': {
        const w = open.get(wakeId);
        if (!w) break;
        open.delete(wakeId);
        wakes.push({ wake_id: wakeId, started_at_ms: w.startedAtMs, started_seq: w.startedSeq, ended_seq: e.seq, outcome: e.payload.outcome ?? 'unknown', wall_ms: at - w.startedAtMs, model_ms: w.modelMs, model_answers: w.answers, model_failures: w.failures });
        break;
      }
    }
  }
  if (storeOpenedAtMs === null || firstWakeStartedAtMs === null) throw new Error(`${runDir}: no StoreOpened or no WakeStarted in the store`);
  return { storeOpenedAtMs, firstWakeStartedAtMs, wakes };
}

export interface WakeCaseReport {
  readonly model: string;
  readonly wakes: number;
  /** Completed (or budget-exhausted) wakes: the ones the overhead is over. */
  readonly wakes_measured: number;
  readonly overhead_ms: { readonly median: number; readonly p95: number; readonly mean: number; readonly min: number; readonly max: number };
  readonly wake_wall_ms_median: number;
  readonly model_ms_median: number;
  readonly model_answers: number;
  readonly model_failures: number;
  /** Wakes with a planned crash: a process was killed and restarted inside them. */
  readonly crash_wakes: { readonly count: number; readonly wall_ms_median: number | null };
  /** Instance start (runNewInstance called) → first WakeStarted recorded; the writer and runtime start-up are in it. */
  readonly startup_ms: number;
  /** Instance start → StoreOpened recorded (the writer is up). */
  readonly writer_ready_ms: number;
  /** Instance start → the controller's "ds-runtime pid" line (the runtime is up). */
  readonly runtime_ready_ms: number | null;
  readonly instance_wall_ms: number;
  /** The overhead median in raw units measured in the same run. */
  readonly in_ipc_round_trips: number;
  readonly in_durable_commits: number;
  /** Events a measured wake stores, WakeStarted to WakeEnded inclusive (median). */
  readonly events_per_wake_median: number;
  /**
   * events_per_wake_median × (IPC round trip + durable commit): what the wake's appends would
   * cost at the raw limits, one IPC round trip and one durable commit each (the apparatus's floor).
   */
  readonly raw_floor_ms: number;
  /** overhead median / raw_floor_ms: how many times the floor a wake costs. */
  readonly over_floor: number;
}

/** The reference case also reports the policy's own compute apart (reference-policy-compute.ts). */
export interface ReferenceCaseReport extends WakeCaseReport {
  readonly policy_compute: {
    readonly median_ms: number;
    readonly p95_ms: number;
    readonly max_ms: number;
    readonly calls: number;
    /** Rebuilt answers equal to the stored raw_output, byte for byte (calls when the rebuilding is faithful). */
    readonly reproduced: number;
    readonly first_mismatch_wake: string | null;
  };
  /** Per wake, overhead minus the policy's compute: the apparatus alone. */
  readonly apparatus_ms: { readonly median: number; readonly p95: number; readonly in_ipc_round_trips: number; readonly in_durable_commits: number };
}

export interface RunOutcome {
  readonly result: InstanceResult;
  readonly startedAtMs: number;
  readonly wallMs: number;
  readonly runtimeReadyAtMs: number | null;
  readonly isolationLine: string | null;
}

/** One instance (runOneInstance) against a loopback stub answering STUB_ANSWER after `latencyMs`; throws if the stub's script failed. Also the requests it served. */
export async function runAgainstStub(setup: BenchControllerSetup, runDir: string, latencyMs: number, isolation: IsolationOptions, name: string): Promise<{ run: RunOutcome; requests: number }> {
  const server = await startScriptedModelServer(async () => {
    await delay(latencyMs);
    return { kind: 'content', content: STUB_ANSWER };
  });
  try {
    const run = await runOneInstance(setup, runDir, server.modelChoice(), isolation, name);
    if (server.errors.length > 0) throw new Error(`${name}: the stub server's script failed: ${server.errors[0]}`);
    return { run, requests: server.requests.length };
  } finally {
    await server.close();
  }
}

/** One instance of group C, seed WAKE_BENCH_INSTANCE_SEED, as fast as possible; throws unless it finished. */
export async function runOneInstance(setup: BenchControllerSetup, runDir: string, model: ModelChoice, isolation: IsolationOptions, name: string): Promise<RunOutcome> {
  const lines: string[] = [];
  let runtimeReadyAtMs: number | null = null;
  let isolationLine: string | null = null;
  const startedAtMs = Date.now();
  const t0 = performance.now();
  let result: InstanceResult;
  try {
    result = await runNewInstance({
      runDir,
      keyDir: setup.keyDir,
      speed: null,
      signal: new AbortController().signal,
      operator: 'npm run bench',
      scenariosDir: SCENARIOS_DIR,
      isolation,
      log: (line) => {
        lines.push(line);
        if (runtimeReadyAtMs === null && line.startsWith('ds-runtime pid ')) runtimeReadyAtMs = Date.now();
        if (isolationLine === null && line.startsWith('isolation: ')) {
          isolationLine = line;
          log(`wake overhead: ${name}: ${line}`);
        }
      },
      preregFile: setup.preregFile,
      seed: WAKE_BENCH_INSTANCE_SEED,
      group: WAKE_BENCH_GROUP,
      startAt: DEFAULT_START_AT,
      experimentId: `bench-wake-${name}`,
      replicate: 1,
      groupBlindId: `inst-bench-${name}`,
      startedAt: new Date(startedAtMs).toISOString(),
      model,
    });
  } catch (error) {
    for (const line of lines.slice(-FAILURE_TAIL_LINES)) log(`wake overhead: ${name}: ${line}`);
    throw error;
  }
  const wallMs = performance.now() - t0;
  if (result.status !== 'finished') {
    for (const line of lines.slice(-FAILURE_TAIL_LINES)) log(`wake overhead: ${name}: ${line}`);
    throw new Error(`wake overhead: the ${name} instance did not finish (${result.stopReason ?? 'stopped'})`);
  }
  return { result, startedAtMs, wallMs, runtimeReadyAtMs, isolationLine };
}

/** Completed (or budget-exhausted) wakes: a crashed wake restarts a process inside it. */
export function measuredWakes(timings: StoreTimings): WakeTiming[] {
  return timings.wakes.filter((w) => w.outcome === 'completed' || w.outcome === 'budget_exhausted');
}

/** A wake's own time with its recorded model latency taken out. */
export const overheadOf = (w: WakeTiming): number => w.wall_ms - w.model_ms;

export function caseReport(model: string, run: RunOutcome, raw: { ipcMs: number; commitMs: number }): WakeCaseReport {
  const timings = readWakeTimings(run.result.runDir);
  const measured = measuredWakes(timings);
  const crashed = timings.wakes.filter((w) => w.outcome === 'crashed');
  if (measured.length === 0) throw new Error(`wake overhead: the ${model} instance has no completed wake`);
  const overhead = measured.map(overheadOf);
  const med = median(overhead);
  const eventsPerWake = median(measured.map((w) => w.ended_seq - w.started_seq + 1));
  const floorMs = eventsPerWake * (raw.ipcMs + raw.commitMs);
  return {
    model,
    wakes: timings.wakes.length,
    wakes_measured: measured.length,
    overhead_ms: {
      median: roundTo(med, 1),
      p95: roundTo(percentile(overhead, 0.95), 1),
      mean: roundTo(overhead.reduce((s, x) => s + x, 0) / overhead.length, 1),
      min: roundTo(Math.min(...overhead), 1),
      max: roundTo(Math.max(...overhead), 1),
    },
    wake_wall_ms_median: roundTo(median(measured.map((w) => w.wall_ms)), 1),
    model_ms_median: roundTo(median(measured.map((w) => w.model_ms)), 1),
    model_answers: timings.wakes.reduce((s, w) => s + w.model_answers, 0),
    model_failures: timings.wakes.reduce((s, w) => s + w.model_failures, 0),
    crash_wakes: { count: crashed.length, wall_ms_median: crashed.length === 0 ? null : roundTo(median(crashed.map((w) => w.wall_ms)), 1) },
    startup_ms: timings.firstWakeStartedAtMs - run.startedAtMs,
    writer_ready_ms: timings.storeOpenedAtMs - run.startedAtMs,
    runtime_ready_ms: run.runtimeReadyAtMs === null ? null : run.runtimeReadyAtMs - run.startedAtMs,
    instance_wall_ms: roundTo(run.wallMs),
    in_ipc_round_trips: roundTo(med / raw.ipcMs),
    in_durable_commits: roundTo(med / raw.commitMs, 1),
    events_per_wake_median: eventsPerWake,
    raw_floor_ms: roundTo(floorMs, 2),
    over_floor: roundTo(med / floorMs, 1),
  };
}

async function referenceCaseReport(run: RunOutcome, raw: { ipcMs: number; commitMs: number }): Promise<ReferenceCaseReport> {
  const base = caseReport('reference', run, raw);
  const compute = await measureReferencePolicyCompute(run.result.runDir, SCENARIOS_DIR, GROUP_CAPABILITIES[WAKE_BENCH_GROUP]);
  if (compute.reproduced < compute.calls) log(`wake overhead: WARNING: the rebuilt bundles reproduced ${compute.reproduced} of ${compute.calls} reference answers (first mismatch ${compute.first_mismatch_wake}); the policy's compute is timed on the rebuilt ones`);
  const apparatus = measuredWakes(readWakeTimings(run.result.runDir)).map((w) => overheadOf(w) - (compute.per_wake_ms.get(w.wake_id) ?? 0));
  const apparatusMedian = median(apparatus);
  return {
    ...base,
    policy_compute: { ...policyComputeSummary(compute), calls: compute.calls, reproduced: compute.reproduced, first_mismatch_wake: compute.first_mismatch_wake },
    apparatus_ms: {
      median: roundTo(apparatusMedian, 1),
      p95: roundTo(percentile(apparatus, 0.95), 1),
      in_ipc_round_trips: roundTo(apparatusMedian / raw.ipcMs),
      in_durable_commits: roundTo(apparatusMedian / raw.commitMs, 1),
    },
  };
}

// ---------------------------------------------------------------------------------

export interface WakeOverheadReport {
  readonly instance: { readonly group: Group; readonly seed: string; readonly start_at: string; readonly isolation: string | null };
  readonly reference: ReferenceCaseReport;
  readonly stub: WakeCaseReport & { readonly stub_latency_ms: number; readonly requests: number };
  readonly raw: {
    readonly ipc_round_trip: IpcRoundTrip;
    /** 1 / raw_single of the append benchmark (better-sqlite3, one row per BEGIN IMMEDIATE, synchronous=FULL). */
    readonly durable_commit_ms: number;
    /**
     * The same raw units each after the stub's latency of idle: what a wake's steps meet after its
     * model call (ipc_round_trip.after_idle is the IPC one). The stub wake's overhead is also given in these.
     */
    readonly after_idle: { readonly idle_ms: number; readonly samples: number; readonly durable_commit_ms: number; readonly ipc_round_trip_ms: number };
  };
  readonly params: Record<string, unknown>;
}

/** `durableCommitMs`: one durable single-row commit, from the append benchmark's raw_single in this run. */
export async function runWakeOverheadBench(params: WakeOverheadParams, parentDir: string, durableCommitMs: number): Promise<WakeOverheadReport> {
  const dir = mkdtempSync(path.join(parentDir, 'wake-'));
  try {
    log(`wake overhead: IPC round trip, ${IPC_ROUND_TRIPS} process.send ping-pongs with a child, then ${AFTER_IDLE_SAMPLES} after ${params.stubLatencyMs} ms idle each`);
    const ipc = await measureIpcRoundTrip({ idleMs: params.stubLatencyMs, roundTrips: AFTER_IDLE_SAMPLES });
    const idleCommitMs = await rawCommitAfterIdleMs(path.join(dir, 'raw-after-idle.db'), params.stubLatencyMs, AFTER_IDLE_SAMPLES);
    const afterIdle = { idle_ms: params.stubLatencyMs, samples: AFTER_IDLE_SAMPLES, durable_commit_ms: roundTo(idleCommitMs, 4), ipc_round_trip_ms: ipc.after_idle!.median_ms };
    log(`wake overhead: IPC round trip median ${(ipc.median_ms * 1_000).toFixed(0)} us, mean ${(ipc.mean_ms * 1_000).toFixed(0)} us; after ${afterIdle.idle_ms} ms idle: IPC ${(afterIdle.ipc_round_trip_ms * 1_000).toFixed(0)} us, durable commit ${(idleCommitMs * 1_000).toFixed(0)} us`);
    const raw = { ipcMs: ipc.median_ms, commitMs: durableCommitMs };
    const setup = benchControllerSetup(dir);
    log(`wake overhead: ${isolationLabel(params.isolation)}; group ${WAKE_BENCH_GROUP}, seed ${WAKE_BENCH_INSTANCE_SEED}`);

    log('wake overhead: (a) one 72-hour instance with the reference policy');
    const referenceRun = await runOneInstance(setup, path.join(dir, 'reference'), { adapter: 'reference' }, params.isolation, 'reference');
    const reference = await referenceCaseReport(referenceRun, raw);
    log(`wake overhead: reference: ${reference.wakes} wakes in ${(referenceRun.wallMs / 1_000).toFixed(1)} s; overhead median ${reference.overhead_ms.median} ms (policy compute ${reference.policy_compute.median_ms} ms, apparatus ${reference.apparatus_ms.median} ms), p95 ${reference.overhead_ms.p95} ms`);

    log(`wake overhead: (b) one 72-hour instance with --model openai against a loopback stub answering after ${params.stubLatencyMs} ms`);
    const { run: stubRun, requests } = await runAgainstStub(setup, path.join(dir, 'stub'), params.stubLatencyMs, params.isolation, 'stub');
    const stub = { ...caseReport('openai stub', stubRun, raw), stub_latency_ms: params.stubLatencyMs, requests };
    log(`wake overhead: stub: ${stub.wakes} wakes in ${(stubRun.wallMs / 1_000).toFixed(1)} s; overhead median ${stub.overhead_ms.median} ms, p95 ${stub.overhead_ms.p95} ms`);
    if (stub.model_failures > 0) log(`wake overhead: WARNING: ${stub.model_failures} model call(s) of the stub run failed (see ModelCallFailed in its store)`);

    return {
      instance: { group: WAKE_BENCH_GROUP, seed: WAKE_BENCH_INSTANCE_SEED, start_at: DEFAULT_START_AT, isolation: referenceRun.isolationLine },
      reference,
      stub,
      raw: { ipc_round_trip: ipc, durable_commit_ms: roundTo(durableCommitMs, 4), after_idle: afterIdle },
      params: {
        overhead: 'recorded_at(WakeEnded) - recorded_at(WakeStarted) - sum of the wake\'s model latency_ms, over completed wakes',
        aggregate: 'median and nearest-rank p95 over the wakes of one instance per case',
        stub_answer: 'ds-model-output/2 with no actions, no claims, checkpoint all null (the stub sees the prompt, not the bundle)',
        policy_compute: 'the reference policy records latency_ms 0, so its thinking is inside the reference overhead: re-run after the instance on each wake\'s bundle rebuilt from the store (reference-policy-compute.ts), ReferencePolicy.call timed, median of 3 per wake; apparatus = overhead - compute per wake',
        raw_floor: 'events per wake (median) x (IPC round trip + durable commit)',
        stub_latency_ms: params.stubLatencyMs,
        ipc: `process.send ping-pong, ${IPC_WARMUP_ROUND_TRIPS} warm-up + ${IPC_ROUND_TRIPS} timed, one in flight; ratios use the median`,
        durable_commit: 'append benchmark raw_single (median of its rounds): 1000 / events_per_second',
        isolation: isolationLabel(params.isolation),
        speed: 'as fast as possible (speed null)',
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------
// Table

const msText = (value: number): string => (value >= 1_000 ? `${formatRate(value)} ms` : `${value.toFixed(value < 1 ? 3 : value < 10 ? 2 : 1)} ms`);

export function caseLines(label: string, c: WakeCaseReport): string[] {
  return [
    `  ${`${label} median`.padEnd(20)} ${msText(c.overhead_ms.median).padStart(10)}  per wake = ${formatRate(c.in_ipc_round_trips)} IPC round trips = ${c.in_durable_commits} durable commits (${c.wakes_measured} of ${c.wakes} wakes)`,
    `  ${`${label} p95`.padEnd(20)} ${msText(c.overhead_ms.p95).padStart(10)}  mean ${msText(c.overhead_ms.mean)}, max ${msText(c.overhead_ms.max)}; wake wall median ${msText(c.wake_wall_ms_median)} of which model ${msText(c.model_ms_median)}`,
    `  ${`${label} floor`.padEnd(20)} ${msText(c.raw_floor_ms).padStart(10)}  ${c.events_per_wake_median} events per wake x (IPC round trip + durable commit); the median is ${c.over_floor}x this floor`,
  ];
}

function policyLines(r: ReferenceCaseReport): string[] {
  const p = r.policy_compute;
  return [
    `  ${'reference policy'.padEnd(20)} ${msText(p.median_ms).padStart(10)}  its own compute per wake, median (p95 ${msText(p.p95_ms)}, max ${msText(p.max_ms)}): re-run on ${p.calls} rebuilt bundles, ${p.reproduced} answers reproduced byte for byte${p.first_mismatch_wake === null ? '' : ` (first mismatch ${p.first_mismatch_wake})`}`,
    `  ${'reference apparatus'.padEnd(20)} ${msText(r.apparatus_ms.median).padStart(10)}  overhead minus the policy's compute, median (p95 ${msText(r.apparatus_ms.p95)}) = ${formatRate(r.apparatus_ms.in_ipc_round_trips)} IPC round trips = ${r.apparatus_ms.in_durable_commits} durable commits`,
  ];
}

export function wakeOverheadTableLines(r: WakeOverheadReport): string[] {
  const startup = (label: string, c: WakeCaseReport): string =>
    `  ${`start-up ${label}`.padEnd(20)} ${`${formatRate(c.startup_ms)} ms`.padStart(10)}  instance start -> first WakeStarted (writer up ${formatRate(c.writer_ready_ms)} ms, runtime up ${c.runtime_ready_ms === null ? '?' : formatRate(c.runtime_ready_ms)} ms); not per wake`;
  const crash = (label: string, c: WakeCaseReport): string =>
    `  ${`crash wake ${label}`.padEnd(20)} ${(c.crash_wakes.wall_ms_median === null ? '-' : msText(c.crash_wakes.wall_ms_median)).padStart(10)}  median wall of ${c.crash_wakes.count} planned-crash wake(s): a process restart inside, left out above`;
  return [
    `wake overhead benchmark: one 72-hour instance per case, group ${r.instance.group}, seed ${r.instance.seed}, run alone;`,
    `overhead = WakeStarted -> WakeEnded (recorded_at) minus the model latency the runtime recorded; ${r.instance.isolation ?? 'isolation: ?'}`,
    '',
    `  ${'IPC round trip'.padEnd(20)} ${msText(r.raw.ipc_round_trip.median_ms).padStart(10)}  raw: process.send ping-pong with a child (median of ${r.raw.ipc_round_trip.round_trips}; mean ${msText(r.raw.ipc_round_trip.mean_ms)})`,
    `  ${'durable commit'.padEnd(20)} ${msText(r.raw.durable_commit_ms).padStart(10)}  raw: 1 row per BEGIN IMMEDIATE, synchronous=FULL (append benchmark raw_single)`,
    `  ${'after idle'.padEnd(20)} ${msText(r.raw.after_idle.durable_commit_ms).padStart(10)}  raw durable commit after ${r.raw.after_idle.idle_ms} ms idle (IPC round trip ${msText(r.raw.after_idle.ipc_round_trip_ms)}; median of ${r.raw.after_idle.samples} each): what a wake's steps meet after its model call`,
    ...caseLines('reference', r.reference),
    ...policyLines(r.reference),
    ...caseLines('stub', r.stub),
    `  ${'stub after idle'.padEnd(20)} ${msText(r.stub.overhead_ms.median).padStart(10)}  = ${roundTo(r.stub.overhead_ms.median / r.raw.after_idle.ipc_round_trip_ms)} IPC round trips = ${roundTo(r.stub.overhead_ms.median / r.raw.after_idle.durable_commit_ms, 1)} durable commits, both after ${r.raw.after_idle.idle_ms} ms idle`,
    `  ${'stub model'.padEnd(20)} ${`${r.stub.stub_latency_ms} ms`.padStart(10)}  fixed latency on loopback; ${r.stub.requests} requests, ${r.stub.model_answers} answered, ${r.stub.model_failures} failed (minimal answer: no actions)`,
    startup('(ref)', r.reference),
    startup('(stub)', r.stub),
    crash('(ref)', r.reference),
    crash('(stub)', r.stub),
    `  ${'instance wall'.padEnd(20)} ${`${(r.reference.instance_wall_ms / 1_000).toFixed(1)} s`.padStart(10)}  reference; stub ${(r.stub.instance_wall_ms / 1_000).toFixed(1)} s (${r.stub.wakes} x ${r.stub.stub_latency_ms} ms of model time)`,
  ];
}
