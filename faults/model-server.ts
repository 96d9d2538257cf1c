// The harness's side of a stall_model run's model server (model-server-main.ts): start it as a
// real process, learn its address, and end it with the run — continued first if it is still
// frozen, killed if it does not go. Only the harness holds its pid: it is no process of the
// instance, so no fault point writes a pid file for it.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { EXIT_CODES } from '../foundation/exit-codes.js';
import { processCodeFor } from '../foundation/process-code.js';
import { TypedErrorOf } from '../foundation/typed-error.js';
import { SCRIPTED_MODEL_ID } from './scripted-model-server.js';
import { STALL_MODEL_CALL_TIMEOUT_MS } from './fault-plan.js';

/** How long the server may take to print its address (a bundled start is ~0.3 s of CPU). */
const START_TIMEOUT_MS = 20_000;
/** After SIGTERM (and SIGCONT), how long it may take to exit before it is killed. */
const STOP_TIMEOUT_MS = 5_000;
/** The most bytes of stdout read while waiting for the address line. */
const MAX_START_OUTPUT_BYTES = 4_096;

const Started = z.strictObject({ base_url: z.string().regex(/^http:\/\/127\.0\.0\.1:\d+\/v1$/) });

export interface FaultModelServer {
  readonly pid: number;
  readonly baseUrl: string;
  /** The instance's model flags pointing at this server (the call timeout of a stall_model run). */
  readonly modelArgs: readonly string[];
  /** Continued (if frozen) and ended; resolves once it has exited. */
  stop(): Promise<void>;
}

/** The model server of a stall_model run did not start; the run goes on without it and fails stall_recorded, saying so (fault-run.ts). */
export class FaultModelServerError extends TypedErrorOf('fault_model_server', EXIT_CODES.failed) {
  override readonly name = 'FaultModelServerError';
}

/** Starts the server from `codeRoot`'s code, its stderr appended to `logFile`. */
export async function startFaultModelServer(codeRoot: string, logFile: string): Promise<FaultModelServer> {
  const code = await processCodeFor(path.join(codeRoot, 'faults', 'model-server-main.ts'), codeRoot);
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    // A process group of its own, like the run's instance (fault-run.ts): an operator's Ctrl-C to
    // the harness's group must not end the server of a run under way (the harness ends it itself,
    // and the server exits when its stdin closes, so it cannot outlive the harness).
    child = spawn(process.execPath, [...code.execArgv, code.main], { cwd: codeRoot, stdio: ['pipe', 'pipe', fd], detached: true });
  } finally {
    closeSync(fd);
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let text = '';
    const fail = (why: string): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new FaultModelServerError(`the stall_model run's model server did not start: ${why} (see ${logFile})`));
    };
    const timer = setTimeout(() => fail(`no address within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
    const early = (exitCode: number | null, sig: NodeJS.Signals | null): void => fail(`it exited ${exitCode ?? sig} before printing its address`);
    child.once('exit', early);
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const newline = text.indexOf('\n');
      if (newline === -1) {
        if (text.length > MAX_START_OUTPUT_BYTES) fail(`${text.length} bytes of output without a line`);
        return;
      }
      let line: unknown = null;
      try {
        line = JSON.parse(text.slice(0, newline));
      } catch {
        // Not JSON: refused just below like any other line that is not the address.
      }
      const parsed = Started.safeParse(line);
      if (!parsed.success) return fail(`its first line is not {base_url}: ${JSON.stringify(text.slice(0, 200))}`);
      clearTimeout(timer);
      child.off('exit', early);
      resolve(parsed.data.base_url);
    });
  });
  const pid = child.pid!;
  return {
    pid,
    baseUrl,
    modelArgs: ['--model', 'openai', '--base-url', baseUrl, '--model-id', SCRIPTED_MODEL_ID, '--api-key-env', 'none', '--structured-output', 'vllm', '--model-timeout-ms', String(STALL_MODEL_CALL_TIMEOUT_MS)],
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // A server still frozen would never read its closed stdin.
      child.kill('SIGCONT');
      child.stdin!.end();
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
