// Starts a ds-writer process and waits until it serves its socket. The controller (and
// tests, and the benchmark) use this; nobody else opens events.db.
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { processCodeFor, type ProcessCode } from '../foundation/process-code.js';
import { startSupervisedChild, type ChildExit, type StartReading } from '../foundation/supervised-child.js';
import { CodedErrorOf, InternalError } from '../foundation/typed-error.js';
import { childEnvironment } from '../schema/fault-switch.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArmCrashMessage, WriterChildMessage, type Head, type WriterParentMessage, type WriterStartConfig } from './protocol.js';

const WRITER_MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const OWN_CODE_ROOT = fileURLToPath(new URL('..', import.meta.url));

export type WriterExit = ChildExit;

interface WriterReady {
  readonly pid: number;
  readonly head: Head;
  readonly sealed: boolean;
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
  /** Whether the store was sealed when the writer started (it then serves reads and refuses appends). */
  readonly sealed: boolean;
  /**
   * Arms the crash drill: the writer SIGKILLs itself inside the transaction of the
   * `duringAppendNumber`th append batch (1–64) reaching its commit from now on, so that
   * batch is never committed. Resolves once the writer has acknowledged it.
   */
  armCrash(duringAppendNumber: number): Promise<void>;
  /** Disarms the crash drill; resolves once the writer has acknowledged it. */
  disarmCrash(): Promise<void>;
}

/** The writer did not acknowledge a control message (it exited, or its IPC channel is gone). */
export class WriterControlError extends InternalError {
  override readonly name = 'WriterControlError';
}

export class WriterStartError extends CodedErrorOf<string>('writer_start', EXIT_CODES.failed) {
  override readonly name = 'WriterStartError';
}

export interface SpawnWriterOptions {
  readonly startTimeoutMs?: number;
  readonly uid?: number;
  readonly gid?: number;
  /**
   * Where the writer's code comes from (a checkout or a readable copy, see
   * controller/isolation.ts): a writer under another uid may be unable to read this
   * module's own checkout. Default: the code this module belongs to.
   */
  readonly codeRoot?: string;
  /** DS_FAULT_INJECTION for the child (npm run faults); absent: the variable is kept out of its environment. */
  readonly faultInjection?: string | null;
  /** Where its stdout and stderr go (appended); absent: the controller's own (foundation/supervised-child.ts). */
  readonly outputFile?: string;
}

/**
 * A socket path in a fresh private folder under the system temp dir: run folders can
 * sit at paths longer than a Unix socket address allows (~107 bytes).
 */
export function newSocketPath(): string {
  return path.join(mkdtempSync(path.join(tmpdir(), 'ds-sock-')), 'writer.sock');
}

/** The writer main from `codeRoot`, or this module's own checkout when not given, bundled (foundation/process-code.ts). */
function writerCodeAt(codeRoot: string | undefined): Promise<ProcessCode> {
  if (codeRoot === undefined) return processCodeFor(WRITER_MAIN, OWN_CODE_ROOT);
  return processCodeFor(path.join(codeRoot, 'writer', 'main.ts'), codeRoot);
}

export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

/** What the writer says at start-up: ready, a refusal, or nothing of the start (crash_armed answers the drill). */
function readWriterStart(raw: unknown): StartReading<WriterReady> {
  const parsed = WriterChildMessage.safeParse(raw);
  if (!parsed.success || parsed.data.type === 'crash_armed') return null;
  if (parsed.data.type === 'ready') return { ready: { pid: parsed.data.pid, head: parsed.data.head, sealed: parsed.data.sealed } };
  return { refused: new WriterStartError(parsed.data.code, parsed.data.message) };
}

export async function spawnWriter(config: Omit<WriterStartConfig, 'type'>, options: SpawnWriterOptions = {}): Promise<WriterProcess> {
  const supervised = await startSupervisedChild<WriterReady>({
    label: 'writer',
    logTag: '[spawnWriter]',
    code: await writerCodeAt(options.codeRoot),
    // The working folder must be readable by the writer's uid too.
    ...(options.codeRoot === undefined ? {} : { cwd: options.codeRoot }),
    env: childEnvironment(options.faultInjection ?? null),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
    ...(options.outputFile === undefined ? {} : { outputFile: options.outputFile }),
    startTimeoutMs: options.startTimeoutMs ?? 20_000,
    startMessage: { type: 'start', ...config } satisfies WriterStartConfig,
    readStart: readWriterStart,
    startError: (code, message) => new WriterStartError(code, message),
  });
  const { child, exited, ready } = supervised;
  /** Sends a crash-drill message and waits for the writer to acknowledge exactly that arming. */
  const crashDrill = (message: WriterParentMessage, expected: number | null): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const onMessage = (raw: unknown): void => {
        const parsed = WriterChildMessage.safeParse(raw);
        if (!parsed.success || parsed.data.type !== 'crash_armed' || parsed.data.during_append_number !== expected) return;
        child.off('message', onMessage);
        resolve();
      };
      child.on('message', onMessage);
      void exited.then((exit) => {
        child.off('message', onMessage);
        reject(new WriterControlError(`writer exited (code ${exit.code}, signal ${exit.signal}) before acknowledging ${message.type}`));
      });
      if (!supervised.send(message)) reject(new WriterControlError(`writer's IPC channel is closed; cannot send ${message.type}`));
    });
  return {
    pid: ready.pid,
    socketPath: config.socket_path,
    head: ready.head,
    sealed: ready.sealed,
    exited,
    kill: supervised.kill,
    armCrash: async (duringAppendNumber) => {
      const message = ArmCrashMessage.parse({ type: 'arm_crash', during_append_number: duringAppendNumber });
      return crashDrill(message, message.during_append_number);
    },
    disarmCrash: () => crashDrill({ type: 'disarm_crash' }, null),
    stop: (timeoutMs = 10_000) => supervised.stop({ type: 'shutdown' } satisfies WriterParentMessage, timeoutMs),
  };
}
