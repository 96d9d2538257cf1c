// A child process the controller supervises over an IPC channel (the writer, the runtime): forked
// from bundled code (foundation/process-code.ts) in its own process group, started with one
// message, ready when it says so — or refused at a deadline, or when it exits first — then
// stopped politely with a SIGKILL behind the request. The one home of that life cycle; what the
// messages mean stays with each child's protocol (writer/spawn.ts, runtime/spawn.ts).
//
// `exited` settles on 'exit' once the IPC channel has also closed, so every message the child
// sent before dying (a wake_done just before a crash) is delivered first. Not 'close': it never
// fires once the parent has disconnected the channel itself. A channel that outlives the process
// (an inherited fd) is given up after a grace, and that is said.
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { ProcessCode } from './process-code.js';

/** How long after the exit the IPC channel may take to deliver its last messages and close. */
export const CHANNEL_CLOSE_GRACE_MS = 2_000;

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export function describeExit(exit: ChildExit): string {
  return `code ${exit.code}, signal ${exit.signal}`;
}

/** What a start-up message meant: the child is ready, it refused to start, or neither (passed on to `onMessage`). */
export type StartReading<Ready> = { readonly ready: Ready } | { readonly refused: Error } | null;

export interface SupervisedChildSpec<Ready> {
  /** The child's name in messages ('writer', 'runtime'): "writer did not become ready within …". */
  readonly label: string;
  /** The prefix of its lines on stderr ('[spawnWriter]'). */
  readonly logTag: string;
  readonly code: ProcessCode;
  /** The working folder; it must be readable by the child's uid. Default: this process's. */
  readonly cwd?: string;
  readonly env: NodeJS.ProcessEnv;
  readonly uid?: number;
  readonly gid?: number;
  /** A file the child's stdout and stderr are appended to (a study keeps every process's lines in its run folder); absent: this process's own. */
  readonly outputFile?: string;
  readonly startTimeoutMs: number;
  /** The first message sent: the child answers it with ready or a refusal. */
  readonly startMessage: { readonly type: string };
  readonly readStart: (raw: unknown) => StartReading<Ready>;
  /** The error a start-up that timed out or ended in an exit rejects with. */
  readonly startError: (code: 'start_timeout' | 'exited', message: string) => Error;
  /** Every message not taken by `readStart` while starting; attached before the fork's first message can arrive. */
  readonly onMessage?: (raw: unknown) => void;
}

export interface SupervisedChild<Ready> {
  readonly child: ChildProcess;
  readonly ready: Ready;
  readonly exited: Promise<ChildExit>;
  alive(): boolean;
  /** The exit if it happened (null while running). */
  exitNow(): ChildExit | null;
  /**
   * Sends on the IPC channel; false, sending nothing, when it is closed. The child may die between
   * the check and the write: the write then fails (EPIPE) after this returns, which `onError` is
   * told (default: a line on stderr) and `exited` follows — never an uncaught exception.
   */
  send(message: { readonly type: string }, onError?: (error: Error) => void): boolean;
  /** Sends `signal` unless it has exited already, and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<ChildExit>;
  /** Sends `shutdownMessage`, SIGKILLs it after `timeoutMs`, waits for the exit and closes the channel. */
  stop(shutdownMessage: { readonly type: string }, timeoutMs: number): Promise<ChildExit>;
}

function exitOnceChannelClosed(child: ChildProcess, logTag: string, label: string): Promise<ChildExit> {
  return new Promise<ChildExit>((resolve) =>
    child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      const exit = { code, signal };
      const finish = (): void => {
        clearTimeout(grace);
        resolve(exit);
      };
      const grace = setTimeout(() => {
        process.stderr.write(`${logTag} ${label} ${child.pid} exited but its IPC channel stayed open for ${CHANNEL_CLOSE_GRACE_MS} ms; closing it\n`);
        if (child.connected) child.disconnect();
        finish();
      }, CHANNEL_CLOSE_GRACE_MS);
      if (child.connected) child.once('disconnect', finish);
      else finish();
    }),
  );
}

function forkChild<Ready>(spec: SupervisedChildSpec<Ready>): ChildProcess {
  // Opened by this process, so a child under another uid needs no right on the folder; the child holds its own copy of the descriptor.
  const output = spec.outputFile === undefined ? 'inherit' : openSync(spec.outputFile, 'a');
  try {
    return forkWith(spec, output);
  } finally {
    if (typeof output === 'number') closeSync(output);
  }
}

function forkWith<Ready>(spec: SupervisedChildSpec<Ready>, output: 'inherit' | number): ChildProcess {
  return fork(spec.code.main, [], {
    execArgv: [...spec.code.execArgv],
    stdio: ['ignore', output, output, 'ipc'],
    // Its own process group: a Ctrl-C in the controller's terminal is the controller's emergency
    // stop, which still needs this child; the child exits when its parent goes away instead.
    detached: true,
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    env: spec.env,
    ...(spec.uid === undefined ? {} : { uid: spec.uid }),
    ...(spec.gid === undefined ? {} : { gid: spec.gid }),
  });
}

/** Forks the child, sends the start message and waits for ready; rejects with `spec.startError` or the child's refusal. */
export async function startSupervisedChild<Ready>(spec: SupervisedChildSpec<Ready>): Promise<SupervisedChild<Ready>> {
  const child = forkChild(spec);
  const exited = exitOnceChannelClosed(child, spec.logTag, spec.label);
  let exitedWith: ChildExit | null = null;
  void exited.then((exit) => (exitedWith = exit));
  child.on('error', (error) => process.stderr.write(`${spec.logTag} ${spec.label} process error: ${error.message}\n`));
  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
  const send = (message: { readonly type: string }, onError?: (error: Error) => void): boolean => {
    if (!child.connected) return false;
    child.send(message, (error: Error | null) => {
      if (error === null) return;
      if (onError) onError(error);
      else process.stderr.write(`${spec.logTag} could not send ${message.type} to the ${spec.label} (${error.message}); its exit says why\n`);
    });
    return true;
  };
  // Set by the start-up below (in the same tick: no message can arrive before it), cleared at ready.
  let readStart: ((raw: unknown) => StartReading<Ready>) | null = null;
  child.on('message', (raw: unknown) => {
    if (readStart !== null && readStart(raw) !== null) return;
    spec.onMessage?.(raw);
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(spec.startError('start_timeout', `${spec.label} did not become ready within ${spec.startTimeoutMs} ms`));
    }, spec.startTimeoutMs);
    readStart = (raw) => {
      const reading = spec.readStart(raw);
      if (reading === null) return null;
      clearTimeout(timer);
      readStart = null;
      if ('ready' in reading) resolve(reading.ready);
      else reject(reading.refused);
      return reading;
    };
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(spec.startError('exited', `${spec.label} exited during start-up (${describeExit(exit)})`));
    });
    send(spec.startMessage);
  });
  const exitNow = (): ChildExit | null => exitedWith ?? (alive() ? null : { code: child.exitCode, signal: child.signalCode });
  const kill = async (signal: NodeJS.Signals): Promise<ChildExit> => {
    if (alive()) child.kill(signal);
    return exited;
  };
  const stop = async (shutdownMessage: { readonly type: string }, timeoutMs: number): Promise<ChildExit> => {
    send(shutdownMessage);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const exit = await exited;
    clearTimeout(timer);
    if (child.connected) child.disconnect();
    return exit;
  };
  return { child, ready, exited, alive, exitNow, send, kill, stop };
}
