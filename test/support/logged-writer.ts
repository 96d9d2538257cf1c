// A ds-writer forked directly, with its stderr captured, for tests of what the writer
// logs (spawnWriter lets the log through to the parent's stderr, where a test cannot
// read it). It reopens a store a WriterFixture made.
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RUN_FILES } from '../../schema/run-files.js';
import { WriterChildMessage, type WriterParentMessage } from '../../writer/protocol.js';
import type { WriterExit } from '../../writer/spawn.js';
import type { WriterFixture } from './writer-fixture.js';

export interface LoggedWriter {
  readonly socketPath: string;
  /** The `ready` message. */
  readonly ready: Extract<WriterChildMessage, { type: 'ready' }>;
  /** Resolves after the exit, once stderr is read to its end. */
  readonly exited: Promise<WriterExit>;
  /** Everything the writer wrote to stderr so far. */
  log(): string;
  /** Sends a parent message and waits for the first child message of `answer` type. */
  control(message: WriterParentMessage, answer: WriterChildMessage['type']): Promise<WriterChildMessage>;
  /** Asks for a clean stop and waits for the exit (and the end of stderr). */
  stop(): Promise<WriterExit>;
}

function nextMessage(child: ChildProcess, type: WriterChildMessage['type'], timeoutMs: number): Promise<WriterChildMessage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} message from the writer within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (raw: unknown): void => {
      const parsed = WriterChildMessage.safeParse(raw);
      if (!parsed.success) return;
      if (parsed.data.type === 'fatal' && type !== 'fatal') {
        clearTimeout(timer);
        child.off('message', onMessage);
        reject(new Error(`writer failed: ${parsed.data.code}: ${parsed.data.message}`));
        return;
      }
      if (parsed.data.type !== type) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(parsed.data);
    };
    child.on('message', onMessage);
  });
}

export async function forkLoggedWriter(like: Pick<WriterFixture, 'dir' | 'tokens' | 'identity' | 'snapshotEvery'>, socketName = 'logged.sock'): Promise<LoggedWriter> {
  const child = fork(fileURLToPath(new URL('../../writer/main.ts', import.meta.url)), [], {
    execArgv: ['--import', createRequire(import.meta.url).resolve('tsx')],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr += chunk;
  });
  // 'close', not 'exit': it comes after stderr has been read to its end.
  const exited = new Promise<WriterExit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const socketPath = path.join(like.dir, socketName);
  const readyMessage = nextMessage(child, 'ready', 20_000);
  child.send({
    type: 'start',
    db_path: path.join(like.dir, RUN_FILES.store),
    socket_path: socketPath,
    mode: 'open',
    ...like.identity,
    tokens: like.tokens,
    projection: 'event-counts',
    socket_mode: 0o600,
    snapshot_every: like.snapshotEvery,
  });
  const ready = (await readyMessage) as Extract<WriterChildMessage, { type: 'ready' }>;
  return {
    socketPath,
    ready,
    exited,
    log: () => stderr,
    control(message, answer) {
      const answered = nextMessage(child, answer, 10_000);
      child.send(message);
      return answered;
    },
    async stop() {
      if (child.connected) child.send({ type: 'shutdown' });
      return exited;
    },
  };
}
