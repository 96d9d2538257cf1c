// ds-runtime: the Subject Runtime process (DESIGN §2, §6). Started by its controller with
// an IPC channel; receives its configuration (the runtime role's writer token among it,
// which must never appear in argv) as one `start` message and answers `ready`.
//
// THIS BUILD PERFORMS ONLY THE "OBSERVE" STEP OF A WAKE, and only its read: on each
// `wake` it connects to the writer as role `runtime`, reads the events it may see (those
// after the last one it observed, up to the wake's visible_to_seq), disconnects and
// reports what it read. It builds no context bundle, calls no model, proposes no plan,
// runs no tool, records no memory and writes no checkpoint: those phases are the next
// issue, and it says so on stderr at start and in every wake report (`not_built`).
//
// It never opens a database, never reads a key, and never learns its group letter: it is
// handed only the capability flags. Its only memory (the last observed seq) lives in this
// process and dies with it. It exits on `shutdown`, SIGTERM/SIGINT, or when its parent
// goes away: an orphaned runtime must not keep acting for a subject nobody supervises.
import { z } from 'zod';
import { Identifier } from '../schema/event-definition.js';
import { WriterClient, WriterUnavailableError } from '../writer/client.js';
import { WRITER_LIMITS, WriterError } from '../writer/protocol.js';
import {
  NOT_BUILT_PHASES,
  RuntimeParentMessage,
  type RuntimeChildMessage,
  type RuntimeFatalCode,
  type RuntimeStartConfig,
  type RuntimeWake,
  type WakeDone,
  type WakeFailureCode,
} from './protocol.js';

process.title = 'ds-runtime';
const START_TIMEOUT_MS = 10_000;
/** Per writer request; a read page that takes longer fails the wake as writer_unavailable. */
const WRITER_REQUEST_TIMEOUT_MS = 30_000;
/** How long a last message (fatal, wake_failed) may take to leave before the process exits anyway. */
const EXIT_FLUSH_MS = 500;

const log = (line: string): void => {
  process.stderr.write(`[ds-runtime ${process.pid}] ${line}\n`);
};

log(`not built yet: ${NOT_BUILT_PHASES.join(', ')}. A wake only observes: it reads the events it may see and reports how many; it builds no context bundle, makes no model call and no appends.`);

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

class WakeFailure extends Error {
  override readonly name = 'WakeFailure';
  constructor(readonly code: WakeFailureCode, message: string) {
    super(message);
  }
}

let config: RuntimeStartConfig | null = null;
/** Seq of the last event an earlier wake observed; 0 before the first wake. In memory only. */
let lastObservedSeq = 0;
let currentWake: { readonly wakeId: string; client: WriterClient | null } | null = null;
let stopping = false;

/**
 * The read half of "observe": seqs lastObservedSeq+1 .. visible_to_seq, in pages of at
 * most the writer's page limit, over a connection opened for this wake only (a writer
 * restarted between wakes is then simply reconnected to).
 */
async function observe(start: RuntimeStartConfig, wake: RuntimeWake, slot: { client: WriterClient | null }): Promise<WakeDone> {
  const fromSeq = lastObservedSeq + 1;
  const toSeq = wake.visible_to_seq;
  if (toSeq < lastObservedSeq) throw new WakeFailure('seq_regressed', `visible_to_seq ${toSeq} is below seq ${lastObservedSeq}, already observed by an earlier wake`);

  const client = await WriterClient.connect(start.socket_path, 'runtime', start.token, { requestTimeoutMs: WRITER_REQUEST_TIMEOUT_MS });
  slot.client = client;
  try {
    const hello = client.hello!;
    if (hello.subject_id !== start.subject_id) throw new WakeFailure('identity_mismatch', `the writer serves subject ${hello.subject_id}, this runtime was started for ${start.subject_id}`);
    if (hello.head.seq < toSeq) throw new WakeFailure('beyond_head', `visible_to_seq ${toSeq} is beyond the writer's head ${hello.head.seq}`);
    const pageSize = Math.min(hello.limits.maxReadPage, WRITER_LIMITS.maxReadPage);
    const span = toSeq - fromSeq + 1;
    // Each full page advances by pageSize, and a short page is refused below, so this many
    // pages always suffice; the bound keeps a misbehaving writer from looping us forever.
    const maxPages = Math.ceil(span / pageSize);
    let nextSeq = fromSeq;
    let eventsRead = 0;
    for (let page = 0; page < maxPages && nextSeq <= toSeq; page++) {
      const limit = Math.min(pageSize, toSeq - nextSeq + 1);
      const result = await client.read({ from_seq: nextSeq, limit });
      // The head was at or past toSeq, and events are never removed: anything but exactly
      // `limit` events numbered nextSeq, nextSeq+1, … means the writer is not the store we think.
      if (result.events.length !== limit) throw new WakeFailure('read_gap', `asked for ${limit} events from seq ${nextSeq}, the writer returned ${result.events.length}`);
      result.events.forEach((event, i) => {
        if (event.seq !== nextSeq + i) throw new WakeFailure('read_gap', `expected seq ${nextSeq + i}, the writer returned seq ${event.seq}`);
        if (event.subject_id !== start.subject_id) throw new WakeFailure('identity_mismatch', `event seq ${event.seq} belongs to subject ${event.subject_id}`);
      });
      eventsRead += result.events.length;
      nextSeq += result.events.length;
    }
    if (nextSeq !== toSeq + 1) throw new WakeFailure('read_gap', `stopped at seq ${nextSeq - 1}, short of visible_to_seq ${toSeq}`);
    lastObservedSeq = toSeq;
    return { wake_id: wake.wake_id, observed_from_seq: fromSeq, observed_to_seq: toSeq, events_read: eventsRead, appends: 0, not_built: [...NOT_BUILT_PHASES] };
  } finally {
    client.close();
    slot.client = null;
  }
}

function failureOf(error: unknown): { code: WakeFailureCode; message: string } {
  if (error instanceof WakeFailure) return { code: error.code, message: error.message };
  if (error instanceof WriterUnavailableError) return { code: 'writer_unavailable', message: `${error.reason}: ${error.message}` };
  if (error instanceof WriterError) return { code: 'writer_refused', message: `${error.code}: ${error.message}` };
  return { code: 'internal', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

function onWake(wake: RuntimeWake): void {
  if (!config) return tell({ type: 'wake_failed', wake_id: wake.wake_id, code: 'not_started', message: 'wake before a valid start message' });
  if (stopping) return tell({ type: 'wake_failed', wake_id: wake.wake_id, code: 'stopped', message: 'the runtime is stopping' });
  if (currentWake) return tell({ type: 'wake_failed', wake_id: wake.wake_id, code: 'busy', message: `wake ${currentWake.wakeId} is still running; one wake at a time` });
  const slot = { wakeId: wake.wake_id, client: null as WriterClient | null };
  currentWake = slot;
  log(`wake ${wake.wake_id} at ${wake.wake_at}: observing up to seq ${wake.visible_to_seq}`);
  observe(config, wake, slot).then(
    (report) => {
      currentWake = null;
      if (stopping) return;
      log(`wake ${wake.wake_id} done: read ${report.events_read} events (seq ${report.observed_from_seq}..${report.observed_to_seq}); not built: ${report.not_built.join(', ')}`);
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

function stop(reason: string): void {
  if (stopping) return;
  stopping = true;
  log(`stopping: ${reason}`);
  const running = currentWake;
  running?.client?.close();
  // The wake in flight did not finish; say so rather than leave the parent to guess.
  exitAfter(0, running ? { type: 'wake_failed', wake_id: running.wakeId, code: 'stopped', message: `the runtime stopped (${reason}) during the wake` } : null);
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
      config = message;
      const caps = message.capabilities;
      log(`started for subject ${message.subject_id}: persistent_state=${caps.persistent_state}, autonomous_replanning=${caps.autonomous_replanning}; writer at ${message.socket_path}`);
      tell({ type: 'ready', pid: process.pid });
      return;
    }
    case 'wake':
      onWake(message);
      return;
    case 'shutdown':
      stop('parent asked');
      return;
    default: {
      const unhandled: never = message;
      log(`unhandled parent message ${JSON.stringify(unhandled)}`);
    }
  }
});
process.on('disconnect', () => stop('parent went away'));
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
