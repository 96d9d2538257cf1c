// ds-writer: the Event Store Writer process (DESIGN §2). Started by its controller with
// an IPC channel; receives its configuration (including role tokens, which must never
// appear in argv) as one `start` message, opens events.db, serves the socket, and
// answers `ready` or `fatal`. It exits when told to, on SIGTERM/SIGINT, or when its
// parent goes away: an orphaned writer must not keep holding the store. For the
// controller's writer-crash intervention it can be armed to SIGKILL itself inside the
// Nth append transaction, before the commit.
import { z } from 'zod';
import { projectionNamed } from '../projector/registry.js';
import { FaultArmingError, FaultSwitch } from '../schema/fault-switch.js';
import { EventStore, StoreOpenError } from './event-store.js';
import { WriterParentMessage, type ArmCrashMessage, type WriterChildMessage, type WriterStartConfig } from './protocol.js';
import { someoneListens, startWriterServer, type WriterServer } from './socket-server.js';

process.title = 'ds-writer';
const START_TIMEOUT_MS = 10_000;
const log = (line: string): void => {
  process.stderr.write(`[ds-writer ${process.pid}] ${line}\n`);
};

const send = process.send?.bind(process);
if (!send) {
  log('must be started by its controller with an IPC channel (see writer/spawn.ts); refusing to run standalone');
  process.exit(2);
}

function tell(message: WriterChildMessage): void {
  send!(message);
}

let failed = false;
/** Reports a start-up failure to the parent exactly once, then exits non-zero. */
function fail(code: string, message: string): void {
  if (failed) return;
  failed = true;
  log(`fatal ${code}: ${message}`);
  tell({ type: 'fatal', code, message });
  // Give the IPC message a moment to leave before exiting.
  setTimeout(() => process.exit(1), 50);
}

/** The fault harness's points in this process (no-ops unless npm run faults armed them). */
let faults: FaultSwitch;
try {
  faults = FaultSwitch.fromEnv('writer', log);
} catch (error) {
  faults = FaultSwitch.off;
  if (!(error instanceof FaultArmingError)) throw error;
  fail('fault_arming', error.message);
}

let store: EventStore | null = null;
let server: WriterServer | null = null;
let stopping = false;

/** The armed crash drill: fire during append batch number `at`, counting from when it was armed. */
let crash: { readonly at: number; seen: number } | null = null;

function armCrash(message: ArmCrashMessage): void {
  crash = { at: message.during_append_number, seen: 0 };
  log(`crash drill armed: SIGKILL inside append transaction number ${crash.at} from now, before its commit`);
  tell({ type: 'crash_armed', during_append_number: crash.at });
}

function disarmCrash(): void {
  if (crash) log(`crash drill disarmed after ${crash.seen} of ${crash.at} append transactions`);
  crash = null;
  tell({ type: 'crash_armed', during_append_number: null });
}

/** Runs inside every caller's append transaction, after its rows are written, before the commit. */
function beforeAppendCommit(): void {
  faults.hit('writer.append.before_commit', () => ({ head_seq: store?.head().seq ?? null }));
  if (!crash) return;
  crash.seen += 1;
  if (crash.seen < crash.at) return;
  // stderr is synchronous for files and pipes on Linux, so this line is out before the kill.
  log(`crash drill fires: SIGKILL inside append transaction number ${crash.at}; the batch is not committed`);
  // SIGKILL to ourselves is delivered before kill(2) returns: no commit, no cleanup, no
  // exit handler; SQLite's WAL recovery on the next open drops the uncommitted frames.
  process.kill(process.pid, 'SIGKILL');
}

async function stop(reason: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  const refused = server?.refusedAfterSeal() ?? 0;
  log(`stopping: ${reason}${store?.sealed() ? ` (store sealed; ${refused} request(s) refused since the seal, none recorded)` : ''}`);
  await server?.close();
  try {
    // Takes the shutdown snapshot at the head. Failing it loses nothing (snapshots are a
    // cache and every event is already committed), but a store that cannot be written
    // at close deserves a non-zero exit.
    store?.close();
  } catch (error) {
    log(`closing the store failed (no shutdown snapshot): ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
  process.exit(0);
}

async function start(config: WriterStartConfig): Promise<void> {
  // events.db (and SQLite's -wal/-shm) readable by the writer's uid only (DESIGN §2): SQLite creates them 0666 & ~umask.
  process.umask(0o077);
  const identity = { subject_id: config.subject_id, experiment_id: config.experiment_id, manifest_sha256: config.manifest_sha256 };
  if (await someoneListens(config.socket_path)) {
    return fail('socket_in_use', `socket ${config.socket_path} is served by a running process (another writer?); refusing to take it over`);
  }
  try {
    const options = {
      path: config.db_path,
      identity,
      projection: projectionNamed(config.projection),
      now: () => new Date().toISOString(),
      snapshotEvery: config.snapshot_every,
      beforeAppendCommit,
      onSnapshotWrite: (seq: number) => void faults.hit('writer.snapshot.write', () => ({ snapshot_seq: seq })),
    };
    store = config.mode === 'create' ? EventStore.create(options) : EventStore.open(options);
  } catch (error) {
    if (error instanceof StoreOpenError) return fail(error.code, error.message);
    return fail('open_failed', error instanceof Error ? error.message : String(error));
  }
  server = await startWriterServer({ store, identity, tokens: config.tokens, socketPath: config.socket_path, socketMode: config.socket_mode, log, faults });
  const sealed = store.sealed();
  log(`serving ${config.db_path} on ${config.socket_path} at head seq ${store.head().seq}${sealed ? ` (sealed at seq ${sealed.seq}: reads only, every append is refused)` : ''}`);
  tell({ type: 'ready', pid: process.pid, socket_path: config.socket_path, head: store.head(), sealed: sealed !== null });
}

const startTimer = setTimeout(() => fail('no_config', `no start message within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
process.on('message', (raw: unknown) => {
  const parsed = WriterParentMessage.safeParse(raw);
  if (!parsed.success) return log(`ignoring malformed parent message: ${z.prettifyError(parsed.error)}`);
  const message = parsed.data;
  switch (message.type) {
    case 'start':
      clearTimeout(startTimer);
      if (failed) return;
      if (store) return log('ignoring a second start message');
      start(message).catch((error: unknown) => fail('start_failed', error instanceof Error ? error.message : String(error)));
      return;
    case 'shutdown':
      void stop('parent asked');
      return;
    case 'arm_crash':
      armCrash(message);
      return;
    case 'disarm_crash':
      disarmCrash();
      return;
    default: {
      const unhandled: never = message;
      log(`unhandled parent message ${JSON.stringify(unhandled)}`);
    }
  }
});
process.on('disconnect', () => void stop('parent went away'));
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
