// Starts a ds-writer process and waits until it serves its socket. The controller (and
// tests, and the benchmark) use this; nobody else opens events.db.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WriterChildMessage, type Head, type WriterStartConfig } from './protocol.js';

const WRITER_MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const TSX_LOADER = createRequire(import.meta.url).resolve('tsx');

export interface WriterExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface WriterProcess {
  readonly pid: number;
  readonly socketPath: string;
  readonly head: Head;
  readonly exited: Promise<WriterExit>;
  /** Asks the writer to close the store cleanly and waits for it to exit. */
  stop(timeoutMs?: number): Promise<WriterExit>;
  /** Kills it (e.g. SIGKILL for crash tests) and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<WriterExit>;
}

export class WriterStartError extends Error {
  override readonly name = 'WriterStartError';
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export interface SpawnWriterOptions {
  readonly startTimeoutMs?: number;
  readonly uid?: number;
  readonly gid?: number;
}

/**
 * A socket path in a fresh private folder under the system temp dir: run folders can
 * sit at paths longer than a Unix socket address allows (~107 bytes).
 */
export function newSocketPath(): string {
  return path.join(mkdtempSync(path.join(tmpdir(), 'ds-sock-')), 'writer.sock');
}

export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

export async function spawnWriter(config: Omit<WriterStartConfig, 'type'>, options: SpawnWriterOptions = {}): Promise<WriterProcess> {
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const child: ChildProcess = fork(WRITER_MAIN, [], {
    execArgv: ['--import', TSX_LOADER],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
  const exited = new Promise<WriterExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ready = await new Promise<{ pid: number; head: Head }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new WriterStartError('start_timeout', `writer did not become ready within ${startTimeoutMs} ms`));
    }, startTimeoutMs);
    child.on('message', (raw: unknown) => {
      const parsed = WriterChildMessage.safeParse(raw);
      if (!parsed.success) return;
      clearTimeout(timer);
      if (parsed.data.type === 'ready') resolve({ pid: parsed.data.pid, head: parsed.data.head });
      else reject(new WriterStartError(parsed.data.code, parsed.data.message));
    });
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(new WriterStartError('exited', `writer exited during start-up (code ${exit.code}, signal ${exit.signal})`));
    });
    child.send({ type: 'start', ...config });
  });
  const kill = async (signal: NodeJS.Signals): Promise<WriterExit> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return {
    pid: ready.pid,
    socketPath: config.socket_path,
    head: ready.head,
    exited,
    kill,
    stop: async (timeoutMs = 10_000) => {
      if (child.connected) child.send({ type: 'shutdown' });
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const exit = await exited;
      clearTimeout(timer);
      if (child.connected) child.disconnect();
      return exit;
    },
  };
}
