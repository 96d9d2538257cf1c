// The controller's side of a ds-writer on a Subject store (DESIGN §2): the writer spawned on the
// run's events.db with the store's identity, this build's Subject projection, the instance's
// snapshot interval, fresh tokens and a socket in a folder of the controller's making; then the
// controller's connection to it, as the experiment role. An instance (controller/instance-processes.ts)
// and a repair (controller/operator-resolution.ts) start their writers here, so what a writer of
// a run is started with is said once. Spawning and connecting are two steps: the repair checks the
// writer's head before it connects.
import { subjectProjection } from '../projector/subject-projection.js';
import { WriterClient, type WriterClientOptions } from '../writer/client.js';
import type { StoreIdentity } from '../writer/event-store.js';
import { newToken, spawnWriter, type SpawnWriterOptions, type WriterProcess } from '../writer/spawn.js';
import type { SocketDir } from './isolation.js';

/**
 * An instance holds about 500 events: a snapshot every 100 gives the restore drill (and the fault
 * harness's snapshot faults) several to start from, at a few kilobytes each. Same for every group.
 */
export const INSTANCE_SNAPSHOT_EVERY_EVENTS = 100;

/** The two roles' tokens: the runtime's and the controller's (the experiment role). */
export interface WriterTokens {
  readonly runtime: string;
  readonly experiment: string;
}

export function newWriterTokens(): WriterTokens {
  return { runtime: newToken(), experiment: newToken() };
}

export interface SubjectWriterStart {
  readonly storeFile: string;
  /** create: a new run's store; open: an existing one, whose identity must match. */
  readonly mode: 'create' | 'open';
  readonly identity: StoreIdentity;
  readonly socket: SocketDir;
  readonly tokens: WriterTokens;
  /** How the process starts: the code copy and uid of an isolated run, the fault harness's arming (none: this process's code and uid). */
  readonly process?: SpawnWriterOptions;
}

/** Spawns ds-writer on a Subject store; resolves once it serves (its head and whether it is sealed are on the process). */
export function spawnSubjectWriter(start: SubjectWriterStart): Promise<WriterProcess> {
  return spawnWriter(
    {
      db_path: start.storeFile,
      socket_path: start.socket.socketPath,
      mode: start.mode,
      ...start.identity,
      tokens: start.tokens,
      projection: subjectProjection.name,
      socket_mode: start.socket.socketMode,
      snapshot_every: INSTANCE_SNAPSHOT_EVERY_EVENTS,
    },
    start.process,
  );
}

/** The controller's connection to the writer it spawned (the experiment role). */
export function connectController(socket: SocketDir, tokens: WriterTokens, options: WriterClientOptions = {}): Promise<WriterClient> {
  return WriterClient.connect(socket.socketPath, 'experiment', tokens.experiment, options);
}
