// Runs a command-line entry point as a user would (a real node process through tsx) and
// captures its exit code and output, whatever the code.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { processCodeFor } from '../../foundation/process-code.js';

const run = promisify(execFile);

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * `script` is a file under cli without its extension, e.g. 'verify'. Run from its
 * bundle (foundation/process-code.ts, as the controller starts its children): the same sources,
 * ~0.3 s of CPU to start against ~1.5 s through tsx, and the suite makes hundreds of these calls.
 */
export async function runCli(script: string, args: readonly string[]): Promise<CliResult> {
  const code = await processCodeFor(path.join(REPO_ROOT, 'cli', `${script}.ts`), REPO_ROOT);
  return run(process.execPath, [...code.execArgv, code.main, ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface SpawnedCli {
  readonly child: ChildProcess;
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string;
  readonly exited: Promise<number | null>;
}

/** A command-line entry point left running (a server, a long run); `detached` gives it its own process group. */
export function spawnCli(script: string, args: readonly string[], options: { detached?: boolean } = {}): SpawnedCli {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'cli', `${script}.ts`), ...args], { cwd: REPO_ROOT, detached: options.detached ?? false, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}
