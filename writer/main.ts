// ds-writer: the Event Store Writer process (DESIGN §2). Started by its controller with
// an IPC channel; receives its configuration (including role tokens, which must never
// appear in argv) as one `start` message, opens events.db, serves the socket, and
// answers `ready` or `fatal`. It exits when told to, on SIGTERM/SIGINT, or when its
// parent goes away: an orphaned writer must not keep holding the store.
import { z } from 'zod';
import { projectionNamed } from '../projector/registry.js';
import { EventStore, StoreOpenError } from './event-store.js';
import { WriterParentMessage, type WriterChildMessage, type WriterStartConfig } from './protocol.js';
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

let store: EventStore | null = null;
let server: WriterServer | null = null;
let stopping = false;

async function stop(reason: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log(`stopping: ${reason}`);
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
    };
    store = config.mode === 'create' ? EventStore.create(options) : EventStore.open(options);
  } catch (error) {
    if (error instanceof StoreOpenError) return fail(error.code, error.message);
    return fail('open_failed', error instanceof Error ? error.message : String(error));
  }
  server = await startWriterServer({ store, identity, tokens: config.tokens, socketPath: config.socket_path, socketMode: config.socket_mode, log });
  log(`serving ${config.db_path} on ${config.socket_path} at head seq ${store.head().seq}`);
  tell({ type: 'ready', pid: process.pid, socket_path: config.socket_path, head: store.head() });
}

const startTimer = setTimeout(() => fail('no_config', `no start message within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
process.on('message', (raw: unknown) => {
  const parsed = WriterParentMessage.safeParse(raw);
  if (!parsed.success) return log(`ignoring malformed parent message: ${z.prettifyError(parsed.error)}`);
  const message = parsed.data;
  switch (message.type) {
    case 'start':
      clearTimeout(startTimer);
      if (store) return log('ignoring a second start message');
      start(message).catch((error: unknown) => fail('start_failed', error instanceof Error ? error.message : String(error)));
      return;
    case 'shutdown':
      void stop('parent asked');
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
