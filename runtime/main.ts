// ds-runtime: the Subject Runtime process (DESIGN §2, §6). Started by its controller with
// an IPC channel; receives its configuration (the runtime role's writer token among it,
// which must never appear in argv) as one `start` message and answers `ready`.
//
// On each `wake` (after the controller's WakeStarted) it runs one wake of the subject
// (runtime/wake-loop.ts) over a writer connection opened for that wake only, reports each
// append as `wake_progress` (on a held wake, one a runtime-crash drill kills at an exact point,
// waiting for the controller's `progress_ack` before going on), and answers `wake_done` with the
// counts and the checkpoint.
//
// It never opens a database, never reads a key, and never learns its group letter: it is
// handed only the capability flags. What it keeps between wakes (the event cache) lives in
// this process and dies with it. It exits on `shutdown`, SIGTERM/SIGINT, or when its parent
// goes away: an orphaned runtime must not keep acting for a subject nobody supervises.
import { z } from 'zod';
import { Identifier } from '../schema/event-definition.js';
import { FaultArmingError, FaultSwitch } from '../schema/fault-switch.js';
import { WriterClient, WriterUnavailableError } from '../writer/client.js';
import { WriterError } from '../writer/protocol.js';
import { EventCache, EventReadError } from './event-cache.js';
import { ObservedState } from './observed-state.js';
import { RetrievalIndex } from './retrieval-window.js';
import type { ModelAdapter } from './model-adapter.js';
import { callTimeoutMsOf, modelAdapterFor } from './model-adapters/adapter-list.js';
import { specialisedAnswerSchema } from './answer-schema.js';
import { answerSchemaToSend } from './schema-subsets/schema-to-send.js';
import { MODEL_CALL_TIMEOUT_MS, runWake, WakeNotOpenError, WakeStoppedError } from './wake-loop.js';
import { configuredPricesOf } from './configured-prices.js';
import {
  RuntimeParentMessage,
  type RuntimeChildMessage,
  type PreflightReport,
  type RuntimeFatalCode,
  type RuntimeStartConfig,
  type RuntimeWake,
  type WakeDone,
  type WakeFailureCode,
} from './protocol.js';

process.title = 'ds-runtime';
const START_TIMEOUT_MS = 10_000;
/** How long a last message (fatal, wake_failed) may take to leave before the process exits anyway. */
const EXIT_FLUSH_MS = 500;

const log = (line: string): void => {
  process.stderr.write(`[ds-runtime ${process.pid}] ${line}\n`);
};


const send = process.send?.bind(process);
if (!send) {
  log('must be started by its controller with an IPC channel (see runtime/spawn.ts); refusing to run standalone');
  process.exit(2);
}

/** Sends to the parent; `then` runs once the message has left (or could not). */
function tell(message: RuntimeChildMessage, then?: () => void): void {
  if (!process.connected) {
    log(`parent channel closed; dropping ${message.type}`);
    then?.();
    return;
  }
  send!(message, undefined, {}, (error: Error | null) => {
    if (error) log(`could not send ${message.type} to the parent: ${error.message}`);
    then?.();
  });
}

/** Exits once `last` (if any) has left, or after EXIT_FLUSH_MS whichever comes first. */
function exitAfter(code: number, last: RuntimeChildMessage | null): void {
  const timer = setTimeout(() => process.exit(code), EXIT_FLUSH_MS);
  timer.unref();
  if (last) tell(last, () => process.exit(code));
  else process.exit(code);
}

let fatalSent = false;
/** A start-up failure: reported to the parent exactly once, then a non-zero exit. */
function fatal(code: RuntimeFatalCode, message: string): void {
  if (fatalSent) return;
  fatalSent = true;
  log(`fatal ${code}: ${message}`);
  exitAfter(1, { type: 'fatal', code, message });
}

/** The fault harness's points in this process (no-ops unless npm run faults armed them). */
let faults: FaultSwitch = FaultSwitch.off;
try {
  faults = FaultSwitch.fromEnv('runtime', log);
} catch (error) {
  if (!(error instanceof FaultArmingError)) throw error;
  fatal('fault_arming', error.message);
}

let config: RuntimeStartConfig | null = null;
let adapter: ModelAdapter | null = null;
let cache: EventCache | null = null;
/** Kept beside the cache, so a wake folds and classifies only the events new to it (issue 19). */
let observed: ObservedState | null = null;
let retrieval: RetrievalIndex | null = null;
let currentWake: { readonly wakeId: string; client: WriterClient | null; settled: Promise<void> | null } | null = null;
let stopping = false;

/** Waiting for the controller's progress_ack; at most one at a time (one wake, one append at a time). */
let pendingAck: { readonly wakeId: string; readonly appends: number; readonly resolve: () => void; readonly reject: (error: Error) => void; readonly timer: NodeJS.Timeout } | null = null;
const PROGRESS_ACK_TIMEOUT_MS = 10_000;
/** Beyond the model's call timeout, how long a stopping runtime waits for its wake to reach a step boundary. */
const STOP_MARGIN_MS = 5_000;

/**
 * Reports an append; the wake's next step waits until the report has left this process (so a
 * death right after it still reaches the controller), and on a held wake until the controller has
 * seen it (runtime/protocol.ts WakeProgress).
 */
function reportProgress(wake: RuntimeWake, counts: { appends: number; execution_intents: number }): Promise<void> {
  if (wake.hold_at_each_append) return progressBarrier(wake.wake_id, counts);
  return new Promise((resolve) => tell({ type: 'wake_progress', wake_id: wake.wake_id, ...counts }, resolve));
}

/** Reports an append and waits until the controller has seen it: a held wake's barrier, for the runtime-crash drill's exact kill point. */
function progressBarrier(wakeId: string, counts: { appends: number; execution_intents: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pendingAck = null;
      reject(new Error(`no progress_ack from the controller within ${PROGRESS_ACK_TIMEOUT_MS} ms after append ${counts.appends}`));
    }, PROGRESS_ACK_TIMEOUT_MS);
    pendingAck = { wakeId, appends: counts.appends, resolve, reject, timer };
    tell({ type: 'wake_progress', wake_id: wakeId, ...counts });
  });
}

async function wakeOnce(start: RuntimeStartConfig, wake: RuntimeWake, slot: { client: WriterClient | null }): Promise<WakeDone> {
  const fromSeq = cache!.lastSeq + 1;
  const client = await WriterClient.connect(start.socket_path, 'runtime', start.token, { requestTimeoutMs: start.writer_request_timeout_ms, onAck: (events) => faults.recordAcks(events), onStray: log });
  slot.client = client;
  try {
    const result = await runWake({
      subjectId: start.subject_id,
      wake,
      client,
      cache: cache!,
      observed: observed!,
      retrieval: retrieval!,
      adapter: adapter!,
      capabilities: start.capabilities,
      retrievalPolicy: start.retrieval_policy,
      framing: start.framing,
      workspaceRoot: start.workspace_dir,
      shouldStop: () => stopping,
      protocol: start.protocol,
      schemaSubset: start.schema_subset,
      modelTimeoutMs: modelTimeoutOf(start),
      prices: configuredPricesOf(start.model),
      onProgress: (counts) => reportProgress(wake, counts),
      onModelCallStarted: (callNumber) => new Promise<void>((resolve) => tell({ type: 'model_call_started', wake_id: wake.wake_id, call_number: callNumber }, resolve)),
      faults,
      log,
    });
    const toSeq = cache!.lastSeq;
    return {
      wake_id: wake.wake_id,
      observed_from_seq: fromSeq,
      observed_to_seq: toSeq,
      events_read: toSeq - fromSeq + 1,
      appends: result.counts.appends,
      not_built: [],
      counts: result.counts,
      checkpoint: result.checkpoint,
      window_statement: result.window_statement.slice(0, 2_000),
      notes: result.notes.slice(0, 256).map((n) => n.slice(0, 2_000)),
    };
  } finally {
    client.close();
    slot.client = null;
  }
}

function failureOf(error: unknown): { code: WakeFailureCode; message: string } {
  if (error instanceof WakeNotOpenError) return { code: 'wake_not_open', message: error.message };
  if (error instanceof WakeStoppedError) return { code: 'stopped', message: error.message };
  if (error instanceof EventReadError) return { code: error.code === 'too_many_events' ? 'internal' : error.code, message: error.message };
  if (error instanceof WriterUnavailableError) return { code: 'writer_unavailable', message: `${error.reason}: ${error.message}` };
  // A full disk is no refusal of what the runtime asked: it is the operator's to fix (free space, resume).
  if (error instanceof WriterError && error.code === 'store_full') return { code: 'store_full', message: error.message };
  if (error instanceof WriterError) return { code: 'writer_refused', message: `${error.code}: ${error.message}` };
  return { code: 'internal', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

function onWake(wake: RuntimeWake): void {
  if (!config) return tell({ type: 'wake_failed', wake_id: wake.wake_id, code: 'not_started', message: 'wake before a valid start message' });
  if (stopping) return tell({ type: 'wake_failed', wake_id: wake.wake_id, code: 'stopped', message: 'the runtime is stopping' });
  if (currentWake) return tell({ type: 'wake_failed', wake_id: wake.wake_id, code: 'busy', message: `wake ${currentWake.wakeId} is still running; one wake at a time` });
  const slot = { wakeId: wake.wake_id, client: null as WriterClient | null, settled: null as Promise<void> | null };
  currentWake = slot;
  log(`wake ${wake.wake_id} at ${wake.wake_at}: visible up to seq ${wake.visible_to_seq}`);
  slot.settled = wakeOnce(config, wake, slot).then(
    (report) => {
      currentWake = null;
      if (stopping) return;
      const c = report.counts;
      log(`wake ${wake.wake_id} done: ${report.window_statement}; ${c.model_calls} model call(s), ${c.executions} execution(s), ${c.denials} denial(s), ${c.claims} claim(s)`);
      tell({ type: 'wake_done', ...report });
    },
    (error: unknown) => {
      currentWake = null;
      if (stopping) return;
      const { code, message } = failureOf(error);
      log(`wake ${wake.wake_id} failed ${code}: ${message}`);
      tell({ type: 'wake_failed', wake_id: wake.wake_id, code, message });
    },
  );
}

/**
 * A wake in flight is let run to its next step boundary (runtime/wake-loop.ts shouldStop): a
 * model call under way is answered and recorded, a file operation gets its outcome — nothing
 * happens that the store does not tell. Bounded: past the model's call timeout plus a margin
 * the connection is closed and the process exits, and the message says the wake was cut.
 */
function stop(reason: string): void {
  if (stopping) return;
  stopping = true;
  log(`stopping: ${reason}`);
  const running = currentWake;
  if (!running?.settled) return exitAfter(0, null);
  // A call under way may take the whole call timeout of any model that is waited for (a local model's as much as a server's: the controller waits that long too, its manifest's call_timeout_ms); one that is not answers at once.
  const graceMs = (config === null ? 0 : (callTimeoutMsOf(config.model) ?? 0)) + STOP_MARGIN_MS;
  const cut = setTimeout(() => {
    running.client?.close();
    exitAfter(0, { type: 'wake_failed', wake_id: running.wakeId, code: 'stopped', message: `the runtime stopped (${reason}); the wake did not reach a step boundary within ${graceMs} ms and was cut` });
  }, graceMs);
  void running.settled.then(() => {
    clearTimeout(cut);
    exitAfter(0, { type: 'wake_failed', wake_id: running.wakeId, code: 'stopped', message: `the runtime stopped (${reason}) at a step boundary of the wake; everything it did is recorded` });
  });
}

/** The timeout each call is given: the model's own where it is waited for; a model that is not (it answers at once) is handed the wake loop's default, which it never needs. */
function modelTimeoutOf(start: RuntimeStartConfig): number {
  return callTimeoutMsOf(start.model) ?? MODEL_CALL_TIMEOUT_MS;
}

/**
 * The adapter's own check before the first wake (issue 15 item 5), reported in `ready`: the
 * controller records it and refuses to go on when it failed. A check that throws is a failed
 * check, said as such.
 */
async function preflight(model: ModelAdapter, start: RuntimeStartConfig): Promise<PreflightReport | null> {
  if (!model.preflight) return null;
  try {
    // The probe is asked in the form every wake sends: seqs specialised to a shown set (here: seq 1), held to the dialect's subset as every wake's is.
    const result = await model.preflight(answerSchemaToSend(start.schema_subset, specialisedAnswerSchema(start.protocol, [1])), modelTimeoutOf(start), start.constraint_shown_earlier);
    const lines = result.lines.slice(0, 64).map((l) => l.slice(0, 2_000));
    return result.ok ? { ok: true, facts: { ...result.facts }, lines } : { ok: false, reason: result.reason.slice(0, 4_000), ...(result.facts === undefined ? {} : { facts: { ...result.facts } }), lines };
  } catch (error) {
    return { ok: false, reason: `the preflight check threw: ${error instanceof Error ? error.message : String(error)}`.slice(0, 4_000), lines: [] };
  }
}

/** A malformed message's `type` and `wake_id`, read without trusting anything else in it. */
function peek(raw: unknown): { type: unknown; wakeId: string | null } {
  if (typeof raw !== 'object' || raw === null) return { type: undefined, wakeId: null };
  const record = raw as Record<string, unknown>;
  // Only an id that is itself valid can be answered: the parent validates wake_failed too.
  const wakeId = Identifier.safeParse(record.wake_id);
  return { type: record.type, wakeId: wakeId.success ? wakeId.data : null };
}

const startTimer = setTimeout(() => fatal('no_config', `no start message within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
process.on('message', (raw: unknown) => {
  const parsed = RuntimeParentMessage.safeParse(raw);
  if (!parsed.success) {
    // zod's messages name paths and expectations, never the values given, so the token
    // of a malformed start message does not end up in a log.
    const problem = z.prettifyError(parsed.error);
    const { type, wakeId } = peek(raw);
    if (type === 'start' && !config) {
      clearTimeout(startTimer);
      return fatal('bad_start', `malformed start message: ${problem}`);
    }
    if (type === 'wake' && wakeId !== null) return tell({ type: 'wake_failed', wake_id: wakeId, code: 'bad_message', message: `malformed wake message: ${problem}` });
    return log(`ignoring malformed parent message: ${problem}`);
  }
  const message = parsed.data;
  switch (message.type) {
    case 'start': {
      if (config) return log('ignoring a second start message');
      if (fatalSent) return;
      clearTimeout(startTimer);
      try {
        adapter = modelAdapterFor(message.model);
      } catch (error) {
        return fatal('bad_start', `cannot set up the model adapter: ${error instanceof Error ? error.message : String(error)}`);
      }
      config = message;
      cache = new EventCache(message.subject_id);
      observed = new ObservedState();
      retrieval = new RetrievalIndex(message.retrieval_policy);
      const caps = message.capabilities;
      log(`started for subject ${message.subject_id}: persistent_state=${caps.persistent_state}, autonomous_replanning=${caps.autonomous_replanning}; model ${adapter.name} ${adapter.model_id}; protocol ${message.protocol}; writer at ${message.socket_path}`);
      void preflight(adapter, message).then((report) => tell({ type: 'ready', pid: process.pid, preflight: report }));
      return;
    }
    case 'wake':
      onWake(message);
      return;
    case 'shutdown':
      stop('parent asked');
      return;
    case 'progress_ack': {
      const waiting = pendingAck;
      if (!waiting || waiting.wakeId !== message.wake_id || waiting.appends !== message.appends) return log(`ignoring a progress_ack for ${message.wake_id} append ${message.appends} nobody waits for`);
      pendingAck = null;
      clearTimeout(waiting.timer);
      waiting.resolve();
      return;
    }
    default: {
      const unhandled: never = message;
      log(`unhandled parent message ${JSON.stringify(unhandled)}`);
    }
  }
});
process.on('disconnect', () => stop('parent went away'));
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
