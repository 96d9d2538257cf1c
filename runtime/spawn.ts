// Starts a ds-runtime process and talks to it over the IPC channel: the controller (and
// tests) use this. The runtime's writer token travels in the `start` message, never in
// argv. Every message from the child is validated with zod; one that fails is reported on
// stderr, not dropped silently.
import { fork, type ChildProcess } from 'node:child_process';
import { processCodeFor, type ProcessCode } from '../foundation/process-code.js';
import { CodedInternalError, InternalError } from '../foundation/typed-error.js';
import { childEnvironment } from '../schema/fault-switch.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { RuntimeChildMessage, RuntimeStartConfig, RuntimeWake, type PreflightReport, type RuntimeParentMessage, type WakeDone, type WakeFailure, type WakeProgress } from './protocol.js';

const RUNTIME_MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const OWN_CODE_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** How long after the exit the IPC channel may take to deliver its last messages and close. */
const CHANNEL_CLOSE_GRACE_MS = 2_000;

/** How a wake's timeout is worded, wherever it is recorded (a stop's reason): the fault harness looks for these words (faults/invariants.ts). */
export function wakeUnansweredWithin(timeoutMs: number): string {
  return `within ${timeoutMs} ms; it was left running`;
}

export interface RuntimeExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

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

function describeExit(exit: RuntimeExit): string {
  return `code ${exit.code}, signal ${exit.signal}`;
}

export async function spawnRuntime(config: Omit<RuntimeStartConfig, 'type'>, options: SpawnRuntimeOptions = {}): Promise<RuntimeProcess> {
  const startMessage = RuntimeStartConfig.safeParse({ type: 'start', ...config });
  // Checked before forking: a config the child would refuse should not cost a process.
  if (!startMessage.success) throw new RuntimeStartError('bad_config', `invalid runtime start config: ${z.prettifyError(startMessage.error)}`);
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const { main, execArgv, cwd } = await entryPoint(options.codeRoot);
  const child: ChildProcess = fork(main, [], {
    execArgv: [...execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Its own process group: a Ctrl-C in the controller's terminal is the controller's emergency
    // stop, which still needs this runtime; the runtime exits when its parent goes away instead.
    detached: true,
    ...(cwd === undefined ? {} : { cwd }),
    env: childEnvironment(options.faultInjection ?? null),
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
  // Settles on 'exit' once the IPC channel has also closed, so that every message the
  // child sent before dying (a wake_done just before a crash) has been delivered first.
  // Not 'close': it never fires once the parent has disconnected the channel itself. If
  // the channel outlives the process (an inherited fd), it is given up after a grace.
  let exitedWith: RuntimeExit | null = null;
  const exited = new Promise<RuntimeExit>((resolve) =>
    child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      const exit = { code, signal };
      const finish = (): void => {
        clearTimeout(grace);
        exitedWith ??= exit;
        resolve(exit);
      };
      const grace = setTimeout(() => {
        process.stderr.write(`[spawnRuntime] ds-runtime ${child.pid} exited but its IPC channel stayed open for ${CHANNEL_CLOSE_GRACE_MS} ms; closing it\n`);
        if (child.connected) child.disconnect();
        finish();
      }, CHANNEL_CLOSE_GRACE_MS);
      if (child.connected) child.once('disconnect', finish);
      else finish();
    }),
  );
  child.on('error', (error) => process.stderr.write(`[spawnRuntime] runtime process error: ${error.message}\n`));

  const pending = new Map<string, PendingWake>();
  /**
   * The wakes sent with hold_at_each_append, until the runtime answers them (not when the caller
   * stops waiting: a runtime still running a timed-out wake still waits for its acks).
   */
  const held = new Set<string>();
  const progressListeners = new Set<(progress: WakeProgress) => void>();
  let onStartMessage: ((message: RuntimeChildMessage) => void) | null = null;

  const settle = (wakeId: string): PendingWake | null => {
    const entry = pending.get(wakeId);
    if (!entry) return null;
    pending.delete(wakeId);
    clearTimeout(entry.timer);
    return entry;
  };

  /** Per wake, the model call the runtime said it started and has not yet reported recorded. */
  const modelCallsInFlight = new Map<string, number>();
  child.on('message', (raw: unknown) => {
    const parsed = RuntimeChildMessage.safeParse(raw);
    if (!parsed.success) {
      process.stderr.write(`[spawnRuntime] ignoring malformed message from ds-runtime ${child.pid}: ${z.prettifyError(parsed.error)}\n`);
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'ready':
      case 'fatal':
        if (onStartMessage) return onStartMessage(message);
        // A fatal after start is followed by the exit, which rejects any waiting wake.
        process.stderr.write(`[spawnRuntime] ds-runtime ${child.pid} sent ${message.type} after start: ${JSON.stringify(message)}\n`);
        return;
      case 'model_call_started':
        modelCallsInFlight.set(message.wake_id, message.call_number);
        return;
      case 'wake_progress': {
        const { type: _type, ...progress } = message;
        modelCallsInFlight.delete(progress.wake_id);
        for (const listener of progressListeners) listener(progress);
        // A held wake's runtime waits for this before its next step, so a listener that kills it (a
        // planned crash) does so at exactly this point, not some appends later: crashes stay reproducible.
        if (held.has(progress.wake_id) && !child.killed && child.connected) child.send({ type: 'progress_ack', wake_id: progress.wake_id, appends: progress.appends } satisfies RuntimeParentMessage);
        return;
      }
      case 'wake_done': {
        const { type: _type, ...report } = message;
        modelCallsInFlight.delete(report.wake_id);
        held.delete(report.wake_id);
        const entry = settle(report.wake_id);
        if (entry) entry.resolve(report);
        else process.stderr.write(`[spawnRuntime] wake_done for ${report.wake_id}, which nobody waits for (timed out?)\n`);
        return;
      }
      case 'wake_failed': {
        const { type: _type, ...failure } = message;
        modelCallsInFlight.delete(failure.wake_id);
        held.delete(failure.wake_id);
        const entry = settle(failure.wake_id);
        if (entry) entry.reject(new RuntimeWakeError('wake_failed', failure.wake_id, `wake ${failure.wake_id} failed (${failure.code}): ${failure.message}`, failure));
        else process.stderr.write(`[spawnRuntime] wake_failed for ${failure.wake_id}, which nobody waits for: ${failure.code}: ${failure.message}\n`);
        return;
      }
      default: {
        const unhandled: never = message;
        process.stderr.write(`[spawnRuntime] unhandled message ${JSON.stringify(unhandled)}\n`);
      }
    }
  });

  void exited.then((exit) => {
    held.clear();
    for (const wakeId of [...pending.keys()]) {
      // Whether its outcome reached the store only the store can tell: the controller looks before it words the stop.
      const call = modelCallsInFlight.get(wakeId) ?? null;
      settle(wakeId)?.reject(new RuntimeWakeError('exited', wakeId, `ds-runtime exited during wake ${wakeId} (${describeExit(exit)})${call === null ? '' : ` after starting model call ${call}`}`, null, exit, call));
    }
  });

  const ready = await new Promise<{ pid: number; preflight: PreflightReport | null }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new RuntimeStartError('start_timeout', `runtime did not become ready within ${startTimeoutMs} ms`));
    }, startTimeoutMs);
    onStartMessage = (message) => {
      clearTimeout(timer);
      onStartMessage = null;
      if (message.type === 'ready') resolve({ pid: message.pid, preflight: message.preflight });
      else if (message.type === 'fatal') reject(new RuntimeStartError(message.code, message.message));
      else reject(new RuntimeStartError('protocol', `runtime sent ${message.type} before ready`));
    };
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(new RuntimeStartError('exited', `runtime exited during start-up (${describeExit(exit)})`));
    });
    child.send(startMessage.data);
  });

  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
  const kill = async (signal: NodeJS.Signals): Promise<RuntimeExit> => {
    if (alive()) child.kill(signal);
    return exited;
  };

  return {
    pid: ready.pid,
    preflight: ready.preflight,
    exited,
    onProgress(listener) {
      progressListeners.add(listener);
      return () => void progressListeners.delete(listener);
    },
    wake(request, timeoutMs) {
      const wakeId = request.wake_id;
      const message = RuntimeWake.safeParse({ type: 'wake', ...request });
      if (!message.success) return Promise.reject(new RuntimeWakeError('bad_request', wakeId, `invalid wake message: ${z.prettifyError(message.error)}`));
      if (pending.has(wakeId)) return Promise.reject(new RuntimeWakeError('bad_request', wakeId, `wake ${wakeId} is already waiting for its answer`));
      if (!alive() || !child.connected) {
        const exit = alive() ? null : { code: child.exitCode, signal: child.signalCode };
        return Promise.reject(new RuntimeWakeError('bad_request', wakeId, `ds-runtime is not running (${exit ? describeExit(exit) : 'IPC channel closed'})`, null, exit));
      }
      return new Promise<WakeDone>((resolve, reject) => {
        const timer = setTimeout(() => {
          if (settle(wakeId)) reject(new RuntimeWakeError('timeout', wakeId, `ds-runtime did not answer wake ${wakeId} ${wakeUnansweredWithin(timeoutMs)}`));
        }, timeoutMs);
        pending.set(wakeId, { resolve, reject, timer });
        if (message.data.hold_at_each_append) held.add(wakeId);
        child.send(message.data, (error: Error | null) => {
          // The channel closed between the check above and now: the exit is on its way.
          if (error) settle(wakeId)?.reject(new RuntimeWakeError('exited', wakeId, `could not deliver wake ${wakeId}: ${error.message}`, null, exitedWith ?? (alive() ? null : { code: child.exitCode, signal: child.signalCode })));
        });
      });
    },
    kill,
    async stop(timeoutMs = 10_000) {
      if (child.connected) child.send({ type: 'shutdown' } satisfies RuntimeParentMessage);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const exit = await exited;
      clearTimeout(timer);
      return exit;
    },
  };
}
