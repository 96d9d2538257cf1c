// Runs a command-line entry point as a user would (a real node process through tsx) and
// captures its exit code and output, whatever the code.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `script` is a file under experiments/cli without its extension, e.g. 'verify'. */
export function runCli(script: string, args: readonly string[]): Promise<CliResult> {
  return run(process.execPath, ['--import', 'tsx', `experiments/cli/${script}.ts`, ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}
