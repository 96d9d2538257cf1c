// Starts a ds-runtime process and talks to it over the IPC channel: the controller (and
// tests) use this. The runtime's writer token travels in the `start` message, never in
// argv. Every message from the child is validated with zod; one that fails is reported on
// stderr, not dropped silently.
import { processCodeFor, type ProcessCode } from '../foundation/process-code.js';
import { describeExit, startSupervisedChild, type ChildExit, type StartReading, type SupervisedChild } from '../foundation/supervised-child.js';
import { CodedInternalError, InternalError } from '../foundation/typed-error.js';
import { childEnvironment } from '../schema/fault-switch.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { RuntimeChildMessage, RuntimeStartConfig, RuntimeWake, type PreflightReport, type RuntimeParentMessage, type WakeDone, type WakeFailure, type WakeProgress } from './protocol.js';

const RUNTIME_MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const OWN_CODE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** How a wake's timeout is worded, wherever it is recorded (a stop's reason): the fault harness looks for these words (faults/invariants.ts). */
export function wakeUnansweredWithin(timeoutMs: number): string {
  return `within ${timeoutMs} ms; it was left running`;
}

export type RuntimeExit = ChildExit;

/** Its code: `bad_config` (refused before spawning), `start_timeout`, `exited`, or the child's fatal code. */
export class RuntimeStartError extends CodedInternalError<string> {
  override readonly name = 'RuntimeStartError';
}

export type RuntimeWakeErrorCode =
  /** The runtime answered wake_failed; `failure` holds its code and message. */
  | 'wake_failed'
  /** The runtime exited or was killed before answering; `exit` says how. */
  | 'exited'
  /** No answer within the caller's timeout. The runtime was left running: the caller decides. */
  | 'timeout'
  /** Refused here, nothing sent: the wake message failed its schema, its wake_id is already waiting, or the runtime is gone. */
  | 'bad_request';

export class RuntimeWakeError extends InternalError {
  override readonly name = 'RuntimeWakeError';
  constructor(
    readonly code: RuntimeWakeErrorCode,
    readonly wakeId: string,
    message: string,
    readonly failure: WakeFailure | null = null,
    readonly exit: RuntimeExit | null = null,
    /** The model call the runtime said it started and had not reported recorded when it died, if any. */
    readonly modelCallInFlight: number | null = null,
  ) {
    super(message);
  }
}

/** A wake as the caller asks for it (hold_at_each_append and steps_share_appends may be left out: false). */
export type RuntimeWakeRequest = Omit<z.input<typeof RuntimeWake>, 'type'>;

export interface RuntimeProcess {
  readonly pid: number;
  /** The model adapter's check before the first wake, as the runtime reported it in `ready` (null: nothing to check). */
  readonly preflight: PreflightReport | null;
  /** Settles when the process has exited and its IPC channel has closed. */
  readonly exited: Promise<RuntimeExit>;
  /** Delivers one wake and waits for its report; rejects with RuntimeWakeError. */
  wake(message: RuntimeWakeRequest, timeoutMs: number): Promise<WakeDone>;
  /** Calls `listener` on each wake_progress; returns a function that unsubscribes it. */
  onProgress(listener: (progress: WakeProgress) => void): () => void;
  /** Kills it (e.g. SIGKILL for crash tests and interventions) and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<RuntimeExit>;
  /** Asks it to stop, SIGKILLs it after timeoutMs, and waits for the exit. */
  stop(timeoutMs?: number): Promise<RuntimeExit>;
}

export interface SpawnRuntimeOptions {
  readonly uid?: number;
  readonly gid?: number;
  /**
   * A directory holding a copy of this repository to run the runtime from (e.g. one the
   * runtime's uid may read): main is `<codeRoot>/runtime/main.ts`, the tsx loader is
   * resolved from `<codeRoot>/package.json`, and the process runs with cwd = codeRoot.
   */
  readonly codeRoot?: string;
  readonly startTimeoutMs?: number;
  /** DS_FAULT_INJECTION for the child (npm run faults); absent: the variable is kept out of its environment. */
  readonly faultInjection?: string | null;
  /** Where its stdout and stderr go (appended); absent: the controller's own (foundation/supervised-child.ts). */
  readonly outputFile?: string;
}

interface PendingWake {
  readonly resolve: (report: WakeDone) => void;
  readonly reject: (error: RuntimeWakeError) => void;
  readonly timer: NodeJS.Timeout;
}

/** The runtime main from `codeRoot`, or this module's own checkout when not given, bundled (foundation/process-code.ts). */
async function entryPoint(codeRoot: string | undefined): Promise<ProcessCode & { cwd: string | undefined }> {
  if (codeRoot === undefined) return { ...(await processCodeFor(RUNTIME_MAIN, OWN_CODE_ROOT)), cwd: undefined };
  const root = path.resolve(codeRoot);
  return { ...(await processCodeFor(path.join(root, 'runtime', 'main.ts'), root)), cwd: root };
}

interface RuntimeReady {
  readonly pid: number;
  readonly preflight: PreflightReport | null;
}

/** What the runtime says at start-up: ready, a refusal (fatal), or nothing of the start. */
function readRuntimeStart(raw: unknown): StartReading<RuntimeReady> {
  const parsed = RuntimeChildMessage.safeParse(raw);
  if (!parsed.success) return null;
  if (parsed.data.type === 'ready') return { ready: { pid: parsed.data.pid, preflight: parsed.data.preflight } };
  if (parsed.data.type === 'fatal') return { refused: new RuntimeStartError(parsed.data.code, parsed.data.message) };
  return null;
}

/** The wakes waiting for their answer, and what the runtime has said of each so far. */
class WakeBook {
  readonly pending = new Map<string, PendingWake>();
  /**
   * The wakes sent with hold_at_each_append, until the runtime answers them (not when the caller
   * stops waiting: a runtime still running a timed-out wake still waits for its acks).
   */
  readonly held = new Set<string>();
  /** Per wake, the model call the runtime said it started and has not yet reported recorded. */
  readonly modelCallsInFlight = new Map<string, number>();
  readonly progressListeners = new Set<(progress: WakeProgress) => void>();

  settle(wakeId: string): PendingWake | null {
    const entry = this.pending.get(wakeId);
    if (!entry) return null;
    this.pending.delete(wakeId);
    clearTimeout(entry.timer);
    return entry;
  }

  /** The wake is answered (done or failed): nothing of it is waited for any more. */
  answered(wakeId: string): PendingWake | null {
    this.modelCallsInFlight.delete(wakeId);
    this.held.delete(wakeId);
    return this.settle(wakeId);
  }

  /** The runtime is gone: every waiting wake is rejected, naming the model call it had started. */
  rejectAll(exit: RuntimeExit): void {
    this.held.clear();
    for (const wakeId of [...this.pending.keys()]) {
      // Whether its outcome reached the store only the store can tell: the controller looks before it words the stop.
      const call = this.modelCallsInFlight.get(wakeId) ?? null;
      this.settle(wakeId)?.reject(new RuntimeWakeError('exited', wakeId, `ds-runtime exited during wake ${wakeId} (${describeExit(exit)})${call === null ? '' : ` after starting model call ${call}`}`, null, exit, call));
    }
  }
}

/** Handles one message after start-up; `ack` answers a held wake's progress. */
function onRuntimeMessage(raw: unknown, book: WakeBook, pid: number | undefined, ack: (message: RuntimeParentMessage) => void): void {
  const parsed = RuntimeChildMessage.safeParse(raw);
  if (!parsed.success) {
    process.stderr.write(`[spawnRuntime] ignoring malformed message from ds-runtime ${pid}: ${z.prettifyError(parsed.error)}\n`);
    return;
  }
  const message = parsed.data;
  switch (message.type) {
    case 'ready':
    case 'fatal':
      // A fatal after start is followed by the exit, which rejects any waiting wake.
      process.stderr.write(`[spawnRuntime] ds-runtime ${pid} sent ${message.type} after start: ${JSON.stringify(message)}\n`);
      return;
    case 'model_call_started':
      book.modelCallsInFlight.set(message.wake_id, message.call_number);
      return;
    case 'wake_progress': {
      const { type: _type, ...progress } = message;
      book.modelCallsInFlight.delete(progress.wake_id);
      for (const listener of book.progressListeners) listener(progress);
      // A held wake's runtime waits for this before its next step, so a listener that kills it (a
      // planned crash) does so at exactly this point, not some appends later: crashes stay reproducible.
      if (book.held.has(progress.wake_id)) ack({ type: 'progress_ack', wake_id: progress.wake_id, appends: progress.appends });
      return;
    }
    case 'wake_done': {
      const { type: _type, ...report } = message;
      const entry = book.answered(report.wake_id);
      if (entry) entry.resolve(report);
      else process.stderr.write(`[spawnRuntime] wake_done for ${report.wake_id}, which nobody waits for (timed out?)\n`);
      return;
    }
    case 'wake_failed': {
      const { type: _type, ...failure } = message;
      const entry = book.answered(failure.wake_id);
      if (entry) entry.reject(new RuntimeWakeError('wake_failed', failure.wake_id, `wake ${failure.wake_id} failed (${failure.code}): ${failure.message}`, failure));
      else process.stderr.write(`[spawnRuntime] wake_failed for ${failure.wake_id}, which nobody waits for: ${failure.code}: ${failure.message}\n`);
      return;
    }
    default: {
      // Said, not thrown: this runs in an IPC listener, where a throw would take the controller down.
      const unhandled: never = message;
      process.stderr.write(`[spawnRuntime] unhandled message ${JSON.stringify(unhandled)}\n`);
    }
  }
}

export async function spawnRuntime(config: Omit<z.input<typeof RuntimeStartConfig>, 'type'>, options: SpawnRuntimeOptions = {}): Promise<RuntimeProcess> {
  const startMessage = RuntimeStartConfig.safeParse({ type: 'start', ...config });
  // Checked before forking: a config the child would refuse should not cost a process.
  if (!startMessage.success) throw new RuntimeStartError('bad_config', `invalid runtime start config: ${z.prettifyError(startMessage.error)}`);
  const { cwd, ...code } = await entryPoint(options.codeRoot);
  const book = new WakeBook();
  let supervised: SupervisedChild<RuntimeReady> | null = null;
  const ack = (message: RuntimeParentMessage): void => {
    if (supervised !== null && !supervised.child.killed) supervised.send(message);
  };
  supervised = await startSupervisedChild<RuntimeReady>({
    label: 'runtime',
    logTag: '[spawnRuntime]',
    code,
    ...(cwd === undefined ? {} : { cwd }),
    env: childEnvironment(options.faultInjection ?? null),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
    ...(options.outputFile === undefined ? {} : { outputFile: options.outputFile }),
    startTimeoutMs: options.startTimeoutMs ?? 20_000,
    startMessage: startMessage.data,
    readStart: readRuntimeStart,
    startError: (code, message) => new RuntimeStartError(code, message),
    onMessage: (raw) => onRuntimeMessage(raw, book, supervised?.child.pid, ack),
  });
  const child = supervised;
  void child.exited.then((exit) => book.rejectAll(exit));
  return {
    pid: child.ready.pid,
    preflight: child.ready.preflight,
    exited: child.exited,
    onProgress(listener) {
      book.progressListeners.add(listener);
      return () => void book.progressListeners.delete(listener);
    },
    wake: (request, timeoutMs) => sendWake(child, book, request, timeoutMs),
    kill: child.kill,
    stop: (timeoutMs = 10_000) => child.stop({ type: 'shutdown' } satisfies RuntimeParentMessage, timeoutMs),
  };
}

/** Delivers one wake and waits for its report, its failure, the runtime's exit or the timeout. */
function sendWake(child: SupervisedChild<RuntimeReady>, book: WakeBook, request: RuntimeWakeRequest, timeoutMs: number): Promise<WakeDone> {
  const wakeId = request.wake_id;
  const message = RuntimeWake.safeParse({ type: 'wake', ...request });
  if (!message.success) return Promise.reject(new RuntimeWakeError('bad_request', wakeId, `invalid wake message: ${z.prettifyError(message.error)}`));
  if (book.pending.has(wakeId)) return Promise.reject(new RuntimeWakeError('bad_request', wakeId, `wake ${wakeId} is already waiting for its answer`));
  if (!child.alive() || !child.child.connected) {
    const exit = child.exitNow();
    return Promise.reject(new RuntimeWakeError('bad_request', wakeId, `ds-runtime is not running (${exit ? describeExit(exit) : 'IPC channel closed'})`, null, exit));
  }
  return new Promise<WakeDone>((resolve, reject) => {
    const timer = setTimeout(() => {
      if (book.settle(wakeId)) reject(new RuntimeWakeError('timeout', wakeId, `ds-runtime did not answer wake ${wakeId} ${wakeUnansweredWithin(timeoutMs)}`));
    }, timeoutMs);
    book.pending.set(wakeId, { resolve, reject, timer });
    if (message.data.hold_at_each_append) book.held.add(wakeId);
    child.send(message.data, (error) => {
      // The channel closed between the check above and now: the exit is on its way.
      book.settle(wakeId)?.reject(new RuntimeWakeError('exited', wakeId, `could not deliver wake ${wakeId}: ${error.message}`, null, child.exitNow()));
    });
  });
}
